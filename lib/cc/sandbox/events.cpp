#include "cc/sandbox/events.hpp"

#include <cstring>
#include <utility>

namespace cc::sandbox {

namespace {

// Eight bytes at a time (the --events hot path): the classic "has a byte
// less than n" / "has a zero byte" word tricks.
constexpr std::uint64_t k_ones = 0x0101010101010101ULL, k_highs = 0x8080808080808080ULL;
inline std::uint64_t load8(const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline bool has_zero(std::uint64_t v) { return ((v - k_ones) & ~v & k_highs) != 0; }
inline bool needs_escape(std::uint64_t v) {
    return (((v - k_ones * 0x20) & ~v & k_highs) != 0) || has_zero(v ^ (k_ones * '"')) || has_zero(v ^ (k_ones * '\\'));
}

}  // namespace

std::size_t utf8_valid_prefix(std::string_view s, bool& only_incomplete_tail) {
    only_incomplete_tail = false;
    std::size_t i = 0, n = s.size();
    while (i < n) {
        if (i + 8 <= n && (load8(s.data() + i) & k_highs) == 0) {
            i += 8;
            continue;
        }
        auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len;
        std::uint32_t cp;
        if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
        else return i;
        std::size_t k = 1;
        for (; k < len && i + k < n; ++k) {
            auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if (k < len) {  // ran out of input mid-sequence
            only_incomplete_tail = true;
            return i;
        }
        // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return i;
        i += len;
    }
    return i;
}

// Writes into a presized buffer (the --events path for non-UTF-8 output).
std::string base64(std::string_view in) {
    static constexpr char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out((in.size() + 2) / 3 * 4, '=');
    const auto* p = reinterpret_cast<const unsigned char*>(in.data());
    char* o = out.data();
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3, o += 4) {
        std::uint32_t v = (std::uint32_t(p[i]) << 16) | (std::uint32_t(p[i + 1]) << 8) | p[i + 2];
        o[0] = tbl[v >> 18];
        o[1] = tbl[(v >> 12) & 63];
        o[2] = tbl[(v >> 6) & 63];
        o[3] = tbl[v & 63];
    }
    if (i < in.size()) {
        std::uint32_t v = std::uint32_t(p[i]) << 16;
        if (i + 1 < in.size()) v |= std::uint32_t(p[i + 1]) << 8;
        o[0] = tbl[v >> 18];
        o[1] = tbl[(v >> 12) & 63];
        if (i + 1 < in.size()) o[2] = tbl[(v >> 6) & 63];
    }
    return out;
}

void append_json_string(std::string& out, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    out.reserve(out.size() + s.size() + 2);
    out.push_back('"');
    std::size_t run = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if ((i & 7) == 0) {
            while (i + 8 <= s.size() && !needs_escape(load8(s.data() + i))) i += 8;
            if (i >= s.size()) break;
        }
        auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        out.append(s.data() + run, i - run);
        run = i + 1;
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default: {
                char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                out.append(u, 6);
            }
        }
    }
    out.append(s.data() + run, s.size() - run);
    out.push_back('"');
}

std::string EventWriter::line(std::string_view kind, nlohmann::json fields) {
    nlohmann::json j = {{"event", kind}, {"sessionId", session_}, {"seq", ++seq_}};
    for (auto& [k, v] : fields.items()) j[k] = std::move(v);
    return j.dump();
}

// Built by hand, keys in the same (sorted) order nlohmann writes: this runs
// once per 64 KiB of child output.
std::string EventWriter::chunk(std::string_view kind, std::string_view data) {
    std::string out;
    chunk_into(out, kind, data);
    return out;
}

void EventWriter::chunk_into(std::string& out, std::string_view kind, std::string_view data) {
    bool tail = false;
    bool text = utf8_valid_prefix(data, tail) == data.size();
    out.clear();
    out.reserve(data.size() + data.size() / 8 + 96);
    out += text ? "{" : "{\"bytes\":\"" + base64(data) + "\",";
    out += "\"event\":";
    append_json_string(out, kind);
    out += ",\"seq\":" + std::to_string(++seq_) + ",\"sessionId\":";
    append_json_string(out, session_);
    if (text) {
        out += ",\"text\":";
        append_json_string(out, data);
    }
    out += "}";
}

std::string_view Utf8Carry::take(std::string_view data, std::string& scratch) {
    std::string_view all = data;
    if (!carry_.empty()) {
        scratch.assign(carry_);
        scratch.append(data);
        carry_.clear();
        all = scratch;
    }
    bool tail = false;
    std::size_t ok = utf8_valid_prefix(all, tail);
    if (tail && all.size() - ok <= 3) {
        carry_.assign(all.substr(ok));
        all = all.substr(0, ok);
    }
    return all;
}

std::string Utf8Carry::take(std::string_view data) {
    std::string buf = std::move(carry_);
    carry_.clear();
    buf.append(data);
    bool tail = false;
    std::size_t ok = utf8_valid_prefix(buf, tail);
    if (tail && buf.size() - ok <= 3) {
        carry_ = buf.substr(ok);
        buf.resize(ok);
    }
    return buf;
}

nlohmann::json setup_failure_exit(const Error& e) {
    return {{"exitCode", 125}, {"endedBy", "setup"}, {"reason", e.one_line()}};
}

}  // namespace cc::sandbox
