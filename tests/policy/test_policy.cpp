#include "harness.hpp"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "cc/core/io.hpp"
#include "cc/policy/approver.hpp"
#include "cc/policy/policy.hpp"

using namespace cc::policy;

TEST_CASE("strictest: deny beats ask beats allow") {
    CHECK(strictest(Decision::allow, Decision::ask) == Decision::ask);
    CHECK(strictest(Decision::deny, Decision::ask) == Decision::deny);
    CHECK(strictest(Decision::allow, Decision::allow) == Decision::allow);
}

TEST_CASE("mode defaults: chat asks for remote changes, read-only modes deny") {
    Policy p = default_policy();
    CHECK(decide(p, {"push", Mode::chat, std::nullopt}).decision == Decision::ask);
    CHECK(decide(p, {"create_commit", Mode::chat, std::nullopt}).decision == Decision::allow);
    CHECK(decide(p, {"privilege_escalation", Mode::chat, std::nullopt}).decision == Decision::deny);
    for (Mode m : {Mode::plan, Mode::review, Mode::orchestrate}) {
        CHECK(decide(p, {"push", m, std::nullopt}).decision == Decision::deny);
        CHECK(decide(p, {"create_commit", m, std::nullopt}).decision == Decision::deny);
        CHECK(decide(p, {"write_files", m, std::nullopt}).decision == Decision::deny);
    }
    // Fail closed on a class nobody declared.
    CHECK(decide(p, {"teleport", Mode::chat, std::nullopt}).decision == Decision::deny);
}

TEST_CASE("branch-scoped push rules: first match wins") {
    auto p = parse(R"({"version":1,"rules":[
        {"action":"push","refs":["main","refs/tags/*"],"decision":"deny","reason":"main and tags are released by CI"},
        {"action":"push","decision":"allow"}]})", "test");
    REQUIRE(p);
    auto v = decide(*p, {"push", Mode::chat, "refs/heads/main"});
    CHECK(v.decision == Decision::deny);
    CHECK(v.reason == "main and tags are released by CI");
    CHECK(v.source == "rules[0]");
    CHECK(decide(*p, {"push", Mode::chat, "refs/tags/v1.0"}).decision == Decision::deny);
    CHECK(decide(*p, {"push", Mode::chat, "refs/heads/feature/x"}).decision == Decision::allow);
    CHECK(decide(*p, {"push", Mode::chat, "refs/heads/mainline"}).decision == Decision::allow);
}

TEST_CASE("mode-scoped rules only apply in their modes") {
    auto p = parse(R"({"rules":[{"action":"install_package","modes":["chat"],"decision":"allow"}]})", "t");
    REQUIRE(p);
    CHECK(decide(*p, {"install_package", Mode::chat, std::nullopt}).decision == Decision::allow);
    CHECK(decide(*p, {"install_package", Mode::plan, std::nullopt}).decision == Decision::deny);
}

TEST_CASE("bad policy files are input errors naming the field") {
    auto check = [](const char* text, const char* expect) {
        auto p = parse(text, "p.json");
        REQUIRE_FALSE(p);
        CHECK(p.error().code == cc::Errc::input);
        CHECK_THAT(p.error().one_line(), Catch::Contains(expect));
    };
    check("{", "malformed JSON");
    check(R"({"rules":[{"action":"push","decision":"maybe"}]})", "rules[0].decision: unknown decision 'maybe'");
    check(R"({"rules":[{"action":"fly","decision":"deny"}]})", "rules[0].action: unknown action 'fly'");
    check(R"({"rules":[{"action":"push","decision":"deny","colour":"red"}]})", "rules[0].colour: unknown field");
    check(R"({"rules":[{"action":"install_package","refs":["main"],"decision":"deny"}]})", "only push rules take refs");
    check(R"({"rules":[{"action":"push","decision":"deny","modes":["yolo"]}]})", "rules[0].modes[0]: unknown mode");
    check(R"({"version":2})", "unsupported version 2");
    check(R"({"rules":{}})", "rules: must be an array");
    check(R"([1,2])", "must be an object");
}

TEST_CASE("share/cc/policy/default.json is the built-in default policy") {
    auto p = load(cc::io::data_dir() + "/policy/default.json");
    REQUIRE(p);
    for (const auto& c : action_classes())
        for (Mode m : {Mode::chat, Mode::plan, Mode::review, Mode::orchestrate})
            CHECK(decide(*p, {std::string(c.name), m, std::nullopt}).decision ==
                  decide(default_policy(), {std::string(c.name), m, std::nullopt}).decision);
    REQUIRE(p->rules.size() == default_policy().rules.size());
    PushFacts facts{"", {{"conversation", "c1"}}};
    for (const char* ref : {"refs/heads/main", "refs/heads/agent/c1/x", "refs/heads/agent/c2/x", "refs/tags/v1",
                            "refs/heads/release/2", "refs/heads/feature"})
        for (const auto& kind : push_kinds()) {
            facts.kind = kind;
            INFO(ref << " " << kind);
            CHECK(decide(*p, {"push", Mode::chat, std::string(ref)}, facts).decision ==
                  decide(default_policy(), {"push", Mode::chat, std::string(ref)}, facts).decision);
        }
}

TEST_CASE("the default policy: the conversation's namespace is its own, protected refs are not rewritten") {
    Policy p = default_policy();
    PushFacts mine{"force", {{"conversation", "c1"}}};
    CHECK(decide(p, {"push", Mode::chat, "refs/heads/agent/c1/x"}, mine).decision == Decision::allow);
    CHECK(decide(p, {"push", Mode::chat, "refs/heads/main"}, mine).decision == Decision::deny);
    CHECK(decide(p, {"push", Mode::chat, "refs/heads/main"}, mine).reason ==
          "force pushes and deletes of protected refs are not allowed");
    CHECK(decide(p, {"push", Mode::chat, "refs/tags/v1"}, {"delete", {}}).decision == Decision::deny);
    // A fast-forward of main, or a force push elsewhere, is the mode's default (asked in chat).
    CHECK(decide(p, {"push", Mode::chat, "refs/heads/main"}, {"update", {}}).decision == Decision::ask);
    CHECK(decide(p, {"push", Mode::chat, "refs/heads/feature"}, {"force", {}}).decision == Decision::ask);
    // Another conversation's namespace is not this one's.
    CHECK(decide(p, {"push", Mode::chat, "refs/heads/agent/c2/x"}, mine).decision == Decision::ask);
    // cc-classify's question (no ref, no kind) is unchanged.
    CHECK(decide(p, {"push", Mode::chat, std::nullopt}).decision == Decision::ask);
}

TEST_CASE("ask with no approver is deny; an approver can allow or deny") {
    Verdict ask{Decision::ask, "push needs approval", "default:chat"};
    nlohmann::json q{{"action", "push"}};
    auto none = resolve_ask(ask, q, Approver{});
    CHECK(none.decision == Decision::deny);
    CHECK_THAT(none.reason, Catch::Contains("no approver"));

    std::string dir = cc::test::scratch_dir();
    auto script = [&](const std::string& name, const std::string& body) {
        std::string path = dir + "/" + name;
        std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
        ::chmod(path.c_str(), 0755);
        return path;
    };
    // The approver sees the question on stdin.
    auto yes = script("yes.sh", "grep -q '\"action\":\"push\"' && echo allow");
    CHECK(resolve_ask(ask, q, approver_from_command(yes, std::chrono::seconds(5))).decision == Decision::allow);
    auto no = script("no.sh", "echo deny");
    CHECK(resolve_ask(ask, q, approver_from_command(no, std::chrono::seconds(5))).decision == Decision::deny);
    auto junk = script("junk.sh", "echo maybe");
    CHECK(resolve_ask(ask, q, approver_from_command(junk, std::chrono::seconds(5))).decision == Decision::deny);
    auto fails = script("fails.sh", "echo allow; exit 3");
    CHECK(resolve_ask(ask, q, approver_from_command(fails, std::chrono::seconds(5))).decision == Decision::deny);
    auto slow = script("slow.sh", "sleep 5; echo allow");
    auto v = resolve_ask(ask, q, approver_from_command(slow, std::chrono::milliseconds(300)));
    CHECK(v.decision == Decision::deny);
    CHECK_THAT(v.reason, Catch::Contains("no answer"));
    auto missing = resolve_ask(ask, q, approver_from_command(dir + "/nope", std::chrono::seconds(1)));
    CHECK(missing.decision == Decision::deny);
    // Non-ask verdicts pass through untouched.
    Verdict allow{Decision::allow, "ok", "x"};
    CHECK(resolve_ask(allow, q, Approver{}).decision == Decision::allow);
}

TEST_CASE("push rules take kinds: a rule with kinds matches only a question of one of them") {
    auto p = parse(R"({"rules":[
        {"action":"push","kinds":["force","delete"],"decision":"deny","reason":"no rewriting history"},
        {"action":"push","decision":"allow"}]})", "test");
    REQUIRE(p);
    Question q{"push", Mode::chat, "refs/heads/x"};
    CHECK(decide(*p, q, {"force", {}}).decision == Decision::deny);
    CHECK(decide(*p, q, {"force", {}}).reason == "no rewriting history");
    CHECK(decide(*p, q, {"delete", {}}).decision == Decision::deny);
    CHECK(decide(*p, q, {"update", {}}).decision == Decision::allow);
    CHECK(decide(*p, q, {"create", {}}).decision == Decision::allow);
    // A question without a kind (cc-classify's "git push") skips kinds rules,
    // as one without a ref skips refs rules.
    CHECK(decide(*p, {"push", Mode::chat, std::nullopt}).decision == Decision::allow);
    auto bad = parse(R"({"rules":[{"action":"push","kinds":["rewrite"],"decision":"deny"}]})", "p.json");
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().one_line(), Catch::Contains("rules[0].kinds[0]: unknown kind 'rewrite'"));
    auto notpush = parse(R"({"rules":[{"action":"install_package","kinds":["force"],"decision":"deny"}]})", "p.json");
    REQUIRE_FALSE(notpush);
    CHECK_THAT(notpush.error().one_line(), Catch::Contains("only push rules take kinds"));
}

TEST_CASE("${agent}, ${conversation} and ${session} in refs are filled from the session, never widened") {
    auto p = parse(R"({"rules":[
        {"action":"push","refs":["refs/heads/agent/${conversation}/*"],"decision":"allow"},
        {"action":"push","decision":"deny"}]})", "test");
    REQUIRE(p);
    CHECK(variables_used(*p) == std::vector<std::string>{"conversation"});
    PushFacts mine{"create", {{"conversation", "c42"}}};
    CHECK(decide(*p, {"push", Mode::chat, "refs/heads/agent/c42/x"}, mine).decision == Decision::allow);
    CHECK(decide(*p, {"push", Mode::chat, "refs/heads/agent/c41/x"}, mine).decision == Decision::deny);
    // Unset, or a value that is not one plain name component: the pattern matches nothing.
    CHECK(decide(*p, {"push", Mode::chat, "refs/heads/agent/c42/x"}, {"create", {}}).decision == Decision::deny);
    PushFacts glob{"create", {{"conversation", "*"}}};
    CHECK(decide(*p, {"push", Mode::chat, "refs/heads/agent/c41/x"}, glob).decision == Decision::deny);
    CHECK(bad_ref_variable("c42") == std::nullopt);
    CHECK(bad_ref_variable("a/b") == std::optional<std::string>("has '/' (letters, digits, '.', '_' and '-' only)"));
    CHECK(bad_ref_variable(".x"));
    CHECK(bad_ref_variable("x.lock"));
    CHECK(bad_ref_variable(""));
    auto unknown = parse(R"({"rules":[{"action":"push","refs":["agent/${user}/*"],"decision":"allow"}]})", "p.json");
    REQUIRE_FALSE(unknown);
    CHECK_THAT(unknown.error().one_line(), Catch::Contains("unknown variable '${user}' (agent, conversation or session)"));
}

TEST_CASE("read-only modes deny every push, whatever the rules say (one decider for cc-classify and cc-pushgate)") {
    auto p = parse(R"({"rules":[{"action":"push","decision":"allow"}]})", "test");
    REQUIRE(p);
    CHECK(decide(*p, {"push", Mode::chat, std::nullopt}).decision == Decision::allow);
    for (Mode m : {Mode::plan, Mode::review, Mode::orchestrate}) {
        auto v = decide(*p, {"push", m, "refs/heads/x"}, {"create", {}});
        CHECK(v.decision == Decision::deny);
        CHECK(v.source == "mode:" + std::string(to_string(m)));
        CHECK(v.reason == "push is not allowed in " + std::string(to_string(m)) + " mode (read-only)");
        CHECK(decide(*p, {"push", m, std::nullopt}).decision == Decision::deny);
    }
}
