// Diagnostics that exercise each mechanism for real instead of only
// looking for binaries: make a user namespace as the calling user, start bwrap
// in the namespaces cc-wrap uses, bridge through socat to a Unix socket, read
// the Landlock ABI, ask for seccomp user notification, reflink a file in the
// data directory, open /dev/kvm and look for a microvm-capable VM runtime.
//
//   auto report = cc::probe::diagnose(probe_result, {.data_dir = "/var/lib/cc"});
//   for (auto& c : report.checks) ...;  report.ok says whether the chosen backend can run.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/probe/probe.hpp"

namespace cc::probe {

// A check's outcome; to_string() gives its JSON spelling ("ok", "fail", "skip").
enum class CheckStatus { ok, fail, skip };
std::string_view to_string(CheckStatus s);

struct Check {
    std::string name;      // "userns", "bwrap", "socat", "landlock", "seccomp-notify", "reflink", "kvm", "vm-runtime"
    CheckStatus status = CheckStatus::fail;
    std::string detail;    // what was seen
    std::string hint;      // what to do about a failure (empty when ok)
    bool required = false; // needed by the backend this host would use
};

struct DiagnoseOptions {
    std::optional<std::string> data_dir;   // reflink is checked here (skipped without one)
    std::optional<spec::Backend> backend;  // checks required for this backend; default: what the probe chose
    int timeout_ms = 10000;                // per spawned check
};

struct Diagnosis {
    std::vector<Check> checks;
    bool ok = false;  // every required check passed (and a sandboxing backend was chosen)
    spec::Backend backend = spec::Backend::none;
};

// Fails only on bad input: an unreadable or missing data_dir (Errc::input).
Result<Diagnosis> diagnose(const ProbeResult& p, const DiagnoseOptions& opts);

nlohmann::json to_json(const Diagnosis& d);
std::string to_text(const Diagnosis& d);

}  // namespace cc::probe
