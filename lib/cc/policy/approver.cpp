#include "cc/policy/approver.hpp"
#include "cc/core/child.hpp"
#include "cc/core/json_writer.hpp"

#include <boost/process.hpp>

#include <sstream>

namespace cc::policy {

namespace bp = boost::process;

Approver approver_from_command(const std::string& command, std::chrono::milliseconds timeout) {
    Approver a;
    std::istringstream in(command);
    for (std::string word; in >> word;) a.argv.push_back(word);
    a.timeout = timeout;
    return a;
}

namespace {

Verdict with(const Verdict& v, Decision d, const std::string& why) {
    Verdict out = v;
    out.decision = d;
    out.reason = v.reason + "; " + why;
    out.source = v.source + "+approver";
    return out;
}

}  // namespace

std::string approver_program(const Approver& approver) {
    auto found = bp::search_path(approver.argv[0]);
    return found.empty() ? approver.argv[0] : found.string();
}

Verdict timeout_verdict(const Verdict& v, const Approver& approver) {
    return with(v, Decision::deny, "approver gave no answer within " + std::to_string(approver.timeout.count()) +
                                       " ms, so deny");
}

Verdict failed_verdict(const Verdict& v, const std::string& what) {
    return with(v, Decision::deny, "approver could not run (" + what + "), so deny");
}

Verdict answer_verdict(const Verdict& v, int exit_code, const std::string& answer) {
    if (exit_code != 0)
        return with(v, Decision::deny, "approver exited with status " + std::to_string(exit_code) + ", so deny");
    std::string word;
    if (auto j = nlohmann::json::parse(answer, nullptr, false); !j.is_discarded() && j.is_object() &&
                                                                  j.contains("decision") && j["decision"].is_string())
        word = j["decision"].get<std::string>();
    else
        std::istringstream(answer) >> word;
    if (word == "allow") return with(v, Decision::allow, "approved");
    if (word == "deny") return with(v, Decision::deny, "refused by the approver");
    return with(v, Decision::deny, "approver answered '" + word.substr(0, 40) + "', not allow or deny, so deny");
}

Verdict resolve_ask(const Verdict& v, const nlohmann::json& question, const Approver& approver) {
    if (v.decision != Decision::ask) return v;
    if (approver.argv.empty()) {
        Verdict out = v;
        out.decision = Decision::deny;
        out.reason = v.reason + "; no approver is connected, so ask is deny";
        return out;
    }
    cc::child::Spec run;
    run.argv = approver.argv;
    run.argv[0] = approver_program(approver);
    run.env = cc::child::environment_of(cc::child::not_git);
    run.input = cc::json::write(question) + "\n";
    run.deadline = approver.timeout;
    run.output_cap = 64 * 1024;
    run.capture_err = false;
    auto done = cc::child::run(run);
    if (!done) return failed_verdict(v, done.error().one_line());
    if (done->late) return timeout_verdict(v, approver);
    int exit_code = done->status;
    std::string answer = std::move(done->out);
    return answer_verdict(v, exit_code, answer);
}

}  // namespace cc::policy
