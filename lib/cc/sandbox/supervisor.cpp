// The write supervisor's filter (supervisor.hpp). Its init-step half is in
// supervisor_install.cpp, the serving thread in supervisor_serve.cpp.

#include "cc/sandbox/supervisor.hpp"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace cc::sandbox {

namespace {

// Opens with any of these flags are sent to the supervisor. O_TMPFILE needs
// O_WRONLY or O_RDWR, so it is among them.
constexpr std::uint64_t k_write_flags[] = {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC};
// An fchmod that sets any of these is sent: it could make a file the host
// runs (or would run as someone else) out of one the rules deny writing.
constexpr std::uint64_t k_exec_bits[] = {S_IXUSR, S_IXGRP, S_IXOTH, S_ISUID, S_ISGID};

struct Ctx {
    scmp_filter_ctx c;
    ~Ctx() {
        if (c) seccomp_release(c);
    }
};

}  // namespace

Status export_write_filter(int out) {
    const std::string what = "write supervisor filter";
    Ctx ctx{seccomp_init(SCMP_ACT_ALLOW)};
    if (!ctx.c) return unavailable_error(what, "libseccomp could not start a filter");
    // The native ABI only: a call through another (i386's `int 0x80`, x32)
    // kills the process, so no 32-bit spelling of a call (truncate64,
    // socketcall's bind) goes around the supervisor.
    if (int rc = seccomp_attr_set(ctx.c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc != 0)
        return unavailable_error(what, std::string("cannot refuse other ABIs: ") + std::strerror(-rc));
    for (const auto& c : notified_calls()) {
        int nr = seccomp_syscall_resolve_name(c.name);
        if (nr == __NR_SCMP_ERROR) continue;  // not on any of these ABIs
        int rc = 0;
        if (c.modeArg >= 0) {
            for (std::uint64_t bit : k_exec_bits) {
                scmp_arg_cmp cmp{static_cast<unsigned>(c.modeArg), SCMP_CMP_MASKED_EQ, bit, bit};
                if ((rc = seccomp_rule_add_array(ctx.c, SCMP_ACT_NOTIFY, nr, 1, &cmp)) != 0) break;
            }
        } else if (c.flagsArg < 0) {
            rc = seccomp_rule_add(ctx.c, SCMP_ACT_NOTIFY, nr, 0);
        } else {
            for (auto f : k_write_flags) {
                scmp_arg_cmp cmp{static_cast<unsigned>(c.flagsArg), SCMP_CMP_MASKED_EQ, f, f};
                if ((rc = seccomp_rule_add_array(ctx.c, SCMP_ACT_NOTIFY, nr, 1, &cmp)) != 0) break;
            }
        }
        if (rc != 0) return unavailable_error(what, std::string("rule for '") + c.name + "': " + std::strerror(-rc));
    }
#if defined(__x86_64__)
    // fchmodat2 (Linux 6.6) is newer than this libseccomp's tables: refused
    // by number on the native ABI, so it is no way around chmod's check.
    if (int rc = seccomp_rule_add(ctx.c, SCMP_ACT_ERRNO(ENOSYS), 452, 0); rc != 0)
        return unavailable_error(what, std::string("rule for 'fchmodat2': ") + std::strerror(-rc));
    // setxattrat and removexattrat (Linux 6.13) and file_setattr (6.17), the
    // same: the C library's setxattr and removexattr are the older calls.
    for (int nr : {463, 466, 469})
        if (int rc = seccomp_rule_add(ctx.c, SCMP_ACT_ERRNO(ENOSYS), nr, 0); rc != 0)
            return unavailable_error(what, "rule for call " + std::to_string(nr) + ": " + std::strerror(-rc));
#endif
    if (int rc = seccomp_export_bpf(ctx.c, out); rc != 0)
        return unavailable_error(what, std::string("export: ") + std::strerror(-rc));
    return ok();
}

Result<int> compile_write_filter() {
    int fd = ::memfd_create("cc-write-filter", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return unavailable_error("write supervisor filter", std::string("memfd_create: ") + std::strerror(errno));
    if (auto s = export_write_filter(fd); !s) {
        ::close(fd);
        return s.error();
    }
    ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    ::lseek(fd, 0, SEEK_SET);
    return fd;
}

}  // namespace cc::sandbox
