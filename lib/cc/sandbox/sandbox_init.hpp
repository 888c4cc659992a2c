// The init step: the first program inside the sandbox is cc-wrap-init, a
// small static binary installed next to cc-wrap (or cc-wrap itself when it is
// missing), bound read-only at /run/cc/init and run as
//   /run/cc/init --internal-sandbox-init --transport T [--http-port N --socks-port N
//           --egress-dir D [--socat PATH]] -- CMD ARGS...
// It wires the proxies, then execs CMD; it maps exec failures to 126/127.
//
// fd-handover (the fast path): listening TCP sockets are made on 127.0.0.1
// in the sandbox's own network namespace and sent to cc-egress over its inbox
// socket (SCM_RIGHTS) so the proxy accepts on them directly: no copy hop.
// socat-bridge (fallback): socat listens on loopback and copies to the
// proxies' Unix sockets bound into the sandbox.
#pragma once

#include <string>
#include <vector>

namespace cc::sandbox {

// argv after "--internal-sandbox-init". Returns only on failure (an exit
// status). Links libc and libstdc++ only, so it can be a static binary that
// starts in about a millisecond.
int sandbox_init_main(const std::vector<std::string>& args);

// The write supervisor's half in here (supervisor.hpp): loads the BPF
// program in `filter_fd` with SECCOMP_FILTER_FLAG_NEW_LISTENER (and
// WAIT_KILLABLE_RECV) and sends the listener over `sock_fd` (SCM_RIGHTS) to
// cc-wrap. False with `err` on failure.
bool install_write_filter(int filter_fd, int sock_fd, std::string& err);

}  // namespace cc::sandbox
