// The session's proxy pair on Boost.Asio event loops (one per CPU; a
// connection stays on the loop that accepted it): an HTTP
// proxy (CONNECT tunnels and absolute-form http:// requests with keep-alive)
// and a SOCKS5 proxy (RFC 1928, no-auth CONNECT), on 127.0.0.1, optionally on
// Unix sockets, and on listening sockets handed over an fd inbox.
//
//   cc::net::ProxyConfig c;  c.rules = ...;  c.on_ready = [](json ready) {...};
//   cc::net::ProxyStats s = cc::net::run_proxy(c).value();   // returns on SIGTERM/SIGINT
//
// Every connection is decided by RuleSet (rules.hpp): name and IP-literal
// rules first, then the name is resolved once (resolver.hpp), every address
// vetted, and a vetted address dialled. Tunnels are relayed with splice(2)
// through pipes (no copy through user space), TCP_NODELAY on both legs.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cc/core/result.hpp"
#include "cc/net/credentials.hpp"
#include "cc/net/request_rules.hpp"
#include "cc/net/resolver.hpp"
#include "cc/net/rules.hpp"
#include "cc/policy/approver.hpp"

namespace cc::net {

struct ProxyConfig {
    std::shared_ptr<const RuleSet> rules;
    ResolverOptions dns;
    std::string listen_host = "127.0.0.1";
    std::uint16_t http_port = 0;   // 0: ephemeral
    std::uint16_t socks_port = 0;
    std::optional<std::string> unix_dir;  // DIR/http.sock and DIR/socks.sock
    std::optional<std::string> fd_inbox;  // Unix socket receiving listening fds (SCM_RIGHTS)
    bool fd_inbox_once = false;           // close and remove the inbox after its first handover
    bool exit_with_stdin = false;         // stop when stdin (a pipe) reaches EOF
    bool report = false;                  // allowlist denials are logged (wouldDeny), not enforced
    bool sni_check = true;                // tunnels: TLS server name must match the target
    // With sni_check: a tunnel to one of these ports must start with a TLS
    // ClientHello; other bytes there are refused (anywhere else they pass).
    std::vector<std::uint16_t> tls_ports = {443};
    // Timeouts; 0 turns one off.
    int handshake_timeout_ms = 10000;     // request head / SOCKS handshake / first TLS record
    int connect_timeout_ms = 10000;
    int idle_timeout_ms = 300000;         // nothing relayed either way: tunnels, requests, keep-alive waits
    int threads = 0;                      // event loops; 0: one per CPU (at most 8)
    int first_byte_timeout_ms = 30000;    // a tunnel on which no byte moved either way
    // Caps; 0: from the descriptor limit (each admitted connection keeps room
    // for its upstream socket and pipes), per client half of that, at most
    // 1,024. Over a cap: 503 (HTTP) or reply 01 (SOCKS5), rule "limit".
    std::size_t max_connections = 0;
    std::size_t max_client_connections = 0;  // per listener and peer address
    // When set: HTTP requests need Proxy-Authorization Basic with this password
    // (any user name), SOCKS5 clients RFC 1929 username/password with it.
    std::optional<std::string> auth_token;
    // The network rule is `ask`: each new host:port the rules let through is
    // put to `approver` (argv empty: none, so every such ask is deny with
    // reason "ask without approver"); answers are kept for the session.
    bool ask = false;
    policy::Approver approver;
    policy::Verdict network_rule;          // the ask, for the approver's reason
    nlohmann::json ask_question;           // fields every question carries (action, mode, sessionId, ...)
    // Hosts whose TLS is terminated here (intercept.hpp), with every host a
    // credential names; the session CA's certificate goes in the ready line
    // (interceptCa). Upstreams are verified against the system's trust store
    // and upstream_ca (a PEM file) when set.
    std::vector<std::string> intercept;
    std::vector<Credential> credentials;
    std::optional<std::string> upstream_ca;
    std::optional<std::string> ca_cert_out;  // the CA's certificate written here (0644) before listening
    // Requests on intercepted hosts: their action classes (request_rules.hpp),
    // decided by `policy` in `mode` like every other rule; read-only modes
    // let only GET, HEAD and OPTIONS through.
    std::shared_ptr<const RequestRules> request_rules;
    std::shared_ptr<const policy::Policy> policy;
    policy::Mode mode = policy::Mode::chat;
    // OpenMetrics text page on this Unix socket (never TCP).
    std::optional<std::string> metrics_socket;
    // Called once, listening, with the ready event (listen addresses filled in).
    nlohmann::json ready;                  // extra fields merged into the ready line
    std::function<void(const nlohmann::json&)> on_ready;
    // Called from any loop's thread, one call at a time (under a lock).
    std::function<void(nlohmann::json)> on_connection;  // one per connection / request, handed over
    std::function<void(const std::string&)> on_log;            // human log line (stderr)
};

struct ProxyStats {
    std::uint64_t connections = 0;
    std::uint64_t denied = 0;
};

// Listens, serves until SIGTERM/SIGINT (or stdin EOF when asked), closes every
// tunnel, and returns. Errors before listening (a port in use, a bad Unix
// directory) come back as values and nothing is left listening.
Result<ProxyStats> run_proxy(const ProxyConfig& config);

}  // namespace cc::net
