#include "cc/net/fake_dns.hpp"

namespace cc::net {

namespace {

constexpr std::uint32_t pool_base = (198u << 24) | (18u << 16);  // 198.18.0.0
constexpr std::uint32_t pool_size = 1u << 17;                    // /15

// The IPv4 address `a` is, written as IPv4 or IPv4-mapped IPv6 (what a
// dual-stack listener reports), else nothing.
std::optional<std::uint32_t> plain_v4(const Address& a) {
    if (a.v4()) return a.v4_value();
    for (int i = 0; i < 10; ++i)
        if (a.bytes[static_cast<std::size_t>(i)] != 0) return std::nullopt;
    if (a.bytes[10] != 0xff || a.bytes[11] != 0xff) return std::nullopt;
    return (std::uint32_t{a.bytes[12]} << 24) | (std::uint32_t{a.bytes[13]} << 16) | (std::uint32_t{a.bytes[14]} << 8) |
           a.bytes[15];
}

std::uint16_t be16(std::string_view m, std::size_t at) {
    return static_cast<std::uint16_t>((static_cast<unsigned char>(m[at]) << 8) | static_cast<unsigned char>(m[at + 1]));
}

void put16(std::string& out, std::uint16_t v) {
    out += static_cast<char>(v >> 8);
    out += static_cast<char>(v & 0xff);
}

}  // namespace

std::optional<DnsQuestion> parse_dns_query(std::string_view msg, std::string& why, std::uint16_t* id_out) {
    if (msg.size() < 12) {
        why = "shorter than a DNS header";
        return std::nullopt;
    }
    DnsQuestion q;
    q.id = be16(msg, 0);
    if (id_out) *id_out = q.id;
    auto flags = static_cast<unsigned char>(msg[2]);
    if (flags & 0x80) {
        why = "a response, not a query";
        return std::nullopt;
    }
    if (((flags >> 3) & 0x0f) != 0) {
        why = "opcode " + std::to_string((flags >> 3) & 0x0f) + " (only QUERY is answered)";
        return std::nullopt;
    }
    if (be16(msg, 4) != 1) {
        why = std::to_string(be16(msg, 4)) + " questions (exactly one is answered)";
        return std::nullopt;
    }
    if (be16(msg, 6) != 0 || be16(msg, 8) != 0) {
        why = "answer or authority records in a query";
        return std::nullopt;
    }
    std::size_t i = 12;
    std::size_t total = 0;
    while (true) {
        if (i >= msg.size()) {
            why = "question cut short";
            return std::nullopt;
        }
        auto len = static_cast<unsigned char>(msg[i]);
        if (len == 0) {
            ++i;
            break;
        }
        if (len & 0xc0) {
            why = "compressed or extended label in the question";
            return std::nullopt;
        }
        if (i + 1 + len > msg.size()) {
            why = "question cut short";
            return std::nullopt;
        }
        total += len + 1u;
        if (total > 255) {
            why = "name longer than 255 bytes";
            return std::nullopt;
        }
        if (!q.name.empty()) q.name += '.';
        q.name.append(msg.substr(i + 1, len));
        i += 1u + len;
    }
    if (i + 4 > msg.size()) {
        why = "question cut short";
        return std::nullopt;
    }
    q.qtype = be16(msg, i);
    q.qclass = be16(msg, i + 2);
    q.question_end = i + 4;
    return q;
}

std::string dns_reply(std::string_view query, const DnsQuestion& q, DnsRcode rc, const std::optional<Address>& a,
                      std::uint32_t ttl) {
    bool answer = rc == DnsRcode::noerror && a && a->v4() && q.qtype == 1 && q.qclass == 1;
    std::string out;
    out.reserve(q.question_end + 16);
    put16(out, q.id);
    // QR, opcode QUERY, RD as asked; RA.
    out += static_cast<char>(0x80 | (static_cast<unsigned char>(query[2]) & 0x01));
    out += static_cast<char>(0x80 | static_cast<std::uint8_t>(rc));
    put16(out, 1);
    put16(out, answer ? 1 : 0);
    put16(out, 0);
    put16(out, 0);
    out.append(query.substr(12, q.question_end - 12));
    if (answer) {
        put16(out, 0xc00c);  // the question's name
        put16(out, 1);
        put16(out, 1);
        put16(out, static_cast<std::uint16_t>(ttl >> 16));
        put16(out, static_cast<std::uint16_t>(ttl & 0xffff));
        put16(out, 4);
        out.append(reinterpret_cast<const char*>(a->bytes.data() + 12), 4);
    }
    return out;
}

std::string dns_error_reply(std::uint16_t id, DnsRcode rc) {
    std::string out;
    put16(out, id);
    out += static_cast<char>(0x80);
    out += static_cast<char>(0x80 | static_cast<std::uint8_t>(rc));
    out.append(8, '\0');
    return out;
}

const char* dns_type_name(std::uint16_t qtype) {
    switch (qtype) {
        case 1:
            return "A";
        case 2:
            return "NS";
        case 5:
            return "CNAME";
        case 6:
            return "SOA";
        case 12:
            return "PTR";
        case 15:
            return "MX";
        case 16:
            return "TXT";
        case 28:
            return "AAAA";
        case 33:
            return "SRV";
        case 64:
            return "SVCB";
        case 65:
            return "HTTPS";
        case 255:
            return "ANY";
        default:
            return nullptr;
    }
}

std::optional<Address> FakePool::address_for(const std::string& canonical_name) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = by_name_.find(canonical_name); it != by_name_.end()) return Address::v4(pool_base + it->second);
    // .0 and the last address are left out, like a network's own addresses.
    if (next_ >= pool_size - 1) return std::nullopt;
    std::uint32_t off = next_++;
    by_name_.emplace(canonical_name, off);
    by_address_.emplace(off, canonical_name);
    return Address::v4(pool_base + off);
}

std::optional<std::string> FakePool::name_for(const Address& a) const {
    if (!in_pool(a)) return std::nullopt;
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = by_address_.find(*plain_v4(a) - pool_base); it != by_address_.end()) return it->second;
    return std::nullopt;
}

std::size_t FakePool::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return by_name_.size();
}

bool FakePool::in_pool(const Address& a) {
    auto v = plain_v4(a);
    return v && (*v & ~(pool_size - 1)) == pool_base;
}

}  // namespace cc::net
