// The host step of the microvm backend (microvm_guest.hpp): inside the native
// sandbox, it starts the VM monitor and stands in for the command: its stdio
// are the guest's, its exit status the guest's report.
#include "cc/sandbox/microvm_guest.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace cc::sandbox {

namespace {

volatile sig_atomic_t pending_signal = 0;
void on_signal(int sig) {
    pending_signal = sig;
}

int fail(const std::string& what) {
    std::cerr << "cc-wrap: microvm: " << what << '\n';
    return 125;
}

}  // namespace

bool vm_write_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

int vm_host_main(const std::vector<std::string>& args) {
    std::size_t dash = 0;
    while (dash < args.size() && args[dash] != "--") ++dash;
    if (dash + 1 >= args.size()) return fail("usage: cc-wrap-vm --internal-vm-host -- MONITOR ARGS...");
    std::vector<std::string> argv(args.begin() + static_cast<long>(dash) + 1, args.end());

    if (int e = vm_relay_setup(); e != 0) return fail(std::string("relay slots: ") + std::strerror(e));
    // ours[i] stays here, theirs[i] goes to the monitor as fd 3 + i.
    constexpr int n = 5;
    int ours[n], theirs[n];
    for (int i = 0; i < n; ++i) {
        int sp[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) return fail("socketpair failed");
        ours[i] = ::fcntl(sp[0], F_DUPFD_CLOEXEC, 20);
        theirs[i] = ::fcntl(sp[1], F_DUPFD_CLOEXEC, 20);
        ::close(sp[0]);
        ::close(sp[1]);
    }
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    pid_t vm = ::fork();
    if (vm < 0) return fail(std::string("fork: ") + std::strerror(errno));
    if (vm == 0) {
        // The monitor dies with the host step, whatever kills it.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (int i = 0; i < n; ++i) ::dup2(theirs[i], vm_fd_stdin + i);  // dup2 clears FD_CLOEXEC
        int devnull = ::open("/dev/null", O_RDWR);
        if (devnull >= 0) ::dup2(devnull, 0);
        std::vector<char*> av;
        for (auto& a : argv) av.push_back(a.data());
        av.push_back(nullptr);
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::sigaction(sig, &dfl, nullptr);
        ::execv(av[0], av.data());
        std::string m = "cc-wrap: microvm: cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
        vm_write_all(2, m.data(), m.size());
        ::_exit(125);
    }
    for (int fd : theirs) ::close(fd);

    const int in = ours[0], out = ours[1], err = ours[2], st = ours[3], con = ours[4];
    bool stdin_open = true, out_open = true, err_open = true, st_open = true, con_open = true;
    std::string to_guest, status, console;
    ::fcntl(in, F_SETFL, O_NONBLOCK);
    char buf[65536];
    while (out_open || err_open || st_open || con_open) {
        if (pending_signal) {
            std::string line = "kill " + std::to_string(pending_signal) + "\n";
            pending_signal = 0;
            if (st_open) vm_write_all(st, line.data(), line.size());
        }
        struct pollfd p[6] = {};
        p[0] = {stdin_open && to_guest.empty() ? 0 : -1, POLLIN, 0};
        p[1] = {!to_guest.empty() ? in : -1, POLLOUT, 0};
        p[2] = {out_open ? out : -1, POLLIN, 0};
        p[3] = {err_open ? err : -1, POLLIN, 0};
        p[4] = {st_open ? st : -1, POLLIN, 0};
        p[5] = {con_open ? con : -1, POLLIN, 0};
        int r = ::poll(p, 6, -1);
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[0].revents) {
            ssize_t k = ::read(0, buf, sizeof buf);
            if (k > 0)
                to_guest.assign(buf, static_cast<std::size_t>(k));
            else if (k == 0 || errno != EINTR) {
                stdin_open = false;
                ::shutdown(in, SHUT_WR);
            }
        }
        if (p[1].revents) {
            ssize_t k = ::write(in, to_guest.data(), to_guest.size());
            if (k > 0)
                to_guest.erase(0, static_cast<std::size_t>(k));
            else if (k < 0 && errno != EAGAIN && errno != EINTR) {
                to_guest.clear();
                stdin_open = false;
            }
            if (to_guest.empty() && !stdin_open) ::shutdown(in, SHUT_WR);
        }
        auto pump = [&](int i, int fd, bool& open, auto&& sink) {
            if (!p[i].revents) return;
            ssize_t k = ::read(fd, buf, sizeof buf);
            if (k > 0)
                sink(buf, static_cast<std::size_t>(k));
            else if (k == 0 || (errno != EINTR && errno != EAGAIN))
                open = false;
        };
        pump(2, out, out_open, [](const char* d, std::size_t k) { vm_write_all(1, d, k); });
        pump(3, err, err_open, [](const char* d, std::size_t k) { vm_write_all(2, d, k); });
        pump(4, st, st_open, [&](const char* d, std::size_t k) { status.append(d, k); });
        pump(5, con, con_open, [&](const char* d, std::size_t k) {
            console.append(d, k);
            if (console.size() > 8192) console.erase(0, console.size() - 8192);
        });
    }
    int wst = 0;
    while (::waitpid(vm, &wst, 0) < 0 && errno == EINTR) {
    }
    // The guest's one line: "exit N", "signal N" or "error WHY".
    auto nl = status.find('\n');
    std::string line = status.substr(0, nl);
    if (line.rfind("exit ", 0) == 0) return std::atoi(line.c_str() + 5);
    if (line.rfind("signal ", 0) == 0) return 128 + std::atoi(line.c_str() + 7);
    std::string how = WIFEXITED(wst) ? "exited " + std::to_string(WEXITSTATUS(wst))
                                     : "was killed by signal " + std::to_string(WTERMSIG(wst));
    std::cerr << "cc-wrap: microvm: the VM stopped without the command's status (the monitor " << how << ")"
              << (line.rfind("error ", 0) == 0 ? ": " + line.substr(6) : std::string()) << '\n';
    if (!console.empty()) std::cerr << "cc-wrap: microvm: the guest console's last lines:\n" << console << '\n';
    return 125;
}

}  // namespace cc::sandbox
