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
        if (m.op != "bind" && m.op != "ro-bind" && m.op != "tmpfs") continue;
        if (!is_within(g, m.dest)) continue;
        if (!best || depth(m.dest) >= depth(best->dest)) best = &m;
    }
    return best;
}
bool visible(const Plan& p, const std::string& g) {
    const Mount* m = cover(p, g);
    return m && m->op != "tmpfs";
}
bool masked(const Plan& p, const std::string& g) {
    const Mount* m = cover(p, g);
    return m && m->src.find("/mask-") != std::string::npos;
}
bool can_read(const Plan& p, const std::string& g) { return visible(p, g) && !masked(p, g); }
bool can_write_host(const Plan& p, const std::string& g) {
    const Mount* m = cover(p, g);
    return m && m->op == "bind";
}
bool is_mount_point(const Plan& p, const std::string& g) {
    for (const auto& m : p.mounts)
        if (m.dest == g) return true;
    return false;
}

std::string golden_path(const std::string& name) { return cc::test::source_dir() + "/tests/sandbox/golden/" + name; }

void check_golden(const std::string& name, const std::string& text) {
    std::string path = golden_path(name);
    if (std::getenv("CC_UPDATE_GOLDEN")) {
        std::ofstream(path) << text;
        return;
    }
    std::ifstream f(path);
    REQUIRE(f.good());
    std::string want((std::istreambuf_iterator<char>(f)), {});
    CHECK(text == want);
}

}  // namespace

TEST_CASE("plan: golden snapshot of the chat dispatch plan", "[plan]") {
    auto h = standard_host();
    check_golden("plan-chat.json", to_json(make(standard_input(), h)).dump(2) + "\n");
}

TEST_CASE("plan: bubblewrap execs the command itself only when it is certainly runnable inside", "[plan][init]") {
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
    auto direct = [&](const Plan& p) {
        auto dash = std::find(p.argv.begin(), p.argv.end(), "--");
        bool init_mounted = is_mount_point(p, "/run/cc/init");
        CHECK(init_mounted == p.initStep);  // the init binary is bound only when it runs
        return !p.initStep && dash != p.argv.end() && dash + 1 != p.argv.end() && dash[1] != "/run/cc/init";
    };

    SECTION("found on PATH: argv keeps the name as given") {
        auto p = plan_for({"make", "test"});
        CHECK(direct(p));
        CHECK(std::vector<std::string>(p.argv.end() - 3, p.argv.end()) == std::vector<std::string>{"--", "make", "test"});
    }
    SECTION("an absolute path through the /bin -> usr/bin symlink") { CHECK(direct(plan_for({"/bin/make"}))); }
    SECTION("a script whose interpreter is there") { CHECK(direct(plan_for({"./build.py"}))); }
    SECTION("a relative symlink inside the bind") { CHECK(direct(plan_for({work + "/rel"}))); }
    SECTION("not found: the init step reports 127") {
        auto p = plan_for({"nosuch"});
        CHECK(p.initStep);
        CHECK(p.initWhy.find("126/127") != std::string::npos);
    }
    SECTION("a script whose interpreter is missing") { CHECK(plan_for({"./old.py"}).initStep); }
    SECTION("a file that is not executable") { CHECK(plan_for({"./notes.txt"}).initStep); }
    SECTION("a symlink to a host file the sandbox does not show") { CHECK(plan_for({"./tool"}).initStep); }
    SECTION("a PATH entry the plan cannot see into comes first") { CHECK(plan_for({"make"}, "/proc/1:/usr/bin").initStep); }
    SECTION("a relative PATH entry") { CHECK(plan_for({"make"}, "bin:/usr/bin").initStep); }
    SECTION("a PATH entry under the private /tmp is empty inside") { CHECK(direct(plan_for({"make"}, "/tmp/x:/usr/bin"))); }
    SECTION("--pty always goes through the init step") { CHECK(plan_for({"make"}, "/usr/bin", true).initStep); }
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
    CHECK(p.mounts.back().op == "remount-ro");
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
        in.dropFilenameDenies = false;  // nothing host-backed writable but state: still refused (F11)
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
    CHECK_FALSE(can_read(p, "/data/aws/credentials"));  // the resolved spelling (F9)
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
    CHECK(p.proxy.transport == "host");
    CHECK(std::find(p.argv.begin(), p.argv.end(), "--unshare-net") == p.argv.end());
    CHECK(p.env.count("HTTP_PROXY") == 0);

    in.backend = Backend::none;  // F16: never a host shell with a native badge
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
    CHECK(r.error().subject.find(".git/hooks") != std::string::npos);

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
    CHECK(p.proxy.transport == "fd-handover");

    auto in = standard_input();
    in.egress.inbox.clear();
    in.egress.httpUnix = "/r/http.sock";
    in.egress.socksUnix = "/r/socks.sock";
    p = make(in, standard_host());
    CHECK(p.proxy.transport == "socat-bridge");
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
        if (std::string(r.action) != "unknown") CHECK(v->action == r.action);
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
    for (int c = 0; c < 0x80; ++c) tricky.push_back(static_cast<char>(c));
    tricky += "\"\\ \xE2\x82\xAC \xF0\x9F\x98\x80";
    std::string line = w.chunk("stdout", tricky);
    auto j = nlohmann::json::parse(line);
    CHECK(j["text"] == tricky);
    CHECK(j.dump() == line);
}
