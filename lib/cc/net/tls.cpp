#include "cc/net/tls.hpp"

#include <cstring>

namespace cc::net::tls {

namespace {

constexpr std::uint8_t change_cipher_spec = 20, alert = 21, handshake = 22, application_data = 23;
constexpr std::uint8_t client_hello = 1, server_hello = 2;
constexpr std::size_t max_record = 16384 + 2048;  // TLS 1.2 ciphertext bound (RFC 5246 6.2.3)
constexpr std::size_t max_message = 64 * 1024;   // a larger ClientHello is refused

std::uint8_t u8(std::string_view b, std::size_t i) { return static_cast<std::uint8_t>(b[i]); }
std::size_t u16(std::string_view b, std::size_t i) { return (std::size_t{u8(b, i)} << 8) | u8(b, i + 1); }
std::size_t u24(std::string_view b, std::size_t i) { return (std::size_t{u8(b, i)} << 16) | u16(b, i + 1); }

// SHA-256("HelloRetryRequest"): the random of a ServerHello that is a retry
// request (RFC 8446 4.1.3).
constexpr unsigned char hrr_random[32] = {0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c,
                                          0x02, 0x1e, 0x65, 0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb,
                                          0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c};

std::string printable(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 80)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\'') ? '?' : c;
    return out;
}

std::string type_name(std::uint8_t t) {
    switch (t) {
    case change_cipher_spec: return "change_cipher_spec";
    case alert: return "alert";
    case handshake: return "handshake";
    case application_data: return "application_data";
    case 24: return "heartbeat";
    }
    return "type " + std::to_string(t);
}

// Splits complete handshake messages off `buf` (bytes of consecutive
// handshake records); false when one would be larger than max_message.
template <typename F>
bool each_message(std::string& buf, F&& f) {
    std::size_t off = 0;
    while (buf.size() - off >= 4) {
        std::size_t len = u24(buf, off + 1);
        if (len > max_message) return false;
        if (buf.size() - off < 4 + len) break;
        f(std::string_view(buf).substr(off, 4 + len));
        off += 4 + len;
    }
    buf.erase(0, off);
    return true;
}

}  // namespace

int hello_server_name(std::string_view h, std::string& sni) {
    // type(1) length(3) legacy_version(2) random(32) session_id<0..32>
    // cipher_suites<2..> compression_methods<1..> extensions<8..> (RFC 8446 4.1.2)
    std::size_t p = 4 + 2 + 32;
    auto need = [&](std::size_t n) { return p + n <= h.size(); };
    if (!need(1)) return -1;
    p += 1 + u8(h, p);
    if (!need(2)) return -1;
    p += 2 + u16(h, p);
    if (!need(1)) return -1;
    p += 1 + u8(h, p);
    if (p == h.size()) return 0;  // no extensions at all
    if (!need(2)) return -1;
    std::size_t end = p + 2 + u16(h, p);
    p += 2;
    if (end != h.size()) return -1;
    int found = 0;
    while (p + 4 <= end) {
        std::size_t type = u16(h, p), len = u16(h, p + 2);
        p += 4;
        if (p + len > end) return -1;
        if (type == 0) {
            // RFC 6066 3: server_name_list<1..>, one host_name (type 0) entry.
            if (found || len < 5) return -1;
            std::size_t list = u16(h, p);
            if (list + 2 != len || u8(h, p + 2) != 0) return -1;
            std::size_t n = u16(h, p + 3);
            if (n == 0 || 5 + n != len) return -1;
            sni.assign(h.substr(p + 5, n));
            found = 1;
        }
        p += len;
    }
    if (p != end) return -1;
    return found;
}

void Follower::refuse(std::string why) {
    if (error_.empty()) error_ = std::move(why);
}

std::vector<Hello> Follower::take_hellos() {
    std::vector<Hello> out;
    out.swap(pending_);
    return out;
}

void Follower::client(std::string_view bytes) {
    c_.fed += bytes.size();
    if (refused()) return;
    if (client_done()) {
        client_ready_ = c_.fed;
        return;
    }
    c_.record.append(bytes);
    if (!started_) {
        // Only a stream that starts with a TLS record header is followed; any
        // TLS record but a handshake one placed first is refused, never taken
        // for "not TLS" and relayed unchecked.
        const std::string& r = c_.record;
        if (r.size() < 2 && !r.empty() && u8(r, 0) >= change_cipher_spec && u8(r, 0) <= 24) return;
        if (r.empty()) return;
        std::uint8_t t = u8(r, 0);
        bool tls_header = r.size() >= 2 && t >= change_cipher_spec && t <= 24 && u8(r, 1) == 3;
        if (!tls_header) {
            not_tls_ = true;
            client_ready_ = c_.fed;
            c_.record.clear();
            return;
        }
        if (t != handshake) {
            refuse("TLS " + type_name(t) + " record before any ClientHello");
            return;
        }
        started_ = true;
    }
    std::size_t off = 0;
    while (!client_done_ && !refused() && c_.record.size() - off >= 5) {
        std::string_view r(c_.record);
        std::uint8_t type = u8(r, off);
        std::size_t len = u16(r, off + 3);
        if (u8(r, off + 1) != 3 || len > max_record || (len == 0 && type != application_data)) {
            refuse("malformed TLS record from the client");
            break;
        }
        if (r.size() - off < 5 + len) break;
        client_record(type, r.substr(off + 5, len));
        off += 5 + len;
        c_.parsed += 5 + len;
        if (c_.handshake.empty() && !refused()) client_ready_ = c_.parsed;
    }
    if (refused()) return;
    c_.record.erase(0, off);
    if (client_done_) {
        client_ready_ = c_.fed;
        c_.record.clear();
        c_.handshake.clear();
    }
}

void Follower::client_record(std::uint8_t type, std::string_view body) {
    // RFC 8446 5.1: handshake messages are not interleaved with other records.
    if (type != handshake && !c_.handshake.empty()) {
        refuse("TLS " + type_name(type) + " record inside a client handshake message");
        return;
    }
    switch (type) {
    case handshake:
        c_.handshake.append(body);
        if (!each_message(c_.handshake, [this](std::string_view m) {
                if (!refused() && !client_done_) client_message(m);
            }))
            refuse("client handshake message larger than 64 KiB");
        return;
    case change_cipher_spec:
        if (body.size() != 1 || u8(body, 0) != 1) {
            refuse("malformed change_cipher_spec from the client");
            return;
        }
        // TLS 1.2 and older: everything the client sends after it is
        // encrypted. TLS 1.3: a dummy (middlebox compatibility), which may
        // come before a second ClientHello.
        if (version_ == Version::tls12) client_done_ = true;
        return;
    case alert:
    case application_data:  // TLS 1.3 early data, opaque here
        return;
    default:
        refuse("TLS " + type_name(type) + " record from the client during the handshake");
    }
}

void Follower::client_message(std::string_view m) {
    std::uint8_t type = u8(m, 0);
    if (type != client_hello) {
        if (version_ == Version::tls12) return;  // Certificate, ClientKeyExchange, CertificateVerify
        refuse("TLS handshake message type " + std::to_string(type) + " from the client before the ServerHello");
        return;
    }
    if (version_ != Version::unknown) {
        refuse("ClientHello after the ServerHello");
        return;
    }
    if (hellos_ > retries_) {
        refuse("a second ClientHello without a HelloRetryRequest");
        return;
    }
    Hello h;
    int r = hello_server_name(m, h.sni);
    if (r < 0) {
        refuse("malformed TLS ClientHello");
        return;
    }
    h.has_sni = r == 1;
    if (hellos_ == 0) {
        first_has_sni_ = h.has_sni;
        first_sni_ = h.sni;
    } else if (h.has_sni != first_has_sni_ || h.sni != first_sni_) {
        // RFC 8446 4.1.2: the second ClientHello repeats the first but for
        // key shares, early data, cookie and padding.
        refuse("ClientHello after a HelloRetryRequest names '" + (h.has_sni ? printable(h.sni) : "") +
               "', the first named '" + (first_has_sni_ ? printable(first_sni_) : "") + "'");
        return;
    }
    ++hellos_;
    pending_.push_back(std::move(h));
}

void Follower::server(std::string_view bytes) {
    s_.fed += bytes.size();
    if (server_done()) return;
    s_.record.append(bytes);
    std::size_t off = 0;
    while (!server_done_ && s_.record.size() - off >= 5) {
        std::string_view r(s_.record);
        std::uint8_t type = u8(r, off);
        std::size_t len = u16(r, off + 3);
        if (type < change_cipher_spec || type > 24 || u8(r, off + 1) != 3 || len > max_record) {
            // Not a TLS server: there is no handshake to follow on this side.
            // The client's side stays followed (nothing is waved through).
            server_done_ = true;
            break;
        }
        if (r.size() - off < 5 + len) break;
        server_record(type, r.substr(off + 5, len));
        off += 5 + len;
    }
    if (server_done_) {
        s_.record.clear();
        s_.handshake.clear();
    } else {
        s_.record.erase(0, off);
        if (s_.record.size() > 2 * max_message) server_done_ = true;
    }
}

void Follower::server_record(std::uint8_t type, std::string_view body) {
    switch (type) {
    case handshake:
        s_.handshake.append(body);
        if (!each_message(s_.handshake, [this](std::string_view m) {
                if (!server_done_) server_message(m);
            }))
            server_done_ = true;
        return;
    case change_cipher_spec:  // TLS 1.3 compatibility, after a retry request
        return;
    default:  // an alert ends the handshake; encrypted records before a ServerHello are not TLS we know
        server_done_ = true;
    }
}

void Follower::server_message(std::string_view m) {
    if (u8(m, 0) != server_hello) {
        server_done_ = true;
        return;
    }
    // legacy_version(2) random(32) session_id<0..32> cipher_suite(2)
    // compression(1) [extensions<6..>] (RFC 8446 4.1.3, RFC 5246 7.4.1.3)
    std::size_t p = 4;
    if (m.size() < p + 2 + 32 + 1) {
        server_done_ = true;
        return;
    }
    std::size_t legacy = u16(m, p);
    bool retry = std::memcmp(m.data() + p + 2, hrr_random, 32) == 0;
    p += 2 + 32;
    p += 1 + u8(m, p) + 2 + 1;
    std::size_t selected = legacy;
    if (p + 2 <= m.size()) {
        std::size_t end = std::min(m.size(), p + 2 + u16(m, p));
        p += 2;
        while (p + 4 <= end) {
            std::size_t type = u16(m, p), len = u16(m, p + 2);
            if (type == 43 && len == 2 && p + 6 <= end) selected = u16(m, p + 4);  // supported_versions
            p += 4 + len;
        }
    }
    if (retry) {
        ++retries_;
        return;  // the real ServerHello follows the client's second hello
    }
    version_ = selected == 0x0304 ? Version::tls13 : Version::tls12;
    server_done_ = true;
    // TLS 1.3: the client's next flight is encrypted; nothing more to follow.
    if (version_ == Version::tls13) client_done_ = true;
}

}  // namespace cc::net::tls
