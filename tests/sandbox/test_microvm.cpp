// The microvm backend, with real boots. On this project's build machine KVM
// is present but unusable (no VMX: a KVM guest does not finish booting in two
// minutes), so every boot here asks for TCG explicitly (--vm-accel tcg); a
// KVM host runs the same tests with the flag changed. Boots are few and each
// checks several things: a TCG boot costs seconds.
//
// Skipped, with the reason, when the host has no qemu-system-x86_64 or no
// guest kernel (scripts/microvm-kernel.sh; `make test` runs it).
#include "launch_fixture.hpp"

#include "cc/sandbox/paths.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace {

struct VmTree {
    std::string root, work, config, outside, spec;
    VmTree() {
        root = cc::test::scratch_dir() + "/vm-" + std::to_string(::getpid());
        work = root + "/work";
        config = root + "/config";
        fs::create_directories(work);
        fs::create_directories(config);
        spit(config + "/settings", "read-only\n");
        outside = root + "/outside.txt";
        spit(outside, "host only\n");
        for (const auto& d : {root, work, config}) ::chmod(d.c_str(), 0755);
        if (cc::test::is_root()) {
            REQUIRE(run({"chown", "-R", "65534:65534", work}).status == 0);
            // The scratch directory (ours) must be passable by uid 65534.
            ::chmod(cc::test::scratch_dir().c_str(), 0755);
        }
        json j = {{"sessionId", "vm-test"},
                  {"workspaceId", "ws"},
                  {"mode", "chat"},
                  {"guestWorkdir", "/work"},
                  {"bindMounts", json::array({{{"hostPath", work}, {"guestPath", "/work"}},
                                              {{"hostPath", config}, {"guestPath", "/config"}, {"readOnly", true}}})},
                  {"egressAllowlist", json::array({"allowed.invalid"})}};
        spec = root + "/spec.json";
        spit(spec, j.dump());
    }
    std::vector<std::string> argv(const std::vector<std::string>& cmd, std::vector<std::string> flags = {}) const {
        std::vector<std::string> a = {bin("cc-wrap"), "--spec", spec, "--backend", "microvm", "--vm-accel", "tcg"};
        a.insert(a.end(), flags.begin(), flags.end());
        a.push_back("--");
        a.insert(a.end(), cmd.begin(), cmd.end());
        return a;
    }
};

// Why this host cannot boot a guest, or "" when it can.
std::string cannot_boot(const VmTree& t) {
    if (!cc::test::have_program("qemu-system-x86_64")) return "no qemu-system-x86_64 (Debian package qemu-system-x86)";
    auto r = run(t.argv({"true"}, {"--print"}));
    // The one refusal that means "this host has no guest kernel" (exit 125,
    // naming where it looked); any other failure of the plan is a failure of
    // the test, never a skip.
    if (r.status == 125 && r.err.find("no guest kernel (looked for ") != std::string::npos)
        return "cc-wrap finds no guest kernel here: " + r.err.substr(0, r.err.find('\n'));
    if (r.status != 0) FAIL("cc-wrap --backend microvm --print exited " << r.status << ": " << r.err);
    return {};
}

// The VM monitors among root's descendants (by PID; comm names qemu).
std::set<pid_t> monitors_under(pid_t root) {
    std::set<pid_t> out;
    for (pid_t p : descendants(root))
        if (slurp("/proc/" + std::to_string(p) + "/comm").rfind("qemu-system", 0) == 0) out.insert(p);
    return out;
}

// Starts cc-wrap, records the monitor's PIDs while it runs, stops it with
// `how` (0: let --timeout do it), and returns (status, the PIDs seen).
// With `ready`, the signal waits until that file exists (the command started).
std::pair<int, std::set<pid_t>> run_and_watch(const std::vector<std::string>& argv, int how,
                                              const std::string& ready = "") {
    pid_t pid = ::fork();
    if (pid == 0) {
        int devnull = ::open("/dev/null", O_RDWR);
        ::dup2(devnull, 0);
        ::dup2(devnull, 1);
        std::vector<char*> av;
        for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
        av.push_back(nullptr);
        ::execv(av[0], av.data());
        ::_exit(127);
    }
    std::set<pid_t> seen;
    int wst = 0;
    auto start = std::chrono::steady_clock::now();
    for (;;) {
        if (::waitpid(pid, &wst, WNOHANG) == pid) break;
        auto m = monitors_under(pid);
        seen.insert(m.begin(), m.end());
        bool started =
            ready.empty() ? std::chrono::steady_clock::now() - start > std::chrono::seconds(2) : fs::exists(ready);
        if (how && !seen.empty() && started) {
            ::kill(pid, how);
            how = 0;
        }
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(90)) {
            ::kill(pid, SIGKILL);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    int status = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
    return {status, seen};
}

bool gone(pid_t p) {
    for (int i = 0; i < 50; ++i) {
        if (::kill(p, 0) != 0 && errno == ESRCH) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

}  // namespace

namespace {

// keyctl and io_uring_setup, called with arguments that reach the kernel's
// own checks: without the default filter they fail with EINVAL or EFAULT (or
// succeed), never with EPERM.
const std::string probe_calls =
    "python3 -c 'import ctypes,os; l=ctypes.CDLL(None,use_errno=True); "
    "l.syscall(250,0,0,0,0,0); print(\"keyctl\", os.strerror(ctypes.get_errno())); "
    "l.syscall(425,1,0); print(\"io_uring\", os.strerror(ctypes.get_errno()))'";

}  // namespace

TEST_CASE("microvm: a guest kernel, only the binds, read-only stays read-only, status and network relayed") {
    VmTree t;
    if (auto why = cannot_boot(t); !why.empty()) CC_SKIP(why);
    auto plan = json::parse(run(t.argv({"true"}, {"--print"})).out);
    CHECK(plan["backend"] == "microvm");
    // As text, the command is the guest's, not the monitor's argv.
    auto text = run(t.argv({"echo", "hi"}, {"--print", "--format", "text"})).out;
    CHECK(text.find("\ncommand   echo hi\n") != std::string::npos);
    CHECK(text.find("\nvm        ") != std::string::npos);
    CHECK(plan["microvm"]["accel"] == "tcg");
    CHECK(plan["layers"].back() == "microvm:tcg");

    std::string host_release = slurp("/proc/sys/kernel/osrelease");
    host_release.erase(host_release.find_last_not_of('\n') + 1);
    std::string script =
        "echo kernel=$(uname -r); "
        "cat " +
        t.outside +
        " 2>/dev/null || echo outside-missing; "
        "cat /config/settings; "
        "echo x > /config/new 2>/dev/null && echo ro-written || echo ro-refused; "
        "touch /config/settings 2>&1 | sed 's/^/touch: /'; "
        "cat /work/from-host; echo guest-wrote > /work/from-guest; "
        "curl -sS -m 5 -o /dev/null -w 'proxy=%{http_code}\\n' http://denied.invalid/; "
        "curl -sS -m 3 --noproxy '*' http://10.0.2.2:80/ >/dev/null 2>&1 || echo direct-refused; "
        "getent hosts example.com >/dev/null 2>&1 || echo dns-refused; "
        "ls /run/cc >/dev/null 2>&1 && echo monitor-view || echo own-tree; " + probe_calls + "; "
        "exit 7";
    spit(t.work + "/from-host", "host-wrote\n");
    if (cc::test::is_root()) REQUIRE(run({"chown", "65534:65534", t.work + "/from-host"}).status == 0);
    auto r = run(t.argv({"sh", "-c", script}, {"--events"}));
    INFO(r.out << r.err);
    CHECK(r.status == 7);
    std::string out;
    json starting, exit;
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);) {
        auto j = json::parse(l, nullptr, false);
        if (!j.is_object()) continue;
        if (j["event"] == "stdout") out += j["text"].get<std::string>();
        if (j["event"] == "starting") starting = j;
        if (j["event"] == "exit") exit = j;
    }
    // The starting event names the backend, the accelerator, the kernel and the monitor.
    CHECK(starting["plan"]["backend"] == "microvm");
    CHECK(starting["plan"]["microvm"]["accel"] == "tcg");
    CHECK(starting["plan"]["microvm"]["monitor"].get<std::string>().find("qemu-system-x86_64") != std::string::npos);
    std::string guest_release = starting["plan"]["microvm"]["kernelVersion"];
    CHECK(exit["exitCode"] == 7);
    CHECK(out.find("kernel=" + guest_release + "\n") != std::string::npos);
    CHECK(guest_release != host_release);
    CHECK(out.find("outside-missing\n") != std::string::npos);
    CHECK(out.find("read-only\n") != std::string::npos);
    CHECK(out.find("ro-refused\n") != std::string::npos);
    // The write supervisor judges the monitor's writes for the guest: the exact refusal.
    CHECK(out.find("touch: touch: cannot touch '/config/settings': Permission denied\n") != std::string::npos);
    CHECK(out.find("host-wrote\n") != std::string::npos);
    CHECK(slurp(t.work + "/from-guest") == "guest-wrote\n");
    // The proxy answers (cc-egress refuses the host: 403, a violation event); nothing else is reachable.
    CHECK(out.find("proxy=403\n") != std::string::npos);
    CHECK(r.out.find("\"event\":\"violation\"") != std::string::npos);
    CHECK(out.find("direct-refused\n") != std::string::npos);
    CHECK(out.find("dns-refused\n") != std::string::npos);
    // The share is the guest's own tree, not the monitor's whole view: the
    // host step's files under /run/cc (and the monitor's /proc, /dev) are
    // not in it, whoever in the guest mounts it.
    CHECK(out.find("own-tree\n") != std::string::npos);
    // The command in the guest has the native backend's seccomp filter:
    // keyrings and io_uring are refused (EPERM), as they are not on the host.
    auto host_calls = run({"sh", "-c", probe_calls});
    REQUIRE(host_calls.status == 0);
    CHECK(host_calls.out.find("Operation not permitted") == std::string::npos);
    CHECK(out.find("keyctl Operation not permitted\nio_uring Operation not permitted\n") != std::string::npos);
    bool exports_guest_root = false, exports_root = false;
    for (const auto& a : plan["argv"])
        if (a.is_string()) {
            exports_guest_root = exports_guest_root || a.get<std::string>().find(",path=/cc-guest,") != std::string::npos;
            exports_root = exports_root || a.get<std::string>().find(",path=/,") != std::string::npos;
        }
    CHECK(exports_guest_root);
    CHECK_FALSE(exports_root);
}

// Each guest connection to a proxy address makes the monitor start a relay
// on the host: at most 64 at once. A guest holding 70 open gets the other 6
// answered at once with cc-egress's own refusal (503), and the host never
// runs more relays than that.
TEST_CASE("microvm: guest connections to the proxies are bounded on the host") {
    VmTree t;
    if (auto why = cannot_boot(t); !why.empty()) CC_SKIP(why);
    const std::string script =
        "import socket, select, time\n"
        "socks = []\n"
        "for i in range(70):\n"
        "    s = socket.create_connection(('10.0.2.100', 3128), timeout=20)\n"
        "    socks.append(s)\n"
        "time.sleep(4)\n"
        "ready, _, _ = select.select(socks, [], [], 2)\n"
        "refused = sum(1 for s in ready if s.recv(12) == b'HTTP/1.1 503')\n"
        "print('refused', refused)\n";
    spit(t.work + "/many.py", script);
    if (cc::test::is_root()) REQUIRE(run({"chown", "65534:65534", t.work + "/many.py"}).status == 0);
    auto r = run(t.argv({"python3", "/work/many.py"}, {"--timeout", "120"}));
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.out == "refused 6\n");
}

TEST_CASE("microvm: --timeout stops the VM and no monitor process survives") {
    VmTree t;
    if (auto why = cannot_boot(t); !why.empty()) CC_SKIP(why);
    auto [status, seen] = run_and_watch(t.argv({"sleep", "300"}, {"--timeout", "6"}), 0);
    CHECK(status == 137);
    REQUIRE(!seen.empty());
    for (pid_t p : seen) CHECK(gone(p));
}

TEST_CASE("microvm: cc-wrap killed outright takes the monitor with it") {
    VmTree t;
    if (auto why = cannot_boot(t); !why.empty()) CC_SKIP(why);
    auto [status, seen] = run_and_watch(t.argv({"sleep", "300"}), SIGKILL);
    CHECK(status == 128 + SIGKILL);
    REQUIRE(!seen.empty());
    for (pid_t p : seen) CHECK(gone(p));
}

TEST_CASE("microvm: SIGTERM reaches the command in the guest (143), and the VM stops") {
    VmTree t;
    if (auto why = cannot_boot(t); !why.empty()) CC_SKIP(why);
    auto [status, seen] =
        run_and_watch(t.argv({"sh", "-c", "touch /work/started; exec sleep 300"}), SIGTERM, t.work + "/started");
    CHECK(status == 128 + SIGTERM);
    REQUIRE(!seen.empty());
    for (pid_t p : seen) CHECK(gone(p));
}

TEST_CASE("microvm: an explicit request without what it needs fails 125 with the reason, never falls back") {
    VmTree t;
    auto r = run(t.argv({"true"}, {"--vm-kernel", t.root + "/no-such-vmlinuz"}));
    CHECK(r.status == 125);
    if (cc::test::have_program("qemu-system-x86_64")) CHECK(r.err.find("no-such-vmlinuz") != std::string::npos);
    auto bad = run({bin("cc-wrap"), "--spec", t.spec, "--backend", "microvm", "--vm-accel", "hvf", "--", "true"});
    CHECK(bad.status == 2);
    CHECK(bad.err == "cc-wrap: --vm-accel: unknown accelerator 'hvf' (kvm or tcg)\n");
    auto native = run({bin("cc-wrap"), "--spec", t.spec, "--vm-accel", "tcg", "--backend", "native", "--", "true"});
    CHECK(native.status == 2);
}

// Snapshots: the first run saves the ready guest (a template boot in which no
// command runs), later runs restore it. Each restored guest must differ from
// every other in what a session can observe of its randomness (the same
// memory image restored twice would otherwise hand out the same
// /dev/urandom bytes and the same boot id), and have the host's clock.
TEST_CASE("microvm: snapshots are saved once, restored per run, and each restored guest has its own randomness and the host's clock") {
    VmTree t;
    if (auto why = cannot_boot(t); !why.empty()) CC_SKIP(why);
    const std::string dir = t.root + "/snapshots";
    RunOptions o;
    o.env["CC_VM_SNAPSHOT_DIR"] = dir;
    o.timeout_ms = 180000;

    auto plan = json::parse(run(t.argv({"true"}, {"--print"}), o).out);
    CHECK(plan["microvm"]["boot"] == "save");
    struct stat ds {};
    REQUIRE(::stat(dir.c_str(), &ds) == 0);
    CHECK((ds.st_mode & 0777) == 0700);
    CHECK(ds.st_uid == ::geteuid());

    const std::vector<std::string> probe = {
        "sh", "-c", "head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'; echo; cat /proc/sys/kernel/random/boot_id; date +%s; exit 3"};
    auto first = run(t.argv(probe), o);
    INFO(first.err);
    CHECK(first.status == 3);
    CHECK(first.err.find("note: microvm: saved a snapshot of the booted guest in " + dir + "/") != std::string::npos);
    std::vector<std::string> snaps;
    for (const auto& e : fs::directory_iterator(dir)) snaps.push_back(e.path().string());
    REQUIRE(snaps.size() == 1);
    struct stat fsn {};
    REQUIRE(::stat(snaps[0].c_str(), &fsn) == 0);
    CHECK((fsn.st_mode & 0777) == 0600);
    CHECK(fsn.st_size > (1 << 20));

    plan = json::parse(run(t.argv({"true"}, {"--print"}), o).out);
    CHECK(plan["microvm"]["boot"] == "restore");
    CHECK(plan["microvm"]["snapshot"] == snaps[0]);
    bool incoming = false;
    for (const auto& a : plan["argv"]) incoming = incoming || a == "--restore";
    CHECK(incoming);

    auto a = run(t.argv(probe), o);
    auto b = run(t.argv(probe), o);
    INFO(a.err << b.err);
    REQUIRE(a.status == 3);
    REQUIRE(b.status == 3);
    CHECK(a.err.find("saved a snapshot") == std::string::npos);
    auto lines = [](const std::string& s) {
        std::vector<std::string> v;
        std::istringstream in(s);
        for (std::string l; std::getline(in, l);) v.push_back(l);
        return v;
    };
    auto la = lines(a.out), lb = lines(b.out), lf = lines(first.out);
    REQUIRE(la.size() == 3);
    REQUIRE(lb.size() == 3);
    REQUIRE(lf.size() == 3);
    CHECK(la[0].size() == 32);
    CHECK(la[0] != lb[0]);  // /dev/urandom
    CHECK(la[0] != lf[0]);
    CHECK(la[1] != lb[1]);  // the boot id
    CHECK(la[1].size() == 36);
    long now = static_cast<long>(::time(nullptr));
    CHECK(std::labs(std::atol(la[2].c_str()) - now) < 60);
    CHECK(std::labs(std::atol(lb[2].c_str()) - now) < 60);
    // Still one snapshot: nothing saved again.
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
    CHECK(n == 1);

    // --vm-boot cold asks for a full boot: no snapshot named.
    plan = json::parse(run(t.argv({"true"}, {"--print", "--vm-boot", "cold"}), o).out);
    CHECK(plan["microvm"]["boot"] == "cold");
    CHECK(plan["microvm"]["bootWhy"] == "");
    auto bad = run(t.argv({"true"}, {"--vm-boot", "later"}), o);
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--vm-boot: unknown boot 'later' (snapshot or cold)") != std::string::npos);
    CHECK(bad.out.empty());

    // A directory others may read or write is never used: a cold boot, saying why.
    REQUIRE(::chmod(dir.c_str(), 0755) == 0);
    plan = json::parse(run(t.argv({"true"}, {"--print"}), o).out);
    CHECK(plan["microvm"]["boot"] == "cold");
    CHECK(plan["microvm"]["bootWhy"] == dir + " is mode 0755; only its owner may use it (chmod 700 " + dir + ")");
    auto c = run(t.argv({"sh", "-c", "exit 4"}), o);
    CHECK(c.status == 4);
    CHECK(c.err.find("note: microvm: cold boot, no snapshot: " + dir + " is mode 0755") != std::string::npos);
}

// Whoever writes a snapshot chooses the kernel of every later guest: the
// default snapshot directory is masked in every sandbox, even one whose bind
// shows the home it lies in. Without cc-wrap the same write lands.
// Run by root, the snapshot a template boot makes serves every later session,
// whatever uid it runs as. Made under the session's uid, a process of that
// uid (here nobody, the tree's owner) could rewrite it while it is made and
// choose everyone's guest. The template boot has a uid of its own.
TEST_CASE("microvm: run by root, the template boot has a uid of its own; the session's uid cannot write the snapshot") {
    VmTree t;
    if (auto why = cannot_boot(t); !why.empty()) CC_SKIP(why);
    if (!cc::test::is_root()) CC_SKIP("only root chooses the monitor's uid");
    // Without the fix's reason: a directory of nobody's is nobody's to write.
    const std::string own = t.root + "/nobodys";
    fs::create_directories(own);
    REQUIRE(run({"chown", "65534:65534", own}).status == 0);
    ::chmod(own.c_str(), 0700);
    auto bare = run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "sh", "-c",
                     "echo planted > " + own + "/snapshot"});
    CHECK(bare.status == 0);
    CHECK(slurp(own + "/snapshot") == "planted\n");

    const std::string base = t.root + "/rt", dir = t.root + "/snapshots-own";
    fs::create_directories(base);
    ::chmod(base.c_str(), 0711);
    ::setenv("CC_VM_SNAPSHOT_DIR", dir.c_str(), 1);
    Async a(t.argv({"sh", "-c", "id -u; exit 3"}), t.root + "/own.out", t.root, base);
    ::unsetenv("CC_VM_SNAPSHOT_DIR");
    std::string save;
    REQUIRE(eventually(
        [&] {
            for (const auto& e : fs::directory_iterator(base))
                if (fs::is_directory(e.path() / "vm-template" / "vm-save")) save = (e.path() / "vm-template" / "vm-save").string();
            return !save.empty();
        },
        120000));
    struct stat st {};
    REQUIRE(::stat(save.c_str(), &st) == 0);
    CHECK(st.st_uid >= cc::sandbox::k_session_id_first);
    CHECK(st.st_uid != 65534u);
    auto planted = run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "sh", "-c",
                        "echo planted > " + save + "/snapshot"});
    CHECK(planted.status == 2);
    CHECK(planted.err.find("cannot create " + save + "/snapshot: Permission denied") != std::string::npos);
    int status = a.wait();
    CHECK(status == 3);
    CHECK(slurp(t.root + "/own.out") == "65534\n");  // the command itself still runs as the tree's owner
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
    CHECK(n == 1);
}

// A kernel built for the backend (scripts/microvm-kernel.sh --build: every
// driver built in, no ACPI, no PCI, no module loading) boots cold and from a
// snapshot. It takes a kernel build of a few minutes, which `make test`
// leaves out: skipped, saying so, when BUILD/microvm-built is not there
// (`make vm-kernel-built`).
TEST_CASE("microvm: a kernel built for the backend boots with its drivers built in, no ACPI, cold and restored") {
    VmTree t;
    if (auto why = cannot_boot(t); !why.empty()) CC_SKIP(why);
    const std::string built = (fs::path(bin("cc-wrap")).parent_path().parent_path().parent_path() / "microvm-built").string();
    if (!fs::exists(built + "/modules/builtin"))
        CC_SKIP("no kernel built for the backend in " + built + " (make vm-kernel-built: about 5 minutes)");
    RunOptions o;
    o.env["CC_MICROVM_DIR"] = built;
    o.env["CC_VM_SNAPSHOT_DIR"] = t.root + "/snapshots-built";
    o.timeout_ms = 180000;
    const std::string release = slurp(built + "/version").substr(0, slurp(built + "/version").find('\n'));
    REQUIRE(release.size() > 3);
    CHECK(release.substr(release.size() - 3) == "-cc");

    auto plan = json::parse(run(t.argv({"true"}, {"--print", "--vm-boot", "cold"}), o).out);
    CHECK(plan["microvm"]["kernel"] == built + "/vmlinux");
    CHECK(plan["microvm"]["kernelVersion"] == release);
    CHECK(plan["microvm"]["boot"] == "cold");
    CHECK(plan["microvm"]["cmdline"].get<std::string>().find(" reboot=t") != std::string::npos);
    bool acpi_off = false;
    for (const auto& a : plan["argv"]) acpi_off = acpi_off || a == "microvm,acpi=off,isa-serial=on";
    CHECK(acpi_off);

    const std::vector<std::string> probe = {
        "sh", "-c", "uname -r; [ -e /proc/modules ] && echo modules || echo no-modules; "
                    "[ -e /sys/firmware/acpi ] && echo acpi || echo no-acpi; cat /config/settings; exit 5"};
    auto cold = run(t.argv(probe, {"--vm-boot", "cold"}), o);
    INFO(cold.err);
    CHECK(cold.status == 5);
    CHECK(cold.out == release + "\nno-modules\nno-acpi\nread-only\n");
    // The snapshot path: the first run saves, the next restores; both end
    // with the command's status (a guest that powered off by halting would
    // never end).
    auto first = run(t.argv(probe), o);
    INFO(first.err);
    CHECK(first.status == 5);
    CHECK(first.err.find("saved a snapshot") != std::string::npos);
    auto restored = run(t.argv(probe), o);
    INFO(restored.err);
    CHECK(restored.status == 5);
    CHECK(restored.out == release + "\nno-modules\nno-acpi\nread-only\n");
    CHECK(restored.err.find("saved a snapshot") == std::string::npos);
}

TEST_CASE("microvm: the snapshot directory is masked inside every sandbox") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot make its namespaces here");
    const std::string home = cc::test::scratch_dir() + "/snaphome-" + std::to_string(::getpid());
    const std::string snap = home + "/.cache/cc/microvm/k.snap";
    fs::create_directories(home + "/.cache/cc/microvm");
    spit(snap, "kernel\n");
    REQUIRE(run({"sh", "-c", "echo agent > " + snap}).status == 0);  // the attack, without cc-wrap
    REQUIRE(slurp(snap) == "agent\n");
    spit(snap, "kernel\n");
    if (cc::test::is_root()) REQUIRE(run({"chown", "-R", "65534:65534", home}).status == 0);
    ::chmod(cc::test::scratch_dir().c_str(), 0755);
    json j = {{"sessionId", "snap-mask"},
              {"workspaceId", "ws"},
              {"mode", "chat"},
              {"guestWorkdir", home},
              {"bindMounts", json::array({{{"hostPath", home}, {"guestPath", home}}})},
              {"egressAllowlist", json::array()}};
    std::string spec = home + "/../snap-spec-" + std::to_string(::getpid()) + ".json";
    spit(spec, j.dump());
    RunOptions o;
    o.env["HOME"] = home;
    auto r = run({bin("cc-wrap"), "--quiet", "--spec", spec, "--backend", "native", "--", "sh", "-c",
                  "echo agent > " + snap + "; cat " + snap + "; touch " + home + "/ok"},
                 o);
    INFO(r.err);
    CHECK(r.status == 0);  // touch's
    CHECK(r.err.find("sh: 1: cannot create " + snap + ": Permission denied\n") != std::string::npos);
    CHECK(r.err.find("cat: " + snap + ": Permission denied\n") != std::string::npos);
    CHECK(slurp(snap) == "kernel\n");
    CHECK(fs::exists(home + "/ok"));  // the rest of the home is writable: the mask is what refused
}
