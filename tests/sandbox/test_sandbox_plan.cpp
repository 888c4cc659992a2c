// The plan without launching anything (STYLE.md practice 9): a golden
// snapshot of the bwrap plan (the Seatbelt profile: test_seatbelt.cpp), and a table of
// questions ("can the child write ~/.ssh?") answered against the generated
// mounts. CC_UPDATE_GOLDEN=1 rewrites the snapshots.
#include "harness.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cc/sandbox/env.hpp"
#include "cc/sandbox/events.hpp"
#include "cc/sandbox/plan.hpp"
#include "cc/sandbox/violation.hpp"
#include "cc/sandbox/seccomp.hpp"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace cc::sandbox;
using cc::spec::Backend;

namespace {

// A fake host tree: directories, files and symlinks by absolute path.
class FakeHost : public HostPaths {
public:
    std::set<std::string> dirs = {"/", "/usr", "/etc", "/home", "/tmp"};
    std::set<std::string> files = {"/etc/shadow"};
    std::map<std::string, std::string> links = {{"/bin", "usr/bin"}, {"/lib", "usr/lib"}};
    std::set<std::string> elves;                       // executable ELF files
    std::map<std::string, std::string> scripts;        // executable script -> its "#!" interpreter
    std::map<std::string, Owner> owners;               // stat() answers; others unknown
    std::optional<unsigned> free_id = 0x70000123u;     // unused_id()'s answer
    std::optional<unsigned> unused_id() const override { return free_id; }
    std::optional<Owner> owner(const std::string& path) const override {
        auto r = resolve(path);
        if (!r) return std::nullopt;
        auto o = owners.find(*r);
        if (o == owners.end()) return std::nullopt;
        return o->second;
    }

    void dir(const std::string& p) {
        for (std::string a = p; a != "/"; a = parent_of(a)) dirs.insert(a);
    }
    void file(const std::string& p) {
        dir(parent_of(p));
        files.insert(p);
    }
    std::optional<std::string> resolve(const std::string& path) const override {
        std::string out;
        std::istringstream in(path);
        std::string part;
        int hops = 0;
        while (std::getline(in, part, '/')) {
            if (part.empty()) continue;
            std::string next = out + "/" + part;
            auto l = links.find(next);
            while (l != links.end() && hops++ < 20) {
                next = l->second[0] == '/' ? l->second : out + "/" + l->second;
                l = links.find(next);
            }
            if (!dirs.count(next) && !files.count(next)) return std::nullopt;
            out = next;
        }
        return out.empty() ? "/" : out;
    }
    Kind kind(const std::string& path) const override {
        auto r = resolve(path);
        if (!r) return Kind::missing;
        return dirs.count(*r) ? Kind::dir : Kind::file;
    }
    std::optional<std::string> read_link(const std::string& path) const override {
        auto l = links.find(path);
        if (l == links.end()) return std::nullopt;
        return l->second;
    }
    Exec executable(const std::string& path) const override {
        auto r = resolve(path);
        Exec e;
        if (!r) return e;
        if (elves.count(*r)) e.ok = e.elf = true;
        if (auto s = scripts.find(*r); s != scripts.end()) e.ok = true, e.interpreter = s->second;
        return e;
    }
    std::vector<std::string> list(const std::string& d) const override {
        std::set<std::string> out;
        auto add = [&](const std::string& p) {
            if (p != d && parent_of(p) == d) out.insert(p.substr(d == "/" ? 1 : d.size() + 1));
        };
        for (const auto& p : dirs) add(p);
        for (const auto& p : files) add(p);
        for (const auto& [p, t] : links) add(p);
        return {out.begin(), out.end()};
    }
};

FakeHost standard_host() {
    FakeHost h;
    h.dir("/home/u/.ssh");
    h.file("/home/u/.ssh/id_rsa");
    h.file("/home/u/.bashrc");
    h.dir("/data/aws");
    h.links["/home/u/.aws"] = "/data/aws";  // a symlinked secret: both spellings
    h.dir("/srv/cc/conv1/agents/a1/work/.git/hooks");
    h.file("/srv/cc/conv1/agents/a1/work/.git/config");
    h.dir("/srv/cc/conv1/agents/a2/work");  // a sibling agent
    h.dir("/srv/cc/conv1/repos/app/.git/hooks");
    h.file("/srv/cc/conv1/repos/app/.git/config");
    h.dir("/srv/cc/conv1/repos/app/.claude");  // per-repository agent settings
    h.file("/srv/cc/conv1/repos/app/.mcp.json");
    h.dir("/srv/cc/config/a1");
    h.dir("/srv/cc/state/a1");
    h.dir("/srv/repos/app");  // the registered original checkout
    h.dir("/srv/cc/conv1/repos/orig");  // a protected checkout inside a writable bind
    return h;
}

PlanInput standard_input() {
    PlanInput in;
    in.spec.sessionId = "s1";
    in.spec.workspaceId = "ws";
    in.spec.bindMounts = {
        {"/srv/cc/conv1/agents/a1/work", "/srv/cc/conv1/agents/a1/work", false},
        {"/srv/cc/config/a1", "/srv/cc/config/a1", true},
        {"/srv/cc/conv1/repos", "/srv/cc/conv1/repos", false},
    };
    in.spec.protectedPaths = {"/srv/repos/app", "/srv/cc/conv1/repos/orig"};
    in.spec.runnerStateDirs = {"/srv/cc/state/a1"};
    in.spec.guestWorkdir = "/srv/cc/conv1/agents/a1/work";
    in.backend = Backend::native;
    in.backendLog = "test";
    in.command = {"make", "test"};
    in.home = "/home/u";
    in.hostEnv = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/u"}, {"LD_PRELOAD", "/evil.so"},
                  {"NODE_OPTIONS", "--require /evil.js"}, {"GIT_CONFIG_COUNT", "1"}, {"http_proxy", "http://x"},
                  {"LANG", "C.UTF-8"}};
    in.dropFilenameDenies = true;
    in.initExe = "/usr/bin/cc-wrap-init";
    in.runtimeDir = "/run/user/0/cc-wrap.T";
    in.egress.source = EgressWiring::Source::own;
    in.egress.inbox = "/run/user/0/cc-wrap.T/egress/inbox.sock";
    return in;
}

Plan make(const PlanInput& in, const FakeHost& h) {
    auto p = build_plan(in, h);
    if (!p) FAIL(p.error().one_line());
    return *p;
}

// --- the question table's oracle: what the mounts say about a guest path ---
const Mount* cover(const Plan& p, const std::string& g) {
    const Mount* best = nullptr;
    for (const auto& m : p.mounts) {
        if (m.op != MountOp::bind && m.op != MountOp::ro_bind && m.op != MountOp::tmpfs) continue;
        if (!is_within(g, m.dest)) continue;
        if (!best || depth(m.dest) >= depth(best->dest)) best = &m;
    }
    return best;
}
bool visible(const Plan& p, const std::string& g) {
    const Mount* m = cover(p, g);
    return m && m->op != MountOp::tmpfs;
}
bool masked(const Plan& p, const std::string& g) {
    const Mount* m = cover(p, g);
    return m && m->src.find("/mask-") != std::string::npos;
}
bool can_read(const Plan& p, const std::string& g) { return visible(p, g) && !masked(p, g); }
bool can_write_host(const Plan& p, const std::string& g) {
    const Mount* m = cover(p, g);
    return m && m->op == MountOp::bind;
}
bool is_mount_point(const Plan& p, const std::string& g) {
    for (const auto& m : p.mounts)
        if (m.dest == g) return true;
    return false;
}


void check_golden(const std::string& name, const std::string& text) {
    cc::test::check_golden("tests/sandbox/golden/" + name, text);
}

}  // namespace

TEST_CASE("plan: golden snapshot of the chat dispatch plan", "[plan]") {
    auto h = standard_host();
    check_golden("plan-chat.json", to_json(make(standard_input(), h)).dump(2) + "\n");
}

TEST_CASE("plan: under bubblewrap the init step is always the sandbox's PID 1, whatever the command", "[plan][init]") {
    auto h = standard_host();
    const std::string work = "/srv/cc/conv1/agents/a1/work";
    h.file("/usr/bin/make");
    h.elves.insert("/usr/bin/make");
    h.file("/usr/bin/python3");
    h.elves.insert("/usr/bin/python3");
    h.file(work + "/build.py");
    h.scripts[work + "/build.py"] = "/usr/bin/python3";
    h.file(work + "/old.py");
    h.scripts[work + "/old.py"] = "/usr/bin/python2";  // no such interpreter
    h.file(work + "/notes.txt");                         // there, not executable
    h.file("/home/u/bin/tool");
    h.elves.insert("/home/u/bin/tool");
    h.links[work + "/tool"] = "/home/u/bin/tool";       // on the host only: home is not bound
    h.file(work + "/bin/real");
    h.elves.insert(work + "/bin/real");
    h.links[work + "/rel"] = "bin/real";                // relative, inside the bind

    auto plan_for = [&](std::vector<std::string> cmd, std::string path = "/usr/bin:/bin", bool pty = false) {
        auto in = standard_input();
        in.command = std::move(cmd);
        in.hostEnv["PATH"] = std::move(path);
        in.pty = pty;
        return make(in, h);
    };
    // bubblewrap is told --as-pid-1 and runs the init step, told --pid1 1,
    // which runs the command with the argv given; the init binary is bound.
    auto as_pid1 = [&](const Plan& p, const std::vector<std::string>& cmd) {
        CHECK(p.initStep);
        CHECK(p.initWhy == "the init step is the sandbox's PID 1: it carries the command's layers and reaps");
        CHECK(is_mount_point(p, "/run/cc/init"));
        auto dash = std::find(p.argv.begin(), p.argv.end(), "--");
        REQUIRE(dash != p.argv.end());
        REQUIRE(dash != p.argv.begin());
        CHECK(dash[-1] == "--as-pid-1");
        REQUIRE(p.argv.end() - dash > 5);
        CHECK(std::vector<std::string>(dash + 1, dash + 5) ==
              std::vector<std::string>{"/run/cc/init", "--internal-sandbox-init", "--pid1", "1"});
        CHECK(std::vector<std::string>(p.argv.end() - static_cast<long>(cmd.size()) - 1, p.argv.end()) ==
              [&] {
                  std::vector<std::string> tail{"--"};
                  tail.insert(tail.end(), cmd.begin(), cmd.end());
                  return tail;
              }());
    };
    SECTION("found on PATH: argv keeps the name as given") { as_pid1(plan_for({"make", "test"}), {"make", "test"}); }
    SECTION("an absolute path") { as_pid1(plan_for({"/bin/make"}), {"/bin/make"}); }
    SECTION("a script") { as_pid1(plan_for({"./build.py"}), {"./build.py"}); }
    SECTION("not found (the init step reports 127)") { as_pid1(plan_for({"nosuch"}), {"nosuch"}); }
    SECTION("a file that is not executable (126)") { as_pid1(plan_for({"./notes.txt"}), {"./notes.txt"}); }
    SECTION("a symlink to a host file the sandbox does not show") { as_pid1(plan_for({"./tool"}), {"./tool"}); }
    SECTION("--pty") { as_pid1(plan_for({"make"}, "/usr/bin", true), {"make"}); }
}

TEST_CASE("plan: question table for chat mode", "[plan]") {
    auto h = standard_host();
    Plan p = make(standard_input(), h);
    const std::string work = "/srv/cc/conv1/agents/a1/work";
    CHECK(can_write_host(p, work + "/src/main.c"));
    CHECK(can_write_host(p, "/srv/cc/conv1/repos/app/README"));
    CHECK_FALSE(can_write_host(p, "/srv/cc/config/a1/settings.json"));  // agent config ro
    CHECK(can_read(p, "/srv/cc/config/a1/settings.json"));
    CHECK_FALSE(visible(p, "/srv/cc/conv1/agents/a2/work"));          // sibling agent
    CHECK_FALSE(visible(p, "/home/u/.ssh/id_rsa"));                    // home not bound
    CHECK_FALSE(visible(p, "/srv/repos/app"));                         // original checkout not bound
    CHECK_FALSE(can_write_host(p, work + "/.git/hooks/pre-commit"));   // mandatory
    CHECK_FALSE(can_write_host(p, work + "/.git/config"));
    CHECK_FALSE(can_write_host(p, "/srv/cc/conv1/repos/app/.git/hooks/pre-commit"));
    CHECK(can_write_host(p, work + "/.git/index"));                    // commits still work
    CHECK_FALSE(can_write_host(p, "/srv/cc/conv1/repos/app/.claude/settings.json"));  // repo agent settings
    CHECK_FALSE(can_write_host(p, "/srv/cc/conv1/repos/app/.mcp.json"));
    CHECK(can_write_host(p, "/srv/cc/conv1/repos/app/.claude-notes.md"));  // only the exact names
    CHECK_FALSE(can_write_host(p, "/srv/cc/conv1/repos/orig/file"));  // protected inside writable
    CHECK(is_mount_point(p, "/srv/cc/conv1/repos"));                   // its parent cannot be renamed
    CHECK(is_mount_point(p, "/srv/cc/conv1/repos/orig"));
    CHECK_FALSE(can_read(p, "/etc/shadow"));
    CHECK_FALSE(can_write_host(p, "/usr/bin/x"));
    CHECK_FALSE(can_write_host(p, "/etc/passwd"));
    CHECK(can_write_host(p, "/srv/cc/state/a1/log"));
    // The root is read-only after setup, and nothing is shared but loopback.
    CHECK(p.mounts.back().op == MountOp::remount_ro);
    auto has = [&](const std::string& a) { return std::find(p.argv.begin(), p.argv.end(), a) != p.argv.end(); };
    for (const char* f : {"--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
                          "--new-session"})
        CHECK(has(f));
    CHECK(has("ALL"));  // --cap-drop ALL
    CHECK(p.chdir == work);
}

TEST_CASE("plan: read-only modes keep runnerStateDirs writable", "[plan]") {
    auto h = standard_host();
    for (auto mode : {cc::policy::Mode::plan, cc::policy::Mode::review, cc::policy::Mode::orchestrate}) {
        auto in = standard_input();
        in.spec.mode = mode;
        in.dropFilenameDenies = false;  // nothing host-backed writable but state: still refused
        auto r = build_plan(in, h);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == cc::Errc::unavailable);
        in.spec.runnerStateDirs.clear();
        Plan p = make(in, h);  // nothing writable: the filename rules hold trivially
        CHECK_FALSE(can_write_host(p, "/srv/cc/conv1/agents/a1/work/x"));
        CHECK_FALSE(can_write_host(p, "/srv/cc/conv1/repos/app/x"));
        in.spec.runnerStateDirs = {"/srv/cc/state/a1"};
        in.dropFilenameDenies = true;
        p = make(in, h);
        CHECK(can_write_host(p, "/srv/cc/state/a1/x"));
        CHECK_FALSE(can_write_host(p, "/srv/cc/conv1/agents/a1/work/x"));
    }
}

TEST_CASE("plan: secrets inside a bind are masked in both spellings", "[plan]") {
    auto h = standard_host();
    auto in = standard_input();
    in.spec.bindMounts.push_back({"/home/u", "/home/u", true});
    in.spec.bindMounts.push_back({"/data", "/data", true});
    Plan p = make(in, h);
    CHECK(visible(p, "/home/u/notes.txt"));
    CHECK_FALSE(can_read(p, "/home/u/.ssh/id_rsa"));
    CHECK_FALSE(can_read(p, "/home/u/.aws/credentials"));
    CHECK_FALSE(can_read(p, "/data/aws/credentials"));  // the resolved spelling
    auto d = std::find_if(p.denies.begin(), p.denies.end(), [](const DenyRule& r) { return r.rule == "~/.aws"; });
    REQUIRE(d != p.denies.end());
    CHECK(d->spellings == std::vector<std::string>{"/home/u/.aws", "/data/aws"});
}

TEST_CASE("plan: terminal profile: home writable, secrets unreadable, network open", "[plan]") {
    auto h = standard_host();
    auto in = standard_input();
    in.profile = Profile::terminal;
    in.spec.bindMounts = {{"/srv/cc/conv1/agents/a1/work", "/srv/cc/conv1/agents/a1/work", false}};
    Plan p = make(in, h);
    CHECK(can_write_host(p, "/home/u/.bashrc"));  // a human's shell may edit its rc files
    CHECK(can_write_host(p, "/home/u/project/x"));
    CHECK_FALSE(can_read(p, "/home/u/.ssh/id_rsa"));
    CHECK_FALSE(can_read(p, "/home/u/.aws/x"));
    CHECK(p.proxy.transport == Transport::host);
    CHECK(std::find(p.argv.begin(), p.argv.end(), "--unshare-net") == p.argv.end());
    CHECK(p.env.count("HTTP_PROXY") == 0);

    in.backend = Backend::none;  // never a host shell with a native badge
    auto r = build_plan(in, h);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == cc::Errc::unavailable);
}

TEST_CASE("plan: fails closed on rules bubblewrap cannot enforce", "[plan]") {
    auto h = standard_host();
    auto in = standard_input();
    in.dropFilenameDenies = false;
    auto r = build_plan(in, h);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == cc::Errc::unavailable);
    CHECK(r.error().subject.find("'.env'") != std::string::npos);

    in = standard_input();
    in.denyWrite = {"*.sqlite"};
    r = build_plan(in, h);
    REQUIRE_FALSE(r);
    CHECK(r.error().subject.find("*.sqlite") != std::string::npos);

    // A .git without hooks inside a writable bind: covering it would need a
    // mount point created on the host.
    h.dirs.erase("/srv/cc/conv1/repos/app/.git/hooks");
    in = standard_input();
    r = build_plan(in, h);
    REQUIRE_FALSE(r);
    CHECK(r.error().one_line().find("repos/app/.git/hooks") != std::string::npos);
    // Every missing target is named in the one refusal, never one per run.
    h.files.erase("/srv/cc/conv1/agents/a1/work/.git/config");
    r = build_plan(in, h);
    REQUIRE_FALSE(r);
    CHECK(r.error().subject == "2 mandatory write-deny targets");
    CHECK(r.error().one_line().find("repos/app/.git/hooks") != std::string::npos);
    CHECK(r.error().one_line().find("a1/work/.git/config") != std::string::npos);

    in = standard_input();
    in.inheritEnv = true;
    r = build_plan(in, standard_host());
    REQUIRE_FALSE(r);
    CHECK(r.error().code == cc::Errc::input);

    in = standard_input();
    in.backend = Backend::microvm;
    r = build_plan(in, standard_host());
    REQUIRE_FALSE(r);
    CHECK(r.error().code == cc::Errc::unavailable);
}

TEST_CASE("plan: --deny-write path inside a writable bind becomes a read-only bind", "[plan]") {
    auto h = standard_host();
    h.file("/srv/cc/conv1/agents/a1/work/Makefile");
    auto in = standard_input();
    in.denyWrite = {"/srv/cc/conv1/agents/a1/work/Makefile"};
    Plan p = make(in, h);
    CHECK_FALSE(can_write_host(p, "/srv/cc/conv1/agents/a1/work/Makefile"));
    CHECK(can_write_host(p, "/srv/cc/conv1/agents/a1/work/other"));
}

TEST_CASE("plan: environment is sanitised and the proxies are set", "[plan][env]") {
    Plan p = make(standard_input(), standard_host());
    for (const char* k : {"LD_PRELOAD", "NODE_OPTIONS", "GIT_CONFIG_COUNT"}) CHECK(p.env.count(k) == 0);
    CHECK(p.env.at("http_proxy") == "http://127.0.0.1:3128");
    CHECK(p.env.at("HTTPS_PROXY") == "http://127.0.0.1:3128");
    CHECK(p.env.at("ALL_PROXY") == "socks5h://127.0.0.1:1080");
    CHECK(p.env.at("GIT_SSH_COMMAND").find("nc -X 5 -x 127.0.0.1:1080") != std::string::npos);
    CHECK(p.env.at("LANG") == "C.UTF-8");
    CHECK(p.proxy.transport == Transport::fd_handover);

    auto in = standard_input();
    in.egress.inbox.clear();
    in.egress.httpUnix = "/r/http.sock";
    in.egress.socksUnix = "/r/socks.sock";
    p = make(in, standard_host());
    CHECK(p.proxy.transport == Transport::socat_bridge);
    CHECK_FALSE(p.notes.empty());  // the fallback is said out loud

    in = standard_input();
    in.backend = Backend::none;
    in.inheritEnv = true;
    p = make(in, standard_host());
    CHECK(p.env.at("LD_PRELOAD") == "/evil.so");
    CHECK(p.inheritEnv);
    CHECK(p.argv[0] == "/usr/bin/cc-wrap-init");

    for (const char* k : {"LD_AUDIT", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "ENV", "PERL5OPT", "RUBYOPT",
                          "PYTHONSTARTUP", "GIT_SSH_COMMAND", "BASH_FUNC_x%%", "no_proxy"})
        CHECK(is_stripped_variable(k));
    for (const char* k : {"PATH", "HOME", "LANG", "TERM", "USER"}) CHECK_FALSE(is_stripped_variable(k));
}

TEST_CASE("spellings: literal then resolved; globs and missing paths as written", "[paths]") {
    auto h = standard_host();
    CHECK(spellings("~/.aws", "/home/u", h) == std::vector<std::string>{"/home/u/.aws", "/data/aws"});
    CHECK(spellings("~/.ssh/", "/home/u", h) == std::vector<std::string>{"/home/u/.ssh"});
    CHECK(spellings("/home/u/*.pem", "/home/u", h) == std::vector<std::string>{"/home/u/*.pem"});
    CHECK(spellings("/nope/x", "/home/u", h) == std::vector<std::string>{"/nope/x"});
    CHECK(normalise("/a/./b/../c//", "/h") == "/a/c");
    CHECK(is_within("/a/b", "/a"));
    CHECK_FALSE(is_within("/ab", "/a"));
}

TEST_CASE("violations are read off stderr lines", "[violation]") {
    struct Row { const char* line; const char* action; const char* target; };
    const Row rows[] = {
        {"touch: cannot touch '/w/x': Read-only file system", "write", "/w/x"},
        {"sh: 1: cannot create /srv/repo/f: Read-only file system", "write", "/srv/repo/f"},
        {"cat: /home/u/.ssh/id_rsa: Permission denied", "read", "/home/u/.ssh/id_rsa"},
        {"mkdir: cannot create directory \xE2\x80\x98/w/.git/hooks/x\xE2\x80\x99: Read-only file system", "write", "/w/.git/hooks/x"},
        {"PermissionError: [Errno 13] Permission denied: '/etc/shadow'", "unknown", "/etc/shadow"},
        {"mv: cannot move '/w/repos' to '/w/x': Device or resource busy", nullptr, nullptr},
        {"bash: line 1: /w/run.sh: Permission denied", "unknown", "/w/run.sh"},
    };
    for (const auto& r : rows) {
        auto v = parse_violation(r.line);
        if (!r.action) {
            CHECK_FALSE(v);
            continue;
        }
        REQUIRE(v);
        CHECK(v->target == r.target);
        // "unknown" is an answer too: the line names no operation, and the
        // event must not guess one.
        CHECK(v->action == r.action);
    }
}

TEST_CASE("violations: a request cc-egress refused", "[violation]") {
    const std::string deny =
        R"({"event":"connection","proto":"http","client":"127.0.0.1:5","host":"evil.example","port":80,)"
        R"("decision":"deny","rule":"no allow entry","reason":"not in the allowlist","bytesUp":0,"bytesDown":0,"durationMs":0.1})";
    auto v = network_violation(deny);
    REQUIRE(v);
    CHECK(v->action == "network");
    CHECK(v->target == "evil.example:80");
    CHECK(v->raw == deny);
    // No name asked for (SOCKS5 with an address): the address, IPv6 bracketed.
    auto v6 = network_violation(R"({"event":"connection","proto":"socks5","address":"fd00::1","port":443,"decision":"deny"})");
    REQUIRE(v6);
    CHECK(v6->target == "[fd00::1]:443");
    CHECK_FALSE(network_violation(R"({"event":"connection","host":"ok.example","port":443,"decision":"allow"})"));
    CHECK_FALSE(network_violation(R"({"event":"ready","decision":"deny"})"));
    CHECK_FALSE(network_violation("cc-egress: stopping"));
    CHECK_FALSE(network_violation(""));
}

TEST_CASE("events: sequence, text and base64 chunks", "[events]") {
    EventWriter w("s9");
    auto a = nlohmann::json::parse(w.line("starting"));
    auto b = nlohmann::json::parse(w.chunk("stdout", "h\xC3\xA9llo\n"));
    auto c = nlohmann::json::parse(w.chunk("stderr", std::string("\xff\x00\x01", 3)));
    CHECK(a["seq"] == 1);
    CHECK(b["seq"] == 2);
    CHECK(b["sessionId"] == "s9");
    CHECK(b["text"] == "h\xC3\xA9llo\n");
    CHECK(c["bytes"] == "/wAB");
    CHECK(base64("ab") == "YWI=");
    Utf8Carry carry;
    CHECK(carry.take("x\xC3") == "x");  // an é split by the pipe stays text
    CHECK(carry.take("\xA9") == "\xC3\xA9");
    bool tail = false;
    CHECK(utf8_valid_prefix("\xED\xA0\x80", tail) == 0);  // a surrogate is not UTF-8
    // The hand-built chunk line reads back as the same text and the same
    // JSON nlohmann would write.
    std::string tricky;
    for (int ch = 0; ch < 0x80; ++ch) tricky.push_back(static_cast<char>(ch));
    tricky += "\"\\ \xE2\x82\xAC \xF0\x9F\x98\x80";
    std::string line = w.chunk("stdout", tricky);
    auto j = nlohmann::json::parse(line);
    CHECK(j["text"] == tricky);
    CHECK(j.dump() == line);
}

TEST_CASE("identity: never host uid 0; root runs the command as the work dir's owner, else an id of its own",
          "[plan][identity]") {
    auto h = standard_host();
    auto spec = standard_input().spec;
    const std::string work = "/srv/cc/conv1/agents/a1/work";
    // A user: that user, in a user namespace, nothing switched.
    auto u = choose_identity(spec, "/home/u", 1000, 1000, std::nullopt, h);
    REQUIRE(u);
    CHECK(u->uid == 1000);
    CHECK_FALSE(u->drop);
    CHECK(u->userNamespace);
    // Root, work dir owned by root: not nobody (whose other processes could
    // trace it) but an id no account or process has.
    h.owners[work] = {0, 0, 0755};
    auto r = choose_identity(spec, "/root", 0, 0, std::nullopt, h);
    REQUIRE(r);
    CHECK(r->drop);
    CHECK(r->uid == 0x70000123u);
    CHECK(r->gid == 0x70000123u);
    CHECK(r->why == "run by root, the working directory " + work +
                        " belongs to root: a uid and gid of this session's own, 1879048483, that no account or running "
                        "process has (--run-as to choose)");
    // None to be had: refused (nothing runs as nobody behind the operator's back).
    h.free_id.reset();
    auto none = choose_identity(spec, "/root", 0, 0, std::nullopt, h);
    REQUIRE_FALSE(none);
    CHECK(none.error().one_line() ==
          "run by root: no unused uid found in 1879048192-2147483646 (--run-as to choose)");
    h.free_id = 0x70000123u;
    // Root, work dir owned by a user: that user.
    h.owners[work] = {1001, 1002, 0755};
    r = choose_identity(spec, "/root", 0, 0, std::nullopt, h);
    REQUIRE(r);
    CHECK(r->uid == 1001);
    CHECK(r->gid == 1002);
    // ... found through guestWorkdir below a bind, or the first writable bind without one.
    spec.guestWorkdir = "/srv/cc/conv1/repos/orig";
    h.owners["/srv/cc/conv1/repos/orig"] = {2001, 2001, 0755};
    CHECK(choose_identity(spec, "/root", 0, 0, std::nullopt, h)->uid == 2001);
    spec.guestWorkdir.reset();
    CHECK(choose_identity(spec, "/root", 0, 0, std::nullopt, h)->uid == 1001);
    // A user-owned dir whose group is root: the gid is nobody's.
    h.owners[work] = {1001, 0, 0775};
    CHECK(choose_identity(spec, "/root", 0, 0, std::nullopt, h)->gid == 65534);
    // --run-as: numbers only, never 0, root only for other ids.
    auto a = choose_identity(spec, "/root", 0, 0, std::string("4242:77"), h);
    REQUIRE(a);
    CHECK(a->uid == 4242);
    CHECK(a->gid == 77);
    CHECK(choose_identity(spec, "/root", 0, 0, std::string("4242"), h)->gid == 4242);
    for (const char* bad : {"0", "0:5", "5:0", "nobody", "", ":", "1:", "99999999999", "4294967295"}) {
        auto e = choose_identity(spec, "/root", 0, 0, std::string(bad), h);
        INFO(bad);
        REQUIRE_FALSE(e);
        CHECK(e.error().code == cc::Errc::input);
    }
    CHECK_FALSE(choose_identity(spec, "/home/u", 1000, 1000, std::string("1001"), h));
    CHECK(choose_identity(spec, "/home/u", 1000, 1000, std::string("1000:1000"), h));
}

TEST_CASE("plan: user namespace, seccomp and identity are in the plan and argv", "[plan][identity]") {
    auto h = standard_host();
    auto in = standard_input();
    in.identity = {true, true, 65534, 65534, "run by root"};
    h.owners["/srv/cc/conv1/agents/a1/work"] = {0, 0, 0755};
    h.owners["/srv/cc/conv1/repos"] = {65534, 65534, 0755};
    Plan p = make(in, h);
    CHECK(p.layers == std::vector<std::string>{"user-ns", "mount-ns", "pid-ns", "ipc-ns", "uts-ns", "net-ns", "seccomp"});
    auto has = [&](const std::string& a) { return std::find(p.argv.begin(), p.argv.end(), a) != p.argv.end(); };
    CHECK(has("--unshare-user"));
    CHECK(has("--disable-userns"));
    auto sc = std::find(p.argv.begin(), p.argv.end(), "--seccomp");
    REQUIRE(sc != p.argv.end());
    CHECK(*(sc + 1) == std::to_string(bwrap_seccomp_fd));
    REQUIRE(p.seccomp);
    // The root-owned writable bind is said to be unwritable for uid 65534; the other is not.
    int unwritable = 0;
    for (const auto& n : p.notes) unwritable += n.find("is not writable by uid 65534") != std::string::npos;
    CHECK(unwritable == 1);
    // nobody, given by the operator, works but is said to be shared.
    CHECK(std::count(p.notes.begin(), p.notes.end(),
                     "the command runs as nobody (65534; run by root), a uid the host's daemons may share: a process of "
                     "theirs could trace it (give the working directory an owner of its own, or --run-as)") == 1);
    auto j = to_json(p);
    CHECK(j["identity"]["hostUid"] == 65534);
    CHECK(j["identity"]["switchedFromRoot"] == true);
    CHECK_FALSE(j["identity"].contains("sandboxUid"));
    CHECK_FALSE(has("--uid"));
    CHECK(j["seccomp"]["rules"].size() == p.seccomp->rules.size());
    {
        // A session's own uid: nobody inside bubblewrap's user namespace,
        // right after --disable-userns; the plan says both.
        auto own = in;
        own.identity = {true, true, 0x70000123u, 0x70000123u, "run by root", true};
        Plan q = make(own, h);
        auto at = std::find(q.argv.begin(), q.argv.end(), "--uid");
        REQUIRE(at != q.argv.end());
        CHECK(std::vector<std::string>(at - 1, at + 4) ==
              std::vector<std::string>{"--disable-userns", "--uid", "65534", "--gid", "65534"});
        auto oj = to_json(q);
        CHECK(oj["identity"]["hostUid"] == 0x70000123u);
        CHECK(oj["identity"]["sandboxUid"] == 65534);
        CHECK(oj["identity"]["sandboxGid"] == 65534);
    }
    CHECK(summary(p)["layers"].size() == 7);
    // allowNestedNamespaces: no --disable-userns, no unshare/clone rules; allowPtrace: no ptrace rule.
    in.spec.allowNestedNamespaces = true;
    in.spec.allowPtrace = true;
    p = make(in, h);
    CHECK(std::find(p.argv.begin(), p.argv.end(), "--disable-userns") == p.argv.end());
    for (const auto& r : p.seccomp->rules) {
        CHECK(r.syscall != "unshare");
        CHECK(r.syscall != "clone3");
        CHECK(r.syscall != "ptrace");
    }
    // The terminal profile shares the host network: no net-ns layer.
    in = standard_input();
    in.profile = Profile::terminal;
    p = make(in, h);
    CHECK(std::find(p.layers.begin(), p.layers.end(), "net-ns") == p.layers.end());
    CHECK(std::find(p.layers.begin(), p.layers.end(), "seccomp") != p.layers.end());
}

TEST_CASE("seccomp: the policy compiles with libseccomp into a sealed BPF memfd", "[seccomp]") {
    auto pol = default_seccomp({});
    auto fd = compile_seccomp(pol);
    REQUIRE(fd);
    struct stat st {};
    REQUIRE(::fstat(*fd, &st) == 0);
    CHECK(st.st_size > 0);
    CHECK(st.st_size % 8 == 0);  // whole sock_filter instructions
    CHECK(::fcntl(*fd, F_GET_SEALS) & F_SEAL_WRITE);
    CHECK(::write(*fd, "x", 1) == -1);
    ::close(*fd);
    // Every rule names a call libseccomp knows on at least one ABI.
    for (const auto& r : pol.rules) {
        INFO(r.syscall);
        CHECK(seccomp_syscall_resolve_name(r.syscall.c_str()) != __NR_SCMP_ERROR);
    }
}

TEST_CASE("plan: credentials are stripped from the environment unless envPass names them", "[plan][env]") {
    auto in = standard_input();
    in.hostEnv["GITHUB_TOKEN"] = "ghp_x";
    in.hostEnv["AWS_SECRET_ACCESS_KEY"] = "k";
    in.hostEnv["ANTHROPIC_API_KEY"] = "sk";
    in.hostEnv["my_service_password"] = "p";
    in.hostEnv["PIP_INDEX_URL"] = "https://user:s3cret@pypi.example/simple";
    in.hostEnv["PLAIN_URL"] = "https://pypi.example/simple";
    in.hostEnv["USER_AT"] = "https://user@host.example/";
    in.hostEnv["NPM_TOKEN"] = "n";
    in.spec.envPass = {"NPM_TOKEN"};
    Plan p = make(in, standard_host());
    for (const char* k : {"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY", "my_service_password",
                          "PIP_INDEX_URL"}) {
        INFO(k);
        CHECK(p.env.count(k) == 0);
        CHECK(std::find(p.envRemoved.begin(), p.envRemoved.end(), k) != p.envRemoved.end());
    }
    CHECK(p.envRemovedWhy.at("GITHUB_TOKEN") == "credential");
    CHECK(p.envRemovedWhy.at("PIP_INDEX_URL") == "credential-url");
    CHECK(p.envRemovedWhy.at("LD_PRELOAD") == "injection");
    CHECK(p.envRemovedWhy.at("http_proxy") == "proxy");
    CHECK(p.env.at("PLAIN_URL") == "https://pypi.example/simple");
    CHECK(p.env.at("USER_AT") == "https://user@host.example/");
    CHECK(p.env.at("NPM_TOKEN") == "n");
    CHECK(p.envPassed == std::vector<std::string>{"NPM_TOKEN"});
    CHECK(std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) { return n.find("NPM_TOKEN") != std::string::npos; }));
    // envPass cannot bring back an injection vector.
    in.spec.envPass = {"LD_PRELOAD"};
    CHECK(make(in, standard_host()).env.count("LD_PRELOAD") == 0);
}

TEST_CASE("plan: database, registry, CI, password-manager and cloud secrets and git's redirections never get in",
          "[plan][env]") {
    auto in = standard_input();
    const std::vector<std::string> credentials = {
        "PGPASSWORD", "MYSQL_PWD", "REDISCLI_AUTH", "GITHUB_PAT", "AZURE_DEVOPS_EXT_PAT", "SENTRY_DSN",
        "DATABASE_DSN", "AZURE_STORAGE_CONNECTION_STRING", "CI_JOB_JWT_V2", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_URL", "BW_SESSION", "OP_SESSION_my", "TF_TOKEN_app_terraform_io",
        "POETRY_PYPI_TOKEN_PYPI", "UV_INDEX_INTERNAL_PASSWORD", "npm_config_//registry.example/:_authToken",
        "GEM_HOST_API_KEY", "AZURE_STORAGE_SAS_TOKEN", "GOOGLE_CREDENTIALS"};
    const std::vector<std::string> redirections = {"GIT_DIR", "GIT_WORK_TREE", "GIT_TEMPLATE_DIR", "GIT_EDITOR",
                                                   "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "LESSOPEN"};
    for (const auto& k : credentials) in.hostEnv[k] = "x";
    for (const auto& k : redirections) in.hostEnv[k] = "/host/repo";
    in.hostEnv["GIT_AUTHOR_NAME"] = "a";  // identity, not a redirection: kept
    in.hostEnv["PASSAGE"] = "x";          // no secret's shape: kept
    Plan p = make(in, standard_host());
    for (const auto& k : credentials) {
        INFO(k);
        CHECK(p.env.count(k) == 0);
        CHECK(p.envRemovedWhy.at(k) == "credential");
    }
    for (const auto& k : redirections) {
        INFO(k);
        CHECK(p.env.count(k) == 0);
        CHECK(p.envRemovedWhy.at(k) == "injection");
    }
    CHECK(p.env.at("GIT_AUTHOR_NAME") == "a");
    CHECK(p.env.at("PASSAGE") == "x");
}

TEST_CASE("plan: system and other users' secrets are masked wherever a bind shows them", "[plan]") {
    auto h = standard_host();
    h.file("/etc/gshadow");
    h.dir("/home/bob/.ssh");
    h.file("/home/bob/.ssh/id_ed25519");
    h.dir("/home/bob/.codex");
    h.file("/home/bob/.codex/auth.json");
    h.dir("/home/bob/src");
    auto in = standard_input();
    in.spec.bindMounts.push_back({"/etc", "/hostetc", true});
    in.spec.bindMounts.push_back({"/home", "/homes", true});
    Plan p = make(in, h);
    CHECK(masked(p, "/etc/shadow"));
    CHECK(masked(p, "/hostetc/shadow"));
    CHECK(masked(p, "/hostetc/gshadow"));
    CHECK(masked(p, "/homes/bob/.ssh"));
    CHECK(masked(p, "/homes/bob/.codex/auth.json"));
    CHECK(masked(p, "/homes/u/.ssh"));
    CHECK(can_read(p, "/homes/bob/src"));
    // A bind of bob's home still brings bob's secrets under the rules, and
    // his start files under the write rules: read-only here, so nothing is
    // missing; writable, a start file that is not there is refused by name
    // (bubblewrap cannot cover a path that does not exist).
    in = standard_input();
    in.spec.bindMounts.push_back({"/home/bob", "/bob", true});
    p = make(in, h);
    CHECK(masked(p, "/bob/.ssh"));
    CHECK(can_read(p, "/bob/src"));
    in.spec.bindMounts.back().readOnly = false;
    auto refused = build_plan(in, h);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().one_line().find("/home/bob/.bashrc") != std::string::npos);
    CHECK(refused.error().one_line().find("/home/bob/.zshrc") != std::string::npos);
    // Every one missing but ~/.codex, which exists.
    CHECK(refused.error().subject == std::to_string(home_write_denies().size() - 1) + " mandatory write-deny targets");
    // With the write supervisor, a target that does not exist is refused
    // when something tries to create it: the plan is made, nothing is asked
    // of the host, and the rules name bob's start files in the guest's terms.
    in.writeSupervisor = true;
    in.dropFilenameDenies = false;
    auto sup = build_plan(in, h);
    REQUIRE(sup);
    REQUIRE(sup->writeRules);
    auto has_rule = [&](const std::string& guest) {
        for (const auto& r : sup->writeRules->paths)
            if (r.path == guest) return true;
        return false;
    };
    CHECK(has_rule("/bob/.bashrc"));
    CHECK(has_rule("/bob/.gitconfig"));
    CHECK(has_rule("/bob/.config/git"));
    CHECK(has_rule("/bob/.local/bin"));   // first on PATH at his next login
    CHECK(has_rule("/bob/.local/lib"));   // Python's user site: .pth files run at every start
    CHECK(has_rule("/bob/.lesskey"));     // LESSOPEN set from there runs a command per file less opens
    CHECK(std::find(sup->layers.begin(), sup->layers.end(), "write-supervisor") != sup->layers.end());
    CHECK(judge(*sup->writeRules, "/bob/.bashrc", cc::sandbox::WriteOp::create).source.find("mandatory") == 0);
    CHECK(judge(*sup->writeRules, "/bob/notes.txt", cc::sandbox::WriteOp::create).allowed);
    bool said = false;
    for (const auto& d : sup->denies)
        for (const auto& e : d.enforcement)
            if (e == "/bob/.bashrc: absent on the host; the write supervisor refuses creating it") said = true;
    CHECK(said);
    // The standard filename rules run on Linux now: judged by name.
    CHECK(judge(*sup->writeRules, "/bob/src/.env", cc::sandbox::WriteOp::create).rule == ".env");
    CHECK(judge(*sup->writeRules, "/bob/src/site.pem", cc::sandbox::WriteOp::write).rule == "*.pem");
}

TEST_CASE("plan: a bind through a symlink planted in a writable bind, or over the runtime dir, is refused", "[plan]") {
    auto h = standard_host();
    h.dir("/home/u/.config");
    // An earlier run replaced work/vendor with a link to the host's ~/.config.
    h.links["/srv/cc/conv1/agents/a1/work/vendor"] = "/home/u/.config";
    auto in = standard_input();
    in.spec.bindMounts.push_back({"/srv/cc/conv1/agents/a1/work/vendor", "/vendor", false});
    auto r = build_plan(in, h);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == cc::Errc::unavailable);
    CHECK(r.error().one_line().find("passes through the symlink '/srv/cc/conv1/agents/a1/work/vendor'") !=
          std::string::npos);
    // The same link outside every writable bind (the operator's own) is followed.
    h.links["/srv/cc/vendor"] = "/home/u/.config";
    in = standard_input();
    in.spec.bindMounts.push_back({"/srv/cc/vendor", "/vendor", true});
    CHECK(build_plan(in, h));
    // cc-wrap's runtime directory inside a bind.
    in = standard_input();
    in.runtimeDir = "/srv/cc/conv1/agents/a1/work/.tmp/cc-wrap.T";
    auto rt = build_plan(in, h);
    REQUIRE_FALSE(rt);
    CHECK(rt.error().one_line().find("runtime directory") != std::string::npos);
}

TEST_CASE("plan: a gitdir pointer file is write-denied; a writable bind inside a protected path is refused", "[plan]") {
    auto h = standard_host();
    // A linked worktree in the writable repos dir: its .git is a file.
    h.dir("/srv/cc/conv1/repos/wt");
    h.file("/srv/cc/conv1/repos/wt/.git");
    Plan p = make(standard_input(), h);
    CHECK(is_mount_point(p, "/srv/cc/conv1/repos/wt/.git"));
    CHECK_FALSE(can_write_host(p, "/srv/cc/conv1/repos/wt/.git"));
    CHECK(can_write_host(p, "/srv/cc/conv1/repos/wt/src"));
    bool listed = false;
    for (const auto& d : p.denies) listed |= d.rule == "/srv/cc/conv1/repos/wt/.git" && d.kind == "write";
    CHECK(listed);

    auto in = standard_input();
    h.dir("/srv/repos/app/build");
    in.spec.bindMounts.push_back({"/srv/repos/app/build", "/build", false});
    auto r = build_plan(in, h);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == cc::Errc::input);
    CHECK(r.error().one_line().find("inside protectedPath '/srv/repos/app'") != std::string::npos);
    in.spec.bindMounts.back().readOnly = true;
    CHECK(build_plan(in, h));
    // Said on the bind, it is allowed: writable, in the notes, and the write
    // supervisor's rule for the protected path leaves it out.
    in.spec.bindMounts.back().readOnly = false;
    in.spec.bindMounts.back().writableInProtected = true;
    in.writeSupervisor = true;
    auto ok = build_plan(in, h);
    REQUIRE(ok);
    CHECK(std::any_of(ok->notes.begin(), ok->notes.end(),
                      [](const std::string& n) { return n.find("writableInProtected") == 0; }));
}

TEST_CASE("plan: --capture binds the resolver's resolv.conf where /etc/resolv.conf leads, and names the layer", "[plan]") {
    FakeHost h = standard_host();
    PlanInput in = standard_input();
    in.egress.capture = true;
    in.egress.capturePorts = {80, 443, 8443};
    // A plain file: bound over it.
    h.file("/etc/resolv.conf");
    Plan p = make(in, h);
    CHECK(p.proxy.capture);
    CHECK(p.proxy.capturePorts == std::vector<std::uint16_t>{80, 443, 8443});
    CHECK(std::find(p.layers.begin(), p.layers.end(), "capture") != p.layers.end());
    auto resolv_dest = [](const Plan& plan) {
        for (const auto& m : plan.mounts)
            if (m.src == "/run/user/0/cc-wrap.T/resolv.conf") return m.dest;
        return std::string();
    };
    CHECK(resolv_dest(p) == "/etc/resolv.conf");
    auto j = to_json(p);
    CHECK(j["proxy"]["capture"]["ports"] == nlohmann::json::array({80, 443, 8443}));
    // systemd-resolved's relative symlink: the bind goes where it leads.
    FakeHost r = standard_host();
    r.dir("/run/systemd/resolve");
    r.file("/run/systemd/resolve/stub-resolv.conf");
    r.dir("/etc");
    r.links["/etc/resolv.conf"] = "../run/systemd/resolve/stub-resolv.conf";
    CHECK(resolv_dest(make(in, r)) == "/run/systemd/resolve/stub-resolv.conf");
    // Without capture: no bind, no layer.
    in.egress.capture = false;
    Plan off = make(in, h);
    CHECK(resolv_dest(off).empty());
    CHECK(std::find(off.layers.begin(), off.layers.end(), "capture") == off.layers.end());
}
