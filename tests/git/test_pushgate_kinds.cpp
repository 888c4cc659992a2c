// cc-pushgate end to end, kinds of change: create, update, force and delete
// as push-rule fields, force told from a fast-forward by the gateway's own
// ancestry check (a bare mirror and a quarantined index-pack), and the
// session's ${conversation} namespace. Real git, the real gateway binary and
// a real smart-HTTP upstream on 127.0.0.1 (rig.hpp).
#include "harness.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "rig.hpp"

using namespace cc::test;
using namespace cc::test::rig;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

Upstream& upstream() {
    static Upstream u;
    return u;
}

std::string policy_file() {
    static std::string path = [] {
        std::string p = scratch_dir() + "/kinds-policy.json";
        write_file(p, R"({"version": 1, "rules": [
  {"action": "push", "refs": ["refs/heads/agent/${conversation}/*"], "decision": "allow"},
  {"action": "push", "refs": ["refs/heads/agent/*"], "decision": "deny", "reason": "another conversation's namespace"},
  {"action": "push", "kinds": ["force"], "decision": "deny", "reason": "no force pushes outside the agent's namespace"},
  {"action": "push", "kinds": ["delete"], "decision": "deny", "reason": "no deletes outside the agent's namespace"},
  {"action": "push", "decision": "allow"}]})");
        return p;
    }();
    return path;
}

std::string token_file() {
    static std::string path = [] {
        std::string p = scratch_dir() + "/kinds-write-token";
        write_file(p, write_token + "\n", 0600);
        return p;
    }();
    return path;
}

std::string mirror_dir() { return scratch_dir() + "/mirrors"; }

Gateway& gateway() {
    static Gateway g({"--upstream", upstream().base(), "--repo", "acme/demo", "--policy", policy_file(), "--token-file",
                      token_file(), "--conversation", "c42", "--mirror-dir", mirror_dir()});
    return g;
}

// acme/demo on the upstream with refs/heads/<branch> at two commits of a fresh
// work repo; the repo's HEAD is then reset one commit back and given a new
// commit, so that pushing HEAD to <branch> is not a fast-forward.
std::string diverged(const std::string& name, const std::string& branch) {
    std::string dir = agent_repo(name, gateway());
    commit(dir, "one.txt", "1\n");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/" + branch}, dir).status == 0);
    REQUIRE(git({"reset", "-q", "--hard", "HEAD~1"}, dir).status == 0);
    commit(dir, "other.txt", "rewritten\n");
    return dir;
}

}  // namespace

#define NEED_RIG()                                                            \
    do {                                                                      \
        if (!have_rig()) CC_SKIP("needs lighttpd, git and git-http-backend"); \
    } while (0)

TEST_CASE("a force push is told from a fast-forward by the pack itself and refused outside the agent's namespace") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    // Without the gateway a force push rewrites the branch.
    std::string dir = diverged("force-direct", "feature");
    std::string before = upstream().ref("acme/demo", "refs/heads/feature");
    REQUIRE(git({"push", "-q", "--force", upstream().write_url("acme/demo"), "HEAD:refs/heads/feature"}, dir).status == 0);
    REQUIRE(upstream().ref("acme/demo", "refs/heads/feature") == head(dir));

    // Through the gateway the same force push is refused, and the branch stays.
    upstream().create_repo("acme/demo");
    dir = diverged("force-gw", "feature");
    before = upstream().ref("acme/demo", "refs/heads/feature");
    auto r = git({"push", "--force", "origin", "HEAD:refs/heads/feature"}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] HEAD -> feature (Control Center policy: force push (") != std::string::npos);
    CHECK(r.err.find("no force pushes outside the agent's namespace)") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/feature") == before);
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["refs"][0]["kind"] == "force");
    CHECK(ev.back()["refs"][0]["decision"] == "deny");
    CHECK(ev.back()["refs"][0]["ancestryChecked"] == true);
    CHECK(ev.back()["result"] == "rejected");
    // Upstream kept no quarantine and the gateway's was removed.
    for (const auto& e : fs::directory_iterator(mirror_dir() + "/github.com/acme/demo.git/objects"))
        CHECK(e.path().filename().string().rfind("incoming-", 0) != 0);

    // A fast-forward to the same branch goes through, checked.
    REQUIRE(git({"fetch", "-q", upstream().read_url("acme/demo"), "refs/heads/feature"}, dir).status == 0);
    REQUIRE(git({"reset", "-q", "--hard", "FETCH_HEAD"}, dir).status == 0);
    std::string ff = commit(dir, "ff.txt", "forward\n");
    auto f = git({"push", "origin", "HEAD:refs/heads/feature"}, dir);
    INFO(f.err);
    CHECK(f.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/feature") == ff);
    ev = events(gateway(), "push");
    CHECK(ev.back()["refs"][0]["kind"] == "update");
    CHECK(ev.back()["refs"][0]["ancestryChecked"] == true);
    CHECK(ev.back()["result"] == "forwarded");
}

TEST_CASE("a force push to the agent's own ${conversation} namespace is allowed, another conversation's is not") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = diverged("force-own", "agent/c42/work");
    auto r = git({"push", "--force", "origin", "HEAD:refs/heads/agent/c42/work"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/agent/c42/work") == head(dir));
    auto other = git({"push", "origin", "HEAD:refs/heads/agent/c41/work"}, dir);
    CHECK(other.status == 1);
    CHECK(other.err.find(" ! [remote rejected] HEAD -> agent/c41/work (Control Center policy: another conversation's "
                         "namespace)") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/agent/c41/work").empty());
}

TEST_CASE("deletes are a kind of their own: refused outside the namespace, allowed inside it") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("deletes", gateway());
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/keep", "HEAD:refs/heads/agent/c42/tmp"},
                dir).status == 0);
    auto d = git({"push", "origin", ":refs/heads/keep"}, dir);
    CHECK(d.status == 1);
    CHECK(d.err.find(" ! [remote rejected] keep (Control Center policy: no deletes outside the agent's namespace)") !=
          std::string::npos);
    CHECK(!upstream().ref("acme/demo", "refs/heads/keep").empty());
    auto own = git({"push", "origin", ":refs/heads/agent/c42/tmp"}, dir);
    INFO(own.err);
    CHECK(own.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/agent/c42/tmp").empty());
}

TEST_CASE("a deny rule naming ${conversation} needs --conversation; bad values and kinds exit 2") {
    NEED_RIG();
    // An allow rule with an unset variable only allows less; a deny rule would deny less.
    // (Left without a token source, so it stops at the next check instead of serving.)
    auto lenient = run({bin("cc-pushgate"), "--upstream", upstream().base(), "--repo", "acme/demo", "--policy",
                        policy_file()});
    CHECK(lenient.status == 2);
    CHECK(lenient.err.find("token source") != std::string::npos);
    CHECK(lenient.err.find("is required") == std::string::npos);
    std::string strict = scratch_dir() + "/strict-policy.json";
    write_file(strict, R"({"version": 1, "rules": [
  {"action": "push", "refs": ["refs/heads/agent/${conversation}/*"], "kinds": ["delete"], "decision": "deny"}]})");
    auto missing = run({bin("cc-pushgate"), "--upstream", upstream().base(), "--repo", "acme/demo", "--policy", strict,
                        "--token-file", token_file()});
    CHECK(missing.status == 2);
    CHECK(missing.err.find("--conversation: is required: the policy's refs use ${conversation} in a deny rule") !=
          std::string::npos);
    auto glob = run({bin("cc-pushgate"), "--upstream", upstream().base(), "--repo", "acme/demo", "--policy",
                     policy_file(), "--token-file", token_file(), "--conversation", "*"});
    CHECK(glob.status == 2);
    CHECK(glob.err.find("--conversation: '*' has '*'") != std::string::npos);
    std::string bad = scratch_dir() + "/bad-kind.json";
    write_file(bad, R"({"version": 1, "rules": [{"action": "push", "kinds": ["rewrite"], "decision": "deny"}]})");
    auto kind = run({bin("cc-pushgate"), "--upstream", upstream().base(), "--repo", "acme/demo", "--policy", bad,
                     "--token-file", token_file()});
    CHECK(kind.status == 2);
    CHECK(kind.err.find("rules[0].kinds[0]: unknown kind 'rewrite' (create, update, force or delete)") != std::string::npos);
}
