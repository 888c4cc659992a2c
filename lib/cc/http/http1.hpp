// HTTP/1.1 (RFC 9112) as every cc tool reads it from a client it does not
// trust: one request-head reader (with the response-head reader beside it)
// and one chunked-body state machine, shared by cc-egress (its proxy,
// lib/cc/net/wire.hpp adds the proxy's framing and forwarding rules) and
// cc-pushgate (lib/cc/git/http.hpp adds what a push gateway checks). Pure
// functions over bytes, no I/O, so tests and fuzzers feed them directly.
//
//   std::size_t n = cc::http::head_length(buf);              // 0: not whole yet
//   auto head = cc::http::parse_request_head(buf.substr(0, n));
//   cc::http::ChunkedScanner body;  body.feed(bytes, &payload);
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::http {

// One head limit for every reader: a longer head is refused (cc-egress
// answers 431, cc-pushgate 400).
inline constexpr std::size_t max_head = 32 * 1024;

struct Header {
    std::string name;   // as sent
    std::string value;  // optional whitespace trimmed
};
using Headers = std::vector<Header>;

struct RequestHead {
    std::string method, target, version;
    Headers headers;
};
struct ResponseHead {
    std::string version;
    int status = 0;
    std::string reason;
    Headers headers;
};

// Length of the head including its blank line, or 0 while incomplete. Lines
// end with CRLF or a bare LF (RFC 9112 2.2).
std::size_t head_length(std::string_view buf);
// A whole head (as head_length measured it). Refused: a method or field name
// that is not a token, a request target with whitespace or a control byte,
// a version other than HTTP/1.0 and 1.1, obsolete line folding, a field
// without ':', a NUL or a bare CR in a field value.
Result<RequestHead> parse_request_head(std::string_view head);
Result<ResponseHead> parse_response_head(std::string_view head);

const Header* find(const Headers& h, std::string_view name);  // case-insensitive
// Does a Connection-style header list `token` (comma separated, any case)?
bool has_token(const Headers& h, std::string_view name, std::string_view token);
// Content-Length: digits only (at most 18), no sign, no list.
Result<std::uint64_t> parse_content_length(std::string_view v);

bool equal_ci(std::string_view a, std::string_view b);
std::string_view trim_ows(std::string_view s);  // spaces, tabs and a trailing CR

// Walks chunked framing (RFC 9112 7.1). feed() returns how many bytes of
// `buf` belong to the body (all of them until the last chunk and trailers are
// complete). With `data`, the chunks' payload (no framing, no trailers) is
// appended to it, at most `cap` bytes per call (feed stops there; call again
// with the rest). A proxy passes the bytes on as they are; a server reads the
// payload.
class ChunkedScanner {
public:
    std::size_t feed(std::string_view buf, std::string* data = nullptr,
                     std::size_t cap = std::numeric_limits<std::size_t>::max());
    bool done() const { return state_ == State::done; }
    bool failed() const { return state_ == State::failed; }
    // Why it failed ("bare LF in a chunk size line"); "" otherwise. Only CRLF
    // ends a size, data or trailer line: a bare LF is refused, never read the
    // lenient way an origin might read it (RFC 9112 7.1, request smuggling);
    // so is a control byte in a chunk extension.
    const char* error() const { return error_; }

private:
    enum class State { size, size_ext, size_lf, data, data_cr, data_lf, trailer, trailer_lf, done, failed };
    State state_ = State::size;
    std::uint64_t remaining_ = 0;
    std::size_t line_ = 0;  // bytes in the current size or trailer line (bounded)
    bool digits_ = false;
    std::size_t trailer_bytes_ = 0;
    const char* error_ = "";
};

}  // namespace cc::http
