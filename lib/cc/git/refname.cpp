// Ref names as a reader sees them (decision.hpp): characters that do not
// show, and letters drawn like others, judged with ICU's Unicode data
// (character properties, and the confusables table of Unicode's security
// mechanisms behind uspoof_getSkeleton) rather than lists kept by hand.

#include "cc/git/decision.hpp"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/uspoof.h>
#include <unicode/utf16.h>
#include <unicode/utf8.h>

#include <cctype>
#include <cstdio>
#include <string>
#include <unordered_map>

namespace cc::git {

namespace {

// A character a reader does not see, or sees as a space: default-ignorable
// code points (zero-width characters, joiners, variation selectors, fillers,
// tag characters), bidi controls, other format characters, C1 controls and
// spaces other than ASCII's (git refuses that one itself).
bool unseen(UChar32 c) {
    if (c < 0x80) return false;
    const auto type = static_cast<UCharCategory>(u_charType(c));
    return u_hasBinaryProperty(c, UCHAR_DEFAULT_IGNORABLE_CODE_POINT) || u_hasBinaryProperty(c, UCHAR_BIDI_CONTROL) ||
           type == U_FORMAT_CHAR || type == U_CONTROL_CHAR || u_hasBinaryProperty(c, UCHAR_WHITE_SPACE);
}

// One checker for the process: uspoof_getSkeleton is a const use, safe
// from several threads at once. nullptr when ICU cannot open its data.
const USpoofChecker* checker() {
    static USpoofChecker* sc = [] {
        UErrorCode e = U_ZERO_ERROR;
        USpoofChecker* s = uspoof_open(&e);
        return U_SUCCESS(e) ? s : nullptr;
    }();
    return sc;
}

// The skeleton of one code point (its confusable prototype, NFD), or "".
std::string skeleton(UChar32 c) {
    const USpoofChecker* sc = checker();
    if (!sc) return "";
    char in[U8_MAX_LENGTH];
    std::int32_t len = 0;
    UBool bad = false;
    U8_APPEND(in, len, U8_MAX_LENGTH, c, bad);
    if (bad) return "";
    char out[64];
    UErrorCode e = U_ZERO_ERROR;
    std::int32_t n = uspoof_getSkeletonUTF8(sc, 0, in, len, out, sizeof out, &e);
    if (U_FAILURE(e) || n <= 0 || n >= static_cast<std::int32_t>(sizeof out)) return "";
    return std::string(out, static_cast<std::size_t>(n));
}

// The ASCII character (lower case) a code point is drawn like, 0 for none:
// the one whose skeleton is the same. Skeletons are not readable letters
// (m's is "rn", I's is "l"), so each printable ASCII character's skeleton is
// looked up once, lower-case letters first, then digits, then the rest.
char ascii_like(UChar32 c) {
    static const std::unordered_map<std::string, char> by_skeleton = [] {
        std::unordered_map<std::string, char> m;
        std::string order;
        for (char ch = 'a'; ch <= 'z'; ++ch) order.push_back(ch);
        for (char ch = '0'; ch <= '9'; ++ch) order.push_back(ch);
        for (int ch = 0x21; ch < 0x7F; ++ch)
            if (!std::islower(ch) && !std::isdigit(ch)) order.push_back(static_cast<char>(ch));
        for (char ch : order)
            if (auto s = skeleton(static_cast<unsigned char>(ch)); !s.empty())
                m.emplace(s, static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
        return m;
    }();
    auto it = by_skeleton.find(skeleton(c));
    return it == by_skeleton.end() ? 0 : it->second;
}

// The code point's compatibility form (NFKC) when it is printable ASCII,
// lower case; else "".
std::string ascii_form(UChar32 c) {
    UErrorCode e = U_ZERO_ERROR;
    const UNormalizer2* nfkc = unorm2_getNFKCInstance(&e);
    if (U_FAILURE(e)) return "";
    UChar in[2];
    std::int32_t len = 0;
    UBool bad = false;
    U16_APPEND(in, len, 2, c, bad);
    if (bad) return "";
    UChar out[32];
    std::int32_t n = unorm2_normalize(nfkc, in, len, out, 32, &e);
    if (U_FAILURE(e) || n <= 0) return "";
    std::string r;
    for (std::int32_t k = 0; k < n; ++k) {
        if (out[k] <= 0x20 || out[k] >= 0x7F) return "";
        r.push_back(static_cast<char>(std::tolower(out[k])));
    }
    return r;
}

}  // namespace

std::string invisible_char(std::string_view ref) {
    const auto n = static_cast<std::int32_t>(ref.size());
    for (std::int32_t i = 0; i < n;) {
        UChar32 c;
        U8_NEXT(ref.data(), i, n, c);
        // A byte that is not UTF-8 shows as itself (a Latin-1 name is a
        // name): it is judged as it is, and logged as bytes.
        char buf[16];
        if (c >= 0 && unseen(c)) {
            std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
            return buf;
        }
    }
    return "";
}

std::string lookalike(std::string_view ref) {
    std::string out;
    const auto n = static_cast<std::int32_t>(ref.size());
    for (std::int32_t i = 0; i < n;) {
        const std::int32_t at = i;
        UChar32 c;
        U8_NEXT(ref.data(), i, n, c);
        const std::string_view one = ref.substr(static_cast<std::size_t>(at), static_cast<std::size_t>(i - at));
        if (c >= 0 && c < 0x80) {
            out.push_back(static_cast<char>(std::tolower(c)));
            continue;
        }
        if (c >= 0 && unseen(c)) continue;  // not seen: left out
        if (c < 0) {  // not UTF-8: kept as it is
            out.append(one);
            continue;
        }
        // A compatibility form of ASCII (fullwidth, mathematical, a ligature)
        // is that ASCII; else drawn like an ASCII character: its lower case
        // first (a Cyrillic capital I reads as i), then itself.
        if (std::string k = ascii_form(u_tolower(c)); !k.empty()) {
            out += k;
            continue;
        }
        char like = ascii_like(u_tolower(c));
        if (!like) like = ascii_like(c);
        if (like) out.push_back(like);
        else out.append(one);
    }
    return out;
}

bool lookalike_by_script(std::string_view ref, std::string_view like) {
    std::string lower;
    bool wide = false;
    for (char ch : ref) {
        wide = wide || static_cast<unsigned char>(ch) >= 0x80;
        lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    }
    return wide && lower != like;
}

}  // namespace cc::git
