// The three ways cc-classify is driven, as library calls on streams so tests
// run them in-process: one line, a JSON Lines batch, and the agent CLIs'
// pre-tool hooks (hook.hpp). Exit statuses are part of the interface (cc-classify(1)).
#pragma once

#include "cc/core/result.hpp"

#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cc/classify/classify.hpp"
#include "cc/policy/policy.hpp"

namespace cc::classify {

inline constexpr int exit_allow = 0;
inline constexpr int exit_ask = 10;
inline constexpr int exit_deny = 11;
int exit_status(policy::Decision d);

// Turns an ask into allow or deny (cc::policy::resolve_ask with the configured
// approver, which with no approver is always deny). Empty: asks stay asks.
using Resolver = std::function<policy::Verdict(const policy::Verdict&, const nlohmann::json& question)>;

struct Options {
    policy::Mode mode = policy::Mode::chat;
    policy::Policy policy;
    Resolver resolver;  // used by the one-line and batch forms when set; the hook always resolves
};

// The options of every form from the command line: the mode by name, the
// command data (share/cc/classify/*.json) installed, and the policy file
// (empty: the built-in policy) read, its command rules checked against their
// own examples. Bad input is an input error naming it. (The approver, which
// runs programs, is the tool's to add: opts.resolver.)
cc::Result<Options> make_options(const std::string& mode_name, const std::string& policy_path);

// What the approver is asked: the line, the mode and the classification.
nlohmann::json question(const Result& r, std::string_view line);

// Applies the resolver to an `ask` result (no-op otherwise).
void resolve(Result& r, std::string_view line, const Resolver& resolver);

// The command-line words of the one-line form exactly as given. CLI11 rewrites
// a positional of the form "[a,b]" (its list syntax: brackets dropped, commas
// made separate values), so the words are taken from argv itself, after CLI11
// has validated it: everything after "--", and each argument that is not an
// option or the value of one of `value_options` ("--mode plan"; "--mode=plan"
// is one argument).
std::vector<std::string> line_words(int argc, const char* const* argv, const std::vector<std::string>& value_options);

// One line: prints the JSON result, returns 0 / 10 / 11.
int run_line(const std::string& line, const Options& opts, std::ostream& out);
// The same with the JSON result (no newline) left in `json`, for a caller
// that writes it itself (cc-classify: one write(2), no stdio buffer).
int run_line(const std::string& line, const Options& opts, std::string& json);

// --explain: the same judgement as text, one block per sub-command (its
// decision, argv, classes, the rule or default that decided and why, the
// notes of what gave each class), then the line's decision.
//   deny   git push -f
//          classes destroy_work, push; decided by rules[0]: no force pushes
//          git push --force overwrites the remote's commits
std::string explain(const Result& r);
int run_explain(const std::string& line, const Options& opts, std::string& text);

// {"cmd": "...", "mode": "...", "id": any} per input line -> one result line
// each, in order. A malformed line is answered with {"error":..., "decision":
// "deny"} and the run ends with status 2 (named on `err`); otherwise 0.
int run_jsonl(std::istream& in, const Options& opts, std::ostream& out, std::ostream& err);

// The agent CLIs' pre-tool hooks: hook.hpp.

}  // namespace cc::classify
