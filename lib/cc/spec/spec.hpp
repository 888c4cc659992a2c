// The JSON model of a launch: what a launch is asked for (SandboxSpec) and what it
// reports back (Handle, Event, Violation). Field names are the wire contract
// (camelCase, share/cc/schema/*.schema.json, cc-json(5)).
//
//   auto spec = cc::spec::parse_sandbox_spec(text, "spec.json");
//   if (!spec) { ... spec.error().one_line() names the field path ... }
//   nlohmann::json j = cc::spec::to_json(*spec);   // round-trips
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/policy/policy.hpp"

namespace cc::spec {

struct BindMount {
    std::string hostPath;   // absolute
    std::string guestPath;  // absolute; defaults to hostPath when omitted
    bool readOnly = false;
    // A writable bind nested inside a protectedPath is refused unless the
    // operator says so here: that part of the protected tree is writable.
    bool writableInProtected = false;
};

struct SandboxSpec {
    std::string sessionId;
    std::string workspaceId;
    std::optional<std::string> agentId;
    std::optional<std::string> conversationId;  // fills ${conversation} in push rules (cc-pushgate --spec)
    std::vector<BindMount> bindMounts;
    bool networkEnabled = true;
    std::vector<std::string> egressAllowlist;
    std::optional<std::string> guestWorkdir;
    policy::Mode mode = policy::Mode::chat;
    std::vector<std::string> protectedPaths;
    std::vector<std::string> runnerStateDirs;
    std::vector<std::string> execGrantRoots;
    // Kernel surfaces the seccomp layer refuses unless the operator asks:
    // user namespaces inside the sandbox (nested sandboxes, rootless
    // containers) and ptrace (debuggers, strace).
    bool allowNestedNamespaces = false;
    bool allowPtrace = false;
    // Credential variables (GITHUB_TOKEN, *_API_KEY, ...) the operator wants
    // passed into the sandbox after all; exact names.
    std::vector<std::string> envPass;
};

Result<SandboxSpec> parse_sandbox_spec(const std::string& text, const std::string& subject);
Result<SandboxSpec> sandbox_spec_from_json(const nlohmann::json& j);
Result<SandboxSpec> load_sandbox_spec(const std::string& path);  // "-" is stdin
nlohmann::json to_json(const SandboxSpec& s);

// Backend names. Parsing a stored name: null or unknown -> none; the legacy
// value "docker" -> native.
enum class Backend { native, none, microvm };
std::string_view to_string(Backend b);
Backend parse_stored_backend(const std::optional<std::string>& stored);
// Strict parse for command-line flags: only the three names.
std::optional<Backend> parse_backend_flag(std::string_view s);

enum class State { created, warm, active, suspended, destroyed, error };
std::string_view to_string(State s);

struct Handle {
    std::string sessionId;
    Backend backend = Backend::none;
    State state = State::created;
    std::optional<std::string> error;
    nlohmann::json details = nlohmann::json::object();
};
nlohmann::json to_json(const Handle& h);

struct Violation {
    std::string action;  // "read", "write", "exec", "network", "unknown"
    std::string target;  // the path or host when it could be read off
    std::optional<std::string> raw;
};
nlohmann::json to_json(const Violation& v);

// Event kinds of a run's stream.
inline constexpr const char* event_kinds[] = {"starting", "ready", "stdout", "stderr",
                                             "exit", "killed", "violation"};

}  // namespace cc::spec
