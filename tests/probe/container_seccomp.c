/* Runs a command under the part of a container runtime's default seccomp
 * profile that stops bubblewrap (Docker's and Podman's refuse unshare and
 * clone with namespace flags to a process without CAP_SYS_ADMIN, and
 * clone3 outright): unshare and clone with CLONE_NEWUSER get EPERM, clone3
 * ENOSYS (libc then falls back to clone). Usage: container_seccomp CMD ARGS... */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: container_seccomp CMD ARGS...\n");
        return 2;
    }
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0) != 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)) != 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) != 0 || seccomp_load(ctx) != 0) {
        fprintf(stderr, "container_seccomp: cannot load the filter\n");
        return 2;
    }
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
