// F12: the macOS backend. A Seatbelt (SBPL) profile generated per launch from
// the same inputs as the bubblewrap plan: permissive by default, with
// carve-outs. Unverified on Apple hardware (no macOS host in CI); the
// structure is golden-tested and the question table in tests/sandbox asks it
// the same questions as the bubblewrap argv.
//
//   std::string sbpl = cc::sandbox::seatbelt_profile(in, host, 3128, 1080);
//   sandbox-exec -p "$sbpl" -- CMD
#pragma once

#include <string>
#include <vector>

#include "cc/sandbox/plan.hpp"

namespace cc::sandbox {

// Glob over a file name or path -> SBPL regex body: ".env" -> (^|/)\.env$
std::string glob_to_regex(const std::string& glob);

// Ports are the host loopback ports of the session's proxies (macOS shares
// loopback with the host, so the child talks to cc-egress directly).
std::string seatbelt_profile(const PlanInput& in, const HostPaths& host, int http_port, int socks_port);

// Binaries never runnable inside (F12 "always-dangerous").
const std::vector<std::string>& seatbelt_exec_denies();

}  // namespace cc::sandbox
