// A container runtime's seccomp profile (Docker's or Podman's JSON format)
// made to let cc-wrap's sandbox start inside the container: the calls
// bubblewrap and cc-wrap make are allowed whatever the container's
// capabilities. cc-probe --container-seccomp writes it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::probe {

// The calls a runtime's default profile refuses to a process without
// CAP_SYS_ADMIN (or refuses with some of their flags) that the sandbox
// needs: clone and unshare with namespace flags, mount, umount2 and
// pivot_root (bubblewrap's new root), sethostname (its host name), setns
// (cc-wrap creating the proxy listeners in the sandbox's network namespace)
// and Landlock's three calls. Each is still checked by the kernel: they act
// only inside a user namespace the caller made.
const std::vector<std::string>& container_sandbox_calls();

// `base` with those calls taken out of every other rule (conditional on
// capabilities, on arguments or refusing them) and added to one
// unconditional allow rule; every other rule, and the default action, as
// given. A document that is not a seccomp profile is an input error.
Result<nlohmann::json> container_seccomp_profile(const nlohmann::json& base);

}  // namespace cc::probe
