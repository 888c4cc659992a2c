// The macOS backend: a Seatbelt (SBPL) profile generated per launch from the
// same inputs as the bubblewrap plan, keeping the same promises: nothing
// exists but the binds (and the system a process needs, read-only), only
// writable binds, runner state and a per-session temporary directory are
// writable, secrets are unreadable, the files the host runs later are not
// writable at any depth, and the only way out is the session's proxies.
//
// Seatbelt applies the LAST rule that matches an operation, so the profile
// starts from (deny default), lists every allow, and only then every deny:
// no later allow can re-open a secret or a mandatory write-deny. Every deny
// carries the session's tag as its message, which is what the violation log
// tap (seatbelt_log.hpp) filters on.
//
// Unverified on Apple hardware (no macOS host in CI): the text is golden-
// tested and an SBPL evaluator in tests/sandbox answers a question table
// against it with Seatbelt's documented rule semantics.
//
//   if (auto st = cc::sandbox::seatbelt_check(in); !st) -> exit 2
//   std::string sbpl = cc::sandbox::seatbelt_profile(in, host, 3128, 1080);
//   sandbox-exec -p "$sbpl" -- CMD
#pragma once

#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/sandbox/plan.hpp"

namespace cc::sandbox {

// What Seatbelt cannot honour, refused before anything runs (exit 2): a bind
// whose guestPath differs from its hostPath (Seatbelt filters paths, it does
// not move them), and a path holding control bytes other than tab and
// newline (they cannot be written into an SBPL string literal).
Status seatbelt_check(const PlanInput& in);

// The session's tag: "CCWRAP_" and 16 hex digits derived from the session id
// and the runtime directory (unique per launch). Only [A-Z0-9_].
std::string seatbelt_tag(const PlanInput& in);
std::string seatbelt_tag(const std::string& session_id, const std::string& runtime_dir);  // from a Plan

// The per-session temporary directory (TMPDIR inside): <runtimeDir>/tmp. The
// launcher creates it (seatbelt_prepare) before the command starts.
std::string seatbelt_session_tmp(const PlanInput& in);

// Ports are the host loopback ports of the session's proxies (macOS shares
// loopback with the host, so the child talks to cc-egress directly); 0 means
// none is known and the profile allows no network at all.
std::string seatbelt_profile(const PlanInput& in, const HostPaths& host, int http_port, int socks_port);

// The profile `cc-wrap --print-seatbelt` prints on any host: the plan built
// as on macOS (mechanism "seatbelt"), so the bubblewrap-only checks (filename
// rules over writable binds) do not apply.
Result<std::string> seatbelt_print(PlanInput in, const HostPaths& host);

// A string as an SBPL string literal: quotes and backslashes escaped, tab,
// newline and carriage return as \t \n \r. Other control bytes never reach
// it (seatbelt_check refuses them); if one does, it becomes '?', which
// matches no real path.
std::string sbpl_quote(const std::string& s);

// A path as a case-insensitive SBPL regex (APFS is case-insensitive by
// default): "/a/.Env" -> "^/[aA]/\.[eE][nN][vV]" + tail. tail is "$" for
// the path itself, "(/|$)" for it and everything below.
std::string ci_path_regex(const std::string& path, const std::string& tail);

// A glob over a file name (no '/') or a whole path -> case-insensitive regex
// body: ".env" -> "/\.[eE][nN][vV]$" (that name in any directory).
std::string glob_to_regex(const std::string& glob);

// What the profile grants by name, exposed for tests and cc-wrap(1).
const std::vector<std::string>& seatbelt_exec_denies();
const std::vector<std::string>& seatbelt_mach_services();
const std::vector<std::string>& seatbelt_system_read_roots();

// The session's proxies as Seatbelt reaches them: cc-egress's ready object
// (its own, started without an fd inbox, or one handed in with --egress)
// names the TCP listeners it took, "127.0.0.1:PORT" each, the ports chosen
// by the kernel. They fill w.http and w.socks, which the plan turns into the
// profile's only network allow and the proxy variables. Anything else
// (another address, no port, not a ready object) is refused: the child
// shares the host's loopback and nothing else.
//
//   {"event":"ready","http":"127.0.0.1:50123","socks":"127.0.0.1:50124"}
//     -> w.http "127.0.0.1:50123", w.socks "127.0.0.1:50124"
Status seatbelt_wiring_from_ready(const nlohmann::json& ready, EgressWiring& w, const std::string& subject);

// sandbox-exec's own complaint when the caller is already sandboxed (macOS
// refuses to stack a second profile): the reason to report with exit 125,
// or empty when the line is something else.
std::string seatbelt_apply_failure(const std::string& stderr_line);

}  // namespace cc::sandbox
