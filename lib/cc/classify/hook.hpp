// The agent CLIs' pre-tool hooks: one JSON object on stdin about a tool call
// the CLI is about to make, one answer on stdout. cc-classify(1), HOOKS, lists
// the field sets read and written for each CLI.
//
//   claude  PreToolUse, tool "Bash": hookSpecificOutput {hookEventName,
//           permissionDecision allow|deny|ask, permissionDecisionReason,
//           updatedInput}
//   codex   PreToolUse, tool "Bash": the same wire format, but Codex honours
//           only deny (and allow with updatedInput); an allow is no output,
//           which leaves the call to Codex's own approval
//   gemini  BeforeTool, tool "run_shell_command": {decision allow|deny,
//           reason, hookSpecificOutput {hookEventName, tool_input}}
//
// Never fail open. Each CLI blocks the call when the hook exits 2 with a
// reason on stderr, and runs it on any other failure (another status, a
// crash, its own timeout). So malformed input, an internal error, a fatal
// signal and the hook's own deadline all end in exit 2 with one line on
// stderr (arm_hook_failsafe), before the CLI's timeout could fire.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "cc/classify/cli.hpp"
#include "cc/core/result.hpp"

namespace cc::classify {

enum class HookProtocol { claude, codex, gemini };
std::optional<HookProtocol> parse_hook_protocol(std::string_view name);

// What a CLI's settings say of its pre-tool hook (hook_install.hpp writes them).
struct Protocol {
    const char* name;
    const char* event;  // hook_event_name of the pre-tool event
    const char* shell;  // tool_name of the shell tool
    bool timeout_ms;    // the CLI gives hook timeouts in milliseconds (else seconds)
};
const Protocol& protocol(HookProtocol p);

struct HookOptions {
    HookProtocol protocol = HookProtocol::claude;
    // claude: an ask is answered "ask" (the CLI asks its user) instead of
    // going to the approver or becoming deny.
    bool emit_ask = false;
    // Non-empty: an allowed command is rewritten to run inside the sandbox,
    // `cc-wrap --spec SPEC -- bash -c 'COMMAND'` (claude updatedInput, codex
    // updatedInput, gemini hookSpecificOutput.tool_input).
    std::string wrap_spec;
    // The cc-wrap the rewrite names: an absolute path (a CLI that runs
    // commands under a login shell resets PATH); see sibling_program().
    std::string wrap_exe = "cc-wrap";
};

// The line put before a call the read-only modes let run (as the CLI's
// updatedInput / tool_input): no pager may run a shell or another program.
extern const char* const pager_guard;

// `'EXE' --spec 'SPEC' -- bash -c 'COMMAND'`, each quoted for the shell the
// CLI runs it with (single quotes; a quote inside is '\'').
std::string wrap_command(std::string_view exe, std::string_view spec, std::string_view command);

// A word for the shell the CLI runs a hook command with: as it is when no
// character in it needs quoting, else in single quotes (as wrap_command).
std::string shell_word(std::string_view s);

// This program's own absolute path (/proc/self/exe); nullopt when unreadable.
std::optional<std::string> self_program();

// The absolute path of another of the project's programs installed beside
// this one (the same directory, or its own directory next to this one's in
// a build tree); nullopt when there is none that can be run.
std::optional<std::string> sibling_program(std::string_view name);

// How long the hook and its approver may take, from the time the agent CLI
// gives the hook (`deadline_ms`; 0: not said, taken as 30000, what the
// shipped examples give): the hook answers (deny, at worst) a second before
// the CLI would give up and run the call (a quarter of the deadline when it
// is under 4 s), and the approver
// is stopped half a second before the hook's own deadline. `hook_ms` and
// `approver_ms` are what was asked for (0: not asked); asking for more than
// the deadline allows is an input error.
struct HookTimes {
    int hook_ms = 0, approver_ms = 0;
};
cc::Result<HookTimes> hook_times(int deadline_ms, bool approver, int hook_ms, int approver_ms);

// The hook's flags as the command line gives them, and what they come to:
// the hook's options and deadlines. A bad combination, an unreadable
// SandboxSpec or no cc-wrap beside this program is an input error (one line,
// exit 2). `approver_ms` is also the approver's timeout outside a hook.
struct HookFlags {
    std::string protocol;  // --hook; empty: not a hook
    bool emit_ask = false;
    std::string wrap_spec;
    int hook_timeout_ms = 0, deadline_ms = 0, approver_timeout_ms = 0;  // 0: not given
    bool approver = false;                                              // --approver given
};
struct HookSetup {
    HookOptions options;
    int hook_ms = 0;  // the failsafe's deadline (arm_hook_failsafe); 0 outside a hook
    int approver_ms = 30000;
};
cc::Result<HookSetup> resolve_hook_flags(const HookFlags& f);

// One hook call. Status 0 with the answer on `out`, or 2 with one line on
// `err` (bad input, or any exception inside: the CLI blocks the call).
int run_hook(std::istream& in, const Options& opts, const HookOptions& hook, std::ostream& out, std::ostream& err);

// From here until the process ends: a fatal signal (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGABRT, SIGTERM) or `timeout_ms` passing writes
// "cc-classify: hook: <what happened>; the call is denied" on stderr and
// exits 2, which every supported CLI takes as a block.
void arm_hook_failsafe(int timeout_ms);

}  // namespace cc::classify
