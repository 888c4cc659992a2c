// Unit tests of decide_push, settle_ancestry and outcome (lib/cc/git/decision):
// the push decision as a pure function of the ref commands, the linked
// repository, the mode, the policy, the session's names and the upstream's
// symbolic refs. No process, socket or disk.
#include "harness.hpp"

#include "cc/git/decision.hpp"

using namespace cc::git;
using cc::policy::Decision;
using cc::policy::Mode;

namespace {

const std::string A(40, 'a'), B(40, 'b'), Z(40, '0');

cc::policy::Policy pol(const std::string& text) {
    auto p = cc::policy::parse(text, "test policy");
    REQUIRE(p);
    return *p;
}

const cc::policy::Policy& standard() {
    static const auto p = pol(R"({"version": 1, "rules": [
  {"action": "push", "refs": ["refs/heads/agent/${conversation}/*"], "decision": "allow"},
  {"action": "push", "refs": ["refs/heads/agent/*"], "decision": "deny", "reason": "another conversation's namespace"},
  {"action": "push", "refs": ["main"], "kinds": ["force", "delete"], "decision": "deny", "reason": "main is protected"},
  {"action": "push", "kinds": ["force"], "decision": "ask"},
  {"action": "push", "decision": "allow"}]})");
    return p;
}

PushRequest request(std::vector<Command> cmds, bool atomic = false) {
    PushRequest r;
    r.commands = std::move(cmds);
    r.capabilities = {"report-status", "side-band-64k"};
    if (atomic) r.capabilities.push_back("atomic");
    return r;
}

PushContext context(const cc::policy::Policy& p = standard(), Mode mode = Mode::chat) {
    return PushContext{"github.com/acme/demo", true, mode, &p, {{"conversation", "c42"}}, std::nullopt, {}, {}};
}

}  // namespace

TEST_CASE("decide_push: each kind of change is judged by the first matching rule") {
    auto plan = decide_push(request({{Z, A, "refs/heads/topic"},
                                     {A, B, "refs/heads/main"},
                                     {A, Z, "refs/heads/main"},
                                     {A, Z, "refs/heads/agent/c42/x"},
                                     {A, B, "refs/heads/agent/c7/x"}}),
                            context());
    REQUIRE(plan.refs.size() == 5);
    CHECK(plan.refs[0].kind == "create");
    CHECK(plan.refs[0].allowed());
    // An update of main is allowed as a fast-forward, denied as a force push:
    // which one it is, only the ancestry check can say.
    CHECK(plan.refs[1].kind == "update");
    CHECK(plan.refs[1].allowed());
    CHECK(plan.refs[1].needs_ancestry());
    REQUIRE(plan.refs[1].if_force);
    CHECK(plan.refs[1].if_force->decision == Decision::deny);
    CHECK(plan.refs[2].kind == "delete");
    CHECK(plan.refs[2].denied());
    CHECK(plan.refs[2].verdict.reason == "main is protected");
    CHECK(plan.refs[2].verdict.source == "rules[2]");
    // The conversation's own namespace: any kind, no ancestry check needed.
    CHECK(plan.refs[3].allowed());
    CHECK_FALSE(plan.refs[3].needs_ancestry());
    CHECK(plan.refs[4].denied());
    CHECK(plan.refs[4].verdict.reason == "another conversation's namespace");
    CHECK(plan.open_refs() == std::vector<std::string>{"refs/heads/topic", "refs/heads/main", "refs/heads/agent/c42/x"});
}

TEST_CASE("decide_push: read-only modes deny every push, whatever the rules say") {
    auto allow_all = pol(R"({"version": 1, "rules": [{"action": "push", "decision": "allow"}]})");
    for (Mode m : {Mode::plan, Mode::review, Mode::orchestrate}) {
        auto plan = decide_push(request({{Z, A, "refs/heads/topic"}}), context(allow_all, m));
        REQUIRE(plan.refs.size() == 1);
        CHECK(plan.refs[0].denied());
        CHECK(plan.refs[0].verdict.source == "mode:" + std::string(cc::policy::to_string(m)));
        CHECK_FALSE(plan.any_open());
    }
    auto chat = decide_push(request({{Z, A, "refs/heads/topic"}}), context(allow_all, Mode::chat));
    CHECK(chat.refs[0].allowed());
}

TEST_CASE("decide_push: an unlinked repository and a ref with a bidi control are denied before any rule") {
    auto allow_all = pol(R"({"version": 1, "rules": [{"action": "push", "decision": "allow"}]})");
    auto ctx = context(allow_all);
    ctx.linked = false;
    auto plan = decide_push(request({{Z, A, "refs/heads/topic"}}), ctx);
    CHECK(plan.refs[0].denied());
    CHECK(plan.refs[0].verdict.reason == "repository 'github.com/acme/demo' is not linked to this workspace");

    plan = decide_push(request({{Z, A, "refs/heads/ma\xE2\x80\xAEin"}}), context(allow_all));
    CHECK(plan.refs[0].denied());
    CHECK(plan.refs[0].verdict.reason == "ref name has an invisible or bidi control character (U+202E)");
    CHECK(plan.refs[0].verdict.source == "refname");
}

TEST_CASE("decide_push: a name that only looks like a protected one is reported with that name") {
    auto plan = decide_push(request({{A, Z, "refs/heads/MAIN"}}), context());
    REQUIRE(plan.refs.size() == 1);
    CHECK(plan.refs[0].allowed());  // refs/heads/MAIN is another ref; git and GitHub keep it apart
    CHECK(plan.refs[0].looks_like == "refs/heads/main");
    plan = decide_push(request({{A, Z, "refs/heads/topic"}}), context());
    CHECK(plan.refs[0].looks_like.empty());
    // A Cyrillic a (U+0430), a fullwidth m (U+FF4D); a Greek omicron makes "other", judged no more strictly.
    plan = decide_push(request({{A, Z, "refs/heads/m\xD0\xB0in"}}), context());
    CHECK(plan.refs[0].looks_like == "refs/heads/main");
    plan = decide_push(request({{A, Z, "refs/heads/\xEF\xBD\x8D" "ain"}}), context());
    CHECK(plan.refs[0].looks_like == "refs/heads/main");
    plan = decide_push(request({{A, Z, "refs/heads/\xCE\xBF" "ther"}}), context());
    CHECK(plan.refs[0].looks_like.empty());  // "other" is not judged more strictly
}

TEST_CASE("decide_push: a symbolic ref on the upstream is judged by its target as well") {
    auto ctx = context();
    auto first = decide_push(request({{A, Z, "refs/heads/alias"}, {Z, A, "refs/heads/other"}}), ctx);
    CHECK(first.refs[0].allowed());  // the name alone is not protected
    ctx.symrefs = std::map<std::string, std::string>{{"refs/heads/alias", "refs/heads/main"}};
    auto plan = decide_push(request({{A, Z, "refs/heads/alias"}, {Z, A, "refs/heads/other"}}), ctx);
    CHECK(plan.refs[0].symref_target == "refs/heads/main");
    CHECK(plan.refs[0].denied());
    CHECK(plan.refs[0].verdict.reason == "refs/heads/alias is a symbolic ref to refs/heads/main on the upstream: main is protected");
    CHECK(plan.refs[1].allowed());
    CHECK(plan.refs[1].symref_target.empty());

    // An update through the alias gets main's force verdict for the ancestry check.
    plan = decide_push(request({{A, B, "refs/heads/alias"}}), ctx);
    CHECK(plan.refs[0].allowed());
    REQUIRE(plan.refs[0].if_force);
    CHECK(plan.refs[0].if_force->decision == Decision::deny);

    // A target outside refs/ is never followed.
    ctx.symrefs = std::map<std::string, std::string>{{"refs/heads/alias", "HEAD"}};
    plan = decide_push(request({{Z, A, "refs/heads/alias"}}), ctx);
    CHECK(plan.refs[0].denied());
    CHECK(plan.refs[0].verdict.source == "symrefs");
}

TEST_CASE("decide_push: a name the upstream has but lists as no ref (a dangling symbolic ref) is denied") {
    auto ctx = context();
    ctx.symrefs = std::map<std::string, std::string>{};
    ctx.unlisted = {"refs/heads/alias"};
    auto plan = decide_push(request({{Z, A, "refs/heads/alias"}, {Z, A, "refs/heads/other"}}), ctx);
    CHECK(plan.refs[0].denied());
    CHECK(plan.refs[0].verdict.source == "symrefs");
    CHECK(plan.refs[0].verdict.reason.rfind("refs/heads/alias exists on the upstream but is listed as no ref", 0) == 0);
    CHECK(plan.refs[1].allowed());
}

TEST_CASE("settle_ancestry: a fast-forward keeps its verdict, anything else becomes a force push") {
    auto plan = decide_push(request({{A, B, "refs/heads/main"}}), context());
    RefPlan ff = plan.refs[0];
    settle_ancestry(ff, cc::Result<bool>(true));
    CHECK(ff.kind == "update");
    CHECK(ff.allowed());
    CHECK(ff.checked);
    CHECK_FALSE(ff.needs_ancestry());

    RefPlan force = plan.refs[0];
    settle_ancestry(force, cc::Result<bool>(false));
    CHECK(force.kind == "force");
    CHECK(force.denied());
    CHECK(force.verdict.reason == "force push (aaaaaaaaaaaa is not an ancestor of bbbbbbbbbbbb): main is protected");

    RefPlan unknown = plan.refs[0];
    settle_ancestry(unknown, cc::Result<bool>(cc::io_error("", "index-pack failed", 0)));
    CHECK(unknown.kind == "force");
    CHECK(unknown.denied());
    CHECK(unknown.verdict.reason ==
          "treated as a force push (the ancestry check failed: index-pack failed): main is protected");

    // Elsewhere a force push is asked (the caller puts it to the approver).
    auto topic = decide_push(request({{A, B, "refs/heads/topic"}}), context());
    settle_ancestry(topic.refs[0], cc::Result<bool>(false));
    CHECK(topic.refs[0].verdict.decision == Decision::ask);
}

TEST_CASE("outcome: partial pushes forward the allowed refs, atomic ones nothing") {
    auto req = request({{Z, A, "refs/heads/topic"}, {A, Z, "refs/heads/main"}});
    auto plan = decide_push(req, context());
    auto out = outcome(plan, false);
    REQUIRE(out.forward.size() == 1);
    CHECK(out.forward[0].ref == "refs/heads/topic");
    REQUIRE(out.rejected.size() == 1);
    CHECK(out.rejected[0].ref == "refs/heads/main");
    CHECK(out.rejected[0].reason == "Control Center policy: main is protected");
    CHECK(out.messages == std::vector<std::string>{"Control Center policy denied refs/heads/main: main is protected"});

    out = outcome(plan, true);
    CHECK(out.forward_nothing());
    REQUIRE(out.rejected.size() == 2);
    CHECK(out.rejected[1].ref == "refs/heads/topic");
    CHECK(out.rejected[1].reason == "atomic transaction failed");

    auto fine = decide_push(request({{Z, A, "refs/heads/topic"}}, true), context());
    out = outcome(fine, true);
    CHECK(out.forward.size() == 1);
    CHECK(out.rejected.empty());
}

TEST_CASE("content rules: paths, sizeOver and filesOver are read only once the content is known, and only narrow") {
    auto p = pol(R"({"version": 1, "rules": [
  {"action": "push", "paths": [".github/workflows/*", "CODEOWNERS"], "decision": "deny", "reason": "workflows and owners are changed by people"},
  {"action": "push", "sizeOver": 1000, "decision": "deny", "reason": "no files over 1000 bytes"},
  {"action": "push", "filesOver": 3, "kinds": ["create"], "decision": "ask", "reason": "a large new branch"},
  {"action": "push", "decision": "allow"}]})");
    CHECK(cc::policy::has_content_rules(p, Mode::chat));
    auto ctx = context(p);
    auto plan = decide_push(request({{A, B, "refs/heads/topic"}, {A, Z, "refs/heads/gone"}}), ctx);
    REQUIRE(plan.refs.size() == 2);
    CHECK(plan.refs[0].allowed());  // no content yet: content rules are skipped
    CHECK(plan.refs[0].needs_content());
    CHECK_FALSE(plan.refs[1].needs_content());  // a delete brings nothing

    RefPlan r = plan.refs[0];
    settle_content(r, cc::Result<cc::policy::PushContent>(cc::policy::PushContent{{"src/a.c", "docs/CODEOWNERS"}, 10, 2, {}}), ctx);
    CHECK(r.denied());
    CHECK(r.verdict.reason == "workflows and owners are changed by people");
    CHECK_FALSE(r.needs_content());

    r = plan.refs[0];
    settle_content(r, cc::Result<cc::policy::PushContent>(cc::policy::PushContent{{".github/workflows/ci.yml"}, 10, 1, {}}), ctx);
    CHECK(r.denied());

    r = plan.refs[0];
    settle_content(r, cc::Result<cc::policy::PushContent>(cc::policy::PushContent{{"src/big.bin"}, 1001, 1, {}}), ctx);
    CHECK(r.denied());
    CHECK(r.verdict.reason == "no files over 1000 bytes");

    r = plan.refs[0];
    settle_content(r, cc::Result<cc::policy::PushContent>(cc::policy::PushContent{{"a", "b", "c", "d"}, 1000, 4, {}}), ctx);
    CHECK(r.allowed());  // 1000 is not over 1000; filesOver applies to creates only
    CHECK(r.content->files == 4);

    auto created = decide_push(request({{Z, A, "refs/heads/new"}}), ctx);
    settle_content(created.refs[0], cc::Result<cc::policy::PushContent>(cc::policy::PushContent{{"a", "b", "c", "d"}, 1, 4, {}}), ctx);
    CHECK(created.refs[0].verdict.decision == Decision::ask);

    // A submodule the update adds at .github may bring workflows.
    r = plan.refs[0];
    settle_content(r, cc::Result<cc::policy::PushContent>(cc::policy::PushContent{{".github"}, 10, 1, {".github"}}), ctx);
    CHECK(r.denied());
    // Anywhere else too: a CODEOWNERS file (a name in any directory) may be in it.
    r = plan.refs[0];
    settle_content(r, cc::Result<cc::policy::PushContent>(cc::policy::PushContent{{"vendor/x"}, 10, 1, {"vendor/x"}}), ctx);
    CHECK(r.denied());
    // The same path as a plain file is only itself.
    r = plan.refs[0];
    settle_content(r, cc::Result<cc::policy::PushContent>(cc::policy::PushContent{{"vendor/x"}, 10, 1, {}}), ctx);
    CHECK(r.allowed());

    // Content that could not be read is refused.
    r = plan.refs[0];
    settle_content(r, cc::Result<cc::policy::PushContent>(cc::io_error("", "an object is missing", 0)), ctx);
    CHECK(r.denied());
    CHECK(r.verdict.source == "content");

    // Without content rules nothing needs reading.
    CHECK_FALSE(decide_push(request({{A, B, "refs/heads/topic"}}), context()).refs[0].needs_content());
}

TEST_CASE("content rules: only push rules take them; a pattern without '/' names a file anywhere") {
    CHECK_FALSE(cc::policy::parse(R"({"version": 1, "rules": [{"action": "install_package", "paths": ["x"], "decision": "deny"}]})", "p"));
    CHECK_FALSE(cc::policy::parse(R"({"version": 1, "rules": [{"action": "push", "sizeOver": -1, "decision": "deny"}]})", "p"));
    CHECK_FALSE(cc::policy::parse(R"({"version": 1, "rules": [{"action": "push", "paths": ["x"], "kinds": ["delete"], "decision": "deny"}]})", "p"));
    auto bad = cc::policy::parse(R"({"version": 1, "rules": [{"action": "push", "filesOver": "many", "decision": "deny"}]})", "p");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().one_line() == "p: rules[0].filesOver: must be a whole number of at least 0");
    CHECK(cc::policy::path_matches("CODEOWNERS", "CODEOWNERS"));
    CHECK(cc::policy::path_matches("CODEOWNERS", "docs/CODEOWNERS"));
    CHECK(cc::policy::path_matches(".github/workflows/*", ".github/workflows/sub/ci.yml"));
    CHECK(cc::policy::path_matches(".github/workflows/**", ".github/workflows/ci.yml"));
    CHECK_FALSE(cc::policy::path_matches(".github/workflows/*", "src/.github/workflows/ci.yml"));
    CHECK_FALSE(cc::policy::path_matches("*.pem", "src/key.pem.txt"));
    CHECK(cc::policy::path_matches("*.pem", "src/key.pem"));
    // Case as a case-insensitive checkout or host reads it.
    CHECK(cc::policy::path_matches(".github/workflows/*", ".GitHub/Workflows/ci.yml"));
    CHECK(cc::policy::path_matches("CODEOWNERS", "docs/codeowners"));
    // Below a submodule any name may appear.
    CHECK(cc::policy::path_could_match_below(".github/workflows/*", ".github"));
    CHECK(cc::policy::path_could_match_below(".github/workflows/*", ".GITHUB/workflows/sub"));
    CHECK(cc::policy::path_could_match_below("CODEOWNERS", "vendor/lib"));
    CHECK_FALSE(cc::policy::path_could_match_below(".github/workflows/*", "vendor/lib"));
    CHECK_FALSE(cc::policy::path_could_match_below(".github/workflows/*", ".githubx"));
}

TEST_CASE("decide_push: a ref denied for an invisible character still names what it looks like") {
    auto plan = decide_push(request({{A, Z, "refs/heads/ma\xE2\x80\x8Bin"}}), context());
    CHECK(plan.refs[0].denied());
    CHECK(plan.refs[0].looks_like == "refs/heads/main");
}

TEST_CASE("decide_push: under the built-in policy a tag, once pushed, never moves") {
    const auto p = cc::policy::default_policy();
    auto plan = decide_push(request({{Z, A, "refs/tags/v1"}, {A, B, "refs/tags/v2"}, {A, Z, "refs/tags/v3"},
                                     {A, B, "refs/heads/topic"}}),
                            context(p));
    REQUIRE(plan.refs.size() == 4);
    // A new tag, like a branch, gets the mode's default (asked in chat) ...
    CHECK(plan.refs[0].kind == "create");
    CHECK(plan.refs[0].verdict.decision == Decision::ask);
    CHECK(plan.refs[3].verdict.decision == Decision::ask);
    // ... but moved to a descendant (a fast-forward) or deleted: refused.
    CHECK(plan.refs[1].kind == "update");
    CHECK(plan.refs[1].verdict.decision == Decision::deny);
    CHECK(plan.refs[1].verdict.reason == "a tag, once pushed, never moves or goes");
    CHECK(plan.refs[2].verdict.decision == Decision::deny);
}

// Look-alikes from Unicode's own data (ICU): compatibility forms
// (fullwidth, mathematical), letters of other scripts drawn like Latin ones,
// and characters nobody sees, however they are spelt.
TEST_CASE("decide_push: look-alikes and unseen characters are found with Unicode's data, not a hand list") {
    // Mathematical bold m (U+1D426), Armenian oh (U+0585), Cherokee/Latin
    // mixes, a ligature: each reads as ASCII.
    CHECK(lookalike("refs/heads/\xF0\x9D\x90\xA6" "ain") == "refs/heads/main");
    CHECK(lookalike("refs/heads/d\xD6\x85" "cs") == "refs/heads/docs");
    CHECK(lookalike("refs/heads/\xEF\xAC\x81x") == "refs/heads/fix");  // U+FB01 fi ligature
    CHECK(lookalike("refs/heads/ma\xD0\x86n") == "refs/heads/main");    // Cyrillic capital I reads as i
    CHECK(lookalike("refs/heads/caf\xC3\xA9") == "refs/heads/caf\xC3\xA9");  // an accent shows: kept
    // Unseen: a soft hyphen, a Hangul filler, a variation selector, a tag
    // character, a no-break space, a Mongolian vowel separator. A byte that
    // is not UTF-8 (a Latin-1 name) is a name like another.
    CHECK(invisible_char("refs/heads/ma\xC2\xADin") == "U+00AD");
    CHECK(invisible_char("refs/heads/ma\xE3\x85\xA4in") == "U+3164");
    CHECK(invisible_char("refs/heads/main\xEF\xB8\x8F") == "U+FE0F");
    CHECK(invisible_char("refs/heads/main\xF3\xA0\x81\xA1") == "U+E0061");
    CHECK(invisible_char("refs/heads/ma\xC2\xA0in") == "U+00A0");
    CHECK(invisible_char("refs/heads/ma\xE1\xA0\x8Ein") == "U+180E");
    CHECK(invisible_char("refs/heads/caf\xE9") == "");
    CHECK(invisible_char("refs/heads/caf\xC3\xA9") == "");
    CHECK(lookalike("refs/heads/ma\xC2\xADin") == "refs/heads/main");

    auto plan = decide_push(request({{Z, A, "refs/heads/ma\xC2\xADin"}}), context());
    CHECK(plan.refs[0].denied());
    CHECK(plan.refs[0].verdict.reason == "ref name has an invisible or bidi control character (U+00AD)");
}

// A name drawn like a protected one in another script is judged as that
// name; one that differs only in ASCII case is another ref (git and the
// hosts keep them apart) and is only reported.
TEST_CASE("decide_push: a name drawn like a protected one in another script is judged as that name") {
    auto plan = decide_push(request({{A, Z, "refs/heads/m\xD0\xB0in"}, {A, Z, "refs/heads/MAIN"},
                                     {A, Z, "refs/heads/\xF0\x9D\x90\xA6" "ain"}}),
                            context());
    REQUIRE(plan.refs.size() == 3);
    CHECK(plan.refs[0].denied());
    CHECK(plan.refs[0].verdict.reason == "looks like refs/heads/main: main is protected");
    CHECK(plan.refs[0].looks_like == "refs/heads/main");
    CHECK(plan.refs[1].allowed());
    CHECK(plan.refs[1].looks_like == "refs/heads/main");
    CHECK(plan.refs[2].denied());
    // A look-alike of a name judged no more strictly is judged as itself.
    auto other = decide_push(request({{A, Z, "refs/heads/\xCE\xBF" "ther"}}), context());
    CHECK(other.refs[0].allowed());
    CHECK(other.refs[0].looks_like.empty());
}
