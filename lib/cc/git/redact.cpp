#include "cc/git/redact.hpp"

#include <algorithm>
#include <cctype>

namespace cc::git {

namespace {

std::string base64(std::string_view in, bool url) {
    const char* abc = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                          : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                     static_cast<unsigned char>(in[i + 2]);
        for (int s = 18; s >= 0; s -= 6) out.push_back(abc[(v >> s) & 63]);
    }
    if (i < in.size()) {
        unsigned v = static_cast<unsigned char>(in[i]) << 16;
        if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
        out.push_back(abc[(v >> 18) & 63]);
        out.push_back(abc[(v >> 12) & 63]);
        if (i + 1 < in.size()) out.push_back(abc[(v >> 6) & 63]);
    }
    return out;
}

}  // namespace

std::vector<std::string> secret_spellings(std::string_view secret) {
    std::vector<std::string> out;
    if (secret.empty()) return out;
    out.emplace_back(secret);
    for (bool upper : {true, false}) {
        std::string pct;
        const char* hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
        for (unsigned char c : secret) {
            if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
                pct.push_back(static_cast<char>(c));
            } else {
                pct.push_back('%');
                pct.push_back(hex[c >> 4]);
                pct.push_back(hex[c & 15]);
            }
        }
        out.push_back(pct);
    }
    // Base64 of the secret after k bytes of anything: the characters that
    // depend on the secret's bits alone.
    for (std::size_t k = 0; k < 3; ++k) {
        for (bool url : {false, true}) {
            std::string in(k, '\0');
            in.append(secret);
            std::string enc = base64(in, url);
            std::size_t from = (8 * k + 5) / 6, to = (8 * (k + secret.size())) / 6;
            if (to > from + 3) out.push_back(enc.substr(from, to - from));
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

Redactor::Redactor(std::vector<std::string> needles) : needles_(std::move(needles)) {
    needles_.erase(std::remove_if(needles_.begin(), needles_.end(), [](const std::string& n) { return n.empty(); }),
                   needles_.end());
}

void Redactor::mask(std::string& buf) {
    for (const auto& n : needles_) {
        for (auto pos = buf.find(n); pos != std::string::npos; pos = buf.find(n, pos + n.size())) {
            std::fill(buf.begin() + static_cast<std::ptrdiff_t>(pos),
                      buf.begin() + static_cast<std::ptrdiff_t>(pos + n.size()), '*');
            masked_ = true;
        }
    }
}

std::string Redactor::feed(std::string_view data) {
    held_.append(data);
    mask(held_);
    // Hold back the shortest tail that is a proper prefix of some needle.
    std::size_t keep_from = held_.size();
    for (const auto& n : needles_) {
        std::size_t longest = std::min(n.size() - 1, held_.size());
        for (std::size_t len = longest; len > 0; --len) {
            if (held_.compare(held_.size() - len, len, n, 0, len) == 0) {
                keep_from = std::min(keep_from, held_.size() - len);
                break;
            }
        }
    }
    std::string out = held_.substr(0, keep_from);
    held_.erase(0, keep_from);
    return out;
}

std::string Redactor::finish() {
    std::string out;
    out.swap(held_);
    return out;
}

std::string Redactor::whole(std::string_view data) {
    std::string buf(data);
    mask(buf);
    return buf;
}

}  // namespace cc::git
