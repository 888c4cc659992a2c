/* The init step (init_step.h): the first program inside the sandbox.
 *
 *   /run/cc/init --internal-sandbox-init --transport T [--http-port N --socks-port N
 *           --egress-dir D [--socat PATH]] [--pty 1] [--landlock-abi N --landlock-write P ...]
 *           [--write-filter-fd N --write-sock-fd N] -- CMD ARGS...
 *
 * In order: the socat bridge (socat-bridge transport only; fd-handover
 * listeners were made from outside before this step ran), the controlling
 * terminal, Landlock, the write supervisor's filter, then exec of CMD with
 * only descriptors 0-2 left open. Any failure before the exec is 125 and
 * nothing is executed. With --pid1 1 (bubblewrap's --as-pid-1) this step is
 * the sandbox's PID 1: the layers are applied to it first, and it runs the
 * command as its child (run_as_pid1). */
#include "cc/sandbox/init_step.h"
#include "cc/sandbox/hand_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

/* A C library's headers may be older than the kernel. */
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_renameat2
#define SYS_renameat2 316
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

extern char** environ;

static void set_err(char* err, size_t len, const char* fmt, ...) {
    if (!err || len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

/* One write per line: the line must not interleave with anything else. */
static int fail(const char* fmt, ...) {
    char line[1024];
    int n = snprintf(line, sizeof line, "cc-wrap: sandbox init: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    ssize_t w;
    while ((w = write(2, line, len)) < 0 && errno == EINTR) {}
    return 125;
}

/* ---- Landlock ---------------------------------------------------------- */

/* The write rights by the ABI that introduced them (1: the base set, 2:
 * REFER, 3: TRUNCATE). Spelled out: the headers may be older than the kernel. */
#define CC_LL_WRITE_FILE (1ULL << 1)
#define CC_LL_WRITE_V1                                                                                 \
    (CC_LL_WRITE_FILE | (1ULL << 4) /* REMOVE_DIR */ | (1ULL << 5) /* REMOVE_FILE */ |                 \
     (1ULL << 6) /* MAKE_CHAR */ | (1ULL << 7) /* MAKE_DIR */ | (1ULL << 8) /* MAKE_REG */ |           \
     (1ULL << 9) /* MAKE_SOCK */ | (1ULL << 10) /* MAKE_FIFO */ | (1ULL << 11) /* MAKE_BLOCK */ |      \
     (1ULL << 12) /* MAKE_SYM */)
#define CC_LL_REFER (1ULL << 13)
#define CC_LL_TRUNCATE (1ULL << 14)

static uint64_t write_rights(int abi) {
    uint64_t r = CC_LL_WRITE_V1;
    if (abi >= 2) r |= CC_LL_REFER;
    if (abi >= 3) r |= CC_LL_TRUNCATE;
    return r;
}

int cc_init_landlock_abi(void) {
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
}

int cc_init_apply_landlock(int abi, const char* const* paths, size_t n, char* err, size_t err_len) {
    if (abi <= 0) {
        set_err(err, err_len, "no Landlock ABI");
        return 0;
    }
    struct landlock_ruleset_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.handled_access_fs = write_rights(abi);
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr.handled_access_fs, 0);
    if (rs < 0) {
        set_err(err, err_len, "landlock_create_ruleset: %s", strerror(errno));
        return 0;
    }
    for (size_t k = 0; k < n; ++k) {
        int fd = open(paths[k], O_PATH | O_CLOEXEC);
        if (fd < 0) continue; /* not there inside: nothing to allow */
        struct landlock_path_beneath_attr pb;
        memset(&pb, 0, sizeof pb);
        pb.allowed_access = write_rights(abi);
        pb.parent_fd = fd;
        long r = syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
        if (r < 0 && errno == EINVAL) {
            /* A file, not a directory: only the rights that apply to a file. */
            pb.allowed_access = write_rights(abi) & (CC_LL_WRITE_FILE | CC_LL_TRUNCATE);
            r = syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
        }
        int e = errno;
        close(fd);
        if (r < 0) {
            set_err(err, err_len, "landlock_add_rule '%s': %s", paths[k], strerror(e));
            close(rs);
            return 0;
        }
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
        set_err(err, err_len, "landlock_restrict_self: %s", strerror(errno));
        close(rs);
        return 0;
    }
    close(rs);
    return 1;
}

/* ---- the write supervisor's hand (hand_proto.h) ------------------------- */

static int hand_send(int sock, const struct cc_hand_ans* ans, int fd) {
    struct iovec iov = {(void*)ans, sizeof *ans};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    memset(&ctl, 0, sizeof ctl);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof ctl.buf;
        struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t n;
    while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {}
    return n == (ssize_t)sizeof *ans;
}

/* The object the supervisor judged is the one the kernel gave us. */
static int same_object(int fd, const struct cc_hand_req* r) {
    if (r->dev == 0 && r->ino == 0) return 1;
    struct stat sb;
    return fstat(fd, &sb) == 0 && (uint64_t)sb.st_dev == r->dev && (uint64_t)sb.st_ino == r->ino;
}

/* A FIFO with no reader yet: the open waits, in a helper of its own
 * (reparented to the sandbox's PID 1), so the hand serves on. Its answer
 * comes on the returned socket. */
static int hand_defer_fifo(int dir, const char* name, int flags, struct cc_hand_ans* ans) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -1;
    pid_t mid = fork();
    if (mid < 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (mid == 0) {
        if (fork() == 0) {
            close(sv[0]);
            close(3); /* the hand's socket to cc-wrap */
            struct cc_hand_ans a = {0, 0, 0};
            int fd = openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
            if (fd < 0) a.err = errno;
            hand_send(sv[1], &a, fd);
            _exit(0);
        }
        _exit(0);
    }
    int st = 0;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR) {}
    close(sv[1]);
    ans->deferred = 1;
    return sv[0];
}

/* One request: performed here, with the command's own restrictions. */
static int hand_do(const struct cc_hand_req* r, const char* n1, const char* n2, const char* data, size_t len3,
                   int d1, int d2, struct cc_hand_ans* ans) {
    long rc = 0;
    int fd = -1;
    switch (r->op) {
    case CC_HAND_OPEN: {
        umask((mode_t)r->umask);
        int fl = r->flags;
        int ours = (fl & ~O_CLOEXEC) | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (r->follow ? 0 : O_NOFOLLOW);
        fd = openat(d1, n1, ours, (mode_t)r->mode);
        if (fd < 0) {
            int e = errno;
            struct stat sb;
            if (e == ENXIO && !(fl & O_NONBLOCK) && fstatat(d1, n1, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISFIFO(sb.st_mode)) {
                fd = hand_defer_fifo(d1, n1, fl & ~O_NONBLOCK & ~O_CREAT & ~O_EXCL & ~O_TRUNC & ~O_CLOEXEC, ans);
                if (fd >= 0) return fd;
            }
            ans->err = e;
            return -1;
        }
        if (!same_object(fd, r)) {
            close(fd);
            ans->err = EACCES;  /* not what was judged: changed in between */
            return -1;
        }
        /* Opened non-blocking (a FIFO without a reader fails rather than
         * waits); the caller's descriptor gets its own status flags back. */
        if (!(fl & O_NONBLOCK)) fcntl(fd, F_SETFL, ours & ~O_NONBLOCK & ~O_ASYNC);
        return fd;
    }
    case CC_HAND_OPENAT2: {
        umask((mode_t)r->umask);
        struct open_how how;
        memset(&how, 0, sizeof how);
        /* Non-blocking, as for open: a FIFO nobody reads fails (ENXIO)
         * rather than holding the hand; the caller's flags come back. */
        how.flags = (uint64_t)(uint32_t)r->flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
        how.mode = r->mode;
        how.resolve = r->arg;
        fd = (int)syscall(SYS_openat2, d1, n1, &how, sizeof how);
        if (fd < 0) {
            ans->err = errno;
            return -1;
        }
        if (!same_object(fd, r)) {
            close(fd);
            ans->err = EACCES;
            return -1;
        }
        if (!(r->flags & O_NONBLOCK)) fcntl(fd, F_SETFL, (r->flags | O_NOCTTY) & ~O_NONBLOCK & ~O_ASYNC);
        return fd;
    }
    case CC_HAND_MKDIR:
        umask((mode_t)r->umask);
        rc = mkdirat(d1, n1, (mode_t)r->mode);
        break;
    case CC_HAND_MKNOD:
        umask((mode_t)r->umask);
        rc = mknodat(d1, n1, (mode_t)r->mode, (dev_t)r->arg);
        break;
    case CC_HAND_UNLINK: rc = unlinkat(d1, n1, r->flags); break;
    case CC_HAND_RENAME: rc = syscall(SYS_renameat2, d1, n1, d2, n2, (unsigned)r->flags); break;
    case CC_HAND_LINK: rc = linkat(d1, n1, d2, n2, 0); break;
    case CC_HAND_LINK_FD: {
        char via[64];
        snprintf(via, sizeof via, "/proc/self/fd/%d", d1);
        rc = linkat(AT_FDCWD, via, d2, n2, AT_SYMLINK_FOLLOW);
        break;
    }
    case CC_HAND_SYMLINK:
        umask((mode_t)r->umask);
        rc = symlinkat(n2, d1, n1);
        break;
    case CC_HAND_CHMOD:
    case CC_HAND_TRUNCATE:
    case CC_HAND_FCHMOD:
    case CC_HAND_SETXATTR:
    case CC_HAND_REMOVEXATTR: {
        /* The object: the caller's own descriptor (fchmod, f*xattr: dir1
         * itself), else dir1/name1 looked up again; it must be the one the
         * supervisor judged. Changed through its descriptor's path. */
        int own = r->op == CC_HAND_FCHMOD || r->follow == 2;
        int obj = own ? dup(d1) : openat(d1, n1, O_PATH | O_CLOEXEC | (r->follow ? 0 : O_NOFOLLOW));
        if (obj < 0) {
            ans->err = errno;
            return -1;
        }
        struct stat sb;
        if (fstat(obj, &sb) != 0 || !same_object(obj, r)) {
            close(obj);
            ans->err = EACCES;
            return -1;
        }
        if (S_ISLNK(sb.st_mode)) { /* a link itself is not changed through its descriptor */
            close(obj);
            ans->err = r->op == CC_HAND_TRUNCATE ? ELOOP
                       : (r->op == CC_HAND_SETXATTR || r->op == CC_HAND_REMOVEXATTR) ? EPERM
                                                                                      : EOPNOTSUPP;
            return -1;
        }
        char via[64];
        snprintf(via, sizeof via, "/proc/self/fd/%d", obj);
        switch (r->op) {
        case CC_HAND_TRUNCATE: rc = truncate(via, (off_t)r->arg); break;
        case CC_HAND_SETXATTR: rc = setxattr(via, n2, data, len3, r->flags); break;
        case CC_HAND_REMOVEXATTR: rc = removexattr(via, n2); break;
        default: rc = chmod(via, (mode_t)r->arg);
        }
        if (rc < 0) ans->err = errno;
        close(obj);
        return -1;
    }
    case CC_HAND_BIND: {
        if (d2 < 0) {  /* not a Unix path: the address as the caller gave it */
            rc = bind(d1, (const struct sockaddr*)data, (socklen_t)len3);
            break;
        }
        /* A Unix path: made in the pinned directory, under the caller's umask. */
        struct sockaddr_un sun;
        memset(&sun, 0, sizeof sun);
        sun.sun_family = AF_UNIX;
        size_t nl = strlen(n1);
        if (nl == 0 || nl >= sizeof sun.sun_path) {
            ans->err = nl == 0 ? ENOENT : ENAMETOOLONG;
            return -1;
        }
        memcpy(sun.sun_path, n1, nl);
        umask((mode_t)r->umask);
        if (fchdir(d2) != 0) {
            ans->err = errno;
            return -1;
        }
        rc = bind(d1, (const struct sockaddr*)&sun, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + nl + 1));
        int e = errno;
        if (chdir("/") != 0) { /* the hand keeps no directory of the caller's */
        }
        errno = e;
        break;
    }
    default: ans->err = ENOSYS; return -1;
    }
    if (rc < 0) ans->err = errno;
    else ans->val = rc;
    return -1;
}

/* How long the hand asks again for the next request before it sleeps: a
 * burst of calls (an archive unpacked, a build) then costs no wake-up of
 * the hand per call, and an idle hand costs at most this much CPU per call. */
#define CC_HAND_SPIN_NS 300000L

/* The hand's loop: one request, one answer, until cc-wrap's end closes. */
static void hand_serve(int sock) {
    static char buf[sizeof(struct cc_hand_req) + 2 * CC_HAND_MAX_NAME + 2 + CC_HAND_MAX_DATA];
    for (;;) {
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(2 * sizeof(int))];
        } ctl;
        struct iovec iov = {buf, sizeof buf};
        struct msghdr msg;
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof ctl.buf;
        /* Calls come in bursts (an unpacked archive, a build): asked again
         * for a moment before sleeping, so the next one costs no wake-up. */
        ssize_t n = -1;
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
            if (n >= 0 || (errno != EAGAIN && errno != EINTR)) break;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) > CC_HAND_SPIN_NS) break;
        }
        if (n < 0 && errno == EAGAIN) n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) _exit(0);
        int fds[2] = {-1, -1};
        size_t nfd = 0;
        for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t j = 0; j < k; ++j) {
                    int f;
                    memcpy(&f, CMSG_DATA(c) + j * sizeof(int), sizeof f);
                    if (nfd < 2) fds[nfd++] = f;
                    else close(f);
                }
            }
        struct cc_hand_ans ans = {0, 0, 0};
        struct cc_hand_req r;
        int out = -1;
        if ((size_t)n < sizeof r) {
            ans.err = EINVAL;
        } else {
            memcpy(&r, buf, sizeof r);
            const char* n1 = buf + sizeof r;
            const char* n2 = n1 + r.len1;
            /* Both names NUL-terminated inside what arrived: else refused. */
            if (r.len1 == 0 || r.len2 == 0 || r.len1 > CC_HAND_MAX_NAME + 1 || r.len2 > CC_HAND_MAX_NAME + 1 ||
                r.len3 > CC_HAND_MAX_DATA || sizeof r + r.len1 + r.len2 + r.len3 != (size_t)n ||
                n1[r.len1 - 1] != '\0' || n2[r.len2 - 1] != '\0')
                ans.err = EINVAL;
            else
                out = hand_do(&r, n1, n2, n2 + r.len2, r.len3, fds[0], fds[1], &ans);
        }
        if (fds[0] >= 0) close(fds[0]);
        if (fds[1] >= 0) close(fds[1]);
        hand_send(sock, &ans, out);
        if (out >= 0) close(out);
    }
}

/* A process of ours that stays beside the command (the hand, PID 1): not
 * dumpable (nobody in the sandbox can trace it or read or write its memory),
 * named, and holding none of the command's streams: stdin and stdout, and
 * stderr unless it still has something to say there, are /dev/null. */
static void stand_aside(const char* name, int keep_stderr) {
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (name) prctl(PR_SET_NAME, name, 0, 0, 0);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0) return;
    dup2(devnull, 0);
    dup2(devnull, 1);
    if (!keep_stderr) dup2(devnull, 2);
    if (devnull > 2) close(devnull);
}

/* Forked before the supervisor's filter, twice so that the sandbox's PID 1
 * reaps it (a shell's `wait` in the command never waits for it). It keeps
 * only the supervisor's socket. Returns 0 with a message on failure. */
static int start_hand(int sock, char* err, size_t err_len) {
    pid_t mid = fork();
    if (mid < 0) {
        set_err(err, err_len, "starting the hand: fork: %s", strerror(errno));
        return 0;
    }
    if (mid == 0) {
        /* Named before the hand exists (it inherits the name and, from
         * main, not being dumpable): when this returns, no process in the
         * sandbox shows another name or opens for anyone. */
        prctl(PR_SET_NAME, "cc-wrap-hand", 0, 0, 0);
        pid_t hand = fork();
        if (hand < 0) _exit(1);
        if (hand > 0) _exit(0);
        /* No controlling terminal, not dumpable, only the socket. */
        setsid();
        stand_aside(NULL, 0);
        if (sock != 3) {
            if (dup2(sock, 3) < 0) _exit(1);
            sock = 3;
        }
        syscall(SYS_close_range, 4, ~0U, 0);
        hand_serve(sock);
        _exit(0);
    }
    int st = 0;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        set_err(err, err_len, "starting the hand: it could not fork");
        return 0;
    }
    return 1;
}

/* ---- the write supervisor's filter ------------------------------------- */

#define CC_MAX_FILTER 65536

int cc_init_install_write_filter(int filter_fd, int sock_fd, char* err, size_t err_len) {
    /* A pipe (cc-wrap writes the program once bubblewrap is starting) or a
     * memfd at offset 0: read to its end, bounded. */
    static struct sock_filter prog[CC_MAX_FILTER / sizeof(struct sock_filter) + 1];
    char* buf = (char*)prog;
    size_t have = 0;
    for (;;) {
        ssize_t r = read(filter_fd, buf + have, sizeof prog - have);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            set_err(err, err_len, "reading the write filter: %s", strerror(errno));
            return 0;
        }
        if (r == 0) break;
        have += (size_t)r;
        if (have > CC_MAX_FILTER) break;
    }
    if (have == 0 || have % sizeof(struct sock_filter) != 0 || have > CC_MAX_FILTER) {
        set_err(err, err_len, "the write filter descriptor holds no BPF program");
        return 0;
    }
    struct sock_fprog fprog = {(unsigned short)(have / sizeof(struct sock_filter)), prog};
    /* The hand first: it must not have the filter it serves. */
    if (!start_hand(sock_fd, err, err_len)) return 0;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        set_err(err, err_len, "no_new_privs: %s", strerror(errno));
        return 0;
    }
    long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                            SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &fprog);
    if (listener < 0) {
        set_err(err, err_len, "loading the write filter: %s", strerror(errno));
        return 0;
    }
    char byte = 'L';
    struct iovec iov = {&byte, 1};
    /* With our credentials: the kernel gives cc-wrap our PID as it sees it,
     * and the supervisor takes this process's mount namespace as the
     * sandbox's (a call from any other is refused). */
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.buf;
    msg.msg_controllen = sizeof ctl.buf;
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    int lfd = (int)listener;
    memcpy(CMSG_DATA(c), &lfd, sizeof lfd);
    c = CMSG_NXTHDR(&msg, c);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof(struct ucred));
    struct ucred me = {getpid(), getuid(), getgid()};
    memcpy(CMSG_DATA(c), &me, sizeof me);
    ssize_t sent;
    while ((sent = sendmsg(sock_fd, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {}
    int e = errno;
    close(lfd);
    if (sent != 1) {
        set_err(err, err_len, "handing the listener to the supervisor: %s", strerror(e));
        return 0;
    }
    return 1;
}

/* ---- the socat bridge -------------------------------------------------- */

/* Is something listening on 127.0.0.1:port? (/proc/net/tcp, state 0A) */
static int listening(int port) {
    FILE* f = fopen("/proc/net/tcp", "re");
    if (!f) return 0;
    char want[16], line[512];
    snprintf(want, sizeof want, ":%04X", port);
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        const char* p = strstr(line, want);
        if (p && p - line < 20 && strstr(line, " 0A ")) found = 1;
    }
    fclose(f);
    return found;
}

/* socat must not stay a child of CMD (a shell's `wait` would hang on it), so
 * it is started through an intermediate that exits at once; it is reparented
 * to the sandbox's PID 1 and dies with the namespace. */
static int start_bridge(const char* socat, int port, const char* dir, const char* sock, char* err, size_t err_len) {
    char listen[96], target[4200];
    snprintf(listen, sizeof listen, "TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork", port);
    if ((size_t)snprintf(target, sizeof target, "UNIX-CONNECT:%s/%s", dir, sock) >= sizeof target) {
        set_err(err, err_len, "egress directory too long");
        return 0;
    }
    pid_t mid = fork();
    if (mid < 0) {
        set_err(err, err_len, "fork: %s", strerror(errno));
        return 0;
    }
    if (mid == 0) {
        if (fork() == 0) {
            int devnull = open("/dev/null", O_RDWR);
            if (devnull >= 0) {
                dup2(devnull, 0);
                dup2(devnull, 1);
            }
            /* Nothing of ours: not the supervisor's socket (the hand's
             * end would never see end of file) nor the filter pipe. */
            syscall(SYS_close_range, 3, ~0U, 0);
            execl(socat, socat, "-lpcc-wrap-bridge", listen, target, (char*)NULL);
            _exit(127);
        }
        _exit(0);
    }
    int st = 0;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR) {}
    return 1;
}

static int wait_listening(int port, char* err, size_t err_len) {
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 3000; ++i) { /* up to 3 s */
        if (listening(port)) return 1;
        nanosleep(&ms, NULL);
    }
    set_err(err, err_len, "socat did not listen on 127.0.0.1:%d", port);
    return 0;
}

/* ---- exec -------------------------------------------------------------- */

/* A file the kernel would not execute (no #! line): run by the shell, as
 * POSIX execvp does (glibc does; musl does not, hence this). */
static void exec_shell_script(const char* file, char* const* argv) {
    size_t n = 0;
    while (argv[n]) ++n;
    char** sh = calloc(n + 2, sizeof *sh);
    if (!sh) return;
    sh[0] = (char*)"/bin/sh";
    sh[1] = (char*)file;
    for (size_t k = 1; k < n; ++k) sh[k + 1] = argv[k];
    execve("/bin/sh", sh, environ);
    free(sh);
    errno = ENOEXEC;
}

/* execvp with glibc's rules: a name with a slash is run as is; otherwise
 * each $PATH entry in turn (an empty entry is the working directory; no
 * PATH: /bin:/usr/bin), going on past ENOENT, ENOTDIR and EACCES and
 * reporting EACCES if any entry gave it. Returns with errno set. */
static void exec_search(char* const* argv) {
    const char* file = argv[0];
    if (!*file) {
        errno = ENOENT;
        return;
    }
    if (strchr(file, '/')) {
        execve(file, argv, environ);
        if (errno == ENOEXEC) exec_shell_script(file, argv);
        return;
    }
    const char* path = getenv("PATH");
    if (!path) path = "/bin:/usr/bin";
    size_t flen = strlen(file);
    int saw_eacces = 0;
    char buf[4096];
    for (const char* p = path;; ++p) {
        const char* end = strchr(p, ':');
        size_t dlen = end ? (size_t)(end - p) : strlen(p);
        if (dlen + 1 + flen < sizeof buf) {
            size_t k = 0;
            if (dlen > 0) {
                memcpy(buf, p, dlen);
                buf[dlen] = '/';
                k = dlen + 1;
            }
            memcpy(buf + k, file, flen + 1);
            execve(buf, argv, environ);
            switch (errno) {
            case ENOEXEC:
                exec_shell_script(buf, argv);
                return;
            case EACCES:
                saw_eacces = 1;
                break;
            case ENOENT:
            case ENOTDIR:
            case ESTALE:
            case ENODEV:
            case ETIMEDOUT:
                break;
            default:
                return;
            }
        }
        if (!end) break;
        p = end;
    }
    errno = saw_eacces ? EACCES : ENOENT;
}

/* After exec_search returned: one line naming the command and errno's
 * text, and the status a shell gives (127 not found, 126 not runnable). */
static int exec_failed(const char* name) {
    int e = errno;
    char line[4200];
    int len = snprintf(line, sizeof line, "cc-wrap: '%s': %s\n", name, strerror(e));
    if (len > 0) {
        size_t l = (size_t)len < sizeof line ? (size_t)len : sizeof line - 1;
        ssize_t w;
        while ((w = write(2, line, l)) < 0 && errno == EINTR) {}
    }
    return e == ENOENT || e == ENOTDIR ? 127 : 126;
}

/* ---- PID 1 -------------------------------------------------------------- */

/* Runs the command as a child and stays the sandbox's PID 1 (bubblewrap was
 * told --as-pid-1): so no process in the sandbox runs without the layers
 * applied above, which bubblewrap's own PID 1 would. This process is not
 * dumpable (nobody in the sandbox can open its memory), reaps every orphan,
 * passes on the signals cc-wrap forwards from outside the sandbox (SIGTERM,
 * SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) to the command, ignores the same
 * signals sent from inside, and exits with the command's status
 * (128+N for a signal N) when the command ends; the kernel then ends the
 * rest of the namespace. */
static void exec_child(char* const* argv, int pty) {
    if (pty && isatty(0)) {
        setsid();
        ioctl(0, TIOCSCTTY, 0);
    }
    syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
    exec_search(argv);
    _exit(exec_failed(argv[0]));
}

/* The signals PID 1 waits for: blocked from the step's start (pid1_signals),
 * so one forwarded while the layers are still being applied waits for the
 * command instead of being dropped (a PID 1 drops what it has no handler
 * for). */
static void pid1_signals(sigset_t* set) {
    static const int passed[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    sigemptyset(set);
    for (size_t k = 0; k < sizeof passed / sizeof passed[0]; ++k) sigaddset(set, passed[k]);
}

static int run_as_pid1(char* const* argv, int pty, const sigset_t* old) {
    sigset_t wait_for;
    pid1_signals(&wait_for);
    /* Named before the command exists: it never sees PID 1 otherwise (the
     * command's exec gives it its own name). */
    prctl(PR_SET_NAME, "cc-wrap-init", 0, 0, 0);
    pid_t cmd = fork();
    if (cmd < 0) return fail("fork: %s", strerror(errno));
    if (cmd == 0) {
        sigprocmask(SIG_SETMASK, old, NULL);
        exec_child(argv, pty);
    }
    /* Nothing of the command's streams held here but stderr (for the
     * lines above): a pipe the command closes is closed. */
    stand_aside(NULL, 1);
    syscall(SYS_close_range, 3, ~0U, 0);
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&wait_for, &si);
        if (sig < 0) continue;
        if (sig != SIGCHLD) {
            /* Only what comes from outside the sandbox (cc-wrap forwarding
             * a signal: no pid in this namespace); the command signalling
             * PID 1 changes nothing. */
            if (si.si_pid == 0) kill(cmd, sig);
            continue;
        }
        for (;;) {
            int st = 0;
            pid_t p = waitpid(-1, &st, WNOHANG);
            if (p <= 0) break;
            if (p == cmd) {
                if (WIFEXITED(st)) return WEXITSTATUS(st);
                return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
            }
        }
    }
}

/* ---- the step ---------------------------------------------------------- */

int cc_init_step_main(int argc, char* const* argv) {
    const char *transport = "none", *egress_dir = "", *socat = "socat";
    int http_port = 0, socks_port = 0, pty = 0, landlock_abi = 0, pid1 = 0;
    /* At most one path per two arguments: never more than argc. */
    const char** landlock_write = calloc((size_t)argc + 1, sizeof *landlock_write);
    if (!landlock_write) return fail("out of memory");
    size_t n_landlock = 0;
    int write_filter_fd = -1, write_sock_fd = -1;
    int i = 0;
    for (; i < argc; ++i) {
        const char* a = argv[i];
        if (strcmp(a, "--") == 0) {
            ++i;
            break;
        }
        if (i + 1 >= argc) return fail("option '%s' needs a value", a);
        const char* v = argv[++i];
        if (strcmp(a, "--transport") == 0) transport = v;
        else if (strcmp(a, "--http-port") == 0) http_port = atoi(v);
        else if (strcmp(a, "--socks-port") == 0) socks_port = atoi(v);
        else if (strcmp(a, "--egress-dir") == 0) egress_dir = v;
        else if (strcmp(a, "--socat") == 0) socat = v;
        else if (strcmp(a, "--pty") == 0) pty = strcmp(v, "1") == 0;
        else if (strcmp(a, "--pid1") == 0) pid1 = strcmp(v, "1") == 0;
        else if (strcmp(a, "--landlock-abi") == 0) landlock_abi = atoi(v);
        else if (strcmp(a, "--landlock-write") == 0) landlock_write[n_landlock++] = v;
        else if (strcmp(a, "--write-filter-fd") == 0) write_filter_fd = atoi(v);
        else if (strcmp(a, "--write-sock-fd") == 0) write_sock_fd = atoi(v);
        else return fail("unknown option '%s'", a);
    }
    if (i >= argc) return fail("no command");
    /* Not dumpable from the first moment, and so neither is anything forked
     * from here (the hand, a FIFO helper): the command, started later in
     * the same domain with the same uid, can never open this process's
     * memory, environment or descriptors, not even in the instant after
     * its fork. The command's exec makes it dumpable again, as usual. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    sigset_t pid1_set, old_mask;
    if (pid1) {
        pid1_signals(&pid1_set);
        sigprocmask(SIG_BLOCK, &pid1_set, &old_mask);
    }

    char err[512] = "";
    /* The terminal: as the sandbox's PID 1 this step stays out of the
     * command's session (the command makes its own, below). */
    if (pty && !pid1 && isatty(0)) {
        setsid();
        ioctl(0, TIOCSCTTY, 0);
    }
    /* Landlock first: everything started from here on (the bridge, the
     * hand, the command, and this step as PID 1) is inside its domain. */
    if (landlock_abi > 0 && !cc_init_apply_landlock(landlock_abi, landlock_write, n_landlock, err, sizeof err))
        return fail("Landlock: %s", err);
    /* The write supervisor's filter next: from here every creating or
     * writing call waits for cc-wrap's answer (this step makes none). */
    if (write_filter_fd >= 0 || write_sock_fd >= 0) {
        if (write_filter_fd < 0 || write_sock_fd < 0)
            return fail("write supervisor: needs both --write-filter-fd and --write-sock-fd");
        if (!cc_init_install_write_filter(write_filter_fd, write_sock_fd, err, sizeof err))
            return fail("write supervisor: %s", err);
        close(write_filter_fd);
        close(write_sock_fd);
    }
    /* The socat bridge last, under both: a command that took it over would
     * hold no more power than it has. */
    if (strcmp(transport, "socat-bridge") == 0) {
        if (!start_bridge(socat, http_port, egress_dir, "http.sock", err, sizeof err) ||
            !start_bridge(socat, socks_port, egress_dir, "socks.sock", err, sizeof err) ||
            !wait_listening(http_port, err, sizeof err) || !wait_listening(socks_port, err, sizeof err))
            return fail("socat bridge: %s", err);
    }
    if (pid1) return run_as_pid1(argv + i, pty, &old_mask);
    /* The command gets stdin, stdout and stderr and nothing else (bwrap's
     * status pipe to cc-wrap stays outside). */
    syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
    exec_search(argv + i);
    return exec_failed(argv[i]);
}
