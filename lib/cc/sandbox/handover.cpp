#include "cc/sandbox/handover.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <linux/filter.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
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
#include <algorithm>
#include <cstring>
#include <ctime>

#include <nlohmann/json.hpp>

#include "cc/core/json_writer.hpp"
#include "cc/fs/unique_fd.hpp"

namespace cc::sandbox {

namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

bool send_with_fds(int sock, const std::string& payload, const int* fds, int nfds) {
    iovec iov{const_cast<char*>(payload.data()), payload.size()};
    alignas(cmsghdr) char ctl[CMSG_SPACE((k_max_capture_ports + 4) * sizeof(int))] = {};
    if (nfds < 0 || static_cast<std::size_t>(nfds) > k_max_capture_ports + 4) {
        errno = EINVAL;
        return false;
    }
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
    // --capture
    bool capture = false;
    std::size_t ncap = 0;
    std::uint16_t cap_ports[k_max_capture_ports] = {};
    int cap_fds[k_max_capture_ports] = {};
    int dns4 = -1, dns6 = -1;
    int report[4] = {-1, -1, -1, -1};  // raw: udp4, udp6, tcp4, tcp6
    bool ipv6 = false;
    int ns_fds[2] = {-1, -1};  // the sandbox's network namespace and its owner
    ino_t net_ino = 0, user_ino = 0;
    int err = 0;
    const char* step = nullptr;
};

// `local` route for every address of `family` (0.0.0.0/0, ::/0) on the
// loopback device `ifindex`, in the local table: the kernel then takes every
// destination as its own. One RTM_NEWROUTE over rtnetlink, its ack read; 0
// or an errno.
int add_local_default_route(int family, int ifindex) {
    int nl = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (nl < 0) return errno;
    struct {
        nlmsghdr n;
        rtmsg r;
        char attrs[64];
    } req{};
    req.n.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
    req.n.nlmsg_type = RTM_NEWROUTE;
    req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK;
    req.n.nlmsg_seq = 1;
    req.r.rtm_family = static_cast<unsigned char>(family);
    req.r.rtm_dst_len = 0;
    req.r.rtm_table = RT_TABLE_LOCAL;
    req.r.rtm_protocol = RTPROT_BOOT;
    req.r.rtm_scope = RT_SCOPE_HOST;
    req.r.rtm_type = RTN_LOCAL;
    auto* a = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&req) + NLMSG_ALIGN(req.n.nlmsg_len));
    a->rta_type = RTA_OIF;
    a->rta_len = RTA_LENGTH(sizeof(int));
    std::memcpy(RTA_DATA(a), &ifindex, sizeof(int));
    req.n.nlmsg_len = NLMSG_ALIGN(req.n.nlmsg_len) + RTA_ALIGN(a->rta_len);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    int err = 0;
    if (::sendto(nl, &req, req.n.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0) {
        err = errno;
    } else {
        alignas(nlmsghdr) char buf[1024];
        ssize_t n = ::recv(nl, buf, sizeof buf, 0);
        auto* h = reinterpret_cast<nlmsghdr*>(buf);
        if (n < 0)
            err = errno;
        else if (n < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(nlmsgerr))) || h->nlmsg_type != NLMSG_ERROR)
            err = EPROTO;
        else
            err = -reinterpret_cast<nlmsgerr*>(NLMSG_DATA(h))->error;
    }
    ::close(nl);
    return err;
}

// The capture set-up inside the sandbox's network namespace: the local
// routes, a listener on each port and the resolver's sockets. IPv6 is used
// when the namespace has it; without, IPv4 alone (said by the caller).
// Loopback must be up first, and bringing it up is bubblewrap's (it adds
// 127.0.0.1 and then sets it up; up first, its address request would fail):
// waited for, at most 2 s.
const char* capture_in_netns(NsJob* j) {
    int ctl = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (ctl < 0) return "socket";
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, "lo", 3);
    bool up = false;
    for (int i = 0; i < 2000 && !up; ++i) {
        if (::ioctl(ctl, SIOCGIFFLAGS, &ifr) != 0) break;
        up = (ifr.ifr_flags & IFF_UP) != 0;
        if (!up) {
            timespec ms{0, 1000000};
            ::nanosleep(&ms, nullptr);
        }
    }
    int ifindex = 0;
    if (up && ::ioctl(ctl, SIOCGIFINDEX, &ifr) == 0) ifindex = ifr.ifr_ifindex;
    ::close(ctl);
    if (!up || ifindex <= 0) return "the sandbox's loopback (bubblewrap did not bring it up within 2 s)";
    if (int e = add_local_default_route(AF_INET, ifindex); e != 0) {
        errno = e;
        return "the local route for 0.0.0.0/0 on loopback";
    }
    j->ipv6 = add_local_default_route(AF_INET6, ifindex) == 0;
    int one = 1, zero = 0;
    for (std::size_t i = 0; i < j->ncap; ++i) {
        int fd = -1;
        if (j->ipv6) {
            fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0) return "socket";
            j->cap_fds[i] = fd;
            ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            sockaddr_in6 a{};
            a.sin6_family = AF_INET6;
            a.sin6_port = htons(j->cap_ports[i]);
            a.sin6_addr = in6addr_any;
            if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, SOMAXCONN) != 0)
                return "a captured port's listener";
        } else {
            fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0) return "socket";
            j->cap_fds[i] = fd;
            ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(j->cap_ports[i]);
            a.sin_addr.s_addr = htonl(INADDR_ANY);
            if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, SOMAXCONN) != 0)
                return "a captured port's listener";
        }
    }
    // The resolver: port 53 of every address, so a client that ignores
    // resolv.conf and asks a resolver of its own is answered here too.
    j->dns4 = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (j->dns4 < 0) return "socket";
    sockaddr_in a4{};
    a4.sin_family = AF_INET;
    a4.sin_port = htons(53);
    a4.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(j->dns4, reinterpret_cast<sockaddr*>(&a4), sizeof a4) != 0) return "the resolver's socket 0.0.0.0:53";
    if (j->ipv6) {
        j->dns6 = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (j->dns6 < 0) return "socket";
        ::setsockopt(j->dns6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        sockaddr_in6 a6{};
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons(53);
        a6.sin6_addr = in6addr_any;
        if (::bind(j->dns6, reinterpret_cast<sockaddr*>(&a6), sizeof a6) != 0) return "the resolver's socket [::]:53";
    }
    // The report: raw sockets (the namespace's own CAP_NET_RAW) get a copy
    // of each UDP datagram and, through a filter, of each TCP SYN delivered
    // in it; a small buffer, so a flood is dropped by the kernel rather than
    // read. An IPv4 raw socket reads from the IP header, an IPv6 one from the
    // TCP header.
    static sock_filter syn4[] = {
        BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),          // x = IP header length
        BPF_STMT(BPF_LD | BPF_B | BPF_IND, 13),          // a = TCP flags
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x12),       // SYN, ACK
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x02, 0, 1),  // SYN alone
        BPF_STMT(BPF_RET | BPF_K, 0xffff),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    static sock_filter syn6[] = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 13),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x12),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x02, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0xffff),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    int small = 64 * 1024;
    for (int i = 0; i < 4; ++i) {
        const bool v6 = i % 2 == 1, tcp = i >= 2;
        if (v6 && !j->ipv6) continue;
        int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_RAW | SOCK_CLOEXEC, tcp ? IPPROTO_TCP : IPPROTO_UDP);
        if (fd < 0) return "the report's raw socket";
        j->report[i] = fd;
        if (tcp) {
            sock_fprog prog{};
            prog.len = static_cast<unsigned short>(v6 ? sizeof syn6 / sizeof syn6[0] : sizeof syn4 / sizeof syn4[0]);
            prog.filter = v6 ? syn6 : syn4;
            if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0) return "the report's SYN filter";
        }
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        if (v6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
    }
    return nullptr;
}

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
    if (j->capture)
        if (const char* step = capture_in_netns(j)) return fail(step);
    return 0;
}

}  // namespace

Status capture_self_test() {
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) return unavailable_error("capture self-test", errno_text("pipe"));
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(report[0]);
        ::close(report[1]);
        return unavailable_error("capture self-test", errno_text("fork"));
    }
    if (pid == 0) {
        ::close(report[0]);
        auto fail = [&](const char* step) {
            char buf[256];
            int n = std::snprintf(buf, sizeof buf, "%s: %s", step, std::strerror(errno));
            if (n > 0) (void)!::write(report[1], buf, static_cast<std::size_t>(std::min(n, 255)));
            ::_exit(1);
        };
        if (::unshare(CLONE_NEWNET | (::geteuid() != 0 ? CLONE_NEWUSER : 0)) != 0) fail("unshare (network namespace)");
        int ctl = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ifreq ifr{};
        std::memcpy(ifr.ifr_name, "lo", 3);
        if (ctl < 0 || ::ioctl(ctl, SIOCGIFFLAGS, &ifr) != 0) fail("loopback");
        ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
        if (::ioctl(ctl, SIOCSIFFLAGS, &ifr) != 0 || ::ioctl(ctl, SIOCGIFINDEX, &ifr) != 0) fail("bringing loopback up");
        if (int e = add_local_default_route(AF_INET, ifr.ifr_ifindex); e != 0) {
            errno = e;
            fail("the local route for 0.0.0.0/0 (rtnetlink)");
        }
        int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        socklen_t len = sizeof a;
        if (l < 0 || ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 1) != 0 ||
            ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) != 0)
            fail("a wildcard listener");
        int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        a.sin_addr.s_addr = htonl((198u << 24) | (18u << 16) | 1u);
        if (c < 0 || ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fail("connect to 198.18.0.1");
        int got = ::accept(l, nullptr, nullptr);
        sockaddr_in local{};
        len = sizeof local;
        if (got < 0 || ::getsockname(got, reinterpret_cast<sockaddr*>(&local), &len) != 0) fail("accept");
        if (local.sin_addr.s_addr != a.sin_addr.s_addr) {
            errno = EADDRNOTAVAIL;
            fail("the accepted connection's own address is not 198.18.0.1");
        }
        ::_exit(0);
    }
    ::close(report[1]);
    std::string why;
    char buf[256];
    ssize_t n;
    while ((n = ::read(report[0], buf, sizeof buf)) > 0) why.append(buf, static_cast<std::size_t>(n));
    ::close(report[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ok();
    return unavailable_error("capture", why.empty() ? "the self-test child failed" : why);
}

void close_listeners(Listeners& l) {
    for (int* fd : {&l.http, &l.socks, &l.dns4, &l.dns6, &l.report[0], &l.report[1], &l.report[2], &l.report[3]})
        if (*fd >= 0) ::close(std::exchange(*fd, -1));
    for (int fd : l.captured)
        if (fd >= 0) ::close(fd);
    l.captured.clear();
}

Result<Listeners> listeners_in_netns(pid_t pid, std::optional<unsigned long> expect_net_ino, int http_port,
                                     int socks_port, std::optional<std::pair<unsigned, unsigned>> as,
                                     const CaptureSetup* capture) {
    const std::string what = "proxy listeners inside the sandbox";
    NsJob job;
    if (capture) {
        if (capture->ports.size() > k_max_capture_ports)
            return input_error("--capture", "more than " + std::to_string(k_max_capture_ports) + " ports");
        job.capture = true;
        job.ncap = capture->ports.size();
        for (std::size_t i = 0; i < job.ncap; ++i) {
            job.cap_ports[i] = capture->ports[i];
            job.cap_fds[i] = -1;
        }
    }
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
    Listeners out;
    out.http = job.fds[0];
    out.socks = job.fds[1];
    out.dns4 = job.dns4;
    out.dns6 = job.dns6;
    for (int i = 0; i < 4; ++i) out.report[i] = job.report[i];
    out.ipv6 = job.ipv6;
    for (std::size_t i = 0; i < job.ncap; ++i) out.captured.push_back(job.cap_fds[i]);
    if (job.err != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        close_listeners(out);
        std::string why = job.step ? std::string(job.step) : "the namespace helper failed";
        if (job.step && job.err != 0 && job.err != ESRCH) why += std::string(": ") + std::strerror(job.err);
        if (job.step && std::strcmp(job.step, "open the sandbox's network namespace") == 0)
            why += std::string(" (") + job.path + ")";
        if (job.step && std::strcmp(job.step, "setns net") == 0)
            why += " (net " + std::to_string(job.net_ino) + ", owner " + std::to_string(job.user_ino) + ", ours " +
                   std::to_string(job.self_ino) + ")";
        return unavailable_error(what, why);
    }
    return out;
}

Result<int> hand_over(const std::string& inbox, const Listeners& l, bool events) {
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
    std::vector<int> fds = {l.http, l.socks};
    nlohmann::json payload = {{"http", {0}}, {"socks", {1}}, {"hold", true}};
    if (events) payload["events"] = true;
    if (!l.captured.empty()) {
        payload["captured"] = nlohmann::json::array();
        for (int fd : l.captured) {
            payload["captured"].push_back(fds.size());
            fds.push_back(fd);
        }
    }
    for (int fd : {l.dns4, l.dns6})
        if (fd >= 0) {
            payload["dns"].push_back(fds.size());
            fds.push_back(fd);
        }
    for (int fd : l.report)
        if (fd >= 0) {
            payload["report"].push_back(fds.size());
            fds.push_back(fd);
        }
    if (!send_with_fds(s, cc::json::write(payload) + "\n", fds.data(), static_cast<int>(fds.size())))
        return fail(errno_text("sendmsg"));
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
