/* cc-wrap-init: the init step cc-wrap runs first inside the sandbox
 * (lib/cc/sandbox/init_step.h). Not meant to be run by hand. C, and linked
 * statically against musl where the build has musl-gcc, so its start costs
 * a tenth of a millisecond (bench/40-wrap.sh). */
#include <stdio.h>
#include <string.h>

#include "cc/sandbox/init_step.h"

static const char k_help[] =
    "Usage: cc-wrap-init [--internal-sandbox-init] [OPTIONS] -- CMD ARGS...\n"
    "The first program cc-wrap runs inside a sandbox: wires the proxies, applies\n"
    "Landlock, installs the write supervisor's filter, then execs CMD.\n"
    "\n"
    "Options:\n"
    "  --transport T      fd-handover, socat-bridge, loopback, host or none\n"
    "  --http-port N      loopback port of the HTTP proxy inside the sandbox\n"
    "  --socks-port N     loopback port of the SOCKS5 proxy inside the sandbox\n"
    "  --egress-dir DIR   where inbox.sock, http.sock and socks.sock are bound\n"
    "  --socat PATH       socat binary for the bridge\n"
    "  --pty 1            make standard input the controlling terminal of a new session\n"
    "  --landlock-abi N   restrict writes with Landlock (ABI N) to the --landlock-write paths\n"
    "  --landlock-write P a path (repeat) that stays writable under Landlock\n"
    "  --write-filter-fd N  descriptor holding the write supervisor's BPF filter\n"
    "  --write-sock-fd N  socket the filter's listener is sent to cc-wrap over\n"
    "  --help             this text\n"
    "  --version          print the name and version, then exit\n";

int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        fputs(k_help, stdout);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        puts("cc-wrap-init " CC_VERSION);
        return 0;
    }
    int first = argc > 1 && strcmp(argv[1], "--internal-sandbox-init") == 0 ? 2 : 1;
    return cc_init_step_main(argc - first, argv + first);
}
