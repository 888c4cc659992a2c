// The macOS Seatbelt profile without a Mac: golden snapshots, and every
// promise asked of the generated SBPL through an evaluator with Seatbelt's
// rule semantics (sbpl_eval.hpp), on a fake host that models macOS's
// symlinks (/tmp, /var, /etc -> /private/...). The system-log side is in
// test_seatbelt_log.cpp.
// CC_UPDATE_GOLDEN=1 rewrites the snapshots.
#include "harness.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cc/sandbox/plan.hpp"
#include "cc/sandbox/seatbelt.hpp"
#include "cc/sandbox/seatbelt_tap.hpp"
#include "sbpl_eval.hpp"
#include "seatbelt_fixture.hpp"

using namespace cc::sandbox;
using cc::spec::Backend;
using namespace seatbelt_fixture;

namespace {

// The question table's oracle.
struct Ask {
    sbpl::Profile p;
    explicit Ask(const std::string& text) : p(text) {}
    bool op(const std::string& o, const std::string& path) const { return p.decide(sbpl::at(o, path)).allow; }
    bool read(const std::string& path) const { return op("file-read-data", path); }
    bool stat(const std::string& path) const { return op("file-read-metadata", path); }
    bool write(const std::string& path) const { return op("file-write-data", path); }
    bool create(const std::string& path) const { return op("file-write-create", path); }
    bool unlink(const std::string& path) const { return op("file-write-unlink", path); }
    bool exec(const std::string& path) const { return op("process-exec", path) && op("file-map-executable", path); }
    bool mach(const std::string& name) const {
        sbpl::Query q;
        q.op = "mach-lookup";
        q.name = name;
        return p.decide(q).allow;
    }
    bool connect(const std::string& remote) const {
        sbpl::Query q;
        q.op = "network-outbound";
        q.remote = remote;
        return p.decide(q).allow;
    }
    bool connect_unix(const std::string& path) const {
        sbpl::Query q;
        q.op = "network-outbound";
        q.unix_socket = path;
        return p.decide(q).allow;
    }
    bool bind_port(const std::string& local) const {
        sbpl::Query q;
        q.op = "network-bind";
        q.remote = local;
        return p.decide(q).allow;
    }
    bool to_target(const std::string& o, const std::string& target) const {
        sbpl::Query q;
        q.op = o;
        q.target = target;
        return p.decide(q).allow;
    }
};

void check_golden(const std::string& name, const std::string& text) {
    cc::test::check_golden("tests/sandbox/golden/" + name, text);
}

bool is_device_filter(const sbpl::Node& f) {
    const std::string& k = f.kids[0].atom;
    const std::string& a = f.kids[1].atom;
    return (k == "literal" && a.rfind("/dev/", 0) == 0) || (k == "regex" && a.rfind("^/dev/", 0) == 0);
}

}  // namespace

TEST_CASE("seatbelt: golden profiles (chat, read-only mode, terminal)", "[seatbelt]") {
    auto in = mac_input();
    check_golden("seatbelt-chat.sb", profile_of(in));
    in.spec.mode = cc::policy::Mode::plan;
    check_golden("seatbelt-plan.sb", profile_of(in));
    auto t = mac_input();
    t.profile = Profile::terminal;
    check_golden("seatbelt-terminal.sb", profile_of(t));
}

TEST_CASE("seatbelt: deny-default base; Mach services, signals and process info stay inside", "[seatbelt]") {
    Ask a(profile_of(mac_input()));
    REQUIRE(!a.p.rules.empty());
    CHECK(a.p.version == "1");
    CHECK(a.p.rules[0].ops == std::vector<std::string>{"default"});
    CHECK_FALSE(a.p.rules[0].allow);
    // Nothing the profile does not name: an unlisted operation falls to the default.
    CHECK_FALSE(a.op("file-write-data", "/Users/u/Desktop/x"));
    CHECK_FALSE(a.op("iokit-open", ""));
    CHECK(a.mach("com.apple.system.opendirectoryd.libinfo"));
    CHECK(a.mach("com.apple.trustd.agent"));
    for (const char* svc : {"com.apple.coreservices.launchservicesd", "com.apple.lsd.mapdb", "com.apple.pasteboard.1",
                            "com.apple.SecurityServer", "com.apple.securityd.xpc", "com.apple.SystemConfiguration.configd",
                            "com.apple.dnssd.service", "com.apple.FSEvents", "com.apple.windowserver.active"}) {
        INFO(svc);
        CHECK_FALSE(a.mach(svc));
    }
    CHECK(a.to_target("signal", "same-sandbox"));
    CHECK_FALSE(a.to_target("signal", "other"));
    CHECK(a.to_target("process-info-pidinfo", "same-sandbox"));
    CHECK_FALSE(a.to_target("process-info-pidinfo", "other"));
    CHECK(a.op("process-fork", ""));
    sbpl::Query sys;
    sys.op = "sysctl-read";
    sys.name = "hw.ncpu";
    CHECK(a.p.decide(sys).allow);
    sys.name = "kern.proc.all";  // every process on the host: not listed
    CHECK_FALSE(a.p.decide(sys).allow);
}

TEST_CASE("seatbelt: reads are the binds and the system a process needs, nothing else", "[seatbelt]") {
    Ask a(profile_of(mac_input()));
    CHECK(a.read(k_work + "/src/main.c"));
    CHECK(a.read("/Users/u/cc/config/a1/settings.json"));
    CHECK(a.read("/private/tmp/share/f"));  // a bind under /tmp, as the kernel spells it
    CHECK(a.read("/usr/bin/git"));
    CHECK(a.read("/System/Library/Frameworks/x"));
    CHECK(a.read("/private/etc/hosts"));
    CHECK(a.read("/usr/local/bin/cc-wrap-init"));
    for (const auto& root : seatbelt_system_read_roots()) {
        INFO(root);
        CHECK(a.read(root + "/x"));
        CHECK(a.exec(root + "/x"));
        CHECK_FALSE(a.write(root + "/x"));
    }
    CHECK(a.read(k_tmp + "/x"));
    CHECK_FALSE(a.read(k_cc + "/agents/a2/work/secret.txt"));  // a sibling agent
    CHECK_FALSE(a.read("/Users/u/Documents/x"));
    CHECK_FALSE(a.read("/private/tmp/other-user-file"));
    CHECK_FALSE(a.read("/private/var/folders/xy/T/other"));
    CHECK_FALSE(a.read("/Library/Keychains/System.keychain"));
    CHECK_FALSE(a.read("/private/etc/master.passwd"));
    CHECK_FALSE(a.read("/private/etc/ssh/ssh_host_ed25519_key"));
    // The directories above a bind: stat, never list.
    CHECK(a.stat("/Users/u/cc"));
    CHECK(a.stat("/"));
    CHECK_FALSE(a.read("/Users/u/cc"));
    CHECK_FALSE(a.read("/Users"));
    CHECK_FALSE(a.stat("/Users/u/Documents"));
}

TEST_CASE("seatbelt: writes only in writable binds, runner state and the session's tmp", "[seatbelt]") {
    Ask a(profile_of(mac_input()));
    CHECK(a.write(k_work + "/src/main.c"));
    CHECK(a.create(k_repos + "/app/README"));
    CHECK(a.write("/private/tmp/share/f"));
    CHECK(a.write("/Users/u/cc/state/a1/log"));
    CHECK(a.create(k_tmp + "/x"));                      // /private/var spelling
    CHECK(a.create("/var/folders/xy/T/cc-wrap.ABC123/tmp/x"));
    CHECK_FALSE(a.write("/Users/u/cc/config/a1/settings.json"));  // read-only bind
    CHECK_FALSE(a.create("/private/tmp/x"));             // the shared /tmp is not writable any more
    CHECK_FALSE(a.create("/private/var/folders/xy/T/x")); // nor the shared /var/folders
    CHECK_FALSE(a.create(k_rt + "/lock"));               // nor the rest of the runtime dir
    CHECK_FALSE(a.create("/private/var/folders/xy/T/cc-wrap.ABC123/egress/inbox.sock"));
    CHECK(a.write("/dev/null"));
    CHECK_FALSE(a.create("/dev/disk0"));
    // The terminal: written to, never typed into (TIOCSTI) unless it is the command's own.
    CHECK(a.write("/dev/tty"));
    CHECK(a.write("/dev/ttys003"));
    CHECK_FALSE(a.op("file-ioctl", "/dev/tty"));
    CHECK_FALSE(a.op("file-ioctl", "/dev/ttys003"));
    auto pty = mac_input();
    pty.pty = true;
    CHECK(Ask(profile_of(pty)).op("file-ioctl", "/dev/ttys003"));
    auto term = mac_input();
    term.profile = Profile::terminal;
    CHECK(Ask(profile_of(term)).op("file-ioctl", "/dev/tty"));
}

TEST_CASE("seatbelt: a read-only bind nested in a writable one stays read-only", "[seatbelt]") {
    Ask a(profile_of(mac_input()));
    CHECK(a.read(k_repos + "/shared/lib.c"));
    CHECK_FALSE(a.write(k_repos + "/shared/lib.c"));
    CHECK_FALSE(a.create(k_repos + "/shared/new"));
    CHECK_FALSE(a.write(k_repos + "/SHARED/lib.c"));  // APFS: the same directory
    CHECK_FALSE(a.unlink(k_repos + "/shared"));  // nor renamed away from under its rule
    CHECK(a.create(k_repos + "/sharedX"));        // a sibling name is not covered
    // Removing the nested bind's deny from the text makes it writable: the
    // question really depends on that rule.
    auto text = profile_of(mac_input());
    auto at = text.find(";; read-only bind inside a writable one\n");
    REQUIRE(at != std::string::npos);
    auto end = text.find("))\n", at) + 3;
    Ask b(text.substr(0, at) + text.substr(end));
    CHECK(b.write(k_repos + "/shared/lib.c"));
}

TEST_CASE("seatbelt: binds and runner state layer by depth, as the bubblewrap mounts do", "[seatbelt]") {
    auto in = mac_input();
    in.spec.bindMounts = {{"/Users/u/w", "/Users/u/w", false},
                          {"/Users/u/w/ro", "/Users/u/w/ro", true},
                          {"/Users/u/w/ro/rw", "/Users/u/w/ro/rw", false},
                          {"/Users/u/w/state/keep", "/Users/u/w/state/keep", true}};
    in.spec.runnerStateDirs = {"/Users/u/w/ro/state", "/Users/u/w/state"};
    in.spec.protectedPaths.clear();
    Ask a(profile_of(in));
    CHECK(a.write("/Users/u/w/f"));
    CHECK_FALSE(a.write("/Users/u/w/ro/f"));
    CHECK(a.write("/Users/u/w/ro/rw/f"));          // writable inside read-only inside writable
    CHECK(a.write("/Users/u/w/ro/state/f"));       // runner state inside a read-only bind
    CHECK(a.write("/Users/u/w/state/f"));
    CHECK_FALSE(a.write("/Users/u/w/state/keep/f"));  // a read-only bind inside runner state stays read-only
    CHECK_FALSE(a.unlink("/Users/u/w/ro"));
    CHECK_FALSE(a.unlink("/Users/u/w/state/keep"));
    // Nothing said twice: one allow for /Users/u/w, none for the runner state inside it.
    std::size_t allows_w = 0, allows_state = 0;
    for (const auto& r : a.p.rules)
        if (r.allow && r.ops[0] == "file-write*")
            for (const auto& f : r.filters) {
                allows_w += f.kids[1].atom == "/Users/u/w";
                allows_state += f.kids[1].atom == "/Users/u/w/state";
            }
    CHECK(allows_w == 1);
    CHECK(allows_state == 0);
}

TEST_CASE("seatbelt: read-only modes leave only runnerStateDirs and the session's tmp writable", "[seatbelt]") {
    for (auto mode : {cc::policy::Mode::plan, cc::policy::Mode::review, cc::policy::Mode::orchestrate}) {
        auto in = mac_input();
        in.spec.mode = mode;
        std::string text = profile_of(in);
        Ask a(text);
        INFO(cc::policy::to_string(mode));
        CHECK_FALSE(a.write(k_work + "/src/main.c"));
        CHECK_FALSE(a.create("/private/tmp/share/f"));
        CHECK(a.read(k_work + "/src/main.c"));
        CHECK(a.write("/Users/u/cc/state/a1/log"));
        CHECK(a.create(k_tmp + "/x"));
        // Structurally: every write allow is runner state, the session tmp or a device.
        for (const auto& r : a.p.rules) {
            if (!r.allow) continue;
            bool writes = false;
            for (const auto& o : r.ops) writes = writes || o.rfind("file-write", 0) == 0;
            if (!writes) continue;
            for (const auto& f : r.filters) {
                INFO(f.kids[0].atom << " " << f.kids[1].atom);
                bool ok = is_device_filter(f) ||
                          (f.kids[0].atom == "subpath" &&
                           (f.kids[1].atom == "/Users/u/cc/state/a1" || f.kids[1].atom == k_tmp ||
                            f.kids[1].atom == k_rt + "/tmp"));
                CHECK(ok);
            }
        }
    }
}

TEST_CASE("seatbelt: every write allow is a writable bind, runner state, the session tmp or a device", "[seatbelt]") {
    auto in = mac_input();
    Ask a(profile_of(in));
    std::set<std::string> writable = {k_work, k_repos, "/tmp/share", "/private/tmp/share", "/Users/u/cc/state/a1",
                                      k_tmp, k_rt + "/tmp"};
    std::size_t write_allows = 0;
    for (const auto& r : a.p.rules) {
        if (!r.allow) continue;
        bool writes = false;
        for (const auto& o : r.ops) writes = writes || o.rfind("file-write", 0) == 0 || o == "file*";
        if (!writes) continue;
        for (const auto& f : r.filters) {
            ++write_allows;
            INFO(f.kids[0].atom << " " << f.kids[1].atom);
            CHECK((is_device_filter(f) || (f.kids[0].atom == "subpath" && writable.count(f.kids[1].atom))));
        }
    }
    CHECK(write_allows >= writable.size());
}

TEST_CASE("seatbelt: secrets are unreadable wherever a bind shows them, and pinned", "[seatbelt]") {
    auto in = mac_input();
    in.profile = Profile::terminal;  // $HOME is bound writable
    std::string text = profile_of(in);
    Ask a(text);
    CHECK(a.read("/Users/u/notes.txt"));
    CHECK(a.write("/Users/u/notes.txt"));
    CHECK(a.write("/Users/u/.bashrc"));  // the terminal is a human's shell
    for (const char* p : {"/Users/u/.ssh/id_ed25519", "/Users/u/.SSH/id_ed25519", "/Users/u/.Ssh",
                          "/Users/u/.aws/credentials", "/Volumes/data/aws/credentials", "/Users/u/Library/Keychains/login.keychain-db",
                          "/users/U/.ssh/config"}) {
        INFO(p);
        CHECK_FALSE(a.read(p));
        CHECK_FALSE(a.write(p));
        CHECK_FALSE(a.create(p));
    }
    // The rename chain: neither the secret nor a directory above it moves.
    CHECK_FALSE(a.unlink("/Users/u/.ssh"));
    CHECK_FALSE(a.unlink("/Users/u"));
    CHECK_FALSE(a.unlink("/Users"));
    CHECK_FALSE(a.unlink("/Users/u/Library"));
    CHECK_FALSE(a.unlink("/Volumes/data"));
    CHECK(a.unlink("/Users/u/notes.txt"));
    // Every secret deny comes after every allow that covers the secret.
    std::size_t last_allow = 0, first_secret = a.p.rules.size();
    for (const auto& r : a.p.rules) {
        auto q = sbpl::at("file-read-data", "/Users/u/.ssh/id_ed25519");
        bool covers = false;
        for (const auto& o : r.ops) covers = covers || sbpl::Profile::op_covers(o, q.op);
        if (!covers) continue;
        bool match = r.filters.empty();
        for (const auto& f : r.filters) match = match || sbpl::Profile::filter_matches(f, q);
        if (!match || r.ops[0] == "default") continue;
        if (r.allow) last_allow = std::max(last_allow, r.index);
        else first_secret = std::min(first_secret, r.index);
    }
    CHECK(last_allow > 0);
    CHECK(first_secret > last_allow);
    // Shadowing is what the table catches: a later broad allow re-opens them.
    Ask shadowed(text + "(allow file-read* (subpath \"/Users/u\"))\n");
    CHECK(shadowed.read("/Users/u/.ssh/id_ed25519"));
}

TEST_CASE("seatbelt: mandatory write-denies at every depth, case-insensitively", "[seatbelt]") {
    auto in = mac_input();
    in.denyWrite = {"*.sqlite", "/Users/u/cc/conv1/repos/app/Makefile"};
    std::string text = profile_of(in);
    Ask a(text);
    for (const auto& p : std::vector<std::string>{k_work + "/.git/hooks/pre-commit", k_work + "/.git/config", k_work + "/.GIT/HOOKS/post-checkout",
                                k_work + "/.git/Config", k_repos + "/app/.git/hooks/x", k_repos + "/new/deep/er/.git/config",
                                k_repos + "/app/.git/modules/sub/hooks/post-merge", k_repos + "/app/.git/modules/sub/config",
                                k_repos + "/app/.git/worktrees/w1/commondir", k_repos + "/app/.git/worktrees/w1/gitdir",
                                k_work + "/.git/config.worktree", k_work + "/sub/.git", k_work + "/.claude/settings.json",
                                k_work + "/deep/x/.CLAUDE/settings.local.json", k_work + "/.mcp.json", k_work + "/.codex/config.toml",
                                k_work + "/.gemini/settings.json", k_work + "/.env", k_work + "/app/.ENV", k_work + "/.env.local",
                                k_work + "/certs/x.PEM", k_work + "/k/server.Key", "/private/tmp/share/.env",
                                "/Users/u/cc/state/a1/.git/config",
                                "/Users/u/repos/app/x", k_repos + "/orig/README", k_repos + "/ORIG/README",
                                k_work + "/db.SQLITE", k_repos + "/app/Makefile"}) {
        INFO(p);
        CHECK_FALSE(a.write(p));
        CHECK_FALSE(a.create(p));
    }
    // Ordinary work in a repository goes on.
    for (const auto& p : std::vector<std::string>{k_work + "/.git/index", k_work + "/.git/objects/ab/cdef", k_work + "/.git/refs/heads/main",
                                k_work + "/.git/HEAD", k_work + "/.github/workflows/ci.yml", k_work + "/.envrc.example",
                                k_work + "/src/config", k_work + "/hooks/x", k_work + "/.gitignore",
                                k_tmp + "/clone/.git/config", k_tmp + "/clone/.git/hooks/pre-commit"}) {
        INFO(p);
        CHECK(a.write(p));
    }
    CHECK_FALSE(a.unlink(k_work + "/.git"));  // a git dir cannot be moved away and back
    CHECK_FALSE(a.unlink(k_repos));           // pinned: a protected path lies below
    // Home start files and agent settings (dispatch): outside every bind anyway,
    // and denied by rule should $HOME be bound.
    auto home = mac_input();
    home.spec.bindMounts.push_back({"/Users/u", "/Users/u", false});
    Ask h(profile_of(home));
    CHECK(h.write("/Users/u/notes.txt"));
    for (const char* p : {"/Users/u/.bashrc", "/Users/u/.ZSHRC", "/Users/u/.claude/settings.json", "/Users/u/.claude.json"}) {
        INFO(p);
        CHECK_FALSE(h.write(p));
    }
    // --drop-filename-denies drops exactly the standard file-name set.
    in.dropFilenameDenies = true;
    Ask d(profile_of(in));
    CHECK(d.write(k_work + "/.env"));
    CHECK(d.write(k_work + "/x.pem"));
    CHECK_FALSE(d.write(k_work + "/.git/hooks/pre-commit"));
    CHECK_FALSE(d.write(k_work + "/db.sqlite"));
}

TEST_CASE("seatbelt: network: the session's proxy ports on loopback only", "[seatbelt]") {
    Ask a(profile_of(mac_input()));
    CHECK(a.connect("127.0.0.1:41001"));
    CHECK(a.connect("::1:41002"));
    CHECK_FALSE(a.connect("127.0.0.1:22"));
    CHECK_FALSE(a.connect("1.1.1.1:443"));
    CHECK_FALSE(a.connect("10.0.0.1:41001"));
    CHECK_FALSE(a.connect_unix("/private/var/run/mDNSResponder"));  // no resolver: a DNS exfiltration channel
    CHECK_FALSE(a.connect_unix("/private/var/run/docker.sock"));
    CHECK_FALSE(a.bind_port("127.0.0.1:8080"));  // no local binding (the spec has no way to ask for it)
    // No proxy port known: no network at all.
    MacHost h;
    Ask none(seatbelt_profile(mac_input(), h, 0, 0));
    CHECK_FALSE(none.connect("127.0.0.1:41001"));
    // The terminal profile shares the host network, as on Linux.
    auto t = mac_input();
    t.profile = Profile::terminal;
    Ask term(profile_of(t));
    CHECK(term.connect("1.1.1.1:443"));
    CHECK(term.connect_unix("/private/var/run/mDNSResponder"));
}

TEST_CASE("seatbelt: programs run from writable binds; the host-reaching binaries never", "[seatbelt]") {
    Ask a(profile_of(mac_input()));
    CHECK(a.exec(k_work + "/node_modules/.bin/tsc"));
    CHECK(a.exec(k_work + "/a.out"));
    CHECK(a.exec(k_tmp + "/build/conftest"));
    CHECK(a.exec("/usr/bin/make"));
    CHECK(a.exec("/bin/sh"));
    CHECK(a.exec("/usr/local/bin/cc-wrap-init"));
    for (const auto& e : seatbelt_exec_denies()) {
        INFO(e);
        CHECK_FALSE(a.exec(e));
    }
    CHECK_FALSE(a.exec("/Users/u/bin/tool"));  // not bound: does not exist inside
    CHECK_FALSE(a.exec(k_cc + "/agents/a2/work/run"));
}

TEST_CASE("seatbelt: every deny carries the session tag; no allow follows a deny it overlaps", "[seatbelt]") {
    auto in = mac_input();
    std::string tag = seatbelt_tag(in);
    CHECK(tag.rfind("CCWRAP_", 0) == 0);
    CHECK(tag.size() == 23);
    in.runtimeDir = "/var/folders/xy/T/cc-wrap.OTHER1";
    CHECK(seatbelt_tag(in) != tag);  // per launch
    CHECK(seatbelt_tag(in.spec.sessionId, in.runtimeDir) == seatbelt_tag(in));
    Ask a(profile_of(mac_input()));
    std::size_t denies = 0;
    for (const auto& r : a.p.rules) {
        if (r.allow) continue;
        ++denies;
        CHECK(r.message == tag);
    }
    CHECK(denies > 5);
    // Allows come first: the only denies before the last file allow are the
    // layering of binds (the one read-only bind nested in a writable one);
    // every other deny (mandatory, secrets, pins, exec) comes after it.
    std::size_t last_file_allow = 0;
    for (const auto& r : a.p.rules)
        for (const auto& o : r.ops)
            if (r.allow && (o.rfind("file", 0) == 0 || o == "process-exec")) last_file_allow = r.index;
    std::vector<std::size_t> early;
    for (const auto& r : a.p.rules)
        if (!r.allow && r.index > 0 && r.index < last_file_allow) early.push_back(r.index);
    REQUIRE(early.size() == 1);
    const auto& nested = a.p.rules[early[0]];
    CHECK(nested.ops == std::vector<std::string>{"file-write*"});
    CHECK(nested.filters.size() == 1);
    CHECK(sbpl::Profile::filter_matches(nested.filters[0], sbpl::at("file-write-data", k_repos + "/shared/x")));
    CHECK(a.p.rules.size() - last_file_allow - 1 >= 7);  // protected, home, every-depth, names, exec, secrets, pins
}

namespace {
sbpl::Query named(const std::string& op, const std::string& name) {
    sbpl::Query q;
    q.op = op;
    q.name = name;
    return q;
}
sbpl::Query aimed(const std::string& op, const std::string& target) {
    sbpl::Query q;
    q.op = op;
    q.target = target;
    return q;
}
sbpl::Query remote(const std::string& r) {
    sbpl::Query q;
    q.op = "network-outbound";
    q.remote = r;
    return q;
}
}  // namespace

// One question per promise, asked of a dispatch profile that binds $HOME
// writable (so the home secrets and start files are inside a bind and their
// rules matter). Then each rule is taken out in turn: at least one answer
// must change, so no rule is dead weight and every rule has a question that
// fails without it (or when a later rule shadows it).
TEST_CASE("seatbelt: every rule is load-bearing for the question table", "[seatbelt]") {
    auto in = mac_input();
    in.spec.bindMounts.insert(in.spec.bindMounts.begin(), {"/Users/u", "/Users/u", false});
    in.denyWrite = {"*.sqlite"};
    in.initExe = "/opt/cc/bin/cc-wrap-init";  // outside the system roots: its own rule
    Ask a(profile_of(in));
    struct Q {
        sbpl::Query q;
        bool allow;
    };
    using sbpl::at;
    const std::vector<Q> table = {
        {at("process-fork", ""), true},
        {aimed("signal", "same-sandbox"), true},
        {aimed("signal", "other"), false},
        {aimed("process-info-pidinfo", "same-sandbox"), true},
        {aimed("mach-priv-task-port", "same-sandbox"), true},
        {at("user-preference-read", ""), true},
        {at("ipc-posix-sem", ""), true},
        {at("ipc-posix-shm", ""), true},
        {at("pseudo-tty", ""), true},
        {named("iokit-open", "RootDomainUserClient"), true},
        {named("sysctl-read", "hw.ncpu"), true},
        {named("mach-lookup", "com.apple.system.opendirectoryd.libinfo"), true},
        {named("mach-lookup", "com.apple.coreservices.launchservicesd"), false},
        {at("file-read-data", "/usr/bin/git"), true},
        {at("process-exec", "/opt/cc/bin/cc-wrap-init"), true},
        {at("file-write-data", "/dev/null"), true},
        {at("file-read-data", "/dev/urandom"), true},
        {at("file-write-data", "/dev/fd/1"), true},
        {at("file-ioctl", "/dev/zero"), true},
        {at("file-write-data", "/dev/ttys003"), true},
        {at("file-read-data", "/Users/u/notes.txt"), true},
        {at("file-read-metadata", "/Users"), true},
        {at("file-read-data", "/Users"), false},
        {at("file-write-data", "/Users/u/notes.txt"), true},
        {at("file-write-data", "/private/tmp/share/f"), true},
        {at("file-write-data", k_repos + "/app/README"), true},
        {at("file-write-data", k_repos + "/shared/lib.c"), false},
        {at("file-write-data", "/Users/u/cc/config/a1/settings.json"), false},
        {at("file-write-data", k_work + "/src/main.c"), true},
        {at("file-write-data", "/Users/u/cc/state/a1/log"), true},
        {at("file-write-create", k_tmp + "/x"), true},
        {at("file-write-data", k_repos + "/orig/README"), false},
        {at("file-write-data", "/Users/u/.bashrc"), false},
        {at("file-write-data", k_work + "/.git/hooks/pre-commit"), false},
        {at("file-write-data", k_work + "/.env"), false},
        {at("file-write-data", k_work + "/db.sqlite"), false},
        {at("process-exec", "/usr/bin/osascript"), false},
        {at("file-read-data", "/Users/u/.ssh/id_ed25519"), false},
        {at("file-write-unlink", "/Users/u/cc"), false},
        {at("file-write-unlink", "/Users/u/notes.txt"), true},
        {remote("127.0.0.1:41001"), true},
        {remote("1.1.1.1:443"), false},
    };
    for (const auto& t : table) {
        INFO(t.q.op << " " << t.q.path << t.q.name << t.q.remote << " " << t.q.target);
        CHECK(a.p.decide(t.q).allow == t.allow);
    }
    for (std::size_t i = 1; i < a.p.rules.size(); ++i) {
        sbpl::Profile without = a.p;
        without.rules.erase(without.rules.begin() + static_cast<std::ptrdiff_t>(i));
        bool changed = false;
        for (const auto& t : table) changed = changed || without.decide(t.q).allow != t.allow;
        const auto& r = a.p.rules[i];
        INFO("rule " << i << ": " << (r.allow ? "allow" : "deny") << " " << r.ops[0] << " "
                     << (r.filters.empty() ? "" : r.filters[0].kids[0].atom + " " + (r.filters[0].kids.size() > 1 ? r.filters[0].kids[1].atom : "")));
        CHECK(changed);
    }
}

// The same for the terminal profile: a human's shell with $HOME writable and
// the host network, secrets still unreadable and pinned.
TEST_CASE("seatbelt: every rule of the terminal profile is load-bearing", "[seatbelt]") {
    auto in = mac_input();
    in.profile = Profile::terminal;
    in.initExe = "/opt/cc/bin/cc-wrap-init";
    Ask a(profile_of(in));
    struct Q {
        sbpl::Query q;
        bool allow;
    };
    using sbpl::at;
    sbpl::Query dns;
    dns.op = "network-outbound";
    dns.unix_socket = "/private/var/run/mDNSResponder";
    const std::vector<Q> table = {
        {at("process-fork", ""), true},
        {aimed("signal", "same-sandbox"), true},
        {aimed("process-info-pidinfo", "same-sandbox"), true},
        {aimed("mach-priv-task-port", "same-sandbox"), true},
        {at("user-preference-read", ""), true},
        {at("ipc-posix-sem", ""), true},
        {at("ipc-posix-shm", ""), true},
        {at("pseudo-tty", ""), true},
        {named("iokit-open", "RootDomainUserClient"), true},
        {named("sysctl-read", "hw.ncpu"), true},
        {named("mach-lookup", "com.apple.SystemConfiguration.configd"), true},
        {named("mach-lookup", "com.apple.coreservices.launchservicesd"), false},
        {at("file-read-data", "/usr/bin/git"), true},
        {at("process-exec", "/opt/cc/bin/cc-wrap-init"), true},
        {at("file-write-data", "/dev/null"), true},
        {at("file-read-data", "/dev/urandom"), true},
        {at("file-write-data", "/dev/fd/1"), true},
        {at("file-ioctl", "/dev/ttys003"), true},
        {at("file-read-data", "/Users/u/notes.txt"), true},
        {at("file-read-metadata", "/Users"), true},
        {at("file-write-data", "/Users/u/notes.txt"), true},
        {at("file-write-data", "/Users/u/.bashrc"), true},
        {at("file-write-data", "/private/tmp/share/f"), true},
        {at("file-write-data", "/Users/u/cc/config/a1/settings.json"), false},
        {at("file-write-data", k_repos + "/shared/lib.c"), false},
        {at("file-write-create", k_tmp + "/x"), true},
        {at("file-write-data", k_repos + "/orig/README"), false},
        {at("process-exec", "/usr/bin/osascript"), false},
        {at("file-read-data", "/Users/u/.ssh/id_ed25519"), false},
        {at("file-write-unlink", "/Users/u/cc"), false},
        {remote("1.1.1.1:443"), true},
        {dns, true},
        {at("system-socket", ""), true},
    };
    for (const auto& t : table) {
        INFO(t.q.op << " " << t.q.path << t.q.name << t.q.remote << t.q.unix_socket);
        CHECK(a.p.decide(t.q).allow == t.allow);
    }
    for (std::size_t i = 1; i < a.p.rules.size(); ++i) {
        sbpl::Profile without = a.p;
        without.rules.erase(without.rules.begin() + static_cast<std::ptrdiff_t>(i));
        bool changed = false;
        for (const auto& t : table) changed = changed || without.decide(t.q).allow != t.allow;
        const auto& r = a.p.rules[i];
        INFO("rule " << i << ": " << (r.allow ? "allow" : "deny") << " " << r.ops[0]);
        CHECK(changed);
    }
}

TEST_CASE("seatbelt: a path with quotes, backslashes or a newline stays one string", "[seatbelt]") {
    for (const auto& odd : std::vector<std::string>{std::string("/Users/u/w\"x"), std::string("/Users/u/w\\x"), std::string("/Users/u/w\nx"),
                                  std::string("/Users/u/w\")) (allow default) (\"x"), std::string("/Users/u/w\\\"x"),
                                  std::string("/Users/u/w\tx;y")}) {
        INFO(odd);
        auto in = mac_input();
        in.spec.bindMounts = {{odd, odd, false}};
        in.spec.protectedPaths = {odd + "/keep"};
        CHECK(seatbelt_check(in).ok());
        std::string text = profile_of(in);
        Ask a(text);  // parses: balanced, every escape known
        bool found = false;
        for (const auto& r : a.p.rules)
            for (const auto& f : r.filters)
                found = found || (f.kids[0].atom == "subpath" && f.kids[1].atom == odd);
        CHECK(found);
        CHECK(a.write(odd + "/f"));
        CHECK_FALSE(a.write(odd + "/keep/f"));
        CHECK_FALSE(a.write(odd + "x/f"));
        CHECK_FALSE(a.write("/Users/u/other"));
        // No rule but the first decides for everything.
        for (const auto& r : a.p.rules)
            if (r.index > 0) CHECK_FALSE((r.filters.empty() && r.ops[0] == "default"));
    }
    CHECK(sbpl_quote("a\"b\\c\nd") == "\"a\\\"b\\\\c\\nd\"");
    // Other control bytes cannot be written: refused before anything runs.
    auto in = mac_input();
    in.spec.bindMounts = {{"/Users/u/w\x01x", "/Users/u/w\x01x", false}};
    auto st = seatbelt_check(in);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == cc::Errc::input);
    CHECK(st.error().one_line() == "bindMounts[0].hostPath: holds a control byte; it cannot be written into a Seatbelt profile");
}

TEST_CASE("seatbelt: a guestPath other than the hostPath is refused, not ignored", "[seatbelt]") {
    MacHost h;
    auto in = mac_input();
    in.spec.bindMounts[0].guestPath = "/workspace";
    auto plan = build_plan(in, h);
    REQUIRE_FALSE(plan);
    CHECK(plan.error().code == cc::Errc::input);
    CHECK(plan.error().one_line() ==
          "bindMounts[0].guestPath: '/workspace' differs from hostPath '" + k_work +
              "'; Seatbelt filters host paths and cannot show a directory elsewhere");
    // The same path spelled differently is the same path.
    in.spec.bindMounts[0].guestPath = k_work + "/./";
    CHECK(build_plan(in, h).ok());
}

TEST_CASE("seatbelt: the plan runs sandbox-exec with the profile and the per-session TMPDIR", "[seatbelt]") {
    MacHost h;
    auto in = mac_input();
    in.dropFilenameDenies = false;  // Seatbelt enforces the file-name rules: no refusal as under bubblewrap
    auto plan = build_plan(in, h);
    REQUIRE(plan);
    CHECK(plan->argv.at(0) == "/usr/bin/sandbox-exec");
    CHECK(plan->argv.at(2) == plan->seatbelt);
    CHECK(plan->env.at("TMPDIR") == k_rt + "/tmp");
    CHECK(plan->env.at("HTTPS_PROXY") == "http://127.0.0.1:41001");
    Ask a(plan->seatbelt);
    CHECK(a.create(k_tmp + "/x"));
    // --print-seatbelt on any host: the same profile, even where the mechanism is bubblewrap.
    auto printed_in = in;
    printed_in.mechanism = "bubblewrap";
    auto printed = seatbelt_print(printed_in, h);
    REQUIRE(printed);
    CHECK(*printed == plan->seatbelt);
    // and on this Linux host's real filesystem, with a chat spec and a writable bind.
    std::string dir = cc::test::scratch_dir() + "/w";
    REQUIRE(std::system(("mkdir -p '" + dir + "'").c_str()) == 0);
    auto real = real_paths();
    auto r = mac_input();
    r.spec.bindMounts = {{dir, dir, false}};
    r.spec.runnerStateDirs.clear();
    r.spec.protectedPaths.clear();
    r.mechanism = "bubblewrap";
    auto live = seatbelt_print(r, *real);
    REQUIRE(live);
    Ask l(*live);
    CHECK(l.write(dir + "/f"));
    CHECK_FALSE(l.write(dir + "/.env"));
}

// The command line, end to end on this Linux host: a read-only-mode spec (no
// bubblewrap file-name refusal applies to it) prints a deny-default profile.
TEST_CASE("seatbelt: cc-wrap --print-seatbelt prints the profile on Linux", "[seatbelt][cli]") {
    std::string dir = cc::test::scratch_dir() + "/cli";
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    REQUIRE(::mkdir((dir + "/w").c_str(), 0700) == 0);
    std::string spec = dir + "/spec.json";
    nlohmann::json j = {{"sessionId", "cli1"}, {"workspaceId", "ws"}, {"mode", "plan"},
                        {"bindMounts", {{{"hostPath", dir + "/w"}, {"guestPath", dir + "/w"}, {"readOnly", false}}}}};
    std::ofstream(spec) << j.dump();
    auto r = cc::test::run({cc::test::bin("cc-wrap"), "--spec", spec, "--print-seatbelt", "--", "true"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    Ask a(r.out);
    CHECK_FALSE(a.p.rules.at(0).allow);
    CHECK(a.p.rules.at(0).ops == std::vector<std::string>{"default"});
    CHECK(a.read(dir + "/w/f"));
    CHECK_FALSE(a.write(dir + "/w/f"));  // plan mode: read-only
    CHECK_FALSE(a.read("/home"));
}

TEST_CASE("seatbelt: sandbox-exec inside a sandbox is reported as such", "[seatbelt]") {
    CHECK(seatbelt_apply_failure("sandbox-exec: sandbox_apply: Operation not permitted").find("already inside a Seatbelt sandbox") !=
          std::string::npos);
    CHECK(seatbelt_apply_failure("sandbox-exec: sandbox_apply: Invalid argument") ==
          "sandbox-exec could not apply the profile: sandbox_apply: Invalid argument");
    CHECK(seatbelt_apply_failure("make: *** [all] Error 1").empty());
    CHECK(seatbelt_apply_failure("x sandbox-exec: sandbox_apply: Operation not permitted").empty());
}

TEST_CASE("seatbelt: the evaluator itself: last match wins, filters and refusals", "[seatbelt][sbpl]") {
    sbpl::Profile p(R"SB((version 1)
(deny default)
(allow file-read* (subpath "/a"))
(deny file-read-data (regex #"^/a/s(/|$)"))
(allow file-read-data (require-all (subpath "/a/s") (require-not (literal "/a/s/k"))) (literal "/a/s/ok"))
)SB");
    CHECK(p.decide(sbpl::at("file-read-data", "/a/x")).allow);
    CHECK(p.decide(sbpl::at("file-read-metadata", "/a/s/k")).allow);  // the deny names file-read-data only
    CHECK_FALSE(p.decide(sbpl::at("file-read-data", "/a/s/k")).allow);
    CHECK(p.decide(sbpl::at("file-read-data", "/a/s/x")).allow);     // re-opened by the later allow
    CHECK_FALSE(p.decide(sbpl::at("file-read-data", "/ab")).allow);
    CHECK_FALSE(p.decide(sbpl::at("file-write-data", "/a/x")).allow);
    CHECK_THROWS_WITH(sbpl::Profile("(allow file-reed* (subpath \"/a\"))"), Catch::Contains("unknown operation"));
    CHECK_THROWS_WITH(sbpl::Profile("(allow file-read* (subpath \"/a\")"), Catch::Contains("unclosed"));
    CHECK_THROWS_WITH(sbpl::Profile("(allow file-read* (subpth \"/a\"))"), Catch::Contains("unknown filter"));
    CHECK_THROWS_WITH(sbpl::Profile("(allow file-read* (subpath \"/a\\q\"))"), Catch::Contains("unknown escape"));
    CHECK_THROWS_WITH(sbpl::Profile("(allow file-read* (subpath \"/a\")))"), Catch::Contains("unbalanced"));
}

TEST_CASE("seatbelt: the session's TMPDIR is made private", "[seatbelt]") {
    Plan p;
    p.runtimeDir = cc::test::scratch_dir() + "/rt";
    REQUIRE(::mkdir(p.runtimeDir.c_str(), 0700) == 0);
    REQUIRE(seatbelt_prepare(p).ok());
    struct stat st {};
    REQUIRE(::stat((p.runtimeDir + "/tmp").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
    REQUIRE(::symlink("/", (cc::test::scratch_dir() + "/rt2").c_str()) == 0);
    Plan q;
    q.runtimeDir = cc::test::scratch_dir() + "/rt2/nonexistent-parent";
    CHECK_FALSE(seatbelt_prepare(q).ok());
}
