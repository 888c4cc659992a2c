// What confines this process when it runs inside a container (Docker,
// Podman, Kubernetes, LXC): the runtime, a seccomp filter, an AppArmor
// profile, a masked /proc, missing capabilities. cc-probe --diagnose reads it
// to say which restriction stops which layer, and the exact setting that
// lifts it, instead of a generic failure.
#pragma once

#include <string>
#include <vector>

namespace cc::probe {

struct Confinement {
    std::string runtime;       // docker, podman, kubernetes, lxc, containerd or "" (none found)
    bool seccomp = false;      // a seccomp filter is installed (Seccomp: 2)
    std::string apparmor;      // this process's AppArmor profile, "" when unconfined or none
    bool proc_masked = false;  // paths of /proc are masked (mounted over) or /proc/sys is read-only
    bool cap_sys_admin = false;
    std::vector<std::string> masked;  // the masked /proc paths seen
};

// From /proc/self/status, /proc/self/attr, /proc/self/mountinfo, /proc/self/cgroup,
// /.dockerenv, /run/.containerenv and the environment. `root`: a prefix for tests.
Confinement read_confinement(const std::string& root = "");

// One line: what confines this process ("" when nothing does).
std::string describe(const Confinement& c);

// The settings that lift what stops the layer `what` ("userns": a user
// namespace cannot be made; "hostname": the host name cannot be set; "proc":
// bubblewrap cannot mount a new /proc),
// for the runtime found (all runtimes when none was), or "".
std::string container_fix(const Confinement& c, const std::string& what);

}  // namespace cc::probe
