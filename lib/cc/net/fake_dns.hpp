// The sandbox's resolver when its connections are captured (cc-wrap
// --capture): no name is resolved for real inside the sandbox. Every name
// the rules could admit is answered with an address from a private pool
// that stands for it (198.18.0.0/15, the benchmarking block nothing real
// uses); a captured connection to such an address is decided as a CONNECT
// to the name. The real resolution happens in cc-egress, vetted as always.
//
//   cc::net::FakePool pool;
//   auto a = pool.address_for("api.github.com");   // 198.18.0.1, the same each time
//   pool.name_for(*a) == "api.github.com";
//   auto q = cc::net::parse_dns_query(bytes);     // one question, or why not
//   std::string reply = cc::net::dns_reply(bytes, *q, cc::net::DnsRcode::noerror, a);
//
// The wire format is RFC 1035's (4.1): the answer repeats the question and
// carries at most one A record; every other type is answered with no
// record (NODATA), so clients fall back to IPv4.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cc/net/host.hpp"

namespace cc::net {

struct DnsQuestion {
    std::uint16_t id = 0;
    std::string name;              // as asked: labels joined by '.', no trailing dot
    std::uint16_t qtype = 0;       // 1 A, 28 AAAA, ...
    std::uint16_t qclass = 0;      // 1 IN
    std::size_t question_end = 0;  // offset just past the question (header included)
};

enum class DnsRcode : std::uint8_t { noerror = 0, formerr = 1, servfail = 2, nxdomain = 3, notimp = 4, refused = 5 };

// A query a stub resolver sends: QR 0, opcode QUERY, exactly one question,
// no compression in it. Additional records (EDNS) are allowed and ignored.
// nullopt with `why` set when it is not one; `id_out` gets the id whenever
// the header was there (a FORMERR answer needs it).
std::optional<DnsQuestion> parse_dns_query(std::string_view msg, std::string& why, std::uint16_t* id_out = nullptr);

// The reply to `query` (whose question `q` is): header with QR, RD copied,
// RA set, the question repeated, and the A record when `a` is given (only
// for a type A question of class IN).
std::string dns_reply(std::string_view query, const DnsQuestion& q, DnsRcode rc,
                      const std::optional<Address>& a = std::nullopt, std::uint32_t ttl = 60);
// A header-only reply (FORMERR, NOTIMP) for a message that had no usable question.
std::string dns_error_reply(std::uint16_t id, DnsRcode rc);

const char* dns_type_name(std::uint16_t qtype);  // "A", "AAAA", ... or "TYPE65"

// Names and the addresses that stand for them, for one session: each name
// gets the next address of 198.18.0.0/15 the first time it is asked and
// keeps it; an address is never given to a second name. Thread-safe.
class FakePool {
public:
    // nullopt once the pool's 131,070 addresses are all given out.
    std::optional<Address> address_for(const std::string& canonical_name);
    std::optional<std::string> name_for(const Address& a) const;
    std::size_t size() const;
    static bool in_pool(const Address& a);
    static const char* range() { return "198.18.0.0/15"; }

private:
    mutable std::mutex mu_;
    std::unordered_map<std::string, std::uint32_t> by_name_;
    std::unordered_map<std::uint32_t, std::string> by_address_;
    std::uint32_t next_ = 1;
};

}  // namespace cc::net
