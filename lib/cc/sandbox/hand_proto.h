/* The write supervisor's hand: the process inside the sandbox that performs
 * each call the supervisor has judged (init_step.c serves it,
 * supervisor_serve.cpp asks it). It is forked by the init step after
 * Landlock and before the supervisor's own filter, so it has the command's
 * uid and groups, mount namespace, Landlock domain and default seccomp
 * filter, no controlling terminal, and is not dumpable (the command cannot
 * trace it or write its memory). The supervisor outside only looks paths up
 * (O_PATH) and judges; every open, create, rename, link, unlink, chmod and
 * truncate happens here, so the kernel applies the command's own
 * restrictions: nothing the command cannot reach becomes reachable through
 * the supervisor (another process's /proc/PID/mem or fd/, anything outside
 * the Landlock domain).
 *
 * One request, one SOCK_SEQPACKET message: struct cc_hand_req, then name1
 * and name2 (each NUL-terminated), with up to two descriptors (SCM_RIGHTS):
 * dir1 and dir2, O_PATH directories the supervisor pinned (or, for
 * CC_HAND_LINK_FD and CC_HAND_FCHMOD, the caller's own object). One answer:
 * struct cc_hand_ans, with the new descriptor when there is one (an open),
 * or, for a FIFO open that has to wait for a reader (deferred), a socket on
 * which the final answer comes later, from a helper that waits. */
#ifndef CC_SANDBOX_HAND_PROTO_H
#define CC_SANDBOX_HAND_PROTO_H

#include <stdint.h>

enum cc_hand_op {
    CC_HAND_OPEN = 1,     /* openat(dir1, name1, flags, mode) */
    CC_HAND_OPENAT2,      /* openat2(dir1, name1, {flags, mode, resolve}) */
    CC_HAND_MKDIR,        /* mkdirat(dir1, name1, mode) */
    CC_HAND_MKNOD,        /* mknodat(dir1, name1, mode, arg) */
    CC_HAND_UNLINK,       /* unlinkat(dir1, name1, flags) */
    CC_HAND_RENAME,       /* renameat2(dir1, name1, dir2, name2, flags) */
    CC_HAND_LINK,         /* linkat(dir1, name1, dir2, name2, 0) */
    CC_HAND_LINK_FD,      /* the object dir1 linked at dir2/name2 */
    CC_HAND_SYMLINK,      /* symlinkat(name2, dir1, name1) */
    CC_HAND_CHMOD,        /* the object dir1/name1 (follow: a magic link followed), mode arg */
    CC_HAND_TRUNCATE,     /* the same, length arg */
    CC_HAND_FCHMOD,       /* the object dir1 (the caller's own descriptor), mode arg */
    CC_HAND_SETXATTR,     /* the object dir1/name1 (or dir1 itself with follow 2): name2 = data, flags */
    CC_HAND_REMOVEXATTR,  /* the same: name2 removed */
    CC_HAND_BIND,         /* the socket dir1 bound: at dir2/name1 (a Unix path), else to data as given */
};

#define CC_HAND_MAX_NAME 4096
#define CC_HAND_MAX_DATA 65536

struct cc_hand_req {
    uint32_t op;
    int32_t flags;     /* open flags (the caller's), unlink or rename flags */
    uint32_t mode;     /* creation mode */
    uint32_t umask;    /* the caller's umask, for creating calls */
    uint64_t arg;      /* mknod's dev, chmod's mode, truncate's length, openat2's resolve */
    uint64_t dev, ino; /* the object the supervisor judged (0, 0: none): anything else is refused */
    uint32_t follow;   /* follow the final name (a /proc magic link); 2: dir1 is the object */
    uint32_t len1, len2; /* name bytes that follow, NULs included */
    uint32_t len3;     /* data bytes after the names */
};

struct cc_hand_ans {
    int32_t err;       /* 0 or the errno */
    int32_t deferred;  /* 1: the descriptor is a socket; the answer comes on it */
    int64_t val;       /* a call's return value */
};

#endif
