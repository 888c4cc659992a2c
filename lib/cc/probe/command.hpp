// What `cc-probe` does, as a library call (its main.cpp only parses flags).
// Testable in-process with a fake HostFacts.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "cc/probe/probe.hpp"

namespace cc::probe {

struct CommandOptions {
    bool json = false;
    bool diagnose = false;
    std::optional<std::string> sandbox;       // --sandbox
    std::optional<std::string> sandbox_env;   // CC_SERVER_SANDBOX
    std::optional<std::string> backend;       // --backend: a stored name to parse
    std::optional<std::string> data_dir;      // --data-dir for the reflink check
    std::optional<std::string> container_seccomp;  // --container-seccomp: a runtime's profile to adapt
};

// Writes the report to `out`, errors to `err`; returns the exit status:
// 0 ok, 1 the asked-for backend (or, with --diagnose, its checks) cannot run, 2 bad input.
// With --container-seccomp, writes the adapted profile instead (0, or 2).
int run_command(const CommandOptions& opts, const HostFacts& host, std::ostream& out, std::ostream& err);

}  // namespace cc::probe
