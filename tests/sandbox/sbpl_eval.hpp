// A small SBPL reader and evaluator for the tests: it parses a generated
// Seatbelt profile the way sandbox-exec's Scheme reader does (lists,
// symbols, "strings" with \" \\ \n \t \r escapes, #"raw" strings, ; comments)
// and answers "is this operation allowed?" with Seatbelt's documented rule
// semantics: the last rule whose operation and filters match decides;
// (deny default) applies when nothing else does; an operation ending in '*'
// covers every operation it prefixes; filters at the top of a rule are
// alternatives; require-all, require-any and require-not combine them;
// literal, subpath and regex match the path the kernel reports.
//
// Anything it does not know (an operation, a filter, a bad escape, an
// unbalanced parenthesis) throws, so a typo in the generator fails a test
// instead of silently matching nothing.
#pragma once

#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "cc/sandbox/paths.hpp"

namespace sbpl {

struct Node {
    bool list = false;
    bool string = false;  // a string literal (as opposed to a symbol)
    std::string atom;
    std::vector<Node> kids;
};

class Reader {
public:
    explicit Reader(const std::string& text) : s_(text) {}

    std::vector<Node> all() {
        std::vector<Node> out;
        for (skip(); i_ < s_.size(); skip()) out.push_back(read());
        return out;
    }

private:
    const std::string& s_;
    std::size_t i_ = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error("sbpl: " + what + " at offset " + std::to_string(i_));
    }
    void skip() {
        while (i_ < s_.size()) {
            char c = s_[i_];
            if (c == ';') {
                while (i_ < s_.size() && s_[i_] != '\n') ++i_;
            } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
                ++i_;
            } else {
                break;
            }
        }
    }
    Node read() {
        char c = s_[i_];
        if (c == ')') fail("unbalanced ')'");
        if (c == '(') {
            ++i_;
            Node n;
            n.list = true;
            for (skip(); i_ < s_.size() && s_[i_] != ')'; skip()) n.kids.push_back(read());
            if (i_ >= s_.size()) fail("unclosed '('");
            ++i_;
            return n;
        }
        if (c == '"') return str();
        if (c == '#' && i_ + 1 < s_.size() && s_[i_ + 1] == '"') {  // #"raw": no escapes
            i_ += 2;
            Node n;
            n.string = true;
            while (i_ < s_.size() && s_[i_] != '"') n.atom += s_[i_++];
            if (i_ >= s_.size()) fail("unclosed #\"");
            ++i_;
            return n;
        }
        Node n;
        while (i_ < s_.size() && std::string(" \n\t\r()\";").find(s_[i_]) == std::string::npos) n.atom += s_[i_++];
        if (n.atom.empty()) fail("empty symbol");
        return n;
    }
    Node str() {
        ++i_;
        Node n;
        n.string = true;
        while (true) {
            if (i_ >= s_.size()) fail("unclosed string");
            char c = s_[i_++];
            if (c == '"') break;
            if (c != '\\') {
                n.atom += c;
                continue;
            }
            if (i_ >= s_.size()) fail("unclosed string");
            char e = s_[i_++];
            switch (e) {
                case '"': n.atom += '"'; break;
                case '\\': n.atom += '\\'; break;
                case 'n': n.atom += '\n'; break;
                case 't': n.atom += '\t'; break;
                case 'r': n.atom += '\r'; break;
                default: fail(std::string("unknown escape \\") + e);
            }
        }
        return n;
    }
};

// What is asked. Only the fields the operation uses are set.
struct Query {
    std::string op;           // a concrete operation: file-read-data, file-write-create, mach-lookup, ...
    std::string path;         // file operations, process-exec
    std::string name;         // mach-lookup global name, sysctl name
    std::string remote;       // network: "127.0.0.1:3128", "1.1.1.1:443"
    std::string unix_socket;  // network to a Unix socket path
    std::string target = "same-sandbox";  // signal, process-info*: "same-sandbox" or "other"
};

inline Query at(std::string op, std::string path) {
    Query q;
    q.op = std::move(op);
    q.path = std::move(path);
    return q;
}

struct Rule {
    bool allow = false;
    std::vector<std::string> ops;
    std::vector<Node> filters;
    std::string message;  // (with message "...")
    std::size_t index = 0;
};

struct Decision {
    bool allow = false;
    const Rule* rule = nullptr;  // never null once a profile has (deny default)
};

// Each pattern compiled once: std::regex construction dominates otherwise.
inline const std::regex& compiled(const std::string& pattern) {
    static std::unordered_map<std::string, std::regex> cache;
    auto it = cache.find(pattern);
    if (it == cache.end()) it = cache.emplace(pattern, std::regex(pattern, std::regex::ECMAScript | std::regex::optimize)).first;
    return it->second;
}

inline const std::set<std::string>& known_ops() {
    static const std::set<std::string> ops = {
        "default", "file*", "file-read*", "file-read-data", "file-read-metadata", "file-read-xattr", "file-write*",
        "file-write-data", "file-write-create", "file-write-unlink", "file-write-mode", "file-ioctl",
        "file-test-existence", "file-map-executable", "process-fork", "process-exec", "signal", "process-info*",
        "mach-priv-task-port", "user-preference-read", "ipc-posix-sem", "ipc-posix-shm", "pseudo-tty", "iokit-open",
        "sysctl-read", "sysctl-write", "mach-lookup", "network*", "network-outbound", "network-inbound", "network-bind",
        "system-socket"};
    return ops;
}

class Profile {
public:
    explicit Profile(const std::string& text) {
        for (auto& form : Reader(text).all()) {
            if (!form.list || form.kids.empty() || form.kids[0].list) throw std::runtime_error("sbpl: top-level form is not a rule");
            const std::string& head = form.kids[0].atom;
            if (head == "version") {
                version = form.kids.size() == 2 ? form.kids[1].atom : "";
                continue;
            }
            if (head != "allow" && head != "deny") throw std::runtime_error("sbpl: unknown form '" + head + "'");
            Rule r;
            r.allow = head == "allow";
            r.index = rules.size();
            for (std::size_t k = 1; k < form.kids.size(); ++k) {
                Node& n = form.kids[k];
                if (!n.list) {
                    if (n.string || !known_ops().count(n.atom)) throw std::runtime_error("sbpl: unknown operation '" + n.atom + "'");
                    if (!r.filters.empty()) throw std::runtime_error("sbpl: operation after a filter");
                    r.ops.push_back(n.atom);
                } else if (!n.kids.empty() && n.kids[0].atom == "with") {
                    if (n.kids.size() != 3 || n.kids[1].atom != "message" || !n.kids[2].string)
                        throw std::runtime_error("sbpl: bad (with ...) modifier");
                    r.message = n.kids[2].atom;
                } else {
                    check_filter(n);
                    r.filters.push_back(std::move(n));
                }
            }
            if (r.ops.empty()) throw std::runtime_error("sbpl: a rule without an operation");
            rules.push_back(std::move(r));
        }
    }

    std::string version;
    std::vector<Rule> rules;

    static bool op_covers(const std::string& rule_op, const std::string& q) {
        if (rule_op == "default") return true;
        if (!rule_op.empty() && rule_op.back() == '*') return q.compare(0, rule_op.size() - 1, rule_op, 0, rule_op.size() - 1) == 0;
        return rule_op == q;
    }

    static bool filter_matches(const Node& f, const Query& q) {
        const std::string& k = f.kids[0].atom;
        auto arg = [&]() -> const std::string& { return f.kids[1].atom; };
        if (k == "require-all") {
            for (std::size_t i = 1; i < f.kids.size(); ++i)
                if (!filter_matches(f.kids[i], q)) return false;
            return true;
        }
        if (k == "require-any") {
            for (std::size_t i = 1; i < f.kids.size(); ++i)
                if (filter_matches(f.kids[i], q)) return true;
            return false;
        }
        if (k == "require-not") return !filter_matches(f.kids[1], q);
        if (k == "literal" || k == "path") return !q.path.empty() && q.path == arg();
        if (k == "subpath") return !q.path.empty() && cc::sandbox::is_within(q.path, arg());
        if (k == "regex") return !q.path.empty() && std::regex_search(q.path, compiled(arg()));
        if (k == "global-name") return q.op == "mach-lookup" && q.name == arg();
        if (k == "sysctl-name") return q.op.rfind("sysctl", 0) == 0 && q.name == arg();
        if (k == "sysctl-name-prefix") return q.op.rfind("sysctl", 0) == 0 && q.name.rfind(arg(), 0) == 0;
        if (k == "iokit-registry-entry-class") return q.op == "iokit-open" && q.name == arg();
        if (k == "target") return q.target == arg();
        if (k == "remote") {
            if (f.kids[1].atom == "ip") {
                if (q.remote.empty()) return false;
                const std::string& want = f.kids[2].atom;
                auto c = want.rfind(':');
                std::string host = want.substr(0, c), port = want.substr(c + 1);
                auto qc = q.remote.rfind(':');
                std::string qhost = q.remote.substr(0, qc), qport = q.remote.substr(qc + 1);
                bool host_ok = host == "*" || (host == "localhost" && (qhost == "127.0.0.1" || qhost == "::1" || qhost == "localhost"));
                return host_ok && (port == "*" || port == qport);
            }
            // (remote unix-socket (path-literal "..."))
            return !q.unix_socket.empty() && q.unix_socket == f.kids[2].kids[1].atom;
        }
        throw std::runtime_error("sbpl: unknown filter '" + k + "'");
    }

    Decision decide(const Query& q) const {
        Decision d;
        for (const auto& r : rules) {
            bool op = false;
            for (const auto& o : r.ops) op = op || op_covers(o, q.op);
            if (!op) continue;
            bool match = r.filters.empty();
            for (const auto& f : r.filters) match = match || filter_matches(f, q);
            if (match) d = {r.allow, &r};
        }
        if (!d.rule) throw std::runtime_error("sbpl: no rule decides " + q.op + " (no (deny default)?)");
        return d;
    }

private:
    static void check_filter(const Node& f) {
        static const std::set<std::string> one_string = {"literal", "path", "subpath", "regex", "global-name",
                                                         "sysctl-name", "sysctl-name-prefix", "iokit-registry-entry-class"};
        if (!f.list || f.kids.empty() || f.kids[0].list) throw std::runtime_error("sbpl: malformed filter");
        const std::string& k = f.kids[0].atom;
        if (one_string.count(k)) {
            if (f.kids.size() != 2 || !f.kids[1].string) throw std::runtime_error("sbpl: (" + k + ") takes one string");
            if (k == "regex") (void)compiled(f.kids[1].atom);  // throws on a bad regex
            return;
        }
        if (k == "require-all" || k == "require-any" || k == "require-not") {
            if (f.kids.size() < 2 || (k == "require-not" && f.kids.size() != 2)) throw std::runtime_error("sbpl: bad " + k);
            for (std::size_t i = 1; i < f.kids.size(); ++i) check_filter(f.kids[i]);
            return;
        }
        if (k == "target") {
            if (f.kids.size() != 2 || f.kids[1].string) throw std::runtime_error("sbpl: bad (target)");
            return;
        }
        if (k == "remote") {
            if (f.kids.size() == 3 && f.kids[1].atom == "ip" && f.kids[2].string) {
                const std::string& a = f.kids[2].atom;
                auto c = a.rfind(':');
                if (c == std::string::npos || c + 1 == a.size()) throw std::runtime_error("sbpl: (remote ip) needs host:port");
                return;
            }
            if (f.kids.size() == 3 && f.kids[1].atom == "unix-socket" && f.kids[2].list && f.kids[2].kids.size() == 2 &&
                f.kids[2].kids[0].atom == "path-literal" && f.kids[2].kids[1].string)
                return;
            throw std::runtime_error("sbpl: bad (remote ...)");
        }
        throw std::runtime_error("sbpl: unknown filter '" + k + "'");
    }
};

}  // namespace sbpl
