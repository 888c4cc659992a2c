#include "cc/sandbox/seccomp.hpp"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>

namespace cc::sandbox {

namespace {

struct Ctx {
    scmp_filter_ctx c;
    ~Ctx() {
        if (c) seccomp_release(c);
    }
};

}  // namespace

Status export_seccomp(const SeccompPolicy& p, int out) {
    const std::string what = "seccomp filter";
    Ctx ctx{seccomp_init(SCMP_ACT_ALLOW)};
    if (!ctx.c) return unavailable_error(what, "libseccomp could not start a filter");
    // The native ABI only. The 32-bit ones (i386 through `int 0x80`, x32)
    // reach the same kernel with calls of their own (truncate64, socketcall,
    // the *32 calls) that rules by name would miss: a call through them
    // kills the process (libseccomp also sends x32's numbers there).
    if (int rc = seccomp_attr_set(ctx.c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc != 0)
        return unavailable_error(what, std::string("cannot refuse other ABIs: ") + std::strerror(-rc));
    for (const auto& r : p.rules) {
        int nr = seccomp_syscall_resolve_name(r.syscall.c_str());
        // A call this kernel's ABI never had (on every architecture) needs no rule.
        if (nr == __NR_SCMP_ERROR) continue;
        int rc;
        if (!r.cond) {
            rc = seccomp_rule_add(ctx.c, SCMP_ACT_ERRNO(static_cast<uint16_t>(r.errnum)), nr, 0);
        } else {
            scmp_arg_cmp cmp = r.cond->op == SeccompRule::Cond::Op::gt
                                   ? scmp_arg_cmp{r.cond->arg, SCMP_CMP_GT, r.cond->value, 0}
                                   : scmp_arg_cmp{r.cond->arg, SCMP_CMP_MASKED_EQ, r.cond->mask, r.cond->value};
            rc = seccomp_rule_add_array(ctx.c, SCMP_ACT_ERRNO(static_cast<uint16_t>(r.errnum)), nr, 1, &cmp);
        }
        if (rc != 0)
            return unavailable_error(what, "rule for '" + r.syscall + "': " + std::strerror(-rc));
    }
    // One write(2) of the whole program (libseccomp's export).
    if (int rc = seccomp_export_bpf(ctx.c, out); rc != 0)
        return unavailable_error(what, std::string("export: ") + std::strerror(-rc));
    return ok();
}

Result<int> compile_seccomp(const SeccompPolicy& p) {
    int fd = ::memfd_create("cc-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return unavailable_error("seccomp filter", std::string("memfd_create: ") + std::strerror(errno));
    if (auto s = export_seccomp(p, fd); !s) {
        ::close(fd);
        return s.error();
    }
    ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    ::lseek(fd, 0, SEEK_SET);
    return fd;
}

}  // namespace cc::sandbox
