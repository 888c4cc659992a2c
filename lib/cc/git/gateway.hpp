// cc-pushgate's server: a loopback smart-HTTP endpoint that git pushes to.
// For each push it reads the ref updates from the streamed body, asks the
// policy's `push` rule per ref, and then either forwards the push upstream
// with a write token from a TokenSource (streaming the pack both ways, never
// holding it whole) or answers with a report-status in which git prints
// " ! [remote rejected] <src> -> <dst> (Control Center policy: <reason>)".
//
//   cc::git::GatewayConfig cfg;  cfg.upstream = "https://github.com";  ...
//   cc::Status s = cc::git::serve(cfg, [](const nlohmann::json& ev) { print(ev); });
//
// Connections are served one thread each with blocking I/O bounded by
// timeouts: libcurl's read and write callbacks are synchronous, so a thread
// per push keeps the pack flowing client -> curl -> upstream without a buffer
// in between. The accept loop and signals run on Boost.Asio.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cc/core/result.hpp"
#include "cc/git/decision.hpp"
#include "cc/git/token.hpp"
#include "cc/policy/approver.hpp"
#include "cc/policy/policy.hpp"

namespace cc::git {

struct GatewayConfig {
    std::string listen = "127.0.0.1:0";      // loopback only
    std::string reject_label = std::string(default_reject_label);  // "(<label> policy: <reason>)"
    std::string upstream;                    // BASE_URL; repo O/N is BASE_URL/O/N.git
    std::vector<std::string> repos;          // linked repositories, OWNER/NAME as the operator spelled them
    policy::Policy policy;
    std::string policy_source;  // the policy file read (--policy or the operator's), or "built-in"
    policy::Mode mode = policy::Mode::chat;
    policy::Approver approver;               // empty: ask -> deny
    std::shared_ptr<TokenSource> tokens;
    std::uint64_t drain_limit = 1ull << 30;  // bytes read and discarded before a rejection
    std::chrono::seconds drain_timeout{120};
    std::chrono::seconds io_timeout{120};    // a client or upstream silent this long is dropped
    std::size_t max_connections = 32;        // connections past the secret check, at once
    std::size_t max_client_connections = 16; // of those, and of those waiting for it, per peer address
    std::size_t max_pending = 64;            // connections not yet past it (the oldest is cut)
    std::chrono::seconds head_timeout{10};   // to receive a whole request head
    std::map<std::string, std::string> ref_vars;  // agent, conversation, session: ${...} in refs patterns
    std::string mirror_dir;                  // bare mirrors for the ancestry check, one per repository
};

// The options as given on the command line, before anything is loaded.
struct GatewayOptions {
    std::string listen = "127.0.0.1:0";
    std::string reject_label = std::string(default_reject_label);
    std::string upstream;
    std::vector<std::string> repos;
    std::string worktree;                    // its origin remote is linked too
    std::string policy_file;
    std::string mode;                        // "": the spec's mode, else chat
    std::string spec_file;                   // a SandboxSpec: agentId, conversationId, sessionId and mode
    std::string approver;                    // command line, split on blanks
    std::string token_command, token_file;   // split on blanks / a path
    std::string app_id, app_key_file, installation_id, api_url = "https://api.github.com";
    std::uint64_t drain_limit = 1ull << 30;
    unsigned drain_timeout_s = 120;
    unsigned head_timeout_s = 10;
    unsigned max_connections = 32, max_client_connections = 16;
    std::string agent, conversation, session;  // fill ${agent} etc. in the policy's refs
    std::string mirror_dir;                    // default: $XDG_CACHE_HOME/cc-pushgate/mirrors
};

// Loads the policy and the App key, picks the one token source and checks
// everything: input errors name the option.
Result<GatewayConfig> configure(const GatewayOptions& opts);

using EmitFn = std::function<void(const nlohmann::json&)>;

// Checks the configuration (listen address on loopback, upstream URL, repo
// names): input errors name the option.
Status validate(const GatewayConfig& cfg);

// Serves until SIGINT or SIGTERM. Emits {"event":"ready",...} once listening,
// one {"event":"push",...} per push, and {"event":"shutdown",...} after every
// minted token was revoked.
Status serve(const GatewayConfig& cfg, const EmitFn& emit);

// The "ready" event for a gateway at `url`: the URL, the git configuration to
// apply (as keys and as config-file text) and the environment for other clients.
nlohmann::json ready_event(const std::string& url, const GatewayConfig& cfg);

}  // namespace cc::git
