#include "cc/classify/expansions.hpp"

#include <cctype>
#include <string>
#include <vector>

namespace cc::classify {

namespace {

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
        if (w.compare(k, 4, "$IFS") == 0 &&
            (k + 4 >= w.size() || !(std::isalnum(static_cast<unsigned char>(w[k + 4])) || w[k + 4] == '_')))
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

}  // namespace cc::classify
