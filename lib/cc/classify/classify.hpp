// Shell command line -> action classes -> one decision per mode.
//
//   auto r = cc::classify::classify("git push origin main", Mode::chat, cc::policy::default_policy());
//   r.decision == Decision::ask;  r.classes == {"push"};
//   std::cout << cc::json::write(cc::classify::to_json(r)) << '\n';
//
// Two steps, kept apart so each can be tested alone:
//  1. find_actions(): every simple command in the parsed line (inside
//     substitutions, here-document bodies, control structures, `bash -c`
//     strings and the usual wrappers too) mapped to action classes. A command
//     known only to read gets no class; an unknown one gets `run_code`.
//  2. classify(): each class is put to cc::policy::decide() for the mode; the
//     strictest verdict wins per sub-command and over the whole line. Nothing
//     here decides allow/ask/deny on its own.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cc/policy/policy.hpp"
#include "cc/shell/ast.hpp"

namespace cc::classify {

// Nested shell strings (bash -c, eval, su -c, env -S, watch, trap, git
// aliases) are re-parsed up to this depth; deeper is unparsable.
inline constexpr int max_reparse_depth = 8;

struct Finding {
    std::vector<std::string> argv;     // the words as parsed (quotes removed, expansions as written)
    std::vector<std::string> classes;  // sorted, unique; empty = known to only read
    std::vector<std::string> notes;    // why each class was given
    std::vector<std::string> refs;     // push: destination refs the line names
    // The command as its tool sees it, for command rules: after wrappers (sudo,
    // env, timeout, ...) and the tool's global options (git -C dir), the
    // name without its directory. Empty when no command was resolved.
    std::vector<std::string> resolved;
    // The command data entries that read it, outermost first ("wrappers.json
    // (sudo)", "git.json (git)"), for --explain; filled with `resolved`.
    std::vector<std::string> data;
    // Classes came from around the command (a redirection, a variable that
    // makes it run other code): a command rule may add to them, never lift them.
    bool context_classes = false;
    // A command name known only at run time ($x, ${x:-y}, $(...)): the
    // plausible readings of it (see plausible_readings) judged as commands,
    // each with the classes it would have. classify() asks when one of them
    // would be ask or deny, so an unknown name is never silently allowed in
    // chat when what the line shows of it would not be.
    struct Reading {
        std::string word;                  // the command word as written
        std::string text;                  // one reading of the command ("sudo id")
        std::vector<std::string> classes;  // its classes, sorted
    };
    std::vector<Reading> readings;
    std::size_t offset = 0;            // byte offset of the command in the line
};

// Step 1. Does not look at the mode or the policy. `resolve` fills
// Finding::resolved, which command rules need (it copies every command's words).
std::vector<Finding> find_actions(const shell::Script& script, bool resolve = false);

// The reading of last resort, for a line the parser rejected: the line cut at
// every byte that could end a command (; & | newline parentheses braces
// backquotes), quoted or not, each piece judged as a simple command with its
// quote characters removed. classify() adds a piece's finding only when it is
// stricter than everything else on the line, so a misread line is never judged
// more leniently than its commands would be alone.
std::vector<Finding> find_actions_lexically(std::string_view line);

struct SubCommand {
    Finding finding;
    policy::Decision decision = policy::Decision::allow;
    std::string reason;
    std::string source;  // the rule or default that decided ("" when no class)
    std::string action;  // the class whose verdict that was
};

struct Result {
    policy::Mode mode = policy::Mode::chat;
    policy::Decision decision = policy::Decision::allow;
    std::string reason;
    std::string source;
    std::string action;                // the class that decided
    bool resolved = false;             // an ask was turned into allow/deny by the approver
    std::vector<std::string> classes;  // sorted union
    std::vector<SubCommand> commands;
    std::optional<shell::ParseError> parse_error;
};

// A policy's command rules checked against their own examples: each "match"
// line must have a sub-command the rule matches, no "notMatch" line may. The
// error names the example ("rules[2].examples.notMatch[0]").
std::optional<Error> check_command_rules(const policy::Policy& policy);

// Step 2. A line that does not parse (or is too long, or nested too deep) is
// judged on what could be read, plus the `unparsable` class.
// `explain` fills Finding::resolved and Finding::data for every sub-command
// (as command rules do), for --explain.
Result classify(std::string_view line, policy::Mode mode, const policy::Policy& policy, bool explain = false);

// {"decision","mode","classes","reason","source","commands":[...],"parseError"?},
// keys in that order (ordered_json: also cheaper to build for small objects).
// The rvalue form moves the result's strings into the tree.
nlohmann::ordered_json to_json(const Result& r);
nlohmann::ordered_json to_json(Result&& r);

// The same JSON as text, appended to `out` without building the tree (the
// bytes of cc::json::write(to_json(r)), strings that are not UTF-8 as {"bytes":...}; --jsonl's "id", when
// given, last). What the one-line form and --jsonl print.
void append_json(std::string& out, const Result& r, const nlohmann::json* id = nullptr);

}  // namespace cc::classify
