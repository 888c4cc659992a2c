#include "cc/core/json_writer.hpp"

#include <cstdint>
#include <cstring>
#include <utility>

namespace cc::json {

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

void append_string(std::string& out, std::string_view s) {
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

bool utf8_valid(std::string_view s) {
    bool tail = false;
    return utf8_valid_prefix(s, tail) == s.size();
}

void append_value(std::string& out, std::string_view s) {
    if (utf8_valid(s)) return append_string(out, s);
    out += "{\"bytes\":\"";
    out += base64(s);
    out += "\"}";
}

namespace {

constexpr std::string_view k_replacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view k_key_mark = "\xEF\xBF\xBD" "base64:";

bool key_needs_form(std::string_view k) { return k.substr(0, k_replacement.size()) == k_replacement || !utf8_valid(k); }

// True when j holds a string or a key that write() must rewrite.
template <typename J>
bool needs_rewrite(const J& j) {
    switch (j.type()) {
        case J::value_t::string: return !utf8_valid(j.template get_ref<const typename J::string_t&>());
        case J::value_t::array:
            for (const auto& v : j)
                if (needs_rewrite(v)) return true;
            return false;
        case J::value_t::object:
            for (auto it = j.begin(); it != j.end(); ++it)
                if (key_needs_form(it.key()) || needs_rewrite(it.value())) return true;
            return false;
        default: return false;
    }
}

template <typename J>
J rewritten(const J& j) {
    switch (j.type()) {
        case J::value_t::string: {
            const auto& s = j.template get_ref<const typename J::string_t&>();
            if (utf8_valid(s)) return j;
            return J{{"bytes", base64(s)}};
        }
        case J::value_t::array: {
            J a = J::array();
            for (const auto& v : j) a.push_back(rewritten(v));
            return a;
        }
        case J::value_t::object: {
            J o = J::object();
            for (auto it = j.begin(); it != j.end(); ++it) o[key_text(it.key())] = rewritten(it.value());
            return o;
        }
        default: return j;
    }
}

// The replace handler cannot throw; after rewritten() there is nothing left
// for it to replace, so the text is lossless.
template <typename J>
std::string write_any(const J& j, int indent) {
    constexpr auto replace = nlohmann::json::error_handler_t::replace;
    try {
        if (!needs_rewrite(j)) return j.dump(indent, ' ', false, replace);
        return rewritten(j).dump(indent, ' ', false, replace);
    } catch (const std::exception&) {
        // Only allocation can fail here; say so in a form every reader takes.
        return "{\"error\":\"cc: could not write JSON (out of memory)\"}";
    }
}

template <typename J>
std::string write_replacing_any(const J& j, int indent) {
    try {
        return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
    } catch (const std::exception&) {
        return "{\"error\":\"cc: could not write JSON (out of memory)\"}";
    }
}

}  // namespace

std::optional<std::string> bytes_of(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (!v.is_object() || v.size() != 1 || !v.contains("bytes") || !v["bytes"].is_string()) return std::nullopt;
    const auto& b64 = v["bytes"].get_ref<const std::string&>();
    if (b64.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(b64.size() / 4 * 3);
    std::uint32_t acc = 0;
    int bits = 0;
    std::size_t pad = 0;
    for (char c : b64) {
        int d;
        if (c >= 'A' && c <= 'Z') d = c - 'A';
        else if (c >= 'a' && c <= 'z') d = c - 'a' + 26;
        else if (c >= '0' && c <= '9') d = c - '0' + 52;
        else if (c == '+') d = 62;
        else if (c == '/') d = 63;
        else if (c == '=') {
            ++pad;
            continue;
        } else return std::nullopt;
        if (pad) return std::nullopt;  // nothing after padding
        acc = (acc << 6) | static_cast<std::uint32_t>(d);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xFF));
        }
    }
    if (pad > 2) return std::nullopt;
    return out;
}

std::string key_text(std::string_view s) {
    if (!key_needs_form(s)) return std::string(s);
    return std::string(k_key_mark) + base64(s);
}

std::string write(const nlohmann::json& j, int indent) { return write_any(j, indent); }
std::string write(const nlohmann::ordered_json& j, int indent) { return write_any(j, indent); }
std::string write_replacing(const nlohmann::json& j, int indent) { return write_replacing_any(j, indent); }
std::string write_replacing(const nlohmann::ordered_json& j, int indent) { return write_replacing_any(j, indent); }

}  // namespace cc::json
