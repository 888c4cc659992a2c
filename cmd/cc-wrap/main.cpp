// cc-wrap: run a command inside the sandbox a SandboxSpec describes.
// Options -> cc::sandbox::wrap() -> the child's exit status (cc-wrap(1)).
#include <CLI/CLI.hpp>

#include <cstring>

#include "cc/core/cli.hpp"
#include "cc/core/output.hpp"
#include "cc/core/tool.hpp"
#include "cc/sandbox/launch.hpp"
#include "cc/sandbox/sandbox_init.hpp"

int main(int argc, char** argv) {
    // The init step inside the sandbox: no CLI11, no allocation beyond need.
    if (argc > 1 && std::strcmp(argv[1], "--internal-sandbox-init") == 0)
        return cc::sandbox::sandbox_init_main(std::vector<std::string>(argv + 2, argv + argc));

    return cc::tool::run("cc-wrap", [&] {
        cc::sandbox::WrapRequest rq;
        CLI::App app{"Run a command inside the sandbox a SandboxSpec describes (bubblewrap on Linux)."};
        cc::tool::standard_flags(app, "cc-wrap");
        app.add_option("--spec", rq.specPath, "SandboxSpec JSON file, - for stdin")->required();
        app.add_option("--backend", rq.backend, "native, none or microvm (default: from the probe)")
            ->type_name("{native,none,microvm}");
        app.add_option("--sandbox", rq.sandboxSwitch, "on or off (env CC_SERVER_SANDBOX); off runs without a sandbox")
            ->type_name("{on,off}");
        app.add_option("--probe", rq.probePath, "read host facts from cc-probe --json output instead of probing");
        app.add_option("--profile", rq.profile, "dispatch (agent run, default) or terminal (human shell)")
            ->type_name("{dispatch,terminal}");
        app.add_option("--egress", rq.egressReady, "use a running cc-egress: its ready line, saved as a file");
        app.add_option("--policy", rq.policyPath, "policy file for the session's own cc-egress (its network_access rule)");
        app.add_option("--approver", rq.approver, "command the session's own cc-egress asks about hosts the policy marks ask");
        app.add_option("--intercept", rq.intercept, "the session's own cc-egress terminates TLS for this exact host (repeatable)")
            ->allow_extra_args(false);
        app.add_option("--credential", rq.credentials,
                       "NAME@HOST[,HOST...]=file:PATH|fd:N: the sandbox holds a placeholder in NAME, cc-egress sends the secret to HOSTS (repeatable)")
            ->allow_extra_args(false);
        app.add_option("--upstream-ca", rq.upstreamCa, "PEM file of more CAs the session's cc-egress trusts for intercepted hosts");
        app.add_option("--run-as", rq.runAs, "run by root: the command's host UID[:GID] (default: the working directory's owner, else a uid of the session's own)");
        app.add_option("--deny-write", rq.denyWrite, "extra write-deny: a path, or a file name pattern (fails closed on Linux)");
        app.add_flag("--no-write-supervisor", rq.noWriteSupervisor,
                     "Run without the write supervisor (write-denies become read-only binds over what exists at "
                     "launch, as on kernels without it; said in the plan's notes)");
        app.add_flag("--drop-filename-denies", rq.dropFilenameDenies,
                     "run without the standard .env/*.key/*.pem write-denies bubblewrap cannot enforce");
        app.add_flag("--inherit-env", rq.inheritEnv, "pass the host environment unchanged (backend none only)");
            app.add_flag("--capture", rq.capture,
                         "programs that ignore the proxy variables reach the network through cc-egress too: every "
                         "destination's TCP on the allowlist's ports, and DNS answered from its name pool");
            app.add_option("--capture-port", rq.capturePorts, "one more TCP port --capture takes (repeatable)")
                ->allow_extra_args(false);
        app.add_flag("--print", rq.print, "print the plan and launch nothing (text on a terminal, else JSON)");
        cc::tool::Format format = cc::tool::Format::auto_;
        cc::tool::add_format_option(app, format);
        app.add_flag("--print-seatbelt", rq.printSeatbelt, "print the macOS Seatbelt profile for the spec");
        app.add_flag("--events", rq.events, "JSON Lines events on stdout instead of the child's own stdio");
        app.add_flag("--pty", rq.pty, "give the child a pseudo-terminal");
        app.add_option("--timeout", rq.timeout, "kill the whole sandbox after SECONDS (exit 137)")->check(CLI::NonNegativeNumber);
        app.add_option("--kill-after", rq.grace, "SECONDS between a forwarded SIGTERM/SIGINT and SIGKILL (default 3)")
            ->check(CLI::NonNegativeNumber);
        app.add_option("--vm-accel", rq.vmAccel, "backend microvm: kvm (default) or tcg (emulation, only when asked for)")
            ->type_name("{kvm,tcg}");
        app.add_option("--vm-kernel", rq.vmKernel, "backend microvm: the guest kernel image (modules/ and version beside it)");
        app.add_option("--vm-memory", rq.vmMemory, "backend microvm: the guest's memory in MiB (default 256)")
            ->check(CLI::Range(64u, 65536u));
        app.add_option("--vm-boot", rq.vmBoot,
                       "backend microvm: snapshot (default: restore a saved guest, saving one first if there is none) "
                       "or cold (a full boot)")
            ->type_name("{snapshot,cold}");
        app.add_option("command", rq.command, "the command and its arguments, after --");
        if (auto rc = cc::tool::parse(app, argc, argv, "cc-wrap")) return *rc;
        rq.printText = rq.print && cc::tool::text_output(format);
        return cc::sandbox::wrap(rq);
    }, cc::sandbox::exit_own_failure);
}
