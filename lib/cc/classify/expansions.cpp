#include "cc/classify/expansions.hpp"

#include "cc/shell/parser.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace cc::classify {

void plausible_readings_at(const std::string& w, const Values& values, std::vector<std::string>& out,
                           std::size_t limit, int depth);

namespace {

bool is_name_start_char(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

// The index of the '}' closing the "${" at k, or the end.
std::size_t parameter_end(const std::string& w, std::size_t k) {
    int depth = 0;
    for (; k < w.size(); ++k) {
        if (w[k] == '{') ++depth;
        else if (w[k] == '}' && --depth == 0) return k;
    }
    return w.size();
}

}  // namespace

bool brace_expand(const std::string& w, std::vector<std::string>& out, std::size_t limit) {
    for (std::size_t open = 0; open < w.size(); ++open) {
        if (w[open] == '$' && open + 1 < w.size() && w[open + 1] == '{') {
            open = parameter_end(w, open + 1);
            continue;
        }
        if (w[open] != '{') continue;
        int depth = 0;
        std::vector<std::size_t> commas;
        std::size_t close = std::string::npos;
        for (std::size_t k = open; k < w.size(); ++k) {
            char c = w[k];
            if (c == '$' && k + 1 < w.size() && w[k + 1] == '{') {
                k = parameter_end(w, k + 1);
                continue;
            }
            if (c == '{') ++depth;
            else if (c == '}' && --depth == 0) {
                close = k;
                break;
            } else if (c == ',' && depth == 1) commas.push_back(k);
        }
        if (close == std::string::npos) return false;
        std::string prefix = w.substr(0, open), suffix = w.substr(close + 1);
        std::vector<std::string> alts;
        if (!commas.empty()) {
            std::size_t from = open + 1;
            for (std::size_t c : commas) {
                alts.push_back(w.substr(from, c - from));
                from = c + 1;
            }
            alts.push_back(w.substr(from, close - from));
        } else {
            // {a..b} and {a..b..step} over numbers or single letters.
            std::string body = w.substr(open + 1, close - open - 1);
            auto dots = body.find("..");
            if (dots == std::string::npos) continue;
            std::string lo = body.substr(0, dots), rest = body.substr(dots + 2);
            std::string hi = rest.substr(0, rest.find(".."));
            auto number = [](const std::string& t, long& v) {
                if (t.empty() || t.size() > 9) return false;
                std::size_t k = t[0] == '-' ? 1 : 0;
                if (k == t.size()) return false;
                for (std::size_t j = k; j < t.size(); ++j)
                    if (t[j] < '0' || t[j] > '9') return false;
                v = std::stol(t);
                return true;
            };
            long a = 0, b = 0;
            if (number(lo, a) && number(hi, b)) {
                for (long v = a;; v += a <= b ? 1 : -1) {
                    alts.push_back(std::to_string(v));
                    if (v == b || alts.size() >= limit) break;
                }
            } else if (lo.size() == 1 && hi.size() == 1 && std::isalpha(static_cast<unsigned char>(lo[0])) &&
                       std::isalpha(static_cast<unsigned char>(hi[0]))) {
                for (int v = lo[0];; v += lo[0] <= hi[0] ? 1 : -1) {
                    alts.push_back(std::string(1, static_cast<char>(v)));
                    if (v == hi[0] || alts.size() >= limit) break;
                }
            } else {
                continue;
            }
        }
        for (const auto& alt : alts) {
            std::string whole = prefix + alt + suffix;
            std::vector<std::string> more;
            if (brace_expand(whole, more, limit)) {
                for (auto& m : more)
                    if (out.size() < limit) out.push_back(std::move(m));
            } else if (out.size() < limit) {
                out.push_back(std::move(whole));
            }
        }
        return true;
    }
    return false;
}

bool split_on_ifs(const std::string& w, std::vector<std::string>& out) {
    std::string cur;
    bool split = false;
    for (std::size_t k = 0; k < w.size();) {
        std::size_t len = 0;
        // "$IFS" followed by name characters is split too: quote removal
        // joins sudo$IFS'id' into sudo$IFSid, which bash splits at $IFS.
        if (w.compare(k, 4, "$IFS") == 0)
            len = 4;
        else if (w.compare(k, 5, "${IFS") == 0 && k + 5 < w.size() &&
                 (w[k + 5] == '}' || w[k + 5] == ':' || w[k + 5] == '%' || w[k + 5] == '#') &&
                 w.find('}', k) != std::string::npos)
            len = w.find('}', k) - k + 1;
        if (len) {
            if (!cur.empty()) out.push_back(std::move(cur));
            cur.clear();
            split = true;
            k += len;
        } else {
            cur.push_back(w[k++]);
        }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return split;
}

namespace {

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The index after the ')' closing the '(' at k (quotes are gone from the
// text; parentheses are counted), or the end.
std::size_t paren_end(const std::string& w, std::size_t k) {
    int depth = 0;
    for (; k < w.size(); ++k) {
        if (w[k] == '(') ++depth;
        else if (w[k] == ')' && --depth == 0) return k + 1;
    }
    return w.size();
}

// What $(text) prints when it is echo or printf of literal words.
std::optional<std::string> literal_print(const std::string& text) {
    shell::Script s = shell::parse(text);
    if (!s.ok || s.root.children.size() != 1) return std::nullopt;
    const shell::Node* n = &s.root.children[0];
    while ((n->kind == shell::Kind::pipeline || n->kind == shell::Kind::list) && n->children.size() == 1)
        n = &n->children[0];
    if (n->kind != shell::Kind::simple || n->words.empty() || !n->assigns.empty()) return std::nullopt;
    const std::string& name = n->words[0].text;
    if (name != "echo" && name != "printf") return std::nullopt;
    std::string out;
    std::size_t k = 1;
    if (name == "echo")
        while (k < n->words.size() && n->words[k].text.size() > 1 && n->words[k].text[0] == '-' &&
               n->words[k].text.find_first_not_of("neE", 1) == std::string::npos)
            ++k;
    else if (k < n->words.size() && n->words[k].text == "--")
        ++k;
    for (; k < n->words.size(); ++k) {
        if (n->words[k].expanded) return std::nullopt;
        if (!out.empty()) out.push_back(' ');
        out += n->words[k].text;
    }
    return out;
}

void add_unique(std::vector<std::string>& v, std::string s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

// The alternatives for the expansion that starts at w[k] ('$' or '`'); k is
// moved past it. Empty when w[k] starts no expansion.
std::vector<std::string> alternatives(const std::string& w, std::size_t& k, const Values& values, std::size_t limit,
                                      int depth) {
    std::vector<std::string> alts;
    auto named = [&](const std::string& name) {
        alts.emplace_back();
        if (auto it = values.find(name); it != values.end())
            for (const auto& v : it->second) add_unique(alts, v);
    };
    if (w[k] == '`') {
        std::size_t close = w.find('`', k + 1);
        std::size_t stop = close == std::string::npos ? w.size() : close + 1;
        alts.emplace_back();
        if (auto p = literal_print(w.substr(k + 1, (close == std::string::npos ? w.size() : close) - k - 1)))
            add_unique(alts, *p);
        k = stop;
        return alts;
    }
    if (k + 1 >= w.size()) return alts;
    char n = w[k + 1];
    if (n == '(') {
        std::size_t stop = paren_end(w, k + 1);
        alts.emplace_back();
        if (k + 2 < w.size() && w[k + 2] != '(')
            if (auto p = literal_print(w.substr(k + 2, stop - k - 3))) add_unique(alts, *p);
        k = stop;
        return alts;
    }
    if (n == '{') {
        std::size_t close = parameter_end(w, k + 1);
        std::string inner = w.substr(k + 2, close - std::min(close, k + 2));
        k = close < w.size() ? close + 1 : w.size();
        std::size_t j = 0;
        if (j < inner.size() && (inner[j] == '!' || inner[j] == '#')) ++j;
        std::size_t from = j;
        while (j < inner.size() && name_char(inner[j])) ++j;
        if (j == from && j < inner.size()) ++j;  // ${@...}, ${*...}, ${?}
        named(inner.substr(from, j - from));
        if (j < inner.size() && inner[j] == '[') j = std::min(inner.find(']', j), inner.size() - 1) + 1;
        if (j < inner.size() && inner[j] == ':' && j + 1 < inner.size() && std::strchr("-=+?", inner[j + 1])) ++j;
        if (j < inner.size() && std::strchr("-=+?", inner[j]) && depth < 4) {
            std::vector<std::string> sub;
            plausible_readings_at(inner.substr(j + 1), values, sub, limit, depth + 1);
            for (auto& s : sub) add_unique(alts, std::move(s));
        }
        return alts;
    }
    if (is_name_start_char(n)) {
        std::size_t j = k + 1;
        while (j < w.size() && name_char(w[j])) ++j;
        named(w.substr(k + 1, j - k - 1));
        k = j;
        return alts;
    }
    if (std::isdigit(static_cast<unsigned char>(n)) || std::strchr("@*#?-$!", n)) {
        k += 2;
        alts.emplace_back();
        return alts;
    }
    return alts;
}

}  // namespace

void plausible_readings_at(const std::string& w, const Values& values, std::vector<std::string>& out,
                           std::size_t limit, int depth) {
    std::vector<std::string> acc{std::string()};
    for (std::size_t k = 0; k < w.size();) {
        std::size_t at = k;
        std::vector<std::string> alts;
        if (w[k] == '$' || w[k] == '`') alts = alternatives(w, k, values, limit, depth);
        if (alts.empty()) {
            k = at + 1;
            for (auto& r : acc) r.push_back(w[at]);
            continue;
        }
        std::vector<std::string> next;
        for (const auto& r : acc)
            for (const auto& alt : alts)
                if (next.size() < limit) add_unique(next, r + alt);
        acc = std::move(next);
    }
    for (auto& r : acc)
        if (out.size() < limit) add_unique(out, std::move(r));
}

void plausible_readings(const std::string& word, const Values& values, std::vector<std::string>& out,
                        std::size_t limit) {
    plausible_readings_at(word, values, out, limit, 0);
}

}  // namespace cc::classify
