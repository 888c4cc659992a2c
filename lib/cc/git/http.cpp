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
bool is_token_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
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
    auto end = buf.find("\r\n\r\n");
    if (end == std::string::npos) {
        if (buf.size() > max_head_bytes) return input_error("request", "header section is larger than 64 KiB");
        return std::optional<RequestHead>{};
    }
    if (end > max_head_bytes) return input_error("request", "header section is larger than 64 KiB");
    std::string_view head(buf.data(), end);
    RequestHead h;
    auto eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    auto s1 = line.find(' ');
    auto s2 = s1 == std::string_view::npos ? s1 : line.find(' ', s1 + 1);
    if (s2 == std::string_view::npos) return input_error("request", "malformed request line");
    h.method = std::string(line.substr(0, s1));
    h.target = std::string(line.substr(s1 + 1, s2 - s1 - 1));
    h.version = std::string(line.substr(s2 + 1));
    if ((h.version != "HTTP/1.1" && h.version != "HTTP/1.0") || h.method.empty() || h.target.empty() ||
        h.target[0] != '/' || !std::all_of(h.method.begin(), h.method.end(), is_token_char))
        return input_error("request", "malformed request line");
    std::size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
    while (pos < head.size()) {
        auto next = head.find("\r\n", pos);
        if (next == std::string_view::npos) next = head.size();
        std::string_view hl = head.substr(pos, next - pos);
        pos = next + 2;
        auto colon = hl.find(':');
        if (colon == std::string_view::npos || colon == 0) return input_error("request", "malformed header line");
        std::string name(hl.substr(0, colon));
        if (!std::all_of(name.begin(), name.end(), is_token_char))
            return input_error("request", "malformed header name");
        std::string value = trim(hl.substr(colon + 1));
        if (std::any_of(value.begin(), value.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; }))
            return input_error("request", "control character in a header value");
        h.headers.emplace_back(lower(name), value);
    }
    // A body framed twice is a smuggling attempt (RFC 9112 section 6.3).
    if (h.header("transfer-encoding") && h.header("content-length"))
        return input_error("request", "both Transfer-Encoding and Content-Length");
    if (h.header("transfer-encoding") && !h.chunked())
        return input_error("request", "unsupported Transfer-Encoding");
    buf.erase(0, end + 4);
    return std::optional<RequestHead>{std::move(h)};
}

Result<std::uint64_t> parse_content_length(std::string_view v) {
    if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return input_error("Content-Length", "is not a number");
    std::uint64_t n = 0;
    for (char c : v) n = n * 10 + static_cast<std::uint64_t>(c - '0');
    return n;
}

Result<std::size_t> ChunkedDecoder::decode(std::string_view in, std::string& out, std::size_t cap) {
    std::size_t i = 0, produced = 0;
    auto bad = [](const char* what) { return input_error("chunked body", what); };
    while (i < in.size() && state_ != State::done) {
        char c = in[i];
        switch (state_) {
            case State::size: {
                int v = std::isxdigit(static_cast<unsigned char>(c))
                            ? (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10))
                            : -1;
                if (v >= 0) {
                    if (++digits_ > 15) return bad("chunk size is too large");
                    remaining_ = remaining_ * 16 + static_cast<std::uint64_t>(v);
                } else if (digits_ == 0) {
                    return bad("bad chunk size");
                } else if (c == ';' || c == ' ' || c == '\t') {
                    state_ = State::ext;
                } else if (c == '\r') {
                    state_ = State::size_lf;
                } else {
                    return bad("bad chunk size");
                }
                ++i;
                break;
            }
            case State::ext:
                if (c == '\r') state_ = State::size_lf;
                else if (c == '\n') return bad("bare LF after chunk size");
                ++i;
                break;
            case State::size_lf:
                if (c != '\n') return bad("missing LF after chunk size");
                ++i;
                digits_ = 0;
                state_ = remaining_ == 0 ? State::trailer : State::data;
                line_ = 0;
                break;
            case State::data: {
                if (produced >= cap) return i;
                std::size_t n = std::min<std::uint64_t>({remaining_, in.size() - i, cap - produced});
                out.append(in.data() + i, n);
                produced += n;
                i += n;
                remaining_ -= n;
                if (remaining_ == 0) state_ = State::data_cr;
                break;
            }
            case State::data_cr:
                if (c != '\r') return bad("missing CRLF after chunk data");
                ++i;
                state_ = State::data_lf;
                break;
            case State::data_lf:
                if (c != '\n') return bad("missing CRLF after chunk data");
                ++i;
                state_ = State::size;
                break;
            case State::trailer:
                if (c == '\r') {
                    state_ = State::trailer_lf;
                } else if (++line_ > 8192) {
                    return bad("trailer line is too long");
                }
                ++i;
                break;
            case State::trailer_lf:
                if (c != '\n') return bad("missing LF in trailer");
                ++i;
                state_ = line_ == 0 ? State::done : State::trailer;
                line_ = 0;
                break;
            case State::done: break;
        }
    }
    return i;
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
