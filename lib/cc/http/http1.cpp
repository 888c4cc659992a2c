#include "cc/http/http1.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace cc::http {

bool equal_ci(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

namespace {

// RFC 9110 5.6.2 token characters, for method and header names.
bool is_token(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        if (std::isalnum(static_cast<unsigned char>(c))) continue;
        if (std::strchr("!#$%&'*+-.^_`|~", c) && c != '\0') continue;
        return false;
    }
    return true;
}

// Split a head into lines (CRLF, bare LF tolerated) and parse header fields.
Result<std::vector<std::string_view>> head_lines(std::string_view head) {
    std::vector<std::string_view> lines;
    while (!head.empty()) {
        auto nl = head.find('\n');
        if (nl == std::string_view::npos) break;
        std::string_view line = head.substr(0, nl);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        head.remove_prefix(nl + 1);
        if (line.empty()) break;
        lines.push_back(line);
    }
    if (lines.empty()) return input_error("request", "empty head");
    return lines;
}

Status parse_headers(const std::vector<std::string_view>& lines, http::Headers& out) {
    for (std::size_t i = 1; i < lines.size(); ++i) {
        std::string_view l = lines[i];
        if (l.front() == ' ' || l.front() == '\t') return input_error("header", "obsolete line folding");
        auto colon = l.find(':');
        if (colon == std::string_view::npos) return input_error("header", "missing ':'");
        std::string_view name = l.substr(0, colon);
        if (!is_token(name)) return input_error("header", "bad field name");
        std::string_view value = trim_ows(l.substr(colon + 1));
        if (value.find('\0') != std::string_view::npos) return input_error("header", "NUL in field value");
        if (value.find('\r') != std::string_view::npos) return input_error("header", "bare CR in field value");
        out.push_back({std::string(name), std::string(value)});
    }
    return ok();
}

}  // namespace

std::size_t head_length(std::string_view buf) {
    for (std::size_t i = buf.find('\n'); i != std::string_view::npos; i = buf.find('\n', i + 1)) {
        if (i + 1 < buf.size() && buf[i + 1] == '\n') return i + 2;
        if (i + 2 < buf.size() && buf[i + 1] == '\r' && buf[i + 2] == '\n') return i + 3;
    }
    return 0;
}

Result<RequestHead> parse_request_head(std::string_view head) {
    auto lines = head_lines(head);
    if (!lines) return lines.error();
    std::string_view start = (*lines)[0];
    auto sp1 = start.find(' ');
    auto sp2 = start.rfind(' ');
    if (sp1 == std::string_view::npos || sp1 == sp2) return input_error("request line", "malformed");
    RequestHead h;
    h.method = std::string(start.substr(0, sp1));
    h.target = std::string(start.substr(sp1 + 1, sp2 - sp1 - 1));
    h.version = std::string(start.substr(sp2 + 1));
    if (!is_token(h.method)) return input_error("request line", "bad method");
    // RFC 9112 3.2: a request-target has no whitespace and no control characters.
    if (h.target.empty() || std::any_of(h.target.begin(), h.target.end(), [](unsigned char c) {
            return c <= 0x20 || c == 0x7f;
        }))
        return input_error("request line", "bad request target");
    if (h.version != "HTTP/1.1" && h.version != "HTTP/1.0") return input_error("request line", "unsupported version");
    if (auto s = parse_headers(*lines, h.headers); !s) return s.error();
    return h;
}

Result<ResponseHead> parse_response_head(std::string_view head) {
    auto lines = head_lines(head);
    if (!lines) return lines.error();
    std::string_view start = (*lines)[0];
    if (start.size() < 12 || start.substr(0, 7) != "HTTP/1." || start[8] != ' ')
        return input_error("status line", "malformed");
    ResponseHead h;
    h.version = std::string(start.substr(0, 8));
    for (int i = 9; i < 12; ++i) {
        if (start[i] < '0' || start[i] > '9') return input_error("status line", "bad status code");
        h.status = h.status * 10 + (start[i] - '0');
    }
    // RFC 9110 15: three digits, 100-599; then a space before any reason.
    if (h.status < 100 || h.status > 599) return input_error("status line", "bad status code");
    if (start.size() > 12 && start[12] != ' ') return input_error("status line", "malformed");
    h.reason = start.size() > 13 ? std::string(start.substr(13)) : "";
    if (auto s = parse_headers(*lines, h.headers); !s) return s.error();
    return h;
}

const Header* find(const Headers& h, std::string_view name) {
    for (const auto& x : h)
        if (equal_ci(x.name, name)) return &x;
    return nullptr;
}

bool has_token(const Headers& hs, std::string_view name, std::string_view token) {
    for (const auto& h : hs) {
        if (!equal_ci(h.name, name)) continue;
        std::string_view v = h.value;
        while (true) {
            auto comma = v.find(',');
            if (equal_ci(trim_ows(v.substr(0, comma)), token)) return true;
            if (comma == std::string_view::npos) break;
            v.remove_prefix(comma + 1);
        }
    }
    return false;
}

Result<std::uint64_t> parse_content_length(std::string_view v) {
    if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return input_error("Content-Length", "is not a number");
    std::uint64_t n = 0;
    for (char c : v) n = n * 10 + static_cast<std::uint64_t>(c - '0');
    return n;
}

std::size_t ChunkedScanner::feed(std::string_view buf, std::string* data, std::size_t cap) {
    constexpr std::size_t max_line = 4096, max_trailers = 16 * 1024;
    auto fail = [this](const char* why) {
        state_ = State::failed;
        error_ = why;
    };
    std::size_t i = 0, produced = 0;
    while (i < buf.size() && state_ != State::done && state_ != State::failed) {
        char c = buf[i];
        auto u = static_cast<unsigned char>(c);
        switch (state_) {
        case State::size:
            if (std::isxdigit(u)) {
                if (remaining_ >> 59) { fail("chunk size too large"); break; }
                remaining_ = remaining_ * 16 + static_cast<std::uint64_t>(
                    std::isdigit(u) ? c - '0' : (std::tolower(c) - 'a' + 10));
                digits_ = true;
            } else if (!digits_) {
                fail("chunk size line without a size");
            } else if (c == ';' || c == ' ' || c == '\t') {
                state_ = State::size_ext;
            } else if (c == '\r') {
                state_ = State::size_lf;
            } else if (c == '\n') {
                fail("bare LF in a chunk size line");
            } else {
                fail("bad byte in a chunk size");
            }
            if (++line_ > max_line) fail("chunk size line too long");
            ++i;
            break;
        case State::size_ext:
            // RFC 9112 7.1.1: a chunk extension holds no control byte but HTAB.
            // A bare LF here is where a lenient origin starts the chunk data
            // while this scanner would still be in the extension: refused, so
            // the two cannot disagree on where the body ends (smuggling).
            if (c == '\r') state_ = State::size_lf;
            else if (c == '\n') fail("bare LF in a chunk size line");
            else if ((u < 0x20 && c != '\t') || u == 0x7f) fail("control byte in a chunk extension");
            if (++line_ > max_line) fail("chunk size line too long");
            ++i;
            break;
        case State::size_lf:
            if (c != '\n') { fail("CR without LF in a chunk size line"); break; }
            ++i;
            line_ = 0;
            digits_ = false;
            state_ = remaining_ == 0 ? State::trailer : State::data;
            break;
        case State::data: {
            if (data && produced >= cap) return i;
            std::size_t take = static_cast<std::size_t>(
                std::min<std::uint64_t>(remaining_, buf.size() - i));
            if (data) take = std::min(take, cap - produced);
            if (data) data->append(buf.data() + i, take);
            produced += take;
            remaining_ -= take;
            i += take;
            if (remaining_ == 0) state_ = State::data_cr;
            break;
        }
        case State::data_cr:
            if (c != '\r') { fail(c == '\n' ? "bare LF after chunk data" : "chunk data longer than its size"); break; }
            state_ = State::data_lf;
            ++i;
            break;
        case State::data_lf:
            if (c != '\n') { fail("CR without LF after chunk data"); break; }
            state_ = State::size;
            ++i;
            break;
        case State::trailer:
            // Trailer fields end with an empty line; every line ends with CRLF
            // (a bare LF would end the trailers early for a lenient origin).
            if (c == '\r') state_ = State::trailer_lf;
            else if (c == '\n') fail("bare LF in the trailer section");
            else if (c == '\0') fail("NUL in the trailer section");
            else ++line_;
            if (++trailer_bytes_ > max_trailers) fail("trailer section too long");
            ++i;
            break;
        case State::trailer_lf:
            if (c != '\n') { fail("CR without LF in the trailer section"); break; }
            ++i;
            state_ = line_ == 0 ? State::done : State::trailer;
            line_ = 0;
            break;
        default:
            break;
        }
    }
    return i;
}

}  // namespace cc::http
