#include "cc/sandbox/seccomp.hpp"

#include <cerrno>

namespace cc::sandbox {

namespace {

constexpr std::uint64_t k_clone_newuser = 0x10000000;  // CLONE_NEWUSER
constexpr std::uint64_t k_tiocsti = 0x5412, k_tioclinux = 0x541C;
// personality(2): the execution domains and flags that are harmless, all at
// or below PER_LINUX32 | UNAME26 (0x20008); READ_IMPLIES_EXEC,
// ADDR_NO_RANDOMIZE, MMAP_PAGE_ZERO and the rest lie above it.
constexpr std::uint64_t k_personality_max = 0x20008;

void deny(SeccompPolicy& p, std::initializer_list<const char*> names, const std::string& why, int errnum = EPERM) {
    for (const char* n : names) p.rules.push_back({n, errnum, std::nullopt, why});
}

}  // namespace

SeccompPolicy default_seccomp(const SeccompOptions& o) {
    SeccompPolicy p;
    p.options = o;
    deny(p, {"io_uring_setup", "io_uring_enter", "io_uring_register"},
         "io_uring performs file and network operations without passing through the per-call rules");
    deny(p, {"keyctl", "add_key", "request_key"}, "kernel keyrings are shared with the caller's session");
    deny(p, {"bpf"}, "BPF programs and maps");
    deny(p, {"perf_event_open"}, "performance counters observe other processes and the kernel");
    deny(p, {"userfaultfd"}, "userfaultfd stretches kernel race windows at will");
    deny(p, {"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"},
         "kernel images and modules");
    deny(p, {"mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
             "fspick", "mount_setattr"},
         "the mount table is bubblewrap's: no command changes what the sandbox shows");
    deny(p, {"open_by_handle_at", "name_to_handle_at"}, "file handles open files by inode, past every mount");
    deny(p, {"setns"}, "joining other namespaces");
    deny(p, {"swapon", "swapoff", "reboot", "syslog", "acct", "quotactl", "lookup_dcookie", "vhangup", "nfsservctl",
             "uselib", "ustat", "sysfs", "_sysctl"},
         "host administration and obsolete interfaces");
    if (!o.nestedNamespaces) {
        p.rules.push_back({"unshare", EPERM, SeccompRule::Cond{0, SeccompRule::Cond::Op::masked_eq, k_clone_newuser,
                                                               k_clone_newuser, "flags & CLONE_NEWUSER"},
                           "a new user namespace gives back every capability inside it (allowNestedNamespaces to permit)"});
        p.rules.push_back({"clone", EPERM, SeccompRule::Cond{0, SeccompRule::Cond::Op::masked_eq, k_clone_newuser,
                                                             k_clone_newuser, "flags & CLONE_NEWUSER"},
                           "a new user namespace gives back every capability inside it (allowNestedNamespaces to permit)"});
        deny(p, {"clone3"}, "its flags are in memory a filter cannot read: ENOSYS, and libc falls back to clone",
             ENOSYS);
    }
    if (!o.ptrace)
        deny(p, {"ptrace", "process_vm_readv", "process_vm_writev"},
             "reading and steering other processes' memory (allowPtrace to permit debuggers inside)");
    for (auto [cmd, name] : {std::pair{k_tiocsti, "TIOCSTI"}, std::pair{k_tioclinux, "TIOCLINUX"}})
        p.rules.push_back({"ioctl", EPERM,
                           SeccompRule::Cond{1, SeccompRule::Cond::Op::masked_eq, 0xffffffff, cmd, std::string("request == ") + name},
                           "typing into or reading from a terminal outside the sandbox"});
    p.rules.push_back({"personality", EPERM,
                       SeccompRule::Cond{0, SeccompRule::Cond::Op::gt, 0, k_personality_max, "persona > 0x20008"},
                       "READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE and the other flags that weaken the address space "
                       "(the query 0xffffffff is refused too)"});
    return p;
}

nlohmann::json to_json(const SeccompPolicy& p) {
    nlohmann::json rules = nlohmann::json::array();
    for (const auto& r : p.rules) {
        nlohmann::json j = {{"syscall", r.syscall}, {"errno", r.errnum == ENOSYS ? "ENOSYS" : "EPERM"}, {"why", r.why}};
        if (r.cond) j["when"] = r.cond->text;
        rules.push_back(std::move(j));
    }
    return {{"defaultAction", "allow"},
            {"architectures", {"x86_64"}},
            {"otherArchitectures", "kill"},
            {"allowNestedNamespaces", p.options.nestedNamespaces},
            {"allowPtrace", p.options.ptrace},
            {"rules", rules}};
}

}  // namespace cc::sandbox
