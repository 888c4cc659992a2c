// cc-egress as a library call: options (as the command line gives them) ->
// a plan (the session's rule set and the network decision) -> either a
// --check report or the running proxy pair.
//
//   cc::net::EgressOptions o;  o.spec_path = "spec.json";
//   auto plan = cc::net::make_plan(o);                 // input errors name the field or pattern
//   int rc = cc::net::run_egress(o, [](const nlohmann::json& line) { ... });  // JSON Lines out
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/net/rules.hpp"
#include "cc/policy/policy.hpp"

namespace cc::net {

struct EgressOptions {
    std::optional<std::string> spec_path;  // SandboxSpec: networkEnabled, egressAllowlist, sessionId, mode
    std::optional<std::string> policy_path;
    std::vector<std::string> allow, allow_files, deny;
    bool no_baseline = false;
    std::optional<std::string> network;  // "on" | "off": overrides the spec (a policy deny still wins)
    std::vector<std::string> check;      // --check targets: no listening
    bool resolve = false;                // --check --resolve
    bool dry_run = false;                // print the plan and exit
    std::string dns_server;
    std::string listen = "127.0.0.1";
    std::uint16_t http_port = 0, socks_port = 0;
    std::optional<std::string> unix_dir, fd_inbox;
    bool fd_inbox_once = false;  // the inbox takes one handover, then is closed and removed
    bool exit_with_stdin = false;
    bool sni_check = true;
    bool report = false;  // --report: what only the allowlist denies is allowed and logged wouldDeny
    std::string tls_ports = "443";  // --tls-ports: comma-separated ports, or "none"
    double header_timeout = 10;  // seconds; 0 = off: request head, SOCKS5 handshake, TLS ClientHello
    double idle_timeout = 300;   // seconds; 0 = off: nothing relayed on a tunnel, request or kept-alive connection
    int threads = 0;             // event loops; 0 = one per CPU (at most 8)
    double first_byte_timeout = 30;  // seconds; 0 = off: a tunnel on which nothing moved yet
    std::size_t max_connections = 0, max_client_connections = 0;  // 0 = from the descriptor limit
    std::optional<std::string> auth_token_file;  // proxy authentication with the token it holds
    std::string approver;          // --approver: answers network asks (argv split on blanks); "": ask = deny
    int approver_timeout_ms = 30000;
    std::optional<std::string> metrics_socket;  // --metrics-socket: OpenMetrics page on a Unix socket
    std::vector<std::string> intercept;          // --intercept HOST: TLS terminated here
    std::vector<std::string> credentials;        // --credential NAME@HOSTS=SOURCE
    std::optional<std::string> upstream_ca;      // --upstream-ca: more trust for intercepted upstreams
    std::optional<std::string> ca_cert_out;      // --ca-cert-out: the session CA's certificate, written at start
};

// The token of --auth-token-file: its first line, 1 to 255 printable bytes
// (SOCKS5 carries at most 255), in a file no other user can read.
Result<std::string> read_auth_token(const std::string& path);

struct Plan {
    RuleSet rules;
    std::string session_id;
    bool network = true;
    // The network rule is ask (and the network on): each new host:port the
    // rules allow goes to the approver.
    bool ask = false;
    policy::Verdict network_verdict;
    nlohmann::json network_rule;  // {"decision","source","reason"} from lib/cc/policy, plus what set it
    std::string policy_source;    // the policy file read (--policy or the operator's), or "built-in"
    policy::Policy policy;        // as read: requests to intercepted hosts are decided with it too
    policy::Mode mode = policy::Mode::chat;
    nlohmann::json to_json() const;
};

// Reads the spec and policy, asks decide({"network_access", mode}) once
// (deny -> off; allow -> on; ask -> on, each new host:port put to the
// approver), builds the rule set.
Result<Plan> make_plan(const EgressOptions& o);

// `cc-egress learn`: from a session's connection lines (JSON Lines, as
// cc-egress writes them; other events are skipped), the allowlist entries that
// would have allowed its traffic: every host that was allowed, allowed with
// wouldDeny (--report), or denied for want of an allow entry (or of its port)
// or by a TLS server name that is not allowed; canonical, sorted, each once,
// with the ports it was reached on unless those are only 80 and 443. What the
// always-deny lists, --deny or the address checks refused is not learnt, nor
// anything `refusals` (the always-deny lists and --deny, no allow entry)
// refuses now: an always-deny or --deny name, a non-public or denied address
// (literal, or the one a name resolved to), from whichever field. An input
// error names the line that is not a JSON object.
Result<std::vector<std::string>> learn_allowlist(std::string_view jsonl, const RuleSet& refusals);
// The refusals learn applies: the always-deny lists and o.deny, with o.allow
// and o.allow_files (so a non-public address the operator names exactly is
// not refused), the network on.
Result<RuleSet> learn_refusals(const EgressOptions& o);

// --check: one line per target; true when every target is allowed.
bool check_targets(const EgressOptions& o, const Plan& plan,
                   const std::function<void(const nlohmann::json&)>& out);

// Everything: plan, then --dry-run / --check / serve. Returns the exit status
// (0 ok; 1 a --check target denied or the proxy failed; input errors come back
// as errors for the caller to report with status 2).
// With `out_text`, the connection lines leave as JSON text through it, the
// lines a batch holds in one call (one write for many connections); the
// other lines still go to `out`.
Result<int> run_egress(const EgressOptions& o, const std::function<void(const nlohmann::json&)>& out,
                       const std::function<void(const std::string&)>& log,
                       const std::function<void(std::string_view)>& out_text = {});

}  // namespace cc::net
