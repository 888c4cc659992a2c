#include "cc/sandbox/handover.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

namespace cc::sandbox {

namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// IP_FREEBIND: bubblewrap may not have brought the sandbox's loopback up yet;
// the listener starts receiving as soon as it is.
int listen_loopback(int port, std::string& err) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) { err = errno_text("socket"); return -1; }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, SOMAXCONN) != 0) {
        err = errno_text(("127.0.0.1:" + std::to_string(port)).c_str());
        ::close(fd);
        return -1;
    }
    return fd;
}

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

// The forked helper: only syscalls and _exit from here on.
[[noreturn]] void helper(int back, pid_t pid, std::optional<unsigned long> expect_net_ino, int http_port,
                         int socks_port) {
    auto die = [&](const std::string& msg) {
        send_with_fds(back, "E" + msg, nullptr, 0);
        ::_exit(1);
    };
    std::string proc = "/proc/" + std::to_string(pid) + "/ns/";
    int net = ::open((proc + "net").c_str(), O_RDONLY | O_CLOEXEC);
    if (net < 0) die(errno_text(("open " + proc + "net").c_str()));
    struct stat sn {}, su {}, self {};
    if (::fstat(net, &sn) != 0 || ::stat("/proc/self/ns/user", &self) != 0) die(errno_text("stat namespaces"));
    if (expect_net_ino && sn.st_ino != *expect_net_ino)
        die("the process is not the sandbox bubblewrap reported (network namespace differs)");
    // Joining a network namespace takes CAP_SYS_ADMIN in the user namespace
    // that owns it. As root that is ours already; as a user bubblewrap made
    // it, and we own it, so joining it gives that capability. The owner is
    // asked of the network namespace itself (NS_GET_USERNS), not taken from
    // /proc/PID/ns/user, which names the process's current user namespace.
    int user = ::ioctl(net, NS_GET_USERNS);
    if (user < 0 || ::fstat(user, &su) != 0) die(errno_text("owner of the network namespace"));
    if (su.st_ino != self.st_ino && ::setns(user, CLONE_NEWUSER) != 0) die(errno_text("setns user"));
    if (::setns(net, CLONE_NEWNET) != 0)
        die(errno_text("setns net") + " (net " + std::to_string(sn.st_ino) + ", owner " + std::to_string(su.st_ino) +
            ", ours " + std::to_string(self.st_ino) + ")");
    std::string err;
    int fds[2] = {listen_loopback(http_port, err), -1};
    if (fds[0] < 0) die("http listener " + err);
    fds[1] = listen_loopback(socks_port, err);
    if (fds[1] < 0) die("socks listener " + err);
    if (!send_with_fds(back, "K", fds, 2)) ::_exit(1);
    ::_exit(0);
}

// As root (more exactly: when the sandbox's network namespace belongs to our
// own user namespace) no helper process is needed: network namespaces are
// per thread, so this thread steps in, makes the two sockets and steps back.
// That saves a fork of cc-wrap on the launch path. Stepping back cannot fail
// for a process that could step in; if it ever did, cc-wrap stops here
// rather than go on making sockets in the sandbox's namespace.
std::optional<Result<Listeners>> listeners_in_thread(pid_t pid, std::optional<unsigned long> expect_net_ino,
                                                     int http_port, int socks_port) {
    std::string proc = "/proc/" + std::to_string(pid) + "/ns/net";
    int net = ::open(proc.c_str(), O_RDONLY | O_CLOEXEC);
    if (net < 0) return std::nullopt;  // the helper reports it
    struct Fd {
        int fd;
        ~Fd() { if (fd >= 0) ::close(fd); }
    } net_fd{net}, user_fd{::ioctl(net, NS_GET_USERNS)}, own_fd{::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)};
    struct stat sn {}, su {}, self {};
    if (user_fd.fd < 0 || own_fd.fd < 0 || ::fstat(net, &sn) != 0 || ::fstat(user_fd.fd, &su) != 0 ||
        ::stat("/proc/self/ns/user", &self) != 0 || su.st_ino != self.st_ino || su.st_dev != self.st_dev)
        return std::nullopt;
    if (expect_net_ino && sn.st_ino != *expect_net_ino)
        return unavailable_error("proxy listeners inside the sandbox",
                                 "the process is not the sandbox bubblewrap reported (network namespace differs)");
    if (::setns(net, CLONE_NEWNET) != 0) return std::nullopt;
    std::string err;
    Listeners out{listen_loopback(http_port, err), -1};
    if (out.http >= 0) out.socks = listen_loopback(socks_port, err);
    if (::setns(own_fd.fd, CLONE_NEWNET) != 0) {
        std::fprintf(stderr, "cc-wrap: cannot return to its own network namespace: %s\n", std::strerror(errno));
        std::abort();
    }
    if (out.http < 0 || out.socks < 0) {
        if (out.http >= 0) ::close(out.http);
        return unavailable_error("proxy listeners inside the sandbox", (out.http < 0 ? "http listener " : "socks listener ") + err);
    }
    return out;
}

}  // namespace

Result<Listeners> listeners_in_netns(pid_t pid, std::optional<unsigned long> expect_net_ino, int http_port,
                                     int socks_port) {
    if (auto r = listeners_in_thread(pid, expect_net_ino, http_port, socks_port)) return std::move(*r);
    // As a user, bubblewrap's own user namespace owns the network namespace:
    // joining it can only be done by a single-threaded process, for good, so
    // a forked helper does it.
    int sp[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) return io_error("socketpair", "cannot create");
    pid_t child = ::fork();
    if (child < 0) {
        ::close(sp[0]);
        ::close(sp[1]);
        return io_error("fork", "cannot fork the namespace helper");
    }
    if (child == 0) {
        ::close(sp[0]);
        helper(sp[1], pid, expect_net_ino, http_port, socks_port);
    }
    ::close(sp[1]);
    Listeners out;
    std::string error = "the namespace helper gave no answer";
    if (wait_readable(sp[0], 10000)) {
        char data[512];
        alignas(cmsghdr) char ctl[CMSG_SPACE(2 * sizeof(int))];
        iovec iov{data, sizeof data};
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctl;
        m.msg_controllen = sizeof ctl;
        ssize_t n = ::recvmsg(sp[0], &m, MSG_CMSG_CLOEXEC);
        int got[2] = {-1, -1};
        int count = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&m); n > 0 && c; c = CMSG_NXTHDR(&m, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                count = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                std::memcpy(got, CMSG_DATA(c), sizeof(int) * static_cast<unsigned>(std::min(count, 2)));
            }
        if (n > 0 && data[0] == 'K' && count == 2) {
            out = {got[0], got[1]};
            error.clear();
        } else {
            for (int i = 0; i < std::min(count, 2); ++i) ::close(got[i]);
            if (n > 1 && data[0] == 'E') error = std::string(data + 1, static_cast<std::size_t>(n - 1));
        }
    }
    ::close(sp[0]);
    ::waitpid(child, nullptr, 0);
    if (!error.empty()) return unavailable_error("proxy listeners inside the sandbox", error);
    return out;
}

Result<int> hand_over(const std::string& inbox, int http_fd, int socks_fd) {
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
    if (!send_with_fds(s, R"({"http":[0],"socks":[1],"hold":true})" "\n", fds, 2)) return fail(errno_text("sendmsg"));
    return s;
}

Status await_handover_ack(int conn, const std::string& inbox, int timeout_ms) {
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
    line = line.substr(0, line.find('\n'));
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("ok", false) != true)
        return fail("refused the listeners: " + (j.is_object() ? j.value("error", line) : line));
    return ok();
}

}  // namespace cc::sandbox
