// Wire formats the egress proxy reads, as pure functions over bytes so they
// are tested (and fuzzed) without sockets: SOCKS5 (RFC 1928), the proxy's
// HTTP/1.1 framing and forwarding rules over lib/cc/http's shared reader
// (heads and chunked framing, RFC 9112), and the server
// name of a TLS ClientHello (RFC 8446 4.1.2, RFC 6066 3).
//
// Incremental parsers return Parse::more until the buffer holds a whole
// message; nothing here allocates more than the bytes it was given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/http/http1.hpp"
#include "cc/net/host.hpp"

namespace cc::net {

enum class Parse { more, ok, bad };

namespace socks5 {

inline constexpr std::uint8_t rep_success = 0x00, rep_general_failure = 0x01, rep_not_allowed = 0x02,
                              rep_network_unreachable = 0x03, rep_host_unreachable = 0x04,
                              rep_refused = 0x05, rep_command_not_supported = 0x07,
                              rep_address_type_not_supported = 0x08;
inline constexpr std::uint8_t cmd_connect = 0x01;
inline constexpr std::uint8_t method_none = 0x00, method_userpass = 0x02, method_unacceptable = 0xff;

struct Greeting {
    std::vector<std::uint8_t> methods;
    std::size_t consumed = 0;
};
// 05 NMETHODS METHODS...; bad for another version or no methods.
Parse parse_greeting(std::string_view buf, Greeting& out);

struct Request {
    std::uint8_t cmd = 0;
    std::uint8_t atyp = 0;
    std::string host;  // the domain as sent (ATYP 03) or the address text
    std::uint16_t port = 0;
    std::size_t consumed = 0;
    std::uint8_t error_reply = rep_general_failure;  // the reply code when bad
};
// 05 CMD 00 ATYP ADDR PORT. An unknown ATYP is bad with error_reply 08; a
// domain that is empty, holds a NUL or is not UTF-8 is bad with 01.
Parse parse_request(std::string_view buf, Request& out);

// RFC 1929 username/password subnegotiation: 01 ULEN UNAME PLEN PASSWD.
struct UserPass {
    std::string user, password;
    std::size_t consumed = 0;
};
Parse parse_userpass(std::string_view buf, UserPass& out);

// 05 REP 00 01 0.0.0.0:0, or the bound address when given.
std::string reply(std::uint8_t rep, const std::optional<Address>& bound = std::nullopt, std::uint16_t port = 0);

}  // namespace socks5

namespace http {

// The HTTP/1.1 reader both cc-egress and cc-pushgate use (lib/cc/http):
// heads, header lookups and the chunked state machine.
using cc::http::max_head;  // a longer head is answered 431
using cc::http::Header;
using cc::http::Headers;
using cc::http::RequestHead;
using cc::http::ResponseHead;
using cc::http::head_length;
using cc::http::parse_request_head;
using cc::http::parse_response_head;
using cc::http::find;
using cc::http::has_token;
using cc::http::ChunkedScanner;

// "http://host[:port]/path?query" -> the target and the origin-form "/path?query".
struct AbsoluteUri {
    Target target;
    std::string authority;  // as written, for the Host header
    std::string origin_form;
};
Result<AbsoluteUri> parse_absolute_uri(std::string_view uri);

enum class BodyKind { none, length, chunked, until_close };
struct Framing {
    BodyKind kind = BodyKind::none;
    std::uint64_t length = 0;
};
// Requests: Transfer-Encoding other than a final "chunked", Transfer-Encoding
// together with Content-Length, or conflicting Content-Lengths are refused
// (request smuggling, RFC 9112 6.1 and 6.3).
Result<Framing> request_framing(const RequestHead& h);
Framing response_framing(const ResponseHead& h, std::string_view request_method);

// The head forwarded upstream: origin-form target, Host from the URI, hop-by-hop
// headers dropped (Connection and what it names, Proxy-Connection, Keep-Alive,
// TE, Trailer, Upgrade, Proxy-Authorization, Proxy-Authenticate), framing
// restated from `f`.
std::string upstream_request_head(const RequestHead& h, const AbsoluteUri& uri, const Framing& f);
// The response head for the client; `close` adds Connection: close.
std::string client_response_head(const ResponseHead& h, const Framing& f, bool close);

// The password of a "Basic" credential (RFC 7617) in header `name`
// (Proxy-Authorization); nullopt when absent, another scheme, or not
// base64 of "user:password".
std::optional<std::string> basic_password(const Headers& h, std::string_view name);

// A complete short response: status line, Proxy-Status (RFC 9209) when
// `proxy_error` is set, text body, Connection: close.
std::string error_response(int status, std::string_view proxy_error, std::string_view details,
                           std::string_view body);

}  // namespace http

namespace tls {

enum class Sni { more, found, none, bad, not_tls };
// Looks at the first bytes a client sent on a tunnel. not_tls when they do not
// start a TLS handshake record; more while the ClientHello is incomplete (it
// may span records; bounded at 64 KiB); found with the host_name; none when a
// whole ClientHello carries no server_name; bad when it is malformed (a
// client hiding its server name is refused, not waved through).
Sni peek_sni(std::string_view buf, std::string& out);

}  // namespace tls

}  // namespace cc::net
