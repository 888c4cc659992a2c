// Step 1 of classification: simple commands -> action classes. Static
// analysis sees the usual spelling of an action, through wrappers, nested
// shell strings and tool options; it cannot see what a script file, a variable
// or a remote API does, and says so (`run_code`) rather than guessing "safe".
#include <algorithm>
#include <cctype>
#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "cc/classify/classify.hpp"
#include "cc/classify/expansions.hpp"
#include "cc/shell/parser.hpp"

namespace cc::classify {

namespace {

using shell::Kind;
using shell::Node;
using shell::Word;
using sv = std::string_view;

constexpr sv kCommit = "create_commit", kPush = "push", kOpenPr = "open_pull_request",
             kReview = "publish_review_or_merge", kTracker = "write_external_tracker", kInstall = "install_package",
             kPublish = "publish_package", kNet = "network_access", kNetWrite = "network_write",
             kWrite = "write_files", kRun = "run_code", kPriv = "privilege_escalation", kDestroy = "destroy_system",
             kEscape = "namespace_escape", kUnparsable = "unparsable";

struct Arg {
    std::string text;
    bool dynamic = false;
};
using Args = std::vector<Arg>;

// Name tables are sorted at compile time: a look-up is a binary search, and
// nothing is built or allocated when the program starts (cc-classify runs
// once per agent command, so its start-up is part of every answer).
template <std::size_t N>
constexpr std::array<sv, N> sorted_names(const sv (&names)[N]) {
    std::array<sv, N> t{};
    std::copy(std::begin(names), std::end(names), t.begin());
    std::sort(t.begin(), t.end());
    return t;
}

template <std::size_t N>
constexpr bool contains(const std::array<sv, N>& t, sv name) {
    return std::binary_search(t.begin(), t.end(), name);
}

template <typename V>
struct Named {
    sv name;
    V value{};
};

// fill(set) calls set({"name", ...}, value) for each group; Fill is a
// captureless lambda, called once to count and once to fill.
template <typename V, typename Fill>
constexpr auto make_table(Fill fill) {
    constexpr std::size_t n = [] {
        std::size_t i = 0;
        Fill{}([&](std::initializer_list<sv> names, const V&) { i += names.size(); });
        return i;
    }();
    std::array<Named<V>, n> t{};
    std::size_t i = 0;
    fill([&](std::initializer_list<sv> names, const V& v) {
        for (sv name : names) t[i++] = {name, v};
    });
    std::sort(t.begin(), t.end(), [](const Named<V>& a, const Named<V>& b) { return a.name < b.name; });
    return t;
}

// A name listed twice must mean the same thing.
template <typename V, std::size_t N>
constexpr bool consistent(const std::array<Named<V>, N>& t) {
    for (std::size_t i = 1; i < N; ++i)
        if (t[i].name == t[i - 1].name && !(t[i].value == t[i - 1].value)) return false;
    return true;
}

template <typename V, std::size_t N>
constexpr const V* lookup(const std::array<Named<V>, N>& t, sv name) {
    auto it = std::lower_bound(t.begin(), t.end(), name, [](const Named<V>& e, sv k) { return e.name < k; });
    return it != t.end() && it->name == name ? &it->value : nullptr;
}

bool starts_with(sv s, sv p) { return s.substr(0, p.size()) == p; }
bool is_opt(const Arg& a) { return a.text.size() > 1 && a.text[0] == '-'; }
sv basename(sv s) {
    auto k = s.rfind('/');
    return k == sv::npos ? s : s.substr(k + 1);
}

bool is_assignment_text(sv t) {
    if (t.empty() || !(std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_')) return false;
    std::size_t k = 1;
    while (k < t.size() && (std::isalnum(static_cast<unsigned char>(t[k])) || t[k] == '_')) ++k;
    return k < t.size() && t[k] == '=';
}

// Where does an option list end? Returns the index of the first positional at
// or after `from` ("--" is consumed). `sv_opts` are short options taking a
// value, `lv_opts` long ones (`--x v`; `--x=v` needs no listing).
std::size_t skip_opts(const Args& a, std::size_t from, sv sv_opts, std::initializer_list<sv> lv_opts) {
    std::size_t k = from;
    while (k < a.size()) {
        const std::string& t = a[k].text;
        if (t == "--") return k + 1;
        if (!is_opt(a[k])) return k;
        if (starts_with(t, "--")) {
            bool takes = t.find('=') == std::string::npos &&
                         std::find(lv_opts.begin(), lv_opts.end(), sv(t)) != lv_opts.end();
            k += takes ? 2 : 1;
            continue;
        }
        std::size_t next = k + 1;
        for (std::size_t j = 1; j < t.size(); ++j)
            if (sv_opts.find(t[j]) != sv::npos) {
                if (j + 1 == t.size()) next = k + 2;
                break;
            }
        k = next;
    }
    return std::min(k, a.size());
}

// Is a short flag (in any cluster) or one of the long spellings present
// before the first positional?
bool has_flag(const Args& a, std::size_t from, std::size_t to, char short_flag, std::initializer_list<sv> longs) {
    for (std::size_t k = from; k < to && k < a.size(); ++k) {
        const std::string& t = a[k].text;
        if (t == "--") break;
        if (!is_opt(a[k])) continue;
        if (starts_with(t, "--")) {
            sv name = sv(t).substr(0, t.find('='));
            if (std::find(longs.begin(), longs.end(), name) != longs.end()) return true;
        } else if (short_flag && t.find(short_flag, 1) != std::string::npos) {
            return true;
        }
    }
    return false;
}

// The value of an option: "-o x", "-ox", "--output x", "--output=x".
std::optional<std::string> opt_value(const Args& a, std::size_t from, char short_opt, std::initializer_list<sv> longs,
                                     sv short_value_opts = "") {
    for (std::size_t k = from; k < a.size(); ++k) {
        const std::string& t = a[k].text;
        if (t == "--") break;
        if (!is_opt(a[k])) continue;
        if (starts_with(t, "--")) {
            auto eq = t.find('=');
            sv name = sv(t).substr(0, eq);
            if (std::find(longs.begin(), longs.end(), name) != longs.end()) {
                if (eq != std::string::npos) return t.substr(eq + 1);
                if (k + 1 < a.size()) return a[k + 1].text;
            }
            continue;
        }
        for (std::size_t j = 1; j < t.size(); ++j) {
            if (t[j] == short_opt) {
                if (j + 1 < t.size()) return t.substr(j + 1);
                if (k + 1 < a.size()) return a[k + 1].text;
                return std::nullopt;
            }
            if (short_value_opts.find(t[j]) != sv::npos) break;  // the rest is that option's value
        }
    }
    return std::nullopt;
}

std::vector<std::size_t> positionals(const Args& a, std::size_t from, sv sv_opts, std::initializer_list<sv> lv_opts) {
    std::vector<std::size_t> out;
    std::size_t k = from;
    while (k < a.size()) {
        std::size_t p = skip_opts(a, k, sv_opts, lv_opts);
        if (p > 0 && a[p - 1].text == "--" && p - 1 >= k) {
            for (std::size_t j = p; j < a.size(); ++j) out.push_back(j);
            return out;
        }
        if (p >= a.size()) break;
        out.push_back(p);
        k = p + 1;
    }
    return out;
}

// --- paths that matter ------------------------------------------------------

std::string normalize_path(std::string p) {
    std::string out;
    for (char c : p)
        if (!(c == '/' && !out.empty() && out.back() == '/')) out.push_back(c);
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    if (out.size() > 2 && out.substr(out.size() - 2) == "/.") out.resize(out.size() - 2);
    return out.empty() ? p : out;
}

// rm -r of these takes the system (or the home directory) with it.
bool is_precious(const std::string& raw) {
    std::string p = normalize_path(raw);
    if (p.empty()) return false;
    for (sv suffix : {"/*", "/.*"})
        if (p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0) {
            p.resize(p.size() - suffix.size());
            if (p.empty()) p = "/";
        }
    if (p == "/" || p == "/." || p == "/.." || p == "*" ) return p != "*";
    if (p == "~" || p == "$HOME" || p == "${HOME}" || p == "~/" || (p.size() > 1 && p[0] == '~' && p.find('/') == std::string::npos))
        return true;  // ~, ~user
    static constexpr auto top = sorted_names({"/bin",  "/boot", "/dev", "/etc",  "/home", "/lib", "/lib32",
                                               "/lib64", "/opt", "/proc", "/root", "/run", "/sbin", "/srv",
                                               "/sys",  "/usr", "/var", "/snap", "/usr/bin", "/usr/lib",
                                               "/usr/local", "/var/lib", "/Users", "/System", "/Library"});
    return contains(top, p);
}

// Environment variables that make an ordinary command load or run other code
// (a loader, a shell's start-up file, a pager, a diff or ssh program, the
// search path): set on any command, or exported, it is run_code.
bool runs_code_variable(sv assignment) {
    sv name = assignment.substr(0, assignment.find_first_of("+=["));
    if (starts_with(name, "LD_") || starts_with(name, "DYLD_")) return true;
    static constexpr auto names = sorted_names({
        "BASH_ENV", "BROWSER", "EDITOR", "ENV", "GCONV_PATH", "GIT_ASKPASS", "GIT_CONFIG_COUNT",
        "GIT_CONFIG_GLOBAL", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_SYSTEM", "GIT_DIR", "GIT_EDITOR",
        "GIT_EXEC_PATH", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_PROXY_COMMAND", "GIT_SEQUENCE_EDITOR",
        "GIT_SSH", "GIT_SSH_COMMAND", "GIT_TEMPLATE_DIR", "LESSCLOSE", "LESSOPEN", "MANOPT", "MANPAGER",
        "NODE_OPTIONS", "NODE_PATH", "PAGER", "PATH", "PERL5LIB", "PERL5OPT", "PROMPT_COMMAND", "PS4",
        "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "RUBYLIB", "RUBYOPT", "SHELLOPTS", "BASHOPTS",
        "SSH_ASKPASS", "SUDO_ASKPASS", "VISUAL"});
    return contains(names, name);
}

// A chmod-style mode that sets setuid or setgid: 4755, 2755, u+s, g=s, +s.
bool setuid_mode(const std::string& m) {
    if (!m.empty() && std::all_of(m.begin(), m.end(), [](char ch) { return ch >= '0' && ch <= '7'; }))
        return m.size() >= 4 && ((m[m.size() - 4] - '0') & 6) != 0;
    for (std::size_t k = 0; k < m.size(); ++k)
        if ((m[k] == '+' || m[k] == '=') && m.find('s', k) != std::string::npos) return true;
    return false;
}

bool is_block_device(sv p) {
    if (!starts_with(p, "/dev/")) return false;
    sv d = p.substr(5);
    for (sv pre : {"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "mapper/", "dm-", "loop", "md", "disk/", "nbd", "sr",
                   "zd", "rbd", "mem", "kmem", "port"})
        if (starts_with(d, pre)) return true;
    return false;
}

bool is_kernel_knob(sv p) {
    return starts_with(p, "/proc/sys/") || p == "/proc/sys" || starts_with(p, "/sys/") || p == "/sys" ||
           (starts_with(p, "/proc/") && (p.find("/mem") != sv::npos || p.find("/attr/") != sv::npos));
}

bool is_harmless_sink(sv p) {
    return p == "/dev/null" || p == "/dev/stdout" || p == "/dev/stderr" || p == "/dev/tty" || p == "-" ||
           starts_with(p, "/dev/fd/") || p == "/dev/zero";
}

// --- the analyzer ------------------------------------------------------------

std::unordered_set<std::string> function_names(const Node& root) {
    std::unordered_set<std::string> names;
    shell::walk(root, [&](const Node& n) {
        // bash defines no function whose name was quoted, escaped or
        // expanded in the source ("not a valid identifier"): a later call of
        // that name runs the command, not a body.
        if (n.kind == Kind::function && !n.words.empty() && !n.words[0].quoted && !n.words[0].expanded)
            names.insert(n.words[0].text);
    });
    return names;
}

struct Ctx {
    std::optional<std::string> stdin_script;  // literal here-doc / here-string fed to the command
};

class Analyzer {
public:
    std::vector<Finding> out;
    // Names of functions defined anywhere in the line: calling one runs its
    // body, which is judged where it is defined.
    const std::unordered_set<std::string>* functions = nullptr;

    void node(const Node& n, int depth) {
        switch (n.kind) {
            case Kind::simple: simple(n, depth); return;
            case Kind::pipeline: pipeline(n, depth); return;
            case Kind::function: function(n, depth); break;
            default: break;
        }
        if (n.kind != Kind::simple && !n.redirects.empty()) {
            Finding f;
            f.offset = n.offset;
            f.argv.push_back(std::string(shell::to_string(n.kind)));
            for (const auto& r : n.redirects) redirect(r, f);
            if (!f.classes.empty()) push(std::move(f));
        }
        words(n.words, depth);
        for (const auto& r : n.redirects) subs_of_redirect(r, depth);
        if (n.kind != Kind::function)
            for (const auto& c : n.children) node(c, depth);
    }

private:
    struct Call {
        const Args& a;
        std::size_t k;  // index of the command name in a
        Finding& f;
        const Ctx& ctx;
        int depth;
        std::size_t args_from() const { return k + 1; }
        sv name() const { return basename(a[k].text); }
    };
    using Handler = void (Analyzer::*)(Call&);

    void push(Finding f) {
        std::sort(f.classes.begin(), f.classes.end());
        f.classes.erase(std::unique(f.classes.begin(), f.classes.end()), f.classes.end());
        out.push_back(std::move(f));
    }

    static void add(Finding& f, sv cls, std::string note) {
        f.classes.emplace_back(cls);
        f.notes.push_back(std::move(note));
    }

    void words(const std::vector<Word>& ws, int depth) {
        for (const auto& w : ws)
            for (const auto& s : w.subs) node(s, depth);
    }
    void subs_of_redirect(const shell::Redirect& r, int depth) {
        for (const auto& s : r.target.subs) node(s, depth);
        for (const auto& s : r.body_subs) node(s, depth);
    }

    // A write to `path` by redirection, tee, cp, dd of=...
    static void write_target(Finding& f, const std::string& path, bool dynamic, sv via) {
        if (!dynamic && is_harmless_sink(path)) return;
        if (!dynamic && is_block_device(path)) {
            add(f, kDestroy, std::string(via) + " writes to the device '" + path + "'");
        } else if (!dynamic && is_kernel_knob(path)) {
            add(f, kEscape, std::string(via) + " writes to the kernel interface '" + path + "'");
        } else if (!dynamic && path == "/proc/sysrq-trigger") {
            add(f, kDestroy, std::string(via) + " writes to '/proc/sysrq-trigger'");
        } else {
            add(f, kWrite, std::string(via) + " writes to '" + path + "'");
        }
    }

    static void redirect(const shell::Redirect& r, Finding& f) {
        const std::string& op = r.op;
        bool out = op == ">" || op == ">>" || op == ">|" || op == "<>" || op == "&>" || op == "&>>";
        if (op == ">&" || op == "<&") {
            // >&2, 2>&1, >&- duplicate descriptors; `>& file` writes a file.
            const std::string& t = r.target.text;
            bool fd = !t.empty() && (t == "-" || std::all_of(t.begin(), t.end(), [](char c) {
                          return (c >= '0' && c <= '9') || c == '-';
                      }));
            out = op == ">&" && !fd && !r.target.expanded;
        }
        if (!out) return;
        write_target(f, r.target.text, r.target.expanded, "redirection");
    }

    // `echo 'git push' | sh`, `cat <<EOF | bash`: a shell reading a literal
    // script from the previous command in the pipeline runs that script.
    void pipeline(const Node& n, int depth) {
        for (std::size_t i = 0; i < n.children.size(); ++i) {
            if (i > 0) piped_script_ = literal_output(n.children[i - 1]);
            node(n.children[i], depth);
            piped_script_.reset();
        }
    }

    static std::optional<std::string> literal_output(const Node& n) {
        if (n.kind != Kind::simple || n.words.empty()) return std::nullopt;
        sv name = basename(n.words[0].text);
        if (name == "cat" && n.words.size() == 1) {
            for (const auto& r : n.redirects) {
                if (r.op == "<<" || r.op == "<<-") return r.body;
                if (r.op == "<<<" && !r.target.expanded) return r.target.text;
            }
            return std::nullopt;
        }
        if (name == "echo" || name == "printf") {
            std::string s;
            for (std::size_t k = 1; k < n.words.size(); ++k) {
                if (n.words[k].expanded) return std::nullopt;
                if (k == 1 && name == "echo" && n.words[k].text.size() > 1 && n.words[k].text[0] == '-') continue;
                if (!s.empty()) s += ' ';
                s += n.words[k].text;
            }
            return s;
        }
        return std::nullopt;
    }

    std::optional<std::string> piped_script_;

    void function(const Node& n, int depth) {
        // A function that calls itself in a pipeline or more than once: a fork bomb.
        if (n.words.empty() || n.children.empty()) return;
        const std::string& name = n.words[0].text;
        int calls = 0;
        bool piped = false;
        shell::walk(n.children[0], [&](const Node& x) {
            if (x.kind == Kind::pipeline && x.children.size() > 1)
                for (const auto& c : x.children)
                    if (c.kind == Kind::simple && !c.words.empty() && c.words[0].text == name) piped = true;
            if (x.kind == Kind::simple && !x.words.empty() && x.words[0].text == name) ++calls;
        });
        if (piped || calls > 1) {
            Finding f;
            f.offset = n.offset;
            f.argv = {name + "()"};
            add(f, kDestroy, "fork bomb: '" + name + "' calls itself in a pipeline or more than once");
            push(std::move(f));
        }
        for (const auto& c : n.children) node(c, depth);
    }

    void simple(const Node& n, int depth) {
        Finding f;
        f.offset = n.offset;
        Args a;
        for (const auto& w : n.words) {
            a.push_back({w.text, w.expanded});
            f.argv.push_back(w.text);
        }
        Ctx ctx;
        ctx.stdin_script = std::move(piped_script_);
        piped_script_.reset();
        for (const auto& w : n.assigns)
            if (runs_code_variable(w.text))
                add(f, kRun, "'" + w.text.substr(0, w.text.find('=')) + "' set here makes commands run other code");
        for (const auto& r : n.redirects) {
            redirect(r, f);
            if ((r.op == "<<" || r.op == "<<-")) ctx.stdin_script = r.body;
            else if (r.op == "<<<" && !r.target.expanded) ctx.stdin_script = r.target.text;
        }
        if (!a.empty()) command(a, 0, f, ctx, depth);
        // The words bash produces from these by brace expansion and word
        // splitting on $IFS are judged too (the stricter reading wins: a
        // word with quoted braces is not expanded by bash, which the text
        // alone cannot tell).
        if (Args b; expanded_reading(n.words, b)) {
            std::string shown;
            for (const auto& x : b) shown += (shown.empty() ? "" : " ") + x.text;
            std::size_t before = f.notes.size();
            command(b, 0, f, ctx, depth);
            for (std::size_t k = before; k < f.notes.size(); ++k) f.notes[k] += " (as bash expands it: '" + shown + "')";
        }
        if (!a.empty() || !f.classes.empty()) push(std::move(f));
        words(n.assigns, depth);
        words(n.words, depth);
        for (const auto& r : n.redirects) subs_of_redirect(r, depth);
    }

    static bool expanded_reading(const std::vector<Word>& ws, Args& out) {
        constexpr std::size_t limit = 64;
        // Most commands have nothing to expand: look before building anything.
        bool any = false;
        for (const auto& w : ws)
            if ((w.text.find('{') != std::string::npos && w.text.find_first_of(",.") != std::string::npos) ||
                (w.expanded && w.text.find("IFS") != std::string::npos))
                any = true;
        if (!any) return false;
        bool changed = false;
        for (const auto& w : ws) {
            std::vector<std::string> parts;
            bool braces = w.text.find('{') != std::string::npos && brace_expand(w.text, parts, limit);
            if (!braces) parts = {w.text};
            std::vector<std::string> split;
            bool ifs = false;
            if (w.expanded) {
                for (const auto& p : parts) ifs = split_on_ifs(p, split) || ifs;
                if (ifs) parts = std::move(split);
            }
            changed = changed || braces || ifs;
            for (auto& p : parts) {
                bool dynamic = w.expanded && (p.find('$') != std::string::npos || p.find('`') != std::string::npos);
                out.push_back({std::move(p), dynamic});
            }
        }
        return changed;
    }

    // Parse and judge a shell string that a command runs (bash -c, eval, ...).
    void reparse(const std::string& text, Finding& f, sv via, int depth) {
        if (depth >= max_reparse_depth) {
            add(f, kUnparsable, std::string(via) + " nests shell strings deeper than " +
                                    std::to_string(max_reparse_depth) + " levels");
            return;
        }
        shell::Script s = shell::parse(text);
        if (!s.ok) add(f, kUnparsable, std::string(via) + " string does not parse: " + s.error.message);
        Analyzer inner;
        std::unordered_set<std::string> names = function_names(s.root);
        if (functions) names.insert(functions->begin(), functions->end());
        inner.functions = &names;
        inner.node(s.root, depth + 1);
        for (auto& g : inner.out) {
            g.offset = f.offset;
            out.push_back(std::move(g));
        }
    }

    // Wrappers recurse (`nice nice ... git push`): bounded, so a long line of
    // them cannot exhaust the stack.
    int wrappers_ = 0;
    static constexpr int max_wrappers = 64;

    void command(const Args& a, std::size_t k, Finding& f, const Ctx& ctx, int depth) {
        struct Count {
            int& n;
            ~Count() { --n; }
        } count{++wrappers_};
        if (wrappers_ > max_wrappers)
            return add(f, kUnparsable, "wrappers nested deeper than " + std::to_string(max_wrappers) + " levels");
        for (; k < a.size() && is_assignment_text(a[k].text); ++k)  // env-style NAME=v
            if (runs_code_variable(a[k].text))
                add(f, kRun, "'" + a[k].text.substr(0, a[k].text.find('=')) + "' in the environment makes the command run other code");
        if (k >= a.size()) return;
        if (a[k].dynamic) {
            add(f, kRun, "the command name '" + a[k].text + "' is only known at run time");
            return;
        }
        // A call of a function defined in the line runs its body, judged where
        // it is defined. Whether the definition runs before the call is not
        // known statically (order, branches, subshells), so a name that is a
        // known command is judged as that command too.
        bool function = functions && functions->count(a[k].text);
        Call c{a, k, f, ctx, depth};
        sv name = c.name();
        fetch_and_run(c);
        // git-push, git-send-email, ... run by name or by path are git push, ...
        if (starts_with(name, "git-") && name.size() > 4) return git_sub(c, k, std::string(name.substr(4)));
        if (const Handler* h = handler(name)) {
            (this->*(*h))(c);
            return;
        }
        if (name == "export" || name == "declare" || name == "typeset" || name == "local" || name == "readonly")
            for (std::size_t j = k + 1; j < a.size(); ++j)
                if (is_assignment_text(a[j].text) && runs_code_variable(a[j].text))
                    add(f, kRun, std::string(name) + " " + a[j].text.substr(0, a[j].text.find('=')) +
                                     " makes later commands run other code");
        if (readonly_command(name)) return;
        if (const Classes* p = plain_classes(name)) {
            for (sv cls : {p->first, p->second})
                if (!cls.empty()) add(f, cls, std::string(name) + " is " + std::string(cls));
            return;
        }
        if (starts_with(name, "python")) return python(c);
        if (starts_with(name, "pip")) return pip(c, k + 1);
        if (starts_with(name, "mkfs")) return add(f, kDestroy, std::string(name) + " formats a filesystem");
        if (function) return;
        if (a[k].text.find('/') != std::string::npos)
            return add(f, kRun, "runs the program '" + a[k].text + "'");
        add(f, kRun, "'" + std::string(name) + "' is not a command known to only read");
    }

    void rest(Call& c, std::size_t from) { command(c.a, from, c.f, c.ctx, c.depth); }

    // Fetch-and-run: the tool installs a package from a registry and runs it
    // (npx, bunx, uvx, pnpm dlx, yarn dlx, npm exec, bun x, pipx run, uv tool
    // run, go run pkg@version).
    void fetch_and_run(Call& c) {
        sv name = c.name();
        static constexpr auto tools = sorted_names(
            {"npx", "bunx", "uvx", "pnpx", "npm", "pnpm", "yarn", "yarnpkg", "bun", "pipx", "uv", "go"});
        if (!contains(tools, name)) return;
        auto p = positionals(c.a, c.args_from(), "", {});
        auto word = [&](std::size_t j) { return j < p.size() ? sv(c.a[p[j]].text) : sv(); };
        bool fetch = false;
        if (name == "npx" || name == "bunx" || name == "uvx" || name == "pnpx")
            fetch = !p.empty();
        else if (name == "npm") fetch = word(0) == "exec" || word(0) == "x";
        else if (name == "pnpm") fetch = word(0) == "dlx";
        else if (name == "yarn" || name == "yarnpkg") fetch = word(0) == "dlx";
        else if (name == "bun") fetch = word(0) == "x";
        else if (name == "pipx") fetch = word(0) == "run";
        else if (name == "uv") fetch = word(0) == "tool" && word(1) == "run";
        else if (name == "go" && word(0) == "run")
            for (std::size_t j = 1; j < p.size(); ++j)
                if (c.a[p[j]].text.find('@') != std::string::npos) fetch = true;
        if (!fetch) return;
        add(c.f, kInstall, std::string(name) + " fetches a package from a registry");
        add(c.f, kRun, std::string(name) + " runs the package it fetched");
    }

    // --- wrappers ---------------------------------------------------------

    void w_env(Call& c) {
        std::size_t k = c.args_from();
        while (k < c.a.size()) {
            const std::string& t = c.a[k].text;
            if (t == "--") {
                ++k;
                break;
            }
            if (t == "-S" || t == "--split-string" || starts_with(t, "--split-string=") ||
                (starts_with(t, "-S") && t.size() > 2) || (is_opt(c.a[k]) && !starts_with(t, "--") && t.back() == 'S')) {
                std::string s;
                std::size_t next = k + 1;
                if (starts_with(t, "--split-string=")) s = t.substr(15);
                else if (starts_with(t, "-S") && t.size() > 2) s = t.substr(2);
                else if (k + 1 < c.a.size()) {
                    s = c.a[k + 1].text;
                    next = k + 2;
                }
                for (std::size_t j = next; j < c.a.size(); ++j) s += " " + c.a[j].text;
                return reparse(s, c.f, "env -S", c.depth);
            }
            if (!is_opt(c.a[k])) break;
            if (t == "-u" || t == "-C" || t == "--unset" || t == "--chdir") k += 2;
            else ++k;
        }
        rest(c, k);
    }

    void w_simple(Call& c) { rest(c, c.args_from()); }  // nohup, builtin, nocorrect, noglob

    void w_command(Call& c) {
        std::size_t k = skip_opts(c.a, c.args_from(), "", {});
        if (has_flag(c.a, c.args_from(), k, 'v', {}) || has_flag(c.a, c.args_from(), k, 'V', {})) return;
        rest(c, k);
    }

    void w_exec(Call& c) { rest(c, skip_opts(c.a, c.args_from(), "a", {})); }

    void w_time(Call& c) {
        std::size_t k = skip_opts(c.a, c.args_from(), "fo", {"--format", "--output"});
        if (auto o = opt_value(c.a, c.args_from(), 'o', {"--output"}, "f")) write_target(c.f, *o, false, "time -o");
        rest(c, k);
    }

    void w_timeout(Call& c) {
        std::size_t k = skip_opts(c.a, c.args_from(), "sk", {"--signal", "--kill-after"});
        rest(c, k + 1);  // the duration
    }

    void w_nice(Call& c) { rest(c, skip_opts(c.a, c.args_from(), "n", {"--adjustment"})); }

    void w_ionice(Call& c) {
        std::size_t k = skip_opts(c.a, c.args_from(), "cnpPu", {"--class", "--classdata", "--pid", "--pgid", "--uid"});
        if (has_flag(c.a, c.args_from(), k, 'p', {"--pid"}) || has_flag(c.a, c.args_from(), k, 'P', {"--pgid"}) ||
            has_flag(c.a, c.args_from(), k, 'u', {"--uid"}))
            return;
        rest(c, k);
    }

    void w_stdbuf(Call& c) { rest(c, skip_opts(c.a, c.args_from(), "ioe", {"--input", "--output", "--error"})); }
    void w_setsid(Call& c) { rest(c, skip_opts(c.a, c.args_from(), "", {})); }
    void w_taskset(Call& c) {
        std::size_t k = skip_opts(c.a, c.args_from(), "", {});
        if (has_flag(c.a, c.args_from(), k, 'p', {"--pid"})) return;
        rest(c, k + 1);  // the mask or cpu list
    }
    void w_chrt(Call& c) {
        std::size_t k = skip_opts(c.a, c.args_from(), "T", {"--sched-runtime", "--sched-deadline", "--sched-period"});
        if (has_flag(c.a, c.args_from(), k, 'p', {"--pid"})) return;
        rest(c, k + 1);  // the priority
    }

    void w_flock(Call& c) {
        std::size_t k = skip_opts(c.a, c.args_from(), "wEc", {"--timeout", "--wait", "--conflict-exit-code", "--command"});
        if (auto s = opt_value(c.a, c.args_from(), 'c', {"--command"}, "wE")) return shell_string_text(c, *s, "flock -c");
        if (k + 1 < c.a.size() && (c.a[k + 1].text == "-c" || c.a[k + 1].text == "--command") && k + 2 < c.a.size())
            return shell_string(c, c.a[k + 2], "flock -c");
        rest(c, k + 1);  // the lock file or descriptor
    }

    void w_watch(Call& c) {
        std::size_t k = skip_opts(c.a, c.args_from(), "nq", {"--interval", "--equexit"});
        if (has_flag(c.a, c.args_from(), k, 'x', {"--exec"})) return rest(c, k);
        join_and_reparse(c, k, "watch");
    }

    void w_xargs(Call& c) {
        std::size_t k = skip_opts(c.a, c.args_from(), "dEIaLnPs",
                                  {"--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs",
                                   "--max-chars", "--arg-file", "--process-slot-var"});
        if (k >= c.a.size()) return;  // echo
        rest(c, k);
    }

    void w_sudo(Call& c) {
        add(c.f, kPriv, std::string(c.name()) + " runs a command as another user");
        std::size_t from = c.args_from();
        std::size_t k = skip_opts(c.a, from, "ugpCDhrtTUR",
                                  {"--user", "--group", "--prompt", "--close-from", "--chdir", "--host", "--role",
                                   "--type", "--command-timeout", "--other-user", "--chroot"});
        if (c.name() == "sudoedit" || has_flag(c.a, from, k, 'e', {"--edit"}))
            return add(c.f, kWrite, "sudo -e edits files");
        if (has_flag(c.a, from, k, 'l', {"--list"}) || has_flag(c.a, from, k, 'v', {"--validate"})) return;
        rest(c, k);
    }

    void w_doas(Call& c) {
        add(c.f, kPriv, "doas runs a command as another user");
        rest(c, skip_opts(c.a, c.args_from(), "uC", {}));
    }

    void w_su(Call& c) {
        add(c.f, kPriv, std::string(c.name()) + " switches user");
        std::size_t from = c.args_from();
        if (auto s = opt_value(c.a, from, 'c', {"--command", "--session-command"}, "sgGwu"))
            return shell_string_text(c, *s, std::string(c.name()) + " -c");
        if (c.name() == "runuser") {
            std::size_t k = skip_opts(c.a, from, "ugGsw", {"--user", "--group", "--supp-group", "--shell"});
            if (has_flag(c.a, from, k, 'u', {"--user"})) rest(c, k);
        }
    }

    void w_pkexec(Call& c) {
        add(c.f, kPriv, "pkexec runs a command as another user");
        rest(c, skip_opts(c.a, c.args_from(), "", {"--user"}));
    }

    void w_shell(Call& c) {
        std::size_t k = c.args_from();
        bool command_string = false;
        while (k < c.a.size()) {
            const std::string& t = c.a[k].text;
            if (t == "--" || t == "-") {
                ++k;
                break;
            }
            if (t.size() < 2 || (t[0] != '-' && t[0] != '+')) break;
            if (t == "-o" || t == "+o" || t == "-O" || t == "+O" || t == "--rcfile" || t == "--init-file") {
                k += 2;
                continue;
            }
            if (t[1] != '-' && t.find('c') != std::string::npos) command_string = true;
            ++k;
        }
        std::string via = std::string(c.name()) + " -c";
        if (command_string) {
            if (k >= c.a.size()) return add(c.f, kUnparsable, via + " has no command string");
            return shell_string(c, c.a[k], via);
        }
        if (k < c.a.size()) return add(c.f, kRun, std::string(c.name()) + " runs the script '" + c.a[k].text + "'");
        if (c.ctx.stdin_script)
            return reparse(*c.ctx.stdin_script, c.f, std::string(c.name()) + " reading a literal script", c.depth);
        add(c.f, kRun, std::string(c.name()) + " runs commands read from its input");
    }

    void shell_string(Call& c, const Arg& arg, const std::string& via) {
        if (arg.dynamic)
            return add(c.f, kRun, via + " runs a string only known at run time ('" + arg.text + "')");
        reparse(arg.text, c.f, via, c.depth);
    }
    void shell_string_text(Call& c, const std::string& text, const std::string& via) {
        if (text.find('$') != std::string::npos || text.find('`') != std::string::npos) {
            // Taken from an option cluster: expansions cannot be told apart from
            // literal text here, so judge the literal reading and note the doubt.
            add(c.f, kRun, via + " string may depend on run-time values");
        }
        reparse(text, c.f, via, c.depth);
    }

    void join_and_reparse(Call& c, std::size_t from, sv via) {
        std::string s;
        for (std::size_t j = from; j < c.a.size(); ++j) {
            if (c.a[j].dynamic)
                return add(c.f, kRun, std::string(via) + " runs '" + c.a[j].text + "', only known at run time");
            if (!s.empty()) s += ' ';
            s += c.a[j].text;
        }
        if (!s.empty()) reparse(s, c.f, via, c.depth);
    }

    void w_eval(Call& c) { join_and_reparse(c, c.args_from(), "eval"); }

    void w_trap(Call& c) {
        std::size_t k = skip_opts(c.a, c.args_from(), "", {});
        if (has_flag(c.a, c.args_from(), k, 'p', {}) || has_flag(c.a, c.args_from(), k, 'l', {})) return;
        if (k + 1 < c.a.size()) shell_string(c, c.a[k], "trap");
    }

    void w_source(Call& c) {
        std::string what = c.a.size() > c.args_from() ? c.a[c.args_from()].text : "";
        add(c.f, kRun, std::string(c.name()) + " runs the script '" + what + "'");
    }

    void w_find(Call& c) {
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
            const std::string& t = c.a[k].text;
            if (t == "-exec" || t == "-execdir" || t == "-ok" || t == "-okdir") {
                std::size_t end = k + 1;
                while (end < c.a.size() && c.a[end].text != ";" && c.a[end].text != "+") ++end;
                Args inner(c.a.begin() + static_cast<std::ptrdiff_t>(k + 1), c.a.begin() + static_cast<std::ptrdiff_t>(end));
                if (!inner.empty()) {
                    // {} stands for every file under the start points.
                    if (auto root = precious_find_root(c))
                        for (auto& x : inner)
                            if (x.text == "{}") x.text = *root;
                    command(inner, 0, c.f, Ctx{}, c.depth);
                }
                k = end;
            } else if (t == "-delete") {
                add(c.f, kWrite, "find -delete removes files");
                if (auto root = precious_find_root(c)) add(c.f, kDestroy, "find " + *root + " -delete");
            } else if ((t == "-fprint" || t == "-fprint0" || t == "-fls" || t == "-fprintf") && k + 1 < c.a.size()) {
                write_target(c.f, c.a[k + 1].text, c.a[k + 1].dynamic, "find " + t);
            }
        }
    }

    // A start point of find that takes the system or the home with it.
    static std::optional<std::string> precious_find_root(const Call& c) {
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
            const std::string& t = c.a[k].text;
            if (t == "-H" || t == "-L" || t == "-P" || starts_with(t, "-O") || starts_with(t, "-D")) continue;
            if (t.empty() || t[0] == '-' || t == "(" || t == "!") break;
            if (!c.a[k].dynamic && is_precious(t)) return t;
        }
        return std::nullopt;
    }

    // --- files -------------------------------------------------------------

    void f_rm(Call& c) {
        std::size_t from = c.args_from();
        bool recursive = false, no_preserve = false;
        std::vector<const Arg*> targets;
        bool opts_done = false;
        for (std::size_t k = from; k < c.a.size(); ++k) {
            const Arg& x = c.a[k];
            if (!opts_done && x.text == "--") {
                opts_done = true;
            } else if (!opts_done && is_opt(x)) {
                if (x.text == "--recursive") recursive = true;
                else if (x.text == "--no-preserve-root") no_preserve = true;
                else if (x.text[1] != '-' && (x.text.find('r') != std::string::npos || x.text.find('R') != std::string::npos))
                    recursive = true;
            } else {
                targets.push_back(&x);
            }
        }
        add(c.f, kWrite, std::string(c.name()) + " deletes files");
        if (no_preserve) return add(c.f, kDestroy, "rm --no-preserve-root");
        for (const Arg* t : targets) {
            if (recursive && is_precious(t->text))
                return add(c.f, kDestroy, "rm -r of '" + t->text + "'");
            if (is_block_device(t->text)) return add(c.f, kDestroy, "rm of the device '" + t->text + "'");
        }
    }

    // cp, mv, ln, install, rsync, shred, truncate, touch, mkdir...: any target that is a device or kernel knob.
    void f_write(Call& c) {
        add(c.f, kWrite, std::string(c.name()) + " changes files");
        if (c.name() == "install")
            if (auto m = opt_value(c.a, c.args_from(), 'm', {"--mode"}, "gotS"); m && setuid_mode(*m))
                add(c.f, kPriv, "install -m " + *m + " sets the setuid or setgid bit");
        bool recursive = has_flag(c.a, c.args_from(), c.a.size(), 'R', {"--recursive"}) ||
                         (c.name() != "chmod" && c.name() != "chown" && c.name() != "chgrp" &&
                          has_flag(c.a, c.args_from(), c.a.size(), 'r', {}));
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
            const Arg& x = c.a[k];
            if (x.dynamic || is_opt(x)) continue;
            if (is_block_device(x.text)) add(c.f, kDestroy, std::string(c.name()) + " on the device '" + x.text + "'");
            else if (is_kernel_knob(x.text)) add(c.f, kEscape, std::string(c.name()) + " on '" + x.text + "'");
            else if (recursive && (c.name() == "chmod" || c.name() == "chown" || c.name() == "chgrp") && is_precious(x.text))
                add(c.f, kDestroy, std::string(c.name()) + " -R of '" + x.text + "'");
        }
        if (c.name() == "shred")
            for (std::size_t k = c.args_from(); k < c.a.size(); ++k)
                if (!is_opt(c.a[k]) && starts_with(c.a[k].text, "/dev/"))
                    add(c.f, kDestroy, "shred of '" + c.a[k].text + "'");
    }

    void f_chmod(Call& c) {
        f_write(c);
        auto pos = positionals(c.a, c.args_from(), "", {"--reference"});
        if (pos.empty()) return;
        const std::string& mode = c.a[pos[0]].text;
        bool setid = false;
        if (!mode.empty() && std::all_of(mode.begin(), mode.end(), [](char ch) { return ch >= '0' && ch <= '7'; })) {
            if (mode.size() >= 4) {
                int special = mode[mode.size() - 4] - '0';
                setid = (special & 6) != 0;
            }
        } else {
            for (std::size_t j = 0; j < mode.size(); ++j)
                if ((mode[j] == '+' || mode[j] == '=') && mode.find('s', j) != std::string::npos) setid = true;
        }
        if (setid) add(c.f, kPriv, "chmod '" + mode + "' sets the setuid or setgid bit");
    }

    void f_dd(Call& c) {
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k)
            if (starts_with(c.a[k].text, "of=")) write_target(c.f, c.a[k].text.substr(3), c.a[k].dynamic, "dd");
    }

    void f_tee(Call& c) {
        for (auto p : positionals(c.a, c.args_from(), "", {"--output-error"}))
            write_target(c.f, c.a[p].text, c.a[p].dynamic, "tee");
    }

    void f_sed(Call& c) {
        std::size_t from = c.args_from();
        std::vector<const Arg*> scripts;
        bool script_option = false;
        for (std::size_t k = from; k < c.a.size(); ++k) {
            const std::string& t = c.a[k].text;
            if (t == "--") break;
            if (starts_with(t, "--in-place") || (t.size() > 1 && t[0] == '-' && t[1] != '-' &&
                                                 t.find('i') != std::string::npos &&
                                                 t.find_first_of("ef") > t.find('i')))
                add(c.f, kWrite, "sed -i edits files in place");
            if ((t == "-e" || t == "--expression") && k + 1 < c.a.size()) {
                scripts.push_back(&c.a[++k]);
                script_option = true;
            } else if (starts_with(t, "--expression=") || (starts_with(t, "-e") && t.size() > 2)) {
                script_option = true;
                std::string body = t.substr(t[1] == '-' ? 13 : 2);
                if (c.a[k].dynamic) return add(c.f, kRun, "the sed script is only known at run time");
                sed_script(c, body);
            } else if (t == "-f" || t == "--file" || starts_with(t, "--file=") || (starts_with(t, "-f") && t.size() > 2)) {
                return add(c.f, kRun, "sed -f runs a script file, which may run commands or write files");
            }
        }
        if (!script_option) {
            auto pos = positionals(c.a, from, "l", {"--line-length"});
            if (!pos.empty()) scripts.push_back(&c.a[pos[0]]);
        }
        for (const Arg* x : scripts) {
            if (x->dynamic) return add(c.f, kRun, "the sed script is only known at run time");
            sed_script(c, x->text);
        }
    }

    // GNU sed's commands that reach outside: e (and the s///e flag) run a
    // command, w and W (and s///w) write a file. Addresses, regular
    // expressions, replacements and text arguments are skipped as sed reads
    // them.
    void sed_script(Call& c, const std::string& t) {
        std::size_t k = 0, n = t.size();
        auto blanks = [&] {
            while (k < n && (t[k] == ' ' || t[k] == '\t')) ++k;
        };
        auto to_eol = [&] {
            std::size_t start = k;
            while (k < n && t[k] != '\n') ++k;
            return t.substr(start, k - start);
        };
        auto delimited = [&](char d) {  // past the next unescaped d
            while (k < n && t[k] != d) {
                if (t[k] == '\\') ++k;
                ++k;
            }
            if (k < n) ++k;
        };
        auto write_file = [&](const std::string& how) {
            blanks();
            std::string file = to_eol();
            if (file != "/dev/stdout" && file != "/dev/stderr") write_target(c.f, file, false, how);
        };
        while (k < n) {
            char ch = t[k];
            if (ch == ' ' || ch == '\t' || ch == '\n' || ch == ';' || ch == '{' || ch == '}' || ch == '!') {
                ++k;
                continue;
            }
            // Addresses: numbers, $, first~step, /re/, \cREc, and ",addr".
            if ((ch >= '0' && ch <= '9') || ch == '$' || ch == ',' || ch == '~' || ch == '+') {
                ++k;
                continue;
            }
            if (ch == '/' || ch == '\\') {
                char d = ch == '/' ? '/' : (k + 1 < n ? t[k + 1] : '/');
                k += ch == '/' ? 1 : 2;
                delimited(d);
                while (k < n && (t[k] == 'I' || t[k] == 'M')) ++k;
                continue;
            }
            if (ch == '#') {
                to_eol();
                continue;
            }
            ++k;
            switch (ch) {
                case 'e': return add(c.f, kRun, "the sed script runs a command (e)");
                case 'w': case 'W': write_file("sed " + std::string(1, ch)); break;
                case 'r': case 'R': case 'a': case 'i': case 'c': case ':': case 'b': case 't': case 'T': case 'v':
                    // a text, a file to read or a label: to the end of the line
                    // (a label also ends at ';').
                    while (k < n && t[k] != '\n' && !((ch == 'b' || ch == 't' || ch == 'T') && t[k] == ';')) {
                        if (t[k] == '\\') ++k;
                        ++k;
                    }
                    break;
                case 's': case 'y': {
                    if (k >= n) break;
                    char d = t[k++];
                    delimited(d);
                    delimited(d);
                    if (ch == 'y') break;
                    while (k < n && std::string_view("gpiImMe0123456789w").find(t[k]) != std::string_view::npos) {
                        if (t[k] == 'e') return add(c.f, kRun, "the sed script runs a command (s///e)");
                        if (t[k] == 'w') {
                            ++k;
                            write_file("sed s///w");
                            break;
                        }
                        ++k;
                    }
                    break;
                }
                case 'q': case 'Q': case 'l': case 'L':
                    while (k < n && t[k] >= '0' && t[k] <= '9') ++k;
                    break;
                default: break;  // p d D n N g G h H x = z F P
            }
        }
    }

    // man -P/--pager runs the given program; -H/--html a browser.
    void f_man(Call& c) {
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
            const std::string& t = c.a[k].text;
            if (t == "--") break;
            if (t == "-P" || starts_with(t, "--pager") || (starts_with(t, "-P") && t.size() > 2) || starts_with(t, "-H") ||
                starts_with(t, "--html"))
                return add(c.f, kRun, "man " + t + " runs the program it names");
        }
    }

    // xxd [options] [infile [outfile]]: the second operand is written.
    void f_xxd(Call& c) {
        auto pos = positionals(c.a, c.args_from(), "cglsoCn", {"-cols", "-groupsize", "-len", "-seek", "-name"});
        if (pos.size() >= 2) write_target(c.f, c.a[pos[1]].text, c.a[pos[1]].dynamic, "xxd");
    }

    void f_awk(Call& c) {
        std::size_t from = c.args_from();
        if (opt_value(c.a, from, 'f', {"--file"}, "vF")) return add(c.f, kRun, "awk -f runs a program file");
        if (auto i = opt_value(c.a, from, 'i', {"--include"}, "vFf"); i && *i == "inplace")
            return add(c.f, kWrite, "awk -i inplace edits files");
        auto pos = positionals(c.a, from, "vFf", {});
        if (pos.empty()) return;
        const std::string& prog = c.a[pos[0]].text;
        if (prog.find("system") != std::string::npos || prog.find("| getline") != std::string::npos ||
            prog.find("|&") != std::string::npos || prog.find("print |") != std::string::npos ||
            prog.find("printf |") != std::string::npos)
            return add(c.f, kRun, "the awk program runs commands");
        // Output redirection: a '>' at the top level of a print or printf
        // statement ("print $1 > \"f\""); a comparison in a pattern or in
        // parentheses ("$3 >= 1000", "print ($1 > 2)") writes nothing.
        for (std::size_t at = prog.find("print"); at != std::string::npos; at = prog.find("print", at + 5)) {
            int depth = 0;
            bool quoted = false;
            for (std::size_t k = at + 5; k < prog.size(); ++k) {
                char ch = prog[k];
                if (quoted) {
                    if (ch == '\\') ++k;
                    else if (ch == '"') quoted = false;
                    continue;
                }
                if (ch == '"') quoted = true;
                else if (ch == '(') ++depth;
                else if (ch == ')') --depth;
                else if (ch == ';' || ch == '}' || ch == '\n') break;
                else if (ch == '>' && depth <= 0 && (k + 1 >= prog.size() || prog[k + 1] != '='))
                    return add(c.f, kWrite, "the awk program writes files");
            }
        }
    }

    void f_sort(Call& c) {
        if (auto o = opt_value(c.a, c.args_from(), 'o', {"--output"}, "kStT")) write_target(c.f, *o, false, "sort -o");
    }
    void f_uniq(Call& c) {
        auto pos = positionals(c.a, c.args_from(), "fsw", {"--skip-fields", "--skip-chars", "--check-chars"});
        if (pos.size() >= 2) write_target(c.f, c.a[pos[1]].text, c.a[pos[1]].dynamic, "uniq");
    }
    void f_tar(Call& c) {
        std::size_t from = c.args_from();
        std::string first = from < c.a.size() ? c.a[from].text : "";
        bool listing = has_flag(c.a, from, c.a.size(), 't', {"--list"}) ||
                       (!first.empty() && first[0] != '-' && first.find('t') != std::string::npos);
        if (!listing) add(c.f, kWrite, "tar creates or extracts files");
        for (std::size_t k = from; k < c.a.size(); ++k) {
            sv t = c.a[k].text;
            if (starts_with(t, "--to-command") || starts_with(t, "--checkpoint-action") ||
                starts_with(t, "--use-compress-program") || starts_with(t, "--info-script") ||
                starts_with(t, "--new-volume-script") || t == "-I" || t == "-F")
                return add(c.f, kRun, "tar " + std::string(t) + " runs a program");
        }
    }
    void f_unzip(Call& c) {
        if (!has_flag(c.a, c.args_from(), c.a.size(), 'l', {}) && !has_flag(c.a, c.args_from(), c.a.size(), 't', {}) &&
            !has_flag(c.a, c.args_from(), c.a.size(), 'Z', {}) && !has_flag(c.a, c.args_from(), c.a.size(), 'p', {}))
            add(c.f, kWrite, "unzip extracts files");
    }
    void f_compress(Call& c) {
        std::size_t from = c.args_from();
        if (has_flag(c.a, from, c.a.size(), 'c', {"--stdout", "--to-stdout"}) ||
            has_flag(c.a, from, c.a.size(), 't', {"--test"}) || has_flag(c.a, from, c.a.size(), 'l', {"--list"}) ||
            c.name() == "zcat" || c.name() == "bzcat" || c.name() == "xzcat" || c.name() == "zstdcat")
            return;
        add(c.f, kWrite, std::string(c.name()) + " replaces files");
    }
    void f_mktemp(Call& c) {
        if (!has_flag(c.a, c.args_from(), c.a.size(), 'u', {"--dry-run"})) add(c.f, kWrite, "mktemp creates a file");
    }
    void f_yq(Call& c) {
        if (has_flag(c.a, c.args_from(), c.a.size(), 'i', {"--inplace"})) add(c.f, kWrite, "yq -i edits files");
    }
    void f_date(Call& c) {
        if (has_flag(c.a, c.args_from(), c.a.size(), 's', {"--set"})) add(c.f, kPriv, "date -s sets the system clock");
    }
    void f_crontab(Call& c) {
        if (has_flag(c.a, c.args_from(), c.a.size(), 'l', {})) return;
        add(c.f, kWrite, "crontab changes scheduled jobs");
    }
    void f_mount(Call& c) {
        if (c.a.size() == c.args_from() || (c.a.size() == c.args_from() + 1 && (c.a.back().text == "-l" || c.a.back().text == "--list")))
            return;  // lists mounts
        add(c.f, kEscape, std::string(c.name()) + " changes the mount table");
    }
    void f_sysctl(Call& c) {
        bool writes = has_flag(c.a, c.args_from(), c.a.size(), 'w', {"--write"}) ||
                      has_flag(c.a, c.args_from(), c.a.size(), 'p', {"--load", "--system"});
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k)
            if (!is_opt(c.a[k]) && c.a[k].text.find('=') != std::string::npos) writes = true;
        if (writes) add(c.f, kEscape, "sysctl writes kernel parameters");
    }
    void f_kill(Call& c) {
        std::size_t from = c.args_from();
        bool all = false;
        for (std::size_t k = from; k < c.a.size(); ++k) {
            const std::string& t = c.a[k].text;
            bool after_dashdash = k > from && c.a[k - 1].text == "--";
            bool after_signal = k > from && (is_opt(c.a[k - 1]) || c.a[k - 1].text == "KILL" || c.a[k - 1].text == "9");
            if (t == "-1" && (after_dashdash || (after_signal && k > from))) all = true;
        }
        if (all) return add(c.f, kDestroy, "kill -1 signals every process");
        add(c.f, kRun, std::string(c.name()) + " signals processes");
    }
    void f_power(Call& c) { add(c.f, kDestroy, std::string(c.name()) + " stops the machine"); }
    void f_init(Call& c) {
        auto pos = positionals(c.a, c.args_from(), "", {});
        if (!pos.empty() && (c.a[pos[0]].text == "0" || c.a[pos[0]].text == "6"))
            return add(c.f, kDestroy, std::string(c.name()) + " " + c.a[pos[0]].text + " stops the machine");
        add(c.f, kRun, std::string(c.name()) + " changes the run level");
    }
    void f_systemctl(Call& c) {
        auto pos = positionals(c.a, c.args_from(), "HMnopst", {"--host", "--machine", "--type", "--state", "--property", "--signal", "--lines", "--output", "--root"});
        if (pos.empty()) return;
        sv sub = c.a[pos[0]].text;
        static constexpr auto stop = sorted_names({"poweroff", "reboot", "halt", "kexec", "rescue", "emergency",
                                                    "suspend", "hibernate", "hybrid-sleep", "soft-reboot"});
        if (contains(stop, sub)) return add(c.f, kDestroy, "systemctl " + std::string(sub) + " stops the machine");
        if (starts_with(sub, "list-") || starts_with(sub, "is-") || sub == "status" || sub == "show" || sub == "cat" ||
            sub == "help" || sub == "get-default")
            return;
        add(c.f, kRun, "systemctl " + std::string(sub) + " changes services");
    }
    void f_disk(Call& c) {
        if (has_flag(c.a, c.args_from(), c.a.size(), 'l', {"--list"}) && c.name() != "wipefs")
            return;
        add(c.f, kDestroy, std::string(c.name()) + " rewrites disks or partition tables");
    }

    // --- network -------------------------------------------------------------

    void n_curl(Call& c) {
        std::size_t from = c.args_from();
        add(c.f, kNet, "curl talks to the network");
        static const sv value_opts = "AbcCdDeEFHKmoPQrtTuUwxXyYz";
        for (std::size_t k = from; k < c.a.size(); ++k) {
            const std::string& t = c.a[k].text;
            if (!is_opt(c.a[k])) continue;
            std::string name, value;
            bool has_value = false;
            if (starts_with(t, "--")) {
                auto eq = t.find('=');
                name = t.substr(0, eq);
                if (eq != std::string::npos) {
                    value = t.substr(eq + 1);
                    has_value = true;
                } else if (k + 1 < c.a.size()) {
                    value = c.a[k + 1].text;
                    has_value = true;
                }
            } else {
                for (std::size_t j = 1; j < t.size(); ++j) {
                    char ch = t[j];
                    if (ch == 'O' || ch == 'J') add(c.f, kWrite, "curl -O saves the response to a file");
                    if (value_opts.find(ch) != sv::npos) {
                        name = std::string("-") + ch;
                        if (j + 1 < t.size()) value = t.substr(j + 1);
                        else if (k + 1 < c.a.size()) value = c.a[k + 1].text;
                        has_value = true;
                        break;
                    }
                }
            }
            if (name == "-o" || name == "--output" || name == "-D" || name == "--dump-header" || name == "-c" ||
                name == "--cookie-jar" || name == "--trace" || name == "--trace-ascii" || name == "--stderr" ||
                name == "--libcurl" || name == "--etag-save" || name == "--hsts" || name == "--alt-svc") {
                if (has_value) write_target(c.f, value, false, "curl " + name);
            } else if (name == "--remote-name" || name == "--remote-name-all" || name == "--output-dir" ||
                       name == "--remote-header-name") {
                add(c.f, kWrite, "curl " + name + " saves the response to a file");
            } else if (name == "-d" || starts_with(name, "--data") || name == "-F" || starts_with(name, "--form") ||
                       name == "-T" || name == "--upload-file" || name == "--json" || name == "--mail-rcpt") {
                add(c.f, kNetWrite, "curl " + name + " sends data");
            } else if ((name == "-X" || name == "--request") && has_value) {
                std::string m = value;
                std::transform(m.begin(), m.end(), m.begin(), [](unsigned char ch) { return std::toupper(ch); });
                if (m != "GET" && m != "HEAD" && m != "OPTIONS") add(c.f, kNetWrite, "curl -X " + m + " changes remote state");
            }
        }
    }

    void n_wget(Call& c) {
        std::size_t from = c.args_from();
        add(c.f, kNet, "wget talks to the network");
        bool to_stdout = false, spider = false;
        if (auto o = opt_value(c.a, from, 'O', {"--output-document"}, "oaeiPtTwUQBDA")) {
            if (is_harmless_sink(*o)) to_stdout = true;
            else write_target(c.f, *o, false, "wget -O");
        }
        if (has_flag(c.a, from, c.a.size(), 0, {"--spider"})) spider = true;
        if (auto o = opt_value(c.a, from, 'o', {"--output-file"}, "OaeiPtTwUQBDA")) write_target(c.f, *o, false, "wget -o");
        if (!to_stdout && !spider && !opt_value(c.a, from, 'O', {"--output-document"}, "oaeiPtTwUQBDA"))
            add(c.f, kWrite, "wget saves downloads to files");
        if (has_flag(c.a, from, c.a.size(), 0, {"--post-data", "--post-file", "--body-data", "--body-file"}))
            add(c.f, kNetWrite, "wget sends data");
        if (auto m = opt_value(c.a, from, 0, {"--method"}); m && *m != "GET" && *m != "HEAD")
            add(c.f, kNetWrite, "wget --method " + *m + " changes remote state");
    }

    void n_httpie(Call& c) {
        add(c.f, kNet, std::string(c.name()) + " talks to the network");
        auto pos = positionals(c.a, c.args_from(), "aAo", {"--auth", "--auth-type", "--output", "--session"});
        for (std::size_t j = 0; j < pos.size(); ++j) {
            const std::string& t = c.a[pos[j]].text;
            if (j == 0 && (t == "POST" || t == "PUT" || t == "PATCH" || t == "DELETE"))
                return add(c.f, kNetWrite, std::string(c.name()) + " " + t + " changes remote state");
            if (j > 0 && (t.find('=') != std::string::npos || t.find(":=") != std::string::npos) &&
                t.find("==") == std::string::npos)
                return add(c.f, kNetWrite, std::string(c.name()) + " sends data");
        }
        if (has_flag(c.a, c.args_from(), c.a.size(), 'd', {"--download"})) add(c.f, kWrite, "downloads to a file");
    }

    void n_ssh(Call& c) {
        add(c.f, kNet, "ssh talks to another host");
        add(c.f, kRun, "ssh runs commands on another host");
    }

    void n_copy(Call& c) {  // scp, rsync, sftp
        bool remote = c.name() == "sftp" || c.name() == "ftp";
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
            const std::string& t = c.a[k].text;
            auto colon = t.find(':');
            if (!is_opt(c.a[k]) && colon != std::string::npos && colon > 0 && t.find('/') > colon) remote = true;
        }
        if (remote) {
            add(c.f, kNet, std::string(c.name()) + " copies over the network");
            add(c.f, kNetWrite, std::string(c.name()) + " may send files");
        }
        f_write(c);
    }

    // --- git ---------------------------------------------------------------

    void git(Call& c) {
        const Args& a = c.a;
        std::size_t k = c.args_from();
        std::vector<std::pair<std::string, std::string>> aliases;
        while (k < a.size() && is_opt(a[k])) {
            const std::string& t = a[k].text;
            if (t == "-C" || t == "-c" || t == "--git-dir" || t == "--work-tree" || t == "--namespace" ||
                t == "--exec-path" || t == "--super-prefix" || t == "--config-env" || t == "--list-cmds") {
                if (t == "-c" && k + 1 < a.size()) {
                    const std::string& kv = a[k + 1].text;
                    if (starts_with(kv, "alias.")) {
                        auto eq = kv.find('=');
                        if (eq != std::string::npos) aliases.emplace_back(kv.substr(6, eq - 6), kv.substr(eq + 1));
                    }
                    sv key = sv(kv).substr(0, kv.find('='));
                    static constexpr auto runs = sorted_names({"core.sshCommand", "core.pager", "core.editor",
                                                               "core.hooksPath", "core.fsmonitor", "diff.external",
                                                               "core.askPass", "credential.helper", "sequence.editor",
                                                               "gpg.program", "uploadpack.packObjectsHook"});
                    if (contains(runs, key) || key.find(".command") != sv::npos || key.find(".textconv") != sv::npos ||
                        key.find(".clean") != sv::npos || key.find(".smudge") != sv::npos || key.find(".process") != sv::npos)
                        add(c.f, kRun, "git -c " + std::string(key) + " runs a configured program");
                }
                k += 2;
                continue;
            }
            if (starts_with(t, "--exec-path=")) add(c.f, kRun, "git --exec-path runs git commands from another place");
            ++k;  // --no-pager, -p, --bare, --git-dir=..., -P, ...
        }
        if (k >= a.size()) return;  // git --version, git --help
        std::string sub = a[k].text;
        for (const auto& [name, value] : aliases) {
            if (name != sub) continue;
            if (!value.empty() && value[0] == '!') {
                std::string s = value.substr(1);
                for (std::size_t j = k + 1; j < a.size(); ++j) s += " " + a[j].text;
                return reparse(s, c.f, "git alias '" + name + "'", c.depth);
            }
            std::string s = "git " + value;
            for (std::size_t j = k + 1; j < a.size(); ++j) s += " " + a[j].text;
            return reparse(s, c.f, "git alias '" + name + "'", c.depth);
        }
        git_sub(c, k, sub);
    }

    void git_sub(Call& c, std::size_t k, const std::string& sub) {
        const Args& a = c.a;
        std::size_t from = k + 1;
        auto note = [&](sv cls) { add(c.f, cls, "git " + sub); };
        auto pos = [&](sv sopts = "", std::initializer_list<sv> lopts = {}) { return positionals(a, from, sopts, lopts); };
        static constexpr auto commit = sorted_names({"commit", "merge", "rebase", "cherry-pick", "revert", "am",
                                                      "filter-branch", "filter-repo", "commit-tree"});
        static constexpr auto readonly = sorted_names({
            "status", "log", "diff", "show", "blame", "annotate", "shortlog", "describe", "rev-parse", "rev-list",
            "ls-tree", "cat-file", "grep", "show-ref", "for-each-ref", "merge-base", "name-rev",
            "count-objects", "verify-commit", "verify-tag", "whatchanged", "version", "help", "var", "check-ignore",
            "check-attr", "check-ref-format", "cherry", "range-diff", "request-pull", "fsck", "diff-tree",
            "diff-files", "diff-index", "show-branch", "column", "get-tar-commit-id", "verify-pack", "stripspace", "interpret-trailers", "check-mailmap", "show-index",
            "patch-id", "fmt-merge-msg", "mailinfo", "ls-files"});
        static constexpr auto writes = sorted_names({
            "add", "rm", "mv", "checkout", "switch", "restore", "reset", "clean", "init", "apply", "gc", "prune",
            "repack", "update-ref", "update-index", "hash-object", "mktree", "read-tree", "write-tree", "replace",
            "sparse-checkout", "maintenance", "format-patch", "bundle", "pack-refs", "mktag", "checkout-index", "merge-file", "rerere", "lfs", "annex", "restore-mtime", "mergetool", "citool",
            "stage", "unpack-objects", "pack-objects", "index-pack", "prune-packed", "multi-pack-index",
            "commit-graph", "symbolic-ref", "difftool", });
        if (contains(commit, sub)) {
            note(kCommit);
            if (sub == "commit") commit_files(c, from);
            return;
        }
        if (sub == "push") return git_push(c, from);
        if (sub == "pull") {
            note(kCommit);
            note(kNet);
            return note(kWrite);
        }
        if (sub == "fetch" || sub == "clone") {
            note(kNet);
            return note(kWrite);
        }
        if (sub == "ls-remote") return note(kNet);
        if (sub == "send-email") {  // outward like a push: commits leave by mail
            note(kNet);
            note(kNetWrite);
            return add(c.f, kPush, "git send-email sends commits out by mail");
        }
        if (contains(readonly, sub)) {
            if (has_flag(a, from, a.size(), 'O', {"--open-files-in-pager", "--ext-diff", "--textconv"}) &&
                (sub == "grep" || sub == "diff" || sub == "log" || sub == "show"))
                return add(c.f, kRun, "git " + sub + " runs a configured or named program");
            if (sub == "diff" || sub == "log" || sub == "show") {
                if (auto o = opt_value(a, from, 0, {"--output"})) write_target(c.f, *o, false, "git " + sub + " --output");
            }
            return;
        }
        if (sub == "config") {
            for (std::size_t j = from; j < a.size(); ++j) {
                sv t = a[j].text;
                if (t == "--get" || t == "--get-all" || t == "--get-regexp" || t == "-l" || t == "--list" ||
                    t == "--get-urlmatch" || t == "--get-color" || t == "--get-colorbool" || t == "get" || t == "list")
                    return;
            }
            auto p = pos("f", {"--file", "--blob", "--type", "--default"});
            if (p.size() <= 1 && !has_flag(a, from, a.size(), 0, {"--unset", "--unset-all", "--add", "--replace-all",
                                                                    "--rename-section", "--remove-section", "--edit"}) &&
                !has_flag(a, from, a.size(), 'e', {}))
                return;
            return note(kWrite);
        }
        if (sub == "branch") {
            if (has_flag(a, from, a.size(), 0, {"--delete", "--move", "--copy", "--set-upstream-to", "--unset-upstream",
                                                 "--edit-description", "--force", "--create-reflog", "--track"}))
                return note(kWrite);
            for (std::size_t j = from; j < a.size(); ++j) {
                sv t = a[j].text;
                if (t.size() > 1 && t[0] == '-' && t[1] != '-' && t.find_first_of("dDmMcCuf") != sv::npos) return note(kWrite);
            }
            bool listing = has_flag(a, from, a.size(), 'l', {"--list", "--contains", "--no-contains", "--merged",
                                                               "--no-merged", "--points-at", "--show-current"}) ||
                           has_flag(a, from, a.size(), 'a', {"--all"}) || has_flag(a, from, a.size(), 'r', {"--remotes"});
            if (listing || pos("", {"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort",
                                    "--format", "--color", "--column"}).empty())
                return;
            return note(kWrite);
        }
        if (sub == "tag") {
            if (has_flag(a, from, a.size(), 'l', {"--list", "--contains", "--no-contains", "--points-at", "--merged", "--no-merged"}) ||
                has_flag(a, from, a.size(), 'v', {"--verify"}))
                return;
            if (pos("", {"--sort", "--format", "--color", "--column"}).empty() &&
                !has_flag(a, from, a.size(), 'd', {"--delete"}))
                return;
            return note(kWrite);
        }
        auto sub2 = [&]() -> std::string {
            auto p = pos();
            return p.empty() ? std::string() : a[p[0]].text;
        };
        if (sub == "remote") {
            std::string s = sub2();
            if (s.empty() || s == "show" || s == "get-url") return;
            if (s == "update") {
                note(kNet);
                return note(kWrite);
            }
            return note(kWrite);
        }
        if (sub == "stash") {
            std::string s = sub2();
            if (s == "list" || s == "show") return;
            return note(kWrite);
        }
        if (sub == "worktree") {
            std::string s = sub2();
            if (s == "list") return;
            return note(kWrite);
        }
        if (sub == "reflog") {
            std::string s = sub2();
            if (s.empty() || s == "show" || s == "exists") return;
            return note(kWrite);
        }
        if (sub == "notes") {
            std::string s = sub2();
            if (s.empty() || s == "list" || s == "show") return;
            return note(kWrite);
        }
        if (sub == "submodule") {
            std::string s = sub2();
            if (s.empty() || s == "status" || s == "summary" || s == "foreach") {
                if (s == "foreach") return join_and_reparse(c, pos()[0] + 1, "git submodule foreach");
                return;
            }
            if (s == "update" || s == "add" || s == "sync" || s == "init") {
                note(kNet);
                return note(kWrite);
            }
            return note(kWrite);
        }
        if (sub == "bisect") {
            std::string s = sub2();
            if (s == "log" || s == "visualize" || s == "view") return;
            if (s == "run") return add(c.f, kRun, "git bisect run runs a script");
            return note(kWrite);
        }
        if (sub == "archive") {
            if (auto o = opt_value(a, from, 'o', {"--output"})) write_target(c.f, *o, false, "git archive -o");
            return;
        }
        // Outward through git's other transports: the same class as a push.
        if (sub == "lfs" || sub == "subtree" || sub == "svn") {
            auto p = pos();
            if (sub == "lfs" && !p.empty() &&
                (a[p[0]].text == "ls-files" || a[p[0]].text == "status" || a[p[0]].text == "env" || a[p[0]].text == "version"))
                return;
            if (!p.empty() && (a[p[0]].text == "push" || a[p[0]].text == "dcommit"))
                return add(c.f, kPush, "git " + sub + " " + a[p[0]].text + " sends commits to a remote");
        }
        if (sub == "symbolic-ref") {  // reads with one name, writes with two or -d
            if (has_flag(a, from, a.size(), 'd', {"--delete"}) || pos("m").size() >= 2) return note(kWrite);
            return;
        }
        if (contains(writes, sub)) return note(kWrite);
        add(c.f, kRun, "'git " + sub + "' is not a known git command (an alias or an extension)");
    }

    void commit_files(Call& c, std::size_t from) {
        // git commit -F FILE / -t FILE read files; nothing else to add.
        (void)c;
        (void)from;
    }

    void git_push(Call& c, std::size_t from) {
        add(c.f, kPush, "git push");
        const Args& a = c.a;
        auto p = positionals(a, from, "o", {"--repo", "--push-option", "--receive-pack", "--exec"});
        bool all = has_flag(a, from, a.size(), 0, {"--all", "--mirror", "--branches"});
        if (has_flag(a, from, a.size(), 0, {"--tags"})) c.f.refs.push_back("refs/tags/*");
        if (all) return;
        for (std::size_t j = 1; j < p.size(); ++j) {
            std::string spec = a[p[j]].text;
            if (a[p[j]].dynamic) continue;
            if (!spec.empty() && spec[0] == '+') spec.erase(0, 1);
            auto colon = spec.find(':');
            std::string dst = colon == std::string::npos ? spec : spec.substr(colon + 1);
            if (dst.empty() || dst == "HEAD" || dst.find('*') != std::string::npos) continue;
            if (!starts_with(dst, "refs/")) dst = "refs/heads/" + dst;
            c.f.refs.push_back(dst);
        }
    }

    // --- gh ------------------------------------------------------------------

    // The other forges' CLIs (GitLab's glab, Gitea's tea, Azure's az repos)
    // and hub: the same classes as the gh spellings they mirror.
    void forge(Call& c) {
        sv name = c.name();
        // Options with values are not told apart here: a value is taken for
        // the next word only when it cannot be a subcommand.
        std::vector<std::string> w;
        for (std::size_t k = c.args_from(); k < c.a.size() && w.size() < 3; ++k)
            if (!is_opt(c.a[k])) w.push_back(c.a[k].text);
        std::size_t at = 0;
        if (name == "az") {
            if (w.empty() || w[0] != "repos") return interpreter(c);
            at = 1;
        }
        if (name == "hub") {
            // hub is git with forge commands added.
            if (w.empty()) return;
            if (w[0] == "pull-request") return add(c.f, kOpenPr, "hub pull-request");
            if (w[0] == "ci-status" || w[0] == "browse" || w[0] == "compare") return;
            if (w[0] != "pr" && w[0] != "issue" && w[0] != "release" && w[0] != "api" && w[0] != "fork" &&
                w[0] != "create" && w[0] != "delete" && w[0] != "sync")
                return git(c);
        }
        std::string group = w.size() > at ? w[at] : "", sub = w.size() > at + 1 ? w[at + 1] : "";
        std::string what = std::string(name) + " " + group + (sub.empty() ? "" : " " + sub);
        auto in = [&](std::initializer_list<sv> l) { return std::find(l.begin(), l.end(), sv(sub)) != l.end(); };
        auto reads = {"list", "ls", "view", "show", "diff", "status", "checks", "search"};
        bool read = std::find(reads.begin(), reads.end(), sv(sub)) != reads.end() || sub.empty();
        if (group == "mr" || group == "pr" || group == "pulls" || group == "pull") {
            if (in({"create", "new"})) return add(c.f, kOpenPr, what + " opens a pull request");
            if (in({"checkout", "co"})) return add(c.f, kWrite, what);
            if (read) return;
            return add(c.f, kReview, what + " changes a pull request");
        }
        if (group == "issue" || group == "issues" || group == "work-items") {
            if (read) return;
            return add(c.f, kTracker, what);
        }
        if (group == "release" || group == "releases") {
            if (read) return;
            if (in({"download"})) return add(c.f, kWrite, what);
            return add(c.f, kPublish, what);
        }
        if (group == "api") {
            bool fields = has_flag(c.a, c.args_from(), c.a.size(), 'f', {"--field", "--raw-field", "--input"}) ||
                          has_flag(c.a, c.args_from(), c.a.size(), 'F', {});
            std::string m = opt_value(c.a, c.args_from(), 'X', {"--method"}).value_or(fields ? "POST" : "GET");
            std::transform(m.begin(), m.end(), m.begin(), [](unsigned char ch) { return std::toupper(ch); });
            if (m != "GET" && m != "HEAD") return add(c.f, kTracker, what + " " + m + " writes to the forge");
            return;
        }
        if (group == "repo" || group == "repos" || group == "create" || group == "delete" || group == "fork" ||
            group == "sync") {
            if (read && group == "repo") return;
            if (in({"clone"})) return add(c.f, kWrite, what);
            return add(c.f, kTracker, what + " changes a repository on the forge");
        }
        add(c.f, kRun, "'" + what + "' is not a command known to cc-classify");
    }

    void gh(Call& c) {
        auto p = positionals(c.a, c.args_from(), "RqtXfFHpbBHLlswaAeSjcmT",
                             {"--repo", "--hostname", "--jq", "--template", "--method", "--field", "--raw-field",
                              "--header", "--input", "--title", "--body", "--body-file", "--base", "--head",
                              "--label", "--assignee", "--reviewer", "--milestone", "--project", "--limit",
                              "--state", "--author", "--search", "--json", "--web-url", "--template-file",
                              "--preview", "--cache", "--subject", "--match-head-commit", "--author-email",
                              "--add-label", "--remove-label", "--add-assignee", "--remove-assignee",
                              "--add-reviewer", "--remove-reviewer", "--add-project", "--remove-project",
                              "--notes", "--notes-file", "--target", "--repo-name", "--comment", "--reason"});
        if (p.empty()) return;
        std::string group = c.a[p[0]].text;
        std::string sub = p.size() > 1 ? c.a[p[1]].text : "";
        std::string what = "gh " + group + (sub.empty() ? "" : " " + sub);
        auto in = [&](std::initializer_list<sv> l) { return std::find(l.begin(), l.end(), sv(sub)) != l.end(); };
        auto note = [&](sv cls) { add(c.f, cls, what); };
        if (group == "pr") {
            if (sub == "create" || sub == "new") return note(kOpenPr);
            if (in({"merge", "review", "comment", "close", "reopen", "edit", "ready", "lock", "unlock", "update-branch"}))
                return note(kReview);
            if (sub == "checkout" || sub == "co") return note(kWrite);
            if (in({"view", "list", "diff", "checks", "status"})) return;
        } else if (group == "issue") {
            if (in({"create", "new", "edit", "comment", "close", "reopen", "delete", "transfer", "lock", "unlock", "pin",
                    "unpin", "develop"}))
                return note(kTracker);
            if (in({"view", "list", "status"})) return;
        } else if (group == "repo") {
            if (in({"view", "list"})) return;
            if (sub == "clone") {
                note(kNet);
                return note(kWrite);
            }
            if (sub == "set-default") return note(kWrite);
            if (in({"create", "new", "delete", "edit", "rename", "archive", "unarchive", "fork", "sync", "deploy-key"}))
                return note(kTracker);
        } else if (group == "release") {
            if (in({"view", "list"})) return;
            if (sub == "download") return note(kWrite);
            if (in({"create", "upload", "edit", "delete", "delete-asset"})) return note(kPublish);
        } else if (group == "run" || group == "workflow" || group == "cache") {
            if (in({"view", "list", "watch"})) return;
            if (sub == "download") return note(kWrite);
            return note(kTracker);
        } else if (group == "api") {
            std::string m = opt_value(c.a, c.args_from(), 'X', {"--method"}).value_or("");
            std::transform(m.begin(), m.end(), m.begin(), [](unsigned char ch) { return std::toupper(ch); });
            bool fields = has_flag(c.a, c.args_from(), c.a.size(), 'f', {"--field", "--raw-field", "--input"}) ||
                          has_flag(c.a, c.args_from(), c.a.size(), 'F', {});
            if (m.empty() && sub == "graphql") {
                // Every GraphQL request is a POST; only a mutation (or a body
                // from a file, which cannot be seen) changes anything.
                bool input = has_flag(c.a, c.args_from(), c.a.size(), '\0', {"--input"});
                bool mutation = false;
                for (std::size_t k = c.args_from(); k < c.a.size(); ++k)
                    if (c.a[k].dynamic || c.a[k].text.find("mutation") != std::string::npos) mutation = true;
                if (input || mutation) return add(c.f, kTracker, "gh api graphql sends a mutation (or a body from a file)");
                return;
            }
            if ((!m.empty() && m != "GET" && m != "HEAD") || (m.empty() && fields))
                return add(c.f, kTracker, "gh api " + (m.empty() ? std::string("POST") : m) + " writes to the forge");
            return;
        } else if (group == "search" || group == "status" || group == "browse" || group == "help" ||
                   group == "version" || group == "--version" || group == "completion") {
            return;
        } else if (group == "auth") {
            if (in({"status", "token"})) return;
            return note(kWrite);
        } else if (group == "config" || group == "alias") {
            if (in({"get", "list"})) return;
            return note(kWrite);
        } else if (group == "extension" || group == "ext") {
            if (in({"list", "ls", "browse", "search"})) return;
            if (in({"install", "upgrade"})) return note(kInstall);
            return note(kWrite);
        } else if (group == "gist" || group == "label" || group == "secret" || group == "variable" ||
                   group == "ruleset" || group == "project" || group == "codespace" || group == "org") {
            if (in({"view", "list", "ls", "check"})) return;
            if (group == "gist" && sub == "clone") return note(kWrite);
            return note(kTracker);
        }
        add(c.f, kRun, "'" + what + "' is not a gh command known to cc-classify");
    }

    // --- packages --------------------------------------------------------------

    struct PkgSpec {
        std::initializer_list<sv> install, remove, publish, run, read, net_write;  // net_write: network + files
        bool bare_installs = false;  // `yarn`, `bundle` alone install
        bool unknown_runs = true;    // `yarn build` runs a script
    };

    void package_manager(Call& c, std::size_t from, const PkgSpec& spec, sv sopts = "",
                         std::initializer_list<sv> lopts = {}) {
        auto p = positionals(c.a, from, sopts, lopts);
        std::string tool(c.name());
        if (p.empty()) {
            if (spec.bare_installs && !has_flag(c.a, from, c.a.size(), 'v', {"--version", "--help"}) &&
                !has_flag(c.a, from, c.a.size(), 'h', {}))
                add(c.f, kInstall, tool + " installs dependencies");
            return;
        }
        std::string sub = c.a[p[0]].text;
        auto in = [&](std::initializer_list<sv> l) { return std::find(l.begin(), l.end(), sv(sub)) != l.end(); };
        std::string what = tool + " " + sub;
        if (in(spec.install)) return add(c.f, kInstall, what);
        if (in(spec.publish)) return add(c.f, kPublish, what);
        if (in(spec.remove)) return add(c.f, kWrite, what);
        if (in(spec.run)) return add(c.f, kRun, what);
        if (in(spec.net_write)) {
            add(c.f, kNet, what);
            return add(c.f, kWrite, what);
        }
        if (in(spec.read)) return;
        add(c.f, kRun, "'" + what + "' is not known to only read");
    }

    void npm(Call& c) {
        std::size_t from = c.args_from();
        auto p = positionals(c.a, from, "Cw", {"--prefix", "--workspace", "--registry", "--loglevel", "--cache",
                                               "--userconfig", "--tag", "--otp", "--access", "--omit", "--include"});
        if (!p.empty() && c.a[p[0]].text == "audit") {
            if (p.size() > 1 && c.a[p[1]].text == "fix") return add(c.f, kInstall, "npm audit fix");
            return;
        }
        if (!p.empty() && (c.a[p[0]].text == "config" || c.a[p[0]].text == "c")) {
            if (p.size() > 1 && (c.a[p[1]].text == "get" || c.a[p[1]].text == "list" || c.a[p[1]].text == "ls")) return;
            return add(c.f, kWrite, "npm config changes settings");
        }
        if (!p.empty() && c.a[p[0]].text == "dist-tag") {
            if (p.size() > 1 && (c.a[p[1]].text == "ls" || c.a[p[1]].text == "list")) return;
            return add(c.f, kPublish, "npm dist-tag");
        }
        if (!p.empty() && c.a[p[0]].text == "version" && p.size() > 1) return add(c.f, kWrite, "npm version bumps the version");
        package_manager(c, from,
                        {{"install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall",
                          "add", "ci", "clean-install", "install-clean", "ic", "install-ci-test", "cit",
                          "install-test", "it", "update", "up", "upgrade", "udpate", "link", "ln", "rebuild", "rb",
                          "dedupe", "ddp"},
                         {"uninstall", "un", "unlink", "remove", "rm", "r", "prune", "pack", "init", "innit",
                          "create", "pkg", "cache"},
                         {"publish", "unpublish", "deprecate", "owner", "access", "star", "unstar"},
                         {"run", "run-script", "rum", "urn", "test", "t", "tst", "start", "stop", "restart", "exec",
                          "x", "explore", "edit"},
                         {"view", "v", "info", "show", "ls", "list", "ll", "la", "outdated", "search", "s", "se",
                          "find", "help", "root", "prefix", "bin", "whoami", "get", "explain", "why", "fund",
                          "doctor", "version", "docs", "home", "repo", "bugs", "query", "sbom", "help-search",
                          "completion", "diff", "team", "org", "hook"},
                         {},
                         false,
                         true},
                        "Cw", {"--prefix", "--workspace", "--registry", "--loglevel", "--cache", "--userconfig",
                               "--tag", "--otp", "--access", "--omit", "--include"});
    }

    void pnpm(Call& c) {
        package_manager(c, c.args_from(),
                        {{"add", "install", "i", "update", "up", "upgrade", "link", "ln", "import", "fetch",
                          "rebuild", "rb", "dedupe", "install-test", "it"},
                         {"remove", "rm", "uninstall", "un", "unlink", "prune", "init", "pack", "patch-commit"},
                         {"publish"},
                         {"run", "exec", "dlx", "create", "test", "t", "start", "x", "patch"},
                         {"list", "ls", "ll", "la", "why", "outdated", "view", "info", "root", "audit", "licenses",
                          "bin", "help", "store", "config", "--version", "-v", "env"},
                         {},
                         false,
                         true},
                        "Cw", {"--dir", "--filter", "--workspace", "--store-dir", "--reporter"});
    }

    void yarn(Call& c) {
        auto p = positionals(c.a, c.args_from(), "", {"--cwd", "--modules-folder"});
        if (p.size() > 1 && c.a[p[0]].text == "npm" && c.a[p[1]].text == "publish") return add(c.f, kPublish, "yarn npm publish");
        package_manager(c, c.args_from(),
                        {{"add", "install", "upgrade", "up", "upgrade-interactive", "link", "import", "dedupe",
                          "global"},
                         {"remove", "unlink", "init", "pack", "autoclean", "cache"},
                         {"publish", "owner", "tag"},
                         {"run", "exec", "dlx", "create", "test", "start", "node", "build"},
                         {"info", "list", "why", "outdated", "licenses", "config", "help", "--version", "-v", "bin",
                          "check", "audit", "workspaces"},
                         {},
                         true,
                         true},
                        "", {"--cwd", "--modules-folder"});
    }

    void bun(Call& c) {
        auto p = positionals(c.a, c.args_from(), "", {"--cwd"});
        if (!p.empty()) {
            sv s = c.a[p[0]].text;
            if (s.find('.') != sv::npos || s.find('/') != sv::npos) return add(c.f, kRun, "bun runs '" + std::string(s) + "'");
            if (s == "pm") {
                if (p.size() > 1 && (c.a[p[1]].text == "ls" || c.a[p[1]].text == "hash" || c.a[p[1]].text == "bin")) return;
            }
        }
        package_manager(c, c.args_from(),
                        {{"add", "a", "install", "i", "update", "link"},
                         {"remove", "rm", "unlink", "init"},
                         {"publish"},
                         {"run", "x", "test", "create", "build", "exec", "repl"},
                         {"--version", "-v", "--help", "outdated", "pm", "info", "why"},
                         {},
                         false,
                         true},
                        "", {"--cwd"});
    }

    void pip(Call& c, std::size_t from) {
        package_manager(c, from,
                        {{"install", "download", "wheel"},
                         {"uninstall", "cache"},
                         {},
                         {},
                         {"list", "show", "freeze", "check", "search", "index", "inspect", "debug", "config", "hash",
                          "help", "--version", "-V"},
                         {},
                         false,
                         true},
                        "rcet", {"--requirement", "--constraint", "--target", "--prefix", "--root", "--index-url",
                                 "--extra-index-url", "--python", "--log"});
    }

    void uv(Call& c) {
        auto p = positionals(c.a, c.args_from(), "p", {"--python", "--directory", "--project", "--index-url"});
        if (p.empty()) return;
        std::string s = c.a[p[0]].text;
        std::string s2 = p.size() > 1 ? c.a[p[1]].text : "";
        if (s == "pip") {
            if (s2 == "install" || s2 == "sync") return add(c.f, kInstall, "uv pip " + s2);
            if (s2 == "uninstall" || s2 == "compile") return add(c.f, kWrite, "uv pip " + s2);
            return;
        }
        if (s == "tool") {
            if (s2 == "install" || s2 == "upgrade") return add(c.f, kInstall, "uv tool " + s2);
            if (s2 == "run") return add(c.f, kRun, "uv tool run");
            if (s2 == "list" || s2 == "dir") return;
            return add(c.f, kWrite, "uv tool " + s2);
        }
        if (s == "python") {
            if (s2 == "install") return add(c.f, kInstall, "uv python install");
            if (s2 == "list" || s2 == "find" || s2 == "dir") return;
            return add(c.f, kWrite, "uv python " + s2);
        }
        if (s == "add" || s == "sync" || s == "lock") return add(c.f, kInstall, "uv " + s);
        if (s == "remove" || s == "venv" || s == "init" || s == "build" || s == "cache") return add(c.f, kWrite, "uv " + s);
        if (s == "publish") return add(c.f, kPublish, "uv publish");
        if (s == "run") return add(c.f, kRun, "uv run");
        if (s == "tree" || s == "version" || s == "help" || s == "--version") return;
        add(c.f, kRun, "'uv " + s + "' is not known to only read");
    }

    void simple_pm(Call& c, std::initializer_list<sv> install, std::initializer_list<sv> remove,
                   std::initializer_list<sv> publish, std::initializer_list<sv> run, std::initializer_list<sv> read,
                   std::initializer_list<sv> net_write = {}, bool bare_installs = false, sv sopts = "",
                   std::initializer_list<sv> lopts = {}) {
        package_manager(c, c.args_from(), {install, remove, publish, run, read, net_write, bare_installs, true}, sopts,
                        lopts);
    }

    void p_poetry(Call& c) {
        simple_pm(c, {"add", "install", "update", "lock", "self"}, {"remove", "build", "init", "new", "cache"},
                  {"publish"}, {"run", "shell"}, {"show", "check", "env", "version", "config", "search", "about", "list", "help", "--version"},
                  {}, false, "C", {"--directory", "--project"});
    }
    void p_pipx(Call& c) {
        simple_pm(c, {"install", "inject", "upgrade", "upgrade-all", "reinstall", "reinstall-all", "install-all"},
                  {"uninstall", "uninstall-all", "uninject", "ensurepath"}, {}, {"run"}, {"list", "environment", "--version"});
    }
    void p_conda(Call& c) {
        auto p = positionals(c.a, c.args_from(), "npc", {"--name", "--prefix", "--channel"});
        if (p.size() > 1 && c.a[p[0]].text == "env") {
            std::string s = c.a[p[1]].text;
            if (s == "create" || s == "update") return add(c.f, kInstall, std::string(c.name()) + " env " + s);
            if (s == "list" || s == "export") return;
            return add(c.f, kWrite, std::string(c.name()) + " env " + s);
        }
        simple_pm(c, {"install", "create", "update", "upgrade"}, {"remove", "uninstall", "clean", "init", "config"}, {},
                  {"run", "activate"}, {"list", "info", "search", "--version", "doctor", "compare"}, {}, false, "npc",
                  {"--name", "--prefix", "--channel"});
    }
    void p_apt(Call& c) {
        simple_pm(c, {"install", "reinstall", "upgrade", "dist-upgrade", "full-upgrade", "build-dep", "satisfy",
                      "remove", "purge", "autoremove", "autopurge", "markauto", "safe-upgrade"},
                  {"clean", "autoclean", "download", "source", "edit-sources"}, {}, {},
                  {"list", "search", "show", "showsrc", "policy", "depends", "rdepends", "changelog", "madison",
                   "pkgnames", "dump", "stats", "showpkg", "help", "--version", "check", "moo"},
                  {"update"}, false, "oct", {"--option", "--config-file", "--target-release"});
    }
    void p_dpkg(Call& c) {
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
            sv t = c.a[k].text;
            if (t == "-i" || t == "--install" || t == "--unpack" || t == "-r" || t == "--remove" || t == "-P" ||
                t == "--purge" || t == "--configure" || t == "-a" || t == "--set-selections")
                return add(c.f, kInstall, "dpkg " + std::string(t));
        }
    }
    void p_dnf(Call& c) {
        simple_pm(c, {"install", "in", "reinstall", "update", "upgrade", "up", "groupinstall", "localinstall",
                      "downgrade", "distro-sync", "swap", "remove", "erase", "rm", "autoremove", "dup", "patch",
                      "dist-upgrade", "group", "module", "addlock"},
                  {"makecache", "clean", "config-manager", "refresh", "ref", "mark"}, {}, {},
                  {"list", "info", "search", "se", "provides", "whatprovides", "repolist", "lr", "check-update",
                   "history", "repoquery", "if", "--version", "help", "deplist", "what-provides", "packages", "pa"},
                  {}, false, "", {"--setopt", "--releasever", "--installroot"});
    }
    void p_apk(Call& c) {
        simple_pm(c, {"add", "del", "upgrade", "fix"}, {"cache"}, {}, {}, {"info", "search", "list", "policy", "version", "dot", "stats", "--version"},
                  {"update", "fetch"});
    }
    void p_pacman(Call& c) {
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
            const std::string& t = c.a[k].text;
            if (t.size() < 2 || t[0] != '-' || t[1] == '-') {
                if (t == "--sync" || t == "--upgrade" || t == "--remove") return add(c.f, kInstall, std::string(c.name()) + " " + t);
                continue;
            }
            char op = t[1];
            if (op == 'S' && t.find_first_of("sigl", 2) != std::string::npos && t.find('y') == std::string::npos) return;
            if (op == 'S' || op == 'U' || op == 'R') return add(c.f, kInstall, std::string(c.name()) + " " + t);
        }
        if (c.name() != "pacman" && c.a.size() == c.args_from()) add(c.f, kInstall, std::string(c.name()) + " upgrades the system");
    }
    void p_brew(Call& c) {
        simple_pm(c, {"install", "reinstall", "upgrade", "tap", "uninstall", "remove", "rm", "link", "unlink", "bundle",
                      "pin", "untap", "autoremove"},
                  {"cleanup", "services"}, {}, {"sh", "ruby", "irb", "exec"},
                  {"list", "ls", "info", "search", "outdated", "deps", "uses", "config", "doctor", "--prefix",
                   "prefix", "home", "leaves", "desc", "cat", "--version", "help", "commands", "tap-info", "--cellar",
                   "--cache", "shellenv", "formulae", "casks", "log"},
                  {"update", "fetch"});
    }
    void p_port(Call& c) {
        simple_pm(c, {"install", "upgrade", "uninstall", "selfupdate", "activate", "deactivate", "sync"}, {"clean"}, {}, {},
                  {"list", "info", "search", "installed", "outdated", "contents", "deps", "provides", "variants", "echo", "version"});
    }
    void p_snap(Call& c) {
        simple_pm(c, {"install", "remove", "refresh", "update", "uninstall", "upgrade", "revert", "enable", "disable"},
                  {"repair"}, {}, {"run"}, {"list", "info", "search", "find", "remote-ls", "version", "--version", "history", "services", "connections", "ps"});
    }
    void p_nix(Call& c) {
        if (c.name() == "nix-env") {
            for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
                sv t = c.a[k].text;
                if (t == "-q" || t == "--query") return;
                if (t.size() > 1 && t[0] == '-' && t[1] != '-' && t.find_first_of("iuep") != sv::npos && t.find('q') == sv::npos)
                    return add(c.f, kInstall, "nix-env " + std::string(t));
                if (t == "--install" || t == "--upgrade" || t == "--uninstall") return add(c.f, kInstall, "nix-env " + std::string(t));
            }
            return;
        }
        if (c.name() == "nix-shell" || c.name() == "nix-build") return add(c.f, kRun, std::string(c.name()));
        auto p = positionals(c.a, c.args_from(), "", {"--option", "--extra-experimental-features"});
        if (p.empty()) return;
        std::string s = c.a[p[0]].text;
        std::string s2 = p.size() > 1 ? c.a[p[1]].text : "";
        if (s == "profile" && (s2 == "install" || s2 == "upgrade" || s2 == "remove" || s2 == "add"))
            return add(c.f, kInstall, "nix profile " + s2);
        if (s == "search" || s == "eval" || s == "show-config" || s == "path-info" || s == "why-depends" ||
            s == "--version" || (s == "flake" && (s2 == "show" || s2 == "metadata" || s2 == "info")) ||
            (s == "profile" && (s2 == "list" || s2 == "history")))
            return;
        add(c.f, kRun, "nix " + s);
    }
    void p_cargo(Call& c) {
        auto p = positionals(c.a, c.args_from(), "pjZ", {"--manifest-path", "--package", "--jobs", "--target", "--features", "--config", "--color", "-Z"});
        if (!p.empty() && c.a[p[0]].text == "fmt") {
            if (has_flag(c.a, c.args_from(), c.a.size(), 0, {"--check"})) return;
            return add(c.f, kWrite, "cargo fmt rewrites files");
        }
        if (!p.empty() && c.a[p[0]].text.size() > 1 && c.a[p[0]].text[0] == '+') {  // cargo +nightly build
            Args rest_args = {Arg{"cargo", false}};
            rest_args.insert(rest_args.end(), c.a.begin() + static_cast<std::ptrdiff_t>(p[0] + 1), c.a.end());
            return command(rest_args, 0, c.f, c.ctx, c.depth);
        }
        simple_pm(c, {"install", "add", "binstall", "uninstall"}, {"remove", "rm", "new", "init", "clean", "package"},
                  {"publish", "yank", "owner", "login", "logout"},
                  {"build", "b", "run", "r", "test", "t", "bench", "check", "c", "clippy", "doc", "d", "fix", "rustc",
                   "rustdoc", "miri", "nextest", "watch", "expand", "llvm-cov", "tarpaulin", "xtask"},
                  {"tree", "metadata", "search", "locate-project", "version", "pkgid", "verify-project", "--version",
                   "-V", "help", "--list", "read-manifest", "info", "report"},
                  {"fetch", "update", "generate-lockfile", "vendor"}, false, "pjZ",
                  {"--manifest-path", "--package", "--jobs", "--target", "--features", "--config", "--color"});
    }
    void p_go(Call& c) {
        auto p = positionals(c.a, c.args_from(), "C", {});
        if (p.size() > 1 && c.a[p[0]].text == "mod") {
            std::string s = c.a[p[1]].text;
            if (s == "graph" || s == "why" || s == "verify") return;
            if (s == "download" || s == "tidy" || s == "vendor") {
                add(c.f, kNet, "go mod " + s);
                return add(c.f, kWrite, "go mod " + s);
            }
            return add(c.f, kWrite, "go mod " + s);
        }
        if (!p.empty() && c.a[p[0]].text == "env" && has_flag(c.a, c.args_from(), c.a.size(), 'w', {}))
            return add(c.f, kWrite, "go env -w");
        simple_pm(c, {"install", "get"}, {"clean", "fmt", "fix", "work", "mod"}, {},
                  {"build", "run", "test", "generate", "vet", "tool", "bug"},
                  {"version", "env", "list", "doc", "help", "telemetry"}, {}, false, "C", {});
    }
    void p_gem(Call& c) {
        simple_pm(c, {"install", "i", "update"}, {"uninstall", "build", "cleanup", "pristine"}, {"push", "yank", "owner", "signin"}, {},
                  {"list", "search", "info", "query", "contents", "environment", "specification", "--version", "help", "which", "outdated", "dependency"});
    }
    void p_bundle(Call& c) {
        simple_pm(c, {"install", "add", "update", "i", "lock", "binstubs"}, {"remove", "clean", "init", "gem", "cache", "package"},
                  {}, {"exec", "console", "open"},
                  {"list", "show", "info", "outdated", "check", "config", "--version", "version", "help", "platform", "doctor", "licenses"},
                  {}, true);
    }
    void p_composer(Call& c) {
        simple_pm(c, {"install", "require", "update", "create-project", "global", "reinstall", "upgrade", "u", "i"},
                  {"remove", "rm", "dump-autoload", "init", "clear-cache"}, {}, {"run-script", "run", "exec"},
                  {"show", "info", "outdated", "validate", "diagnose", "--version", "licenses", "depends", "why", "why-not", "search", "audit", "check-platform-reqs", "config", "list", "help"},
                  {}, false, "d", {"--working-dir"});
    }
    void p_dotnet(Call& c) {
        auto p = positionals(c.a, c.args_from(), "", {});
        if (p.empty()) return;
        std::string s = c.a[p[0]].text;
        std::string s2 = p.size() > 1 ? c.a[p[1]].text : "";
        std::string s3 = p.size() > 2 ? c.a[p[2]].text : "";
        if ((s == "add" && (s2 == "package" || s3 == "package")) || s == "restore" || (s == "tool" && (s2 == "install" || s2 == "update")) ||
            (s == "workload" && (s2 == "install" || s2 == "update")))
            return add(c.f, kInstall, "dotnet " + s + " " + s2);
        if (s == "nuget" && s2 == "push") return add(c.f, kPublish, "dotnet nuget push");
        if (s == "--version" || s == "--info" || s == "--list-sdks" || s == "--list-runtimes" || (s == "list" && s3 == "package") || s == "help")
            return;
        if (s == "new" || s == "remove" || s == "sln" || s == "format") return add(c.f, kWrite, "dotnet " + s);
        add(c.f, kRun, "dotnet " + s);
    }
    void p_build_publish(Call& c) {  // mvn, gradle: publish/deploy goals publish
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
            sv t = c.a[k].text;
            if (t == "deploy" || starts_with(t, "publish") || t.find(":deploy") != sv::npos || t.find(":publish") != sv::npos)
                return add(c.f, kPublish, std::string(c.name()) + " " + std::string(t));
        }
        if (c.a.size() == c.args_from() + 1 && (c.a.back().text == "--version" || c.a.back().text == "-v" || c.a.back().text == "-version"))
            return;
        add(c.f, kRun, std::string(c.name()) + " runs a build");
    }
    void p_publisher(Call& c) {  // twine, flit, hatch, vsce, ovsx, deno, helm, docker-style push tools
        auto p = positionals(c.a, c.args_from(), "r", {"--repository", "--repository-url"});
        std::string s = p.empty() ? "" : c.a[p[0]].text;
        if (s == "upload" || s == "publish" || s == "push" || s == "release") return add(c.f, kPublish, std::string(c.name()) + " " + s);
        if (s == "check" || s == "--version" || s == "version" || s == "ls" || s == "show") return;
        if (c.name() == "deno") {
            if (s == "install" || s == "add" || s == "cache") return add(c.f, kInstall, "deno " + s);
            if (s == "fmt" && !has_flag(c.a, c.args_from(), c.a.size(), 0, {"--check"})) return add(c.f, kWrite, "deno fmt");
            if (s == "info" || s == "doc" || s == "types" || s == "lint") return;
        }
        if (c.name() == "hatch" || c.name() == "flit") {
            if (s == "build") return add(c.f, kWrite, std::string(c.name()) + " build");
        }
        add(c.f, kRun, std::string(c.name()) + " " + s);
    }
    void p_installer(Call& c) {  // rustup, nvm, pyenv, asdf, mise, volta, sdk, opam, cabal, stack, luarocks, cpanm, mix
        auto p = positionals(c.a, c.args_from(), "", {});
        std::string s = p.empty() ? "" : c.a[p[0]].text;
        std::string s2 = p.size() > 1 ? c.a[p[1]].text : "";
        if (c.name() == "cpan" || c.name() == "cpanm") return add(c.f, kInstall, std::string(c.name()));
        if (c.name() == "mix") {
            if (s == "deps.get" || s == "deps.update" || s == "archive.install" || s == "local.hex") return add(c.f, kInstall, "mix " + s);
            if (s == "hex.publish") return add(c.f, kPublish, "mix hex.publish");
            return add(c.f, kRun, "mix " + s);
        }
        if (s == "install" || s == "add" || s == "update" || s == "upgrade" || s == "use" || s == "global" ||
            s == "local" || s == "default" || (s == "toolchain" && (s2 == "install" || s2 == "add")) ||
            (s == "component" && s2 == "add") || (s == "target" && s2 == "add") || s == "plugin" || s == "pin")
            return add(c.f, kInstall, std::string(c.name()) + " " + s);
        if (s == "list" || s == "ls" || s == "show" || s == "current" || s == "which" || s == "version" ||
            s == "versions" || s == "--version" || s == "help" || s == "info" || s == "search" || s.empty() ||
            s == "ls-remote" || s == "doctor")
            return;
        if (s == "run" || s == "exec" || s == "x" || s == "shell") return add(c.f, kRun, std::string(c.name()) + " " + s);
        add(c.f, kWrite, std::string(c.name()) + " " + s);
    }

    // --- interpreters and runners ----------------------------------------------

    void python(Call& c) {
        std::size_t from = c.args_from();
        for (std::size_t k = from; k < c.a.size(); ++k) {
            const std::string& t = c.a[k].text;
            if (t == "-V" || t == "--version" || t == "-VV") return;
            if (t == "-c") return add(c.f, kRun, std::string(c.name()) + " -c runs inline code");
            if (t == "-m" && k + 1 < c.a.size()) {
                std::string m = c.a[k + 1].text;
                if (m == "pip") return pip(c, k + 2);
                if (m == "venv" || m == "virtualenv") return add(c.f, kWrite, "python -m venv creates a directory");
                if (m == "json.tool" || m == "tokenize" || m == "pydoc" || m == "site" || m == "sysconfig" || m == "platform")
                    return;
                if (m == "twine") {
                    Args rest_args = {Arg{"twine", false}};
                    rest_args.insert(rest_args.end(), c.a.begin() + static_cast<std::ptrdiff_t>(k + 2), c.a.end());
                    return command(rest_args, 0, c.f, c.ctx, c.depth);
                }
                if (m == "http.server") add(c.f, kNet, "python -m http.server serves files");
                return add(c.f, kRun, "python -m " + m);
            }
            if (!is_opt(c.a[k])) return add(c.f, kRun, std::string(c.name()) + " runs '" + t + "'");
        }
        add(c.f, kRun, std::string(c.name()) + " runs code read from its input");
    }

    void interpreter(Call& c) {
        std::size_t from = c.args_from();
        if (c.a.size() == from + 1) {
            sv t = c.a[from].text;
            if (t == "--version" || t == "-v" || t == "-V" || t == "-version" || t == "version" || t == "--help" || t == "-h")
                return;
        }
        add(c.f, kRun, std::string(c.name()) + " runs code");
    }

    void docker(Call& c) {
        std::size_t from = c.args_from();
        auto p = positionals(c.a, from, "Hcl", {"--host", "--context", "--config", "--log-level", "--tlscacert", "--tlscert", "--tlskey"});
        std::string s = p.empty() ? "" : c.a[p[0]].text;
        std::string tool(c.name());
        if (s == "push") return add(c.f, kPublish, tool + " push publishes an image");
        if (s == "--version" || s == "version" || s.empty()) {
            if (s.empty() && c.a.size() > from) return add(c.f, kRun, tool + " talks to a root daemon");
            return;
        }
        add(c.f, kRun, tool + " " + s + " acts through the container daemon");
        if (s == "pull" || s == "build" || s == "login") add(c.f, kNet, tool + " " + s);
        if (s != "run" && s != "create" && s != "exec" && !(s == "container" && p.size() > 1)) return;
        for (std::size_t k = p[0] + 1; k < c.a.size(); ++k) {
            const std::string& t = c.a[k].text;
            std::string next = k + 1 < c.a.size() ? c.a[k + 1].text : "";
            auto val = [&](sv name) -> std::optional<std::string> {
                if (t == name) return next;
                if (starts_with(t, std::string(name) + "=")) return t.substr(name.size() + 1);
                return std::nullopt;
            };
            if (t == "--privileged") return add(c.f, kEscape, tool + " --privileged");
            for (sv ns : {"--pid", "--net", "--network", "--ipc", "--uts", "--userns", "--cgroupns"})
                if (auto v = val(ns); v && *v == "host") return add(c.f, kEscape, tool + " " + std::string(ns) + "=host");
            if (auto v = val("--cap-add")) {
                std::string cap = *v;
                std::transform(cap.begin(), cap.end(), cap.begin(), [](unsigned char ch) { return std::toupper(ch); });
                if (cap == "ALL" || cap.find("SYS_ADMIN") != std::string::npos || cap.find("SYS_MODULE") != std::string::npos ||
                    cap.find("SYS_PTRACE") != std::string::npos || cap.find("DAC_READ_SEARCH") != std::string::npos ||
                    cap.find("SYS_RAWIO") != std::string::npos)
                    return add(c.f, kEscape, tool + " --cap-add " + *v);
            }
            if (auto v = val("--security-opt"); v && (v->find("unconfined") != std::string::npos || v->find("disable") != std::string::npos))
                return add(c.f, kEscape, tool + " --security-opt " + *v);
            if (auto v = val("--device")) return add(c.f, kEscape, tool + " --device " + *v);
            std::optional<std::string> vol = val("-v");
            if (!vol) vol = val("--volume");
            if (!vol && starts_with(t, "-v") && t.size() > 2 && t[2] != '-') vol = t.substr(2);
            std::optional<std::string> mnt = val("--mount");
            std::string src;
            if (vol) src = vol->substr(0, vol->find(':'));
            if (mnt) {
                auto at = mnt->find("source=");
                if (at == std::string::npos) at = mnt->find("src=");
                if (at != std::string::npos) {
                    auto start = mnt->find('=', at) + 1;
                    src = mnt->substr(start, mnt->find(',', start) - start);
                }
            }
            if (!src.empty()) {
                std::string n = normalize_path(src);
                if (n == "/" || n == "/var/run/docker.sock" || n == "/run/docker.sock" || n == "/proc" || n == "/sys" ||
                    n == "/dev" || n == "/etc" || n == "/root" || n == "/boot" || n == "/var/run" || n == "/run" ||
                    starts_with(n, "/run/containerd") || starts_with(n, "/var/lib/docker"))
                    return add(c.f, kEscape, tool + " mounts the host path '" + src + "'");
            }
        }
    }

    void kubectl(Call& c) {
        auto p = positionals(c.a, c.args_from(), "nlcs", {"--namespace", "--context", "--cluster", "--kubeconfig", "--selector", "--server", "--output", "-o", "--user"});
        std::string s = p.empty() ? "" : c.a[p[0]].text;
        static constexpr auto ro = sorted_names({"get", "describe", "logs", "version", "explain", "top",
                                                  "api-resources", "api-versions", "cluster-info", "diff", "events", "auth", ""});
        if (contains(ro, s)) return add(c.f, kNet, "kubectl " + s + " reads the cluster");
        if (s == "config" && p.size() > 1 && (c.a[p[1]].text == "view" || c.a[p[1]].text == "get-contexts" || c.a[p[1]].text == "current-context"))
            return;
        add(c.f, kRun, "kubectl " + s + " acts on the cluster");
    }

    void ip(Call& c) {
        auto p = positionals(c.a, c.args_from(), "n", {"-netns"});
        for (std::size_t j = 0; j < p.size(); ++j) {
            sv t = c.a[p[j]].text;
            if (t == "netns" && j + 1 < p.size() && c.a[p[j + 1]].text == "exec")
                return add(c.f, kEscape, "ip netns exec enters a network namespace");
            if (t == "add" || t == "del" || t == "delete" || t == "set" || t == "flush" || t == "change" ||
                t == "replace" || t == "append" || t == "a")
                return add(c.f, kPriv, "ip " + std::string(t) + " changes the network configuration");
        }
    }

    void hostname(Call& c) {
        auto p = positionals(c.a, c.args_from(), "F", {"--file"});
        if (!p.empty() || has_flag(c.a, c.args_from(), c.a.size(), 'F', {"--file"}))
            add(c.f, kPriv, "hostname sets the host name");
    }

    void editor(Call& c) { add(c.f, kWrite, std::string(c.name()) + " edits files"); }
    void escape(Call& c) { add(c.f, kEscape, std::string(c.name()) + " leaves the sandbox's namespaces or root"); }
    void privilege(Call& c) { add(c.f, kPriv, std::string(c.name()) + " changes users, groups or capabilities"); }

    static const Handler* handler(sv name) {
        static constexpr auto table = make_table<Handler>([](auto set) {
            set({"env"}, &Analyzer::w_env);
            set({"nohup", "builtin", "nocorrect", "noglob", "unbuffer", "catchsegv", "coproc"}, &Analyzer::w_simple);
            set({"command"}, &Analyzer::w_command);
            set({"exec"}, &Analyzer::w_exec);
            set({"time"}, &Analyzer::w_time);
            set({"timeout", "gtimeout"}, &Analyzer::w_timeout);
            set({"nice"}, &Analyzer::w_nice);
            set({"ionice"}, &Analyzer::w_ionice);
            set({"stdbuf"}, &Analyzer::w_stdbuf);
            set({"setsid"}, &Analyzer::w_setsid);
            set({"taskset"}, &Analyzer::w_taskset);
            set({"chrt"}, &Analyzer::w_chrt);
            set({"flock"}, &Analyzer::w_flock);
            set({"watch"}, &Analyzer::w_watch);
            set({"xargs"}, &Analyzer::w_xargs);
            set({"sudo", "sudoedit"}, &Analyzer::w_sudo);
            set({"doas"}, &Analyzer::w_doas);
            set({"su", "runuser"}, &Analyzer::w_su);
            set({"pkexec"}, &Analyzer::w_pkexec);
            set({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "busybox"}, &Analyzer::w_shell);
            set({"eval"}, &Analyzer::w_eval);
            set({"trap"}, &Analyzer::w_trap);
            set({"source", "."}, &Analyzer::w_source);
            set({"find"}, &Analyzer::w_find);
            set({"rm", "unlink"}, &Analyzer::f_rm);
            set({"cp", "mv", "ln", "install", "truncate", "touch", "mkdir", "rmdir", "chown", "chgrp", "shred",
                 "mkfifo", "mknod", "patch", "split", "csplit", "zip", "rename", "dos2unix", "unix2dos", "sponge",
                 "ar", "cpio", "7z", "7za", "rar", "unrar", "setfacl", "chattr", "touch", "link", "fallocate",
                 "git-lfs", "javac", "gcc", "g++", "cc", "c++", "clang", "clang++", "rustc", "tsc", "ld", "as",
                 "prettier", "black", "gofmt", "rustfmt", "clang-format", "isort",
                 "autopep8", "yapf", "shfmt", },
                &Analyzer::f_write);
            set({"chmod"}, &Analyzer::f_chmod);
            set({"dd"}, &Analyzer::f_dd);
            set({"tee"}, &Analyzer::f_tee);
            set({"sed", "gsed"}, &Analyzer::f_sed);
            set({"man"}, &Analyzer::f_man);
            set({"xxd"}, &Analyzer::f_xxd);
            set({"awk", "gawk", "mawk", "nawk"}, &Analyzer::f_awk);
            set({"sort"}, &Analyzer::f_sort);
            set({"uniq"}, &Analyzer::f_uniq);
            set({"tar", "bsdtar", "gtar"}, &Analyzer::f_tar);
            set({"unzip"}, &Analyzer::f_unzip);
            set({"gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4", "lzma", "zcat",
                 "bzcat", "xzcat", "zstdcat", "pigz", "brotli"},
                &Analyzer::f_compress);
            set({"mktemp"}, &Analyzer::f_mktemp);
            set({"yq"}, &Analyzer::f_yq);
            set({"date"}, &Analyzer::f_date);
            set({"crontab"}, &Analyzer::f_crontab);
            set({"mount", "umount"}, &Analyzer::f_mount);
            set({"sysctl"}, &Analyzer::f_sysctl);
            set({"kill", "pkill", "killall"}, &Analyzer::f_kill);
            set({"shutdown", "reboot", "poweroff", "halt", "kexec", "killall5"}, &Analyzer::f_power);
            set({"init", "telinit"}, &Analyzer::f_init);
            set({"systemctl"}, &Analyzer::f_systemctl);
            set({"wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk", "mke2fs", "mkswap",
                 "blkdiscard", "mkdosfs", "mkntfs", "cryptsetup", "pvcreate", "vgcreate", "lvremove", "zpool",
                 "tune2fs", "e2fsck", "fsck", "badblocks", "hdparm", "nvme", "sdparm"},
                &Analyzer::f_disk);
            set({"curl"}, &Analyzer::n_curl);
            set({"wget", "wget2"}, &Analyzer::n_wget);
            set({"http", "https", "xh", "xhs"}, &Analyzer::n_httpie);
            set({"ssh", "mosh", "autossh"}, &Analyzer::n_ssh);
            set({"scp", "rsync", "sftp", "ftp", "rclone"}, &Analyzer::n_copy);
            set({"git"}, &Analyzer::git);
            set({"gh"}, &Analyzer::gh);
            set({"glab", "tea", "hub", "az"}, &Analyzer::forge);
            set({"npm"}, &Analyzer::npm);
            set({"pnpm"}, &Analyzer::pnpm);
            set({"yarn", "yarnpkg"}, &Analyzer::yarn);
            set({"bun"}, &Analyzer::bun);
            set({"uv"}, &Analyzer::uv);
            set({"poetry"}, &Analyzer::p_poetry);
            set({"pipx"}, &Analyzer::p_pipx);
            set({"conda", "mamba", "micromamba"}, &Analyzer::p_conda);
            set({"apt", "apt-get", "aptitude", "nala"}, &Analyzer::p_apt);
            set({"dpkg"}, &Analyzer::p_dpkg);
            set({"dnf", "yum", "microdnf", "zypper", "tdnf", "rpm-ostree"}, &Analyzer::p_dnf);
            set({"apk"}, &Analyzer::p_apk);
            set({"pacman", "yay", "paru"}, &Analyzer::p_pacman);
            set({"brew"}, &Analyzer::p_brew);
            set({"port"}, &Analyzer::p_port);
            set({"snap", "flatpak"}, &Analyzer::p_snap);
            set({"nix-env", "nix", "nix-shell", "nix-build"}, &Analyzer::p_nix);
            set({"cargo"}, &Analyzer::p_cargo);
            set({"go"}, &Analyzer::p_go);
            set({"gem"}, &Analyzer::p_gem);
            set({"bundle", "bundler"}, &Analyzer::p_bundle);
            set({"composer"}, &Analyzer::p_composer);
            set({"dotnet"}, &Analyzer::p_dotnet);
            set({"mvn", "mvnw", "./mvnw", "gradle", "gradlew", "./gradlew"}, &Analyzer::p_build_publish);
            set({"twine", "flit", "hatch", "vsce", "ovsx", "deno", "helm", "skopeo"}, &Analyzer::p_publisher);
            set({"rustup", "nvm", "pyenv", "asdf", "mise", "rtx", "volta", "sdk", "opam", "cabal", "stack",
                 "luarocks", "cpan", "cpanm", "mix", "fnm", "n", "corepack", "goenv", "rbenv", "jenv", "pip-sync"},
                &Analyzer::p_installer);
            set({"node", "nodejs", "ruby", "perl", "php", "lua", "luajit", "Rscript", "R", "julia", "java",
                 "kotlin", "scala", "groovy", "swift", "osascript", "pwsh", "powershell", "tclsh", "wish",
                 "expect", "guile", "racket", "sbcl", "ghci", "runghc", "elixir", "erl", "escript", "iex", "irb",
                 "jshell", "fish", "csh", "tcsh", "nu", "xonsh", "ts-node", "tsx", "esno", "bunx", "npx", "uvx",
                 "pytest", "py.test", "jest", "vitest", "mocha", "tox", "nox", "make", "gmake", "bmake", "cmake",
                 "ninja", "meson", "just", "task", "rake", "bazel", "bazelisk", "buck", "buck2", "sbt", "ant",
                 "terraform", "tofu", "ansible", "ansible-playbook", "pulumi", "vagrant", "packer",
                 "docker-compose", "parallel", "entr", "watchexec", "screen", "tmux", "at", "batch", "qemu-system-x86_64",
                 "strace", "ltrace", "gdb", "lldb", "valgrind", "perf", "ctest", "cypress", "playwright",
                 "webpack", "vite", "esbuild", "rollup", "turbo", "nx", "lerna", "tsc-watch", "nodemon", "pm2",
                 "gunicorn", "uvicorn", "flask", "django-admin", "manage.py", "rails", "php-fpm", "nginx",
                 "apachectl", "redis-server", "mysqld", "postgres", "pg_ctl", "mysql", "psql", "sqlite3",
                 "mongosh", "redis-cli", "jupyter", "ipython", "conda-run", "direnv", "service", "ffmpeg",
                 "convert", "magick", "pandoc", "latexmk", "pdflatex", "xelatex", "emcc", "wasm-pack",
                 "eslint", "tslint", "stylelint", "mypy", "pyright", "pylint", "flake8", "ruff",
                 "golangci-lint", "shellcheck", "hadolint", "semgrep", "bandit", "codespell", "pre-commit",
                 "husky", "lefthook", "act", "podman-compose", "minikube", "kind", "k3d", "skaffold", "tilt",
                 "aws", "gcloud", "doctl", "flyctl", "heroku", "vercel", "netlify", "wrangler", "firebase",
                 "supabase", "railway", "stripe"},
                &Analyzer::interpreter);
            set({"docker", "podman", "nerdctl"}, &Analyzer::docker);
            set({"kubectl", "oc"}, &Analyzer::kubectl);
            set({"ip"}, &Analyzer::ip);
            set({"hostname"}, &Analyzer::hostname);
            set({"vi", "vim", "nvim", "nano", "emacs", "ed", "ex", "pico", "micro", "joe", "kak", "hx", "code",
                 "subl", },
                &Analyzer::editor);
            set({"nsenter", "unshare", "chroot", "pivot_root", "switch_root", "insmod", "modprobe", "rmmod",
                 "capsh", "systemd-nspawn", "lxc-attach", "lxc-execute", "criu", },
                &Analyzer::escape);
            set({"passwd", "chpasswd", "useradd", "usermod", "userdel", "groupadd", "groupmod", "groupdel",
                 "gpasswd", "adduser", "deluser", "addgroup", "delgroup", "newgrp", "sg", "setcap", "setpriv",
                 "visudo", "chsh", "chfn", "vipw", "vigr", "newuidmap", "newgidmap"},
                &Analyzer::privilege);
        });
        static_assert(consistent(table));
        return lookup(table, name);
    }

    static bool readonly_command(sv name) {
        static constexpr auto table = sorted_names({
            "ls", "ll", "la", "dir", "vdir", "cat", "tac", "head", "tail", "less", "more", "most", "grep", "egrep",
            "fgrep", "rg", "ag", "ack", "wc", "cut", "tr", "diff", "diff3", "sdiff", "cmp", "comm", "file", "stat",
            "du", "df", "pwd", "echo", "printf", "true", "false", "test", "[", ":", "which", "type", "whereis",
            "whoami", "id", "groups", "uname", "printenv", "basename", "dirname", "realpath", "readlink", "jq",
            "gojq", "jaq", "column", "nl", "od", "xxd", "hexdump", "hd", "strings", "md5sum", "sha1sum", "sha224sum",
            "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "base64", "base32", "basenc", "seq",
            "sleep", "cd", "pushd", "popd", "dirs", "export", "set", "unset", "shopt", "read", "readarray",
            "mapfile", "local", "declare", "typeset", "readonly", "alias", "unalias", "shift", "return", "exit",
            "break", "continue", "getopts", "hash", "ulimit", "umask", "history", "help", "man", "info", "whatis",
            "apropos", "ps", "pgrep", "pidof", "top", "htop", "btop", "free", "uptime", "w", "who", "last",
            "lastlog", "lsof", "ss", "netstat", "lsblk", "blkid", "findmnt", "tree", "fd", "fdfind", "locate",
            "plocate", "expr", "bc", "dc", "factor", "numfmt", "fold", "fmt", "pr", "expand", "unexpand", "paste",
            "join", "rev", "shuf", "look", "iconv", "yes", "nproc", "arch", "lscpu", "lsmod", "lspci", "lsusb",
            "dmesg", "journalctl", "getent", "locale", "tput", "stty", "clear", "reset", "wait", "jobs", "fg", "bg",
            "disown", "times", "caller", "compgen", "complete", "let", "ldd", "nm", "objdump", "readelf", "size",
            "tokei", "cloc", "scc", "tty", "logname", "users", "hostid", "uptime", "vmstat", "iostat",
            "mpstat", "sar", "pstree", "getconf", "ulimit", "cal", "ncal", "bat", "batcat", "exa", "eza", "lsd",
            "delta", "difft", "colordiff", "icdiff", "diffstat", "wdiff", "tldr", "cheat", "highlight", "pygmentize",
            "xmllint", "csvlook", "csvstat", "mlr", "xsv", "qsv", "exiftool", "identify",
            "ffprobe", "mediainfo", "pdfinfo", "pdftotext", "glow", "mdcat", "fzf", "sk",
            "zgrep", "zless", "zmore", "bzgrep", "xzgrep", "zdiff", "lsattr", "getfacl", "namei", "lslocks",
            "lsns", "lsipc", "ipcs", "free", "systemd-detect-virt", 
            "printf", "shasum", "type", "true", "nvidia-smi",
            "sensors", "dmidecode", "lshw", "inxi", "neofetch", "fastfetch", "screenfetch", "wc", "tail", "apt-cache", "dpkg-query", "rpm", "apt-file", "pydoc", "pydoc3", "perldoc",
            "ri", "javap", "otool", "sw_vers", "system_profiler", "mdfind", "mdls", "pbpaste", "say", "ag", "ack-grep", "comm", "tsort", "ptx", "seq",
            "uuidgen", "od", "mimetype", "xdg-mime", "ncdu", "dust", "duf", "procs",
            "bottom", "glances", "nload", "iftop", "nethogs", "iotop", "powertop", "pv", "envsubst", "gettext",
            "ngettext", "cut", "head", "sha256", "md5", "rgrep"});
        return contains(table, name);
    }

    // Commands that always carry the same classes, whatever their arguments.
    struct Classes {
        sv first, second;  // second may be empty
        constexpr bool operator==(const Classes&) const = default;
    };
    static const Classes* plain_classes(sv name) {
        static constexpr auto table = make_table<Classes>([](auto set) {
            set({"ping", "ping6", "dig", "nslookup", "host", "traceroute", "tracepath", "mtr", "whois", "nmap"}, Classes{kNet, {}});
            set({"nc", "ncat", "netcat", "socat", "telnet", "websocat", "grpcurl"}, Classes{kNet, kNetWrite});
            set({"aria2c"}, Classes{kNet, kWrite});
            set({"tcpdump", "iptables", "nft", "ufw", "route", "ifconfig", "swapon"}, Classes{kPriv, {}});
            set({"swapoff", "debugfs", "update-grub", "grub-install", "efibootmgr"}, Classes{kDestroy, {}});
            set({"losetup"}, Classes{kEscape, {}});
        });
        static_assert(consistent(table));
        return lookup(table, name);
    }
};

}  // namespace

std::vector<Finding> find_actions_lexically(std::string_view line) {
    // Every byte that could end a command in some reading ends a fragment,
    // quoted or not: a misreading can hide a command behind a quote the parser
    // saw open, never from this split.
    auto is_cut = [](char c) {
        return c == ';' || c == '&' || c == '|' || c == '\n' || c == '(' || c == ')' || c == '`' || c == '{' ||
               c == '}' || c == '\r';
    };
    static constexpr sv keywords[] = {"!",    "[[",    "]]",     "case", "coproc", "do",   "done",  "elif",
                                      "else", "esac",  "fi",     "for",  "function", "if", "in",   "select",
                                      "then", "time",  "until",  "while"};
    Analyzer a;
    std::size_t k = 0;
    while (k < line.size()) {
        std::size_t start = k;
        while (k < line.size() && !is_cut(line[k])) ++k;
        sv fragment = line.substr(start, k - start);
        ++k;
        Node n;
        n.kind = Kind::simple;
        n.offset = start;
        std::size_t j = 0;
        while (j < fragment.size()) {
            while (j < fragment.size() && (fragment[j] == ' ' || fragment[j] == '\t')) ++j;
            Word w;
            w.offset = start + j;
            for (; j < fragment.size() && fragment[j] != ' ' && fragment[j] != '\t'; ++j) {
                char c = fragment[j];
                if (c == '\'' || c == '"' || c == '\\') continue;
                if (c == '$') w.expanded = true;
                w.text.push_back(c);
            }
            if (w.text.empty()) continue;
            if (n.words.empty() && std::find(std::begin(keywords), std::end(keywords), sv(w.text)) != std::end(keywords))
                continue;
            if (n.words.empty() && w.text.find('=') != std::string::npos && is_assignment_text(w.text)) continue;
            n.words.push_back(std::move(w));
        }
        if (!n.words.empty()) a.node(n, 0);
    }
    for (auto& f : a.out)
        f.notes.emplace_back("the line does not parse: this command was read by cutting the line at every operator, "
                             "quoted or not");
    return std::move(a.out);
}

std::vector<Finding> find_actions(const shell::Script& script) {
    Analyzer a;
    std::unordered_set<std::string> names = function_names(script.root);
    a.functions = &names;
    a.node(script.root, 0);
    return std::move(a.out);
}

}  // namespace cc::classify
