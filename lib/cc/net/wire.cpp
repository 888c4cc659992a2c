#include "cc/net/wire.hpp"

#include <boost/beast/core/detail/base64.hpp>

#include <algorithm>
#include <cstring>

namespace cc::net {

namespace {

std::uint8_t byte(std::string_view b, std::size_t i) { return static_cast<std::uint8_t>(b[i]); }

using cc::http::equal_ci;
std::string_view trim(std::string_view s) { return cc::http::trim_ows(s); }
bool iequal(std::string_view a, std::string_view b) { return equal_ci(a, b); }

bool valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (std::size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
        i += n;
    }
    return true;
}

bool hop_by_hop(const http::Headers& all, std::string_view name) {
    static const char* fixed[] = {"connection", "proxy-connection", "keep-alive", "te", "trailer",
                                  "upgrade", "proxy-authorization", "proxy-authenticate",
                                  "transfer-encoding", "content-length"};
    for (const char* f : fixed)
        if (iequal(name, f)) return true;
    // Every header the Connection header names is hop-by-hop too.
    for (const auto& h : all) {
        if (!iequal(h.name, "connection")) continue;
        std::string_view v = h.value;
        while (!v.empty()) {
            auto comma = v.find(',');
            if (iequal(trim(v.substr(0, comma)), name)) return true;
            if (comma == std::string_view::npos) break;
            v.remove_prefix(comma + 1);
        }
    }
    return false;
}

void restate_framing(std::string& out, const http::Framing& f) {
    if (f.kind == http::BodyKind::chunked) out += "Transfer-Encoding: chunked\r\n";
    if (f.kind == http::BodyKind::length) out += "Content-Length: " + std::to_string(f.length) + "\r\n";
}

}  // namespace

// ---------------------------------------------------------------- SOCKS5

namespace socks5 {

Parse parse_greeting(std::string_view b, Greeting& out) {
    if (b.empty()) return Parse::more;
    if (byte(b, 0) != 5) return Parse::bad;
    if (b.size() < 2) return Parse::more;
    std::size_t n = byte(b, 1);
    if (n == 0) return Parse::bad;
    if (b.size() < 2 + n) return Parse::more;
    out.methods.assign(b.begin() + 2, b.begin() + 2 + static_cast<std::ptrdiff_t>(n));
    out.consumed = 2 + n;
    return Parse::ok;
}

Parse parse_userpass(std::string_view b, UserPass& out) {
    if (b.empty()) return Parse::more;
    if (byte(b, 0) != 1) return Parse::bad;
    if (b.size() < 2) return Parse::more;
    std::size_t ulen = byte(b, 1);
    if (b.size() < 3 + ulen) return Parse::more;
    std::size_t plen = byte(b, 2 + ulen);
    if (b.size() < 3 + ulen + plen) return Parse::more;
    out.user.assign(b.substr(2, ulen));
    out.password.assign(b.substr(3 + ulen, plen));
    out.consumed = 3 + ulen + plen;
    return Parse::ok;
}

Parse parse_request(std::string_view b, Request& out) {
    out.error_reply = rep_general_failure;
    if (b.empty()) return Parse::more;
    if (byte(b, 0) != 5) return Parse::bad;
    if (b.size() < 4) return Parse::more;
    if (byte(b, 2) != 0) return Parse::bad;
    out.cmd = byte(b, 1);
    out.atyp = byte(b, 3);
    std::size_t addr_len = 0, off = 4;
    switch (out.atyp) {
    case 1: addr_len = 4; break;
    case 4: addr_len = 16; break;
    case 3:
        if (b.size() < 5) return Parse::more;
        addr_len = byte(b, 4);
        off = 5;
        if (addr_len == 0) return Parse::bad;
        break;
    default:
        out.error_reply = rep_address_type_not_supported;
        return Parse::bad;
    }
    if (b.size() < off + addr_len + 2) return Parse::more;
    std::string_view addr = b.substr(off, addr_len);
    if (out.atyp == 1) {
        out.host = Address::v4((std::uint32_t{byte(addr, 0)} << 24) | (std::uint32_t{byte(addr, 1)} << 16) |
                               (std::uint32_t{byte(addr, 2)} << 8) | byte(addr, 3))
                       .to_string();
    } else if (out.atyp == 4) {
        Address a;
        std::memcpy(a.bytes.data(), addr.data(), 16);
        out.host = a.to_string();
    } else {
        // Names are UTF-8 or refused; never read as latin-1.
        if (addr.find('\0') != std::string_view::npos || !valid_utf8(addr)) return Parse::bad;
        out.host = std::string(addr);
    }
    out.port = static_cast<std::uint16_t>((byte(b, off + addr_len) << 8) | byte(b, off + addr_len + 1));
    out.consumed = off + addr_len + 2;
    return Parse::ok;
}

std::string reply(std::uint8_t rep, const std::optional<Address>& bound, std::uint16_t port) {
    std::string r{'\x05', static_cast<char>(rep), '\x00'};
    if (bound && !bound->v4()) {
        r.push_back('\x04');
        r.append(reinterpret_cast<const char*>(bound->bytes.data()), 16);
    } else {
        r.push_back('\x01');
        if (bound) r.append(reinterpret_cast<const char*>(bound->bytes.data()) + 12, 4);
        else r.append(4, '\0');
    }
    r.push_back(static_cast<char>(port >> 8));
    r.push_back(static_cast<char>(port & 0xff));
    return r;
}

}  // namespace socks5

// ---------------------------------------------------------------- HTTP

namespace http {

Result<AbsoluteUri> parse_absolute_uri(std::string_view uri) {
    constexpr std::string_view scheme = "http://";
    if (uri.size() < scheme.size() || !iequal(uri.substr(0, scheme.size()), scheme))
        return input_error("'" + std::string(uri.substr(0, 64)) + "'", "only http:// absolute-form is proxied");
    std::string_view rest = uri.substr(scheme.size());
    auto end = rest.find_first_of("/?#");
    std::string_view authority = rest.substr(0, end);
    if (authority.empty()) return input_error("request target", "empty authority");
    if (authority.find('@') != std::string_view::npos) return input_error("request target", "userinfo is refused");
    AbsoluteUri u;
    u.authority = std::string(authority);
    std::string with_port(authority);
    bool has_port = authority.back() != ']' && authority.find(':') != std::string_view::npos &&
                    (authority.front() != '[' || authority.find("]:") != std::string_view::npos);
    if (!has_port) with_port += ":80";
    auto t = parse_authority(with_port);
    if (!t) return t.error();
    u.target = *t;
    std::string_view path = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
    if (auto hash = path.find('#'); hash != std::string_view::npos) path = path.substr(0, hash);
    u.origin_form = path.empty() || path.front() != '/' ? "/" + std::string(path) : std::string(path);
    return u;
}

Result<Framing> request_framing(const RequestHead& h) {
    const Header* te = nullptr;
    std::optional<std::uint64_t> length;
    for (const auto& x : h.headers) {
        if (iequal(x.name, "transfer-encoding")) {
            if (te) return input_error("Transfer-Encoding", "repeated");
            te = &x;
        } else if (iequal(x.name, "content-length")) {
            std::uint64_t v = 0;
            if (x.value.empty() || x.value.size() > 18) return input_error("Content-Length", "bad value");
            for (char c : x.value) {
                if (c < '0' || c > '9') return input_error("Content-Length", "bad value");
                v = v * 10 + static_cast<std::uint64_t>(c - '0');
            }
            if (length && *length != v) return input_error("Content-Length", "conflicting values");
            length = v;
        }
    }
    if (te) {
        if (length) return input_error("Transfer-Encoding", "sent with Content-Length");
        if (!iequal(trim(te->value), "chunked")) return input_error("Transfer-Encoding", "only chunked is accepted");
        return Framing{BodyKind::chunked, 0};
    }
    if (length && *length > 0) return Framing{BodyKind::length, *length};
    return Framing{BodyKind::none, 0};
}

Framing response_framing(const ResponseHead& h, std::string_view method) {
    if (iequal(method, "HEAD") || (h.status >= 100 && h.status < 200) || h.status == 204 || h.status == 304)
        return {BodyKind::none, 0};
    if (const Header* te = find(h.headers, "transfer-encoding")) {
        std::string_view v = trim(te->value);
        if (v.size() >= 7 && iequal(v.substr(v.size() - 7), "chunked")) return {BodyKind::chunked, 0};
        return {BodyKind::until_close, 0};
    }
    if (const Header* cl = find(h.headers, "content-length")) {
        std::uint64_t v = 0;
        bool good = !cl->value.empty() && cl->value.size() <= 18;
        for (char c : cl->value) {
            if (c < '0' || c > '9') good = false;
            else v = v * 10 + static_cast<std::uint64_t>(c - '0');
        }
        if (good) return v == 0 ? Framing{BodyKind::none, 0} : Framing{BodyKind::length, v};
    }
    return {BodyKind::until_close, 0};
}

std::string upstream_request_head(const RequestHead& h, const AbsoluteUri& uri, const Framing& f) {
    std::string out = h.method + " " + uri.origin_form + " HTTP/1.1\r\nHost: " + uri.authority + "\r\n";
    for (const auto& x : h.headers) {
        if (iequal(x.name, "host") || hop_by_hop(h.headers, x.name)) continue;
        out += x.name + ": " + x.value + "\r\n";
    }
    restate_framing(out, f);
    out += "\r\n";
    return out;
}

std::string client_response_head(const ResponseHead& h, const Framing& f, bool close) {
    std::string out = "HTTP/1.1 " + std::to_string(h.status) + " " + h.reason + "\r\n";
    for (const auto& x : h.headers) {
        if (hop_by_hop(h.headers, x.name)) continue;
        out += x.name + ": " + x.value + "\r\n";
    }
    if (f.kind == BodyKind::until_close) close = true;
    else restate_framing(out, f);
    if (close) out += "Connection: close\r\n";
    out += "\r\n";
    return out;
}

std::optional<std::string> basic_password(const Headers& h, std::string_view name) {
    const Header* x = find(h, name);
    if (!x) return std::nullopt;
    std::string_view v = trim(x->value);
    if (v.size() < 6 || !iequal(v.substr(0, 6), "basic ")) return std::nullopt;
    std::string_view b64 = trim(v.substr(6));
    if (b64.empty() || b64.size() % 4 != 0 || b64.size() > 2048) return std::nullopt;
    // Boost.Beast's decoder (header-only; libcrypto would add a megabyte to
    // the idle proxy's resident size). It stops at the first byte that is not
    // base64: everything but the padding must be read.
    std::string raw(boost::beast::detail::base64::decoded_size(b64.size()), '\0');
    auto [written, read] = boost::beast::detail::base64::decode(raw.data(), b64.data(), b64.size());
    std::size_t pad = b64.ends_with("==") ? 2 : b64.ends_with("=") ? 1 : 0;
    if (read != b64.size() - pad) return std::nullopt;
    raw.resize(written);
    auto colon = raw.find(':');
    if (colon == std::string::npos) return std::nullopt;
    return raw.substr(colon + 1);
}

std::string error_response(int status, std::string_view proxy_error, std::string_view details,
                           std::string_view body) {
    const char* reason = status == 400   ? "Bad Request"
                         : status == 403 ? "Forbidden"
                         : status == 405 ? "Method Not Allowed"
                         : status == 407 ? "Proxy Authentication Required"
                         : status == 408 ? "Request Timeout"
                         : status == 431 ? "Request Header Fields Too Large"
                         : status == 501 ? "Not Implemented"
                         : status == 502 ? "Bad Gateway"
                         : status == 503 ? "Service Unavailable"
                         : status == 504 ? "Gateway Timeout"
                                         : "Error";
    std::string b(body);
    b += '\n';
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
    if (status == 407) out += "Proxy-Authenticate: Basic realm=\"cc-egress\"\r\n";
    if (!proxy_error.empty()) {
        std::string d;
        for (char c : details) d += (c == '"' || c == '\\') ? '\'' : (c < 0x20 ? ' ' : c);
        out += "Proxy-Status: cc-egress; error=" + std::string(proxy_error) + "; details=\"" + d + "\"\r\n";
    }
    out += "Content-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(b.size()) +
           "\r\nConnection: close\r\n\r\n" + b;
    return out;
}

}  // namespace http

// ---------------------------------------------------------------- TLS

namespace tls {

Sni peek_sni(std::string_view buf, std::string& out) {
    constexpr std::size_t max_hello = 64 * 1024;
    if (buf.empty()) return Sni::more;
    if (byte(buf, 0) != 0x16) return Sni::not_tls;
    if (buf.size() >= 2 && byte(buf, 1) != 0x03) return Sni::not_tls;
    // Reassemble the handshake bytes of consecutive handshake records.
    std::string hs;
    std::size_t off = 0;
    for (;;) {
        if (buf.size() < off + 5) return off >= max_hello ? Sni::bad : Sni::more;
        if (byte(buf, off) != 0x16) return Sni::bad;
        std::size_t len = (std::size_t{byte(buf, off + 3)} << 8) | byte(buf, off + 4);
        if (len == 0 || len > 16384 + 2048) return Sni::bad;
        if (buf.size() < off + 5 + len) return Sni::more;
        hs.append(buf.substr(off + 5, len));
        off += 5 + len;
        if (hs.size() >= 4) {
            if (byte(hs, 0) != 0x01) return Sni::bad;  // not a ClientHello
            std::size_t body = (std::size_t{byte(hs, 1)} << 16) | (std::size_t{byte(hs, 2)} << 8) | byte(hs, 3);
            if (body > max_hello) return Sni::bad;
            if (hs.size() >= 4 + body) {
                hs.resize(4 + body);
                break;
            }
        }
        if (off >= max_hello) return Sni::bad;
    }
    std::string_view h(hs);
    std::size_t p = 4 + 2 + 32;  // type+len, legacy_version, random
    auto need = [&](std::size_t n) { return p + n <= h.size(); };
    if (!need(1)) return Sni::bad;
    p += 1 + byte(h, p);  // session id
    if (!need(2)) return Sni::bad;
    p += 2 + ((std::size_t{byte(h, p)} << 8) | byte(h, p + 1));  // cipher suites
    if (!need(1)) return Sni::bad;
    p += 1 + byte(h, p);  // compression methods
    if (!need(2)) return Sni::bad;
    std::size_t ext_end = p + 2 + ((std::size_t{byte(h, p)} << 8) | byte(h, p + 1));
    p += 2;
    if (ext_end > h.size()) return Sni::bad;
    while (p + 4 <= ext_end) {
        std::size_t type = (std::size_t{byte(h, p)} << 8) | byte(h, p + 1);
        std::size_t len = (std::size_t{byte(h, p + 2)} << 8) | byte(h, p + 3);
        p += 4;
        if (p + len > ext_end) return Sni::bad;
        if (type == 0 && len >= 5) {  // server_name: list len, type 0 host_name, name len, name
            std::size_t q = p + 2;
            if (byte(h, q) != 0) return Sni::bad;
            std::size_t n = (std::size_t{byte(h, q + 1)} << 8) | byte(h, q + 2);
            if (q + 3 + n > p + len || n == 0) return Sni::bad;
            out = std::string(h.substr(q + 3, n));
            return Sni::found;
        }
        p += len;
    }
    return Sni::none;
}

}  // namespace tls

}  // namespace cc::net
