// cc-wrap's whole job as one library call: load the spec and the probe,
// choose the backend, start the session's cc-egress when the plan needs
// one, build the plan, then print it or run it and report.
//
//   cc::sandbox::WrapRequest rq;  rq.specPath = "spec.json";  rq.command = {"make", "test"};
//   int status = cc::sandbox::wrap(rq);   // the child's status, 125/126/127, or 2 for bad input
//
// Every exit path stops what was started: the sandbox (its process group and
// PID namespace), the cc-egress child, and the runtime directory.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cc::sandbox {

struct WrapRequest {
    std::string specPath;                       // "-" is stdin
    std::optional<std::string> backend;         // --backend
    std::optional<std::string> sandboxSwitch;   // --sandbox
    std::optional<std::string> probePath;       // --probe FILE
    std::string profile = "dispatch";           // --profile
    std::optional<std::string> egressReady;     // --egress READY.json
    std::optional<std::string> policyPath;      // --policy FILE, for the cc-egress cc-wrap starts
    std::optional<std::string> approver;        // --approver CMD, for the cc-egress cc-wrap starts
    std::vector<std::string> intercept;         // --intercept HOST, for the cc-egress cc-wrap starts
    std::vector<std::string> credentials;       // --credential NAME@HOSTS=file:PATH|fd:N, for it too
    std::optional<std::string> upstreamCa;      // --upstream-ca FILE, for it too
    bool capture = false;                      // --capture: TCP and DNS of programs that ignore the proxy variables
    std::vector<int> capturePorts;             // --capture-port N, besides the allowlist's own ports
    std::optional<std::string> runAs;           // --run-as UID[:GID] (root only)
    std::vector<std::string> denyWrite;         // --deny-write
    bool dropFilenameDenies = false;
    bool noWriteSupervisor = false;  // --no-write-supervisor
    bool inheritEnv = false;
    bool print = false;                         // --print: the plan, nothing launched
    bool printText = false;                     // --print as text (--format text, or a terminal)
    bool printSeatbelt = false;                 // --print-seatbelt
    bool events = false;
    bool pty = false;
    double timeout = 0;                         // seconds; 0 = none
    double grace = 3;                           // --kill-after
    // Backend microvm (microvm.hpp): the accelerator (kvm unless tcg is asked
    // for; never a silent fallback), the guest kernel, the guest's memory.
    std::optional<std::string> vmAccel;         // --vm-accel kvm|tcg
    std::optional<std::string> vmKernel;        // --vm-kernel FILE
    std::optional<unsigned> vmMemory;           // --vm-memory MIB
    std::optional<std::string> vmBoot;          // --vm-boot snapshot|cold
    std::vector<std::string> command;
};

// Exit statuses (cc-wrap(1)): the child's own; 2 bad input; 125 cc-wrap
// failed before the child ran; 126/127 not executable / not found; 128+N
// killed by signal N (timeout: 137).
inline constexpr int exit_own_failure = 125;

int wrap(const WrapRequest& rq);

}  // namespace cc::sandbox
