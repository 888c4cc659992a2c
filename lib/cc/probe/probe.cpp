#include "cc/probe/probe.hpp"

#include <fcntl.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/landlock.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cc/core/io.hpp"
#include "cc/core/json_reader.hpp"

namespace cc::probe {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

class RealHost : public HostFacts {
public:
    RealHost() { ::uname(&uts_); }
    std::string kernel_name() const override { return uts_.sysname; }
    std::string kernel_release() const override { return uts_.release; }
    std::optional<std::string> find_program(const std::string& name) const override {
        const char* path = std::getenv("PATH");
        std::string p = path ? path : "/usr/bin:/bin";
        std::size_t start = 0;
        while (start <= p.size()) {
            std::size_t end = p.find(':', start);
            if (end == std::string::npos) end = p.size();
            std::string dir = p.substr(start, end - start);
            if (dir.empty()) dir = ".";
            std::string cand = dir + "/" + name;
            struct stat st {};
            if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0)
                return cand;
            start = end + 1;
        }
        return std::nullopt;
    }
    std::optional<std::string> read_file(const std::string& path) const override {
        std::ifstream f(path);
        if (!f) return std::nullopt;
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }
    int landlock_abi() const override {
        long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
        return v > 0 ? static_cast<int>(v) : 0;
    }
    bool kvm_usable(std::string& detail) const override {
        int fd = ::open("/dev/kvm", O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            detail = e == ENOENT ? "/dev/kvm does not exist (no hardware virtualisation exposed to this host)"
                                 : std::string("/dev/kvm cannot be opened read-write: ") + std::strerror(e);
            return false;
        }
        int version = ::ioctl(fd, KVM_GET_API_VERSION, 0);
        ::close(fd);
        if (version != KVM_API_VERSION) {
            detail = "/dev/kvm answered KVM_GET_API_VERSION with " + std::to_string(version) + ", expected 12";
            return false;
        }
        detail = "/dev/kvm opened read-write, KVM API version 12";
        return true;
    }

private:
    struct utsname uts_ {};
};

// The distribution's install command, from /etc/os-release (ID and ID_LIKE).
std::string install_command(const HostFacts& host, const std::vector<std::string>& pkgs) {
    std::string ids;
    if (auto osr = host.read_file("/etc/os-release")) {
        std::istringstream in(*osr);
        for (std::string line; std::getline(in, line);)
            if (line.rfind("ID=", 0) == 0 || line.rfind("ID_LIKE=", 0) == 0) ids += " " + lower(line.substr(line.find('=') + 1));
    }
    std::string cmd = "sudo apt-get install";
    if (ids.find("fedora") != std::string::npos || ids.find("rhel") != std::string::npos || ids.find("centos") != std::string::npos)
        cmd = "sudo dnf install";
    else if (ids.find("arch") != std::string::npos)
        cmd = "sudo pacman -S";
    else if (ids.find("alpine") != std::string::npos)
        cmd = "sudo apk add";
    else if (ids.find("suse") != std::string::npos)
        cmd = "sudo zypper install";
    for (const auto& p : pkgs) cmd += " " + p;
    return cmd;
}

}  // namespace

std::unique_ptr<HostFacts> real_host() { return std::make_unique<RealHost>(); }

Result<SandboxSwitch> resolve_switch(const std::optional<std::string>& flag, const std::optional<std::string>& env) {
    auto parse = [](const std::string& v, const std::string& where, const std::string& source) -> Result<SandboxSwitch> {
        if (v == "on") return SandboxSwitch{true, source};
        if (v == "off") return SandboxSwitch{false, source};
        return input_error(where, "must be 'on' or 'off', not '" + v + "'");
    };
    if (flag) return parse(*flag, "--sandbox", "flag");
    if (env && !env->empty()) return parse(*env, "CC_SERVER_SANDBOX", "env");
    return SandboxSwitch{};
}

namespace {

void probe_microvm(const HostFacts& host, const std::string& kernel, Microvm& m) {
    m.kvmUsable = host.kvm_usable(m.kvmDetail);
    for (const char* rt : {"qemu-system-x86_64", "qemu-system-aarch64", "firecracker", "cloud-hypervisor", "krunvm"})
        if (host.find_program(rt)) m.runtimes.push_back(rt);
    m.available = kernel == "Linux" && m.kvmUsable && !m.runtimes.empty();
    if (m.available) return;
    if (kernel != "Linux")
        m.reason = "microvm needs Linux with KVM";
    else if (!m.kvmUsable)
        m.reason = m.kvmDetail;
    else
        m.reason = "no VM runtime on PATH (qemu-system-x86_64, firecracker, cloud-hypervisor)";
}

}  // namespace

namespace {

KernelLayers kernel_layers(const HostFacts& host) {
    KernelLayers k;
    k.probed = true;
    auto num = [&](const char* path) -> long {
        auto t = host.read_file(path);
        if (!t) return -1;
        try { return std::stol(*t); } catch (...) { return -1; }
    };
    k.userNamespaces = num("/proc/sys/user/max_user_namespaces") > 0;
    if (auto a = host.read_file("/proc/sys/kernel/seccomp/actions_avail")) {
        std::istringstream in(*a);
        std::string w;
        while (in >> w) {
            if (w == "errno") k.seccomp = true;
            if (w == "user_notif") k.seccompUserNotif = true;
        }
    }
    k.landlockAbi = host.landlock_abi();
    {
        int major = 0, minor = 0;
        std::sscanf(host.kernel_release().c_str(), "%d.%d", &major, &minor);
        k.writeSupervisor = k.seccompUserNotif && (major > 5 || (major == 5 && minor >= 19));
    }
    if (k.userNamespaces) k.native = {"user-ns", "mount-ns", "pid-ns", "ipc-ns", "uts-ns", "net-ns"};
    else k.missing.push_back("user-ns");
    if (k.seccomp) k.native.push_back("seccomp");
    else k.missing.push_back("seccomp");
    if (k.writeSupervisor) k.native.push_back("write-supervisor");
    return k;
}

}  // namespace

ProbeResult probe(const HostFacts& host, const SandboxSwitch& sw, bool microvm) {
    ProbeResult p;
    p.sandbox = sw;
    std::string kernel = host.kernel_name();
    std::string release = lower(host.kernel_release());
    const std::string kNote = "namespace isolation, no kernel boundary";

    if (kernel == "Darwin") {
        p.platform = "macos";
        p.sandboxExec = host.find_program("sandbox-exec");
        if (!p.sandboxExec) {
            // /usr/bin is not always on a server's PATH; sandbox-exec lives there on every macOS.
            if (host.read_file("/usr/bin/sandbox-exec")) p.sandboxExec = "/usr/bin/sandbox-exec";
        }
        p.available = p.sandboxExec.has_value();
        p.mechanism = "seatbelt";
        p.note = p.available ? kNote : "sandbox-exec was not found (it ships with macOS in /usr/bin)";
    } else if (kernel == "Linux") {
        bool wsl = release.find("microsoft") != std::string::npos || release.find("wsl") != std::string::npos;
        p.wsl = wsl;
        // WSL1 translates syscalls and has no namespaces; only WSL2 runs a real kernel.
        bool wsl1 = wsl && release.find("wsl2") == std::string::npos && release.find("microsoft-standard") == std::string::npos;
        p.platform = wsl ? (wsl1 ? "wsl1" : "wsl2") : "linux";
        if (wsl1) {
            p.note = "native sandbox is not offered on this platform (WSL1 has no Linux namespaces; use WSL2)";
        } else {
            p.mechanism = "bubblewrap";
            p.layers = kernel_layers(host);
            p.bwrap = host.find_program("bwrap");
            p.socat = host.find_program("socat");
            if (!p.bwrap) p.missing.push_back("bubblewrap");
            if (!p.socat) p.missing.push_back("socat");
            p.available = p.missing.empty();
            if (p.available) {
                p.note = kNote;
            } else {
                p.requiresInstall = true;
                p.installHint = install_command(host, p.missing);
                std::string names;
                for (const auto& m : p.missing) names += (names.empty() ? "" : " and ") + m;
                p.note = names + " missing";
            }
        }
    } else {
        p.platform = lower(kernel.empty() ? "unknown" : kernel);
        p.note = "native sandbox is not offered on this platform";
    }

    // microvm: the only backend with a kernel boundary.
    if (microvm) probe_microvm(host, kernel, p.microvm);
    else p.microvm.reason = "not probed (microvm was not asked for)";

    p.backend = (sw.on && p.available) ? spec::Backend::native : spec::Backend::none;
    if (!sw.on)
        p.line = sw.source == "env" ? "agent sandbox DISABLED by CC_SERVER_SANDBOX=off"
                                    : "agent sandbox DISABLED by --sandbox off";
    else if (p.available)
        p.line = "agent sandbox ON (" + p.mechanism + ": " + p.note + ")";
    else if (p.requiresInstall)
        p.line = "no OS-native agent sandbox on this host (" + p.note + "; install with: " + p.installHint + ")";
    else
        p.line = "no OS-native agent sandbox on this host (" + p.note + ")";
    return p;
}

nlohmann::json to_json(const ProbeResult& p) {
    using nlohmann::json;
    auto opt = [](const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); };
    return json{
        {"platform", p.platform},
        {"wsl", p.wsl},
        {"sandbox", {{"on", p.sandbox.on}, {"source", p.sandbox.source}}},
        {"backend", std::string(spec::to_string(p.backend))},
        {"available", p.available},
        {"mechanism", p.mechanism},
        {"note", p.note},
        {"requiresInstall", p.requiresInstall},
        {"missing", p.missing},
        {"installHint", p.installHint},
        {"programs", {{"bwrap", opt(p.bwrap)}, {"socat", opt(p.socat)}, {"sandboxExec", opt(p.sandboxExec)}}},
        {"microvm",
         {{"available", p.microvm.available},
          {"kvmUsable", p.microvm.kvmUsable},
          {"kvmDetail", p.microvm.kvmDetail},
          {"runtimes", p.microvm.runtimes},
          {"reason", p.microvm.reason}}},
        {"layers",
         {{"probed", p.layers.probed},
          {"userNamespaces", p.layers.userNamespaces},
          {"seccomp", p.layers.seccomp},
          {"seccompUserNotif", p.layers.seccompUserNotif},
          {"writeSupervisor", p.layers.writeSupervisor},
          {"landlockAbi", p.layers.landlockAbi},
          {"native", p.layers.native},
          {"missing", p.layers.missing}}},
        {"line", p.line},
    };
}

Result<ProbeResult> from_json(const nlohmann::json& j) {
    ProbeResult p;
    std::string backend;
    json::ObjectReader r(j, "");
    r.required("platform", p.platform);
    r.optional("wsl", p.wsl);
    r.optional_value("sandbox", [&](const nlohmann::json& s, const std::string& path) -> Status {
        json::ObjectReader rs(s, path);
        rs.optional("on", p.sandbox.on);
        rs.optional("source", p.sandbox.source);
        if (auto e = rs.finish()) return *e;
        return ok();
    });
    r.required("backend", backend);
    r.optional("available", p.available);
    r.optional("mechanism", p.mechanism);
    r.optional("note", p.note);
    r.optional("requiresInstall", p.requiresInstall);
    r.optional("missing", p.missing);
    r.optional("installHint", p.installHint);
    r.optional_value("programs", [&](const nlohmann::json& s, const std::string& path) -> Status {
        json::ObjectReader rs(s, path);
        rs.optional("bwrap", p.bwrap);
        rs.optional("socat", p.socat);
        rs.optional("sandboxExec", p.sandboxExec);
        if (auto e = rs.finish()) return *e;
        return ok();
    });
    r.optional_value("microvm", [&](const nlohmann::json& s, const std::string& path) -> Status {
        json::ObjectReader rs(s, path);
        rs.optional("available", p.microvm.available);
        rs.optional("kvmUsable", p.microvm.kvmUsable);
        rs.optional("kvmDetail", p.microvm.kvmDetail);
        rs.optional("runtimes", p.microvm.runtimes);
        rs.optional("reason", p.microvm.reason);
        if (auto e = rs.finish()) return *e;
        return ok();
    });
    r.optional_value("layers", [&](const nlohmann::json& s, const std::string& path) -> Status {
        json::ObjectReader rs(s, path);
        rs.optional("probed", p.layers.probed);
        rs.optional("userNamespaces", p.layers.userNamespaces);
        rs.optional("seccomp", p.layers.seccomp);
        rs.optional("seccompUserNotif", p.layers.seccompUserNotif);
        rs.optional("writeSupervisor", p.layers.writeSupervisor);
        rs.optional("landlockAbi", p.layers.landlockAbi);
        rs.optional("native", p.layers.native);
        rs.optional("missing", p.layers.missing);
        if (auto e = rs.finish()) return *e;
        return ok();
    });
    r.optional("line", p.line);
    r.accept("diagnostics");    // cc-probe --json --diagnose adds its checks
    r.accept("backendChoice");  // cc-probe --json adds the backend a launch would get
    if (auto e = r.finish()) return *e;
    auto b = spec::parse_backend_flag(backend);
    if (!b) return input_error("backend", "unknown backend '" + backend + "'");
    p.backend = *b;
    return p;
}

Result<ProbeResult> load(const std::string& path) {
    auto text = io::read_input(path);
    if (!text) return text.error();
    std::string subject = path == "-" ? "stdin" : "'" + path + "'";
    auto doc = json::parse(*text, subject);
    if (!doc) return doc.error();
    auto p = from_json(*doc);
    if (!p) {
        Error e = p.error();
        e.subject = subject + ": " + e.subject;
        return e;
    }
    return p;
}

Result<BackendChoice> choose_backend(const ProbeResult& p, std::optional<spec::Backend> requested) {
    using spec::Backend;
    BackendChoice c;
    c.requested = requested.has_value();
    if (!requested) {
        if (!p.sandbox.on) {
            c.backend = Backend::none;
            c.log = p.line + "; running without a sandbox (backend none)";
        } else if (p.available) {
            c.backend = Backend::native;
            c.log = "no backend requested: falling to native (" + p.mechanism +
                    "); microvm, the only backend with a kernel boundary, is used only when asked for";
        } else {
            c.backend = Backend::none;
            c.log = p.line + "; running without a sandbox (backend none)";
        }
        return c;
    }
    switch (*requested) {
        case Backend::none:
            c.backend = Backend::none;
            c.log = "backend none requested: no sandbox";
            return c;
        case Backend::native:
            if (!p.sandbox.on)
                return unavailable_error("backend native", "requested, but " + p.line);
            if (!p.available)
                return unavailable_error("backend native", "requested, but this host does not offer it: " + p.note +
                                                               (p.installHint.empty() ? "" : " (" + p.installHint + ")"));
            c.backend = Backend::native;
            c.log = "backend native (" + p.mechanism + ") as requested";
            return c;
        case Backend::microvm:
            if (!p.microvm.available)
                return unavailable_error("backend microvm",
                                         "requested, but this host cannot boot a VM: " + p.microvm.reason);
            c.backend = Backend::microvm;
            c.log = "backend microvm as requested";
            return c;
    }
    return c;
}

}  // namespace cc::probe
