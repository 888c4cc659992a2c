// The microvm backend: the command runs in a VM (qemu -M microvm, a Debian
// guest kernel, this project's static init) started inside the native
// sandbox. Layers, outermost first: bubblewrap's namespaces, mounts and
// seccomp around the VM monitor; the guest kernel around the command.
//
//   resolve (sys):  auto vm = resolve_vm(opts);            // monitor, kernel, modules, cc-wrap-vm
//   plan (pure):    in.vm = *vm; build_plan(in, host)     // plan.vm, the monitor's argv
//   execute (sys):  write_initramfs(plan)                  // /init, the modules, /cc/boot.json; the plan file
//
// Boot: the guest boots generically, then waits for its session's plan,
// which the host step sends over the status port. A snapshot of a guest
// waiting there (saved once per monitor, kernel, init and memory size by a
// template boot that runs no command) is restored for each later run, with
// the session's own binds and proxies attached; the plan brings fresh
// random bytes and the time.
//
// Filesystem: the monitor exports the host step's whole view (bubblewrap's
// root: the system directories and the spec's binds, read-only where the
// plan says so, secrets masked) over one virtio-9p device; the guest mounts
// it as its root. Read-only is enforced by the host's mounts, so a write
// there fails in the guest with EROFS. Network: user-mode networking with
// restrict=on inside bubblewrap's empty network namespace; only the two
// proxy addresses (10.0.2.100:3128 and :1080) are forwarded, to the
// session's cc-egress listeners on the sandbox's loopback.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::sandbox {

struct VmInput {
    std::string accel = "kvm";         // "kvm" (default) or "tcg" (only when asked for)
    std::string monitor;               // host path of qemu-system-x86_64
    std::string monitorVersion;        // its --version first line
    std::string kernel;                // host path of the guest kernel image
    std::string kernelVersion;         // its release (DIR/version next to it)
    std::string modulesDir;            // DIR/modules
    std::vector<std::string> modules;  // file names, dependencies first (DIR/modules/order)
    // A kernel built for this backend (DIR/modules/builtin): its drivers built
    // in, no ACPI; the monitor describes the devices on the command line.
    bool builtKernel = false;
    std::string guestExe;              // cc-wrap-vm: the host step and the guest's /init
    unsigned memoryMiB = 256;
    unsigned cpus = 1;
    long tscKhz = 0;  // TCG: the host's TSC rate, so the guest skips calibrating it
    // How the guest starts: "restore" (from `snapshot`, a file in the
    // snapshot directory), "save" (no usable snapshot yet: a template boot
    // saves one, then the run restores it), "cold" (a full boot: asked for,
    // or snapshots cannot be had, bootWhy says why), and "template" (the
    // template boot itself: no command, the guest saved to the plan's save
    // directory).
    std::string boot = "cold";
    std::string bootWhy;
    std::string snapshotDir;  // where snapshots are kept ("" with cold)
    std::string snapshot;     // restore: the snapshot file; save: where it goes
    std::string snapshotKey;  // what the snapshot must match (monitor, kernel, modules, init, memory, ...)
};

struct VmPlan {
    VmInput in;
    std::string initrd;    // host path, made in the runtime directory at launch
    std::string cmdline;   // the guest kernel's
    nlohmann::json boot;   // /cc/boot.json inside the initramfs: the generic boot (modules, network)
    nlohmann::json guest;  // the session's plan: the host step sends it when the guest is ready
    std::string planFile;  // host path of `guest` (with the filter), made in the runtime directory at launch
    std::string saveDir;   // template: host directory the snapshot is saved into
    std::vector<std::string> monitorArgv;
    std::string share = "virtio-9p";
    std::string why;
    // The native backend's seccomp program (BPF), which the guest init
    // installs before it runs the command (/cc/seccomp.bpf in the
    // initramfs); filled at launch, empty when the plan has no filter.
    std::string seccompBpf;
};

// The proxies' addresses inside the guest (user-mode network).
inline constexpr const char* vm_proxy_host = "10.0.2.100";
inline constexpr const char* vm_guest_address = "10.0.2.15";
// Where the host step finds the VM's files inside the sandbox.
inline constexpr const char* vm_guest_dir = "/run/cc/vm";
// Where the guest's own tree is assembled in the VM monitor's view: the 9p
// share exports this directory, never the monitor's root. Not under any of
// the monitor's writable mounts (/run, /tmp): only its own copies are.
inline constexpr const char* vm_guest_root = "/cc-guest";

struct VmOptions {
    std::string accel = "kvm";
    std::optional<std::string> kernel;   // --vm-kernel FILE (DIR/modules and DIR/version beside it)
    std::optional<std::string> monitor;  // CC_VM_MONITOR, else qemu-system-x86_64 on PATH
    unsigned memoryMiB = 256;
    std::string boot = "snapshot";  // --vm-boot snapshot|cold
};

// Finds what a launch needs; unavailable (exit 125) with the reason when
// something is missing. Never falls back to another accelerator.
Result<VmInput> resolve_vm(const VmOptions& o);

// The default places a guest kernel is looked for: next to the build
// (build/microvm), then the data directory (share/cc/microvm).
std::vector<std::string> vm_kernel_candidates();
// The command that puts a guest kernel where vm_kernel_candidates() looks:
// LIBEXECDIR/cc-vm-kernel when installed, the make step in a build tree.
std::string vm_kernel_helper();

// The initramfs (cpio newc, uncompressed): /init, /cc/boot.json, the
// modules; the same bytes for every session (nothing of the session is in
// it), so a snapshot of a guest booted from it serves them all. And the
// session's plan file beside it (the guest's part: argv, environment, uid,
// filter), readable only by the uid the monitor runs as.
Status write_initramfs(const VmPlan& vm, unsigned uid, unsigned gid, bool chown_to);

// Snapshots (microvm_snapshot.cpp). The directory: CC_VM_SNAPSHOT_DIR, else
// /var/cache/cc/microvm for root, else $XDG_CACHE_HOME/cc/microvm or
// ~/.cache/cc/microvm; made 0700, and used only when it is a directory of
// this user's that nobody else can write. Fills vm.boot ("restore" when a
// snapshot for this key is there, "save" when not, "cold" with bootWhy when
// the directory cannot be used).
void resolve_vm_snapshot(VmInput& vm, bool want);
// Puts a template boot's snapshot (`saved`, in the runtime directory) into
// the snapshot directory under vm.snapshotKey: a private copy, renamed into
// place. Returns the file's path.
Result<std::string> install_vm_snapshot(const VmInput& vm, const std::string& saved);

nlohmann::json to_json(const VmPlan& vm);

}  // namespace cc::sandbox
