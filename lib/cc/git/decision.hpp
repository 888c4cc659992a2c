// What cc-pushgate decides about one push, as pure functions of what it knows:
// the request's ref commands, whether the repository is linked, the mode, the
// policy and the session's ${agent}/${conversation}/${session} names, and
// (once read from the upstream) which pushed names are symbolic refs there.
// The gateway asks these, then executes the plan (approver, ancestry check,
// forwarding); nothing here touches a socket, a process or the disk.
//
//   PushContext ctx{"github.com/acme/demo", true, Mode::chat, &policy, vars};
//   PushPlan plan = decide_push(req, ctx);            // first pass: the names as pushed
//   ctx.symrefs = read_from_upstream(plan.open_refs());
//   plan = decide_push(req, ctx);                     // a symbolic ref judged by its target too
//   ... approver for each `ask`; for plan.needs_ancestry(): settle_ancestry(ref, fast_forward) ...
//   PushOutcome out = outcome(plan, req.atomic());    // what goes upstream, what git reads as rejected
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/git/receive_pack.hpp"
#include "cc/policy/policy.hpp"

namespace cc::git {

struct PushContext {
    std::string repo_key;  // github.com/<owner>/<name>
    bool linked = false;   // the operator linked this repository
    policy::Mode mode = policy::Mode::chat;
    const policy::Policy* policy = nullptr;
    std::map<std::string, std::string> vars;  // agent, conversation, session
    // The upstream's symbolic refs among the pushed names: name -> the ref it
    // finally points at. nullopt until the upstream was asked.
    std::optional<std::map<std::string, std::string>> symrefs;
    // Pushed names the upstream lists as no ref, yet has as one: a symbolic
    // ref whose target does not exist (or a broken ref). A push to one would
    // create its unknown target, so it is refused.
    std::vector<std::string> unlisted;
    // Pushed names the push updates or deletes that the upstream's listing
    // does not show (hidden from fetches, uploadpack.hideRefs): such a name
    // may be a symbolic ref to any other ref, which the update would move or
    // the delete remove, so it is refused.
    std::vector<std::string> hidden;
};

// One ref update and what the policy says of it.
struct RefPlan {
    Command cmd;
    std::string kind;  // create, update, force, delete ("update" until ancestry says force)
    policy::Verdict verdict;
    std::string symref_target;  // the upstream resolves the name to this ref
    // An update whose verdict would be stricter as a force push: that verdict,
    // applied when the pack shows the old tip is not an ancestor of the new.
    std::optional<policy::Verdict> if_force;
    std::string looks_like;  // a name judged more strictly that this one can be mistaken for
    bool checked = false;    // the ancestry check ran
    bool content_rules = false;  // the policy has content rules that may apply to this update
    std::optional<policy::PushContent> content;  // what the update brings, once read

    bool allowed() const { return verdict.decision == policy::Decision::allow; }
    bool denied() const { return verdict.decision == policy::Decision::deny; }
    // The ancestry check has to run before this update can go.
    bool needs_ancestry() const { return if_force.has_value() && allowed(); }
    // Its objects have to be read (paths, sizes) before it can go.
    bool needs_content() const { return content_rules && allowed() && !content; }
};

struct PushPlan {
    std::vector<RefPlan> refs;

    // Names not denied yet: those the upstream is asked about (symbolic refs),
    // and whose push needs a write token.
    std::vector<std::string> open_refs() const;
    bool any_open() const { return !open_refs().empty(); }
};

PushPlan decide_push(const PushRequest& req, const PushContext& ctx);

// The ancestry check's answer for a ref that needed it: a fast-forward keeps
// its verdict; otherwise (or when the check could not tell) the update is a
// force push and the force verdict stands, its reason saying why. The result
// may be `ask`: the caller puts it to the approver.
void settle_ancestry(RefPlan& ref, const Result<bool>& fast_forward);

// The update's content, read from the quarantined objects: the policy is
// asked again with it, and a stricter verdict stands (content rules only ever
// narrow what the names allowed). When the content could not be read, the
// update is refused. The result may be `ask`.
void settle_content(RefPlan& ref, const Result<policy::PushContent>& content, const PushContext& ctx);

// What a decided plan comes to: the commands that go upstream, and the report
// lines (and band-2 messages) for those that do not. Under --atomic, or when
// nothing is allowed, nothing goes and every allowed ref reads as git's own
// "atomic transaction failed".
struct PushOutcome {
    std::vector<Command> forward;
    std::vector<RefStatus> rejected;
    std::vector<std::string> messages;
    bool forward_nothing() const { return forward.empty(); }
};
// The label of a refusal in git's reject line, as the product documents give
// it (agent servers look for it): " ! [remote rejected] main -> main
// (Control Center policy: <reason>)". --reject-label changes it.
inline constexpr std::string_view default_reject_label = "Control Center";

PushOutcome outcome(const PushPlan& plan, bool atomic, std::string_view label = default_reject_label);

// The policy's reason as git shows it: "<label> policy: <reason>".
std::string policy_reason(const policy::Verdict& v, std::string_view label = default_reject_label);

// The first character of a ref name a reader does not see or sees as a
// space (Unicode's default-ignorable code points, bidi controls, other
// format characters, C1 controls, spaces other than ASCII's) as "U+XXXX",
// or "" (refname.cpp). Bytes that are not UTF-8 are not looked at.
std::string invisible_char(std::string_view ref);
// The name a ref could be mistaken for: ASCII lower case, unseen characters
// left out, and each other character whose confusable skeleton (ICU,
// Unicode's confusables table) is ASCII replaced by it: Cyrillic, Greek,
// Armenian, Cherokee, fullwidth and mathematical letters drawn like Latin
// ones. Equal to the ref when there is nothing to mistake.
std::string lookalike(std::string_view ref);
// Whether `like` (lookalike(ref)) differs from ref in more than ASCII case.
bool lookalike_by_script(std::string_view ref, std::string_view like);

}  // namespace cc::git
