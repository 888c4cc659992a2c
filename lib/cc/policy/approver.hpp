// Fail-closed resolution of `ask`: a question nobody can answer is never
// a yes. With no approver configured, ask -> deny. With one, the approver is an
// external program: it reads the question as one JSON object on stdin and
// answers `allow` or `deny` (the first word of stdout, or {"decision": ...}).
// Anything else -- another word, a non-zero exit, no answer within the
// timeout -- is deny, with the reason saying which.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cc/policy/policy.hpp"

namespace cc::policy {

struct Approver {
    std::vector<std::string> argv;  // empty: no approver
    std::chrono::milliseconds timeout{30000};
};

// "prog --flag x" -> argv split on blanks (no shell, no quoting).
Approver approver_from_command(const std::string& command, std::chrono::milliseconds timeout);

// Turns an ask into allow or deny; any other verdict is returned unchanged.
// `question` is what the approver sees, extra fields included.
Verdict resolve_ask(const Verdict& v, const nlohmann::json& question, const Approver& approver);

// The pieces of that protocol, for callers that run the approver themselves
// (cc-egress runs it without blocking its event loop): the program and its
// arguments; the verdict from its exit status and stdout; the verdict when
// it gave no answer in time or could not run.
std::string approver_program(const Approver& approver);
Verdict answer_verdict(const Verdict& v, int exit_code, const std::string& answer);
Verdict timeout_verdict(const Verdict& v, const Approver& approver);
Verdict failed_verdict(const Verdict& v, const std::string& what);

}  // namespace cc::policy
