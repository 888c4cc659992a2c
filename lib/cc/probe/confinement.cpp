#include "cc/probe/confinement.hpp"
#include "cc/core/io.hpp"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace cc::probe {

namespace {

// A file's text, or "" when it is not there or cannot be read.
std::string slurp(const std::string& path) {
    auto text = io::read_input(path);
    return text ? *text : std::string();
}

std::string field(const std::string& status, const std::string& key) {
    auto p = status.find("\n" + key + ":");
    if (p == std::string::npos) return "";
    p += key.size() + 2;
    auto e = status.find('\n', p);
    std::string v = status.substr(p, e == std::string::npos ? std::string::npos : e - p);
    auto b = v.find_first_not_of(" \t");
    return b == std::string::npos ? "" : v.substr(b);
}

}  // namespace

Confinement read_confinement(const std::string& root) {
    Confinement c;
    const std::string status = "\n" + slurp(root + "/proc/self/status");
    c.seccomp = field(status, "Seccomp") == "2";
    const std::string capeff = field(status, "CapEff");
    if (!capeff.empty()) {
        unsigned long long caps = std::strtoull(capeff.c_str(), nullptr, 16);
        c.cap_sys_admin = caps & (1ULL << 21);
    }
    std::string aa = slurp(root + "/proc/self/attr/apparmor/current");
    if (aa.empty()) aa = slurp(root + "/proc/self/attr/current");
    while (!aa.empty() && (aa.back() == '\n' || aa.back() == '\0')) aa.pop_back();
    if (!aa.empty() && aa != "unconfined") c.apparmor = aa;
    // Masked /proc: a runtime mounts /dev/null or an empty tmpfs over paths
    // such as /proc/kcore and /proc/acpi, and /proc/sys read-only.
    std::istringstream mi(slurp(root + "/proc/self/mountinfo"));
    for (std::string line; std::getline(mi, line);) {
        std::istringstream l(line);
        std::string id, parent, dev, rootdir, point, opts;
        if (!(l >> id >> parent >> dev >> rootdir >> point >> opts)) continue;
        if (point.rfind("/proc/", 0) != 0) continue;
        if (point == "/proc/sys" || point == "/proc/sysrq-trigger" || point == "/proc/irq" || point == "/proc/bus" ||
            point == "/proc/fs") {
            if (opts.rfind("ro", 0) == 0) c.masked.push_back(point + " (read-only)");
        } else {
            c.masked.push_back(point);
        }
    }
    c.proc_masked = !c.masked.empty();
    const std::string cgroup = slurp(root + "/proc/self/cgroup");
    if (std::getenv("KUBERNETES_SERVICE_HOST") || cgroup.find("kubepods") != std::string::npos) c.runtime = "kubernetes";
    else if (::access((root + "/run/.containerenv").c_str(), F_OK) == 0 || cgroup.find("libpod") != std::string::npos)
        c.runtime = "podman";
    else if (::access((root + "/.dockerenv").c_str(), F_OK) == 0 || cgroup.find("docker") != std::string::npos)
        c.runtime = "docker";
    else if (cgroup.find("lxc") != std::string::npos) c.runtime = "lxc";
    else if (cgroup.find("containerd") != std::string::npos) c.runtime = "containerd";
    return c;
}

std::string describe(const Confinement& c) {
    std::string d;
    auto add = [&](const std::string& s) { d += (d.empty() ? "" : "; ") + s; };
    if (!c.runtime.empty()) add("inside " + c.runtime);
    if (c.seccomp) add("a seccomp filter (Seccomp: 2)");
    if (!c.apparmor.empty()) add("AppArmor profile " + c.apparmor);
    if (c.proc_masked) {
        std::string m;
        for (std::size_t i = 0; i < c.masked.size() && i < 4; ++i) m += (m.empty() ? "" : ", ") + c.masked[i];
        add("masked /proc (" + m + (c.masked.size() > 4 ? ", ..." : "") + ")");
    }
    if (!c.runtime.empty() && !c.cap_sys_admin) add("no CAP_SYS_ADMIN");
    return d;
}

std::string container_fix(const Confinement& c, const std::string& what) {
    const bool any = c.runtime.empty();
    std::string fix;
    auto add = [&](const std::string& s) { fix += (fix.empty() ? "" : "; ") + s; };
    if (what == "userns" || what == "hostname") {
        if (c.seccomp) {
            // The runtime's own default profile with only the sandbox's calls
            // added (cc-probe --container-seccomp), not the filter lifted whole.
            const std::string make =
                "cc-probe --container-seccomp DEFAULT.json > cc-seccomp.json (DEFAULT.json: the runtime's default "
                "profile, /usr/share/containers/seccomp.json for Podman, moby's profiles/seccomp/default.json for "
                "Docker)";
            if (any || c.runtime == "docker" || c.runtime == "podman")
                add("a seccomp profile that allows the sandbox's " + std::string(what == "hostname" ? "sethostname" : "unshare, clone and mount") +
                    ": " + make + ", then docker/podman run --security-opt seccomp=cc-seccomp.json");
            if (any || c.runtime == "kubernetes")
                add("Kubernetes: the same profile on the node, securityContext.seccompProfile {type: Localhost, "
                    "localhostProfile: cc-seccomp.json}");
        }
        if (!c.apparmor.empty() && what == "userns") {
            if (any || c.runtime == "docker" || c.runtime == "podman")
                add("AppArmor profile " + c.apparmor + " refuses mounts in a new namespace: --security-opt apparmor=unconfined "
                    "(or a profile that allows userns and mount)");
            if (any || c.runtime == "kubernetes")
                add("Kubernetes: securityContext.appArmorProfile {type: Unconfined}");
        }
    } else if (what == "proc") {
        if (c.proc_masked) {
            if (any || c.runtime == "docker") add("docker run --security-opt systempaths=unconfined (unmasks /proc)");
            if (any || c.runtime == "podman") add("podman run --security-opt unmask=ALL");
            if (any || c.runtime == "kubernetes")
                add("Kubernetes: securityContext.procMount: Unmasked, which needs hostUsers: false (a user namespace "
                    "for the pod)");
        }
    }
    return fix;
}

}  // namespace cc::probe
