// Installing cc-classify as an agent CLI's pre-tool hook, and checking that
// the hook a settings file holds would really run: the settings file each
// CLI reads per scope, the entry (absolute path to this cc-classify, the
// CLI's own timeout written beside --deadline so the two agree), merged into
// what the file already holds (other settings and other hooks untouched; an
// earlier cc-classify entry replaced, never doubled).
//
//   auto path = settings_path("claude", "user");               // ~/.claude/settings.json
//   auto merged = install_hook(current_json, spec);            // the new file's JSON
//   auto problems = check_hook(current_json, "claude", 30000); // empty: it runs
#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::classify {

struct HookInstallSpec {
    std::string cli;                   // claude, codex or gemini
    std::string program;               // absolute path of cc-classify
    int deadline_ms = 30000;           // the CLI's timeout for the hook
    std::vector<std::string> args;     // more cc-classify options (--mode plan, --wrap-with SPEC, ...)
};

// The settings file `cli` reads for `scope` (user, project or managed):
//   claude  ~/.claude/settings.json, ./.claude/settings.json, /etc/claude-code/managed-settings.json
//   codex   $CODEX_HOME/hooks.json (~/.codex), ./.codex/hooks.json, /etc/codex/requirements.toml (TOML)
//   gemini  ~/.gemini/settings.json, ./.gemini/settings.json, /etc/gemini-cli/settings.json
cc::Result<std::string> settings_path(const std::string& cli, const std::string& scope);

// Codex's managed layer, /etc/codex/requirements.toml (TOML; Codex runs
// the hooks there without a person trusting them): the file's text with the
// hook in one marked block (replaced on the next install; the rest of the
// file byte for byte), or an input error when the file gives PreToolUse
// hooks in a form the block could clash with. codex_managed_hooks reads the
// block back as the JSON form check_hook reads.
std::string codex_requirements_path();
cc::Result<std::string> install_codex_managed(const std::string& text, const HookInstallSpec& spec);
nlohmann::json codex_managed_hooks(const std::string& text);

// The command line the hook runs (each word quoted for the CLI's shell).
std::string hook_command(const HookInstallSpec& spec);

// `settings` (an object; null for a file not there yet) with the hook in it.
cc::Result<nlohmann::json> install_hook(nlohmann::json settings, const HookInstallSpec& spec);

// Why the hook in `settings` would not run or not bound the CLI, one line
// each; empty when it would. `scope` matters for Codex, which runs hooks
// outside its managed layers only once a person trusted them in /hooks.
std::vector<std::string> check_hook(const nlohmann::json& settings, const std::string& cli, const std::string& scope);

}  // namespace cc::classify

namespace cc::classify {

// The whole of --install-hook and --check-hook: the settings file read
// (absent: empty; not JSON: an input error naming it), then either the hook
// merged in and the file written atomically (its directory made), with one
// JSON line on `out` saying where and what; or checked, with one JSON line
// ({"runs", "problems"}). Exit status: 0, or 1 when a checked hook would not
// run; input errors are returned.
cc::Result<int> install_or_check(bool install, const HookInstallSpec& spec, const std::string& scope,
                             const std::string& settings_file, std::ostream& out);

// The spec from cc-classify's own options: this cc-classify's absolute path,
// the CLI's deadline (default 30000), and the options the hook should run
// with (a mode other than chat, an absolute --policy, --wrap-with,
// --emit-ask, --approver).
cc::Result<HookInstallSpec> hook_install_spec(const std::string& cli, const std::string& mode, const std::string& policy,
                                          const std::string& wrap_spec, bool emit_ask, const std::string& approver,
                                          int deadline_ms);

}  // namespace cc::classify
