// cc-probe: which sandbox backend does this host offer? See cc-probe(1).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

#include "cc/core/cli.hpp"
#include "cc/core/tool.hpp"
#include "cc/probe/command.hpp"

int main(int argc, char** argv) {
    return cc::tool::run("cc-probe", [&] {
        CLI::App app{"Report which sandbox backend this host offers.", "cc-probe"};
        cc::probe::CommandOptions o;
        cc::tool::standard_flags(app, "cc-probe");
        app.add_flag("--json", o.json, "print one JSON object instead of the start-up line");
        app.add_option("--sandbox", o.sandbox, "on (default) or off; beats CC_SERVER_SANDBOX");
        app.add_option("--backend", o.backend, "parse a stored backend name and show what this host gives for it");
        app.add_flag("--diagnose", o.diagnose, "exercise every mechanism for real and report each check");
        app.add_option("--data-dir", o.data_dir, "directory whose filesystem is checked for reflink (with --diagnose)");
        app.add_option("--container-seccomp", o.container_seccomp,
                       "print this Docker/Podman seccomp profile (a file, or - for stdin) with the calls cc-wrap's "
                       "sandbox needs allowed");
        if (auto rc = cc::tool::parse(app, argc, argv, "cc-probe")) return *rc;
        if (const char* env = std::getenv("CC_SERVER_SANDBOX")) o.sandbox_env = env;
        return cc::probe::run_command(o, *cc::probe::real_host(), std::cout, std::cerr);
    });
}
