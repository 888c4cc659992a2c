#include "cc/git/http.hpp"

#include <algorithm>
#include <cctype>

namespace cc::git::http {

namespace {
std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}
std::string trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return std::string(s);
}
}  // namespace

std::optional<std::string> RequestHead::header(std::string_view name) const {
    for (const auto& [k, v] : headers)
        if (k == name) return v;
    return std::nullopt;
}

bool RequestHead::keep_alive() const {
    auto c = header("connection");
    std::string v = c ? lower(*c) : "";
    if (version == "HTTP/1.0") return v.find("keep-alive") != std::string::npos;
    return v.find("close") == std::string::npos;
}

bool RequestHead::chunked() const {
    auto te = header("transfer-encoding");
    if (!te) return false;
    std::string v = lower(trim(*te));
    return v.size() >= 7 && v.substr(v.size() - 7) == "chunked";
}

Result<std::optional<RequestHead>> take_head(std::string& buf) {
    // Tolerate blank lines before the request line (RFC 9112 section 2.2).
    while (buf.rfind("\r\n", 0) == 0) buf.erase(0, 2);
    std::string too_big = "header section is larger than " + std::to_string(max_head_bytes / 1024) + " KiB";
    std::size_t end = cc::http::head_length(buf);
    if (end == 0) {
        if (buf.size() > max_head_bytes) return input_error("request", too_big);
        return std::optional<RequestHead>{};
    }
    if (end > max_head_bytes) return input_error("request", too_big);
    auto parsed = cc::http::parse_request_head(std::string_view(buf).substr(0, end));
    if (!parsed) return input_error("request", "malformed request: " + parsed.error().one_line());
    // A push gateway serves paths only (origin-form).
    if (parsed->target.empty() || parsed->target[0] != '/') return input_error("request", "malformed request line");
    RequestHead h;
    h.method = std::move(parsed->method);
    h.target = std::move(parsed->target);
    h.version = std::move(parsed->version);
    for (auto& x : parsed->headers) h.headers.emplace_back(lower(x.name), std::move(x.value));
    // A body framed twice is a smuggling attempt (RFC 9112 section 6.3).
    if (h.header("transfer-encoding") && h.header("content-length"))
        return input_error("request", "both Transfer-Encoding and Content-Length");
    if (h.header("transfer-encoding") && !h.chunked())
        return input_error("request", "unsupported Transfer-Encoding");
    buf.erase(0, end);
    return std::optional<RequestHead>{std::move(h)};
}

Result<std::size_t> ChunkedDecoder::decode(std::string_view in, std::string& out, std::size_t cap) {
    std::size_t used = scan_.feed(in, &out, cap);
    if (scan_.failed()) return input_error("chunked body", scan_.error());
    return used;
}

std::string status_text(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 413: return "Content Too Large";
        case 415: return "Unsupported Media Type";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        default: return "Status";
    }
}

}  // namespace cc::git::http
