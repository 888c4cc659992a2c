// The small part of HTTP/1.1 (RFC 9112) the push gateway serves: request heads
// and chunked request bodies. Pure parsing, no I/O, so protocol tests can feed
// it hand-made bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::git::http {

struct RequestHead {
    std::string method, target, version;
    std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased

    std::optional<std::string> header(std::string_view lower_name) const;
    // HTTP/1.1 keeps the connection unless "Connection: close"; 1.0 the reverse.
    bool keep_alive() const;
    bool chunked() const;  // Transfer-Encoding ends in chunked
};

inline constexpr std::size_t max_head_bytes = 64 * 1024;

// Parses a complete head from the front of `buf` and erases it. nullopt: the
// head is not complete yet (an error past max_head_bytes).
Result<std::optional<RequestHead>> take_head(std::string& buf);

// Content-Length value: digits only, no sign, no list.
Result<std::uint64_t> parse_content_length(std::string_view v);

// Chunked transfer coding decoder (RFC 9112 section 7.1). Trailers are read
// and dropped.
class ChunkedDecoder {
public:
    // Decodes from `in`, appending at most `cap` bytes to `out`. Returns how many
    // bytes of `in` were consumed; stops early when `cap` is reached or done().
    Result<std::size_t> decode(std::string_view in, std::string& out, std::size_t cap);
    bool done() const { return state_ == State::done; }

private:
    enum class State { size, ext, size_lf, data, data_cr, data_lf, trailer, trailer_lf, done };
    State state_ = State::size;
    std::uint64_t remaining_ = 0;
    int digits_ = 0;
    std::size_t line_ = 0;  // bytes of the current trailer line
};

std::string status_text(int status);

}  // namespace cc::git::http
