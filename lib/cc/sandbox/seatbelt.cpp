#include "cc/sandbox/seatbelt.hpp"

#include <set>
#include <sstream>

namespace cc::sandbox {

namespace {

const std::vector<std::string> k_exec_denies = {
    "/usr/bin/sudo", "/usr/bin/su", "/usr/bin/login", "/usr/sbin/chown", "/usr/bin/osascript",
    "/usr/sbin/launchctl", "/bin/launchctl", "/usr/bin/security", "/usr/sbin/diskutil", "/usr/bin/csrutil",
    "/usr/sbin/spctl", "/usr/bin/tccutil", "/usr/sbin/systemsetup", "/usr/bin/dscl",
};

std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

// Both spellings of every path (F9): /tmp is /private/tmp on macOS.
std::vector<std::string> both(const std::vector<std::string>& rules, const std::string& home, const HostPaths& host) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const auto& r : rules)
        for (const auto& s : spellings(r, home, host))
            if (seen.insert(s).second) out.push_back(s);
    return out;
}

void filters(std::ostringstream& o, const std::vector<std::string>& paths, const char* kind) {
    for (const auto& p : paths) {
        if (is_glob(p) || p.find('/') == std::string::npos)
            o << "\n  (regex #\"" << glob_to_regex(p) << "\")";  // #"..." is raw: no escaping
        else
            o << "\n  (" << kind << " " << quote(p) << ")";
    }
}

}  // namespace

const std::vector<std::string>& seatbelt_exec_denies() { return k_exec_denies; }

std::string glob_to_regex(const std::string& glob) {
    std::string re = glob.find('/') == std::string::npos ? "(^|/)" : "^";
    for (char c : glob) {
        switch (c) {
            case '*': re += "[^/]*"; break;
            case '?': re += "[^/]"; break;
            case '.': case '(': case ')': case '[': case ']': case '{': case '}': case '+': case '^': case '$':
            case '|': case '\\': case '"':
                re += '\\';
                re += c;
                break;
            default: re += c;
        }
    }
    return re + "$";
}

std::string seatbelt_profile(const PlanInput& in, const HostPaths& host, int http_port, int socks_port) {
    const bool terminal = in.profile == Profile::terminal;
    const bool ro_mode = !terminal && policy::is_read_only(in.spec.mode);

    std::vector<std::string> writable, readonly_binds;
    if (terminal) writable.push_back(in.home);
    for (const auto& b : in.spec.bindMounts)
        (b.readOnly || ro_mode ? readonly_binds : writable).push_back(b.hostPath);
    for (const auto& r : in.spec.runnerStateDirs) writable.push_back(r);
    writable = both(writable, in.home, host);

    std::vector<std::string> write_denies = in.spec.protectedPaths;
    if (!terminal) {
        for (const auto& h : home_write_denies()) write_denies.push_back(h);
        for (const auto& w : writable) {
            write_denies.push_back(w + "/.git/hooks");
            write_denies.push_back(w + "/.git/config");
        }
        if (!in.dropFilenameDenies)
            for (const auto& g : standard_filename_denies()) write_denies.push_back(g);
    }
    for (const auto& d : in.denyWrite) write_denies.push_back(d);
    std::vector<std::string> wd;
    for (const auto& r : write_denies) {
        if (r.find('/') == std::string::npos) wd.push_back(r);  // a file name pattern
        else for (const auto& s : spellings(r, in.home, host)) wd.push_back(s);
    }

    std::ostringstream o;
    o << "(version 1)\n";
    o << ";; cc-wrap Seatbelt profile, session " << in.spec.sessionId << ", profile " << to_string(in.profile)
      << ", mode " << policy::to_string(in.spec.mode) << "\n";
    o << "(allow default)\n";

    o << "\n;; F10: secrets are unreadable\n(deny file-read* file-write*";
    filters(o, both(secret_read_denies(), in.home, host), "subpath");
    o << ")\n";

    o << "\n;; writes: reset to deny, then the writable roots\n(deny file-write*)\n(allow file-write*";
    filters(o, writable, "subpath");
    for (const auto& t : both({"/tmp", "/var/folders"}, in.home, host)) o << "\n  (subpath " << quote(t) << ")";
    o << "\n  (literal \"/dev/null\") (literal \"/dev/tty\") (literal \"/dev/zero\") (regex #\"^/dev/fd/\"))\n";

    o << "\n;; mandatory write-denies, even inside writable roots\n(deny file-write*";
    filters(o, wd, "subpath");
    o << ")\n";

    // A rename of any ancestor would move a denied path out from under its
    // rule, so unlinking (rename's first half) is denied up the chain too.
    std::set<std::string> chain;
    for (const auto& p : wd) {
        if (is_glob(p) || p.find('/') == std::string::npos) continue;
        for (std::string a = p; a != "/"; a = parent_of(a)) chain.insert(a);
    }
    o << "\n;; F12: no rename or unlink of a denied path or its ancestors\n(deny file-write-unlink";
    for (const auto& a : chain) o << "\n  (literal " << quote(a) << ")";
    o << ")\n";

    o << "\n;; exec: never the always-dangerous binaries, nothing from a writable dir\n(deny process-exec";
    for (const auto& e : k_exec_denies) o << "\n  (literal " << quote(e) << ")";
    o << ")\n";
    if (!writable.empty()) {
        o << "(deny process-exec";
        filters(o, writable, "subpath");
        o << ")\n";
    }
    auto grants = both(in.spec.execGrantRoots, in.home, host);
    if (!grants.empty()) {
        o << "(allow process-exec";
        filters(o, grants, "subpath");
        o << ")\n";
    }

    if (terminal) {
        o << "\n;; terminal profile: network open (F16)\n";
    } else {
        o << "\n;; network: the session proxies and DNS only; no blanket loopback, no Unix sockets\n";
        o << "(deny network*)\n";
        o << "(allow network-outbound (remote ip \"localhost:" << http_port << "\") (remote ip \"localhost:"
          << socks_port << "\"))\n";
        o << "(allow network-outbound (remote unix-socket (path-literal \"/private/var/run/mDNSResponder\")))\n";
    }
    return o.str();
}

}  // namespace cc::sandbox
