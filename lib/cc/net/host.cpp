#include "cc/net/host.hpp"

#include <arpa/inet.h>
#include <idn2.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace cc::net {

namespace {

bool ascii_only(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

// Text the C library would try to read as an IPv4 address: digits, dots and
// hex, with the last label starting with a digit (no top-level domain does).
bool looks_numeric(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'x' || c == 'X')) return false;
    auto dot = s.rfind('.');
    char first = s[dot == std::string_view::npos ? 0 : dot + 1];
    return first >= '0' && first <= '9';
}

}  // namespace

Address Address::v4(std::uint32_t host_order) {
    Address a;
    a.is_v4 = true;
    a.bytes[10] = a.bytes[11] = 0xff;
    a.bytes[12] = static_cast<std::uint8_t>(host_order >> 24);
    a.bytes[13] = static_cast<std::uint8_t>(host_order >> 16);
    a.bytes[14] = static_cast<std::uint8_t>(host_order >> 8);
    a.bytes[15] = static_cast<std::uint8_t>(host_order);
    return a;
}

std::uint32_t Address::v4_value() const {
    return (std::uint32_t{bytes[12]} << 24) | (std::uint32_t{bytes[13]} << 16) |
           (std::uint32_t{bytes[14]} << 8) | std::uint32_t{bytes[15]};
}

// Dotted quads are written with to_chars: the C library's inet_ntop goes
// through sprintf, and a connection formats several addresses (its client,
// the rules' check, the dialled address). IPv6 keeps inet_ntop (RFC 5952's
// zero compression).
std::string Address::to_string() const {
    char buf[INET6_ADDRSTRLEN];
    if (is_v4) {
        char* p = buf;
        for (int i = 12; i < 16; ++i) {
            if (i > 12) *p++ = '.';
            p = std::to_chars(p, buf + sizeof buf, bytes[i]).ptr;
        }
        return std::string(buf, p);
    }
    return inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf);
}

std::optional<Address> Address::embedded_v4() const {
    if (is_v4) return std::nullopt;
    const auto& b = bytes;
    auto from = [](std::uint8_t a, std::uint8_t c, std::uint8_t d, std::uint8_t e) {
        return Address::v4((std::uint32_t{a} << 24) | (std::uint32_t{c} << 16) | (std::uint32_t{d} << 8) | e);
    };
    bool zero10 = std::all_of(b.begin(), b.begin() + 10, [](auto x) { return x == 0; });
    if (zero10 && b[10] == 0xff && b[11] == 0xff) return from(b[12], b[13], b[14], b[15]);  // ::ffff:a.b.c.d
    if (zero10 && b[10] == 0 && b[11] == 0) {                                               // ::a.b.c.d
        std::uint32_t v = (std::uint32_t{b[12]} << 24) | (std::uint32_t{b[13]} << 16) | (b[14] << 8) | b[15];
        if (v > 1) return from(b[12], b[13], b[14], b[15]);  // not :: or ::1
        return std::nullopt;
    }
    static const std::uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (std::memcmp(b.data(), nat64, 12) == 0) return from(b[12], b[13], b[14], b[15]);  // 64:ff9b::/96
    // RFC 8215 local-use 64:ff9b:1::/48; a translator there uses a /96 in it.
    static const std::uint8_t nat64_local[12] = {0, 0x64, 0xff, 0x9b, 0, 1, 0, 0, 0, 0, 0, 0};
    if (std::memcmp(b.data(), nat64_local, 12) == 0) return from(b[12], b[13], b[14], b[15]);
    if (b[0] == 0x20 && b[1] == 0x02) return from(b[2], b[3], b[4], b[5]);                 // 2002::/16
    return std::nullopt;
}

std::vector<Address> Address::embedded_v4_all() const {
    std::vector<Address> out;
    if (auto v4 = embedded_v4()) out.push_back(*v4);
    const auto& b = bytes;
    if (!is_v4 && b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {  // Teredo 2001:0::/32
        out.push_back(Address::v4((std::uint32_t{b[4]} << 24) | (std::uint32_t{b[5]} << 16) |
                                  (std::uint32_t{b[6]} << 8) | b[7]));
        std::uint32_t client = (std::uint32_t{b[12]} << 24) | (std::uint32_t{b[13]} << 16) |
                               (std::uint32_t{b[14]} << 8) | b[15];
        out.push_back(Address::v4(~client));
    }
    return out;
}

std::optional<Address> Address::exact_v4() const {
    auto v4 = embedded_v4();
    if (!v4) return std::nullopt;
    if (bytes[0] == 0x20 && bytes[1] == 0x02 &&
        !std::all_of(bytes.begin() + 6, bytes.end(), [](auto x) { return x == 0; }))
        return std::nullopt;  // inside a 6to4 /48, not its exact spelling
    return v4;
}

std::optional<Address> parse_ip_literal(std::string_view text) {
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
    if (text.empty() || text.size() > 64) return std::nullopt;
    // inet_pton and inet_aton read C strings: "::1\0evil" must not be ::1.
    if (text.find('\0') != std::string_view::npos) return std::nullopt;
    std::string s(text);
    if (s.find(':') != std::string::npos) {
        Address a;
        if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) != 1) return std::nullopt;
        return a;
    }
    // inet_aton accepts trailing text after whitespace; only hand it numeric text.
    if (!looks_numeric(s)) return std::nullopt;
    in_addr in{};
    if (inet_aton(s.c_str(), &in) == 0) return std::nullopt;
    return Address::v4(ntohl(in.s_addr));
}

bool Cidr::contains(const Address& a) const {
    if (a.is_v4 != base.is_v4) return false;
    int bits = base.is_v4 ? prefix + 96 : prefix;
    int full = bits / 8, rest = bits % 8;
    if (std::memcmp(a.bytes.data(), base.bytes.data(), static_cast<std::size_t>(full)) != 0) return false;
    if (rest == 0) return true;
    std::uint8_t mask = static_cast<std::uint8_t>(0xff << (8 - rest));
    return (a.bytes[static_cast<std::size_t>(full)] & mask) == (base.bytes[static_cast<std::size_t>(full)] & mask);
}

std::string Cidr::to_string() const { return base.to_string() + "/" + std::to_string(prefix); }

Result<Cidr> parse_cidr(std::string_view text) {
    auto slash = text.find('/');
    std::string_view addr = text.substr(0, slash);
    // Address rules are written in the plain dotted or colon form only.
    auto a = parse_ip_literal(addr);
    if (!a) return input_error(in_quotes(text), "is not an IP address or CIDR block");
    Cidr c{*a, a->is_v4 ? 32 : 128};
    if (slash != std::string_view::npos) {
        std::string_view p = text.substr(slash + 1);
        int v = 0;
        if (p.empty() || p.size() > 3) return input_error(in_quotes(text), "bad prefix length");
        for (char ch : p) {
            if (ch < '0' || ch > '9') return input_error(in_quotes(text), "bad prefix length");
            v = v * 10 + (ch - '0');
        }
        if (v > (a->is_v4 ? 32 : 128)) return input_error(in_quotes(text), "prefix length out of range");
        c.prefix = v;
    }
    return c;
}

Result<std::string> canonical_name(std::string_view host) {
    // Before anything reads the name as a C string: libidn2 would stop at a
    // NUL, so "allowed.example\0junk" would be vetted as "allowed.example"
    // while the junk went on in the Host header (found by fuzz/fuzz_wire.cpp).
    for (unsigned char c : host)
        if (c < 0x20 || c == 0x7f) return input_error(in_quotes(host), "control character in host name");
    std::string s;
    if (ascii_only(host)) {
        s = lower(host);
    } else {
        // UTS-46 non-transitional mapping: also folds U+3002, U+FF0E, U+FF61 to '.'.
        std::string in(host);
        char* out = nullptr;
        int rc = idn2_to_ascii_8z(in.c_str(), &out, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
        if (rc != IDN2_OK) {
            return input_error(in_quotes(host), std::string("is not a valid internationalised name: ") +
                                                  idn2_strerror(rc));
        }
        s = lower(out);
        idn2_free(out);
    }
    if (!s.empty() && s.back() == '.') s.pop_back();
    if (s.empty()) return input_error(in_quotes(host), "empty host name");
    if (s.size() > 253) return input_error(in_quotes(host), "host name longer than 253 bytes");
    std::size_t label = 0;
    for (std::size_t i = 0; i <= s.size(); ++i) {
        char c = i < s.size() ? s[i] : '.';
        if (c == '.') {
            if (label == 0) return input_error(in_quotes(host), "empty label in host name");
            if (label > 63) return input_error(in_quotes(host), "label longer than 63 bytes");
            label = 0;
            continue;
        }
        bool okc = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (!okc) return input_error(in_quotes(host), "bad character in host name");
        ++label;
    }
    return s;
}

Result<Target> canonical_target(std::string_view host) {
    std::string_view h = host;
    bool bracketed = h.size() >= 2 && h.front() == '[' && h.back() == ']';
    if (bracketed || h.find(':') != std::string_view::npos) {
        if (h.find('%') != std::string_view::npos) return input_error(in_quotes(host), "IPv6 zone ids are refused");
        auto a = parse_ip_literal(h);
        if (!a) return input_error(in_quotes(host), "is not a valid IPv6 address");
        return Target{a->to_string(), a, 0};
    }
    auto name = canonical_name(h);
    if (!name) {
        // "1.2.3.4." with its dot, or a mapped full-width form, may still be numeric.
        return name.error();
    }
    if (looks_numeric(*name)) {
        auto a = parse_ip_literal(*name);
        if (!a) return input_error(in_quotes(host), "numeric host is not an address the C library accepts");
        return Target{a->to_string(), a, 0};
    }
    return Target{*name, std::nullopt, 0};
}

Result<Target> parse_authority(std::string_view authority) {
    std::string_view host, port;
    if (!authority.empty() && authority.front() == '[') {
        auto close = authority.find(']');
        if (close == std::string_view::npos) return input_error(in_quotes(authority), "unterminated '['");
        host = authority.substr(0, close + 1);
        if (close + 1 >= authority.size() || authority[close + 1] != ':')
            return input_error(in_quotes(authority), "port required");
        port = authority.substr(close + 2);
    } else {
        auto colon = authority.rfind(':');
        if (colon == std::string_view::npos) return input_error(in_quotes(authority), "port required");
        host = authority.substr(0, colon);
        port = authority.substr(colon + 1);
        if (host.find(':') != std::string_view::npos) return input_error(in_quotes(authority), "IPv6 needs brackets");
    }
    if (port.empty() || port.size() > 5) return input_error(in_quotes(authority), "bad port");
    unsigned v = 0;
    for (char c : port) {
        if (c < '0' || c > '9') return input_error(in_quotes(authority), "bad port");
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    if (v == 0 || v > 65535) return input_error(in_quotes(authority), "port out of range");
    auto t = canonical_target(host);
    if (!t) return t.error();
    t->port = static_cast<std::uint16_t>(v);
    return t;
}

bool HostPattern::matches(std::string_view h) const {
    switch (kind) {
    case Kind::exact:
        return h == text;
    case Kind::suffix:
        // "*.example.com": at least one label before ".example.com".
        return h.size() > after.size() && h.substr(h.size() - after.size()) == after;
    case Kind::one_label: {
        if (h.size() <= before.size() + after.size()) return false;
        if (h.substr(0, before.size()) != before) return false;
        if (h.substr(h.size() - after.size()) != after) return false;
        std::string_view mid = h.substr(before.size(), h.size() - before.size() - after.size());
        return !mid.empty() && mid.find('.') == std::string_view::npos;
    }
    }
    return false;
}

Result<HostPattern> parse_pattern(std::string_view text) {
    auto bad = [&](const char* why) { return input_error("pattern " + in_quotes(text), why); };
    std::size_t stars = static_cast<std::size_t>(std::count(text.begin(), text.end(), '*'));
    if (stars > 1) return bad("has more than one '*'");
    if (text == "*" || text == "*.") return bad("a bare '*' would allow everything");
    if (stars == 0) {
        if (parse_ip_literal(text) || text.find(':') != std::string_view::npos)
            return bad("is an address, not a name pattern");
        auto n = canonical_name(text);
        if (!n) return bad(n.error().message.c_str());
        if (looks_numeric(*n)) return bad("is an address, not a name pattern");
        return HostPattern{HostPattern::Kind::exact, *n, "", ""};
    }
    // A wildcard's labels are mapped one side of the '*' at a time, not as the
    // one name a client sends: UTS-46 mapping (full-width dots, case folds,
    // contextual rules) of a part need not equal that part of the mapped
    // whole. Written in punycode, the pattern means exactly what it says.
    if (!ascii_only(text)) return bad("is not ASCII: write a wildcard pattern's labels in punycode (xn--...)");
    // Check the * is a whole label, then canonicalise with a placeholder label.
    std::string_view t = text;
    if (!t.empty() && t.back() == '.') t.remove_suffix(1);
    auto star = t.find('*');
    bool starts = star == 0, label_start = starts || t[star - 1] == '.';
    bool label_end = star + 1 == t.size() || t[star + 1] == '.';
    if (!label_start || !label_end) return bad("'*' must be a whole label");
    if (star + 1 == t.size()) return bad("'*' cannot be the last label");
    std::string rest(t.substr(star + 2));  // after "*."
    auto after = canonical_name(rest);
    if (!after) return bad(after.error().message.c_str());
    if (starts) return HostPattern{HostPattern::Kind::suffix, "*." + *after, "", "." + *after};
    auto before = canonical_name(t.substr(0, star - 1));
    if (!before) return bad(before.error().message.c_str());
    return HostPattern{HostPattern::Kind::one_label, *before + ".*." + *after, *before + ".", "." + *after};
}

std::optional<Address> address_of(const sockaddr* sa) {
    if (sa->sa_family == AF_INET) {
        auto* in = reinterpret_cast<const sockaddr_in*>(sa);
        return Address::v4(ntohl(in->sin_addr.s_addr));
    }
    if (sa->sa_family == AF_INET6) {
        auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
        Address a;
        std::memcpy(a.bytes.data(), &in6->sin6_addr, 16);
        // A v4-mapped answer is an IPv4 address in all but spelling.
        if (auto v4 = a.embedded_v4(); v4 && a.bytes[10] == 0xff && a.bytes[11] == 0xff) return v4;
        return a;
    }
    return std::nullopt;
}

std::uint16_t port_of(const sockaddr* sa) {
    if (sa->sa_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
    if (sa->sa_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
    return 0;
}

}  // namespace cc::net
