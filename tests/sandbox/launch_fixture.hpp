// The fixture every real-launch test shares: a tree of directories like an
// agent server's (work dir, repos with protected checkouts, config, runner
// state, a sibling agent, a place outside every bind), a stand-in egress, and
// helpers to run cc-wrap over it and to watch process trees (by PID).
//
// Run as root, the tree is given to uid/gid 65534 before any launch: cc-wrap
// run by root starts the command as the owner of the working directory, and
// the tests check what an unprivileged owner can and cannot do, as they do
// when the suite itself runs as that user.
#pragma once

#include "harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using nlohmann::json;
using cc::test::bin;
using cc::test::run;
using cc::test::RunOptions;


// Landlock's ABI as cc-probe reports it (what cc-wrap will use), 0 for none.
inline int landlock_abi() {
    static int abi = -1;
    if (abi < 0) {
        auto r = run({bin("cc-probe"), "--json"});
        auto j = nlohmann::json::parse(r.out, nullptr, false);
        abi = j.is_object() && j.contains("layers") ? j["layers"].value("landlockAbi", 0) : 0;
    }
    return abi;
}

// Does cc-probe report the write supervisor (seccomp user notification with
// descriptor injection)?
inline bool write_supervisor() {
    static int on = -1;
    if (on < 0) {
        auto r = run({bin("cc-probe"), "--json"});
        auto j = nlohmann::json::parse(r.out, nullptr, false);
        on = j.is_object() && j.contains("layers") && j["layers"].value("writeSupervisor", false) ? 1 : 0;
    }
    return on == 1;
}

// A refusal by the sandbox, not a launch that never happened: the command
// ran (not cc-wrap's 125, not 126/127) and failed with exactly the refusal
// the case expects (one message per case, from the kernel or the tool that
// met it): a launch that failed for another reason does not pass.
inline bool refused(const cc::test::RunResult& r, const std::string& why) {
    if (r.status == 0 || r.status == 125 || r.status == 126 || r.status == 127) return false;
    return r.err.find(why) != std::string::npos;
}

using cc::test::bwrap_works;

// What can be read; "" when nothing can. With read(2), not an ifstream: a
// /proc file of a process that exits meanwhile fails with ESRCH, which
// libstdc++'s filebuf turns into an exception.
inline std::string slurp(const std::string& p) {
    std::string out;
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return out;
}
inline void spit(const std::string& p, const std::string& s) { std::ofstream(p) << s; }

// A Unix socket that is bound (and listening when asked), held by the test.
inline int unix_listener(const std::string& path, bool listen_too) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::chmod(path.c_str(), 0777);
    if (listen_too) ::listen(fd, 8);
    return fd;
}
inline int tcp_listener(int& port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd, 8);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    return fd;
}
inline bool nobody_connected(int listener) {
    int c = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK);
    if (c >= 0) ::close(c);
    return c < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// The tree one test runs in: a work dir (a git repo), a shared repos/ dir
// holding a protected checkout, a read-only config dir, runner state, a
// sibling agent's dir and a place outside every bind.
struct Tree {
    std::string root, work, repos, orig, group_orig, config, state, sibling, outside, home;
    std::string spec, ready, tools;
    std::vector<int> fds;

    explicit Tree(const std::string& name, const std::string& mode = "chat") {
        static int serial = 0;  // Catch re-enters a test case once per SECTION
        root = cc::test::scratch_dir() + "/" + name + (serial++ ? std::to_string(serial) : "");
        work = root + "/agents/a1/work";
        repos = root + "/repos";
        orig = repos + "/orig";
        group_orig = repos + "/group/orig";
        config = root + "/config";
        state = root + "/state";
        sibling = root + "/agents/a2";
        outside = root + "/outside";
        home = root + "/home";
        for (const auto& d : {work, orig, group_orig, config, state, sibling, outside, home + "/.ssh"})
            fs::create_directories(d);
        REQUIRE(run({"git", "-c", "init.defaultBranch=main", "init", "-q", work}).status == 0);
        spit(orig + "/f", "original\n");
        spit(group_orig + "/f", "original\n");
        spit(sibling + "/secret.txt", "sibling\n");
        spit(home + "/.ssh/id_rsa", "PRIVATE KEY\n");
        fs::create_symlink(orig, work + "/link");
        // A stand-in egress: bound Unix sockets and its ready line (socat bridge).
        fs::create_directories(root + "/eg");
        fds.push_back(unix_listener(root + "/eg/http.sock", true));
        fds.push_back(unix_listener(root + "/eg/socks.sock", true));
        ready = root + "/ready.json";
        spit(ready, json{{"event", "ready"}, {"http", "127.0.0.1:1"}, {"socks", "127.0.0.1:2"},
                         {"httpUnix", root + "/eg/http.sock"}, {"socksUnix", root + "/eg/socks.sock"}}.dump());
        // The probe of the seccomp layer, where the sandbox can run it.
        fs::create_directories(root + "/tools");
        fs::copy_file(bin("cc-test-syscall"), root + "/tools/cc-test-syscall");
        tools = root + "/tools";
        if (cc::test::is_root()) give_to_nobody(root);
        write_spec(mode, false);
    }
    static void give_to_nobody(const std::string& dir) {
        REQUIRE(run({"chown", "-R", "65534:65534", dir}).status == 0);
    }
    ~Tree() {
        for (int fd : fds) ::close(fd);
    }
    void write_spec(const std::string& mode, bool home_bound) {
        json j = {{"sessionId", "t-" + fs::path(root).filename().string()},
                  {"workspaceId", "ws"},
                  {"mode", mode},
                  {"guestWorkdir", work},
                  {"bindMounts", json::array({{{"hostPath", work}}, {{"hostPath", repos}},
                                              {{"hostPath", config}, {"readOnly", true}},
                                              {{"hostPath", root + "/tools"}, {"readOnly", true}}})},
                  {"protectedPaths", {orig, group_orig}},
                  {"runnerStateDirs", {state}},
                  {"egressAllowlist", json::array()}};
        if (home_bound) j["bindMounts"].push_back({{"hostPath", home}, {"readOnly", true}});
        spec = root + "/spec.json";
        spit(spec, j.dump());
    }
    cc::test::RunResult wrap(const std::vector<std::string>& cmd, std::vector<std::string> flags = {},
                             RunOptions o = {}) {
        std::vector<std::string> argv = {bin("cc-wrap"), "--spec", spec, "--egress", ready, "--drop-filename-denies"};
        argv.insert(argv.end(), flags.begin(), flags.end());
        argv.push_back("--");
        argv.insert(argv.end(), cmd.begin(), cmd.end());
        if (!o.env.count("HOME")) o.env["HOME"] = home;
        o.timeout_ms = 30000;
        return run(argv, o);
    }
    cc::test::RunResult sh(const std::string& script, std::vector<std::string> flags = {}, RunOptions o = {}) {
        return wrap({"sh", "-c", script}, std::move(flags), std::move(o));
    }
};

// --- process tree helpers (by PID, never by name) ---
inline std::map<pid_t, pid_t> parents() {
    std::map<pid_t, pid_t> m;
    for (const auto& e : fs::directory_iterator("/proc")) {
        std::string n = e.path().filename();
        if (n.find_first_not_of("0123456789") != std::string::npos) continue;
        std::string st = slurp("/proc/" + n + "/stat");
        auto rp = st.rfind(')');
        if (rp == std::string::npos) continue;
        std::istringstream rest(st.substr(rp + 2));
        std::string state;
        pid_t pp;
        rest >> state >> pp;
        m[std::stoi(n)] = pp;
    }
    return m;
}
inline std::set<pid_t> descendants(pid_t root) {
    auto m = parents();
    std::set<pid_t> out;
    bool grew = true;
    while (grew) {
        grew = false;
        for (auto [p, pp] : m)
            if ((pp == root || out.count(pp)) && out.insert(p).second) grew = true;
    }
    return out;
}
inline bool alive(pid_t p) {
    std::string st = slurp("/proc/" + std::to_string(p) + "/stat");
    if (st.empty()) return false;
    auto rp = st.rfind(')');
    return rp != std::string::npos && st.size() > rp + 2 && st[rp + 2] != 'Z';
}
template <typename Pred>
inline bool eventually(Pred p, int ms = 10000) {
    for (int i = 0; i < ms / 20; ++i) {
        if (p()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return p();
}

struct Async {
    pid_t pid = -1;
    std::string out;
    Async(const std::vector<std::string>& argv, const std::string& out_path, const std::string& home,
          const std::string& tmpdir = "")
        : out(out_path) {
        pid = ::fork();
        if (pid == 0) {
            int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            ::dup2(fd, 1);
            ::setenv("HOME", home.c_str(), 1);
            if (!tmpdir.empty()) {
                ::setenv("TMPDIR", tmpdir.c_str(), 1);
                ::unsetenv("XDG_RUNTIME_DIR");
            }
            std::vector<char*> a;
            for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
            a.push_back(nullptr);
            ::execv(a[0], a.data());
            _exit(127);
        }
    }
    int wait() {
        int st = 0;
        ::waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
};

inline std::vector<json> events_of(const std::string& out) {
    std::vector<json> v;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty()) v.push_back(json::parse(line));
    return v;
}

