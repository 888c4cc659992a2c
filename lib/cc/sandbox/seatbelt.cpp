#include "cc/sandbox/seatbelt.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <sstream>

namespace cc::sandbox {

namespace {

// Binaries never runnable inside, even where the system roots are: they
// reach the host's session (osascript, open, launchctl), its keychain
// (security) or its configuration, not the sandbox's files.
const std::vector<std::string> k_exec_denies = {
    "/usr/bin/sudo", "/usr/bin/su", "/usr/bin/login", "/usr/sbin/chown", "/usr/bin/osascript",
    "/usr/bin/open", "/bin/launchctl", "/usr/bin/security", "/usr/sbin/diskutil", "/usr/bin/csrutil",
    "/usr/sbin/spctl", "/usr/bin/tccutil", "/usr/sbin/systemsetup", "/usr/bin/dscl",
};

// The Mach services a shell, git, node, python and the command-line tools
// need. Left out on purpose: launch services (it starts programs outside the
// sandbox: `open -a Terminal`), the pasteboard, the keychain daemons
// (SecurityServer, securityd), configd and the DNS services (names resolve at
// the proxy), FSEvents, and every per-user agent not named here.
const std::vector<std::string> k_mach_services = {
    "com.apple.system.opendirectoryd.libinfo",     // getpwuid, getgrgid: the shell, git, ssh
    "com.apple.system.opendirectoryd.membership",  // group membership checks
    "com.apple.system.logger",                     // asl(3)
    "com.apple.logd",                              // os_log(3)
    "com.apple.system.notification_center",        // notify(3), used by libSystem itself
    "com.apple.trustd.agent",                      // TLS certificate checks (end to end through the proxy)
    "com.apple.cfprefsd.agent",                    // preference reads; cfprefsd checks writes against
    "com.apple.cfprefsd.daemon",                   //   user-preference-write, which is denied
    "com.apple.bsd.dirhelper",                     // confstr(_CS_DARWIN_USER_*_DIR): xcrun, python
};

// The terminal profile shares the host network, so it may also resolve names.
const std::vector<std::string> k_terminal_mach_services = {
    "com.apple.SystemConfiguration.configd",
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.dnssd.service",
};

// System locations a process needs, readable and executable, never writable.
// /private/etc is the real /etc; its secrets are denied below.
const std::vector<std::string> k_system_roots = {
    "/System", "/usr", "/bin", "/sbin", "/Library/Developer/CommandLineTools", "/Library/Frameworks",
    "/Applications/Xcode.app", "/opt/homebrew", "/private/etc", "/private/var/db/timezone",
    "/private/var/db/dyld", "/private/var/select",
};
// Single files: the symlinks /etc, /tmp, /var themselves and the Xcode selection.
const std::vector<std::string> k_system_files = {"/etc", "/tmp", "/var", "/private/var/db/xcode_select_link"};

// /private/etc files a local user must never read even where the system
// roots are readable (most are root-only already; the rule says so anyway).
const std::vector<std::string> k_system_secrets = {
    "/private/etc/master.passwd", "/private/etc/sudoers", "/private/etc/sudoers.d", "/private/etc/kcpassword",
    "/private/etc/ssh/ssh_host_rsa_key", "/private/etc/ssh/ssh_host_ecdsa_key", "/private/etc/ssh/ssh_host_ed25519_key",
    "/private/etc/ssh/ssh_host_dsa_key", "/private/etc/ssl/private",
};

const std::vector<std::string> k_sysctls = {
    "hw.activecpu", "hw.byteorder", "hw.cachelinesize", "hw.cpufamily", "hw.cputype", "hw.l1dcachesize",
    "hw.l2cachesize", "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine", "hw.memsize", "hw.model", "hw.ncpu",
    "hw.nperflevels", "hw.pagesize", "hw.physicalcpu", "hw.physicalcpu_max", "hw.tbfrequency", "hw.vectorunit",
    "kern.argmax", "kern.hostname", "kern.maxfilesperproc", "kern.maxproc", "kern.osproductversion", "kern.osrelease",
    "kern.ostype", "kern.osversion", "kern.secure_kernel", "kern.usrstack64", "kern.version", "machdep.cpu.brand_string",
    "sysctl.proc_cputype", "vm.loadavg",
};
const std::vector<std::string> k_sysctl_prefixes = {"hw.optional.", "hw.perflevel", "kern.proc.pid.", "kern.proc.pgrp."};

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
char upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

// One character of a literal as a case-insensitive regex atom.
void ci_atom(std::string& re, char c) {
    if (is_alpha(c)) {
        re += '[';
        re += lower(c);
        re += upper(c);
        re += ']';
        return;
    }
    switch (c) {
        case '.': case '(': case ')': case '[': case ']': case '{': case '}': case '*': case '+': case '?':
        case '^': case '$': case '|': case '\\':
            re += '\\';
            break;
        default: break;
    }
    re += c;
}

// A literal as case-insensitive regex atoms, and a group of alternatives.
std::string ci(const std::string& literal) {
    std::string re;
    for (char c : literal) ci_atom(re, c);
    return re;
}
std::string ci_any(const std::vector<std::string>& names) {
    std::string re = "(";
    for (const auto& n : names) re += (re.size() > 1 ? "|" : "") + ci(n);
    return re + ")";
}

// Inside every writable bind and runner state, at every depth: the .git
// entry itself (a git directory, or a .git file naming one elsewhere: it
// cannot be created, removed, renamed or rewritten, so none is moved away
// from under the rules and back), the files in a git directory that git
// takes configuration, hooks or another git directory from (also in the git
// directories of submodules and worktrees), and the agent CLIs' per-
// repository settings (their hooks and permission rules run code on the
// host's next session there).
const std::vector<std::string> k_git_dir_files = {"config", "config.worktree", "commondir", "gitdir"};
const std::vector<std::string> k_repo_agent_settings = {".claude", ".mcp.json", ".codex", ".gemini"};

std::vector<std::string> every_depth_regexes(const std::string& root) {
    std::string r = ci_path_regex(root, "") + "/(.*/)?";
    std::string git = ci(".git");
    std::string nested = "((" + ci("modules") + "/.+|" + ci("worktrees") + "/[^/]+)/)?";
    return {r + git + "$",
            r + git + "/" + nested + "(" + ci("hooks") + "(/.*)?|" + ci_any(k_git_dir_files).substr(1) + "$",
            r + ci_any(k_repo_agent_settings) + "(/|$)"};
}

bool bad_byte(unsigned char c) { return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f; }

std::uint64_t fnv1a(const std::string& s) {
    std::uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return h;
}

struct Bind {
    std::string host;  // normalised
    bool writable = false;
    std::string why;
};

class SbplWriter {
public:
    SbplWriter(const PlanInput& in, const HostPaths& host) : in_(in), host_(host), tag_(seatbelt_tag(in)) {}

    std::string build(int http_port, int socks_port) {
        collect();
        header();
        processes();
        reads();
        writes();
        mandatory_write_denies();
        exec_denies();
        secrets();
        rename_pins();
        network(http_port, socks_port);
        return o_.str();
    }

private:
    const PlanInput& in_;
    const HostPaths& host_;
    std::string tag_;
    std::ostringstream o_;
    std::vector<Bind> binds_;                   // depth order, outermost first
    std::vector<std::string> writable_roots_;   // host spellings of the writable binds and runner state
    std::vector<std::string> pinned_;           // paths whose ancestors may not be renamed (all spellings)

    bool terminal() const { return in_.profile == cc::sandbox::Profile::terminal; }
    bool read_only_mode() const { return !terminal() && policy::is_read_only(in_.spec.mode); }
    std::string with_tag() const { return " (with message " + sbpl_quote(tag_) + ")"; }

    // Every spelling Seatbelt may see: the literal one, the resolved one, and
    // the /private form of /tmp, /var and /etc (the kernel reports resolved
    // paths; the aliases hold even for paths that do not exist yet).
    std::vector<std::string> spell(const std::string& p) const {
        std::vector<std::string> out;
        auto push = [&](const std::string& s) {
            if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
        };
        for (const auto& s : spellings(p, in_.home, host_)) {
            push(s);
            for (const char* alias : {"/tmp", "/var", "/etc"})
                if (is_within(s, alias)) push("/private" + s);
        }
        return out;
    }
    std::vector<std::string> spell_all(const std::vector<std::string>& ps) const {
        std::vector<std::string> out;
        for (const auto& p : ps)
            for (const auto& s : spell(p))
                if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
        return out;
    }

    void collect() {
        std::vector<Bind> binds;
        if (terminal() && !in_.home.empty() && in_.home != "/") binds.push_back({normalise(in_.home, ""), true, "$HOME, writable (terminal profile)"});
        for (const auto& b : in_.spec.bindMounts) {
            bool ro = b.readOnly || read_only_mode();
            std::string why = b.readOnly ? "read-only bind"
                              : ro       ? "bind, read-only in " + std::string(policy::to_string(in_.spec.mode)) + " mode"
                                         : "writable bind";
            binds.push_back({normalise(b.hostPath, in_.home), !ro, why});
        }
        std::stable_sort(binds.begin(), binds.end(), [](const Bind& a, const Bind& b) { return depth(a.host) < depth(b.host); });
        binds_ = std::move(binds);
        // Where the every-depth rules apply: writable binds and runner state
        // (it persists), each once: one inside another is covered already.
        // The session's tmp goes with the session and the host never runs
        // git there, so a clone into $TMPDIR works.
        std::vector<std::string> roots;
        for (const auto& b : binds_)
            if (b.writable)
                for (const auto& s : spell(b.host)) roots.push_back(s);
        for (const auto& s : spell_all(in_.spec.runnerStateDirs)) roots.push_back(s);
        for (const auto& r : roots) {
            bool covered = std::any_of(roots.begin(), roots.end(), [&](const std::string& o) { return o != r && is_within(r, o); });
            if (!covered && std::find(writable_roots_.begin(), writable_roots_.end(), r) == writable_roots_.end())
                writable_roots_.push_back(r);
        }
    }

    // One rule, or nothing when it has no filter (a rule without filters
    // would match every path). The comment is written only with its rule.
    void rule(const std::string& head, const std::vector<std::string>& filters, bool tagged, const std::string& comment = "") {
        if (filters.empty()) return;
        if (!comment.empty()) o_ << ";; " << comment << "\n";
        o_ << "(" << head;
        for (const auto& f : filters) o_ << "\n  " << f;
        if (tagged) o_ << "\n " << with_tag();
        o_ << ")\n";
    }
    static std::string subpath(const std::string& p) { return "(subpath " + sbpl_quote(p) + ")"; }
    static std::string literal(const std::string& p) { return "(literal " + sbpl_quote(p) + ")"; }
    static std::string regex(const std::string& re) { return "(regex " + sbpl_quote(re) + ")"; }

    void header() {
        o_ << "(version 1)\n";
        o_ << ";; cc-wrap Seatbelt profile: session " << sanitise_comment(in_.spec.sessionId) << ", profile "
           << to_string(in_.profile) << ", mode " << policy::to_string(in_.spec.mode) << "\n";
        o_ << ";; Seatbelt applies the last rule that matches: every allow comes first, then every deny.\n";
        o_ << ";; Each deny carries the session tag, which the violation log tap filters on.\n";
        o_ << "(deny default" << with_tag() << ")\n";
    }
    static std::string sanitise_comment(const std::string& s) {
        std::string out;
        for (char c : s) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
        return out;
    }

    void processes() {
        o_ << "\n;; processes: children inherit this profile; signals and inspection stay inside it\n";
        o_ << "(allow process-fork)\n";
        o_ << "(allow signal (target same-sandbox))\n";
        o_ << "(allow process-info* (target same-sandbox))\n";
        o_ << "(allow mach-priv-task-port (target same-sandbox))\n";
        o_ << "(allow user-preference-read)\n";
        o_ << "(allow ipc-posix-sem)\n";
        o_ << "(allow ipc-posix-shm)\n";
        o_ << "(allow pseudo-tty)\n";
        o_ << "(allow iokit-open (iokit-registry-entry-class \"RootDomainUserClient\"))\n";
        std::vector<std::string> sys;
        for (const auto& s : k_sysctls) sys.push_back("(sysctl-name " + sbpl_quote(s) + ")");
        for (const auto& s : k_sysctl_prefixes) sys.push_back("(sysctl-name-prefix " + sbpl_quote(s) + ")");
        rule("allow sysctl-read", sys, false);
        std::vector<std::string> mach;
        for (const auto& m : k_mach_services) mach.push_back("(global-name " + sbpl_quote(m) + ")");
        if (terminal())
            for (const auto& m : k_terminal_mach_services) mach.push_back("(global-name " + sbpl_quote(m) + ")");
        o_ << "\n;; Mach services: only these (no launch services, pasteboard, keychain or resolver)\n";
        rule("allow mach-lookup", mach, false);
    }

    void reads() {
        o_ << "\n;; reads: the system a process needs (read-only), then the binds; nothing else exists\n";
        std::vector<std::string> sys;
        for (const auto& r : k_system_roots) sys.push_back(subpath(r));
        for (const auto& f : k_system_files) sys.push_back(literal(f));
        rule("allow file-read* file-test-existence file-map-executable process-exec", sys, false);
        std::vector<std::string> init;
        if (!in_.initExe.empty())
            for (const auto& s : spell(in_.initExe)) init.push_back(literal(s));
        rule("allow file-read* file-test-existence file-map-executable process-exec", init, false, "the init step that runs the command");

        rule("allow file-read* file-write-data file-ioctl", {literal("/dev/null"), literal("/dev/zero"), literal("/dev/dtracehelper")},
             false, "devices: the null and random devices, descriptors, the terminal, ptys");
        rule("allow file-read*", {literal("/dev"), literal("/dev/random"), literal("/dev/urandom"), literal("/dev/fd")}, false);
        rule("allow file-read* file-write-data", {regex("^/dev/fd/[0-9]+$")}, false);
        // Terminal ioctls (job control, window size, and TIOCSTI, which types
        // into the terminal) only where the terminal is the command's own:
        // --pty, or a human's terminal profile. A dispatch command run from
        // the operator's terminal may write to it, never type into it.
        std::vector<std::string> tty = {literal("/dev/tty"), literal("/dev/ptmx"), regex("^/dev/ttys[0-9]+$")};
        if (terminal() || in_.pty) {
            rule("allow file-read* file-write-data file-ioctl", tty, false);
        } else {
            rule("allow file-read* file-write-data", tty, false);
        }

        // Binds (all spellings), runner state and the session's tmp: readable
        // and runnable. Executing from a writable bind is allowed: node's
        // .bin, build scripts, ./configure and ./a.out need it, and `sh x.sh`
        // would walk around a refusal anyway.
        std::vector<std::string> roots;
        for (const auto& b : binds_)
            for (const auto& s : spell(b.host)) roots.push_back(subpath(s));
        for (const auto& r : in_.spec.runnerStateDirs)
            for (const auto& s : spell(r)) roots.push_back(subpath(s));
        for (const auto& s : spell(seatbelt_session_tmp(in_))) roots.push_back(subpath(s));
        rule("allow file-read* file-test-existence file-map-executable process-exec", dedupe(roots), false, "the binds, runner state and this session's temporary directory");

        // The directories above them: stat only (realpath, getcwd), never a listing.
        std::set<std::string> above;
        auto add_above = [&](const std::string& p) {
            for (std::string a = parent_of(p);; a = parent_of(a)) {
                above.insert(a);
                if (a == "/") break;
            }
        };
        for (const auto& b : binds_)
            for (const auto& s : spell(b.host)) add_above(s);
        for (const auto& s : spell_all(in_.spec.runnerStateDirs)) add_above(s);
        for (const auto& s : spell(seatbelt_session_tmp(in_))) add_above(s);
        if (!in_.initExe.empty())
            for (const auto& s : spell(in_.initExe)) add_above(s);
        std::vector<std::string> meta;
        for (const auto& a : above) meta.push_back(literal(a));
        rule("allow file-read-metadata file-test-existence", meta, false, "their parent directories: metadata only (no listing)");
    }

    static std::vector<std::string> dedupe(const std::vector<std::string>& v) {
        std::vector<std::string> out;
        for (const auto& x : v)
            if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
        return out;
    }

    // Binds and runner state in depth order (runner state after a bind of
    // the same depth, so it wins), as the bubblewrap plan layers its mounts.
    // Each layer emits a rule only where it changes what its innermost
    // enclosing layer says: a writable bind inside a read-only one is
    // re-opened, a read-only one inside a writable one is closed again, and
    // nothing is said twice.
    void writes() {
        o_ << "\n;; writes: the binds and runner state from the outermost in, so a nested one's own access wins\n";
        if (read_only_mode())
            o_ << ";; " << policy::to_string(in_.spec.mode) << " mode: every bind is read-only; runner state stays writable\n";
        std::vector<Bind> layers = binds_;
        for (const auto& r : in_.spec.runnerStateDirs) layers.push_back({normalise(r, in_.home), true, "runner state"});
        std::stable_sort(layers.begin(), layers.end(), [](const Bind& a, const Bind& b) { return depth(a.host) < depth(b.host); });
        for (std::size_t i = 0; i < layers.size(); ++i) {
            const Bind& b = layers[i];
            bool enclosing_writable = false;
            for (std::size_t k = 0; k < i; ++k)
                if (is_within(b.host, layers[k].host)) enclosing_writable = layers[k].writable;
            if (b.writable == enclosing_writable) continue;
            // Allows are case-sensitive (a differently spelled path falls to
            // the default deny); denies are not, so no spelling escapes them.
            std::vector<std::string> f;
            if (b.writable) {
                for (const auto& s : spell(b.host)) f.push_back(subpath(s));
                rule("allow file-write*", f, false, b.why);
            } else {
                for (const auto& s : spell(b.host)) f.push_back(regex(ci_path_regex(s, "(/|$)")));
                rule("deny file-write*", f, true, b.why + " inside a writable one");
                for (const auto& s : spell(b.host)) pinned_.push_back(s);
            }
        }
        std::vector<std::string> tmp;
        for (const auto& s : spell(seatbelt_session_tmp(in_))) tmp.push_back(subpath(s));
        rule("allow file-write*", tmp, false, "this session's temporary directory (TMPDIR), instead of the shared /tmp and /var/folders");
    }

    void mandatory_write_denies() {
        o_ << "\n;; write-denies, after every write allow (case-insensitive: APFS is, by default)\n";
        std::vector<std::string> prot;
        for (const auto& s : spell_all(in_.spec.protectedPaths)) {
            prot.push_back(regex(ci_path_regex(s, "(/|$)")));
            pinned_.push_back(s);
        }
        rule("deny file-write*", prot, true, "protectedPaths");

        if (!terminal()) {
            std::vector<std::string> home;
            for (const auto& s : spell_all(home_write_denies())) {
                home.push_back(regex(ci_path_regex(s, "(/|$)")));
                pinned_.push_back(s);
            }
            o_ << ";; files the host runs or reads as configuration later: shell start files, agent CLI settings\n";
            rule("deny file-write*", home, true);

            std::vector<std::string> deep;
            for (const auto& root : writable_roots_)
                for (const auto& re : every_depth_regexes(root)) deep.push_back(regex(re));
            o_ << ";; inside every writable bind and runner state, at every depth: git configuration, hooks, git-dir\n";
            o_ << ";; indirections, the agent CLIs' repository settings\n";
            rule("deny file-write*", deep, true);

            if (!in_.dropFilenameDenies) {
                std::vector<std::string> names;
                for (const auto& g : standard_filename_denies()) names.push_back(regex(glob_to_regex(g)));
                o_ << ";; the standard file-name write-denies\n";
                rule("deny file-write*", names, true);
            }
        }
        std::vector<std::string> extra;
        for (const auto& d : in_.denyWrite) {
            if (d.find('/') == std::string::npos || is_glob(d)) {
                extra.push_back(regex(glob_to_regex(normalise(d, in_.home))));
            } else {
                for (const auto& s : spell(d)) {
                    extra.push_back(regex(ci_path_regex(s, "(/|$)")));
                    pinned_.push_back(s);
                }
            }
        }
        rule("deny file-write*", extra, true, "--deny-write");
    }

    void exec_denies() {
        std::vector<std::string> f;
        for (const auto& e : k_exec_denies) f.push_back(literal(e));
        o_ << "\n;; never run, wherever they are readable: they reach the host's session, keychain or settings\n";
        rule("deny process-exec", f, true);
    }

    void secrets() {
        std::vector<std::string> f;
        for (const auto& s : spell_all(secret_read_denies())) {
            f.push_back(regex(ci_path_regex(s, "(/|$)")));
            pinned_.push_back(s);
        }
        for (const auto& s : k_system_secrets) {
            f.push_back(regex(ci_path_regex(s, "(/|$)")));
            pinned_.push_back(s);
        }
        o_ << "\n;; secrets: unreadable and unwritable wherever a bind shows them; after every allow\n";
        rule("deny file-read* file-write*", f, true);
    }

    // A rename of any ancestor would carry a denied path to a name its rule
    // does not cover, so no directory above one may be renamed or removed.
    void rename_pins() {
        std::set<std::string> chain;
        for (const auto& p : pinned_)
            for (std::string a = parent_of(p); a != "/"; a = parent_of(a)) chain.insert(a);
        std::vector<std::string> f;
        for (const auto& a : chain) f.push_back(regex(ci_path_regex(a, "$")));
        o_ << "\n;; no rename or removal of a directory above a denied path\n";
        rule("deny file-write-unlink", f, true);
    }

    void network(int http_port, int socks_port) {
        if (terminal()) {
            o_ << "\n;; terminal profile: the host network, as on Linux\n";
            o_ << "(allow network*)\n";
            o_ << "(allow system-socket)\n";
            return;
        }
        o_ << "\n;; network: the session's proxies on loopback and nothing else: no resolver socket (names\n";
        o_ << ";; resolve at the proxy), no Unix sockets, no listening\n";
        std::vector<std::string> f;
        for (int port : {http_port, socks_port})
            if (port > 0 && port < 65536) f.push_back("(remote ip \"localhost:" + std::to_string(port) + "\")");
        if (f.empty()) o_ << ";; no proxy port known: no network at all\n";
        rule("allow network-outbound", f, false);
    }
};

}  // namespace

const std::vector<std::string>& seatbelt_exec_denies() { return k_exec_denies; }
const std::vector<std::string>& seatbelt_mach_services() { return k_mach_services; }
const std::vector<std::string>& seatbelt_system_read_roots() { return k_system_roots; }

std::string sbpl_quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            default: out += bad_byte(static_cast<unsigned char>(c)) ? '?' : c;
        }
    }
    return out + "\"";
}

std::string ci_path_regex(const std::string& path, const std::string& tail) {
    std::string re = "^";
    for (char c : path) ci_atom(re, c);
    return re + tail;
}

std::string glob_to_regex(const std::string& glob) {
    std::string re = glob.find('/') == std::string::npos ? "/" : "^";
    for (char c : glob) {
        if (c == '*')
            re += "[^/]*";
        else if (c == '?')
            re += "[^/]";
        else
            ci_atom(re, c);
    }
    return re + "$";
}

Status seatbelt_check(const PlanInput& in) {
    auto clean = [](const std::string& what, const std::string& p) -> Status {
        for (unsigned char c : p)
            if (bad_byte(c))
                return input_error(what, "holds a control byte; it cannot be written into a Seatbelt profile");
        return ok();
    };
    for (std::size_t i = 0; i < in.spec.bindMounts.size(); ++i) {
        const auto& b = in.spec.bindMounts[i];
        std::string subject = "bindMounts[" + std::to_string(i) + "]";
        if (auto st = clean(subject + ".hostPath", b.hostPath); !st) return st;
        if (!b.guestPath.empty() && normalise(b.guestPath, in.home) != normalise(b.hostPath, in.home))
            return input_error(subject + ".guestPath",
                               "'" + b.guestPath + "' differs from hostPath '" + b.hostPath +
                                   "'; Seatbelt filters host paths and cannot show a directory elsewhere");
    }
    for (const auto& [name, list] : {std::pair<const char*, const std::vector<std::string>*>{"protectedPaths", &in.spec.protectedPaths},
                                     {"runnerStateDirs", &in.spec.runnerStateDirs},
                                     {"--deny-write", &in.denyWrite}})
        for (const auto& p : *list)
            if (auto st = clean(name, p); !st) return st;
    if (auto st = clean("$HOME", in.home); !st) return st;
    if (auto st = clean("runtime directory", in.runtimeDir); !st) return st;
    return clean("cc-wrap-init", in.initExe);
}

std::string seatbelt_tag(const std::string& session_id, const std::string& runtime_dir) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llX", static_cast<unsigned long long>(fnv1a(session_id + '\0' + runtime_dir)));
    return std::string("CCWRAP_") + hex;
}

std::string seatbelt_tag(const PlanInput& in) { return seatbelt_tag(in.spec.sessionId, in.runtimeDir); }

std::string seatbelt_session_tmp(const PlanInput& in) { return normalise(in.runtimeDir, "") + "/tmp"; }

std::string seatbelt_profile(const PlanInput& in, const HostPaths& host, int http_port, int socks_port) {
    return SbplWriter(in, host).build(http_port, socks_port);
}

Result<std::string> seatbelt_print(PlanInput in, const HostPaths& host) {
    in.mechanism = "seatbelt";
    auto plan = build_plan(in, host);
    if (!plan) return plan.error();
    return plan->seatbelt;
}

Status seatbelt_wiring_from_ready(const nlohmann::json& j, EgressWiring& w, const std::string& subject) {
    if (!j.is_object() || j.value("event", "") != "ready") return input_error(subject, "not a cc-egress ready object");
    auto loopback_port = [&](const char* key, std::string& out) -> Status {
        const std::string prefix = "127.0.0.1:";
        std::string v = j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
        std::string digits = v.rfind(prefix, 0) == 0 ? v.substr(prefix.size()) : std::string();
        bool ok_port = !digits.empty() && digits.size() <= 5 &&
                       digits.find_first_not_of("0123456789") == std::string::npos && digits[0] != '0' &&
                       std::stoi(digits) <= 65535;
        if (!ok_port)
            return input_error(subject + "." + key, "'" + v +
                                                        "' is not a loopback TCP listener 127.0.0.1:PORT; under "
                                                        "Seatbelt the sandbox reaches the proxies on loopback only");
        out = v;
        return ok();
    };
    std::string http, socks;
    if (auto s = loopback_port("http", http); !s) return s;
    if (auto s = loopback_port("socks", socks); !s) return s;
    w.http = http;
    w.socks = socks;
    return ok();
}

std::string seatbelt_apply_failure(const std::string& line) {
    if (line.rfind("sandbox-exec:", 0) != 0) return {};
    if (line.find("sandbox_apply") == std::string::npos) return {};
    if (line.find("Operation not permitted") == std::string::npos)
        return "sandbox-exec could not apply the profile: " + line.substr(std::string("sandbox-exec: ").size());
    return "sandbox-exec could not apply the profile: this process is already inside a Seatbelt sandbox, and macOS "
           "does not stack a second one (run cc-wrap outside the other sandbox)";
}

}  // namespace cc::sandbox
