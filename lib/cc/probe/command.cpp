#include "cc/probe/command.hpp"

#include <algorithm>
#include <iterator>
#include <ostream>

#include "cc/probe/container_profile.hpp"
#include "cc/probe/diagnose.hpp"
#include "cc/core/io.hpp"
#include "cc/core/json_reader.hpp"
#include "cc/sandbox/microvm.hpp"
#include "cc/core/json_writer.hpp"

namespace cc::probe {

int run_command(const CommandOptions& opts, const HostFacts& host, std::ostream& out, std::ostream& err) {
    if (opts.container_seccomp) {
        // Nothing of the host is looked at: the profile in, the profile out.
        auto text = io::read_input(*opts.container_seccomp);
        if (!text) {
            err << "cc-probe: " << text.error().one_line() << '\n';
            return 2;
        }
        auto doc = cc::json::parse(*text, *opts.container_seccomp);
        if (!doc) {
            err << "cc-probe: " << doc.error().one_line() << '\n';
            return 2;
        }
        auto adapted = container_seccomp_profile(*doc);
        if (!adapted) {
            err << "cc-probe: " << *opts.container_seccomp << ": " << adapted.error().one_line() << '\n';
            return 2;
        }
        out << cc::json::write(*adapted, 2) << '\n';
        return 0;
    }
    auto sw = resolve_switch(opts.sandbox, opts.sandbox_env);
    if (!sw) {
        err << "cc-probe: " << sw.error().one_line() << '\n';
        return 2;
    }
    ProbeResult p = probe(host, *sw);
    nlohmann::json doc = to_json(p);
    int status = 0;
    // The VM runtime cc-wrap --backend microvm would use: the monitor and its
    // version, the guest kernel image and its release (KVM is reported above;
    // this lookup does not need it). Asked for with --backend microvm or
    // --diagnose only: it runs the monitor once (tens of milliseconds).
    std::string vm_line;
    if (p.platform == "linux" && (opts.diagnose || (opts.backend && *opts.backend == "microvm"))) {
        sandbox::VmOptions vo;
        vo.accel = "tcg";
        auto vm = sandbox::resolve_vm(vo);
        auto& j = doc["microvm"];
        if (vm) {
            j["monitor"] = vm->monitor;
            j["monitorVersion"] = vm->monitorVersion;
            j["kernelImage"] = vm->kernel;
            j["kernelVersion"] = vm->kernelVersion;
            j["guestInit"] = vm->guestExe;
            vm_line = "microvm runtime: " + vm->monitor + " (" + vm->monitorVersion + "), guest kernel " +
                      vm->kernel + " (" + vm->kernelVersion + "); KVM " + (p.microvm.kvmUsable ? "usable" : "not usable") +
                      ", TCG with --vm-accel tcg";
        } else {
            j["runtimeError"] = vm.error().one_line();
            vm_line = "microvm runtime: " + vm.error().one_line();
        }
    }

    // --backend: how a stored name parses and what this host gives for it.
    std::optional<spec::Backend> requested;
    std::string choice_line;
    if (opts.backend) {
        // A stored name nobody knows is read as "none" (no sandbox); asked
        // about by hand, it is far more likely a typo, and said to be one.
        static const char* const known[] = {"native", "none", "microvm", "docker"};
        if (std::find(std::begin(known), std::end(known), *opts.backend) == std::end(known)) {
            err << "cc-probe: --backend: unknown backend name '" << *opts.backend
                << "' (native, none or microvm; docker is read as native)\n";
            return 2;
        }
        requested = spec::parse_stored_backend(*opts.backend);
        auto choice = choose_backend(p, requested);
        nlohmann::json b{{"stored", *opts.backend}, {"parsed", std::string(spec::to_string(*requested))}};
        if (choice) {
            b["backend"] = std::string(spec::to_string(choice->backend));
            b["log"] = choice->log;
            choice_line = "backend '" + *opts.backend + "' parses as " + std::string(spec::to_string(*requested)) +
                          ": " + choice->log;
        } else {
            b["backend"] = nullptr;
            b["error"] = choice.error().one_line();
            choice_line = "backend '" + *opts.backend + "' parses as " + std::string(spec::to_string(*requested)) +
                          ": " + choice.error().one_line();
            err << "cc-probe: " << choice.error().one_line() << '\n';
            status = 1;
        }
        doc["backendChoice"] = b;
    } else {
        auto choice = choose_backend(p, std::nullopt);
        if (choice) doc["backendChoice"] = {{"stored", nullptr}, {"parsed", nullptr},
                                            {"backend", std::string(spec::to_string(choice->backend))}, {"log", choice->log}};
    }

    std::optional<Diagnosis> diag;
    if (opts.diagnose) {
        DiagnoseOptions d;
        d.data_dir = opts.data_dir;
        if (requested) d.backend = requested;
        auto r = diagnose(p, d);
        if (!r) {
            err << "cc-probe: " << r.error().one_line() << '\n';
            return 2;
        }
        diag = *r;
        doc["diagnostics"] = to_json(*diag);
        if (!diag->ok && status == 0) status = 1;
    } else if (opts.data_dir) {
        err << "cc-probe: --data-dir: only used with --diagnose\n";
        return 2;
    }

    if (opts.json) {
        out << cc::json::write(doc) << '\n';
    } else {
        out << p.line << '\n';
        if (!vm_line.empty()) out << vm_line << '\n';
        if (!choice_line.empty()) out << choice_line << '\n';
        if (diag) out << to_text(*diag);
    }
    return status;
}

}  // namespace cc::probe
