// Step 2 of classification: classes -> decisions, through cc::policy::decide().
#include "cc/classify/classify.hpp"

#include <algorithm>

#include "cc/shell/parser.hpp"

namespace cc::classify {

namespace {

using policy::Decision;

// Strictest verdict over a finding's classes (and refs, for push rules).
SubCommand judge(Finding f, policy::Mode mode, const policy::Policy& pol) {
    SubCommand s;
    s.finding = std::move(f);
    s.decision = Decision::allow;
    bool first = true;
    for (const auto& cls : s.finding.classes) {
        std::vector<std::optional<std::string>> refs;
        if (cls == "push" && !s.finding.refs.empty())
            for (const auto& r : s.finding.refs) refs.emplace_back(r);
        else
            refs.emplace_back(std::nullopt);
        for (const auto& ref : refs) {
            policy::Verdict v = policy::decide(pol, {cls, mode, ref});
            if (first || v.decision > s.decision) {
                s.decision = v.decision;
                s.reason = v.reason;
                s.source = v.source;
                s.action = cls;
                first = false;
            }
        }
    }
    if (first) s.reason = "known to only read";
    // A command name known only at run time: asked (never more) when a
    // plausible reading of it would be ask or deny in this mode.
    for (const auto& rd : s.finding.readings) {
        if (s.decision >= Decision::ask) break;
        for (const auto& cls : rd.classes) {
            policy::Verdict v = policy::decide(pol, {cls, mode, std::nullopt});
            if (v.decision < Decision::ask) continue;
            s.decision = Decision::ask;
            s.reason = "the command name '" + rd.word + "' is only known at run time, and read as '" + rd.text +
                       "' it would be " + cls + " (" + std::string(policy::to_string(v.decision)) + " in " +
                       std::string(policy::to_string(mode)) + " mode)";
            s.source = v.source;
            s.action = cls;
            break;
        }
    }
    // A command rule decides the sub-command, except that it never lifts a
    // hard deny (privilege escalation, system destruction, namespace escape,
    // a push in a read-only mode) nor what came from around the command (a
    // redirection, LD_PRELOAD): those are not the command's to grant.
    if (!s.finding.resolved.empty())
        if (auto v = policy::decide_command(pol, s.finding.resolved, mode)) {
            bool hard = s.source.rfind("mode:", 0) == 0 || s.finding.context_classes;
            for (const auto& cls : s.finding.classes)
                if (const auto* c = policy::find_class(cls); c && c->chat == Decision::deny) hard = true;
            if (v->decision >= s.decision || !hard) {
                s.decision = v->decision;
                s.reason = std::move(v->reason);
                s.source = std::move(v->source);
                s.action = "command";
            }
        }
    return s;
}

}  // namespace

std::optional<Error> check_command_rules(const policy::Policy& pol) {
    auto matches = [](const policy::Rule& rule, const std::string& line) {
        for (const auto& f : find_actions(shell::parse(line), true))
            if (policy::command_matches(rule.match, f.resolved)) return true;
        return false;
    };
    for (std::size_t i = 0; i < pol.rules.size(); ++i) {
        const policy::Rule& rule = pol.rules[i];
        if (rule.action != "command") continue;
        std::string at = "rules[" + std::to_string(i) + "].examples.";
        for (std::size_t j = 0; j < rule.examples_match.size(); ++j)
            if (!matches(rule, rule.examples_match[j]))
                return input_error(at + "match[" + std::to_string(j) + "]",
                                   "'" + rule.examples_match[j] + "' does not match the rule");
        for (std::size_t j = 0; j < rule.examples_not_match.size(); ++j)
            if (matches(rule, rule.examples_not_match[j]))
                return input_error(at + "notMatch[" + std::to_string(j) + "]",
                                   "'" + rule.examples_not_match[j] + "' matches the rule");
    }
    return std::nullopt;
}

Result classify(std::string_view line, policy::Mode mode, const policy::Policy& pol, bool explain) {
    Result r;
    r.mode = mode;
    std::vector<Finding> findings;
    shell::Script script = shell::parse(line);
    bool resolve = explain || std::any_of(pol.rules.begin(), pol.rules.end(),
                                          [](const policy::Rule& rule) { return rule.action == "command"; });
    findings = find_actions(script, resolve);
    script.root = {};  // the tree is done with (a 1 MiB line makes ~28 MB of it)
    if (!script.ok) {
        // Judged on what could be read, and never better than the unparsable class.
        Finding f;
        f.offset = script.error.offset;
        f.classes = {"unparsable"};
        f.notes = {script.error.message};
        findings.push_back(std::move(f));
        r.parse_error = script.error;
    }
    bool first = true;
    r.commands.reserve(findings.size());
    for (auto& f : findings) {
        SubCommand s = judge(std::move(f), mode, pol);
        if (s.finding.argv.empty() && s.finding.classes == std::vector<std::string>{"unparsable"} && r.parse_error &&
            s.finding.offset == r.parse_error->offset) {
            s.reason = "the line does not parse (line " + std::to_string(r.parse_error->line) + ", column " +
                       std::to_string(r.parse_error->column) + ": " + r.parse_error->message + "): " + s.reason;
        }
        for (const auto& c : s.finding.classes) r.classes.push_back(c);
        // The strictest sub-command explains the line; on a tie, one with a class.
        if (first || s.decision > r.decision || (s.decision == r.decision && r.source.empty() && !s.source.empty())) {
            r.decision = s.decision;
            r.reason = s.reason;
            r.source = s.source;
            r.action = s.action;
            first = false;
        }
        r.commands.push_back(std::move(s));
    }
    std::vector<Finding>().swap(findings);  // all moved out; a 1 MiB line has ~50,000
    // Other readings of the line: a finding of theirs that is stricter than
    // the line so far is added and decides, so no misreading can make the
    // line weaker than its commands judged alone.
    auto stricter = [&](std::vector<Finding> other, const char* how) {
        for (auto& f : other) {
            SubCommand s = judge(std::move(f), mode, pol);
            if (s.decision <= r.decision) continue;
            for (const auto& c : s.finding.classes) r.classes.push_back(c);
            r.decision = s.decision;
            r.reason = s.reason + how;
            r.source = s.source;
            r.action = s.action;
            r.commands.push_back(std::move(s));
        }
    };
    if (line.find("\\\n") != std::string_view::npos) {
        // Continuations are joined where bash joins them; the line read
        // without joining is judged too, in case that guess was wrong.
        shell::Limits raw;
        raw.join_continuations = false;
        stricter(find_actions(shell::parse(line, raw), resolve), " (read without joining continuations)");
    }
    // The parser could not decide: never weaker than any command of the
    // line cut at every operator (a misread that hides a later sudo stays a deny).
    if (r.parse_error) stricter(find_actions_lexically(line), " (read without the parser)");
    if (first) r.reason = "nothing to run";
    else if (r.decision == Decision::allow && r.source.empty()) r.reason = "every command is known to only read";
    std::sort(r.classes.begin(), r.classes.end());
    r.classes.erase(std::unique(r.classes.begin(), r.classes.end()), r.classes.end());
    return r;
}

namespace {

using ojson = nlohmann::ordered_json;

// --jsonl builds one of these trees per input line, so they are built
// cheaply: objects are sized once (an ordered_json object is a vector;
// growing it a key at a time reallocates and moves every member), and the
// Result's strings are moved into the tree rather than copied.
ojson object(std::size_t keys) {
    ojson o = ojson::object();
    o.get_ptr<ojson::object_t*>()->reserve(keys);
    return o;
}

ojson strings(std::vector<std::string>&& v) {
    ojson a = ojson::array();
    auto& arr = *a.get_ptr<ojson::array_t*>();
    arr.reserve(v.size());
    for (auto& s : v) arr.emplace_back(std::move(s));
    return a;
}

}  // namespace

nlohmann::ordered_json to_json(const Result& r) { return to_json(Result(r)); }

nlohmann::ordered_json to_json(Result&& r) {
    ojson j = object(6 + !r.source.empty() + r.resolved + r.parse_error.has_value() + 1);  // + "id" in --jsonl
    j["decision"] = policy::to_string(r.decision);
    j["mode"] = policy::to_string(r.mode);
    j["classes"] = strings(std::move(r.classes));
    j["reason"] = std::move(r.reason);
    if (!r.source.empty()) j["source"] = std::move(r.source);
    if (r.resolved) j["approver"] = true;
    ojson cmds = ojson::array();
    auto& arr = *cmds.get_ptr<ojson::array_t*>();
    arr.reserve(r.commands.size());
    for (auto& s : r.commands) {
        ojson c = object(5 + !s.source.empty() + !s.finding.notes.empty() + !s.finding.refs.empty());
        c["argv"] = strings(std::move(s.finding.argv));
        c["classes"] = strings(std::move(s.finding.classes));
        c["decision"] = policy::to_string(s.decision);
        c["reason"] = std::move(s.reason);
        if (!s.source.empty()) c["source"] = std::move(s.source);
        if (!s.finding.notes.empty()) c["notes"] = strings(std::move(s.finding.notes));
        if (!s.finding.refs.empty()) c["refs"] = strings(std::move(s.finding.refs));
        c["offset"] = s.finding.offset;
        arr.push_back(std::move(c));
    }
    j["commands"] = std::move(cmds);
    std::vector<SubCommand>().swap(r.commands);  // their strings now live in the tree
    if (r.parse_error) {
        ojson e = object(4);
        e["message"] = std::move(r.parse_error->message);
        e["line"] = r.parse_error->line;
        e["column"] = r.parse_error->column;
        e["offset"] = r.parse_error->offset;
        j["parseError"] = std::move(e);
    }
    return j;
}

}  // namespace cc::classify
