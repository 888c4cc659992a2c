// Host names, IP literals and allowlist patterns, in the one canonical form
// every egress decision is made on.
//
//   auto t = cc::net::canonical_target("METADATA.Google.Internal.");  // name "metadata.google.internal"
//   auto t = cc::net::canonical_target("0x7f.1");                     // address 127.0.0.1
//   auto p = cc::net::parse_pattern("*.example.com");
//   p->matches("a.b.example.com") == true;  p->matches("example.com") == false
//
// Why one canonical form: a rule is only as good as the spelling it is
// compared against. Names are lower-cased, lose one trailing dot and are
// mapped to their ASCII (punycode) form with UTS-46, so full-width dots and
// upper case cannot talk around a rule. Anything that reads as an IPv4 address
// to the C library (inet_aton: 1-4 parts, decimal, octal or hex) *is* that
// address, and IPv4 hidden inside IPv6 (mapped, compatible, NAT64, 6to4) is
// unwrapped before address rules look at it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"

struct sockaddr;

namespace cc::net {

// An IPv4 or IPv6 address. IPv4 is stored as ::ffff:a.b.c.d so one compare
// covers both; `v4()` tells which family it was written in.
struct Address {
    std::array<std::uint8_t, 16> bytes{};
    bool is_v4 = false;

    static Address v4(std::uint32_t host_order);
    bool v4() const { return is_v4; }
    std::uint32_t v4_value() const;  // host order; only for v4()
    std::string to_string() const;   // "127.0.0.1", "fd00:ec2::254"
    // IPv4 carried inside IPv6: ::ffff:a.b.c.d, ::a.b.c.d, 64:ff9b::/96,
    // 64:ff9b:1::/96 (the /96 inside the local-use NAT64 /48), 2002::/16.
    std::optional<Address> embedded_v4() const;
    // Every IPv4 address an IPv6 address carries, for deny rules: the above,
    // plus both of Teredo's (2001::/32: the server, and the client stored
    // inverted, RFC 4380 4).
    std::vector<Address> embedded_v4_all() const;
    // The IPv4 address whose exact IPv6 spelling this is, for allow entries:
    // mapped, compatible, 64:ff9b::a.b.c.d, 64:ff9b:1::a.b.c.d, and 6to4
    // only as 2002:AABB:CCDD:: (an allowed IPv4 address must not admit a
    // whole 6to4 /48 of 2^80 addresses).
    std::optional<Address> exact_v4() const;
    bool operator==(const Address& o) const { return bytes == o.bytes && is_v4 == o.is_v4; }
};

// Parse an IP literal as the C library would: IPv4 through inet_aton (so
// "2130706433", "0177.0.0.1", "0x7f.1" and "127.1" are all 127.0.0.1), IPv6
// through inet_pton, brackets optional. nullopt when the text is not one.
std::optional<Address> parse_ip_literal(std::string_view text);

// "10.0.0.0/8", "fe80::/10", or a bare address (a /32 or /128).
struct Cidr {
    Address base;
    int prefix = 0;
    bool contains(const Address& a) const;
    std::string to_string() const;
};
Result<Cidr> parse_cidr(std::string_view text);

// A connection target after normalisation: either a canonical name or an address.
struct Target {
    std::string host;               // canonical name, or the address's text form
    std::optional<Address> address; // set for IP literals
    std::uint16_t port = 0;
};

// Canonical form of a host as a client wrote it (no port). Errors are input
// errors: non-ASCII that does not map, bad characters, empty or overlong
// labels, IPv6 zone ids, numeric text inet_aton refuses.
Result<Target> canonical_target(std::string_view host);

// Name canonicalisation only (lower case, one trailing dot, UTS-46 to ASCII).
Result<std::string> canonical_name(std::string_view host);

// "host:port", "[v6]:port"; port 1-65535 required.
Result<Target> parse_authority(std::string_view authority);

// One allowlist or denylist name pattern. Exactly one form:
//   exact     example.com
//   suffix    *.example.com     any subdomain at any depth, never the apex
//   one-label bedrock.*.amazonaws.com   exactly one label in place of the *
struct HostPattern {
    enum class Kind { exact, suffix, one_label };
    Kind kind = Kind::exact;
    std::string text;    // canonical pattern text, as written back in logs
    std::string before;  // one_label: "bedrock."; suffix: ""
    std::string after;   // suffix: ".example.com"; one_label: ".amazonaws.com"
    bool matches(std::string_view canonical_host) const;
};

// Refused with an input error naming the pattern: two `*`, a bare `*`, a `*`
// inside a label (foo*.com), `*` as the last label, an empty label, a bad
// character, an IP literal (those are addresses, see rules.hpp).
Result<HostPattern> parse_pattern(std::string_view text);

// Address of a socket address (AF_INET / AF_INET6).
std::optional<Address> address_of(const sockaddr* sa);
// Its port (host order); 0 for a family other than AF_INET and AF_INET6.
std::uint16_t port_of(const sockaddr* sa);

}  // namespace cc::net
