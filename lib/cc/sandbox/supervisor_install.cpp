// The init step's half of the write supervisor (supervisor.hpp): load the
// notify filter with a listener, hand the listener out. Links libc only (it
// is part of the static cc-wrap-init).

#include "cc/sandbox/sandbox_init.hpp"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace cc::sandbox {

bool install_write_filter(int filter_fd, int sock_fd, std::string& err) {
    // A pipe (cc-wrap writes the program once bubblewrap is starting) or a
    // memfd at offset 0: read to its end, bounded.
    std::string prog;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(filter_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            err = std::string("reading the write filter: ") + std::strerror(errno);
            return false;
        }
        if (n == 0) break;
        prog.append(buf, static_cast<std::size_t>(n));
        if (prog.size() > 65536) break;
    }
    if (prog.empty() || prog.size() % sizeof(sock_filter) != 0 || prog.size() > 65536) {
        err = "the write filter descriptor holds no BPF program";
        return false;
    }
    sock_fprog fprog{static_cast<unsigned short>(prog.size() / sizeof(sock_filter)),
                     reinterpret_cast<sock_filter*>(prog.data())};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        err = std::string("no_new_privs: ") + std::strerror(errno);
        return false;
    }
    long listener = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                              SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &fprog);
    if (listener < 0) {
        err = std::string("loading the write filter: ") + std::strerror(errno);
        return false;
    }
    char byte = 'L';
    iovec iov{&byte, 1};
    // With our credentials: the kernel gives cc-wrap our PID as it sees it,
    // and the supervisor takes this process's mount namespace as the
    // sandbox's (a call from any other is refused).
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(ucred))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl;
    msg.msg_controllen = sizeof ctl;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    int lfd = static_cast<int>(listener);
    std::memcpy(CMSG_DATA(c), &lfd, sizeof lfd);
    c = CMSG_NXTHDR(&msg, c);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof(ucred));
    ucred me{::getpid(), ::getuid(), ::getgid()};
    std::memcpy(CMSG_DATA(c), &me, sizeof me);
    ssize_t n;
    while ((n = ::sendmsg(sock_fd, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {}
    int e = errno;
    ::close(lfd);
    if (n != 1) {
        err = std::string("handing the listener to the supervisor: ") + std::strerror(e);
        return false;
    }
    return true;
}

}  // namespace cc::sandbox
