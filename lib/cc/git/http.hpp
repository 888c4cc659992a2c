// The small part of HTTP/1.1 (RFC 9112) the push gateway serves: request
// heads and chunked request bodies, read with lib/cc/http's shared reader
// (the one cc-egress uses), plus what a push gateway checks on top: an
// origin-form target, one framing per body. Pure parsing, no I/O, so
// protocol tests can feed it hand-made bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/http/http1.hpp"

namespace cc::git::http {

struct RequestHead {
    std::string method, target, version;
    std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased

    std::optional<std::string> header(std::string_view lower_name) const;
    // HTTP/1.1 keeps the connection unless "Connection: close"; 1.0 the reverse.
    bool keep_alive() const;
    bool chunked() const;  // Transfer-Encoding ends in chunked
};

inline constexpr std::size_t max_head_bytes = cc::http::max_head;

// Parses a complete head from the front of `buf` and erases it. nullopt: the
// head is not complete yet (an error past max_head_bytes).
Result<std::optional<RequestHead>> take_head(std::string& buf);

// Content-Length value: digits only, no sign, no list.
using cc::http::parse_content_length;

// Chunked transfer coding decoder: lib/cc/http's state machine, reading the
// payload. Trailers are read and dropped.
class ChunkedDecoder {
public:
    // Decodes from `in`, appending at most `cap` bytes to `out`. Returns how many
    // bytes of `in` were consumed; stops early when `cap` is reached or done().
    Result<std::size_t> decode(std::string_view in, std::string& out, std::size_t cap);
    bool done() const { return scan_.done(); }

private:
    cc::http::ChunkedScanner scan_;
};

std::string status_text(int status);

}  // namespace cc::git::http
