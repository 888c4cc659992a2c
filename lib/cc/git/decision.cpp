#include "cc/git/decision.hpp"

#include <algorithm>

namespace cc::git {

using policy::Decision;
using policy::Verdict;

std::string policy_reason(const Verdict& v, std::string_view label) {
    return std::string(label) + " policy: " + v.reason;
}

std::vector<std::string> PushPlan::open_refs() const {
    std::vector<std::string> names;
    for (const auto& r : refs)
        if (!r.denied()) names.push_back(r.cmd.ref);
    return names;
}

namespace {

Verdict judge(const PushContext& ctx, const std::string& ref, const std::string& kind) {
    return policy::decide(*ctx.policy, {"push", ctx.mode, ref}, policy::PushFacts{kind, ctx.vars});
}

// Keeps the stricter of `v` and `other`; the reason says the name stood for `target`.
void stricter(Verdict& v, const Verdict& other, const std::string& ref, const std::string& target) {
    if (other.decision <= v.decision) return;
    v.decision = other.decision;
    v.source = other.source;
    v.reason = ref + " is a symbolic ref to " + target + " on the upstream: " + other.reason;
}

// A name the upstream resolves through a symbolic ref moves (or deletes) the
// ref it points at: receive-pack updates the target. So the verdict is also
// asked of the target (as the same kind, and as a force push when the update
// may be one), and the stricter stands.
void judge_target(const PushContext& ctx, RefPlan& r) {
    auto it = ctx.symrefs->find(r.cmd.ref);
    if (it == ctx.symrefs->end() || it->second.empty()) return;
    std::string t = it->second;
    for (int hop = 0; hop < 5; ++hop) {
        auto n = ctx.symrefs->find(t);
        if (n == ctx.symrefs->end() || n->second.empty() || n->second == t) break;
        t = n->second;
    }
    r.symref_target = t;
    Verdict tv;
    if (t.rfind("refs/", 0) != 0) {
        tv.decision = Decision::deny;
        tv.reason = "it points outside refs/ ('" + one_line(t, 200) + "')";
        tv.source = "symrefs";
    } else {
        tv = judge(ctx, t, r.kind);
        if (r.kind == "update") {
            Verdict& f = r.if_force ? *r.if_force : (r.if_force = r.verdict, *r.if_force);
            stricter(f, judge(ctx, t, "force"), r.cmd.ref, t);
        }
    }
    stricter(r.verdict, tv, r.cmd.ref, t);
    if (r.if_force && r.if_force->decision <= r.verdict.decision) r.if_force.reset();
}

}  // namespace

PushPlan decide_push(const PushRequest& req, const PushContext& ctx) {
    PushPlan plan;
    for (const auto& cmd : req.commands) {
        RefPlan r;
        r.cmd = cmd;
        r.kind = std::string(cmd.kind());
        std::string hidden = invisible_char(cmd.ref);
        if (!ctx.linked) {
            r.verdict.decision = Decision::deny;
            r.verdict.reason = "repository '" + ctx.repo_key + "' is not linked to this workspace";
            r.verdict.source = "repos";
        } else if (!hidden.empty()) {
            r.verdict.decision = Decision::deny;
            r.verdict.reason = "ref name has an invisible or bidi control character (" + hidden + ")";
            r.verdict.source = "refname";
        } else {
            // Read-only modes deny every push: the policy decides that too.
            r.verdict = judge(ctx, cmd.ref, r.kind);
            // The client's old and new ids cannot say whether an update is a
            // fast-forward; only the objects can. Where the answer matters,
            // the pack is checked on its way through.
            if (r.kind == "update") {
                Verdict vf = judge(ctx, cmd.ref, "force");
                if (vf.decision > r.verdict.decision) r.if_force = vf;
            }
            if (ctx.symrefs && !r.denied()) judge_target(ctx, r);
            if (!r.denied() && std::find(ctx.unlisted.begin(), ctx.unlisted.end(), cmd.ref) != ctx.unlisted.end()) {
                r.verdict.decision = Decision::deny;
                r.verdict.reason = cmd.ref + " exists on the upstream but is listed as no ref: a symbolic ref whose "
                                             "target does not exist (or a broken ref), so the push would create a ref "
                                             "nobody named";
                r.verdict.source = "symrefs";
                r.if_force.reset();
            }
            if (!r.denied() && !cmd.is_create() &&
                std::find(ctx.hidden.begin(), ctx.hidden.end(), cmd.ref) != ctx.hidden.end()) {
                r.verdict.decision = Decision::deny;
                r.verdict.reason = cmd.ref + " is not listed by the upstream (hidden from fetches): it may be a "
                                             "symbolic ref to another ref, which this " + r.kind + " would change";
                r.verdict.source = "symrefs";
                r.if_force.reset();
            }
        }
        // A name that only looks like another (case, unseen characters,
        // letters of other scripts drawn like Latin ones) is reported with the
        // name it looks like, when that one would be judged more strictly; and
        // judged as that name when the likeness is not only of case (git and
        // the hosts keep refs/heads/MAIN apart from main, but a reader cannot
        // tell a Cyrillic a from a Latin one).
        std::string like = lookalike(cmd.ref);
        if (ctx.linked && like != cmd.ref) {
            Verdict lv = judge(ctx, like, r.kind);
            if (lv.decision > judge(ctx, cmd.ref, r.kind).decision) {
                r.looks_like = like;
                if (lookalike_by_script(cmd.ref, like) && lv.decision > r.verdict.decision) {
                    r.verdict = lv;
                    r.verdict.reason = "looks like " + like + ": " + lv.reason;
                    r.if_force.reset();
                }
            }
        }
        r.content_rules = ctx.linked && r.kind != "delete" && policy::has_content_rules(*ctx.policy, ctx.mode);
        plan.refs.push_back(std::move(r));
    }
    return plan;
}

void settle_ancestry(RefPlan& r, const Result<bool>& fast_forward) {
    r.checked = true;
    if (!r.if_force) return;
    if (fast_forward && *fast_forward) {
        r.if_force.reset();
        return;
    }
    std::string why = fast_forward ? "force push (" + r.cmd.old_oid.substr(0, 12) + " is not an ancestor of " +
                                         r.cmd.new_oid.substr(0, 12) + ")"
                                   : "treated as a force push (the ancestry check failed: " +
                                         one_line(fast_forward.error().one_line(), 200) + ")";
    r.kind = "force";
    r.verdict = *r.if_force;
    r.verdict.reason = why + ": " + r.verdict.reason;
    r.if_force.reset();
}

void settle_content(RefPlan& r, const Result<policy::PushContent>& content, const PushContext& ctx) {
    if (!content) {
        r.content = policy::PushContent{};
        r.verdict.decision = Decision::deny;
        r.verdict.source = "content";
        r.verdict.reason = "the pushed content could not be read for the policy's content rules (" +
                           one_line(content.error().one_line(), 200) + ")";
        return;
    }
    r.content = *content;
    policy::PushFacts facts{r.kind, ctx.vars, &*r.content};
    Verdict v = policy::decide(*ctx.policy, {"push", ctx.mode, r.cmd.ref}, facts);
    if (v.decision > r.verdict.decision) r.verdict = v;
    if (!r.symref_target.empty())
        stricter(r.verdict, policy::decide(*ctx.policy, {"push", ctx.mode, r.symref_target}, facts), r.cmd.ref,
                 r.symref_target);
}

PushOutcome outcome(const PushPlan& plan, bool atomic, std::string_view label) {
    PushOutcome o;
    for (const auto& r : plan.refs) {
        if (r.allowed()) {
            o.forward.push_back(r.cmd);
        } else {
            o.rejected.push_back({r.cmd.ref, false, policy_reason(r.verdict, label)});
            o.messages.push_back(std::string(label) + " policy denied " + r.cmd.ref + ": " + r.verdict.reason);
        }
    }
    if (o.forward.empty() || (atomic && !o.rejected.empty())) {
        // The way receive-pack words it when one ref of an atomic push fails.
        for (const auto& c : o.forward) o.rejected.push_back({c.ref, false, "atomic transaction failed"});
        o.forward.clear();
    }
    return o;
}

}  // namespace cc::git
