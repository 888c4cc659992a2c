// The microvm backend's host side outside the sandbox (microvm.hpp): finding
// the monitor, the guest kernel and cc-wrap-vm before planning, and writing
// the initramfs the plan names before launching.
#include "cc/sandbox/microvm.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/process.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cc/core/io.hpp"
#include "cc/sandbox/launch_parts.hpp"
#include "cc/sandbox/microvm_guest.hpp"
#include "cc/core/json_writer.hpp"

namespace cc::sandbox {

namespace {
namespace fs = std::filesystem;
namespace bp = boost::process;

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string first_line(const std::string& s) {
    auto nl = s.find('\n');
    return s.substr(0, nl);
}

// The monitor's version line, asked for once (qemu answers in ~20 ms).
std::string monitor_version(const std::string& exe) {
    try {
        bp::ipstream out;
        bp::child c(exe, "--version", bp::std_out > out, bp::std_err > bp::null, bp::std_in < bp::null);
        std::string line;
        std::getline(out, line);
        c.wait();
        return c.exit_code() == 0 ? line : std::string();
    } catch (const std::exception&) {
        return {};
    }
}

// Under TCG the guest's TSC runs at the host's; its rate saves the guest a
// calibration it cannot do on microvm. The kernel's own figure when it
// offers one, else the first "cpu MHz" line.
long host_tsc_khz() {
    std::string k = slurp("/sys/devices/system/cpu/cpu0/tsc_freq_khz");
    if (!k.empty()) return std::atol(k.c_str());
    std::istringstream in(slurp("/proc/cpuinfo"));
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("cpu MHz", 0) == 0) {
            auto c = line.find(':');
            if (c != std::string::npos) return static_cast<long>(std::atof(line.c_str() + c + 1) * 1000);
        }
    return 0;
}

void put32(std::string& out, unsigned v) {
    char b[9];
    std::snprintf(b, sizeof b, "%08X", v);
    out += b;
}

// One cpio "newc" entry (the format the kernel unpacks into its rootfs).
void cpio_entry(std::string& out, const std::string& name, unsigned mode, const std::string& data, unsigned ino) {
    out += "070701";
    for (unsigned v : {ino, mode, 0u, 0u, 1u, 0u, static_cast<unsigned>(data.size()), 0u, 0u, 0u, 0u,
                       static_cast<unsigned>(name.size() + 1), 0u})
        put32(out, v);
    out += name;
    out += '\0';
    while (out.size() % 4) out += '\0';
    out += data;
    while (out.size() % 4) out += '\0';
}

// A new file only the monitor's uid reads.
Status write_for_monitor(const std::string& path, const std::string& data, unsigned uid, unsigned gid, bool chown_to) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return io_error(path, "cannot create");
    if (cc::io::write_all(fd, data) != 0) {
        ::close(fd);
        return io_error(path, "cannot write");
    }
    if (chown_to && ::fchown(fd, uid, gid) != 0) {
        ::close(fd);
        return io_error(path, "cannot hand to the sandbox's uid");
    }
    ::close(fd);
    return ok();
}

}  // namespace

std::vector<std::string> vm_kernel_candidates() {
    std::vector<std::string> c;
    std::vector<std::string> dirs;
    if (const char* d = std::getenv("CC_MICROVM_DIR"); d && *d) dirs.push_back(d);
    // A build tree: build/cmd/cc-wrap/cc-wrap -> build/microvm (scripts/microvm-kernel.sh).
    fs::path self = fs::path(detail::self_exe()).parent_path();
    dirs.push_back((self.parent_path().parent_path() / "microvm").string());
    dirs.push_back(std::string(CC_DATADIR) + "/microvm");
    // vmlinux (uncompressed, PVH entry) first: no decompression in the guest.
    for (const auto& d : dirs)
        for (const char* name : {"vmlinux", "vmlinuz"}) c.push_back(d + "/" + name);
    return c;
}

std::string vm_kernel_helper() {
    // A build tree: scripts/microvm-kernel.sh BUILD/microvm (make does it).
    fs::path self = fs::path(detail::self_exe()).parent_path();
    fs::path build = self.parent_path().parent_path();
    if (fs::exists(build / "build.ninja")) return "make (scripts/microvm-kernel.sh " + (build / "microvm").string() + ")";
    return std::string(CC_LIBEXECDIR) + "/cc-vm-kernel";
}

Result<VmInput> resolve_vm(const VmOptions& o) {
    VmInput vm;
    if (o.accel != "kvm" && o.accel != "tcg")
        return input_error("--vm-accel", "unknown accelerator '" + o.accel + "' (kvm or tcg)");
    if (o.boot != "snapshot" && o.boot != "cold")
        return input_error("--vm-boot", "unknown boot '" + o.boot + "' (snapshot or cold)");
    vm.accel = o.accel;
    vm.memoryMiB = o.memoryMiB;
    if (vm.accel == "kvm") {
        int fd = ::open("/dev/kvm", O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return unavailable_error("backend microvm",
                                     std::string("KVM: /dev/kvm cannot be opened: ") + std::strerror(errno) +
                                         "; TCG (emulation) only when asked for, with --vm-accel tcg");
        ::close(fd);
    }
    if (o.monitor)
        vm.monitor = *o.monitor;
    else if (const char* m = std::getenv("CC_VM_MONITOR"); m && *m)
        vm.monitor = m;
    else
        vm.monitor = bp::search_path("qemu-system-x86_64").string();
    if (vm.monitor.empty() || ::access(vm.monitor.c_str(), X_OK) != 0)
        return unavailable_error("backend microvm",
                                 "no VM monitor: qemu-system-x86_64 not found (Debian package qemu-system-x86)");
    vm.monitorVersion = monitor_version(vm.monitor);
    if (vm.monitorVersion.empty())
        return unavailable_error("backend microvm", vm.monitor + " --version did not answer");

    std::vector<std::string> tried;
    if (o.kernel) {
        tried.push_back(*o.kernel);
        vm.kernel = *o.kernel;
        if (::access(vm.kernel.c_str(), R_OK) != 0)
            return unavailable_error("backend microvm", "--vm-kernel " + vm.kernel + ": " + std::strerror(errno));
    } else {
        for (const auto& c : vm_kernel_candidates()) {
            tried.push_back(c);
            if (::access(c.c_str(), R_OK) == 0) {
                vm.kernel = c;
                break;
            }
        }
    }
    if (vm.kernel.empty()) {
        std::string list;
        for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t;
        return unavailable_error(
            "backend microvm",
            "no guest kernel (looked for " + list + "; run " + vm_kernel_helper() +
                " once, as root, to fetch Debian's kernel, or give --vm-kernel FILE)");
    }
    fs::path dir = fs::path(vm.kernel).parent_path();
    vm.kernelVersion = first_line(slurp((dir / "version").string()));
    if (vm.kernelVersion.empty()) vm.kernelVersion = "unknown (no version file beside " + vm.kernel + ")";
    vm.modulesDir = (dir / "modules").string();
    std::istringstream order(slurp(vm.modulesDir + "/order"));
    for (std::string m; std::getline(order, m);)
        if (!m.empty()) {
            if (::access((vm.modulesDir + "/" + m).c_str(), R_OK) != 0)
                return unavailable_error("backend microvm", "guest module " + vm.modulesDir + "/" + m + " is missing");
            vm.modules.push_back(m);
        }
    // A kernel built for this backend (microvm-kernel.sh --build) has its
    // drivers built in, and says so: modules/builtin.
    vm.builtKernel = vm.modules.empty() && ::access((vm.modulesDir + "/builtin").c_str(), R_OK) == 0;
    if (vm.modules.empty() && !vm.builtKernel)
        return unavailable_error("backend microvm",
                                 "no guest modules beside the kernel (" + vm.modulesDir +
                                     "/order): the guest init needs virtio-mmio, virtio-serial and 9p");

    fs::path self = fs::path(detail::self_exe()).parent_path();
    for (const auto& c : {(self / "cc-wrap-vm").string(), (self.parent_path() / "cc-wrap" / "cc-wrap-vm").string(),
                          std::string(CC_LIBEXECDIR) + "/cc-wrap-vm"})
        if (::access(c.c_str(), X_OK) == 0) {
            vm.guestExe = c;
            break;
        }
    if (vm.guestExe.empty())
        return unavailable_error("backend microvm", "cc-wrap-vm (the guest init) not found next to cc-wrap or in " +
                                                        std::string(CC_LIBEXECDIR));
    if (vm.accel == "tcg") vm.tscKhz = host_tsc_khz();
    resolve_vm_snapshot(vm, o.boot == "snapshot");
    return vm;
}

Status write_initramfs(const VmPlan& vm, unsigned uid, unsigned gid, bool chown_to) {
    std::string out;
    unsigned ino = 1;
    for (const char* d : {"cc", "dev", "lib", "lib/modules", "newroot", "proc", "sys"})
        cpio_entry(out, d, 040755, "", ino++);
    std::string init = slurp(vm.in.guestExe);
    if (init.empty()) return io_error(vm.in.guestExe, "cannot read");
    cpio_entry(out, "init", 0100755, init, ino++);
    cpio_entry(out, "cc/boot.json", 0100644, cc::json::write(vm.boot), ino++);
    for (const auto& m : vm.in.modules) {
        std::string data = slurp(vm.in.modulesDir + "/" + m);
        if (data.empty()) return io_error(vm.in.modulesDir + "/" + m, "cannot read");
        cpio_entry(out, "lib/modules/" + m, 0100644, data, ino++);
    }
    cpio_entry(out, "TRAILER!!!", 0, "", 0);
    if (auto s = write_for_monitor(vm.initrd, out, uid, gid, chown_to); !s) return s;
    if (vm.in.boot == "template") {
        // The template boot saves the guest here (the monitor's uid writes it).
        if (::mkdir(vm.saveDir.c_str(), 0700) != 0) return io_error(vm.saveDir, "cannot create");
        if (chown_to && ::chown(vm.saveDir.c_str(), uid, gid) != 0)
            return io_error(vm.saveDir, "cannot hand to the sandbox's uid");
        return ok();
    }
    // The plan holds the command's environment: readable only by the uid the
    // monitor runs as.
    nlohmann::json plan = vm.guest;
    if (!vm.seccompBpf.empty()) plan["seccomp"] = vm_hex(vm.seccompBpf);
    return write_for_monitor(vm.planFile, cc::json::write(plan), uid, gid, chown_to);
}

}  // namespace cc::sandbox
