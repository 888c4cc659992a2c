#include "cc/sandbox/sandbox_init.hpp"

#include "cc/sandbox/landlock.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <linux/close_range.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

namespace cc::sandbox {

namespace {

int fail(const std::string& what, int status = 125) {
    std::cerr << "cc-wrap: sandbox init: " << what << '\n';
    return status;
}

// Is something listening on 127.0.0.1:port? (/proc/net/tcp, state 0A)
bool listening(int port) {
    std::ifstream f("/proc/net/tcp");
    char want[16];
    std::snprintf(want, sizeof want, ":%04X", port);
    std::string line;
    while (std::getline(f, line)) {
        auto p = line.find(want);
        if (p != std::string::npos && p < 20 && line.find(" 0A ") != std::string::npos) return true;
    }
    return false;
}

// socat must not stay a child of CMD (a shell's `wait` would hang on it), so
// it is started through an intermediate that exits at once; it is reparented
// to the sandbox's PID 1 and dies with the namespace.
bool start_bridge(const std::string& socat, int port, const std::string& unix_path, std::string& err) {
    std::string listen = "TCP-LISTEN:" + std::to_string(port) + ",bind=127.0.0.1,reuseaddr,fork";
    std::string target = "UNIX-CONNECT:" + unix_path;
    pid_t mid = ::fork();
    if (mid < 0) { err = std::string("fork: ") + std::strerror(errno); return false; }
    if (mid == 0) {
        if (::fork() == 0) {
            int devnull = ::open("/dev/null", O_RDWR);
            if (devnull >= 0) { ::dup2(devnull, 0); ::dup2(devnull, 1); }
            ::execl(socat.c_str(), socat.c_str(), "-lpcc-wrap-bridge", listen.c_str(), target.c_str(), nullptr);
            _exit(127);
        }
        _exit(0);
    }
    int st = 0;
    ::waitpid(mid, &st, 0);
    return true;
}

bool wait_listening(int port, std::string& err) {
    for (int i = 0; i < 3000; ++i) {  // up to 3 s
        if (listening(port)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    err = "socat did not listen on 127.0.0.1:" + std::to_string(port);
    return false;
}

}  // namespace

int sandbox_init_main(const std::vector<std::string>& args) {
    std::string transport = "none", egress_dir, socat = "socat";
    int http_port = 0, socks_port = 0;
    bool pty = false;
    int landlock_abi = 0;
    std::vector<std::string> landlock_write;
    int write_filter_fd = -1, write_sock_fd = -1;
    std::size_t i = 0;
    for (; i < args.size(); ++i) {
        const auto& a = args[i];
        if (a == "--") { ++i; break; }
        if (i + 1 >= args.size()) return fail("option '" + a + "' needs a value", 125);
        const auto& v = args[++i];
        if (a == "--transport") transport = v;
        else if (a == "--http-port") http_port = std::atoi(v.c_str());
        else if (a == "--socks-port") socks_port = std::atoi(v.c_str());
        else if (a == "--egress-dir") egress_dir = v;
        else if (a == "--socat") socat = v;
        else if (a == "--pty") pty = v == "1";
        else if (a == "--landlock-abi") landlock_abi = std::atoi(v.c_str());
        else if (a == "--landlock-write") landlock_write.push_back(v);
        else if (a == "--write-filter-fd") write_filter_fd = std::atoi(v.c_str());
        else if (a == "--write-sock-fd") write_sock_fd = std::atoi(v.c_str());
        else return fail("unknown option '" + a + "'");
    }
    if (i >= args.size()) return fail("no command");

    // fd-handover: the listeners were made from outside, by cc-wrap, before
    // bubblewrap let this step run (lib/cc/sandbox/handover.cpp).
    if (transport == "socat-bridge") {
        std::string err;
        if (!start_bridge(socat, http_port, egress_dir + "/http.sock", err) ||
            !start_bridge(socat, socks_port, egress_dir + "/socks.sock", err) || !wait_listening(http_port, err) ||
            !wait_listening(socks_port, err))
            return fail("socat bridge: " + err);
    }

    if (pty && ::isatty(0)) {
        ::setsid();
        ::ioctl(0, TIOCSCTTY, 0);
    }
    // Landlock last before the command: the bridge above needed none of it.
    if (landlock_abi > 0) {
        std::string err;
        if (!apply_landlock(landlock_abi, landlock_write, err)) return fail("Landlock: " + err);
    }
    // The write supervisor's filter last: from here every creating or
    // writing call waits for cc-wrap's answer (this step makes none).
    if (write_filter_fd >= 0 || write_sock_fd >= 0) {
        std::string err;
        if (write_filter_fd < 0 || write_sock_fd < 0 || !install_write_filter(write_filter_fd, write_sock_fd, err))
            return fail("write supervisor: " + (err.empty() ? std::string("needs both --write-filter-fd and --write-sock-fd") : err));
        ::close(write_filter_fd);
        ::close(write_sock_fd);
    }
    // The command gets stdin, stdout and stderr and nothing else (bwrap's
    // status pipe to cc-wrap stays outside).
    ::syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
    std::vector<char*> argv;
    for (std::size_t k = i; k < args.size(); ++k) argv.push_back(const_cast<char*>(args[k].c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    int e = errno;
    std::cerr << "cc-wrap: '" << args[i] << "': " << std::strerror(e) << '\n';
    return e == ENOENT || e == ENOTDIR ? 127 : 126;
}

}  // namespace cc::sandbox
