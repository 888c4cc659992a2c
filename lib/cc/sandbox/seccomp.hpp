// The seccomp layer: kernel surfaces a sandboxed command never needs,
// refused before the kernel looks at the call's arguments. The policy is
// data (part of the plan, listed by `cc-wrap --print`); compile() turns it
// into BPF with libseccomp, handed to bubblewrap as --seccomp FD, which
// installs it last, just before the command (or the init step) is executed.
//
//   auto pol = cc::sandbox::default_seccomp({.nestedNamespaces = false, .ptrace = false});
//   auto fd = cc::sandbox::compile_seccomp(pol);   // a sealed memfd holding the BPF program
//
// The filter's default is "allow": it is a deny list of whole system calls
// and of argument patterns (a clone with CLONE_NEWUSER, an ioctl TIOCSTI).
// It covers the native ABI and the 32-bit ones (i386 via int 0x80, x32):
// the same rules are added for each; any other ABI kills the process.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::sandbox {

struct SeccompRule {
    std::string syscall;  // libseccomp's name for it
    int errnum = 1;       // EPERM unless said (clone3: ENOSYS so libc falls back to clone)
    // An argument condition, or none (the whole call is refused).
    struct Cond {
        unsigned arg = 0;
        enum class Op { masked_eq, gt } op = Op::masked_eq;
        std::uint64_t mask = 0, value = 0;
        std::string text;  // for people: "flags & CLONE_NEWUSER"
    };
    std::optional<Cond> cond;
    std::string why;
};

struct SeccompOptions {
    bool nestedNamespaces = false;  // spec allowNestedNamespaces: unshare/clone of user namespaces
    bool ptrace = false;            // spec allowPtrace: ptrace and process_vm_* inside the sandbox
};

struct SeccompPolicy {
    SeccompOptions options;
    std::vector<SeccompRule> rules;
};

SeccompPolicy default_seccomp(const SeccompOptions& o);
nlohmann::json to_json(const SeccompPolicy& p);

// The BPF program for the policy, in a sealed memfd positioned at 0 (what
// bubblewrap's --seccomp reads). Errors name the rule libseccomp refused.
Result<int> compile_seccomp(const SeccompPolicy& p);
// The same program written to `out` in one write(2): cc-wrap hands
// bubblewrap a pipe and fills it once bubblewrap is starting, so compiling
// costs no start-up time (bubblewrap reads the filter only after its mounts).
Status export_seccomp(const SeccompPolicy& p, int out);

}  // namespace cc::sandbox
