// The host step of the microvm backend (microvm_guest.hpp): inside the native
// sandbox, it starts the VM monitor and stands in for the command: its stdio
// are the guest's, its exit status the guest's report.
#include "cc/sandbox/microvm_guest.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cc/core/json_writer.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
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

// A descriptor moved above the numbers the monitor's are bound to (3..10).
int above(int fd) {
    if (fd < 0) return fd;
    int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 20);
    ::close(fd);
    return moved;
}

// The plan file with what only this run may have: 64 fresh random bytes
// and the wall clock. "" and why, on failure.
std::string plan_message(const std::string& path, std::string& why) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    nlohmann::json plan = nlohmann::json::parse(ss.str(), nullptr, false);
    if (!plan.is_object()) {
        why = path + ": not a JSON object";
        return {};
    }
    std::string seed(64, '\0');
    if (::getrandom(seed.data(), seed.size(), 0) != static_cast<ssize_t>(seed.size())) {
        why = std::string("getrandom: ") + std::strerror(errno);
        return {};
    }
    plan["seed"] = vm_hex(seed);
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    plan["realtime"] = {{"sec", static_cast<long>(ts.tv_sec)}, {"nsec", ts.tv_nsec}};
    std::string body = cc::json::write(plan);
    return "plan " + std::to_string(body.size()) + "\n" + body;
}

// One command to the monitor's human monitor; its answer up to the next
// prompt ("" when the monitor went away).
std::string hmp(int fd, const std::string& cmd) {
    if (!cmd.empty() && !vm_write_all(fd, (cmd + "\n").data(), cmd.size() + 1)) return {};
    std::string got;
    char buf[4096];
    for (;;) {
        auto at = got.find("(qemu) ");
        if (at != std::string::npos) return got.substr(0, at);
        ssize_t k = ::read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return {};
        got.append(buf, static_cast<std::size_t>(k));
    }
}

// Saves the guest, idle where it waits for its plan, into `file` (handed to
// the monitor over its socket, as "getfd" takes it); "" or why not.
std::string save_snapshot(int mon, int file) {
    if (hmp(mon, "").empty()) return "the monitor did not answer";
    // Saved running (the guest is idle, blocked on its status port), so a
    // restored guest runs at once: a guest saved stopped stays stopped.
    {
        static const char cmd[] = "getfd snapshot\n";
        iovec iov{const_cast<char*>(cmd), sizeof cmd - 1};
        alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctl;
        msg.msg_controllen = sizeof ctl;
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &file, sizeof(int));
        if (::sendmsg(mon, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof cmd - 1))
            return std::string("handing the file to the monitor: ") + std::strerror(errno);
        hmp(mon, "");
    }
    hmp(mon, "migrate fd:snapshot");
    std::string info = hmp(mon, "info migrate");
    if (info.find("Migration status: completed") == std::string::npos) {
        auto at = info.find("Migration status:");
        return "the save did not complete (" +
               (at == std::string::npos ? std::string("no status") : info.substr(at, info.find('\n', at) - at)) + ")";
    }
    return {};
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
    std::string plan_file, restore, save;
    for (; dash < args.size() && args[dash] != "--"; ++dash) {
        std::string* v = args[dash] == "--plan" ? &plan_file : args[dash] == "--restore" ? &restore
                       : args[dash] == "--save" ? &save : nullptr;
        if (!v || dash + 1 >= args.size()) return fail("unknown argument " + args[dash]);
        *v = args[++dash];
    }
    if (dash + 1 >= args.size() || (!restore.empty() && !save.empty()) || (save.empty() && plan_file.empty()))
        return fail("usage: cc-wrap-vm --internal-vm-host (--plan FILE [--restore FILE] | --save FILE) -- MONITOR ARGS...");
    std::vector<std::string> argv(args.begin() + static_cast<long>(dash) + 1, args.end());
    std::string message;
    if (!plan_file.empty()) {
        std::string why;
        message = plan_message(plan_file, why);
        if (message.empty()) return fail(why);
    }
    // The snapshot's descriptors, at fixed numbers in the monitor.
    int snap = -1, mon_ours = -1, mon_theirs = -1;
    if (!restore.empty()) {
        snap = above(::open(restore.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (snap < 0) return fail("snapshot " + restore + ": " + std::strerror(errno));
        argv.insert(argv.end(), {"-incoming", "fd:" + std::to_string(vm_fd_snapshot_in)});
    }
    if (!save.empty()) {
        snap = above(::open(save.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (snap < 0) return fail("snapshot " + save + ": " + std::strerror(errno));
        int sp[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) return fail("socketpair failed");
        mon_ours = above(sp[0]);
        mon_theirs = above(sp[1]);
        argv.insert(argv.end(), {"-chardev", "socket,id=hmp,fd=" + std::to_string(vm_fd_monitor), "-mon",
                                 "chardev=hmp,mode=readline"});
    }

    if (int e = vm_relay_setup(); e != 0) return fail(std::string("relay slots: ") + std::strerror(e));
    // ours[i] stays here, theirs[i] goes to the monitor as fd 3 + i.
    constexpr int n = 5;
    int ours[n], theirs[n];
    for (int i = 0; i < n; ++i) {
        int sp[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) return fail("socketpair failed");
        ours[i] = above(sp[0]);
        theirs[i] = above(sp[1]);
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
        if (mon_theirs >= 0) ::dup2(mon_theirs, vm_fd_monitor);
        if (!restore.empty()) ::dup2(snap, vm_fd_snapshot_in);
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
    if (mon_theirs >= 0) ::close(mon_theirs);
    if (!restore.empty()) ::close(snap);

    const int in = ours[0], out = ours[1], err = ours[2], st = ours[3], con = ours[4];
    bool stdin_open = true, out_open = true, err_open = true, st_open = true, con_open = true;
    std::string to_guest, status, console;
    ::fcntl(in, F_SETFL, O_NONBLOCK);
    // The plan goes out when the guest is ready; a restored guest said so
    // before it was saved.
    bool plan_sent = false, ready = false;
    std::string saved_why = "the guest never became ready";
    auto send_plan = [&] {
        plan_sent = true;
        if (st_open) vm_write_all(st, message.data(), message.size());
    };
    if (!restore.empty()) send_plan();
    char buf[65536];
    while (out_open || err_open || st_open || con_open) {
        if (pending_signal && (plan_sent || !save.empty())) {
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
        if (!ready && status.rfind("ready\n", 0) == 0) {
            ready = true;
            status.erase(0, 6);
            if (!save.empty()) {
                // Nothing of a session is in the guest yet: save it, then stop.
                saved_why = save_snapshot(mon_ours, snap);
                hmp(mon_ours, "quit");
            } else if (!plan_sent) {
                send_plan();
            }
        }
        pump(5, con, con_open, [&](const char* d, std::size_t k) {
            console.append(d, k);
            if (console.size() > 8192) console.erase(0, console.size() - 8192);
        });
    }
    int wst = 0;
    while (::waitpid(vm, &wst, 0) < 0 && errno == EINTR) {
    }
    if (!save.empty()) {
        if (saved_why.empty()) return 0;
        ::unlink(save.c_str());
        std::cerr << "cc-wrap: microvm: snapshot not saved: " << saved_why << '\n';
        if (!console.empty()) std::cerr << "cc-wrap: microvm: the guest console's last lines:\n" << console << '\n';
        return 125;
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
    if (!restore.empty() && status.empty())
        std::cerr << "cc-wrap: microvm: the guest was restored from a snapshot and said nothing; if every run ends "
                     "so, remove the snapshot (see microvm.snapshot in --print) or use --vm-boot cold\n";
    return 125;
}

}  // namespace cc::sandbox
