#include "cc/policy/policy.hpp"

#include <fnmatch.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

#include <algorithm>
#include <cctype>

#include "cc/core/io.hpp"
#include "cc/core/json_reader.hpp"

namespace cc::policy {

std::string_view to_string(Decision d) {
    switch (d) {
        case Decision::allow: return "allow";
        case Decision::ask: return "ask";
        case Decision::deny: return "deny";
    }
    return "deny";
}

std::optional<Decision> parse_decision(std::string_view s) {
    if (s == "allow") return Decision::allow;
    if (s == "ask") return Decision::ask;
    if (s == "deny") return Decision::deny;
    return std::nullopt;
}

std::string_view to_string(Mode m) {
    switch (m) {
        case Mode::chat: return "chat";
        case Mode::plan: return "plan";
        case Mode::review: return "review";
        case Mode::orchestrate: return "orchestrate";
    }
    return "chat";
}

std::optional<Mode> parse_mode(std::string_view s) {
    if (s == "chat") return Mode::chat;
    if (s == "plan") return Mode::plan;
    if (s == "review") return Mode::review;
    if (s == "orchestrate") return Mode::orchestrate;
    return std::nullopt;
}

const std::vector<ActionClass>& action_classes() {
    using D = Decision;
    // Chat: changes to remote state are asked, the hard-deny families are
    // denied, local work runs. Read-only modes: anything that is not known to
    // only read is denied outright, never asked.
    static const std::vector<ActionClass> classes = {
        {"create_commit", "git commit, merge, rebase, cherry-pick, revert, am", D::allow, D::deny},
        {"push", "git push", D::ask, D::deny},
        {"open_pull_request", "gh pr create", D::ask, D::deny},
        {"publish_review_or_merge", "gh pr merge/review/comment/close", D::ask, D::deny},
        {"write_external_tracker", "gh issue create/edit/comment/close", D::ask, D::deny},
        {"install_package", "package manager installs", D::ask, D::deny},
        {"publish_package", "npm publish, cargo publish, twine upload, gem push", D::ask, D::deny},
        {"network_access", "curl, wget and other network clients", D::allow, D::deny},
        // Requests that send data. Kept apart from network_access so a policy
        // that lets the read-only modes fetch (network_access: allow, which
        // cc-egress reads too) still keeps them from posting or uploading.
        {"network_write", "requests that send data or change remote state (POST, uploads, nc)", D::allow, D::deny},
        {"write_files", "writes, moves or deletes local files", D::allow, D::deny},
        // Local work that no undo brings back (uncommitted changes, stashes,
        // unmerged branches, the remote's commits under a forced push).
        {"destroy_work", "git reset --hard, checkout/restore of paths, clean -f, stash drop/clear, branch -D, push --force, rm -r of the worktree", D::ask, D::deny},
        // The machine's own files and services, short of destroying them:
        // a file under /etc or /usr changed or removed without -r, a home's
        // start-up or credential files, a service stopped or disabled.
        {"change_system", "changes to system files (/etc, /usr, ~/.bashrc, ~/.ssh) and services (systemctl stop/disable/mask)", D::ask, D::deny},
        {"run_code", "runs code whose effect cannot be seen (scripts, make, interpreters)", D::allow, D::deny},
        {"privilege_escalation", "sudo, su, doas, pkexec, setuid chmod", D::deny, D::deny},
        {"destroy_system", "rm -rf /, mkfs, dd to devices, fork bombs, shutdown", D::deny, D::deny},
        {"namespace_escape", "nsenter, unshare, chroot, mount, privileged containers, /proc/sys writes", D::deny, D::deny},
        {"unparsable", "a command line that could not be parsed", D::ask, D::deny},
    };
    return classes;
}

const ActionClass* find_class(std::string_view name) {
    for (const auto& c : action_classes())
        if (c.name == name) return &c;
    return nullptr;
}

namespace {

// The names inside "${...}" in a pattern; an unclosed "${" is a name of its own
// (and so unknown).
std::vector<std::string> placeholders(const std::string& pattern) {
    std::vector<std::string> out;
    for (auto pos = pattern.find("${"); pos != std::string::npos; pos = pattern.find("${", pos + 2)) {
        auto end = pattern.find('}', pos);
        out.push_back(end == std::string::npos ? pattern.substr(pos) : pattern.substr(pos + 2, end - pos - 2));
    }
    return out;
}

// "match": ["git", "push", ["--force", "-f"]]: words or non-empty lists of
// alternatives; "examples": {"match": [...], "notMatch": [...]}.
Status parse_command_rule(json::ObjectReader& r, const std::string& path, Rule& rule) {
    r.optional_value("match", [&](const json::json& m, const std::string& at) -> Status {
        if (!m.is_array() || m.empty()) return input_error(at, "must be a non-empty array");
        for (std::size_t i = 0; i < m.size(); ++i) {
            std::vector<std::string> alts;
            if (m[i].is_string()) {
                alts.push_back(m[i].get<std::string>());
            } else if (m[i].is_array() && !m[i].empty() && i > 0) {
                for (const auto& a : m[i]) {
                    if (!a.is_string()) return input_error(json::join(at, i), "alternatives must be strings");
                    alts.push_back(a.get<std::string>());
                }
            } else {
                return input_error(json::join(at, i), i == 0 ? "the command name must be a string"
                                                             : "must be a string or a non-empty array of strings");
            }
            for (const auto& a : alts)
                if (a.empty()) return input_error(json::join(at, i), "must not be empty");
            rule.match.push_back(std::move(alts));
        }
        return ok();
    });
    r.optional_value("examples", [&](const json::json& e, const std::string& at) -> Status {
        json::ObjectReader er(e, at);
        er.optional("match", rule.examples_match);
        er.optional("notMatch", rule.examples_not_match);
        if (auto err = er.finish()) return *err;
        return ok();
    });
    (void)path;
    return ok();
}

Status parse_rule(const json::json& j, const std::string& path, Rule& rule) {
    json::ObjectReader r(j, path);
    std::string decision;
    std::vector<std::string> modes;
    r.required("action", rule.action);
    r.required("decision", decision);
    r.optional("refs", rule.refs);
    r.optional("kinds", rule.kinds);
    r.optional("paths", rule.paths);
    auto count = [&](const char* key, std::optional<std::uint64_t>& out) {
        r.optional_value(key, [&](const json::json& v, const std::string& at) -> Status {
            if (!v.is_number_unsigned()) return input_error(at, "must be a whole number of at least 0");
            out = v.get<std::uint64_t>();
            return ok();
        });
    };
    count("sizeOver", rule.size_over);
    count("filesOver", rule.files_over);
    r.optional("modes", modes);
    r.optional("reason", rule.reason);
    if (rule.action == "command") {
        if (auto s = parse_command_rule(r, path, rule); !s) return s;
    }
    if (auto e = r.finish()) return *e;
    if (rule.action == "command" && rule.match.empty())
        return input_error(json::join(path, "match"), "a command rule needs a match");
    if (rule.action != "command" && !find_class(rule.action))
        return input_error(json::join(path, "action"), "unknown action '" + rule.action + "'");
    auto d = parse_decision(decision);
    if (!d) return input_error(json::join(path, "decision"),
                               "unknown decision '" + decision + "' (allow, ask or deny)");
    rule.decision = *d;
    for (std::size_t i = 0; i < modes.size(); ++i) {
        auto m = parse_mode(modes[i]);
        if (!m) return input_error(json::join(json::join(path, "modes"), i),
                                   "unknown mode '" + modes[i] + "'");
        rule.modes.push_back(*m);
    }
    if (!rule.refs.empty() && rule.action != "push")
        return input_error(json::join(path, "refs"), "only push rules take refs");
    if (!rule.kinds.empty() && rule.action != "push")
        return input_error(json::join(path, "kinds"), "only push rules take kinds");
    if (rule.has_content() && rule.action != "push")
        return input_error(json::join(path, !rule.paths.empty() ? "paths" : rule.size_over ? "sizeOver" : "filesOver"),
                           "only push rules take content conditions");
    for (std::size_t i = 0; i < rule.paths.size(); ++i)
        if (rule.paths[i].empty()) return input_error(json::join(json::join(path, "paths"), i), "must not be empty");
    if (rule.has_content() && !rule.kinds.empty() &&
        std::all_of(rule.kinds.begin(), rule.kinds.end(), [](const std::string& k) { return k == "delete"; }))
        return input_error(json::join(path, "kinds"), "a delete brings no content for paths, sizeOver or filesOver");
    for (std::size_t i = 0; i < rule.kinds.size(); ++i)
        if (std::find(push_kinds().begin(), push_kinds().end(), rule.kinds[i]) == push_kinds().end())
            return input_error(json::join(json::join(path, "kinds"), i),
                               "unknown kind '" + rule.kinds[i] + "' (create, update, force or delete)");
    for (std::size_t i = 0; i < rule.refs.size(); ++i) {
        if (rule.refs[i].empty())
            return input_error(json::join(json::join(path, "refs"), i), "must not be empty");
        for (const auto& name : placeholders(rule.refs[i])) {
            if (std::find(ref_variables().begin(), ref_variables().end(), name) == ref_variables().end())
                return input_error(json::join(json::join(path, "refs"), i),
                                   "unknown variable '${" + name + "}' (agent, conversation or session)");
        }
    }
    return ok();
}

}  // namespace

Result<Policy> parse(const std::string& text, const std::string& subject) {
    auto doc = json::parse(text, subject);
    if (!doc) return doc.error();
    Policy p;
    json::ObjectReader r(*doc, "");
    r.optional("version", p.version);
    r.optional_value("rules", [&](const json::json& rules, const std::string& path) -> Status {
        if (!rules.is_array()) return input_error(path, "must be an array");
        for (std::size_t i = 0; i < rules.size(); ++i) {
            Rule rule;
            if (auto s = parse_rule(rules[i], json::join(path, i), rule); !s) return s;
            p.rules.push_back(std::move(rule));
        }
        return ok();
    });
    r.accept("$comment");
    if (auto e = r.finish()) {
        Error err = *e;
        err.subject = subject + ": " + err.subject;
        return err;
    }
    if (p.version != 1)
        return input_error(subject + ": version", "unsupported version " + std::to_string(p.version));
    return p;
}

Result<Policy> load(const std::string& path) {
    auto text = io::read_input(path);
    if (!text) return text.error();
    return parse(*text, path == "-" ? "stdin" : "'" + path + "'");
}

std::string operator_policy_path() {
    if (const char* d = std::getenv("CC_CONFIG_DIR"); d && *d) return std::string(d) + "/policy.json";
    return std::string(CC_SYSCONFDIR) + "/cc/policy.json";
}

Result<Policy> load_effective(const std::string& given, const Policy& fallback, std::string* used) {
    if (!given.empty()) {
        if (used) *used = given == "-" ? "stdin" : given;
        return load(given);
    }
    const std::string mine = operator_policy_path();
    struct stat st {};
    if (::lstat(mine.c_str(), &st) == 0 || errno != ENOENT) {
        if (used) *used = mine;
        return load(mine);
    }
    if (used) *used = "built-in";
    return fallback;
}

// Kept equal to share/cc/policy/default.json by a test.
Policy default_policy() {
    static const char* text = R"({"version": 1, "rules": [
    {"action": "push", "refs": ["refs/heads/agent/${conversation}/*"], "modes": ["chat"], "decision": "allow",
     "reason": "the conversation's own namespace"},
    {"action": "push", "refs": ["refs/tags/*"], "kinds": ["update", "force", "delete"],
     "decision": "deny", "reason": "a tag, once pushed, never moves or goes"},
    {"action": "push", "refs": ["main", "master", "release/*"], "kinds": ["force", "delete"],
     "decision": "deny", "reason": "force pushes and deletes of protected refs are not allowed"}]})";
    auto p = parse(text, "built-in policy");
    return p ? *p : Policy{};
}

const std::vector<std::string>& push_kinds() {
    static const std::vector<std::string> k = {"create", "update", "force", "delete"};
    return k;
}

const std::vector<std::string>& ref_variables() {
    static const std::vector<std::string> v = {"agent", "conversation", "session"};
    return v;
}

std::optional<std::string> bad_ref_variable(std::string_view value) {
    if (value.empty()) return std::string("is empty");
    if (value.size() > 64) return std::string("is longer than 64 bytes");
    if (value.front() == '.' || value.front() == '-') return std::string("starts with '.' or '-'");
    for (unsigned char c : value)
        if (!std::isalnum(c) && c != '.' && c != '_' && c != '-')
            return "has '" + std::string(1, static_cast<char>(c)) + "' (letters, digits, '.', '_' and '-' only)";
    if (value.find("..") != std::string_view::npos) return std::string("has '..'");
    if (value.size() >= 5 && value.substr(value.size() - 5) == ".lock") return std::string("ends in .lock");
    return std::nullopt;
}

std::vector<std::string> variables_used(const Policy& policy) {
    std::vector<std::string> out;
    for (const auto& rule : policy.rules)
        for (const auto& pat : rule.refs)
            for (const auto& name : placeholders(pat))
                if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    return out;
}

bool ref_matches(const std::string& pattern, const std::string& ref, const std::map<std::string, std::string>& vars) {
    std::string filled;
    for (std::size_t i = 0; i < pattern.size();) {
        if (pattern.compare(i, 2, "${") == 0) {
            auto end = pattern.find('}', i);
            if (end == std::string::npos) return false;
            auto v = vars.find(pattern.substr(i + 2, end - i - 2));
            // An unset (or unusable) variable matches nothing: never widen a rule.
            if (v == vars.end() || bad_ref_variable(v->second)) return false;
            filled += v->second;
            i = end + 1;
        } else {
            filled.push_back(pattern[i++]);
        }
    }
    std::string full = filled.rfind("refs/", 0) == 0 ? filled : "refs/heads/" + filled;
    return ::fnmatch(full.c_str(), ref.c_str(), 0) == 0;
}

bool path_matches(const std::string& pattern, const std::string& path) {
    if (pattern.find('/') == std::string::npos) {
        auto slash = path.rfind('/');
        std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
        return ::fnmatch(pattern.c_str(), base.c_str(), FNM_CASEFOLD) == 0;
    }
    return ::fnmatch(pattern.c_str(), path.c_str(), FNM_CASEFOLD) == 0;
}

bool path_could_match_below(const std::string& pattern, const std::string& dir) {
    if (pattern.find('/') == std::string::npos) return true;
    // The pattern's literal start, up to its first glob character: a path
    // below dir can match when one of the two begins with the other.
    std::string lit = pattern.substr(0, pattern.find_first_of("*?[\\"));
    std::string below = dir + "/";
    auto lower = [](std::string t) {
        for (auto& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        return t;
    };
    lit = lower(lit);
    below = lower(below);
    return below.compare(0, std::min(lit.size(), below.size()), lit, 0, std::min(lit.size(), below.size())) == 0;
}

bool has_content_rules(const Policy& policy, Mode mode) {
    return std::any_of(policy.rules.begin(), policy.rules.end(), [&](const Rule& r) {
        return r.action == "push" && r.has_content() &&
               (r.modes.empty() || std::find(r.modes.begin(), r.modes.end(), mode) != r.modes.end());
    });
}

namespace {

bool content_matches(const Rule& rule, const PushContent& c) {
    if (!rule.paths.empty()) {
        bool hit = std::any_of(c.paths.begin(), c.paths.end(), [&](const std::string& p) {
            return std::any_of(rule.paths.begin(), rule.paths.end(),
                               [&](const std::string& pat) { return path_matches(pat, p); });
        });
        hit = hit || std::any_of(c.opaque.begin(), c.opaque.end(), [&](const std::string& d) {
            return std::any_of(rule.paths.begin(), rule.paths.end(),
                               [&](const std::string& pat) { return path_could_match_below(pat, d); });
        });
        if (!hit) return false;
    }
    if (rule.size_over && c.largest <= *rule.size_over) return false;
    if (rule.files_over && c.files <= *rule.files_over) return false;
    return true;
}

}  // namespace

bool command_matches(const std::vector<std::vector<std::string>>& pattern, const std::vector<std::string>& argv) {
    if (pattern.empty() || argv.empty()) return false;
    auto is = [](const std::vector<std::string>& alts, const std::string& w) {
        return std::find(alts.begin(), alts.end(), w) != alts.end();
    };
    if (!is(pattern[0], argv[0])) return false;
    std::size_t k = 1;
    for (std::size_t i = 1; i < pattern.size(); ++i) {
        while (k < argv.size() && !is(pattern[i], argv[k])) ++k;
        if (k == argv.size()) return false;
        ++k;
    }
    return true;
}

std::optional<Verdict> decide_command(const Policy& policy, const std::vector<std::string>& argv, Mode mode) {
    for (std::size_t i = 0; i < policy.rules.size(); ++i) {
        const Rule& rule = policy.rules[i];
        if (rule.action != "command") continue;
        if (!rule.modes.empty() && std::find(rule.modes.begin(), rule.modes.end(), mode) == rule.modes.end())
            continue;
        if (!command_matches(rule.match, argv)) continue;
        Verdict v;
        v.decision = rule.decision;
        v.source = "rules[" + std::to_string(i) + "]";
        v.reason = !rule.reason.empty() ? rule.reason
                                        : "'" + argv[0] + "' is " +
                                              (rule.decision == Decision::allow ? "allowed"
                                               : rule.decision == Decision::ask ? "asked"
                                                                                : "denied") +
                                              " by " + v.source;
        return v;
    }
    return std::nullopt;
}

Verdict decide(const Policy& policy, const Question& q, const PushFacts& facts) {
    // A read-only session pushes nothing, whatever the rules say. Decided here
    // and only here, so cc-classify (a "git push" command line) and
    // cc-pushgate (the ref update itself) cannot disagree.
    if (q.action == "push" && is_read_only(q.mode)) {
        Verdict v;
        v.decision = Decision::deny;
        v.source = "mode:" + std::string(to_string(q.mode));
        v.reason = "push is not allowed in " + std::string(to_string(q.mode)) + " mode (read-only)";
        return v;
    }
    for (std::size_t i = 0; i < policy.rules.size(); ++i) {
        const Rule& rule = policy.rules[i];
        if (rule.action != q.action) continue;
        if (!rule.modes.empty() &&
            std::find(rule.modes.begin(), rule.modes.end(), q.mode) == rule.modes.end())
            continue;
        if (!rule.refs.empty()) {
            if (!q.ref) continue;
            bool hit = std::any_of(rule.refs.begin(), rule.refs.end(),
                                   [&](const std::string& p) { return ref_matches(p, *q.ref, facts.vars); });
            if (!hit) continue;
        }
        if (!rule.kinds.empty() &&
            std::find(rule.kinds.begin(), rule.kinds.end(), facts.kind) == rule.kinds.end())
            continue;
        if (rule.has_content() && (!facts.content || facts.kind == "delete" || !content_matches(rule, *facts.content)))
            continue;
        Verdict v;
        v.decision = rule.decision;
        v.source = "rules[" + std::to_string(i) + "]";
        if (!rule.reason.empty())
            v.reason = rule.reason;
        else
            v.reason = q.action + (q.ref ? " to " + *q.ref : std::string()) + " is " +
                       (rule.decision == Decision::allow ? "allowed" : rule.decision == Decision::ask ? "asked" : "denied") +
                       " by " + v.source;
        return v;
    }
    Verdict v;
    v.source = "default:" + std::string(to_string(q.mode));
    const ActionClass* c = find_class(q.action);
    if (!c) {
        // Fail closed: a class nobody declared is never allowed.
        v.decision = Decision::deny;
        v.reason = "unknown action '" + q.action + "'";
        return v;
    }
    v.decision = is_read_only(q.mode) ? c->read_only : c->chat;
    std::string what = q.action + (q.ref ? " to " + *q.ref : std::string());
    switch (v.decision) {
        case Decision::allow: v.reason = what + " is allowed in " + std::string(to_string(q.mode)) + " mode"; break;
        case Decision::ask: v.reason = what + " needs approval in " + std::string(to_string(q.mode)) + " mode"; break;
        case Decision::deny:
            v.reason = what + " is not allowed in " + std::string(to_string(q.mode)) + " mode" +
                       (is_read_only(q.mode) ? " (read-only)" : "");
            break;
    }
    return v;
}

}  // namespace cc::policy
