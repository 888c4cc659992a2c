// lib/cc/core/child: the one way a tool runs another program. Real processes:
// the environment is exactly the one given, no descriptor of the tool leaks,
// the deadline kills the child's whole group, output is capped.
#include <catch2/catch.hpp>

#include "harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "cc/core/child.hpp"

namespace {

cc::child::Spec sh(const std::string& script) {
    cc::child::Spec s;
    s.argv = {"/bin/sh", "-c", script};
    s.env = {{"PATH", "/usr/bin:/bin"}};
    return s;
}

// Gone, or a zombie waiting for its reaper (it runs nothing).
bool dead(pid_t pid) {
    for (int i = 0; i < 200; ++i) {
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string text;
        if (!std::getline(stat, text)) return true;
        auto close = text.rfind(')');
        if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z') return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

}  // namespace

TEST_CASE("child: the environment is exactly the one given", "[core][child]") {
    ::setenv("CC_TEST_CHILD_LEAK", "yes", 1);
    auto s = sh("env | sort");
    s.env = {{"A", "1"}, {"B", "two words"}};
    auto r = cc::child::run(s);
    REQUIRE(r);
    CHECK(!r->late);
    CHECK(r->status == 0);
    // sh adds PWD (and may add SHLVL or _); nothing of the tool's own environment.
    CHECK(r->out.find("A=1\n") != std::string::npos);
    CHECK(r->out.find("B=two words\n") != std::string::npos);
    CHECK(r->out.find("CC_TEST_CHILD_LEAK") == std::string::npos);
    ::unsetenv("CC_TEST_CHILD_LEAK");
}

TEST_CASE("child: git's variables are not passed to an operator's helper", "[core][child]") {
    ::setenv("GIT_DIR", "/elsewhere", 1);
    ::setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='touch /tmp/x'", 1);
    ::setenv("CC_TEST_CHILD_KEEP", "kept", 1);
    auto env = cc::child::environment_of(cc::child::not_git);
    CHECK(env.count("GIT_DIR") == 0);
    CHECK(env.count("GIT_CONFIG_PARAMETERS") == 0);
    CHECK(env.at("CC_TEST_CHILD_KEEP") == "kept");
    ::unsetenv("GIT_DIR");
    ::unsetenv("GIT_CONFIG_PARAMETERS");
    ::unsetenv("CC_TEST_CHILD_KEEP");
}

TEST_CASE("child: none of the tool's descriptors reach the child", "[core][child]") {
    // Without the helper's care a descriptor opened without O_CLOEXEC is
    // inherited: shown first with a plain fork and exec.
    int fd = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC on purpose
    REQUIRE(fd >= 0);
    REQUIRE(::dup2(fd, 77) == 77);
    ::close(fd);
    REQUIRE(std::system("test -e /proc/self/fd/77 && ls /proc/$$/fd/77 >/dev/null") == 0);
    auto r = cc::child::run(sh("if [ -e /proc/$$/fd/77 ]; then echo open; else echo closed; fi"));
    REQUIRE(r);
    CHECK(r->out == "closed\n");
    ::close(77);
}

TEST_CASE("child: stdin is the input given, or empty", "[core][child]") {
    auto s = sh("cat");
    s.input = std::string("line one\nline two\n");
    auto r = cc::child::run(s);
    REQUIRE(r);
    CHECK(r->out == "line one\nline two\n");
    auto e = cc::child::run(sh("cat; echo end"));
    REQUIRE(e);
    CHECK(e->out == "end\n");
}

TEST_CASE("child: the deadline kills the child and what it started", "[core][child]") {
    auto s = sh("sleep 60 & echo $!; sleep 60");
    s.deadline = std::chrono::milliseconds(300);
    auto r = cc::child::run(s);
    REQUIRE(r);
    CHECK(r->late);
    REQUIRE(!r->out.empty());
    pid_t grandchild = std::stoi(r->out);
    CHECK(dead(grandchild));
}

TEST_CASE("child: what it left running in its group ends with it", "[core][child]") {
    // The child exits at once; its background sleep holds stdout open.
    auto r = cc::child::run(sh("sleep 60 & echo $!"));
    REQUIRE(r);
    CHECK(!r->late);
    CHECK(r->status == 0);
    CHECK(dead(std::stoi(r->out)));
}

TEST_CASE("child: output past the cap is read and dropped", "[core][child]") {
    auto s = sh("head -c 1000000 /dev/zero; echo done >&2");
    s.output_cap = 1000;
    auto r = cc::child::run(s);
    REQUIRE(r);
    CHECK(r->status == 0);  // not stalled on a full pipe
    CHECK(r->out.size() == 1000);
    CHECK(r->err == "done\n");
}

TEST_CASE("child: statuses and failures to start", "[core][child]") {
    auto three = cc::child::run(sh("exit 3"));
    REQUIRE(three);
    CHECK(three->status == 3);
    auto term = cc::child::run(sh("kill -TERM $$"));
    REQUIRE(term);
    CHECK(term->status == 128 + SIGTERM);

    cc::child::Spec missing;
    missing.argv = {"cc-no-such-program-here"};
    auto m = cc::child::run(missing);
    REQUIRE(!m);
    CHECK(m.error().one_line() == "cc-no-such-program-here: not found on PATH: No such file or directory");
    cc::child::Spec empty;
    auto e = cc::child::run(empty);
    REQUIRE(!e);
    CHECK(e.error().code == cc::Errc::input);
}

TEST_CASE("child: a descriptor passed on is the child's 3, and only that one", "[core][child]") {
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    REQUIRE(::write(p[1], "s3cret\n", 7) == 7);
    ::close(p[1]);
    int q[2];
    REQUIRE(::pipe2(q, O_CLOEXEC) == 0);  // not passed: stays out of the child
    // The shell's descriptors listed with no pipeline: while one runs, the
    // shell itself holds the pipe's ends for a moment (listed as 4 and 5).
    auto s = sh("cat <&3; ls /proc/$$/fd");
    s.pass_fds = {p[0]};
    auto r = cc::child::run(s);
    ::close(p[0]);
    ::close(q[0]);
    ::close(q[1]);
    REQUIRE(r);
    REQUIRE(r->out.rfind("s3cret\n", 0) == 0);
    std::istringstream listed(r->out.substr(7));
    std::set<int> fds;
    for (int fd; listed >> fd;) fds.insert(fd);
    CHECK(fds == std::set<int>{0, 1, 2, 3});
}

// A child that exits without reading its input (an approver that answers at
// once): the write fails with EPIPE, and the caller, which here does not
// ignore SIGPIPE, is not killed by the signal that comes with it.
TEST_CASE("child: input a child never reads does not kill the caller with SIGPIPE", "[core][child]") {
    auto before = ::signal(SIGPIPE, SIG_DFL);
    auto s = sh("echo allow");
    s.input = std::string(1 << 20, 'q');  // more than a pipe holds
    for (int i = 0; i < 20; ++i) {
        auto r = cc::child::run(s);
        REQUIRE(r);
        CHECK(r->status == 0);
        CHECK(r->out == "allow\n");
    }
    // The signal is not left pending for this thread either.
    sigset_t pending;
    sigemptyset(&pending);
    ::sigpending(&pending);
    CHECK_FALSE(sigismember(&pending, SIGPIPE));
    ::signal(SIGPIPE, before);
}
