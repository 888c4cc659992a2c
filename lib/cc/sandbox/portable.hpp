// The few system calls the launcher needs that Linux and macOS spell
// differently (internal to lib/cc/sandbox). Linux keeps the calls it always
// made; macOS (the Seatbelt backend) gets the POSIX equivalents:
//
//   int p[2]; if (!pipe_cloexec(p)) -> error     // pipe2(O_CLOEXEC) | pipe + FD_CLOEXEC
//   cloexec_from(3);                             // close_range(CLOEXEC) | fcntl per descriptor
//   die_with_parent();                           // PR_SET_PDEATHSIG | nothing (--exit-with-stdin ends it)
//
// cloexec_from and die_with_parent run in a vfork child: system calls only,
// no allocation.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

namespace cc::sandbox::detail {

inline bool pipe_cloexec(int p[2]) {
#ifdef __linux__
    return ::pipe2(p, O_CLOEXEC) == 0;
#else
    // Not atomic with a concurrent fork, which the launcher does not have:
    // children are started from this thread only.
    if (::pipe(p) != 0) return false;
    ::fcntl(p[0], F_SETFD, FD_CLOEXEC);
    ::fcntl(p[1], F_SETFD, FD_CLOEXEC);
    return true;
#endif
}

// Every descriptor from `from` up is marked close-on-exec.
inline void cloexec_from(int from) {
#ifdef __linux__
    ::syscall(SYS_close_range, from, ~0U, CLOSE_RANGE_CLOEXEC);
#else
    int top = ::getdtablesize();
    for (int fd = from; fd < top; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
#endif
}

// The child gets SIGTERM when cc-wrap dies (Linux). macOS has no such
// request; the children that need it also end when their stdin pipe from
// cc-wrap closes.
inline void die_with_parent() {
#ifdef __linux__
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
}

}  // namespace cc::sandbox::detail
