// pkt-line framing of git's smart protocols (gitprotocol-common(5)): four hex
// digits giving the total length (payload + 4), then the payload; "0000" is a
// flush packet. Side-band wraps a stream in packets whose first payload byte is
// the band: 1 data, 2 progress (shown as "remote: ..."), 3 fatal error.
//
//   cc::git::PktReader r;  r.feed(bytes);
//   while (auto p = r.next()) { if (!*p) break; /* need more bytes */ use(**p); }
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "cc/core/result.hpp"

namespace cc::git {

// Largest packet git accepts (LARGE_PACKET_MAX), header included.
inline constexpr std::size_t max_pkt_len = 65520;
// Data bytes in one side-band-64k packet: 65520 - 4 (header) - 1 (band byte).
inline constexpr std::size_t max_sideband64k_data = 65515;
// Data bytes in one plain side-band packet (1000-byte packets).
inline constexpr std::size_t max_sideband_data = 995;

inline constexpr std::string_view flush_pkt = "0000";

// One packet: "%04x" + payload. Payloads longer than max_pkt_len - 4 are a bug
// in the caller (it must split); they are truncated to keep the stream valid.
std::string pkt(std::string_view payload);

struct Pkt {
    enum class Kind { data, flush, delim, response_end };
    Kind kind = Kind::data;
    std::string payload;
};

// Incremental reader: feed arbitrary slices, take whole packets out.
class PktReader {
public:
    void feed(std::string_view bytes) { buf_.append(bytes); }
    // A packet, std::nullopt when more bytes are needed, or an input error for
    // a length that is not hex or is 1..3 / above max_pkt_len.
    Result<std::optional<Pkt>> next();
    // Bytes fed but not yet returned as packets (e.g. the pack after the commands).
    std::string take_rest();
    std::size_t buffered() const { return buf_.size() - pos_; }

private:
    std::string buf_;
    std::size_t pos_ = 0;
};

// Wraps `data` in band-`band` packets of at most `max_data` bytes each.
std::string sideband(char band, std::string_view data, std::size_t max_data = max_sideband64k_data);

// Splits a side-band stream as it arrives: band 2/3 packets are handed back at
// once (so progress reaches the client live), band 1 data is collected.
class SidebandDemux {
public:
    // Returns the bytes to relay now (whole band-2/3 packets, re-encoded as
    // received). An error for bad framing or an unknown band.
    Result<std::string> feed(std::string_view bytes);
    // The collected band-1 data (cap: errors when it grows past `max_band1`).
    const std::string& band1() const { return band1_; }
    bool saw_flush() const { return flushed_; }
    std::size_t max_band1 = 16u << 20;

private:
    PktReader reader_;
    std::string band1_;
    bool flushed_ = false;
};

}  // namespace cc::git
