#include "cc/git/decision.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace cc::git {

using policy::Decision;
using policy::Verdict;

std::string invisible_char(std::string_view ref) {
    for (std::size_t i = 0; i + 1 < ref.size(); ++i) {
        auto b = [&](std::size_t k) { return static_cast<unsigned char>(ref[k]); };
        unsigned cp = 0;
        if (b(i) == 0xD8 && b(i + 1) == 0x9C) cp = 0x061C;  // ARABIC LETTER MARK
        if (i + 2 < ref.size()) {
            unsigned c3 = ((b(i) & 0x0F) << 12) | ((b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
            // Zero-width characters, bidi embeddings and overrides, isolates, BOM.
            if ((b(i) & 0xF0) == 0xE0 &&
                ((c3 >= 0x200B && c3 <= 0x200F) || (c3 >= 0x202A && c3 <= 0x202E) || (c3 >= 0x2060 && c3 <= 0x2069) ||
                 c3 == 0xFEFF))
                cp = c3;
        }
        if (cp) {
            char buf[16];
            std::snprintf(buf, sizeof buf, "U+%04X", cp);
            return buf;
        }
    }
    return "";
}

namespace {

// The Latin letter a Cyrillic, Greek or fullwidth letter is drawn like, 0 for none.
char confusable(unsigned cp) {
    if (cp >= 0xFF01 && cp <= 0xFF5E) return static_cast<char>(std::tolower(static_cast<int>(cp - 0xFF01 + 0x21)));
    static const std::pair<unsigned, char> table[] = {
        // Cyrillic
        {0x0405, 's'}, {0x0406, 'i'}, {0x0408, 'j'}, {0x0410, 'a'}, {0x0412, 'b'}, {0x0415, 'e'}, {0x041A, 'k'},
        {0x041C, 'm'}, {0x041D, 'h'}, {0x041E, 'o'}, {0x0420, 'p'}, {0x0421, 'c'}, {0x0422, 't'}, {0x0425, 'x'},
        {0x0430, 'a'}, {0x0435, 'e'}, {0x043E, 'o'}, {0x0440, 'p'}, {0x0441, 'c'}, {0x0443, 'y'}, {0x0445, 'x'},
        {0x0455, 's'}, {0x0456, 'i'}, {0x0458, 'j'}, {0x04BB, 'h'}, {0x0501, 'd'}, {0x051B, 'q'}, {0x051D, 'w'},
        // Greek
        {0x0391, 'a'}, {0x0392, 'b'}, {0x0395, 'e'}, {0x0396, 'z'}, {0x0397, 'h'}, {0x0399, 'i'}, {0x039A, 'k'},
        {0x039C, 'm'}, {0x039D, 'n'}, {0x039F, 'o'}, {0x03A1, 'p'}, {0x03A4, 't'}, {0x03A5, 'y'}, {0x03A7, 'x'},
        {0x03B1, 'a'}, {0x03B9, 'i'}, {0x03BA, 'k'}, {0x03BD, 'v'}, {0x03BF, 'o'}, {0x03C1, 'p'}, {0x03C4, 't'},
        {0x03C5, 'u'}, {0x03C7, 'x'},
        // Latin
        {0x0131, 'i'},
    };
    for (const auto& [c, l] : table)
        if (c == cp) return l;
    return 0;
}

}  // namespace

std::string lookalike(std::string_view ref) {
    std::string out;
    for (std::size_t i = 0; i < ref.size();) {
        auto c = static_cast<unsigned char>(ref[i]);
        if (c >= 0xC0 && !invisible_char(ref.substr(i, 3)).empty()) {
            i += c == 0xD8 ? 2 : 3;
            continue;
        }
        // A two- or three-byte letter drawn like a Latin one stands for it.
        auto b = [&](std::size_t k) { return static_cast<unsigned char>(ref[i + k]); };
        if ((c & 0xE0) == 0xC0 && i + 1 < ref.size() && (b(1) & 0xC0) == 0x80) {
            if (char l = confusable(((c & 0x1F) << 6) | (b(1) & 0x3F))) {
                out.push_back(l);
                i += 2;
                continue;
            }
        } else if ((c & 0xF0) == 0xE0 && i + 2 < ref.size() && (b(1) & 0xC0) == 0x80 && (b(2) & 0xC0) == 0x80) {
            if (char l = confusable(((c & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F))) {
                out.push_back(l);
                i += 3;
                continue;
            }
        }
        out.push_back(static_cast<char>(std::tolower(c)));
        ++i;
    }
    return out;
}

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
        // A name that only looks like another (case, invisible characters) is
        // reported with the name it looks like, when that one would be judged
        // more strictly.
        std::string like = lookalike(cmd.ref);
        if (ctx.linked && like != cmd.ref && judge(ctx, like, r.kind).decision > judge(ctx, cmd.ref, r.kind).decision)
            r.looks_like = like;
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
