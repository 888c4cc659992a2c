// Reading a command's arguments the way its tool does (where options end,
// which take a value), and the paths and variables that make a command
// dangerous whatever the tool.
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

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
namespace {

template <typename Longs>
std::size_t skip_opts_in(const Args& a, std::size_t from, sv sv_opts, const Longs& lv_opts) {
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

template <typename Longs>
std::vector<std::size_t> positionals_in(const Args& a, std::size_t from, sv sv_opts, const Longs& lv_opts) {
    std::vector<std::size_t> out;
    std::size_t k = from;
    while (k < a.size()) {
        std::size_t p = skip_opts_in(a, k, sv_opts, lv_opts);
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

}  // namespace

std::size_t skip_opts(const Args& a, std::size_t from, sv sv_opts, std::initializer_list<sv> lv_opts) {
    return skip_opts_in(a, from, sv_opts, lv_opts);
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
std::optional<std::string> opt_value(const Args& a, std::size_t from, char short_opt, std::initializer_list<sv> longs, sv short_value_opts) {
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
    return positionals_in(a, from, sv_opts, lv_opts);
}

std::vector<std::size_t> positionals(const Args& a, std::size_t from, sv sv_opts, const std::vector<std::string>& lv_opts) {
    return positionals_in(a, from, sv_opts, lv_opts);
}

namespace {

// "$HOME", "${TMPDIR}", "~", "~user": a start whose value the line does not
// show. ".." after it climbs out of a directory nobody knows.
bool anchor(sv c) { return !c.empty() && (c[0] == '$' || c[0] == '~' || c[0] == '`'); }

bool home_anchor(sv c) { return c == "~" || c == "$HOME" || c == "${HOME}"; }

}  // namespace

// As the kernel resolves a path that holds no symbolic links: "//" and "/./"
// collapse, ".." takes the component before it away ("/.." is "/"), a
// trailing "/" or "/." goes. A relative path keeps the ".." it starts with;
// ".." after an anchor ($VAR, ~) is kept, since what it climbs out of is not
// known ("$TMPDIR/../etc" stays as it is; climbs() tells).
std::string normalize_path(std::string p) {
    if (p.empty()) return p;
    const bool abs = p[0] == '/';
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i <= p.size()) {
        std::size_t j = p.find('/', i);
        if (j == std::string::npos) j = p.size();
        std::string c = p.substr(i, j - i);
        i = j + 1;
        if (c.empty() || c == ".") continue;
        if (c == "..") {
            if (!parts.empty() && parts.back() != ".." && !(!abs && parts.size() == 1 && anchor(parts[0])))
                parts.pop_back();
            else if (!abs || !parts.empty())
                parts.push_back("..");  // else "/.." is "/"
            continue;
        }
        parts.push_back(std::move(c));
    }
    std::string out;
    if (abs) out.push_back('/');
    for (std::size_t k = 0; k < parts.size(); ++k) {
        if (k) out.push_back('/');
        out.append(parts[k]);
    }
    if (out.empty()) out.push_back('.');
    return out;
}

// A path that starts at a variable or ~ and then climbs out of it with "..":
// it may be any directory above, up to "/" (judged by that worst case).
bool climbs(const std::string& raw) {
    std::string p = normalize_path(raw);
    auto slash = p.find('/');
    return slash != std::string::npos && anchor(sv(p).substr(0, slash)) &&
           (p.compare(slash, 3, "/..") == 0 && (p.size() == slash + 3 || p[slash + 3] == '/'));
}

namespace {

// The personal directories under a home whose removal loses a person's
// files, not a project's: ~/Documents, ~/.ssh, ...
constexpr auto personal = sorted_names({"Desktop", "Documents", "Downloads", "Music", "Pictures", "Videos", "Public",
                                        "Templates", "Library", "Movies", "Applications", "Dropbox", "OneDrive",
                                        ".ssh", ".gnupg", ".config", ".local", ".aws", ".azure", ".kube", ".docker",
                                        ".mozilla", ".thunderbird", ".password-store", ".vscode", ".cargo", ".rustup",
                                        ".npm", ".m2", ".gradle", "src", "code", "projects", "work", "git", "repos"});
static_assert(no_duplicates(personal));

// The system's own trees: anything under them belongs to the machine.
constexpr auto system_roots = sorted_names({"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
                                            "/proc", "/root", "/sbin", "/sys", "/usr", "/var/lib", "/var/log",
                                            "/var/spool", "/var/mail", "/var/cache/apt", "/System", "/Library",
                                            "/private/etc", "/private/var/db"});
static_assert(no_duplicates(system_roots));

bool under(const std::string& p, sv root) {
    return p == root || (p.size() > root.size() && p.compare(0, root.size(), root) == 0 && p[root.size()] == '/');
}

// The home a path names ("~", "$HOME", "/home/NAME", "/Users/NAME",
// "/root") and what follows it; nullopt when it names none.
std::optional<std::string> after_home(const std::string& p) {
    auto slash = p.find('/');
    sv first = sv(p).substr(0, slash);
    if (home_anchor(first) || (first.size() > 1 && first[0] == '~'))
        return slash == std::string::npos ? std::string() : p.substr(slash + 1);
    for (sv base : {"/home/", "/Users/"})
        if (starts_with(p, base) && p.size() > base.size()) {
            auto s2 = p.find('/', base.size());
            return s2 == std::string::npos ? std::string() : p.substr(s2 + 1);
        }
    if (p == "/root" || starts_with(p, "/root/")) return p.size() > 5 ? p.substr(6) : std::string();
    return std::nullopt;
}

}  // namespace

// rm -r of these takes the system (or a home directory, or a person's own
// files in it) with it.
bool is_precious(const std::string& raw) {
    std::string p = normalize_path(raw);
    if (p.empty()) return false;
    for (sv suffix : {"/*", "/.*"})
        if (p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0) {
            p.resize(p.size() - suffix.size());
            if (p.empty()) p.push_back('/');  // not p = "/": GCC 12 -Wrestrict false positive
        }
    if (p == "/") return true;
    if (climbs(p)) return true;  // $TMPDIR/../etc, ${HOME}/..: up to "/"
    if (auto rest = after_home(p)) {
        if (rest->empty()) return true;  // the home itself
        return contains(personal, sv(*rest).substr(0, rest->find('/'))) && rest->find('/') == std::string::npos;
    }
    if (p == "/home" || p == "/Users" || p == "/opt" || p == "/srv" || p == "/var" || p == "/run" || p == "/snap" ||
        p == "/mnt" || p == "/media" || p == "/usr/local")
        return true;
    for (sv root : system_roots)
        if (under(p, root)) return true;
    return false;
}

// A file of the machine's own (under /etc, /boot, /usr, ...) or a home's
// start-up and credential files (~/.bashrc, ~/.ssh/...): changing or
// removing one, even without -r, changes the system.
bool is_system_file(const std::string& raw) {
    std::string p = normalize_path(raw);
    if (p.empty() || climbs(p)) return !p.empty();
    for (sv root : system_roots)
        if (under(p, root) && !under(p, "/dev") && !under(p, "/proc") && !under(p, "/sys")) return true;  // kernel knobs: judged apart
    if (auto rest = after_home(p); rest && !rest->empty()) {
        static constexpr auto startup = sorted_names({".bashrc", ".bash_profile", ".bash_login", ".bash_logout",
                                                      ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
                                                      ".gitconfig", ".netrc", ".npmrc", ".pypirc", ".inputrc",
                                                      ".xinitrc", ".xprofile", ".pam_environment", ".curlrc",
                                                      ".wgetrc", ".vimrc", ".tmux.conf", ".env"});
        std::string first = rest->substr(0, rest->find('/'));
        if (contains(startup, first) && rest->find('/') == std::string::npos) return true;
        for (sv dir : {".ssh", ".gnupg", ".aws", ".kube", ".docker", ".config/systemd", ".config/autostart",
                       ".config/fish", ".config/git", ".local/bin", ".local/share/applications"})
            if (under(*rest, dir)) return true;
    }
    return false;
}

// rm -r of these deletes the working directory's whole contents (or its
// repository): ".", "..", "*", "./*", ".git", "$PWD".
bool is_worktree(const std::string& raw) {
    std::string p = normalize_path(raw);
    if (p.size() > 2 && p.compare(p.size() - 2, 2, "/*") == 0) p.resize(p.size() - 2);
    static constexpr auto names = sorted_names({".", "..", "*", ".*", ".git", "$PWD", "${PWD}", "$(pwd)", "`pwd`"});
    static_assert(no_duplicates(names));
    return contains(names, p);
}

// A relative path that names a directory of the work, as far as the text
// shows: no glob, no variable, and no extension on its last part (x.txt,
// a.log are files; src, lib/util, .github are trees).
bool relative_tree(const std::string& raw) {
    if (raw.empty() || raw[0] == '/' || raw[0] == '~' || raw[0] == '$' || raw[0] == '`' || raw[0] == '-') return false;
    if (raw.find_first_of("*?[$`") != std::string::npos) return false;
    std::string p = normalize_path(raw);
    if (p == "." || p == ".." || starts_with(p, "../")) return false;
    std::string last = p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1);
    return last.find('.', 1) == std::string::npos;
}

// What a build makes again, and caches: removing one loses no work. The
// rest of a relative tree (src, lib, docs, ...) is the agent's work.
bool is_rebuildable(const std::string& raw) {
    std::string p = normalize_path(raw);
    if (p.size() > 2 && p.compare(p.size() - 2, 2, "/*") == 0) p.resize(p.size() - 2);
    static constexpr auto outputs = sorted_names({
        "build", "builddir", "_build", "out", "dist", "target", "bin", "obj", "node_modules", "__pycache__",
        ".cache", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox", ".venv", "venv", ".next", ".nuxt",
        ".parcel-cache", ".turbo", ".gradle", ".eggs", "coverage", "htmlcov", ".coverage", ".nyc_output",
        "cmake-build-debug", "cmake-build-release", "CMakeFiles", ".svelte-kit", ".angular", ".expo", "tmp", ".tmp",
        "temp", "logs", ".sass-cache", "bower_components", "vendor", ".terraform", "Pods", "DerivedData",
        ".dart_tool", ".stack-work", "dist-newstyle", "zig-cache", "zig-out", "site", "_site", "public/build"});
    static_assert(no_duplicates(outputs));
    // A part of one is one too (target/debug, build/tmp, node_modules/x).
    std::size_t at = 0;
    while (at < p.size()) {
        std::size_t end = p.find('/', at);
        if (end == std::string::npos) end = p.size();
        sv part = sv(p).substr(at, end - at);
        if (contains(outputs, part) || (part.size() > 9 && part.substr(part.size() - 9) == ".egg-info")) return true;
        at = end + 1;
    }
    return false;
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
        "SSH_ASKPASS", "SUDO_ASKPASS", "VISUAL",
        // Where tools read their configuration (git's core.pager, ...) and
        // options from: a file the line points them at can name a program.
        "HOME", "PWD", "XDG_CONFIG_HOME", "GIT_CONFIG", "LESS", "LESSKEY", "LESSKEYIN", "LESSKEYIN_SYSTEM",
        "LESSKEY_CONTENT", "LESSKEY_SYSTEM", "LESSEDIT", "FZF_DEFAULT_COMMAND", "FZF_DEFAULT_OPTS",
        "FZF_DEFAULT_OPTS_FILE", "RIPGREP_CONFIG_PATH", "BAT_PAGER", "BAT_CONFIG_PATH", "DELTA_PAGER",
        "SYSTEMD_PAGER", "ACK_OPTIONS", "ACKRC", "TAR_OPTIONS", "GREP_OPTIONS"});
    return contains(names, name);
}

// A command named by a path in one of the system's own program directories
// (/usr/bin/git is git; ./git, bin/cat and /tmp/x/rg are whatever is there).
bool system_program(sv path) {
    auto slash = path.rfind('/');
    if (slash == sv::npos) return true;
    sv dir = path.substr(0, slash);
    static constexpr auto dirs = sorted_names({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin",
                                               "/usr/local/sbin", "/usr/libexec", "/usr/lib/git-core",
                                               "/opt/homebrew/bin", "/opt/homebrew/sbin", "/usr/games"});
    return contains(dirs, dir);
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

void collect_values(const Node& root, Values& out) {
    auto keep = [&](const std::string& name, std::string value) {
        auto& vs = out[name];
        if (vs.size() < 8 && std::find(vs.begin(), vs.end(), value) == vs.end()) vs.push_back(std::move(value));
    };
    // NAME=v, NAME+=v, NAME[i]=v; an array literal's elements as one text.
    auto assignment = [&](const Word& w) {
        if (w.expanded) return;
        const std::string& t = w.text;
        if (t.empty() || !(std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_')) return;
        std::size_t k = 1;
        while (k < t.size() && (std::isalnum(static_cast<unsigned char>(t[k])) || t[k] == '_')) ++k;
        std::string name = t.substr(0, k);
        if (k < t.size() && t[k] == '[') k = t.find(']', k) == std::string::npos ? t.size() : t.find(']', k) + 1;
        bool append = k < t.size() && t[k] == '+';
        if (append) ++k;
        if (k >= t.size() || t[k] != '=') return;
        std::string value = t.substr(k + 1);
        if (value.size() >= 2 && value.front() == '(' && value.back() == ')') value = value.substr(1, value.size() - 2);
        if (append)
            for (const auto& v : std::vector<std::string>(out[name])) keep(name, v + value);
        keep(name, std::move(value));
    };
    static constexpr auto declarers = sorted_names({"declare", "export", "local", "readonly", "typeset"});
    shell::walk(root, [&](const Node& n) {
        for (const auto& w : n.assigns) assignment(w);
        if (n.kind == Kind::simple && !n.words.empty() && contains(declarers, n.words[0].text))
            for (std::size_t k = 1; k < n.words.size(); ++k) assignment(n.words[k]);
        if (n.kind == Kind::loop && n.words.size() >= 2 && (n.words[0].text == "for" || n.words[0].text == "select")) {
            for (std::size_t k = 2; k < n.words.size(); ++k) {
                if (n.words[k].expanded) continue;
                keep(n.words[1].text, n.words[k].text);
            }
        }
    });
}

}  // namespace cc::classify::detail
