// Which sandbox backend does this host offer? The probe is a pure
// function of HostFacts, so every row of the probe table (macOS, Linux with or
// without bwrap/socat, WSL2, other systems) is unit-tested without that host.
//
//   auto facts = cc::probe::real_host();                       // or a fake in tests
//   auto sw = cc::probe::resolve_switch(flag, getenv("CC_SERVER_SANDBOX"));
//   cc::probe::ProbeResult p = cc::probe::probe(*facts, *sw);
//   std::cout << p.line << '\n';                                // the start-up line
//   auto choice = cc::probe::choose_backend(p, requested);      // never silent
//
// Looking things up here never starts a process: PATH lookups, /proc reads and
// one ioctl on /dev/kvm. Real exercising of the mechanisms is diagnose.hpp.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/spec/spec.hpp"

namespace cc::probe {

// What the probe needs to know about a host.
class HostFacts {
public:
    virtual ~HostFacts() = default;
    virtual std::string kernel_name() const = 0;        // uname -s: "Linux", "Darwin", ...
    virtual std::string kernel_release() const = 0;     // uname -r ("...microsoft-standard-WSL2" on WSL2)
    virtual std::optional<std::string> find_program(const std::string& name) const = 0;  // on PATH
    virtual std::optional<std::string> read_file(const std::string& path) const = 0;
    // Can /dev/kvm be opened read-write and does KVM_GET_API_VERSION answer 12?
    // Returns a human detail either way.
    virtual bool kvm_usable(std::string& detail) const = 0;
    // Landlock's ABI version (landlock_create_ruleset with the VERSION flag),
    // 0 when the kernel has none or it is disabled.
    virtual int landlock_abi() const { return 0; }
};

std::unique_ptr<HostFacts> real_host();

// --sandbox / CC_SERVER_SANDBOX. An opt-out, never a demand.
struct SandboxSwitch {
    bool on = true;
    std::string source = "default";  // "flag", "env" or "default"
};
// flag beats env; a value other than on/off is an input error naming where it came from.
Result<SandboxSwitch> resolve_switch(const std::optional<std::string>& flag,
                                     const std::optional<std::string>& env);

struct Microvm {
    bool kvmUsable = false;
    std::string kvmDetail;
    std::vector<std::string> runtimes;  // VM runtimes found on PATH (names)
    bool available = false;             // kvm usable and a runtime present
    std::string reason;                 // why not, when not
};

// The kernel features cc-wrap's layers are built from (Linux only).
struct KernelLayers {
    bool probed = false;
    bool userNamespaces = false;     // user.max_user_namespaces > 0
    bool seccomp = false;            // seccomp filters that return an errno
    bool seccompUserNotif = false;   // SECCOMP_RET_USER_NOTIF
    // User notification with descriptor injection sent atomically (Linux
    // 5.14) and killable-only waits (5.19): what cc-wrap's write supervisor needs.
    bool writeSupervisor = false;
    int landlockAbi = 0;             // 0: none
    std::vector<std::string> native;  // the layers a native launch has in force here
    std::vector<std::string> missing; // layers cc-wrap needs that the kernel lacks (launches fail, 125)
};

struct ProbeResult {
    std::string platform;        // "linux", "wsl2", "macos", or the kernel name lower-cased
    bool wsl = false;
    SandboxSwitch sandbox;
    spec::Backend backend = spec::Backend::none;  // what an unspecified launch gets
    bool available = false;      // is the native backend offered on this host
    std::string mechanism;       // "bubblewrap", "seatbelt" or ""
    std::string note;            // "namespace isolation, no kernel boundary", or why not
    bool requiresInstall = false;
    std::vector<std::string> missing;   // package names
    std::string installHint;
    std::optional<std::string> bwrap, socat, sandboxExec;  // paths found
    Microvm microvm;
    KernelLayers layers;
    std::string line;            // the start-up line
};

// `microvm` false skips the microvm part (KVM and a PATH search for five VM
// runtimes): cc-wrap asks for it only when microvm was requested, since an
// unrequested backend never falls to microvm. The result then says
// microvm was not probed.
ProbeResult probe(const HostFacts& host, const SandboxSwitch& sw, bool microvm = true);

nlohmann::json to_json(const ProbeResult& p);
// Read back what `cc-probe --json` wrote (cc-wrap --probe FILE).
Result<ProbeResult> from_json(const nlohmann::json& j);
Result<ProbeResult> load(const std::string& path);

// Which backend a launch really gets.
struct BackendChoice {
    spec::Backend backend = spec::Backend::none;
    bool requested = false;  // was a backend asked for explicitly
    std::string log;         // the line saying what happened (always set)
};
// `requested` is an explicit backend (nullopt: unspecified). An explicit
// backend the host cannot give is an Errc::unavailable error naming why;
// only an unspecified one falls back, and says so in `log`.
Result<BackendChoice> choose_backend(const ProbeResult& p, std::optional<spec::Backend> requested);

}  // namespace cc::probe
