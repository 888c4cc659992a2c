/* The init step's C core (init_step.c): what cc-wrap-init does inside the
 * sandbox between bubblewrap's mounts and the command's exec. Written in C so
 * cc-wrap-init can be a static musl binary: glibc's own start-up (its CPU
 * feature and cache probing) costs most of a millisecond on a VM, and this
 * step is on every launch's critical path. C++ callers use the wrappers in
 * sandbox_init.hpp. Linux only.
 *
 * Landlock is a second layer under the read-only binds: after bubblewrap
 * has built the mounts, writes are restricted to the paths the plan names as
 * writable (the writable binds, the private tmpfs mounts, /dev and /proc),
 * so a mistake in the mount plan that left something writable is still
 * refused. Reads are not handled: the mount namespace decides what exists. */
#ifndef CC_SANDBOX_INIT_STEP_H
#define CC_SANDBOX_INIT_STEP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* argv after "--internal-sandbox-init": argc entries and argv[argc] NULL,
 * as main() gets them. Returns only on failure: 125 for a setup failure (a line
 * "cc-wrap: sandbox init: ..." on stderr), 126/127 when the command cannot
 * be executed / is not found; with --pid1 1, when the command has ended,
 * with its status. */
int cc_init_step_main(int argc, char* const* argv);

/* Loads the BPF program read from filter_fd with a seccomp listener and sends
 * the listener over sock_fd (SCM_RIGHTS, with our credentials). 1 on success;
 * 0 with a message in err (err_len bytes) otherwise. */
int cc_init_install_write_filter(int filter_fd, int sock_fd, char* err, size_t err_len);

/* The Landlock ABI the running kernel offers (0: none or disabled). */
int cc_init_landlock_abi(void);

/* Restricts this process to writing beneath the n paths only, with the rights
 * ABI abi knows; paths that do not exist are skipped. 1 on success; 0 with a
 * message in err otherwise. */
int cc_init_apply_landlock(int abi, const char* const* paths, size_t n, char* err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
