#include "cc/sandbox/launch.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "cc/core/io.hpp"
#include "cc/fs/unique_fd.hpp"
#include "cc/core/json_reader.hpp"
#include "cc/core/tool.hpp"
#include "cc/policy/policy.hpp"
#include "cc/probe/probe.hpp"
#include "cc/sandbox/events.hpp"
#include "cc/sandbox/handover.hpp"
#include "cc/sandbox/plan.hpp"
#include "cc/sandbox/plan_text.hpp"
#include "cc/sandbox/launch_parts.hpp"
#include "cc/sandbox/seatbelt.hpp"
#include "cc/sandbox/seatbelt_tap.hpp"
#include "cc/core/json_writer.hpp"


namespace cc::sandbox {

using namespace detail;
using nlohmann::json;

namespace {
namespace fs = std::filesystem;

// Can `id` pass every directory above `path` (the x bit that applies to it)?
bool passable(const std::string& path, const Identity& id) {
    for (std::string d = parent_of(path); !d.empty(); d = parent_of(d)) {
        struct stat st {};
        if (::stat(d.c_str(), &st) != 0) return false;
        unsigned bit = st.st_uid == id.uid ? S_IXUSR : st.st_gid == id.gid ? S_IXGRP : S_IXOTH;
        if (!(st.st_mode & bit)) return false;
        if (d == "/") break;
    }
    return true;
}

// A failure after the plan, before the command could start (sandbox-exec
// refusing to apply the profile): exit 125 with the reason on stderr, and,
// with --events, an exit event saying the same.
int setup_failure(const Plan& plan, const WrapRequest& rq, const Error& e) {
    if (rq.events) {
        EventWriter ev(plan.spec.sessionId);
        tool::emit_line(ev.line("exit", setup_failure_exit(e)));
    }
    return fail(e);
}
}  // namespace

namespace {

// Everything a launch reads and decides before its plan: the spec, the
// switch, the backend and profile, the operator's policy text, the
// command's identity, the probe and the backend chosen, the VM runtime, a
// handed-in cc-egress's ready line, where cc-egress and the init step are.
// Every bad-input error is found here, before anything is made.
struct Resolved {
    spec::SandboxSpec spec;
    PlanInput in;
    std::string policy_text;
    std::optional<std::string> egress_exe;
    std::string installed_init;
    bool wants_egress = false, own_egress = false, seatbelt = false, copy_init = false;
};

// TLS terminated by cc-egress: our own is given --intercept, --credential
// and --upstream-ca (cc-egress reads the secrets and checks the rest); a
// handed-in one says so in its ready line (interceptCa, credentials). Either
// way the sandbox gets the CA bundle bound in and the placeholders, so the
// native backend only (bubblewrap binds the bundle's directory).
Status resolve_intercept(const WrapRequest& rq, Resolved& r, spec::Backend backend) {
    EgressWiring& w = r.in.egress;
    const bool asked = !rq.intercept.empty() || !rq.credentials.empty() || rq.upstreamCa;
    if (asked) {
        const std::string flag = !rq.intercept.empty() ? "--intercept" : !rq.credentials.empty() ? "--credential" : "--upstream-ca";
        if (rq.egressReady)
            return input_error(flag, "is for the cc-egress cc-wrap starts; a handed-in cc-egress (--egress) has its own");
        if (!r.own_egress || r.seatbelt || backend != spec::Backend::native)
            return input_error(flag, "needs the native backend with the session's own cc-egress (dispatch profile)");
        w.intercept = rq.intercept;
        w.upstreamCa = rq.upstreamCa.value_or("");
        w.credentials.clear();
        for (const auto& c : rq.credentials) {
            // NAME@HOSTS=file:PATH or =fd:N; cc-egress checks the rest when it starts.
            auto at = c.find('@'), eq = c.find('=');
            std::string name = c.substr(0, std::min(at, eq));
            if (at != std::string::npos && eq != std::string::npos && eq > at && c.compare(eq + 1, 3, "fd:") == 0) {
                // An inherited descriptor: moved out of the way (close-on-exec,
                // so nothing else cc-wrap starts gets it) and given to cc-egress
                // as 3, 4, ... (start_egress).
                const std::string n = c.substr(eq + 4);
                struct stat st {};
                if (n.empty() || n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos ||
                    std::stoi(n) < 3 || ::fstat(std::stoi(n), &st) != 0)
                    return input_error("--credential '" + name + "'", "fd:N needs an open descriptor number of 3 or more");
                int moved = ::fcntl(std::stoi(n), F_DUPFD_CLOEXEC, 100);
                if (moved < 0) return io_error("--credential '" + name + "'", "cannot keep its descriptor");
                ::close(std::stoi(n));
                w.credentials.push_back(c.substr(0, eq + 1) + "fd:" + std::to_string(3 + w.credentialFds.size()));
                w.credentialFds.push_back(moved);
                w.placeholders.push_back({name, ""});
                continue;
            }
            if (at == std::string::npos || eq == std::string::npos || eq < at || c.compare(eq + 1, 5, "file:") != 0)
                return input_error("--credential '" + name + "'", "expected NAME@HOST[,HOST...]=file:PATH or =fd:N");
            w.credentials.push_back(c);
            std::error_code ec;
            auto real = fs::canonical(c.substr(eq + 6), ec);
            if (ec) return input_error("--credential '" + name + "' file '" + c.substr(eq + 6) + "'", "cannot read: " + ec.message());
            // Its other names could be anywhere, a bind included: one name only.
            struct stat st {};
            if (::stat(real.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1)
                return input_error("--credential '" + name + "' file '" + real.string() + "'",
                                   "has " + std::to_string(st.st_nlink) + " hard links: another name may be inside the sandbox's view");
            w.credentialFiles.push_back(real.string());
            w.placeholders.push_back({name, ""});
        }
        w.intercepting = true;
        return ok();
    }
    if (w.source != EgressWiring::Source::handed || w.caPem.empty()) return ok();
    if (r.seatbelt || backend != spec::Backend::native)
        return input_error("--egress", "a cc-egress that terminates TLS is supported with the native backend only");
    w.intercepting = true;
    return ok();
}

// --capture: the ports an allowlist entry admits ("host", "host:443,8443",
// "[v6]:443", "host:*"); a bare entry admits 80 and 443. `any` is set by an
// entry for every port (no listener can stand for all of them).
void entry_ports(std::string e, std::set<std::uint16_t>& out, bool& any) {
    if (auto hash = e.find('#'); hash != std::string::npos) e.erase(hash);
    while (!e.empty() && std::isspace(static_cast<unsigned char>(e.back()))) e.pop_back();
    std::string ports;
    if (!e.empty() && e.front() == '[') {
        auto rb = e.find(']');
        if (rb != std::string::npos && rb + 1 < e.size() && e[rb + 1] == ':') ports = e.substr(rb + 2);
    } else if (std::count(e.begin(), e.end(), ':') == 1) {
        ports = e.substr(e.find(':') + 1);
    }
    if (ports.empty()) {
        out.insert(80);
        out.insert(443);
        return;
    }
    if (ports == "*") {
        any = true;
        return;
    }
    std::stringstream ss(ports);
    std::string one;
    while (std::getline(ss, one, ','))
        if (!one.empty() && one.size() <= 5 && one.find_first_not_of("0123456789") == std::string::npos &&
            std::stoi(one) >= 1 && std::stoi(one) <= 65535)
            out.insert(static_cast<std::uint16_t>(std::stoi(one)));
}

// Programs that ignore the proxy variables are captured in the sandbox's
// network namespace and handed to cc-egress: bubblewrap's namespace and
// the fd handover, so the native backend only.
Status resolve_capture(const WrapRequest& rq, Resolved& r, spec::Backend backend) {
    EgressWiring& w = r.in.egress;
    if (!rq.capture) {
        if (!rq.capturePorts.empty()) return input_error("--capture-port", "applies with --capture only");
        return ok();
    }
    if (!r.wants_egress || r.seatbelt || backend != spec::Backend::native)
        return input_error("--capture", "needs the native backend (bubblewrap) with the dispatch profile");
    if (w.source == EgressWiring::Source::handed && w.inbox.empty())
        return input_error("--capture", "needs a cc-egress with an fd inbox (--egress names one without)");
    std::set<std::uint16_t> ports = {80, 443};
    bool any = false;
    for (const auto& e : r.spec.egressAllowlist) entry_ports(e, ports, any);
    for (int p : rq.capturePorts) {
        if (p < 1 || p > 65535) return input_error("--capture-port " + std::to_string(p), "is not a port (1-65535)");
        ports.insert(static_cast<std::uint16_t>(p));
    }
    // The proxies' own listeners hold those ports on 127.0.0.1.
    for (int own : {3128, 1080})
        if (ports.erase(static_cast<std::uint16_t>(own)))
            log("note: --capture leaves port " + std::to_string(own) + " to the proxy listening there");
    if (ports.size() > k_max_capture_ports)
        return input_error(
            "--capture", std::to_string(ports.size()) + " ports asked; at most " + std::to_string(k_max_capture_ports));
    if (any)
        log("note: --capture takes the ports entries name (" + std::to_string(ports.size()) +
            "); an entry for every port (host:*) is reached on other ports through the proxy variables only");
    w.capture = true;
    w.capturePorts.assign(ports.begin(), ports.end());
    return ok();
}

Result<Resolved> resolve_launch(const WrapRequest& rq) {
    Resolved r;
    // 1. Input: spec, switch, backend flag, profile. Bad input: exit 2.
    auto spec = spec::load_sandbox_spec(rq.specPath);
    if (!spec) return spec.error();
    r.spec = *spec;
    const char* envsw = std::getenv("CC_SERVER_SANDBOX");
    auto sw = probe::resolve_switch(rq.sandboxSwitch, envsw ? std::optional<std::string>(envsw) : std::nullopt);
    if (!sw) return sw.error();
    std::optional<spec::Backend> requested;
    if (rq.backend) {
        requested = spec::parse_backend_flag(*rq.backend);
        if (!requested) return input_error("--backend", "unknown backend '" + *rq.backend + "' (native, none or microvm)");
    }
    Profile profile;
    if (rq.profile == "dispatch") profile = Profile::dispatch;
    else if (rq.profile == "terminal") profile = Profile::terminal;
    else return input_error("--profile", "unknown profile '" + rq.profile + "' (dispatch or terminal)");
    if (rq.command.empty()) return input_error("command", "missing (cc-wrap [options] -- CMD ARGS...)");
    // The session's own cc-egress decides with the operator's policy (and
    // puts its asks to the approver); a handed-in one has its own.
    if (rq.egressReady && (rq.policyPath || rq.approver))
        return input_error(rq.policyPath ? "--policy" : "--approver",
                           "is for the cc-egress cc-wrap starts; a handed-in cc-egress (--egress) has its own");
    if (rq.approver && rq.approver->find_first_not_of(" \t") == std::string::npos)
        return input_error("--approver", "is empty");
    if (rq.policyPath) {
        auto text = io::read_input(*rq.policyPath);
        if (!text) return text.error();
        if (auto pol = policy::parse(*text, *rq.policyPath); !pol) return pol.error();
        r.policy_text = std::move(*text);
    }
    // Who the command will be on the host (never uid 0): input too (--run-as).
    const char* home_env = std::getenv("HOME");
    auto identity = choose_identity(*spec, home_env && *home_env ? home_env : "/", ::geteuid(), ::getegid(), rq.runAs,
                                    *real_paths());
    if (!identity) return identity.error();

    // 2. Probe (or read it once from cc-probe --json) and choose.
    probe::ProbeResult pr;
    if (rq.probePath) {
        auto loaded = probe::load(*rq.probePath);
        if (!loaded) return loaded.error();
        pr = *loaded;
        if (sw->source != "default") pr.sandbox = *sw;
    } else {
        pr = probe::probe(*probe::real_host(), *sw, requested == spec::Backend::microvm);
    }
    // microvm: the VM runtime is resolved now (125 with the reason when
    // something is missing); TCG needs no KVM, but only when asked for.
    std::optional<VmInput> vm;
    if (requested == spec::Backend::microvm) {
        VmOptions vo;
        if (rq.vmAccel) vo.accel = *rq.vmAccel;
        vo.kernel = rq.vmKernel;
        if (rq.vmMemory) vo.memoryMiB = *rq.vmMemory;
        if (rq.vmBoot) vo.boot = *rq.vmBoot;
        auto v = resolve_vm(vo);
        if (!v) return v.error();
        vm = *v;
        if (vm->accel == "tcg" && !pr.microvm.available) {
            pr.microvm.available = true;
            pr.microvm.reason = "TCG asked for (--vm-accel tcg): emulation, no KVM needed";
        }
    } else if (rq.vmAccel || rq.vmKernel || rq.vmMemory || rq.vmBoot) {
        return input_error(rq.vmAccel    ? "--vm-accel"
                           : rq.vmKernel ? "--vm-kernel"
                           : rq.vmMemory ? "--vm-memory"
                                         : "--vm-boot",
                           "applies to --backend microvm only");
    }
    auto choice = probe::choose_backend(pr, requested);
    if (!choice) return choice.error();
    if (!choice->requested || choice->backend == spec::Backend::none) log(choice->log);
    // A layer the plan will name must exist: no launch with fewer.
    if (choice->backend != spec::Backend::none && pr.mechanism == "bubblewrap" && pr.layers.probed &&
        !pr.layers.missing.empty()) {
        std::string names;
        for (const auto& m : pr.layers.missing) names += (names.empty() ? "" : ", ") + m;
        return unavailable_error("backend native", "this kernel lacks the " + names +
                                                       " layer; nothing runs with fewer layers than the plan names");
    }

    PlanInput& in = r.in;
    in.spec = *spec;
    in.backend = choice->backend;
    in.backendLog = choice->log;
    in.profile = profile;
    in.command = rq.command;
    in.hostEnv = current_env();
    in.home = in.hostEnv.count("HOME") ? in.hostEnv["HOME"] : "/";
    in.inheritEnv = rq.inheritEnv;
    in.denyWrite = rq.denyWrite;
    in.dropFilenameDenies = rq.dropFilenameDenies;
    in.initExe = init_exe();
    in.mechanism = pr.mechanism.empty() ? "bubblewrap" : pr.mechanism;
    if (pr.bwrap) in.bwrap = *pr.bwrap;
    if (pr.socat) in.socat = *pr.socat;
    in.pty = rq.pty;
    in.landlockAbi = pr.layers.landlockAbi;
    in.writeSupervisor = pr.layers.writeSupervisor && !rq.noWriteSupervisor;
    if (pr.layers.writeSupervisor && rq.noWriteSupervisor) in.writeSupervisorRefused = true;
    in.identity = *identity;
    in.vm = vm;

    // 3. The rest of the input: a handed-in cc-egress's ready line; where
    // cc-egress and (run by root, when the sandbox's uid cannot reach the
    // installed one) the init step will be. Nothing is created yet.
    r.wants_egress = choice->backend != spec::Backend::none && profile == Profile::dispatch;
    r.own_egress = r.wants_egress && !rq.egressReady;
    if ((rq.policyPath || rq.approver) && !r.own_egress)
        log(std::string("note: ") + (rq.policyPath ? "--policy" : "--approver") + " unused: this launch starts no cc-egress (" +
            (choice->backend != spec::Backend::native ? "backend " + std::string(spec::to_string(choice->backend))
                                                      : std::string("terminal profile: the host network")) + ")");
    // macOS: the sandbox shares the host's loopback, so it reaches cc-egress
    // on TCP ports, never through an fd inbox.
    r.seatbelt = in.mechanism == "seatbelt";
    if (r.wants_egress && rq.egressReady) {
        auto text = io::read_input(*rq.egressReady);
        if (!text) return text.error();
        auto j = cc::json::parse(*text, *rq.egressReady);
        if (!j) return j.error();
        in.egress.source = EgressWiring::Source::handed;
        auto w = r.seatbelt ? seatbelt_wiring_from_ready(*j, in.egress, *rq.egressReady)
                            : wiring_from_ready(*j, in.egress, *rq.egressReady);
        if (!w) return w.error();
        if (auto ic = intercept_from_ready(*j, in.egress, *rq.egressReady); !ic) return ic.error();
    }
    if (auto s = resolve_intercept(rq, r, choice->backend); !s) return s.error();
    if (auto s = resolve_capture(rq, r, choice->backend); !s) return s.error();
    if (r.own_egress && !rq.print && !rq.printSeatbelt) {
        r.egress_exe = find_egress();
        if (!r.egress_exe)
            return unavailable_error("cc-egress", "not found next to cc-wrap or on PATH; the sandbox's only way out is its proxy");
    }
    r.installed_init = in.initExe;
    r.copy_init = in.identity.drop && !passable(r.installed_init, in.identity);
    return r;
}

// The template boot of the microvm backend: the same VM in a sandbox of its
// own (no proxies; the session's binds are in the export, but the guest
// never mounts it), its guest saved where it waits for a plan, the snapshot
// put in the snapshot directory. On success r.in.vm boots from it
// ("restore"); otherwise "cold", with the reason.
// Returns 0, 125 (no snapshot), or 128+N when a signal stopped it.
int vm_template_boot(Resolved& r, RuntimeDir& rt, const WrapRequest& rq) {
    VmInput& vm = *r.in.vm;
    auto cold = [&](const std::string& why) {
        vm.boot = "cold";
        vm.bootWhy = why;
        vm.snapshot.clear();
        return 125;
    };
    PlanInput t = r.in;
    t.runtimeDir = rt.path + "/vm-template";
    t.spec.egressAllowlist.clear();
    t.egress = EgressWiring{};
    t.vm->boot = "template";
    if (t.identity.drop) {
        // Run by root, the snapshot serves every later session, whoever it
        // runs as: made under the session's uid, any process of that uid
        // could rewrite it (or trace the monitor) while it is made, and so
        // choose the guest of everyone else's sessions. A uid of its own,
        // which no process has; nothing of the session is bound (the guest
        // never mounts it, and that uid may not reach the binds).
        auto own = real_paths()->unused_id();
        if (!own) return cold("no unused uid for the template boot");
        t.identity.uid = t.identity.gid = *own;
        t.identity.ownId = true;
        t.identity.why = "the template boot: a uid of its own";
        t.spec.bindMounts.clear();
        t.spec.protectedPaths.clear();
        t.spec.runnerStateDirs.clear();
        t.spec.guestWorkdir.reset();
        log("note: microvm: the template boot runs as uid " + std::to_string(*own) +
            ", a uid of its own that no process has");
    }
    if (::mkdir(t.runtimeDir.c_str(), 0711) != 0) return cold(t.runtimeDir + ": cannot create");
    auto tplan = build_plan(t, *real_paths(t.identity.uid, t.identity.gid));
    if (!tplan) return cold("the template boot's plan: " + tplan.error().one_line());
    if (auto s = make_masks(*tplan); !s) return cold("the template boot's masks: " + s.error().one_line());
    if (auto s = write_initramfs(*tplan->vm, t.identity.uid, t.identity.gid, t.identity.drop); !s)
        return cold(s.error().one_line());
    WrapRequest trq = rq;
    trq.events = false;
    trq.pty = false;
    trq.timeout = 300;
    int st = run_plan(*tplan, trq, nullptr);
    if (st > 128 && st != 128 + SIGKILL) return st;
    if (st != 0) return cold("the template boot failed (exit " + std::to_string(st) + ")");
    auto installed = install_vm_snapshot(vm, tplan->vm->saveDir + "/snapshot");
    if (!installed) return cold(installed.error().one_line());
    vm.boot = "restore";
    vm.snapshot = *installed;
    log("note: microvm: saved a snapshot of the booted guest in " + *installed + "; later runs restore it");
    return 0;
}

// 5. Execute the plan and only the plan: the runtime directory's contents,
// the session's own cc-egress, the masks, the VM's initramfs, the Seatbelt
// tap, then the sandbox.
int execute_plan(Resolved& r, Result<Plan>& plan, RuntimeDir& rt, const WrapRequest& rq) {
    PlanInput& in = r.in;
    // bubblewrap runs as the sandbox's uid and binds the masks from here: it
    // may pass through, not list (every file in it is mode 0 or 0600, the
    // egress directory 0700).
    if (in.identity.drop && ::chmod(rt.path.c_str(), 0711) != 0) return fail(io_error(rt.path, "cannot open up for the sandbox's uid"));
    if (r.copy_init) {
        std::error_code ec;
        fs::copy_file(r.installed_init, in.initExe, ec);
        if (ec || ::chmod(in.initExe.c_str(), 0755) != 0)
            return fail(io_error(in.initExe, "cannot copy the init step where the sandbox's uid can reach it"));
    }
    if (plan->vm && plan->vm->in.boot == "save") {
        // No snapshot for this guest yet: a template boot saves one (no
        // command runs in it), then this run restores it. When that fails,
        // the run boots cold and says why.
        int st = vm_template_boot(r, rt, rq);
        if (st != 0 && st != 125) return st;  // stopped by a signal
        plan = build_plan(in, *real_paths(in.identity.uid, in.identity.gid));
        if (!plan) return fail(plan.error());
        for (const auto& n : plan->notes)
            if (n.rfind("microvm: cold boot", 0) == 0) log("note: " + n);
    }
    if (plan->vm && plan->vm->in.boot == "restore" && in.identity.drop) {
        // The snapshot directory is root's alone: the monitor's uid reads a
        // private copy (the plan binds it).
        std::string copy = rt.path + "/vm-snapshot";
        std::error_code ec;
        fs::copy_file(plan->vm->in.snapshot, copy, ec);
        if (ec || ::chown(copy.c_str(), in.identity.uid, in.identity.gid) != 0 || ::chmod(copy.c_str(), 0600) != 0)
            return fail(io_error(copy, "cannot copy the VM snapshot for the sandbox's uid"));
    }
    Egress egress;
    if (r.own_egress) {
        std::string dir = rt.path + "/egress";
        if (::mkdir(dir.c_str(), 0700) != 0) return fail(io_error(dir, "cannot create"));
        if (auto s = write_private(rt.path + "/spec.json", cc::json::write(spec::to_json(r.spec))); !s) return fail(s.error());
        egress.exe = *r.egress_exe;
        egress.spec_file = rt.path + "/spec.json";
        egress.inbox = in.egress.inbox;
        // The policy as it was checked: a private copy, read once by cc-egress.
        if (!in.egress.policy.empty()) {
            if (auto s = write_private(in.egress.policy, r.policy_text); !s) return fail(s.error());
            egress.policy_file = in.egress.policy;
        }
        egress.approver = in.egress.approver;
        egress.intercept = in.egress.intercept;
        egress.credentials = in.egress.credentials;
        egress.credential_fds = in.egress.credentialFds;
        egress.upstream_ca = in.egress.upstreamCa;
        if (auto s = start_egress(egress, egress.exe, egress.spec_file, egress.inbox); !s) return fail(s.error());
        if (in.egress.intercepting) {
            // The session CA and the placeholders come in its ready line:
            // read before the sandbox starts, the plan made again with the
            // placeholders (nothing has run under the first plan).
            auto ready = read_egress_ready(egress, 10000);
            if (!ready) return fail(ready.error());
            if (auto s = intercept_from_ready(*ready, in.egress, "cc-egress ready line"); !s) return fail(s.error());
            if (in.egress.caPem.empty()) return fail(unavailable_error("cc-egress", "ready line has no interceptCa"));
            plan = build_plan(in, *real_paths(in.identity.uid, in.identity.gid));
            if (!plan) return fail(plan.error());
        }
        if (r.seatbelt) {
            // Its ports are the kernel's choice, known from its ready line:
            // the plan is made again with them (same runtime directory), so
            // the profile allows exactly those ports and the proxy variables
            // name them. Nothing has run under the first plan.
            auto ready = read_egress_ready(egress, 10000);
            if (!ready) return fail(ready.error());
            if (auto s = seatbelt_wiring_from_ready(*ready, in.egress, "cc-egress ready line"); !s) return fail(s.error());
            plan = build_plan(in, *real_paths(in.identity.uid, in.identity.gid));
            if (!plan) return fail(plan.error());
        }
    }
    if (plan->proxy.intercept)
        if (auto s = write_tls_bundle(rt.path, in.egress.caPem); !s) return fail(s.error());
    if (plan->backend != spec::Backend::none && plan->seatbelt.empty())
        if (auto s = make_masks(*plan); !s) return fail(s.error());
    if (plan->vm) {
        // The command in the guest gets the native backend's filter too.
        if (plan->seccomp) {
            auto fd = compile_seccomp(*plan->seccomp);
            if (!fd) return fail(fd.error());
            cc::fs::UniqueFd owned{*fd};
            auto bytes = cc::io::read_all(owned.get(), "seccomp filter");
            if (!bytes || bytes->empty()) return fail(io_error("seccomp filter", "cannot read the compiled program"));
            plan->vm->seccompBpf = std::move(*bytes);
        }
        if (auto s = write_initramfs(*plan->vm, in.identity.uid, in.identity.gid, in.identity.drop); !s)
            return fail(s.error());
    }
    SeatbeltTap tap;
    bool tapped = false;
    if (!plan->seatbelt.empty()) {
        if (auto s = seatbelt_prepare(*plan); !s) return fail(s.error());
        auto t = start_seatbelt_tap(seatbelt_tag(plan->spec.sessionId, plan->runtimeDir));
        if (t) {
            tap = std::move(*t);
            tapped = true;
        } else {
            log("note: no Seatbelt violation events: " + t.error().one_line());
        }
    }
    int status = run_plan(*plan, rq, r.wants_egress ? &egress : nullptr, tapped ? &tap : nullptr);
    if (tapped) stop_seatbelt_tap(tap);
    return status;
}

}  // namespace

// resolve (every read, probe and bad-input error) -> plan (pure, under the
// runtime directory's name; --print prints it) -> execute (only the plan).
int wrap(const WrapRequest& rq) {
    auto resolved = resolve_launch(rq);
    if (!resolved) return fail(resolved.error());
    Resolved& r = *resolved;
    PlanInput& in = r.in;

    // 4. Plan: a pure function of the input, under the runtime directory's
    // chosen name (a new name and a new plan if it is taken when made).
    if (rq.printSeatbelt) {
        // The macOS profile for this spec, on any host (the Linux plan's
        // own refusals are not the Seatbelt profile's).
        in.runtimeDir = choose_runtime_path();
        auto sb = seatbelt_print(in, *real_paths());
        if (!sb) return fail(sb.error());
        std::cout << *sb << std::flush;
        return 0;
    }
    auto paths = real_paths(in.identity.uid, in.identity.gid);
    RuntimeDir rt;
    Result<Plan> plan = unavailable_error("runtime directory", "no free name");
    for (int attempt = 0; attempt < 8; ++attempt) {
        in.runtimeDir = choose_runtime_path();
        if (r.copy_init) in.initExe = in.runtimeDir + "/init";
        if (r.own_egress) {
            in.egress.source = EgressWiring::Source::own;
            if (!r.seatbelt) in.egress.inbox = in.runtimeDir + "/egress/inbox.sock";
            if (rq.policyPath) in.egress.policy = in.runtimeDir + "/policy.json";
            if (rq.approver) in.egress.approver = *rq.approver;
        }
        plan = build_plan(in, *paths);
        if (!plan) return fail(plan.error());
        if (rq.print) {
            if (rq.printText) std::cout << plan_text(to_json(*plan)) << std::flush;
            else tool::emit_line(cc::json::write(to_json(*plan), 2));
            return 0;
        }
        auto d = make_runtime_dir(plan->runtimeDir);
        if (d) {
            rt = std::move(*d);
            break;
        }
        if (d.error().sys_errno != EEXIST) return fail(d.error());
    }
    if (rt.path.empty()) return fail(plan ? unavailable_error("runtime directory", "no free name") : plan.error());
    for (const auto& n : plan->notes) log("note: " + n);
    // macOS refuses to stack a second profile (cc-wrap run inside another
    // sandbox): found out before anything else starts, and said as such.
    if (!plan->seatbelt.empty())
        if (auto s = seatbelt_preflight(plan->argv.at(0)); !s) return setup_failure(*plan, rq, s.error());
    return execute_plan(r, plan, rt, rq);
}

}  // namespace cc::sandbox

