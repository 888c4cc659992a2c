// The layers above bubblewrap's mounts: the command is never host root, and
// the seccomp filter refuses the kernel surfaces it never needs. Registered
// twice, as root and as an unprivileged user. Every refusal is first shown
// not to happen without cc-wrap (the same probe, run on the host or under a
// bare bubblewrap), then asserted exactly (the errno the probe printed).
#include "launch_fixture.hpp"

#include <algorithm>
#include <cstring>

#include "cc/sandbox/paths.hpp"

namespace {

// The probe's output lines as a map: op -> "ok" or "errno=NAME".
std::map<std::string, std::string> probe_lines(const std::string& out) {
    std::map<std::string, std::string> m;
    std::istringstream in(out);
    std::string op, res;
    while (in >> op >> res) m[op] = res;
    return m;
}

std::string probe_path(const Tree& t) { return t.tools + "/cc-test-syscall"; }

}  // namespace

TEST_CASE("layers: global sysctls are out of reach; the command is never host uid 0", "[launch][escape][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("sysctl");
    const std::vector<std::string> knobs = {"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/panic",
                                            "/proc/sys/vm/overcommit_memory"};
    std::map<std::string, std::string> before;
    for (const auto& k : knobs) before[k] = slurp(k);

    // Without cc-wrap's user namespace: bubblewrap as root with the
    // capabilities dropped, as cc-wrap ran it before, still writes them
    // (the same value back, so nothing changes on the host).
    if (cc::test::is_root()) {
        std::vector<std::string> a = {"bwrap", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                                      "--unshare-pid", "--cap-drop", "ALL", "--", probe_path(t)};
        for (const auto& k : knobs) a.insert(a.end(), {"write", k});
        auto bare = run(a);
        REQUIRE(bare.status == 0);
        CHECK(bare.out == "write ok\nwrite ok\nwrite ok\n");
    }

    std::string cmd = probe_path(t);
    for (const auto& k : knobs) cmd += " write " + k;
    auto r = t.sh(cmd);
    REQUIRE(r.status == 0);
    std::istringstream lines(r.out);
    std::string line;
    int refused = 0;
    while (std::getline(lines, line))
        if (line == "write errno=EACCES" || line == "write errno=EROFS") ++refused;
    CHECK(refused == 3);
    for (const auto& k : knobs) CHECK(slurp(k) == before[k]);
    // (Who the command is on the host is the next test's: /proc/self/uid_map
    // inside names the intermediate namespace --disable-userns makes.)
}

TEST_CASE("layers: seen from the host, every sandbox process is unprivileged", "[launch][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("hostuid");
    std::string out = t.root + "/hostuid.out";
    Async a({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--events", "--", "sh",
             "-c", "echo up; sleep 30"},
            out, t.home);
    REQUIRE(eventually([&] { return slurp(out).find("\"up\\n\"") != std::string::npos; }));
    auto tree = descendants(a.pid);
    REQUIRE(tree.size() >= 2);  // bubblewrap, the command (and the sleep)
    std::set<std::string> uids;
    for (pid_t p : tree) {
        std::string st = slurp("/proc/" + std::to_string(p) + "/status");
        auto u = st.find("\nUid:");
        if (u == std::string::npos) continue;
        std::istringstream f(st.substr(u + 5));
        std::string real, eff, saved, fsuid;
        f >> real >> eff >> saved >> fsuid;
        uids.insert(real), uids.insert(eff), uids.insert(saved), uids.insert(fsuid);
    }
    std::string want = cc::test::is_root() ? "65534" : std::to_string(::getuid());
    CHECK(uids == std::set<std::string>{want});
    ::kill(a.pid, SIGTERM);
    int st = a.wait();
    CHECK((st == 128 + SIGTERM || st == 128 + SIGKILL));
}

namespace {

// A process of nobody (65534) on the host, as a daemon running as nobody
// would be, attaching to `pid` with ptrace(2): "attached" or the errno's text.
std::string attach_as_nobody(pid_t pid) {
    return cc::test::ptrace_attach_from(pid, {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
}

std::vector<unsigned> ids_of(pid_t p, const char* field) {
    std::string st = slurp("/proc/" + std::to_string(p) + "/status");
    auto at = st.find(std::string("\n") + field);
    std::vector<unsigned> v;
    if (at == std::string::npos) return v;
    std::istringstream f(st.substr(at + std::strlen(field) + 1));
    for (unsigned i = 0, x = 0; i < 4 && f >> x; ++i) v.push_back(x);
    return v;
}

}  // namespace

TEST_CASE("layers: run by root over a root-owned tree, the command has a uid of its own, out of nobody's reach",
          "[launch][escape][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!cc::test::is_root()) CC_SKIP("only root chooses the command's uid");
    const bool have_python = ::access("/usr/bin/python3", X_OK) == 0;
    if (!have_python) CC_SKIP("/usr/bin/python3 is not installed");
    Tree t("own-uid");
    REQUIRE(run({"chown", "-R", "0:0", t.root}).status == 0);
    // Without the tool: one process of nobody attaches to another.
    std::string bare_out = t.root + "/bare.out";
    Async bare({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "sleep", "30"}, bare_out,
               t.home);
    REQUIRE(eventually([&] { return ids_of(bare.pid, "Uid:") == std::vector<unsigned>(4, 65534); }));
    CHECK(attach_as_nobody(bare.pid) == "attached\n");
    ::kill(bare.pid, SIGKILL);
    bare.wait();

    std::string out = t.root + "/own.out";
    Async a({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--events", "--", "sh",
             "-c", "echo up; sleep 30"},
            out, t.home);
    REQUIRE(eventually([&] { return slurp(out).find("\"up\\n\"") != std::string::npos; }));
    auto ev = events_of(slurp(out));
    REQUIRE(!ev.empty());
    unsigned uid = ev.front()["plan"]["identity"]["hostUid"].get<unsigned>();
    CHECK(uid >= cc::sandbox::k_session_id_first);
    CHECK(uid <= cc::sandbox::k_session_id_last);
    CHECK(ev.front()["plan"]["identity"]["hostGid"] == uid);
    CHECK(ev.front()["plan"]["identity"]["why"].get<std::string>().find("of this session's own") != std::string::npos);
    pid_t cmd = -1;
    for (pid_t p : descendants(a.pid))
        if (slurp("/proc/" + std::to_string(p) + "/cmdline").rfind(std::string("sleep\0", 6), 0) == 0) cmd = p;
    REQUIRE(cmd > 0);
    CHECK(ids_of(cmd, "Uid:") == std::vector<unsigned>(4, uid));
    CHECK(ids_of(cmd, "Gid:") == std::vector<unsigned>(4, uid));
    CHECK(attach_as_nobody(cmd) == "Operation not permitted\n");
    auto env_read = run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "cat",
                        "/proc/" + std::to_string(cmd) + "/environ"});
    CHECK(env_read.status == 1);
    CHECK(env_read.err.find("Permission denied") != std::string::npos);
    ::kill(a.pid, SIGTERM);
    int st = a.wait();
    CHECK((st == 128 + SIGTERM || st == 128 + SIGKILL));
    // Inside, it is nobody, as the host's root-owned files' owner is shown:
    // git's ownership check on the root-owned repository passes, names resolve.
    auto in = t.sh("id -u; id -un; id -g; git -C " + t.work + " status --porcelain; echo rc=$?");
    INFO(in.err);
    CHECK(in.status == 0);
    CHECK(in.out == "65534\nnobody\n65534\n?? link\nrc=0\n");  // (the fixture's one untracked file)
}

TEST_CASE("layers: --run-as and the identity in --print and the starting event", "[layers][cli]") {
    Tree t("identity");
    auto p = run({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--print", "--", "true"});
    REQUIRE(p.status == 0);
    auto plan = json::parse(p.out);
    CHECK(plan["identity"]["hostUid"] == (cc::test::is_root() ? 65534u : ::getuid()));
    CHECK(plan["identity"]["userNamespace"] == true);
    CHECK(plan["identity"]["switchedFromRoot"] == cc::test::is_root());
    json layers = {"user-ns", "mount-ns", "pid-ns", "ipc-ns", "uts-ns", "net-ns", "seccomp"};
    if (landlock_abi() > 0) layers.push_back("landlock:v" + std::to_string(landlock_abi()));
    if (write_supervisor()) layers.push_back("write-supervisor");
    CHECK(plan["layers"] == layers);
    auto argv = plan["argv"].get<std::vector<std::string>>();
    CHECK(std::find(argv.begin(), argv.end(), "--unshare-user") != argv.end());
    CHECK(std::find(argv.begin(), argv.end(), "--disable-userns") != argv.end());
    std::set<std::string> filtered;
    for (const auto& r : plan["seccomp"]["rules"]) filtered.insert(r["syscall"].get<std::string>());
    for (const char* s : {"io_uring_setup", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
                          "kexec_load", "init_module", "mount", "open_tree", "fsopen", "move_mount", "pivot_root",
                          "unshare", "clone", "clone3", "ptrace", "ioctl", "personality"})
        CHECK(filtered.count(s) == 1);

    // uid 0 is refused, with the reason, and nothing runs.
    for (const char* bad : {"0", "0:0", "1000:0", "root", "12x", "-1"}) {
        auto r = run({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--run-as", bad,
                      "--", "true"});
        CHECK(r.status == 2);
        CHECK(r.err.find("--run-as") != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    if (cc::test::is_root()) {
        auto as = run({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--run-as",
                       "4242:4343", "--events", "--", "sh", "-c", "id -u; id -g; id -G"});
        REQUIRE(as.status == 0);
        auto ev = events_of(as.out);
        REQUIRE(!ev.empty());
        CHECK(ev.front()["plan"]["identity"]["hostUid"] == 4242);
        CHECK(ev.front()["plan"]["identity"]["hostGid"] == 4343);
        CHECK(ev.front()["plan"]["layers"] == layers);
        std::string text;
        for (const auto& e : ev)
            if (e["event"] == "stdout") text += e["text"].get<std::string>();
        CHECK(text == "4242\n4343\n4343\n");
        // Its writable bind belongs to 65534: the plan says it is not writable by 4242.
        CHECK(as.err.find("is not writable by uid 4242") != std::string::npos);
    } else {
        auto other = run({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--run-as",
                          "4242", "--", "true"});
        CHECK(other.status == 2);
        CHECK(other.err.find("only root") != std::string::npos);
    }
}

TEST_CASE("layers: the seccomp filter refuses what a command never needs", "[launch][escape][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("seccomp");
    // clone_user before unshare_user: after a successful unshare the probe
    // is in a namespace with no uid mapping, where a second one is EPERM.
    const std::vector<std::string> ops = {"io_uring", "keyctl", "add_key", "bpf", "perf_event_open", "userfaultfd",
                                          "open_tree", "setns", "clone_user", "unshare_user", "clone3", "ptrace",
                                          "tiocsti", "personality_rie", "personality_linux"};
    std::vector<std::string> argv = {probe_path(t)};
    argv.insert(argv.end(), ops.begin(), ops.end());

    // On the host, none of these is refused with the filter's answer.
    auto host = probe_lines(run(argv).out);
    CHECK(host["io_uring"] == "ok");
    CHECK(host["keyctl"] == "ok");
    CHECK(host["add_key"] == "ok");
    CHECK(host["bpf"] == "errno=EINVAL");
    CHECK(host["userfaultfd"] == "errno=EINVAL");
    CHECK(host["open_tree"] == "ok");
    CHECK(host["setns"] == "errno=EBADF");
    CHECK(host["unshare_user"] == "ok");
    CHECK(host["clone_user"] == "ok");
    CHECK(host["clone3"] == "errno=EINVAL");
    CHECK(host["ptrace"] == "ok");
    CHECK(host["tiocsti"] == "errno=ENOTTY");
    CHECK(host["personality_rie"] == "ok");
    CHECK(host["perf_event_open"] != "errno=EPERM");

    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    auto r = t.sh(cmd + "; grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status");
    REQUIRE(r.status == 0);
    auto in = probe_lines(r.out);
    for (const char* op : {"io_uring", "keyctl", "add_key", "bpf", "perf_event_open", "userfaultfd", "open_tree",
                           "setns", "unshare_user", "clone_user", "ptrace", "tiocsti", "personality_rie"})
        CHECK(in[op] == "errno=EPERM");
    CHECK(in["clone3"] == "errno=ENOSYS");
    CHECK(in["personality_linux"] == "ok");
    CHECK(in["Seccomp:"] == "2");
    CHECK(in["NoNewPrivs:"] == "1");
    // Programs that start threads and processes still work (clone3 -> clone).
    auto work = t.sh("git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && git log --oneline | wc -l");
    CHECK(work.status == 0);
    CHECK(work.out == "1\n");
}

// The i386 ABI (int 0x80) from a 64-bit process reaches the same kernel
// with calls of its own (truncate64, socketcall) that rules by name miss:
// any call through it kills the process, with and without the write
// supervisor's filter.
TEST_CASE("layers: a call through the 32-bit ABI kills the process", "[launch][escape][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("abi32");
    auto host = run({probe_path(t), "int80_getpid"});
    // Where IA32 emulation is off (not built in, or ia32_emulation=0 on
    // newer kernels), int 0x80 is no system call at all: the kernel answers
    // it with SIGSEGV, and there is no 32-bit path to close.
    const bool no_ia32 = host.status == 128 + SIGSEGV;
    if (no_ia32) CC_SKIP("this kernel runs no i386 calls (IA32 emulation off: int 0x80 is a SIGSEGV)");
    REQUIRE(host.status == 0);
    if (host.out != "int80_getpid ok\n") CC_SKIP("this kernel runs no i386 calls (no IA32 emulation): " + host.out);
    auto r = t.sh(probe_path(t) + " int80_getpid; echo after=$?");
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.out == "after=159\n");  // 128 + SIGSYS: killed before it printed
}

TEST_CASE("layers: allowNestedNamespaces and allowPtrace lift their rules only", "[launch][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("optin");
    auto j = json::parse(slurp(t.spec));
    j["allowNestedNamespaces"] = true;
    j["allowPtrace"] = true;
    spit(t.spec, j.dump());
    auto r = t.sh(probe_path(t) + " unshare_user ptrace keyctl io_uring");
    REQUIRE(r.status == 0);
    auto in = probe_lines(r.out);
    CHECK(in["unshare_user"] == "ok");
    CHECK(in["ptrace"] == "ok");
    CHECK(in["keyctl"] == "errno=EPERM");
    CHECK(in["io_uring"] == "errno=EPERM");
    j["allowNestedNamespaces"] = "yes";
    spit(t.spec, j.dump());
    auto bad = t.sh("true");
    CHECK(bad.status == 2);
    CHECK(bad.err.find("allowNestedNamespaces") != std::string::npos);
}

TEST_CASE("layers: Landlock refuses a write the mounts would have let through", "[launch][escape][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (landlock_abi() == 0) CC_SKIP("this kernel has no Landlock");
    Tree t("landlock");
    // The init step's Landlock alone, outside any sandbox: a write beneath
    // the allowed directory works, one elsewhere in a writable directory
    // does not (EACCES), though the mounts allow both.
    std::string init = (fs::path(bin("cc-wrap")).parent_path() / "cc-wrap-init").string();
    std::string allowed = t.root + "/ll-allowed", other = t.root + "/ll-other";
    fs::create_directories(allowed);
    fs::create_directories(other);
    if (cc::test::is_root()) Tree::give_to_nobody(t.root);
    auto bare = run({"sh", "-c", "touch " + other + "/before && echo made"});
    CHECK(bare.out == "made\n");
    auto r = run({init, "--internal-sandbox-init", "--landlock-abi", std::to_string(landlock_abi()), "--landlock-write",
                  allowed, "--", "sh", "-c", "touch " + allowed + "/x && echo ok; touch " + other + "/y 2>&1; echo $?"});
    CHECK(r.status == 0);
    CHECK(r.out.find("ok\n") == 0);
    CHECK(r.out.find("Permission denied") != std::string::npos);
    CHECK(fs::exists(allowed + "/x"));
    CHECK_FALSE(fs::exists(other + "/y"));
    // In a real launch the writable binds, the private tmpfs, /dev and /proc
    // are writable, and the plan says which.
    auto p = json::parse(
        run({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--print", "--", "true"}).out);
    auto w = p["landlock"]["writable"].get<std::vector<std::string>>();
    for (const auto& d : {t.work, t.repos, t.state, std::string("/tmp"), std::string("/dev"), std::string("/proc")})
        CHECK(std::find(w.begin(), w.end(), d) != w.end());
    CHECK(std::find(w.begin(), w.end(), t.config) == w.end());
    auto ok = t.sh("echo hi > " + t.work + "/f && echo tmp > /tmp/x && cat /tmp/x && echo x > /dev/null && cat f");
    CHECK(ok.status == 0);
    CHECK(ok.out == "tmp\nhi\n");
}

TEST_CASE("layers: the session's cc-egress killed mid-run is said and started again on the same listeners",
          "[launch][network][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (::access(bin("cc-egress").c_str(), X_OK) != 0) CC_SKIP("cc-egress not built");
    if (!cc::test::have_program("curl")) CC_SKIP("curl not installed");
    Tree t("egress-restart");
    int port = 0;
    int l = tcp_listener(port);
    ::fcntl(l, F_SETFL, ::fcntl(l, F_GETFL) & ~O_NONBLOCK);
    std::thread server([l] {
        for (;;) {
            int c = ::accept(l, nullptr, nullptr);
            if (c < 0) return;
            char buf[4096];
            ssize_t n = ::read(c, buf, sizeof buf);
            (void)n;
            std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n";
            ssize_t w = ::write(c, resp.data(), resp.size());
            (void)w;
            ::close(c);
        }
    });
    json spec = json::parse(slurp(t.spec));
    spec["egressAllowlist"] = {"127.0.0.1:*"};
    spit(t.spec, spec.dump());
    std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
    std::string out = t.root + "/restart.jsonl";
    // The command waits for a file the test makes once cc-egress is dead.
    std::string go = t.state + "/go";
    Async a({bin("cc-wrap"), "--spec", t.spec, "--drop-filename-denies", "--events", "--", "sh", "-c",
             "curl -sS --max-time 20 " + url + "; while [ ! -e " + go + " ]; do sleep 0.1; done; curl -sS --max-time 20 " +
                 url},
            out, t.home);
    REQUIRE(eventually([&] { return slurp(out).find("hello") != std::string::npos; }, 20000));
    // cc-wrap's own cc-egress, by PID among its children.
    pid_t egress = -1;
    for (pid_t p : descendants(a.pid))
        if (slurp("/proc/" + std::to_string(p) + "/comm") == "cc-egress\n") egress = p;
    REQUIRE(egress > 0);
    REQUIRE(::kill(egress, SIGKILL) == 0);
    REQUIRE(eventually([&] { return slurp(out).find("\"restarted\"") != std::string::npos; }, 20000));
    spit(go, "");
    CHECK(a.wait() == 0);
    auto ev = events_of(slurp(out));
    int hellos = 0;
    bool exited = false, restarted = false;
    for (const auto& e : ev) {
        if (e["event"] == "stdout") hellos += e.value("text", std::string()) == "hello\n";
        if (e["event"] == "egress" && e["state"] == "exited") {
            exited = true;
            CHECK(e["how"] == "killed by signal 9");
            CHECK(e["restart"] == 1);
        }
        if (e["event"] == "egress" && e["state"] == "restarted") restarted = true;
    }
    CHECK(exited);
    CHECK(restarted);
    CHECK(hellos == 2);  // the second request went through the new cc-egress
    CHECK(ev.back()["endedBy"] == "command");
    ::shutdown(l, SHUT_RDWR);
    ::close(l);
    server.join();
}

TEST_CASE("layers: a handed-in cc-egress killed mid-run ends the run (125, endedBy egress), said in an event",
          "[launch][network][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (::access(bin("cc-egress").c_str(), X_OK) != 0) CC_SKIP("cc-egress not built");
    Tree t("handed-gone");
    std::string dir = t.root + "/eg2";
    std::string log = t.root + "/egress.out";
    fs::create_directories(dir);
    Async egress({bin("cc-egress"), "--spec", t.spec, "--fd-inbox", dir + "/inbox.sock"}, log, t.home);
    REQUIRE(eventually([&] { return slurp(log).find('\n') != std::string::npos; }, 10000));
    std::string text = slurp(log);
    json ready = json::parse(text.substr(0, text.find('\n')));
    REQUIRE(ready.value("event", "") == "ready");
    spit(t.ready, ready.dump());
    std::string out = t.root + "/gone.jsonl";
    Async a({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--events", "--", "sh", "-c",
             "echo started; sleep 30"},
            out, t.home);
    REQUIRE(eventually([&] { return slurp(out).find("started") != std::string::npos; }, 20000));
    REQUIRE(::kill(egress.pid, SIGKILL) == 0);
    CHECK(a.wait() == 125);
    auto ev = events_of(slurp(out));
    REQUIRE_FALSE(ev.empty());
    bool said = false;
    for (const auto& e : ev)
        if (e["event"] == "egress" && e["state"] == "exited") {
            said = true;
            CHECK(e["how"] == "its inbox connection closed (a handed-in cc-egress)");
            CHECK(e["restart"] == 0);
        }
    CHECK(said);
    CHECK(ev.back()["event"] == "exit");
    CHECK(ev.back()["endedBy"] == "egress");
    CHECK(ev.back()["exitCode"] == 125);
}

TEST_CASE("layers: run by root, a workspace the sandbox's uid cannot reach is refused, naming the directory",
          "[launch][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!cc::test::is_root()) CC_SKIP("only root switches the sandbox to another uid");
    Tree t("private-parent");
    // Like a workspace under /root (mode 0700): bubblewrap, started as the
    // sandbox's uid, could not find it.
    std::string priv = t.root + "/private", ws = priv + "/ws";
    fs::create_directories(ws);
    REQUIRE(run({"chown", "65534:65534", ws}).status == 0);
    REQUIRE(run({"chown", "0:0", priv}).status == 0);
    ::chmod(priv.c_str(), 0700);
    auto denied = run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "ls", ws});
    REQUIRE(denied.status != 0);  // nobody cannot reach it by path
    CHECK(denied.err.find("Permission denied") != std::string::npos);
    json spec = json::parse(slurp(t.spec));
    spec["bindMounts"] = json::array({{{"hostPath", ws}}});
    spec["guestWorkdir"] = ws;
    spit(t.spec, spec.dump());
    auto r = t.sh("echo made > f");
    CHECK(r.status == 125);
    CHECK(r.err.find("cannot pass directory '" + priv + "' (owner 0:0, mode 0700)") != std::string::npos);
    CHECK_FALSE(fs::exists(ws + "/f"));
    // Made passable, the same launch works, as the workspace's owner.
    ::chmod(priv.c_str(), 0711);
    auto ok = t.sh("echo made > f && cat f && id -u");
    INFO(ok.err);
    CHECK(ok.status == 0);
    CHECK(ok.out == "made\n65534\n");
}

TEST_CASE("layers: the stale runtime-directory sweep never follows a link planted in it", "[launch][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("sweep");
    std::string base = t.root + "/rt-base", stale = base + "/cc-wrap.abcdef", target = t.root + "/target";
    fs::create_directories(stale);
    fs::create_directories(target);
    spit(target + "/keep", "x");
    spit(stale + "/lock", "");
    fs::create_directory_symlink(target, stale + "/mask-dir");
    ::chmod(target.c_str(), 0500);
    RunOptions o;
    o.env["TMPDIR"] = base;
    o.unset_env = {"XDG_RUNTIME_DIR"};
    auto r = t.sh("true", {}, o);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.err.find("removed 1 runtime directory") != std::string::npos);
    CHECK_FALSE(fs::exists(stale));
    struct stat st {};
    REQUIRE(::stat(target.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0500);  // not opened up through the link
    CHECK(slurp(target + "/keep") == "x");
    ::chmod(target.c_str(), 0700);
}

TEST_CASE("layers: run by root from a build tree the sandbox's uid cannot reach, the init step still runs",
          "[launch][layers]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!cc::test::is_root()) CC_SKIP("only root switches the sandbox to another uid");
    Tree t("private-tools");
    // cc-wrap and cc-wrap-init installed under a mode-0700 directory (a
    // checkout under /root): the init step is bound from a copy.
    std::string priv = t.root + "/private-bin";
    fs::create_directories(priv);
    std::string dir = fs::path(bin("cc-wrap")).parent_path().string();
    fs::copy_file(bin("cc-wrap"), priv + "/cc-wrap");
    fs::copy_file(dir + "/cc-wrap-init", priv + "/cc-wrap-init");
    REQUIRE(run({"chown", "-R", "0:0", priv}).status == 0);
    ::chmod(priv.c_str(), 0700);
    // A command the plan cannot vouch for, so the init step runs either way.
    RunOptions o;
    o.env["HOME"] = t.home;
    auto r = run({priv + "/cc-wrap", "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--", "sh", "-c",
                  "id -u; exit 3"},
                 o);
    INFO(r.err);
    CHECK(r.status == 3);
    CHECK(r.out == "65534\n");
}
