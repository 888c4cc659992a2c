// The microvm backend's plan (microvm.hpp): the native plan around the VM
// monitor, with the VM's files bound in and the command replaced by the host
// step; the command itself, its environment, working directory and uid go to
// the guest init as /cc/plan.json. Pure: no file is read here.
#include "cc/sandbox/microvm.hpp"

#include "cc/sandbox/microvm_guest.hpp"
#include "cc/sandbox/plan_builder.hpp"

namespace cc::sandbox {
namespace detail {

namespace {

std::string guest_file(const char* name) {
    return std::string(vm_guest_dir) + "/" + name;
}

// The guest kernel's command line. quiet: every console line costs time
// under TCG; panic=-1 turns a guest panic into a reset, which -no-reboot
// turns into the monitor's exit (the host step then reports 125). Debian's
// initcalls the guest never uses are skipped (the slowest under TCG that
// nothing in the guest needs, from initcall_debug): kprobe tracing's set-up,
// the KDF108 and BLAKE2s self-tests, the block tracer, trace_printk's
// tracefs file, the slab caches' sysfs directory, the function graph
// tracer's files, hibernation's /dev/snapshot, and the kernel's built-in
// certificates (the guest's modules carry no signature: microvm-kernel.sh
// strips them). IPv6 is off (ipv6.disable=1): the guest's one link is IPv4,
// to the proxies.
std::string kernel_cmdline(const VmInput& vm) {
    std::string c =
        "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init cryptomgr.notests random.trust_cpu=on "
        "no_timer_check 8250.nr_uarts=1 ipv6.disable=1 initcall_blacklist=init_kprobe_trace,crypto_kdf108_init,"
        "blake2s_mod_init,init_blk_tracer,init_trace_printk_function_export,slab_sysfs_init,init_graph_tracefs,"
        "snapshot_device_init,load_system_certificate_list";
    // Under TCG the guest has no timer to calibrate the TSC against (microvm
    // has no PIT or HPET by default) and would wait for it; the host's rate
    // is given instead (the emulated TSC runs at the host's).
    if (vm.accel == "tcg" && vm.tscKhz > 0)
        c += " tsc_early_khz=" + std::to_string(vm.tscKhz) + " lpj=" + std::to_string(vm.tscKhz * 4);
    // A kernel built for this backend has no ACPI (the monitor lists the
    // devices on this line, virtio_mmio.device=): the guest leaves by a
    // reset, which -no-reboot turns into the monitor's exit; a triple fault
    // at once, not the keyboard controller microvm does not have.
    if (vm.builtKernel) c += " reboot=t";
    return c;
}

std::vector<std::string> monitor_argv(const VmInput& vm, const std::string& socat, int http, int socks,
                                      const std::string& cmdline) {
    std::vector<std::string> a = {vm.monitor,
                                  "-M",
                                  vm.builtKernel ? "microvm,acpi=off,isa-serial=on" : "microvm,acpi=on,isa-serial=on",
                                  "-accel",
                                  vm.accel,
                                  "-cpu",
                                  vm.accel == "kvm" ? "host" : "max",
                                  "-m",
                                  std::to_string(vm.memoryMiB) + "M",
                                  "-smp",
                                  std::to_string(vm.cpus),
                                  "-nodefaults",
                                  "-no-user-config",
                                  "-display",
                                  "none",
                                  "-no-reboot",
                                  "-kernel",
                                  guest_file("kernel"),
                                  "-initrd",
                                  guest_file("initrd"),
                                  "-append",
                                  cmdline};
    auto chardev = [&](const char* id, int fd) {
        a.insert(a.end(), {"-chardev", std::string("socket,id=") + id + ",fd=" + std::to_string(fd)});
    };
    chardev("con", vm_fd_console);
    a.insert(a.end(), {"-serial", "chardev:con", "-device", "virtio-serial-device,max_ports=8"});
    struct Port {
        const char* id;
        int fd;
        const char* name;
    };
    for (const Port& p : {Port{"in", vm_fd_stdin, vm_port_stdin}, Port{"out", vm_fd_stdout, vm_port_stdout},
                          Port{"err", vm_fd_stderr, vm_port_stderr}, Port{"st", vm_fd_status, vm_port_status}}) {
        chardev(p.id, p.fd);
        a.insert(a.end(), {"-device", std::string("virtserialport,chardev=") + p.id + ",name=" + p.name});
    }
    // One export: the guest's own tree, which bubblewrap assembled under
    // vm_guest_root (read-only binds stay read-only, masks stay masks), and
    // nothing of the monitor's own view: not its /proc (its memory, command
    // line, environment), /dev or /sys.
    a.insert(a.end(), {"-fsdev", std::string("local,id=root,path=") + vm_guest_root + ",security_model=none,multidevs=remap",
                       "-device", "virtio-9p-device,fsdev=root,mount_tag=ccroot"});
    // qemu's own seccomp filter too: no obsolete system calls. (Spawning
    // stays allowed: each guest connection to a proxy starts the forwarding
    // helper; privilege and resource-control calls too, which the monitor's
    // helpers and its 9p server make.)
    a.insert(a.end(), {"-sandbox", "on,obsolete=deny"});
    // restrict=on: the guest reaches nothing through the user-mode network
    // but the forwards below (and the sandbox's network namespace around the
    // monitor has nothing else anyway).
    // Each guest connection to a proxy address starts a relay (the host
    // step's own binary, no shell), at most vm_relay_slots at once.
    (void)socat;
    std::string fwd = [&] {
        std::string s;
        for (auto [port, kind] : {std::pair<int, const char*>{http, "http"}, {socks, "socks"}})
            s += std::string(",guestfwd=tcp:") + vm_proxy_host + ":" + std::to_string(port) + "-cmd:" +
                 guest_file("cc-wrap-vm") + " --internal-vm-relay " + std::to_string(port) + " " + kind;
        return s;
    }();
    a.insert(a.end(),
             {"-netdev", "user,id=net,restrict=on,net=10.0.2.0/24" + fwd, "-device", "virtio-net-device,netdev=net"});
    return a;
}

}  // namespace

auto Builder::microvm_mounts() -> void {
    const auto& vm = *in.vm;
    // The guest's tree: every mount of the plan so far again under
    // vm_guest_root (what the 9p share exports), but the monitor's /proc and
    // /dev, its devices and the steps under /run/cc. The guest mounts its own
    // /proc and /dev over empty directories. Write rules and Landlock's list
    // hold for the copies too (the monitor's writes for the guest land there).
    const std::string root = vm_guest_root;
    std::vector<Mount> guest;
    for (const auto& m : plan.mounts) {
        if (m.op == MountOp::proc || m.op == MountOp::dev || m.op == MountOp::dev_bind || m.op == MountOp::remount_ro)
            continue;
        if (m.dest == "/run/cc" || m.dest.rfind("/run/cc/", 0) == 0) continue;
        Mount g = m;
        g.dest = root + m.dest;
        g.why = "microvm: the guest's " + m.dest + " (" + m.why + ")";
        guest.push_back(std::move(g));
    }
    add(MountOp::tmpfs, "", root, "microvm: the guest's root, read-only once its mounts are made");
    for (auto& g : guest) plan.mounts.push_back(std::move(g));
    add(MountOp::dir, "", root + "/proc", "microvm: the guest mounts its own /proc here");
    add(MountOp::dir, "", root + "/dev", "microvm: the guest mounts its own /dev here");
    auto prefixed = [&](std::vector<std::string>& v) {
        std::size_t n = v.size();
        for (std::size_t i = 0; i < n; ++i)
            if (v[i] != "/proc" && v[i] != "/dev" && v[i].rfind("/proc/", 0) != 0 && v[i].rfind("/dev/", 0) != 0)
                v.push_back(root + v[i]);
    };
    prefixed(plan.landlockWritable);
    if (plan.writeRules) {
        auto& w = *plan.writeRules;
        std::size_t n = w.paths.size();
        for (std::size_t i = 0; i < n; ++i) {
            auto r = w.paths[i];
            r.path = root + r.path;
            for (auto& e : r.except) e = root + e;
            w.paths.push_back(std::move(r));
        }
        prefixed(w.gitScope);
        prefixed(w.writable);
    }
    add(MountOp::ro_bind, vm.kernel, guest_file("kernel"), "microvm: the guest kernel (" + vm.kernelVersion + ")");
    add(MountOp::ro_bind, in.runtimeDir + "/vm-initrd", guest_file("initrd"), "microvm: the initramfs made for this launch");
    if (vm.boot != "template")
        add(MountOp::ro_bind, in.runtimeDir + "/vm-plan.json", guest_file("plan.json"),
            "microvm: the session's plan, sent to the guest when it is ready");
    if (vm.boot == "restore")
        add(MountOp::ro_bind, in.identity.drop ? in.runtimeDir + "/vm-snapshot" : vm.snapshot, guest_file("snapshot"),
            in.identity.drop ? "microvm: a copy of " + vm.snapshot + " the sandbox's uid can read, the guest restored from it"
                             : "microvm: the snapshot the guest is restored from");
    if (vm.boot == "template")
        add(MountOp::bind, in.runtimeDir + "/vm-save", guest_file("save"), "microvm: where the template boot saves the guest");
    add(MountOp::ro_bind, vm.guestExe, guest_file("cc-wrap-vm"), "microvm: the host step (and the guest's /init)");
    if (vm.accel == "kvm") add(MountOp::dev_bind, "/dev/kvm", "/dev/kvm", "microvm: KVM for the VM monitor");
    std::stable_sort(plan.mounts.begin(), plan.mounts.end(),
                     [](const Mount& x, const Mount& y) { return depth(x.dest) < depth(y.dest); });
    add(MountOp::remount_ro, "", root, "microvm: the guest's root itself is read-only, as the native sandbox's is");
}

}  // namespace detail

using namespace detail;

Result<Plan> build_microvm_plan(const PlanInput& in, const HostPaths& host) {
    if (!in.vm) return unavailable_error("backend microvm", "no VM runtime was resolved (monitor, guest kernel)");
    if (in.profile == Profile::terminal)
        return unavailable_error("backend microvm",
                                 "--profile terminal is not implemented yet for the microvm backend");
    if (in.pty) return unavailable_error("backend microvm", "--pty is not implemented yet for the microvm backend");
    if (in.command.empty()) return input_error("command", "missing (cc-wrap [options] -- CMD ARGS...)");
    PlanInput m = in;
    // The host step replaces the command in the native plan. The write
    // supervisor stays: the guest's writes to shared files are the monitor's
    // system calls (virtio-9p), which it judges as it would the command's.
    const int http = 3128, socks = 1080;  // the native plan's loopback ports
    VmPlan vm;
    vm.in = *in.vm;
    vm.initrd = in.runtimeDir + "/vm-initrd";
    vm.cmdline = kernel_cmdline(vm.in);
    vm.monitorArgv = monitor_argv(vm.in, in.socat, http, socks, vm.cmdline);
    vm.why =
        "virtio-9p: built into the monitor, one device for the whole view bubblewrap made (no helper daemon, "
        "no shared-memory backend as virtiofs needs); read-only binds and masks are the host's mounts";
    vm.planFile = in.runtimeDir + "/vm-plan.json";
    if (vm.in.boot == "template") {
        vm.saveDir = in.runtimeDir + "/vm-save";
        m.command = {guest_file("cc-wrap-vm"), "--internal-vm-host", "--save", guest_file("save") + "/snapshot", "--"};
    } else {
        m.command = {guest_file("cc-wrap-vm"), "--internal-vm-host", "--plan", guest_file("plan.json")};
        if (vm.in.boot == "restore") m.command.insert(m.command.end(), {"--restore", guest_file("snapshot")});
        m.command.push_back("--");
    }
    m.command.insert(m.command.end(), vm.monitorArgv.begin(), vm.monitorArgv.end());
    Builder b{m, host, {}, {}, {}, {}, {}, {}, {}};
    auto plan = b.build();
    if (!plan) return plan;
    Plan& p = *plan;
    // The guest's environment: the plan's, with the proxies at their guest
    // addresses.
    Env env = p.env;
    std::string http_url = std::string("http://") + vm_proxy_host + ":" + std::to_string(http);
    std::string socks_addr = std::string(vm_proxy_host) + ":" + std::to_string(socks);
    if (env.count("HTTP_PROXY")) {
        for (const char* k : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) env[k] = http_url;
        env["ALL_PROXY"] = env["all_proxy"] = "socks5h://" + socks_addr;
        env["GIT_SSH_COMMAND"] = "ssh -o ProxyCommand='nc -X 5 -x " + socks_addr + " %h %p'";
    }
    nlohmann::json genv = nlohmann::json::object();
    for (const auto& [k, v] : env) genv[k] = v;
    vm.boot = {{"modules", vm.in.modules},
               {"net", {{"interface", "eth0"}, {"address", vm_guest_address}, {"netmask", "255.255.255.0"}}}};
    vm.guest = {{"argv", in.command},
                {"env", genv},
                {"cwd", p.chdir.empty() ? "/" : p.chdir},
                {"uid", p.identity.uid},
                {"gid", p.identity.gid},
                {"rootTag", "ccroot"},
                {"msize", 512000},
                // loose: the guest caches what it reads and writes (git status
                // over 300 files: about 0.6-1.3 s instead of 2.1 s under TCG);
                // files the host changes during the run may be seen late.
                // The init syncs before it reports the status, so the host
                // sees every write once cc-wrap returns.
                {"cache", "loose"}};
    p.vm = vm;
    p.layers.push_back("microvm:" + vm.in.accel);
    p.notes.push_back(
        "microvm: the command runs in a " + vm.in.kernelVersion + " guest under " +
        (vm.in.accel == "kvm" ? std::string("KVM") : std::string("TCG (emulation, asked for with --vm-accel tcg)")) +
        "; the proxies are at " + vm_proxy_host + " inside the guest");
    if (vm.in.boot == "cold" && !vm.in.bootWhy.empty())
        p.notes.push_back("microvm: cold boot, no snapshot: " + vm.in.bootWhy);
    else if (vm.in.boot == "save")
        p.notes.push_back("microvm: no snapshot yet for this guest: a template boot saves one in " + vm.in.snapshotDir +
                          ", then the run restores it");
    return plan;
}

nlohmann::json to_json(const VmPlan& vm) {
    return {{"accel", vm.in.accel},
            {"monitor", vm.in.monitor},
            {"monitorVersion", vm.in.monitorVersion},
            {"kernel", vm.in.kernel},
            {"kernelVersion", vm.in.kernelVersion},
            {"modules", vm.in.modules},
            {"memoryMiB", vm.in.memoryMiB},
            {"boot", vm.in.boot},
            {"bootWhy", vm.in.bootWhy},
            {"snapshot", vm.in.snapshot},
            {"initrd", vm.initrd},
            {"cmdline", vm.cmdline},
            {"share", vm.share},
            {"shareWhy", vm.why},
            {"bootConfig", vm.boot},
            {"guest", vm.guest}};
}

}  // namespace cc::sandbox
