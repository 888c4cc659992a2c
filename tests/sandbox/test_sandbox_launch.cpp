// Real launches under bubblewrap (the escape battery and the allowed
// paths). Registered twice: as root and as an unprivileged user (as-user.sh).
// Each test builds its own tree in the scratch dir; nothing outside it is
// touched, and the host is checked after every refused write.
#include "launch_fixture.hpp"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

TEST_CASE("launch: allowed paths work, statuses pass through", "[launch]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("allowed");
    auto r = t.sh("echo hello > made.txt && cat made.txt && pwd");
    CHECK(r.status == 0);
    CHECK(r.out == "hello\n" + t.work + "\n");
    CHECK(slurp(t.work + "/made.txt") == "hello\n");
    CHECK(t.sh("echo shared > " + t.repos + "/new.txt").status == 0);
    CHECK(slurp(t.repos + "/new.txt") == "shared\n");
    CHECK(t.sh("exit 7").status == 7);
    CHECK(t.sh("kill -TERM $$").status == 128 + SIGTERM);
    CHECK(t.wrap({"/no/such/program"}).status == 127);
    CHECK(t.wrap({"/etc/passwd"}).status == 126);
    CHECK(t.sh("cat " + t.config + "/../config >/dev/null 2>&1; ls " + t.config).status == 0);
    // --pty: the child has a terminal of its own (and keeps its status).
    auto tty = t.sh("test -t 0 && test -t 1 && echo on-a-tty; exit 5", {"--pty"});
    CHECK(tty.status == 5);
    CHECK(tty.out.find("on-a-tty") != std::string::npos);
    // A git commit in the work dir still works with hooks and config read-only.
    auto g = t.sh("git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && git log --oneline | wc -l");
    CHECK(g.status == 0);
    CHECK(g.out == "1\n");
}

TEST_CASE("launch: the escape battery is refused", "[launch][escape]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("escape");

    SECTION("a host Unix socket that was not bound") {
        int l = unix_listener(t.outside + "/daemon.sock", true);
        auto r = t.sh("socat -u OPEN:/dev/null UNIX-CONNECT:" + t.outside + "/daemon.sock");
        CHECK(refused(r, "No such file or directory"));
        CHECK(nobody_connected(l));
        ::close(l);
    }
    SECTION("writes outside the binds") {
        CHECK(refused(t.sh("touch " + t.outside + "/x"), "No such file or directory"));
        CHECK_FALSE(fs::exists(t.outside + "/x"));
        CHECK(refused(t.sh("touch /usr/x"), "touch: cannot touch '/usr/x': Permission denied"));
        CHECK(refused(t.sh("touch /x"), "touch: cannot touch '/x': Permission denied"));
        CHECK(refused(t.sh("echo x >> /etc/passwd"), "cannot create /etc/passwd: Permission denied"));
    }
    SECTION("a protected checkout: directly, through a symlink, by renaming its parent") {
        CHECK(refused(t.sh("echo evil > " + t.orig + "/f"), "Permission denied"));
        CHECK(refused(t.sh("echo evil > link/f"), "Permission denied"));
        CHECK(refused(t.sh("rm -rf " + t.orig), "Permission denied"));
        CHECK(refused(t.sh("mv " + t.orig + " " + t.repos + "/moved"), "Permission denied"));
        auto r = t.sh("mv " + t.repos + "/group " + t.repos + "/g2 && mkdir -p " + t.group_orig + " && echo evil > " +
                      t.group_orig + "/f");
        CHECK(refused(r, "Permission denied"));
        CHECK(slurp(t.orig + "/f") == "original\n");
        CHECK(slurp(t.group_orig + "/f") == "original\n");
        CHECK_FALSE(fs::exists(t.repos + "/g2"));
        CHECK_FALSE(fs::exists(t.repos + "/moved"));
    }
    SECTION("a planted ~/.ssh/id_rsa") {
        t.write_spec("chat", true);
        auto r = t.sh("cat $HOME/.ssh/id_rsa");
        CHECK(refused(r, "Permission denied"));
        CHECK(r.out.find("PRIVATE") == std::string::npos);
        CHECK(refused(t.sh("ls $HOME/.ssh"), "Permission denied"));
        // the terminal profile: $HOME writable, secrets still unreadable
        t.write_spec("chat", false);
        auto term = t.sh("cat $HOME/.ssh/id_rsa; echo mine > $HOME/notes.txt", {"--profile", "terminal"});
        CHECK(term.out.find("PRIVATE") == std::string::npos);
        CHECK(slurp(t.home + "/notes.txt") == "mine\n");
    }
    SECTION(".git/hooks in a writable repo") {
        CHECK(refused(t.sh("echo '#!/bin/sh' > .git/hooks/pre-commit"), "cannot create .git/hooks/pre-commit: Permission denied"));
        CHECK(refused(t.sh("mv .git/hooks .git/h2"), "Permission denied"));
        CHECK(refused(t.sh("git config core.hooksPath /tmp/h"), ".git/config: Permission denied"));
        CHECK_FALSE(fs::exists(t.work + "/.git/hooks/pre-commit"));
        CHECK(slurp(t.work + "/.git/config").find("hooksPath") == std::string::npos);
    }
    SECTION("the repository's own agent settings") {
        fs::create_directories(t.work + "/.claude");
        spit(t.work + "/.claude/settings.json", "{}\n");
        CHECK(refused(t.sh("echo '{\"hooks\":{}}' > .claude/settings.json"), "Permission denied"));
        CHECK(refused(t.sh("echo x > .claude/settings.local.json"), "Permission denied"));
        CHECK(refused(t.sh("mv .claude .claude-old"), "Permission denied"));
        CHECK(slurp(t.work + "/.claude/settings.json") == "{}\n");
        CHECK_FALSE(fs::exists(t.work + "/.claude/settings.local.json"));
        CHECK(t.sh("echo notes > notes.md").status == 0);  // the rest of the checkout stays writable
    }
    SECTION("writing in plan mode; runner state stays writable") {
        t.write_spec("plan", false);
        CHECK(refused(t.sh("touch " + t.work + "/x"), "Read-only file system"));
        CHECK(refused(t.sh("touch " + t.repos + "/x"), "Read-only file system"));
        CHECK_FALSE(fs::exists(t.work + "/x"));
        CHECK(t.sh("echo s > " + t.state + "/log").status == 0);
        CHECK(slurp(t.state + "/log") == "s\n");
    }
    SECTION("a sibling agent's directory") {
        auto r = t.sh("ls " + t.sibling + "; cat " + t.sibling + "/secret.txt");
        CHECK(refused(r, "No such file or directory"));
        CHECK(r.out.find("sibling") == std::string::npos);
    }
    SECTION("LD_PRELOAD and friends do not reach the child") {
        RunOptions o;
        o.env = {{"LD_PRELOAD", ""}, {"BASH_ENV", "/tmp/evil"}, {"NODE_OPTIONS", "--require /tmp/evil.js"},
                 {"GIT_CONFIG_COUNT", "1"}};
        auto r = t.sh("echo \"[${LD_PRELOAD-unset}][${BASH_ENV-unset}][${NODE_OPTIONS-unset}][${GIT_CONFIG_COUNT-unset}]\"",
                      {}, o);
        CHECK(r.out == "[unset][unset][unset][unset]\n");
    }
    SECTION("a direct TCP connection to a host service on 127.0.0.1") {
        int port = 0;
        int l = tcp_listener(port);
        auto r = t.sh("socat -u OPEN:/dev/null TCP:127.0.0.1:" + std::to_string(port) + ",connect-timeout=2");
        CHECK(refused(r, "Connection refused"));
        CHECK(nobody_connected(l));
        ::close(l);
    }
}

TEST_CASE("launch: refused writes become violation events", "[launch][events]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("violations");
    auto r = t.sh("echo out; touch " + t.orig + "/x; printf '\\377'; exit 3", {"--events"});
    CHECK(r.status == 3);
    auto ev = events_of(r.out);
    REQUIRE(ev.size() >= 5);
    CHECK(ev.front()["event"] == "starting");
    CHECK(ev.front()["plan"]["backend"] == "native");
    CHECK(ev.back()["event"] == "exit");
    CHECK(ev.back()["exitCode"] == 3);
    CHECK(ev.back()["endedBy"] == "command");
    bool saw_violation = false, saw_bytes = false, saw_ready = false;
    for (std::size_t i = 0; i < ev.size(); ++i) {
        CHECK(ev[i]["seq"] == i + 1);
        CHECK(ev[i]["sessionId"] == "t-" + fs::path(t.root).filename().string());
        if (ev[i]["event"] == "violation" && ev[i]["target"] == t.orig + "/x") {
            saw_violation = true;
            CHECK(ev[i]["action"] == "write");
        }
        // The byte that is not UTF-8 comes as base64: alone ("\377"), or
        // with "out\n" when both writes were read in one chunk.
        if (ev[i]["event"] == "stdout" && ev[i].contains("bytes"))
            saw_bytes = ev[i]["bytes"] == "/w==" || ev[i]["bytes"] == "b3V0Cv8=";
        if (ev[i]["event"] == "ready") saw_ready = true;
    }
    CHECK(saw_violation);
    CHECK(saw_bytes);
    CHECK(saw_ready);
}

TEST_CASE("launch: --timeout kills the whole sandbox, nothing is orphaned", "[launch][orphans]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("timeout");
    Async a({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--events", "--timeout",
             "2", "--", "sh", "-c", "sleep 60 & sleep 61"},
            t.root + "/out.jsonl", t.home);
    std::set<pid_t> seen;
    REQUIRE(eventually([&] {
        seen = descendants(a.pid);
        return seen.size() >= 4;  // bwrap, its pid 1, sh, the sleeps, socat
    }));
    CHECK(a.wait() == 137);
    auto ev = events_of(slurp(a.out));
    REQUIRE(ev.size() >= 2);
    CHECK(ev[ev.size() - 2]["event"] == "killed");
    CHECK(ev[ev.size() - 2]["reason"] == "timeout");
    CHECK(ev.back()["exitCode"] == 137);
    CHECK(ev.back()["endedBy"] == "timeout");
    // Without --events, one log line with the seconds as given.
    auto quick = t.sh("sleep 30", {"--timeout", "0.5"});
    CHECK(quick.status == 137);
    CHECK(quick.err.find("cc-wrap: timeout after 0.5 s: sandbox killed") != std::string::npos);
    // The command's own 137 is the command's.
    auto own = t.sh("kill -KILL $$", {"--events"});
    CHECK(own.status == 137);
    auto own_ev = events_of(own.out);
    REQUIRE(!own_ev.empty());
    CHECK(own_ev.back()["endedBy"] == "command");
    CHECK(eventually([&] {
        for (pid_t p : seen)
            if (alive(p)) return false;
        return true;
    }));
    // the runtime directory is gone too
    CHECK(t.sh("true").status == 0);
}

TEST_CASE("launch: SIGTERM is forwarded; SIGKILL of cc-wrap leaves no orphans", "[launch][orphans]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Tree t("signals");
    std::string base = t.root + "/runtime-base";
    fs::create_directories(base);
    auto runtime_dirs = [&] {
        int n = 0;
        for (const auto& e : fs::directory_iterator(base))
            if (e.path().filename().string().rfind("cc-wrap.", 0) == 0) ++n;
        return n;
    };
    for (int sig : {SIGTERM, SIGKILL}) {
        Async a({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--kill-after", "2",
                 "--", "sh", "-c", "sleep 60 & sleep 61; echo after"},
                t.root + "/out-" + std::to_string(sig), t.home, base);
        std::set<pid_t> seen;
        REQUIRE(eventually([&] {
            seen = descendants(a.pid);
            return seen.size() >= 4;
        }));
        ::kill(a.pid, sig);
        int status = a.wait();
        if (sig == SIGTERM) {
            // sh got SIGTERM through the init step (PID 1) and died of it.
            CHECK(status == 128 + SIGTERM);
        } else {
            CHECK(status == 128 + SIGKILL);
        }
        CHECK(eventually([&] {
            for (pid_t p : seen)
                if (alive(p)) return false;
            return true;
        }));
        // SIGTERM: cc-wrap cleans its runtime directory itself. SIGKILL: it
        // cannot; the next cc-wrap start removes it (its lock is free).
        CHECK(runtime_dirs() == (sig == SIGKILL ? 1 : 0));
    }
    RunOptions o;
    o.env["TMPDIR"] = base;
    o.env["XDG_RUNTIME_DIR"] = "";
    auto r = t.wrap({"true"}, {}, o);
    CHECK(r.status == 0);
    CHECK_THAT(r.err, Catch::Contains("removed 1 runtime directory"));
    CHECK(runtime_dirs() == 0);
    // A command that cleans up on SIGTERM can: the signal reaches it (and
    // only it), and its clean-up write still goes through.
    Async c({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--kill-after", "5", "--",
             "sh", "-c", "trap 'echo cleaned > " + t.work + "/clean.txt; exit 5' TERM; echo ready > " + t.work +
                             "/ready.txt; sleep 60 & wait"},
            t.root + "/out-clean", t.home, base);
    REQUIRE(eventually([&] { return fs::exists(t.work + "/ready.txt"); }));
    ::kill(c.pid, SIGTERM);
    CHECK(c.wait() == 5);
    CHECK(slurp(t.work + "/clean.txt") == "cleaned\n");
}

// Plays cc-egress's side of the fd inbox contract: one message with
// SCM_RIGHTS and {"http":[0],"socks":[1],"hold":true,"events":true}, answer
// {"ok":true} and, in the same write, one refused connection line, then serve
// one HTTP request on the handed-over listener. Proves cc-wrap made the
// sockets inside the sandbox's namespace (from outside, before the command
// ran) and that they reach the host with no bridge; that the inbox is not
// visible inside; and that lines sent back on the inbox become violations.
TEST_CASE("launch: fd handover: listeners made inside are accepted outside", "[launch][network]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!cc::test::have_program("curl")) CC_SKIP("curl not installed");
    Tree t("handover");
    std::string inbox = t.root + "/eg/inbox.sock";
    int l = unix_listener(inbox, true);
    int fl = ::fcntl(l, F_GETFL);
    ::fcntl(l, F_SETFL, fl & ~O_NONBLOCK);
    spit(t.ready, json{{"event", "ready"}, {"fdInbox", inbox}}.dump());
    std::string payload;
    int received = 0;
    std::thread egress([&] {
        int c = ::accept(l, nullptr, nullptr);
        if (c < 0) return;
        char data[256] = {};
        alignas(cmsghdr) char ctl[CMSG_SPACE(4 * sizeof(int))] = {};
        iovec iov{data, sizeof data - 1};
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctl;
        m.msg_controllen = sizeof ctl;
        ssize_t n = ::recvmsg(c, &m, 0);
        int fds[4] = {-1, -1, -1, -1};
        for (cmsghdr* h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
            if (h->cmsg_type == SCM_RIGHTS) {
                received = static_cast<int>((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                std::memcpy(fds, CMSG_DATA(h), std::min(received, 4) * sizeof(int));
            }
        if (n > 0) payload.assign(data, static_cast<std::size_t>(n));
        std::string ok = "{\"ok\":true}\n"
                         R"({"event":"connection","proto":"http","host":"refused.example","port":80,)"
                         R"("decision":"deny","rule":"allowlist","reason":"not allowed"})" "\n";
        ssize_t w = ::write(c, ok.data(), ok.size());
        (void)w;
        // Held open while the listeners are in use, as cc-egress does: its
        // closing mid-run means the proxy is gone (cc-wrap stops the sandbox).
        if (fds[0] < 0) {
            ::close(c);
            return;
        }
        int fl2 = ::fcntl(fds[0], F_GETFL);
        ::fcntl(fds[0], F_SETFL, fl2 & ~O_NONBLOCK);
        int conn = ::accept(fds[0], nullptr, nullptr);  // the HTTP proxy listener
        if (conn >= 0) {
            char buf[4096];
            ssize_t r = ::read(conn, buf, sizeof buf);
            (void)r;
            std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nproxied\n";
            w = ::write(conn, resp.data(), resp.size());
            ::close(conn);
        }
        for (int fd : fds)
            if (fd >= 0) ::close(fd);
        char b;
        while (::read(c, &b, 1) > 0) {}  // until cc-wrap ends the handover at its exit
        ::close(c);
    });
    auto r = t.wrap({"sh", "-c", "ls /run/cc/egress 2>&1; curl -sS --max-time 10 http://example.invalid/"}, {"--events"});
    egress.join();
    ::close(l);
    CHECK(received == 2);
    CHECK(json::parse(payload) == json{{"http", {0}}, {"socks", {1}}, {"hold", true}, {"events", true}});
    CHECK(r.status == 0);
    auto ev = events_of(r.out);
    REQUIRE_FALSE(ev.empty());
    CHECK(ev.front()["plan"]["proxyTransport"] == "fd-handover");
    bool saw = false;
    for (const auto& e : ev)
        if (e["event"] == "stdout" && e.value("text", "").find("proxied\n") != std::string::npos) saw = true;
    CHECK(saw);
    std::string all;
    for (const auto& e : ev)
        if (e["event"] == "stdout") all += e.value("text", "");
    CHECK_THAT(all, Catch::Contains("No such file"));  // no /run/cc/egress inside
    int violations = 0;
    for (const auto& e : ev)
        if (e["event"] == "violation") {
            ++violations;
            CHECK(e["action"] == "network");
            CHECK(e["target"] == "refused.example:80");
        }
    CHECK(violations == 1);
}

// A cc-egress someone else runs (--egress READY): its connection lines go to
// its own stdout, and the lines of this sandbox's listeners come back to
// cc-wrap on the inbox connection, so a refusal is still reported, as a
// violation event or one stderr line, and the operator's log still has it.
TEST_CASE("launch: a handed-in cc-egress's refusals become violations", "[launch][network]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (::access(bin("cc-egress").c_str(), X_OK) != 0) CC_SKIP("cc-egress not built");
    if (!cc::test::have_program("curl")) CC_SKIP("curl not installed");
    Tree t("handed-violations");
    std::string dir = t.root + "/eg";
    std::string log = t.root + "/egress.out";
    std::filesystem::create_directories(dir);
    Async egress({bin("cc-egress"), "--spec", t.spec, "--fd-inbox", dir + "/inbox.sock"}, log, t.home);
    json ready;
    for (int i = 0; i < 200 && ready.is_null(); ++i) {
        std::string text = slurp(log);
        if (text.find('\n') != std::string::npos) ready = json::parse(text.substr(0, text.find('\n')));
        else std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    REQUIRE(ready.value("event", "") == "ready");
    spit(t.ready, ready.dump());
    RunOptions o;
    o.env["HOME"] = t.home;
    std::vector<std::string> cmd = {"curl", "-sS", "--max-time", "10", "-o", "/dev/null", "http://denied.example.invalid/"};
    std::vector<std::string> argv = {bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--events", "--"};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    auto ev = events_of(run(argv, o).out);
    REQUIRE_FALSE(ev.empty());
    int violations = 0;
    for (const auto& e : ev)
        if (e["event"] == "violation" && e["action"] == "network") {
            ++violations;
            CHECK(e["target"] == "denied.example.invalid:80");
        }
    CHECK(violations == 1);
    CHECK(ev.back()["event"] == "exit");
    argv = {bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--"};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    auto plain = run(argv, o);
    CHECK_THAT(plain.err, Catch::Contains("cc-wrap: cc-egress refused denied.example.invalid:80"));
    // Sandboxes sharing the one cc-egress at the same time each hear of their
    // own refusal only.
    std::vector<std::unique_ptr<Async>> runs;
    for (int i = 0; i < 4; ++i) {
        std::string host = "denied-" + std::to_string(i) + ".example.invalid";
        runs.push_back(std::make_unique<Async>(
            std::vector<std::string>{bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies",
                                     "--events", "--", "curl", "-sS", "--max-time", "10", "-o", "/dev/null",
                                     "http://" + host + "/"},
            t.root + "/run-" + std::to_string(i) + ".out", t.home));
    }
    for (int i = 0; i < 4; ++i) {
        runs[i]->wait();
        std::vector<std::string> targets;
        for (const auto& e : events_of(slurp(runs[i]->out)))
            if (e["event"] == "violation") targets.push_back(e["target"]);
        CHECK(targets == std::vector<std::string>{"denied-" + std::to_string(i) + ".example.invalid:80"});
    }
    // Six sandboxes, six refusals in the operator's own log; cc-egress goes on.
    ::kill(egress.pid, SIGTERM);
    CHECK(egress.wait() == 0);
    int logged = 0;
    std::istringstream lines(slurp(log));
    for (std::string line; std::getline(lines, line);) {
        auto j = json::parse(line, nullptr, false);
        if (j.is_object() && j.value("event", "") == "connection" && j.value("decision", "") == "deny") ++logged;
    }
    CHECK(logged == 6);
}

TEST_CASE("launch: network through the session's own cc-egress", "[launch][network]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (::access(bin("cc-egress").c_str(), X_OK) != 0) CC_SKIP("cc-egress not built");
    if (!cc::test::have_program("curl")) CC_SKIP("curl not installed");
    Tree t("network");
    // A tiny HTTP server on 127.0.0.1 (the test's own thread).
    int port = 0;
    int l = tcp_listener(port);
    int fl = ::fcntl(l, F_GETFL);
    ::fcntl(l, F_SETFL, fl & ~O_NONBLOCK);
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
    std::vector<std::string> base = {bin("cc-wrap"), "--spec", t.spec, "--drop-filename-denies", "--"};
    RunOptions o;
    o.env["HOME"] = t.home;
    auto argv = base;
    argv.insert(argv.end(), {"curl", "-sS", "--max-time", "10", url});
    auto ok = run(argv, o);
    INFO(ok.err);
    CHECK(ok.status == 0);
    CHECK(ok.out == "hello\n");
    argv = base;
    argv.insert(argv.end(), {"curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}",
                             "http://denied.example.invalid/"});
    auto denied = run(argv, o);
    CHECK(denied.out != "200");
    // cc-wrap says so in one line; cc-egress's own log stays out of stderr.
    CHECK_THAT(denied.err, Catch::Contains("cc-wrap: cc-egress refused denied.example.invalid:80"));
    CHECK_THAT(ok.err + denied.err, !Catch::Contains("cc-egress: fd inbox"));
    // With --events the refusal is a violation event, read off cc-egress's
    // connection line, before the exit event.
    argv = {bin("cc-wrap"), "--spec", t.spec, "--drop-filename-denies", "--events", "--",
            "curl", "-sS", "--max-time", "10", "-o", "/dev/null", "http://denied.example.invalid/"};
    auto ev = events_of(run(argv, o).out);
    REQUIRE_FALSE(ev.empty());
    bool violation = false;
    for (const auto& e : ev)
        if (e["event"] == "violation" && e["action"] == "network") {
            violation = true;
            CHECK(e["target"] == "denied.example.invalid:80");
            CHECK(json::parse(e["raw"].get<std::string>())["decision"] == "deny");
        }
    CHECK(violation);
    CHECK(ev.back()["event"] == "exit");
    ::shutdown(l, SHUT_RDWR);
    ::close(l);
    server.join();
}

TEST_CASE("launch: bubblewrap execs a command the plan sees; the init step keeps 126 and 127", "[launch][init]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (::access(bin("cc-egress").c_str(), X_OK) != 0) CC_SKIP("cc-egress not built");
    Tree t("direct-exec");
    RunOptions o;
    o.env["HOME"] = t.home;
    auto wrap = [&](std::vector<std::string> cmd, std::vector<std::string> flags = {}) {
        std::vector<std::string> argv = {bin("cc-wrap"), "--spec", t.spec, "--drop-filename-denies"};
        argv.insert(argv.end(), flags.begin(), flags.end());
        argv.push_back("--");
        argv.insert(argv.end(), cmd.begin(), cmd.end());
        return run(argv, o);
    };
    // Own cc-egress, so the fd handover: no socat inside. The init step runs
    // first, always (it is the sandbox's PID 1), and the command still sees
    // only fds 0-2 and its own argv[0].
    const bool direct = false;
    std::string script = "ls /proc/$$/fd; head -c 3 /proc/$$/cmdline | tr '\\0' '|'; exit 7";
    auto plan = json::parse(wrap({"sh", "-c", script}, {"--print"}).out);
    CHECK(plan["proxy"]["transport"] == "fd-handover");
    CHECK(plan["initStep"]["used"] == true);
    CHECK(plan["initStep"]["why"] == "the init step is the sandbox's PID 1: it carries the command's layers and reaps");
    auto r = wrap({"sh", "-c", script});
    INFO(r.err);
    CHECK(r.status == 7);
    CHECK(r.out == "0\n1\n2\nsh|");  // nothing of cc-wrap's or bubblewrap's leaks; argv[0] as given
    // SIGPIPE is at its default in the command (cc-wrap itself ignores it),
    // and bubblewrap outlives its last status write: `yes | head` is quiet.
    auto pipe = wrap({"sh", "-c", "yes | head -1; sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status"});
    CHECK(pipe.status == 0);
    REQUIRE(pipe.out.size() > 2);
    CHECK((std::stoull(pipe.out.substr(2), nullptr, 16) & (1ull << (SIGPIPE - 1))) == 0);
    CHECK_THAT(pipe.err, !Catch::Contains("Broken pipe"));
    // A binary in the writable work dir, by relative path.
    fs::copy_file("/bin/true", t.work + "/mytrue");
    CHECK(json::parse(wrap({"./mytrue"}, {"--print"}).out)["initStep"]["used"] == !direct);
    CHECK(wrap({"./mytrue"}).status == 0);
    // What the plan cannot vouch for goes through the init step, which tells
    // not found from not executable.
    CHECK(json::parse(wrap({"/no/such/program"}, {"--print"}).out)["initStep"]["used"] == true);
    CHECK(wrap({"/no/such/program"}).status == 127);
    CHECK(wrap({"/etc/passwd"}).status == 126);
    CHECK(wrap({"no-such-command-anywhere"}).status == 127);
    // A symlink in the work dir to a host file the sandbox does not show.
    spit(t.outside + "/tool", "#!/bin/sh\necho should-not-run\n");
    fs::permissions(t.outside + "/tool", fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    fs::create_symlink(t.outside + "/tool", t.work + "/tool");
    CHECK(json::parse(wrap({"./tool"}, {"--print"}).out)["initStep"]["used"] == true);
    auto hidden = wrap({"./tool"});
    CHECK(hidden.status == 127);
    CHECK(hidden.out.empty());
    // A script without a #! line is run by /bin/sh, as execvp runs it: the
    // init step is musl-linked, and musl's own execvp would give 126 here.
    // Without it the kernel refuses the file.
    spit(t.work + "/noshebang", "echo ran-by-sh \"$1\"\n");
    fs::permissions(t.work + "/noshebang", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    CHECK(::execl((t.work + "/noshebang").c_str(), "noshebang", nullptr) == -1);
    CHECK(errno == ENOEXEC);
    CHECK(json::parse(wrap({"./noshebang", "x"}, {"--print"}).out)["initStep"]["used"] == !direct);
    auto script_run = wrap({"./noshebang", "x"});
    INFO(script_run.err);
    CHECK(script_run.status == 0);
    CHECK(script_run.out == "ran-by-sh x\n");
}

TEST_CASE("launch: cc-egress refusing its input stops the sandbox before the command runs", "[launch][network]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (::access(bin("cc-egress").c_str(), X_OK) != 0) CC_SKIP("cc-egress not built");
    Tree t("egress-fails");
    // cc-egress starts alongside the sandbox and refuses this pattern (exit 2);
    // bubblewrap holds the command (--block-fd) for the handover: it must never run.
    json spec = json::parse(slurp(t.spec));
    spec["egressAllowlist"] = {"foo*.example.com"};
    spit(t.spec, spec.dump());
    std::string marker = t.work + "/ran";
    RunOptions o;
    o.env["HOME"] = t.home;
    auto r = run({bin("cc-wrap"), "--spec", t.spec, "--drop-filename-denies", "--", "touch", marker}, o);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("foo*.example.com"));
    CHECK_THAT(r.err, Catch::Contains("before the command runs"));
    errno = 0;
    CHECK(::access(marker.c_str(), F_OK) == -1);
    CHECK(errno == ENOENT);  // never created: the command did not run
}

TEST_CASE("cli: bad input exits 2, unavailable backends 125, backend none says so", "[cli]") {
    Tree t("cli");
    auto wrap = [&](std::vector<std::string> args, RunOptions o = {}) {
        std::vector<std::string> argv = {bin("cc-wrap")};
        argv.insert(argv.end(), args.begin(), args.end());
        o.env["HOME"] = t.home;
        return run(argv, o);
    };
    spit(t.root + "/bad.json", R"({"sessionId":"x","workspaceId":"w","bogus":1})");
    auto bad = wrap({"--spec", t.root + "/bad.json", "--", "true"});
    CHECK(bad.status == 2);
    CHECK(bad.err.find("bogus") != std::string::npos);
    CHECK(wrap({"--spec", t.spec, "--backend", "docker2", "--", "true"}).status == 2);
    CHECK(wrap({"--spec", t.spec, "--"}).status == 2);
    CHECK(wrap({"--spec", t.spec, "--sandbox", "maybe", "--", "true"}).status == 2);
    CHECK(wrap({"--spec", t.spec, "--inherit-env", "--backend", "native", "--drop-filename-denies", "--egress", t.ready,
                "--", "true"}).status == (bwrap_works() ? 2 : 125));
    // An explicit microvm that cannot be given (here: no such guest kernel)
    // fails, never falls back (tests/sandbox/test_microvm.cpp boots real ones).
    auto vm = wrap({"--spec", t.spec, "--backend", "microvm", "--vm-kernel", t.root + "/no-vmlinux", "--", "true"});
    CHECK(vm.status == 125);
    CHECK(vm.err.find("microvm") != std::string::npos);
    // Dispatch with a writable bind and the standard filename rules: the
    // write supervisor enforces them; without it (--no-write-supervisor, or a
    // kernel without user notification) bubblewrap cannot, and it is refused.
    if (bwrap_works()) {
        auto f11 = wrap({"--spec", t.spec, "--backend", "native", "--egress", t.ready, "--no-write-supervisor", "--", "true"});
        CHECK(f11.status == 125);
        CHECK(f11.err.find("'.env'") != std::string::npos);
        auto sup = wrap({"--spec", t.spec, "--backend", "native", "--egress", t.ready, "--", "true"});
        CHECK(sup.status == (write_supervisor() ? 0 : 125));
    }
    // --sandbox off: backend none, said on stderr; the environment is still sanitised
    // unless --inherit-env.
    RunOptions o;
    o.env["NODE_OPTIONS"] = "--require /x.js";
    auto none = wrap({"--spec", t.spec, "--sandbox", "off", "--", "sh", "-c", "echo \"[${NODE_OPTIONS-unset}]\"; exit 4"}, o);
    CHECK(none.status == 4);
    CHECK(none.out == "[unset]\n");
    CHECK(none.err.find("backend none") != std::string::npos);
    auto inherit = wrap({"--spec", t.spec, "--sandbox", "off", "--inherit-env", "--", "sh", "-c",
                         "echo \"[${NODE_OPTIONS-unset}]\""}, o);
    CHECK(inherit.out == "[--require /x.js]\n");
    CHECK(wrap({"--spec", t.spec, "--sandbox", "off", "--", "/no/such"}).status == 127);
    // The terminal profile never runs as a host shell with a native badge.
    CHECK(wrap({"--spec", t.spec, "--sandbox", "off", "--profile", "terminal", "--", "true"}).status == 125);
    // --print launches nothing and validates against the plan schema.
    auto p = wrap({"--spec", t.spec, "--backend", "none", "--print", "--", "true"});
    CHECK(p.status == 0);
    CHECK(json::parse(p.out)["backend"] == "none");
}

TEST_CASE("schemas: live --print and --events output validate", "[cli][schema]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (run({"python3", "-c", "import jsonschema"}).status != 0) CC_SKIP("python3-jsonschema not installed");
    Tree t("schema");
    auto plan = run({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--drop-filename-denies", "--print", "--", "true"});
    REQUIRE(plan.status == 0);
    auto ev = t.sh("echo hi; touch /usr/x; printf '\\377'; exit 1", {"--events"});
    spit(t.root + "/plan.json", plan.out);
    spit(t.root + "/events.jsonl", ev.out);
    std::string share = std::getenv("CC_DATA_DIR") ? std::getenv("CC_DATA_DIR") : cc::test::source_dir() + "/share/cc";
    std::string script =
        "import json,sys,jsonschema\n"
        "d=sys.argv[1]; r=sys.argv[2]\n"
        "V=lambda n: jsonschema.Draft202012Validator(json.load(open(d+'/schema/'+n)))\n"
        "V('wrap-plan.schema.json').validate(json.load(open(r+'/plan.json')))\n"
        "v=V('wrap-event.schema.json')\n"
        "[v.validate(json.loads(l)) for l in open(r+'/events.jsonl') if l.strip()]\n"
        "print('valid')\n";
    auto r = run({"python3", "-c", script, share, t.root});
    CHECK(r.out == "valid\n");
    CHECK(r.err == "");
}

// The session's own cc-egress decides the network_access rule with the
// operator's policy (--policy) and puts the hosts it marks ask to the
// approver (--approver); with no approver an ask is a refusal. The origin
// is a loopback server the spec's allowlist admits.
TEST_CASE("launch: --policy and --approver reach the session's own cc-egress", "[launch][network]") {
    if (!bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (::access(bin("cc-egress").c_str(), X_OK) != 0) CC_SKIP("cc-egress not built");
    if (!cc::test::have_program("curl")) CC_SKIP("curl not installed");
    Tree t("own-egress-policy");
    int port = 0;
    int lfd = tcp_listener(port);
    REQUIRE(port > 0);
    ::fcntl(lfd, F_SETFL, 0);
    std::atomic<bool> done{false};
    std::thread origin([&] {
        while (!done) {
            pollfd p{lfd, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            int c = ::accept(lfd, nullptr, nullptr);
            if (c < 0) continue;
            char buf[4096];
            ssize_t n = ::recv(c, buf, sizeof buf, 0);
            (void)n;
            const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nhi\n";
            ssize_t w = ::send(c, reply, sizeof reply - 1, MSG_NOSIGNAL);
            (void)w;
            ::close(c);
        }
    });
    struct Join {
        std::atomic<bool>& d;
        std::thread& th;
        int fd;
        ~Join() { d = true; th.join(); ::close(fd); }
    } join{done, origin, lfd};
    const std::string target = "127.0.0.1:" + std::to_string(port);
    json spec = json::parse(slurp(t.spec));
    spec["egressAllowlist"] = {target};
    spit(t.spec, spec.dump());
    const std::string policy = t.root + "/ask-policy.json";
    spit(policy, R"({"version":1,"rules":[{"action":"network_access","decision":"ask","reason":"a person approves each host"}]})");
    const std::string asked = t.root + "/asked.json";
    auto approver = [&](const std::string& answer) {
        std::string p = t.root + "/approve-" + answer + ".sh";
        spit(p, "#!/bin/sh\ncat > '" + asked + "'\necho " + answer + "\n");
        ::chmod(p.c_str(), 0755);
        return p;
    };
    RunOptions o;
    o.env["HOME"] = t.home;
    o.timeout_ms = 30000;
    auto wrap = [&](std::vector<std::string> flags) {
        std::vector<std::string> argv = {bin("cc-wrap"), "--spec", t.spec, "--drop-filename-denies"};
        argv.insert(argv.end(), flags.begin(), flags.end());
        argv.insert(argv.end(), {"--", "curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}\\n",
                                 "http://" + target + "/"});
        return run(argv, o);
    };
    // Without --policy the default policy allows the network in chat mode:
    // the origin answers through the proxy.
    auto plain = wrap({});
    INFO(plain.out << plain.err);
    REQUIRE(plain.status == 0);
    CHECK(plain.out == "200\n");
    // The policy marks the network ask; nobody to ask: the proxy refuses.
    auto no_approver = wrap({"--policy", policy});
    INFO(no_approver.out << no_approver.err);
    CHECK(no_approver.status == 0);
    CHECK(no_approver.out == "403\n");
    CHECK_THAT(no_approver.err, Catch::Contains("cc-wrap: cc-egress refused " + target + ": ask without approver"));
    // An approver that says deny, then one that says allow, each asked once
    // about exactly this host and port.
    auto denied = wrap({"--policy", policy, "--approver", approver("deny")});
    INFO(denied.out << denied.err);
    CHECK(denied.out == "403\n");
    json q = json::parse(slurp(asked));
    CHECK(q["action"] == "network_access");
    CHECK(q["host"] == "127.0.0.1");
    CHECK(q["port"] == port);
    CHECK(q["reason"] == "a person approves each host");
    fs::remove(asked);
    auto allowed = wrap({"--policy", policy, "--approver", approver("allow")});
    INFO(allowed.out << allowed.err);
    CHECK(allowed.status == 0);
    CHECK(allowed.out == "200\n");
    CHECK(json::parse(slurp(asked))["port"] == port);
    // --print shows what cc-egress will be given: the policy's private copy
    // in the runtime directory, and the approver.
    auto printed = run({bin("cc-wrap"), "--spec", t.spec, "--policy", policy, "--approver", approver("allow"), "--print",
                        "--", "true"},
                       o);
    REQUIRE(printed.status == 0);
    json plan = json::parse(printed.out);
    CHECK(plan["proxy"]["policy"] == plan["runtimeDir"].get<std::string>() + "/policy.json");
    CHECK(plan["proxy"]["approver"] == approver("allow"));
}

TEST_CASE("launch: --policy and --approver refused where they cannot apply, a bad policy before anything runs",
          "[launch][input]") {
    Tree t("own-egress-policy-input");
    RunOptions o;
    o.env["HOME"] = t.home;
    const std::string marker = t.root + "/ran";
    auto r = run({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--policy", t.spec, "--", "touch", marker}, o);
    CHECK(r.status == 2);
    CHECK(r.err == "cc-wrap: --policy: is for the cc-egress cc-wrap starts; a handed-in cc-egress (--egress) has its own\n");
    r = run({bin("cc-wrap"), "--spec", t.spec, "--egress", t.ready, "--approver", "/bin/true", "--", "touch", marker}, o);
    CHECK(r.status == 2);
    CHECK(r.err == "cc-wrap: --approver: is for the cc-egress cc-wrap starts; a handed-in cc-egress (--egress) has its own\n");
    const std::string bad = t.root + "/bad-policy.json";
    spit(bad, R"({"version":1,"rules":[{"action":"network_access","decision":"perhaps"}]})");
    r = run({bin("cc-wrap"), "--spec", t.spec, "--policy", bad, "--", "touch", marker}, o);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::StartsWith("cc-wrap: " + bad));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    r = run({bin("cc-wrap"), "--spec", t.spec, "--policy", t.root + "/missing.json", "--", "touch", marker}, o);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(t.root + "/missing.json"));
    CHECK_FALSE(fs::exists(marker));
}
