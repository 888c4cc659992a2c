#include "cc/sandbox/events.hpp"

#include <utility>

namespace cc::sandbox {

std::size_t utf8_valid_prefix(std::string_view s, bool& only_incomplete_tail) {
    only_incomplete_tail = false;
    std::size_t i = 0, n = s.size();
    while (i < n) {
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

std::string base64(std::string_view in) {
    static constexpr char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        std::uint32_t v = (std::uint32_t(std::uint8_t(in[i])) << 16) | (std::uint32_t(std::uint8_t(in[i + 1])) << 8) |
                          std::uint8_t(in[i + 2]);
        out += tbl[v >> 18];
        out += tbl[(v >> 12) & 63];
        out += tbl[(v >> 6) & 63];
        out += tbl[v & 63];
    }
    if (i < in.size()) {
        std::uint32_t v = std::uint32_t(std::uint8_t(in[i])) << 16;
        if (i + 1 < in.size()) v |= std::uint32_t(std::uint8_t(in[i + 1])) << 8;
        out += tbl[v >> 18];
        out += tbl[(v >> 12) & 63];
        out += i + 1 < in.size() ? tbl[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::string EventWriter::line(std::string_view kind, nlohmann::json fields) {
    nlohmann::json j = {{"event", kind}, {"sessionId", session_}, {"seq", ++seq_}};
    for (auto& [k, v] : fields.items()) j[k] = std::move(v);
    return j.dump();
}

std::string EventWriter::chunk(std::string_view kind, std::string_view data) {
    bool tail = false;
    if (utf8_valid_prefix(data, tail) == data.size())
        return line(kind, {{"text", std::string(data)}});
    return line(kind, {{"bytes", base64(data)}});
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

}  // namespace cc::sandbox
