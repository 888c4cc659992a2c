// The single place where a rule is decided. cc-classify (command lines),
// cc-pushgate (ref updates) and cc-egress (the network rule at start) all ask
// decide(); none of them hard-codes an allow/ask/deny of its own.
//
//   auto policy = cc::policy::load("policy.json");        // or default_policy()
//   cc::policy::Verdict v = cc::policy::decide(*policy, {"push", Mode::chat, "refs/heads/main"});
//   if (v.decision == Decision::ask) v = cc::policy::resolve_ask(v, question, approver);
//
// Policy file (JSON, version 1):
//   {"version": 1, "rules": [
//      {"action": "push", "refs": ["main", "refs/tags/*"], "decision": "deny", "reason": "..."},
//      {"action": "push", "refs": ["refs/heads/agent/${conversation}/*"], "kinds": ["force"], "decision": "allow"},
//      {"action": "install_package", "modes": ["chat"], "decision": "ask"}]}
//   Command rules name a simple command as cc-classify resolved it (after
//   wrappers such as sudo or env, and a tool's global options such as git -C):
//      {"action": "command", "match": ["git", "push", ["--force", "-f"]], "decision": "deny",
//       "reason": "...", "examples": {"match": ["git -C x push -f"], "notMatch": ["git push"]}}
//   The first element matches the command's name, each later one (a word, or
//   a list of alternatives) a later word, in order, not necessarily adjacent.
// The first rule whose action (and refs, and modes, when given) match decides;
// where none matches, the mode's default table does. Unknown actions,
// decisions, modes or fields are input errors.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::policy {

enum class Decision { allow = 0, ask = 1, deny = 2 };

std::string_view to_string(Decision d);
std::optional<Decision> parse_decision(std::string_view s);
// deny > ask > allow.
constexpr Decision strictest(Decision a, Decision b) { return a > b ? a : b; }

enum class Mode { chat, plan, review, orchestrate };

std::string_view to_string(Mode m);
std::optional<Mode> parse_mode(std::string_view s);
// plan, review and orchestrate may not change anything.
constexpr bool is_read_only(Mode m) { return m != Mode::chat; }

// Action classes: the stable vocabulary shared by every tool.
struct ActionClass {
    std::string_view name;
    std::string_view summary;
    Decision chat;       // default in chat mode
    Decision read_only;  // default in plan / review / orchestrate
};

// Every known class, in a stable order (documented in cc-classify(1)).
const std::vector<ActionClass>& action_classes();
const ActionClass* find_class(std::string_view name);

struct Rule {
    std::string action;
    std::vector<std::string> refs;   // push only: ref globs; "main" means refs/heads/main; ${agent} etc. filled in
    std::vector<std::string> kinds;  // push only: create, update, force, delete; empty: every kind
    std::vector<Mode> modes;         // empty: every mode
    // push only, content conditions (all given must hold): the update changes
    // a path matching one of `paths`, brings a file larger than `size_over`
    // bytes, changes more than `files_over` files.
    std::vector<std::string> paths;
    std::optional<std::uint64_t> size_over;
    std::optional<std::uint64_t> files_over;
    bool has_content() const { return !paths.empty() || size_over || files_over; }
    Decision decision = Decision::deny;
    std::string reason;
    // action "command" only: the pattern, and command lines it must match and
    // must not match (checked when the policy is loaded by cc-classify).
    std::vector<std::vector<std::string>> match;
    std::vector<std::string> examples_match, examples_not_match;
};

struct Policy {
    int version = 1;
    std::vector<Rule> rules;
};

Result<Policy> parse(const std::string& text, const std::string& subject);
Result<Policy> load(const std::string& path);  // "-" is stdin
// The built-in defaults: no rules, only the per-mode tables. share/cc/policy/default.json
// is the same policy written out (a test keeps the two equal).
Policy default_policy();

// The operator's policy file, read by every tool that is given no --policy:
// $CC_CONFIG_DIR/policy.json when that variable is set, else
// SYSCONFDIR/cc/policy.json (/etc/cc/policy.json from the package, a
// conffile).
std::string operator_policy_path();
// The policy a tool runs with: `given` (--policy) when there is one, else
// the operator's file when it exists, else `fallback` (the tool's built-in
// policy). `used` gets which: the path, or "built-in". A file that exists
// but cannot be read or parsed is an error (never a silent fall back).
Result<Policy> load_effective(const std::string& given, const Policy& fallback, std::string* used = nullptr);

struct Question {
    std::string action;              // an action class name
    Mode mode = Mode::chat;
    std::optional<std::string> ref;  // full ref name, for push
};

struct Verdict {
    Decision decision = Decision::deny;
    std::string reason;  // human-readable, fit for git's "(Control Center policy: <reason>)"
    std::string source;  // "rules[2]" or "default:chat"
};

// Does a command rule's pattern match a resolved simple command (argv[0] the
// command's name, without its directory)?
bool command_matches(const std::vector<std::vector<std::string>>& pattern, const std::vector<std::string>& argv);

// The first command rule for this mode whose pattern matches, as a verdict
// ("rules[i]"), or nullopt.
std::optional<Verdict> decide_command(const Policy& policy, const std::vector<std::string>& argv, Mode mode);

// What an update brings, read from its objects: the paths it changes (added,
// modified, deleted) in any of its commits, and where a symbolic link of the
// new tree makes one of them appear too; its largest new file and how many
// files it changes; the submodules (gitlinks) it adds or moves, below which
// any path may appear in a checkout.
struct PushContent {
    std::vector<std::string> paths;
    std::uint64_t largest = 0;
    std::uint64_t files = 0;
    std::vector<std::string> opaque;
};

// What a push question knows besides the ref: the kind of change, the
// session's names for ${agent}, ${conversation} and ${session} in refs, and
// the update's content once it was read.
struct PushFacts {
    std::string kind;                                // create, update, force or delete; empty: unknown
    std::map<std::string, std::string> vars;         // "agent" -> "claude-1", ...
    const PushContent* content = nullptr;            // null: not read (yet)
};

// A rule with kinds matches only a question whose kind is one of them (a
// question without a kind skips it, as one without a ref skips refs rules);
// a rule with content conditions only a question whose content was read.
Verdict decide(const Policy& policy, const Question& q, const PushFacts& facts = {});

// Does a ref glob match a full ref name? A pattern without "refs/" names a
// branch. `*` matches across '/' (refs/heads/* covers refs/heads/a/b).
// ${agent}, ${conversation} and ${session} are replaced from `vars`; a
// pattern naming one that is not given matches nothing.
bool ref_matches(const std::string& pattern, const std::string& ref,
                 const std::map<std::string, std::string>& vars = {});

// A path pattern (content rules): fnmatch, '*' crossing '/', so
// ".github/workflows/*" covers every file below it; a pattern without '/'
// matches a file of that name in any directory ("CODEOWNERS"). Case is
// ignored: hosts and checkouts on macOS and Windows read ".GitHub/Workflows"
// as ".github/workflows".
bool path_matches(const std::string& pattern, const std::string& path);
// Could a path below directory `dir` (a submodule, whose files are not in
// the push) match the pattern? A pattern without '/' always could.
bool path_could_match_below(const std::string& pattern, const std::string& dir);
// Does any push rule (for this mode) have content conditions? Then updates
// must be read before they are decided.
bool has_content_rules(const Policy& policy, Mode mode);

// The kinds of change a push rule can name, and the ${...} names refs may use.
const std::vector<std::string>& push_kinds();
const std::vector<std::string>& ref_variables();
// Why `value` cannot fill a ${...} in a ref pattern (it must be one plain ref
// name component: letters, digits, '.', '_' and '-', not starting with '.' or
// '-', at most 64 bytes; never a glob), or nullopt when it can.
std::optional<std::string> bad_ref_variable(std::string_view value);
// The ${...} names a policy's refs use.
std::vector<std::string> variables_used(const Policy& policy);

}  // namespace cc::policy
