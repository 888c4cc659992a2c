// Request rules for intercepted hosts (request_rules.hpp).

#include "cc/net/request_rules.hpp"

#include <strings.h>

#include <nlohmann/json.hpp>

#include "cc/core/io.hpp"
#include "cc/core/json_reader.hpp"

namespace cc::net {

namespace {

using nlohmann::json;

int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool unreserved(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}

// Dot segments resolved, empty segments dropped; nullopt above the root.
std::optional<std::vector<std::string>> segments(const std::string& path) {
    std::vector<std::string> out;
    std::size_t p = 0;
    while (p <= path.size()) {
        auto q = path.find('/', p);
        if (q == std::string::npos) q = path.size();
        std::string seg = path.substr(p, q - p);
        if (seg == "..") {
            if (out.empty()) return std::nullopt;
            out.pop_back();
        } else if (!seg.empty() && seg != ".") {
            out.push_back(seg);
        }
        p = q + 1;
    }
    return out;
}

std::string join(const std::vector<std::string>& segs) {
    std::string out;
    for (const auto& s : segs) out += "/" + s;
    return out.empty() ? "/" : out;
}

// The target's path read two ways: separators encoded (%2F, %5C) kept
// inside their segment, as most servers route; and decoded to '/', as some
// do. A rule matching either applies. nullopt: not readable at all.
std::optional<std::pair<std::vector<std::string>, std::vector<std::string>>> path_readings(std::string_view target) {
    auto cut = target.find_first_of("?#");
    std::string_view raw = target.substr(0, cut);
    if (raw.empty() || raw[0] != '/') return std::nullopt;
    std::string kept, split;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(raw[i]);
        if (c < 0x20 || c == 0x7f) return std::nullopt;
        if (c == '\\') {
            kept += '\\';
            split += '/';
            continue;
        }
        if (c != '%') {
            kept += static_cast<char>(c);
            split += static_cast<char>(c);
            continue;
        }
        if (i + 2 >= raw.size() || hex(raw[i + 1]) < 0 || hex(raw[i + 2]) < 0) return std::nullopt;
        unsigned char b = static_cast<unsigned char>(hex(raw[i + 1]) * 16 + hex(raw[i + 2]));
        i += 2;
        if (b < 0x20 || b == 0x7f || b == '%') return std::nullopt;
        if (unreserved(b)) {
            kept += static_cast<char>(b);
            split += static_cast<char>(b);
        } else if (b == '/' || b == '\\') {
            kept += b == '/' ? "%2F" : "%5C";
            split += '/';
        } else {
            static const char* digits = "0123456789ABCDEF";
            std::string esc = {'%', digits[b >> 4], digits[b & 15]};
            kept += esc;
            split += esc;
        }
    }
    auto a = segments(kept), b = segments(split);
    if (!a || !b) return std::nullopt;
    return std::pair{*a, *b};
}

bool iequal(std::string_view a, std::string_view b) {
    return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool segs_match(const std::vector<std::string>& pat, std::size_t i, const std::vector<std::string>& path, std::size_t j) {
    if (i == pat.size()) return j == path.size();
    if (pat[i] == "**") {
        for (std::size_t k = j; k <= path.size(); ++k)
            if (segs_match(pat, i + 1, path, k)) return true;
        return false;
    }
    if (j == path.size()) return false;
    if (pat[i] != "*" && !iequal(pat[i], path[j])) return false;
    return segs_match(pat, i + 1, path, j + 1);
}

std::vector<std::string> split_pattern(const std::string& p) {
    std::vector<std::string> out;
    std::size_t i = 1;
    while (i <= p.size()) {
        auto q = p.find('/', i);
        if (q == std::string::npos) q = p.size();
        if (q > i) out.push_back(p.substr(i, q - i));
        i = q + 1;
    }
    return out;
}

bool ident(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

// Does a GraphQL body name one of `fields`? A body that is not a JSON
// GraphQL request (an object, or a batch of objects, each with a string
// "query") counts as naming them.
bool graphql_names(const std::string& body, const std::vector<std::string>& fields) {
    auto j = json::parse(body, nullptr, false);
    std::vector<std::string> queries;
    auto take = [&](const json& o) {
        if (!o.is_object() || !o.contains("query") || !o["query"].is_string()) return false;
        queries.push_back(o["query"].get<std::string>());
        return true;
    };
    if (j.is_object()) {
        if (!take(j)) return true;
    } else if (j.is_array() && !j.empty()) {
        for (const auto& o : j)
            if (!take(o)) return true;
    } else {
        return true;
    }
    for (const auto& q : queries)
        for (const auto& f : fields)
            for (auto p = q.find(f); p != std::string::npos; p = q.find(f, p + 1))
                if ((p == 0 || !ident(q[p - 1])) && (p + f.size() == q.size() || !ident(q[p + f.size()]))) return true;
    return false;
}

bool query_has(const std::string& query, const std::string& param) {
    std::size_t p = 0;
    while (p <= query.size()) {
        auto q = query.find('&', p);
        if (q == std::string::npos) q = query.size();
        if (iequal(std::string_view(query).substr(p, q - p), param)) return true;
        p = q + 1;
    }
    return false;
}

bool head_matches(const RequestRule& r, const std::string& host, const std::string& method,
                  const std::pair<std::vector<std::string>, std::vector<std::string>>& readings, const std::string& query) {
    if (std::find(r.hosts.begin(), r.hosts.end(), host) == r.hosts.end()) return false;
    if (std::find(r.methods.begin(), r.methods.end(), method) == r.methods.end()) return false;
    auto pat = split_pattern(r.path);
    if (!segs_match(pat, 0, readings.first, 0) && !segs_match(pat, 0, readings.second, 0)) return false;
    return r.query.empty() || query_has(query, r.query);
}

std::vector<std::string> strings(const json& j, const std::string& what, std::string& err) {
    std::vector<std::string> out;
    if (!j.is_array()) {
        err = what + " must be an array of strings";
        return out;
    }
    for (const auto& x : j) {
        if (!x.is_string() || x.get<std::string>().empty()) {
            err = what + " must be an array of non-empty strings";
            return {};
        }
        out.push_back(x.get<std::string>());
    }
    return out;
}

// "METHOD host/path?query[ BODY]" -> its parts.
struct Example {
    std::string method, host, target, body;
    bool has_body = false;
};
std::optional<Example> parse_example(const std::string& e) {
    auto sp = e.find(' ');
    if (sp == std::string::npos) return std::nullopt;
    Example x;
    x.method = e.substr(0, sp);
    std::string rest = e.substr(sp + 1);
    auto sp2 = rest.find(' ');
    std::string hp = rest.substr(0, sp2);
    if (sp2 != std::string::npos) {
        x.body = rest.substr(sp2 + 1);
        x.has_body = true;
    }
    auto slash = hp.find('/');
    if (slash == std::string::npos || slash == 0) return std::nullopt;
    x.host = hp.substr(0, slash);
    x.target = hp.substr(slash);
    return x;
}

bool rule_matches(const RequestRule& r, const std::string& host, const std::string& method, const std::string& target,
                  const std::string* body) {
    auto readings = path_readings(target);
    if (!readings) return false;
    if (!head_matches(r, host, method, *readings, query_of(target))) return false;
    if (r.graphql.empty()) return true;
    return !body || graphql_names(*body, r.graphql);
}

}  // namespace

std::optional<std::string> normal_path(std::string_view target) {
    if (target == "*") return std::string("*");
    auto r = path_readings(target);
    if (!r) return std::nullopt;
    return join(r->first);
}

std::string query_of(std::string_view target) {
    auto q = target.find('?');
    if (q == std::string_view::npos) return {};
    std::string_view raw = target.substr(q + 1);
    raw = raw.substr(0, raw.find('#'));
    std::string out;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '%' && i + 2 < raw.size() && hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
            out += static_cast<char>(hex(raw[i + 1]) * 16 + hex(raw[i + 2]));
            i += 2;
        } else {
            out += raw[i];
        }
    }
    return out;
}

bool needs_body(const RequestRules& rr, const std::string& host, const std::string& method, const std::string& target) {
    auto readings = path_readings(target);
    if (!readings) return false;
    for (const auto& r : rr.rules)
        if (!r.graphql.empty() && head_matches(r, host, method, *readings, query_of(target))) return true;
    return false;
}

std::optional<RequestClass> classify_request(const RequestRules& rr, const std::string& host, const std::string& method,
                                             const std::string& target, const std::string* body) {
    for (std::size_t i = 0; i < rr.rules.size(); ++i) {
        const auto& r = rr.rules[i];
        if (rule_matches(r, host, method, target, body))
            return RequestClass{r.action, r.why, rr.source + " rules[" + std::to_string(i) + "]", r.decision};
    }
    return std::nullopt;
}

Result<RequestRules> parse_request_rules(const std::string& text, const std::string& subject) {
    auto j = json::parse(text, nullptr, false);
    if (!j.is_object()) return input_error(subject, "not a JSON object");
    for (const auto& [k, v] : j.items())
        if (k != "version" && k != "rules" && k != "$comment") return input_error(subject, "unknown field '" + k + "'");
    if (!j.contains("version") || j["version"] != 1) return input_error(subject, "version must be 1");
    if (!j.contains("rules") || !j["rules"].is_array()) return input_error(subject, "rules must be an array");
    RequestRules rr;
    rr.source = subject.substr(subject.rfind('/') + 1);
    std::size_t i = 0;
    for (const auto& o : j["rules"]) {
        std::string where = subject + ": rules[" + std::to_string(i++) + "]";
        if (!o.is_object()) return input_error(where, "not an object");
        RequestRule r;
        std::string err;
        for (const auto& [k, v] : o.items()) {
            if (k == "hosts") r.hosts = strings(v, k, err);
            else if (k == "methods") r.methods = strings(v, k, err);
            else if (k == "graphql") r.graphql = strings(v, k, err);
            else if (k == "path" && v.is_string()) r.path = v.get<std::string>();
            else if (k == "query" && v.is_string()) r.query = v.get<std::string>();
            else if (k == "action" && v.is_string()) r.action = v.get<std::string>();
            else if (k == "why" && v.is_string()) r.why = v.get<std::string>();
            else if (k == "decision" && v == "deny") r.decision = policy::Decision::deny;
            else if (k == "examples" && v.is_object()) {
                for (const auto& [ek, ev] : v.items()) {
                    if (ek == "match") r.examples_match = strings(ev, "examples.match", err);
                    else if (ek == "notMatch") r.examples_not_match = strings(ev, "examples.notMatch", err);
                    else err = "unknown field 'examples." + ek + "'";
                }
            } else {
                err = k == "decision" ? "decision can only be \"deny\" (else the policy decides)"
                                      : "unknown or mistyped field '" + k + "'";
            }
            if (!err.empty()) return input_error(where, err);
        }
        if (r.hosts.empty() || r.methods.empty() || r.path.empty() || r.path[0] != '/' || r.action.empty() || r.why.empty())
            return input_error(where, "needs hosts, methods, a path starting with '/', action and why");
        if (!policy::find_class(r.action)) return input_error(where, "unknown action '" + r.action + "'");
        if (r.examples_match.empty()) return input_error(where, "needs examples.match: requests it must match");
        rr.rules.push_back(std::move(r));
    }
    // Every example: those of "match" match their own rule, those of
    // "notMatch" do not.
    for (std::size_t k = 0; k < rr.rules.size(); ++k) {
        const auto& r = rr.rules[k];
        std::string where = subject + ": rules[" + std::to_string(k) + "]";
        for (bool want : {true, false})
            for (const auto& e : want ? r.examples_match : r.examples_not_match) {
                auto x = parse_example(e);
                if (!x) return input_error(where, "example '" + e + "' is not METHOD host/path");
                bool got = rule_matches(r, x->host, x->method, x->target, x->has_body ? &x->body : nullptr);
                if (got != want)
                    return input_error(where, "example '" + e + "' " + (want ? "does not match" : "matches") + " the rule");
            }
    }
    return rr;
}

Result<RequestRules> load_request_rules() {
    std::string path = io::data_dir() + "/egress/requests.json";
    auto text = io::read_input(path);
    if (!text) return text.error();
    return parse_request_rules(*text, path);
}

}  // namespace cc::net
