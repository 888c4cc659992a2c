// The write supervisor: write rules judged when a file is created or opened
// for writing (write_rules.hpp), the notify filter failing closed, and real
// launches under bubblewrap where each refusal is first shown to be an
// operation that works without cc-wrap. Run as root and as an unprivileged
// user (sandbox-supervisor-as-user).
#include "harness.hpp"
#include "launch_fixture.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <cstdio>
#include <set>

#include "cc/core/json_writer.hpp"
#include "cc/sandbox/sandbox_init.hpp"
#include "cc/sandbox/supervisor.hpp"
#include "cc/sandbox/write_rules.hpp"

using cc::sandbox::judge;
using cc::sandbox::WriteOp;
using cc::sandbox::WriteRules;

namespace {

WriteRules sample_rules() {
    WriteRules r;
    r.paths.push_back({"/work/.git/hooks", "/h/work/.git/hooks", "mandatory"});
    r.paths.push_back({"/work/.git/config", "/h/work/.git/config", "mandatory"});
    r.paths.push_back({"/home/u/.bashrc", "~/.bashrc", "mandatory"});
    r.names.push_back({".env", "standard dispatch policy"});
    r.names.push_back({".env.*", "standard dispatch policy"});
    r.names.push_back({"*.pem", "standard dispatch policy"});
    r.gitScope = {"/work"};
    r.writable = {"/work", "/tmp", "/home/u", "/dev", "/proc"};
    return r;
}

// cc-wrap for the tree's spec, with the standard policy (no
// --drop-filename-denies) and events.
cc::test::RunResult wrap_std(Tree& t, const std::string& script, std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--", "sh", "-c", script});
    RunOptions o;
    o.env["HOME"] = t.home;
    o.timeout_ms = 60000;
    return run(argv, o);
}

// What the command wrote on stdout, from the --events stream.
std::string stdout_text(const std::string& out) {
    std::string text;
    std::istringstream lines(out);
    for (std::string e; std::getline(lines, e);) {
        auto j = json::parse(e, nullptr, false);
        if (j.is_object() && j.value("event", "") == "stdout") text += j.value("text", "");
    }
    return text;
}

std::vector<json> violations(const std::string& out) {
    std::vector<json> v;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        auto j = json::parse(line, nullptr, false);
        if (j.is_object() && j.value("event", "") == "violation") v.push_back(j);
    }
    return v;
}


// The listener the init step's half sends over `sock` (SCM_RIGHTS), or -1
// when the message carries no descriptor.
int receive_listener(int sock, int flags) {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl;
    msg.msg_controllen = sizeof ctl;
    if (::recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC) != 1) return -1;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) return -1;
    int fd = -1;
    std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}
}  // namespace

TEST_CASE("write rules: names, paths and their ancestors, git control files", "[supervisor][unit]") {
    auto r = sample_rules();
    CHECK(judge(r, "/work/src/main.c", WriteOp::create).allowed);
    auto env = judge(r, "/work/app/.env", WriteOp::create);
    CHECK_FALSE(env.allowed);
    CHECK(env.rule == ".env");
    CHECK(env.source == "standard dispatch policy");
    CHECK(judge(r, "/work/.env.local", WriteOp::write).rule == ".env.*");
    CHECK(judge(r, "/work/tls/site.pem", WriteOp::rename_to).rule == "*.pem");
    CHECK(judge(r, "/work/.envrc", WriteOp::create).allowed);  // not ".env", not ".env.*"
    // A rule's path and everything beneath it, existing or not.
    CHECK(judge(r, "/work/.git/hooks", WriteOp::create_dir).rule == "/h/work/.git/hooks");
    CHECK(judge(r, "/work/.git/hooks/pre-commit", WriteOp::create).source == "mandatory");
    CHECK(judge(r, "/work/.git/config", WriteOp::remove).source == "mandatory");
    CHECK_FALSE(judge(r, "/home/u/.bashrc", WriteOp::write).allowed);
    // Its ancestors cannot be moved or removed (a fresh tree in their place),
    // but may be written into elsewhere.
    auto anc = judge(r, "/work/.git", WriteOp::rename_from);
    CHECK_FALSE(anc.allowed);
    CHECK(anc.source == "mandatory (an ancestor of /work/.git/hooks)");
    CHECK_FALSE(judge(r, "/work", WriteOp::remove).allowed);
    CHECK(judge(r, "/work/.git/index", WriteOp::write).allowed);
    CHECK(judge(r, "/work/.git/objects/ab", WriteOp::create_dir).allowed);
    CHECK(judge(r, "/work/.git", WriteOp::create_dir).allowed);
    // Nor can anything but a directory be made on the way to one (a symlink
    // there would take the rule's path where no rule names it).
    auto way = judge(r, "/work/.git", WriteOp::create);
    CHECK_FALSE(way.allowed);
    CHECK(way.source == "mandatory (not a directory on the way to /work/.git/hooks)");
    CHECK_FALSE(judge(r, "/home/u", WriteOp::create).allowed);
    // Any repository in the writable tree: its control files, and .git files.
    CHECK(judge(r, "/work/sub/.git/config", WriteOp::create).rule == ".git/{config,hooks,...} of any repository");
    CHECK_FALSE(judge(r, "/work/sub/.git/hooks/post-checkout", WriteOp::create).allowed);
    CHECK_FALSE(judge(r, "/work/a/.git/modules/x/config", WriteOp::write).allowed);
    CHECK_FALSE(judge(r, "/work/a/.git/worktrees/w/gitdir", WriteOp::create).allowed);
    CHECK(judge(r, "/work/sub/.git", WriteOp::create).rule == ".git (a gitdir pointer file or link)");
    CHECK(judge(r, "/work/sub/.git", WriteOp::create_dir).allowed);
    CHECK(judge(r, "/work/sub/.git/objects/pack/x.pack", WriteOp::create).allowed);
    CHECK(judge(r, "/tmp/repo/.git/config", WriteOp::create).allowed);  // not host-backed
    // Outside the writable places: refused as Landlock would.
    CHECK(judge(r, "/usr/bin/x", WriteOp::create).source == "landlock");
    // A writable bind the operator nested in a protected path on purpose.
    WriteRules p;
    p.paths.push_back({"/repos/app", "/srv/repos/app", "protectedPaths", {"/repos/app/build"}});
    CHECK(judge(p, "/repos/app/build/out.o", WriteOp::create).allowed);
    CHECK_FALSE(judge(p, "/repos/app/src/main.c", WriteOp::write).allowed);
    CHECK_FALSE(judge(p, "/repos/app/buildx", WriteOp::create).allowed);
    // Objects without a path (a pipe reopened through /proc) are not judged.
    CHECK(judge(r, "pipe:[1234]", WriteOp::write).allowed);
}

TEST_CASE("write supervisor: with the listener gone, every notified call fails (ENOSYS), reads still work", "[supervisor]") {
    auto filter = cc::sandbox::compile_write_filter();
    REQUIRE(filter);
    std::string dir = cc::test::scratch_dir() + "/failclosed";
    fs::create_directories(dir);
    int sp[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
    pid_t pid = ::fork();
    if (pid == 0) {
        ::close(sp[0]);
        std::string err;
        if (!cc::sandbox::install_write_filter(*filter, sp[1], err)) _exit(90);
        // Wait until the parent has taken the listener and closed it.
        char c;
        if (::read(sp[1], &c, 1) != 0) _exit(91);
        int fd = ::open((dir + "/new").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != ENOSYS) _exit(92);
        if (::mkdir((dir + "/d").c_str(), 0755) == 0 || errno != ENOSYS) _exit(93);
        int rd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);  // read-only: never notified
        if (rd < 0) _exit(94);
        _exit(0);
    }
    ::close(sp[1]);
    // Without the filter the same calls succeed (so ENOSYS is the filter's).
    int fd = ::open((dir + "/control").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    CHECK(fd >= 0);
    if (fd >= 0) ::close(fd);
    int listener = receive_listener(sp[0], 0);
    REQUIRE(listener >= 0);
    ::close(listener);  // the supervisor "dies"
    ::close(sp[0]);     // lets the child go on
    int st = 0;
    ::waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
    CHECK_FALSE(fs::exists(dir + "/new"));
    CHECK_FALSE(fs::exists(dir + "/d"));
    ::close(*filter);
}

TEST_CASE("write supervisor: the filter arrives through a pipe; an empty pipe installs nothing", "[supervisor]") {
    // cc-wrap writes the program once bubblewrap is starting; if cc-wrap
    // fails or dies first, the init step reads an empty pipe and refuses.
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    ::close(p[1]);
    int sp[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
    std::string err;
    CHECK_FALSE(cc::sandbox::install_write_filter(p[0], sp[1], err));
    CHECK(err == "the write filter descriptor holds no BPF program");
    ::close(p[0]);
    // The same pipe, filled by export_write_filter, installs the filter and
    // hands a listener over (in a child: the filter stays with it).
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    REQUIRE(cc::sandbox::export_write_filter(p[1]));
    ::close(p[1]);
    pid_t pid = ::fork();
    if (pid == 0) {
        std::string e;
        _exit(cc::sandbox::install_write_filter(p[0], sp[1], e) ? 0 : 90);
    }
    ::close(p[0]);
    int st = 0;
    REQUIRE(::waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
    int listener = receive_listener(sp[0], MSG_DONTWAIT);
    CHECK(listener >= 0);
    if (listener >= 0) ::close(listener);
    ::close(sp[0]);
    ::close(sp[1]);
}

TEST_CASE("write supervisor: the standard policy runs on Linux; filename rules refused at creation", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    Tree t("sup-names");
    // Without cc-wrap the same writes succeed.
    REQUIRE(run({"sh", "-c", "cd '" + t.outside + "' && echo x > .env && ln -s .env.local l && echo y > l && echo k > a.pem"})
                .status == 0);
    CHECK(fs::exists(t.outside + "/.env.local"));
    auto r = wrap_std(t, "cd '" + t.work + "'; echo x > .env; echo rc=$?; ln -s .env.local l; echo y > l; echo rc=$?;"
                         " cp /etc/hostname a.pem; echo rc=$?; echo ok > fine.txt; echo rc=$?",
                      {"--events"});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("rc=2") != std::string::npos);  // sh: cannot create .env: Permission denied
    CHECK(r.out.find("Permission denied") != std::string::npos);
    CHECK_FALSE(fs::exists(t.work + "/.env"));
    CHECK_FALSE(fs::exists(t.work + "/.env.local"));
    CHECK_FALSE(fs::exists(t.work + "/a.pem"));
    CHECK(slurp(t.work + "/fine.txt") == "ok\n");
    auto v = violations(r.out);
    REQUIRE(v.size() == 3);
    CHECK(v[0]["syscall"] == "openat");
    CHECK(v[0]["path"] == t.work + "/.env");
    CHECK(v[0]["rule"] == ".env");
    CHECK(v[0]["source"] == "standard dispatch policy");
    CHECK(v[0]["errno"] == "EACCES");
    CHECK(v[1]["path"] == t.work + "/.env.local");  // the symlink followed as the kernel would
    CHECK(v[1]["rule"] == ".env.*");
    CHECK(v[2]["rule"] == "*.pem");
    // Counted in the exit event, which also says whether calls were handed
    // over on one CPU: the kernel has the flag from Linux 6.6.
    CHECK(r.out.find("\"refused\":3") != std::string::npos);
    utsname u{};
    REQUIRE(::uname(&u) == 0);
    int major = 0, minor = 0;
    REQUIRE(std::sscanf(u.release, "%d.%d", &major, &minor) == 2);
    const bool sync = major > 6 || (major == 6 && minor >= 6);
    CHECK(r.out.find(sync ? "\"syncWakeUp\":true" : "\"syncWakeUp\":false") != std::string::npos);
}

// A refused write naming a file that is not UTF-8, and an error line with
// such a byte, used to end cc-wrap --events with status 1 and no exit event
// (the event writer threw in the loop): the command's status was lost.
TEST_CASE("write supervisor: a file name that is not UTF-8 is reported as bytes; the status and exit event stay", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    CHECK_THROWS(json{{"path", "a\xff.pem"}}.dump());  // what the event line used to be written with
    Tree t("sup-bytes");
    // Without cc-wrap the write happens.
    REQUIRE(run({"sh", "-c", "cd '" + t.outside + "' && echo k > \"$(printf 'a\\377.pem')\""}).status == 0);
    CHECK(fs::exists(t.outside + "/a\xff.pem"));
    auto r = wrap_std(t, "cd '" + t.work + "'; echo k > \"$(printf 'a\\377.pem')\"; echo rc=$?;"
                         " printf 'oops \\377\\n' >&2; exit 7",
                      {"--events"});
    INFO(r.out << r.err);
    CHECK(r.status == 7);
    CHECK_FALSE(fs::exists(t.work + "/a\xff.pem"));
    CHECK(stdout_text(r.out) == "rc=2\n");
    auto v = violations(r.out);
    REQUIRE(v.size() == 1);
    CHECK(v[0]["rule"] == "*.pem");
    CHECK(v[0]["errno"] == "EACCES");
    std::string want = t.work + "/a\xff.pem";
    REQUIRE(v[0]["path"].is_object());
    CHECK(v[0]["path"]["bytes"] == cc::json::base64(want));
    // The command's error lines, as bytes; then the exit event with its status.
    std::string err_bytes;
    {
        std::istringstream lines(r.out);
        for (std::string e; std::getline(lines, e);) {
            auto j = json::parse(e, nullptr, false);
            if (!j.is_object() || j.value("event", "") != "stderr") continue;
            if (j.contains("text")) err_bytes += j["text"].get<std::string>();
            else err_bytes += cc::json::bytes_of(json{{"bytes", j["bytes"]}}).value_or("");
        }
    }
    CHECK(err_bytes.find("oops \xff\n") != std::string::npos);
    CHECK(err_bytes.find("a\xff.pem: Permission denied") != std::string::npos);
    json last = json::parse(r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1));
    CHECK(last["event"] == "exit");
    CHECK(last["exitCode"] == 7);
}

TEST_CASE("write supervisor: mandatory targets that do not exist are refused when created, not at launch", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    Tree t("sup-missing");
    fs::remove_all(t.work + "/.git/hooks");
    // Without the supervisor this launch is refused, every missing target named.
    auto old = wrap_std(t, "true", {"--no-write-supervisor", "--drop-filename-denies"});
    CHECK(old.status == 125);
    CHECK(old.err.find(".git/hooks") != std::string::npos);
    auto r = wrap_std(t, "cd '" + t.work + "'; mkdir .git/hooks; echo rc=$?; mkdir -p .git/hooks/x; echo rc=$?;"
                         " mv .git g; echo rc=$?; rm -f .git/config; echo rc=$?; git init -q sub; echo rc=$?;"
                         " echo 'gitdir: /tmp' > sub2.git; mv sub2.git .git2; mkdir d; mv .git2 d/.git; echo rc=$?;"
                         " git status --short >/dev/null; echo git=$?");
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out == "rc=1\nrc=1\nrc=1\nrc=1\nrc=1\nrc=1\ngit=0\n");
    CHECK(r.err.find("mkdir: cannot create directory") != std::string::npos);
    CHECK(r.err.find(".git/hooks") != std::string::npos);
    CHECK(r.err.find("Permission denied") != std::string::npos);
    CHECK_FALSE(fs::exists(t.work + "/.git/hooks"));
    CHECK(fs::exists(t.work + "/.git/config"));
    CHECK_FALSE(fs::exists(t.work + "/sub/.git/config"));
    CHECK_FALSE(fs::exists(t.work + "/d/.git"));
}

// A writable $HOME: the places a later login, shell or tool takes programs
// from are refused when the command tries to create them (PATH directories
// a login adds, Python's user site, less's key file), ordinary files are not.
TEST_CASE("write supervisor: a writable home cannot gain what the host runs next", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    Tree t("sup-home");
    json spec = json::parse(slurp(t.spec));
    spec["bindMounts"].push_back({{"hostPath", t.home}});
    spit(t.spec, spec.dump());
    if (cc::test::is_root()) Tree::give_to_nobody(t.home);
    // A symlink where a rule's path would go (before ~/.local exists) would
    // send ~/.local/lib/... wherever the command likes: refused.
    const std::string way = "cd \"$HOME\"; ln -s /tmp .local; echo rc=$?";
    REQUIRE(run({"sh", "-c", "export HOME='" + t.outside + "'; " + way}).out == "rc=0\n");
    REQUIRE(fs::is_symlink(t.outside + "/.local"));
    auto w = wrap_std(t, way, {"--events"});
    INFO(w.out << w.err);
    CHECK(stdout_text(w.out) == "rc=1\n");
    CHECK_FALSE(fs::exists(fs::symlink_status(t.home + "/.local")));
    auto wv = violations(w.out);
    REQUIRE(wv.size() == 1);
    CHECK(wv[0]["syscall"] == "symlinkat");
    CHECK(wv[0]["source"].get<std::string>().rfind("mandatory (not a directory on the way to ", 0) == 0);
    const std::string script =
        "cd \"$HOME\"; mkdir -p .local/bin; echo rc=$?; mkdir -p .local/lib/python3/site-packages; echo rc=$?;"
        " echo 'import os' > .lesskey; echo rc=$?; mkdir -p .cargo; echo rc=$?; echo x > .cargo/env; echo rc=$?;"
        " echo notes > notes.txt; echo rc=$?";
    // Without cc-wrap each of these is made.
    auto free_run = run({"sh", "-c", "export HOME='" + t.outside + "'; " + script});
    REQUIRE(free_run.out == "rc=0\nrc=0\nrc=0\nrc=0\nrc=0\nrc=0\n");
    auto r = wrap_std(t, script, {"--events"});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    const std::string text = stdout_text(r.out);
    CHECK(text == "rc=1\nrc=1\nrc=2\nrc=0\nrc=2\nrc=0\n");
    for (const auto& f : {"/.local/bin", "/.local/lib", "/.lesskey", "/.cargo/env"}) CHECK_FALSE(fs::exists(t.home + f));
    CHECK(slurp(t.home + "/notes.txt") == "notes\n");
    std::set<std::string> rules;
    for (const auto& v : violations(r.out)) {
        CHECK(v["source"] == "mandatory");
        CHECK(v["errno"] == "EACCES");
        rules.insert(v["rule"].get<std::string>());
    }
    CHECK(rules == std::set<std::string>{"~/.local/bin", "~/.local/lib", "~/.lesskey", "~/.cargo/env"});
}

TEST_CASE("write supervisor: a thread rewriting the path after the check gains nothing", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    Tree t("sup-race");
    // Without cc-wrap the flipping really lands on the other name.
    std::string probe = t.tools + "/cc-test-syscall";
    auto free_run = run({probe, "race", t.outside + "/good.txt", t.outside + "/.env.xyz", "30000"});
    REQUIRE(free_run.status == 0);
    CHECK(free_run.out.find("bad=0") == std::string::npos);
    CHECK(fs::exists(t.outside + "/.env.xyz"));
    auto r = wrap_std(t, "'" + probe + "' race '" + t.work + "/good.txt' '" + t.work + "/.env.xyz' 3000");
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("race good=") == 0);
    CHECK(r.out.find(" bad=0\n") != std::string::npos);
    CHECK(r.out.find("good=0 ") == std::string::npos);
    CHECK_FALSE(fs::exists(t.work + "/.env.xyz"));
}

// A disabled git hook (present, not executable) made executable through a
// descriptor: fchmod names no path, so it is judged by what the descriptor
// names. Only a mode that adds an execute, setuid or setgid bit is sent.
TEST_CASE("write supervisor: fchmod cannot make a denied file executable", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    Tree t("sup-fchmod");
    std::string probe = t.tools + "/cc-test-syscall";
    for (const auto& dir : {t.work, t.outside}) {
        fs::create_directories(dir + "/.git/hooks");
        for (const auto& f : {dir + "/.git/hooks/pre-push", dir + "/deploy.pem", dir + "/tool.sh"}) {
            spit(f, "#!/bin/sh\necho pwned\n");
            ::chmod(f.c_str(), 0644);
        }
    }
    if (cc::test::is_root()) Tree::give_to_nobody(t.root);
    // Without cc-wrap the hook is enabled this way.
    auto free_run = run({probe, "fchmod_x", t.outside + "/.git/hooks/pre-push"});
    REQUIRE(free_run.out == "fchmod_x ok\n");
    CHECK((fs::status(t.outside + "/.git/hooks/pre-push").permissions() & fs::perms::owner_exec) != fs::perms::none);
    // Inside: the hook (a read-only bind too) and a denied name refuse an
    // added execute bit (the supervisor: EACCES); a mode without one is not
    // sent (the hook's read-only bind still refuses it, the .pem takes it);
    // an O_PATH descriptor cannot be changed at all; an ordinary file can
    // be made executable.
    auto r = wrap_std(t, "cd '" + t.work + "'; p='" + probe + "'; $p fchmod_x .git/hooks/pre-push; $p fchmod_rw .git/hooks/pre-push;"
                         " $p fchmod_x deploy.pem; $p fchmod_rw deploy.pem; $p fchmod_path tool.sh; $p fchmod_x tool.sh",
                      {"--events"});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    const std::string text = stdout_text(r.out);
    CHECK(text ==
          "fchmod_x errno=EACCES\nfchmod_rw errno=EROFS\nfchmod_x errno=EACCES\nfchmod_rw ok\nfchmod_path errno=EBADF\n"
          "fchmod_x ok\n");
    auto mode = [&](const std::string& f) { return fs::status(t.work + "/" + f).permissions() & fs::perms::all; };
    CHECK(mode(".git/hooks/pre-push") == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                          fs::perms::others_read));
    CHECK(mode("deploy.pem") == (fs::perms::owner_read | fs::perms::owner_write));
    CHECK((mode("tool.sh") & fs::perms::owner_exec) != fs::perms::none);
    auto v = violations(r.out);
    REQUIRE(v.size() == 2);
    CHECK(v[0]["syscall"] == "fchmod");
    CHECK(v[0]["path"] == t.work + "/.git/hooks/pre-push");
    CHECK(v[0]["errno"] == "EACCES");
    CHECK(v[1]["syscall"] == "fchmod");
    CHECK(v[1]["path"] == t.work + "/deploy.pem");
    CHECK(v[1]["rule"] == "*.pem");
}

TEST_CASE("write supervisor: other ways to the same file", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    Tree t("sup-ways");
    spit(t.work + "/.env", "SECRET=1\n");
    if (cc::test::is_root()) Tree::give_to_nobody(t.work);
    std::string probe = t.tools + "/cc-test-syscall";
    // Without cc-wrap each of these changes .env (or makes a new one).
    auto free_run = run({"sh", "-c", "cd '" + t.outside + "' && echo S > .env && ln .env h && echo a >> h && exec 3<.env &&"
                                     " echo b >> /proc/self/fd/3 && '" + probe + "' openat2_create .env.o && mv h .env.p"});
    REQUIRE(free_run.status == 0);
    CHECK(slurp(t.outside + "/.env") == "S\na\nb\n");
    auto r = wrap_std(t, "cd '" + t.work + "'; ln .env h; echo rc=$?; exec 3<.env; echo b >> /proc/self/fd/3; echo rc=$?;"
                         " '" + probe + "' openat2_create .env.o; truncate -s 0 .env; echo rc=$?; rm .env; echo rc=$?;"
                         " mv .env x; echo rc=$?; chmod 777 .env; echo rc=$?; echo fine > /dev/null; echo rc=$?");
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out == "rc=1\nrc=2\nopenat2_create errno=EACCES\nrc=1\nrc=1\nrc=1\nrc=1\nrc=0\n");
    CHECK(slurp(t.work + "/.env") == "SECRET=1\n");
    CHECK_FALSE(fs::exists(t.work + "/h"));
    CHECK_FALSE(fs::exists(t.work + "/.env.o"));
}

TEST_CASE("write supervisor: the caller's /proc/self/cwd and /proc/PID/root are the paths they name", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    Tree t("sup-procdirs");
    if (cc::test::is_root()) Tree::give_to_nobody(t.work);
    // Without cc-wrap a .env can be made through either spelling.
    auto free_run = run({"sh", "-c", "cd '" + t.outside + "' && echo S > /proc/self/cwd/.env && echo T > /proc/$$/root'" +
                                     t.outside + "/.env.r'"});
    REQUIRE(free_run.status == 0);
    CHECK(slurp(t.outside + "/.env") == "S\n");
    auto r = wrap_std(t, "cd '" + t.work + "'; echo ok > /proc/self/cwd/a.txt; echo rc=$?; echo ok > /proc/$$/root'" + t.work +
                         "/b.txt'; echo rc=$?; echo S > /proc/self/cwd/.env; echo rc=$?; echo S > /proc/$$/root'" + t.work +
                         "/.env'; echo rc=$?; mkdir /proc/self/cwd/d; echo rc=$?");
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out == "rc=0\nrc=0\nrc=2\nrc=2\nrc=0\n");
    CHECK(slurp(t.work + "/a.txt") == "ok\n");
    CHECK(slurp(t.work + "/b.txt") == "ok\n");
    CHECK(fs::is_directory(t.work + "/d"));
    CHECK_FALSE(fs::exists(t.work + "/.env"));
    CHECK(r.err.find("/proc/self/cwd/.env: Permission denied") != std::string::npos);
}

TEST_CASE("write supervisor: ordinary work is unaffected", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    Tree t("sup-work");
    auto r = wrap_std(t, "set -e; cd '" + t.work + "'; umask 027; printf 'x\\n' > f.txt; sed -i s/x/y/ f.txt; cat f.txt;"
                         " mkdir -p a/b/c; touch a/b/c/d; cp -r a e; mv e g; rm -rf a; ls; stat -c %a f.txt;"
                         " mkfifo /tmp/p; (cat /tmp/p &); echo via-fifo > /tmp/p; sleep 0.1;"
                         " cat <<EOF\nheredoc\nEOF\n"
                         " ln -s f.txt l; echo z >> l; cat f.txt; echo q > /dev/null; git add f.txt;"
                         " git -c user.email=a@b -c user.name=n commit -qm one; git log --oneline | wc -l;"
                         " for p in /proc/[0-9]*; do cat $p/comm; done | grep -c cc-wrap || true;"
                         " set +e; for p in /proc/[0-9]*; do [ \"$(cat $p/comm)\" = cc-wrap-hand ] && h=$p; done;"
                         " cat $h/environ >/dev/null 2>&1; echo environ=$?; ls $h/fd >/dev/null 2>&1; echo fd=$?;"
                         " " + t.tools + "/cc-test-syscall open_rw $h/mem");
    INFO(r.err);
    CHECK(r.status == 0);
    // Of cc-wrap, only the init step (PID 1) and the hand (it performs the
    // calls the supervisor judged) are in the sandbox, and nothing of the
    // hand can be read or written.
    CHECK(r.out == "y\nf.txt\ng\nlink\n640\nvia-fifo\nheredoc\ny\nz\n1\n2\nenviron=1\nfd=2\nopen_rw errno=EACCES\n");
}

TEST_CASE("write supervisor: a call from a mount namespace the command made is refused", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    if (!cc::test::have_program("unshare")) CC_SKIP("unshare not installed");
    Tree t("sup-nested");
    json spec = json::parse(slurp(t.spec));
    spec["allowNestedNamespaces"] = true;
    spit(t.spec, spec.dump());
    // Without cc-wrap, a user and mount namespace of one's own writes as usual.
    std::string open_dir = t.outside + "/open";
    fs::create_directories(open_dir);
    ::chmod(open_dir.c_str(), 0777);
    auto free_run = run({"unshare", "-Urm", "sh", "-c", "echo x > '" + open_dir + "/nested.txt'"});
    INFO(free_run.err);
    REQUIRE(free_run.status == 0);
    CHECK(slurp(open_dir + "/nested.txt") == "x\n");
    // Inside, paths there mean something else than in the sandbox (a bind
    // could show a protected directory under another name): refused.
    auto r = wrap_std(t, "unshare -Urm sh -c 'echo x > " + t.work + "/nested.txt'; echo rc=$?; echo y > " + t.work +
                             "/plain.txt; echo rc=$?");
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out == "rc=1\nrc=0\n");  // unshare cannot even write its uid_map there
    CHECK(r.err.find("Operation not permitted") != std::string::npos);
    CHECK_FALSE(fs::exists(t.work + "/nested.txt"));
    CHECK(slurp(t.work + "/plain.txt") == "y\n");
}

// The supervisor used to perform the command's writing opens from a thread
// of cc-wrap, which has no Landlock domain and passes the kernel's ptrace
// checks: asked for /proc/1/mem (bubblewrap's PID 1, which has none of the
// layers), it opened it and handed the command write access to that
// process's memory. Every call is now performed by the hand, inside the
// sandbox with the command's restrictions, so the kernel refuses it there.
TEST_CASE("write supervisor: what the command cannot open, the supervisor does not open for it", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    if (landlock_abi() < 1) CC_SKIP("no Landlock: a process of the sandbox's uid may trace another");
    // Without a sandbox, a process may open its child's memory for writing.
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    int mem = ::open(("/proc/" + std::to_string(child) + "/mem").c_str(), O_RDWR | O_CLOEXEC);
    int open_errno = errno;
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    CHECK(mem >= 0);
    INFO("open errno " << open_errno);
    if (mem >= 0) ::close(mem);

    Tree t("sup-power");
    std::string probe = t.tools + "/cc-test-syscall";
    const std::string calls = probe + " open_rw /proc/1/mem openat2_rw /proc/1/mem openat_rw /proc/1//mem"
                                      " open_rw /proc/self/../1/mem open_rw /proc/1/fd/0 open_rw /proc/1/fd/1"
                                      " open_rw /proc/1/environ open_rw /dev/tty";
    const std::string want =
        "open_rw errno=EACCES\nopenat2_rw errno=EACCES\nopenat_rw errno=EACCES\nopen_rw errno=EACCES\n"
        "open_rw errno=EACCES\nopen_rw errno=EACCES\nopen_rw errno=EACCES\nopen_rw errno=ENXIO\n";
    auto r = wrap_std(t, calls);
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out == want);
    // The same without the supervisor: the kernel refuses the command itself.
    auto bare = wrap_std(t, calls, {"--no-write-supervisor", "--drop-filename-denies"});
    INFO(bare.out << bare.err);
    REQUIRE(bare.status == 0);
    CHECK(bare.out == want);
    // The command's own memory stays its own to open.
    auto own = wrap_std(t, probe + " open_rw /proc/self/mem");
    CHECK(own.out == "open_rw ok\n");
}

// bubblewrap's own PID 1 runs with none of the layers (no seccomp filter,
// no Landlock domain): where Landlock does not forbid it, the command can
// open that process's memory and run code there without them. The init step
// is PID 1 instead: inside every layer, not dumpable, and the only processes
// in the sandbox besides the command's own are it and the hand.
TEST_CASE("sandbox: PID 1 is the init step, with the command's layers, and its memory is closed", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("pid1");
    std::string probe = t.tools + "/cc-test-syscall";
    // Without cc-wrap: bubblewrap's PID 1 has no filter, and its memory opens
    // for writing from the command.
    auto bare = run({"bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                     "--cap-drop", "ALL", "--", "sh", "-c",
                     "cat /proc/1/comm; grep '^Seccomp:' /proc/1/status; " + probe + " open_rw /proc/1/mem"});
    INFO(bare.out << bare.err);
    REQUIRE(bare.status == 0);
    CHECK(bare.out == "bwrap\nSeccomp:\t0\nopen_rw ok\n");

    const std::string script =
        "cat /proc/1/comm; for p in /proc/[0-9]*; do grep '^Seccomp:' $p/status; done | sort -u;"
        " " + probe + " open_rw /proc/1/mem openat2_rw /proc/1/mem open_rw /proc/1/environ;"
        " kill -TERM 1; kill -KILL 1; echo alive";
    for (const auto& flags : std::vector<std::vector<std::string>>{{}, {"--no-write-supervisor", "--drop-filename-denies"}}) {
        auto r = wrap_std(t, script, flags);
        INFO(r.out << r.err);
        REQUIRE(r.status == 0);
        // Every process in the sandbox, PID 1 included, is under a filter
        // (mode 2); PID 1's memory and environment do not open; the command
        // cannot signal it away.
        CHECK(r.out == "cc-wrap-init\nSeccomp:\t2\n"
                       "open_rw errno=EACCES\nopenat2_rw errno=EACCES\nopen_rw errno=EACCES\nalive\n");
    }
}

// A broken supervisor fails closed and never holds the run: the hand killed
// by the command (every call it would perform is refused), a FIFO nobody
// reads (the open waits in a helper; other calls go on; --timeout ends it).
TEST_CASE("write supervisor: a killed hand refuses every call; a FIFO without a reader holds nothing", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    Tree t("sup-broken");
    auto r = wrap_std(t, "cd '" + t.work + "'; echo a > before.txt; echo rc=$?;"
                         " for d in /proc/[0-9]*; do [ \"$(cat $d/comm 2>/dev/null)\" = cc-wrap-hand ] &&"
                         " kill -9 \"${d#/proc/}\" && echo killed; done;"
                         " sleep 0.2; echo b > after.txt; echo rc=$?; exit 3");
    INFO(r.out << r.err);
    CHECK(r.status == 3);
    CHECK(r.out == "rc=0\nkilled\nrc=2\n");
    CHECK(r.err.find("after.txt: Permission denied") != std::string::npos);
    CHECK(slurp(t.work + "/before.txt") == "a\n");
    CHECK_FALSE(fs::exists(t.work + "/after.txt"));

    // Writing to a FIFO nobody reads waits (as without the sandbox) while
    // the other calls are served; --timeout ends the run.
    auto f = wrap_std(t, "cd '" + t.work + "'; mkfifo ff; (sleep 0.3; echo other > other.txt) &"
                         " echo x > ff; echo never",
                      {"--timeout", "2"});
    INFO(f.out << f.err);
    CHECK(f.status == 137);
    CHECK(f.out.find("never") == std::string::npos);
    CHECK(slurp(t.work + "/other.txt") == "other\n");
}

// Two more ways to change what a file means: its extended attributes (a
// POSIX ACL can make a file executable where chmod is refused) and a Unix
// socket bound at a path (a file like any other: u.key). Both are judged
// and performed by the hand; addresses that are not paths bind as before.
TEST_CASE("write supervisor: extended attributes and Unix socket paths are judged", "[supervisor][launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!write_supervisor()) CC_SKIP("this kernel has no seccomp user notification with descriptor injection");
    if (!cc::test::have_program("python3")) CC_SKIP("python3 not installed");
    Tree t("sup-xattr");
    const std::string script = R"(
import os, socket, sys
os.chdir(sys.argv[1])
def attempt(what, f):
    try:
        f(); print(what, "ok")
    except OSError as e:
        print(what, e.errno)
open("f.txt", "w").write("x")
attempt("setxattr-plain", lambda: os.setxattr("f.txt", "user.cc", b"1"))
attempt("setxattr-config", lambda: os.setxattr(".git/config", "user.cc", b"1"))
attempt("removexattr-config", lambda: os.removexattr(".git/config", "user.cc"))
fd = os.open(".git/config", os.O_RDONLY)
attempt("fsetxattr-config", lambda: os.setxattr(fd, "user.cc", b"1"))
attempt("bind-key", lambda: socket.socket(socket.AF_UNIX).bind("u.key"))
attempt("bind-plain", lambda: socket.socket(socket.AF_UNIX).bind("ok.sock"))
attempt("bind-abstract", lambda: socket.socket(socket.AF_UNIX).bind("\0cc-abstract"))
attempt("bind-tcp", lambda: socket.socket().bind(("127.0.0.1", 0)))
)";
    spit(t.tools + "/x.py", script);
    // Without cc-wrap, each is made (a copy of the tree: .git/config is a file there too).
    fs::create_directories(t.outside + "/.git");
    spit(t.outside + "/.git/config", "[core]\n");
    auto free_run = run({"python3", t.tools + "/x.py", t.outside});
    INFO(free_run.out << free_run.err);
    if (free_run.out.find("setxattr-plain 95") != std::string::npos) CC_SKIP("this filesystem has no user xattrs");
    REQUIRE(free_run.out == "setxattr-plain ok\nsetxattr-config ok\nremovexattr-config ok\nfsetxattr-config ok\n"
                            "bind-key ok\nbind-plain ok\nbind-abstract ok\nbind-tcp ok\n");
    auto r = wrap_std(t, "python3 " + t.tools + "/x.py " + t.work, {"--events"});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(stdout_text(r.out) == "setxattr-plain ok\nsetxattr-config 13\nremovexattr-config 13\nfsetxattr-config 13\n"
                                "bind-key 13\nbind-plain ok\nbind-abstract ok\nbind-tcp ok\n");
    CHECK_FALSE(fs::exists(fs::symlink_status(t.work + "/u.key")));
    CHECK(fs::is_socket(t.work + "/ok.sock"));
    std::set<std::string> calls;
    for (const auto& v : violations(r.out)) calls.insert(v["syscall"].get<std::string>());
    CHECK(calls == std::set<std::string>{"setxattr", "removexattr", "fsetxattr", "bind"});
}
