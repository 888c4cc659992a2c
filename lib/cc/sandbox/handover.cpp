#include "cc/sandbox/handover.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "cc/fs/unique_fd.hpp"

namespace cc::sandbox {

namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

bool send_with_fds(int sock, const std::string& payload, const int* fds, int nfds) {
    iovec iov{const_cast<char*>(payload.data()), payload.size()};
    alignas(cmsghdr) char ctl[CMSG_SPACE(2 * sizeof(int))] = {};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (nfds > 0) {
        m.msg_control = ctl;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<unsigned>(nfds));
        cmsghdr* c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<unsigned>(nfds));
        std::memcpy(CMSG_DATA(c), fds, sizeof(int) * static_cast<unsigned>(nfds));
    }
    return ::sendmsg(sock, &m, MSG_NOSIGNAL) == static_cast<ssize_t>(payload.size());
}

bool wait_readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    int r;
    while ((r = ::poll(&p, 1, ms)) < 0 && errno == EINTR) {}
    return r > 0;
}

// The listeners are made by a short-lived child that shares cc-wrap's memory
// and descriptor table (clone(2) with CLONE_VM | CLONE_VFORK | CLONE_FILES):
// no copy of cc-wrap's page tables as with fork, no SCM_RIGHTS round trip,
// and the sockets it makes are ours when it exits. It is a process of its
// own, so it may join the sandbox's user namespace (which a process can do
// only single-threaded, and for good) and network namespace while cc-wrap's
// own namespaces never change. It makes system calls only: no allocation,
// and every signal stays blocked while it runs.
struct NsJob {
    char path[64] = {};  // /proc/PID/ns/net
    bool drop = false;   // become uid/gid first (cc-wrap is root; the sandbox is theirs)
    unsigned uid = 0, gid = 0;
    unsigned long expect_net = 0;  // 0: not checked
    dev_t self_dev = 0;            // our own user namespace
    ino_t self_ino = 0;
    int ports[2] = {0, 0};
    int fds[2] = {-1, -1};
    int ns_fds[2] = {-1, -1};  // the sandbox's network namespace and its owner
    ino_t net_ino = 0, user_ino = 0;
    int err = 0;
    const char* step = nullptr;
};

// Run by root, the sandbox was made by bubblewrap as the sandbox's uid, so
// its namespaces are that uid's: the helper becomes that uid first (raw
// calls: glibc's would signal cc-wrap's threads) and needs no capability of
// root's to open the namespaces or join them. A container's root commonly
// has neither CAP_SYS_PTRACE (to open another uid's /proc/PID/ns) nor
// CAP_SYS_ADMIN (to join a user namespace it does not own).
// IP_FREEBIND: bubblewrap may not have brought the sandbox's loopback up yet;
// the listener starts receiving as soon as it is.
int ns_child(void* arg) {
    auto* j = static_cast<NsJob*>(arg);
    auto fail = [j](const char* step) {
        j->err = errno;
        j->step = step;
        return 1;
    };
    if (j->drop && (::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setresgid, j->gid, j->gid, j->gid) != 0 ||
                    ::syscall(SYS_setresuid, j->uid, j->uid, j->uid) != 0))
        return fail("becoming the sandbox's uid");
    int net = ::open(j->path, O_RDONLY | O_CLOEXEC);
    if (net < 0) return fail("open the sandbox's network namespace");
    j->ns_fds[0] = net;
    // Joining a network namespace takes CAP_SYS_ADMIN in the user namespace
    // that owns it. As root without a switch that is ours already; else
    // bubblewrap made it as the uid we are now, and we own it, so joining it
    // gives that capability. The owner is asked of the network namespace
    // itself (NS_GET_USERNS), not taken from /proc/PID/ns/user, which names
    // the process's current user namespace.
    int user = ::ioctl(net, NS_GET_USERNS);
    if (user < 0) return fail("the owner of the sandbox's network namespace");
    j->ns_fds[1] = user;
    struct stat sn {}, su {};
    if (::fstat(net, &sn) != 0 || ::fstat(user, &su) != 0) return fail("the sandbox's namespaces");
    j->net_ino = sn.st_ino;
    j->user_ino = su.st_ino;
    if (j->expect_net != 0 && sn.st_ino != j->expect_net) {
        errno = ESRCH;
        return fail("the process is not the sandbox bubblewrap reported (network namespace differs)");
    }
    if (!(su.st_ino == j->self_ino && su.st_dev == j->self_dev) && ::setns(user, CLONE_NEWUSER) != 0)
        return fail("setns user");
    if (::setns(net, CLONE_NEWNET) != 0) return fail("setns net");
    for (int i = 0; i < 2; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return fail("socket");
        j->fds[i] = fd;
        int one = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        ::setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(j->ports[i]));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, SOMAXCONN) != 0)
            return fail(i == 0 ? "http listener 127.0.0.1:3128" : "socks listener 127.0.0.1:1080");
    }
    return 0;
}

}  // namespace

Result<Listeners> listeners_in_netns(pid_t pid, std::optional<unsigned long> expect_net_ino, int http_port,
                                     int socks_port, std::optional<std::pair<unsigned, unsigned>> as) {
    const std::string what = "proxy listeners inside the sandbox";
    NsJob job;
    std::snprintf(job.path, sizeof job.path, "/proc/%d/ns/net", static_cast<int>(pid));
    if (as) {
        job.drop = true;
        job.uid = as->first;
        job.gid = as->second;
    }
    job.expect_net = expect_net_ino.value_or(0);
    struct stat self {};
    if (::stat("/proc/self/ns/user", &self) != 0) return unavailable_error(what, errno_text("/proc/self/ns/user"));
    job.self_dev = self.st_dev;
    job.self_ino = self.st_ino;
    job.ports[0] = http_port;
    job.ports[1] = socks_port;
    constexpr std::size_t stack_size = 64 * 1024;
    void* stack = ::mmap(nullptr, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return unavailable_error(what, errno_text("mmap"));
    sigset_t all, old;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &old);
    pid_t child = ::clone(ns_child, static_cast<char*>(stack) + stack_size,
                          CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, &job);
    int clone_errno = errno;
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    int status = 0;
    if (child > 0)
        while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    ::munmap(stack, stack_size);
    for (int fd : job.ns_fds)
        if (fd >= 0) ::close(fd);
    if (child < 0) return unavailable_error(what, std::string("clone: ") + std::strerror(clone_errno));
    if (job.err != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        for (int fd : job.fds)
            if (fd >= 0) ::close(fd);
        std::string why = job.step ? std::string(job.step) : "the namespace helper failed";
        if (job.step && job.err != 0 && job.err != ESRCH) why += std::string(": ") + std::strerror(job.err);
        if (job.step && std::strcmp(job.step, "open the sandbox's network namespace") == 0)
            why += std::string(" (") + job.path + ")";
        if (job.step && std::strcmp(job.step, "setns net") == 0)
            why += " (net " + std::to_string(job.net_ino) + ", owner " + std::to_string(job.user_ino) + ", ours " +
                   std::to_string(job.self_ino) + ")";
        return unavailable_error(what, why);
    }
    return Listeners{job.fds[0], job.fds[1]};
}

Result<int> hand_over(const std::string& inbox, int http_fd, int socks_fd, bool events) {
    int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return io_error("socket", "cannot create");
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (inbox.size() >= sizeof a.sun_path) {
        ::close(s);
        return input_error("'" + inbox + "'", "inbox path too long");
    }
    std::memcpy(a.sun_path, inbox.c_str(), inbox.size() + 1);
    auto fail = [&](const std::string& why) -> Result<int> {
        ::close(s);
        return unavailable_error("cc-egress fd inbox '" + inbox + "'", why);
    };
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return fail(std::strerror(errno));
    int fds[2] = {http_fd, socks_fd};
    const char* payload = events ? R"({"http":[0],"socks":[1],"hold":true,"events":true})" "\n"
                                 : R"({"http":[0],"socks":[1],"hold":true})" "\n";
    if (!send_with_fds(s, payload, fds, 2)) return fail(errno_text("sendmsg"));
    return s;
}

Status await_handover_ack(int conn, const std::string& inbox, int timeout_ms, std::string* rest) {
    auto fail = [&](const std::string& why) -> Status {
        return unavailable_error("cc-egress fd inbox '" + inbox + "'", why);
    };
    std::string line;
    char buf[512];
    while (line.find('\n') == std::string::npos && line.size() < 4096) {
        if (!wait_readable(conn, timeout_ms)) return fail("no answer");
        ssize_t n = ::read(conn, buf, sizeof buf);
        if (n <= 0) return fail("closed without an answer");
        line.append(buf, static_cast<std::size_t>(n));
    }
    if (rest) *rest = line.substr(line.find('\n') + 1);
    line = line.substr(0, line.find('\n'));
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("ok", false) != true)
        return fail("refused the listeners: " + (j.is_object() ? j.value("error", line) : line));
    return ok();
}

}  // namespace cc::sandbox
