// cc-pushgate end to end, kinds of change: create, update, force and delete
// as push-rule fields, force told from a fast-forward by the gateway's own
// ancestry check (a bare mirror and a quarantined index-pack), and the
// session's ${conversation} namespace. Real git, the real gateway binary and
// a real smart-HTTP upstream on 127.0.0.1 (rig.hpp).
#include "harness.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <thread>
#include <chrono>
#include <functional>
#include <memory>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cc/core/json_writer.hpp"
#include "cc/git/pkt_line.hpp"
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

// The mirror is the gateway's, but an agent of the same uid may find a way
// to write it: a replace ref planted there makes the rewritten commit read as
// a child of the old tip. git on the mirror ignores replace refs.
TEST_CASE("a replace ref planted in the mirror does not turn a force push into an update") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = diverged("force-replace", "feature");
    const std::string old_tip = upstream().ref("acme/demo", "refs/heads/feature");
    const std::string rewritten = head(dir);
    // A first try makes the mirror and brings the old tip into it.
    auto first = git({"push", "--force", "origin", "HEAD:refs/heads/feature"}, dir);
    REQUIRE(first.status == 1);
    const std::string mirror = mirror_dir() + "/github.com/acme/demo.git";
    REQUIRE(fs::exists(mirror + "/objects"));
    // The plant: a commit with the rewritten one's tree and the old tip as
    // parent, put in place of the rewritten commit.
    std::string tree = git({"rev-parse", "HEAD^{tree}"}, dir).out.substr(0, 40);
    std::string body = "tree " + tree + "\nparent " + old_tip +
                       "\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n\nplanted\n";
    auto made = run({"git", "--git-dir", mirror, "hash-object", "-t", "commit", "-w", "--stdin"}, body);
    REQUIRE(made.status == 0);
    const std::string fake = made.out.substr(0, 40);
    REQUIRE(git({"--git-dir", mirror, "update-ref", "refs/replace/" + rewritten, fake}, dir).status == 0);
    // It works on git as git reads it by default; not with replace refs off.
    std::map<std::string, std::string> with_objects = {{"GIT_ALTERNATE_OBJECT_DIRECTORIES", dir + "/.git/objects"}};
    CHECK(git({"--git-dir", mirror, "merge-base", "--is-ancestor", old_tip, rewritten}, dir, with_objects).status == 0);
    with_objects["GIT_NO_REPLACE_OBJECTS"] = "1";
    CHECK(git({"--git-dir", mirror, "merge-base", "--is-ancestor", old_tip, rewritten}, dir, with_objects).status == 1);
    // Through the gateway: still a force push, refused, the branch unchanged.
    auto r = git({"push", "--force", "origin", "HEAD:refs/heads/feature"}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] HEAD -> feature (Control Center policy: force push (") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/feature") == old_tip);
    REQUIRE(git({"--git-dir", mirror, "update-ref", "-d", "refs/replace/" + rewritten}, dir).status == 0);
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

namespace {

Gateway& content_gateway() {
    static std::string policy = [] {
        std::string p = scratch_dir() + "/content-policy.json";
        write_file(p, R"({"version": 1, "rules": [
  {"action": "push", "paths": [".github/workflows/*", "CODEOWNERS"], "decision": "deny", "reason": "workflows and owners are changed by people"},
  {"action": "push", "sizeOver": 100000, "decision": "deny", "reason": "no files over 100 kB"},
  {"action": "push", "decision": "allow"}]})");
        return p;
    }();
    static Gateway g({"--upstream", upstream().base(), "--repo", "acme/demo", "--policy", policy, "--token-file",
                      token_file(), "--mirror-dir", mirror_dir() + "-content"});
    return g;
}

// acme/demo with main at the work repo's first commit.
std::string repo_on_main(const std::string& name, const Gateway& g) {
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo(name, g);
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/main"}, dir).status == 0);
    return dir;
}

}  // namespace

TEST_CASE("content rules: a push that changes a workflow or CODEOWNERS is refused before upstream sees it") {
    NEED_RIG();
    // Without the content rule the same push goes through.
    std::string plain = repo_on_main("content-plain", gateway());
    commit(plain, "README", "more\n");
    std::string wf = plain + "/.github/workflows";
    fs::create_directories(wf);
    commit(plain, ".github/workflows/ci.yml", "on: push\n");
    auto ok = git({"push", "origin", "HEAD:refs/heads/wf"}, plain);
    INFO(ok.err);
    REQUIRE(ok.status == 0);
    REQUIRE(upstream().ref("acme/demo", "refs/heads/wf") == head(plain));

    // With it: a new branch off main adding a workflow, refused.
    std::string dir = repo_on_main("content-wf", content_gateway());
    commit(dir, "README", "more\n");
    fs::create_directories(dir + "/.github/workflows");
    commit(dir, ".github/workflows/ci.yml", "on: push\n");
    auto r = git({"push", "origin", "HEAD:refs/heads/wf"}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] HEAD -> wf (Control Center policy: workflows and owners are changed by people)") !=
          std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/wf").empty());
    auto ev = events(content_gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["refs"][0]["kind"] == "create");
    CHECK(ev.back()["refs"][0]["decision"] == "deny");
    CHECK(ev.back()["refs"][0]["content"]["files"] == 2);  // README and the workflow, against main
    CHECK(ev.back()["result"] == "rejected");

    // An update of main touching CODEOWNERS in a subdirectory: refused too.
    std::string base = head(dir);
    REQUIRE(git({"reset", "-q", "--hard", "HEAD~2"}, dir).status == 0);
    fs::create_directories(dir + "/docs");
    commit(dir, "docs/CODEOWNERS", "* @acme/owners\n");
    auto owners = git({"push", "origin", "HEAD:refs/heads/main"}, dir);
    CHECK(owners.status == 1);
    CHECK(owners.err.find(" ! [remote rejected] HEAD -> main (Control Center policy: workflows and owners are changed by people)") !=
          std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/main") != head(dir));
    (void)base;

    // An ordinary change goes through the same gateway, its content read.
    REQUIRE(git({"reset", "-q", "--hard", "HEAD~1"}, dir).status == 0);
    commit(dir, "src.txt", "code\n");
    auto fine = git({"push", "origin", "HEAD:refs/heads/main"}, dir);
    INFO(fine.err);
    CHECK(fine.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/main") == head(dir));
    ev = events(content_gateway(), "push");
    CHECK(ev.back()["refs"][0]["content"]["files"] == 1);
    CHECK(ev.back()["result"] == "forwarded");
}

// Four ways to bring a workflow past a check that compares only the old and
// new tips, case-sensitively, by the paths the push names: a commit that adds
// it with a later one that takes it out again (it stays in the upstream's
// history), another case (a case-insensitive checkout or host reads it as
// the same path), a symbolic link that makes it appear there, and a
// submodule mounted there. Each goes through a gateway without content rules
// (the push is otherwise fine) and is refused with them, the branch absent
// from the upstream.
TEST_CASE("content rules: every commit, any case, symbolic links and submodules are read") {
    NEED_RIG();
    struct Way {
        std::string name;
        std::function<void(const std::string&)> make;
    };
    const std::vector<Way> ways = {
        {"history",
         [](const std::string& d) {
             fs::create_directories(d + "/.github/workflows");
             commit(d, ".github/workflows/ci.yml", "on: push\n");
             REQUIRE(git({"rm", "-q", "-r", ".github"}, d).status == 0);
             REQUIRE(git({"commit", "-q", "-m", "gone again"}, d).status == 0);
             // Tip against base: nothing of it.
             CHECK(git({"diff", "--name-only", "HEAD~2", "HEAD"}, d).out == "");
         }},
        {"case",
         [](const std::string& d) {
             fs::create_directories(d + "/.GitHub/Workflows");
             commit(d, ".GitHub/Workflows/ci.yml", "on: push\n");
         }},
        {"symlink",
         [](const std::string& d) {
             fs::create_directories(d + "/ci/workflows");
             fs::create_symlink("ci", d + "/.github");
             REQUIRE(git({"add", ".github"}, d).status == 0);
             commit(d, "ci/workflows/ci.yml", "on: push\n");
         }},
        {"submodule",
         [](const std::string& d) {
             REQUIRE(git({"update-index", "--add", "--cacheinfo", "160000," + head(d) + ",.github"}, d).status == 0);
             REQUIRE(git({"commit", "-q", "-m", "a submodule at .github"}, d).status == 0);
         }},
    };
    for (const auto& w : ways) {
        INFO(w.name);
        std::string plain = repo_on_main("content-" + w.name + "-plain", gateway());
        w.make(plain);
        auto ok = git({"push", "origin", "HEAD:refs/heads/" + w.name}, plain);
        INFO(ok.err);
        REQUIRE(ok.status == 0);
        REQUIRE(upstream().ref("acme/demo", "refs/heads/" + w.name) == head(plain));

        std::string dir = repo_on_main("content-" + w.name, content_gateway());
        w.make(dir);
        auto r = git({"push", "origin", "HEAD:refs/heads/" + w.name}, dir);
        INFO(r.err);
        CHECK(r.status == 1);
        CHECK(r.err.find(" ! [remote rejected] HEAD -> " + w.name +
                         " (Control Center policy: workflows and owners are changed by people)") != std::string::npos);
        CHECK(upstream().ref("acme/demo", "refs/heads/" + w.name).empty());
    }
}

TEST_CASE("content rules: a file over sizeOver is refused, one at the limit goes") {
    NEED_RIG();
    std::string dir = repo_on_main("content-size", content_gateway());
    commit(dir, "small.bin", std::string(100000, 'x'));
    auto at = git({"push", "origin", "HEAD:refs/heads/data"}, dir);
    INFO(at.err);
    CHECK(at.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/data") == head(dir));
    std::string before = head(dir);
    commit(dir, "big.bin", std::string(100001, 'y'));
    auto over = git({"push", "origin", "HEAD:refs/heads/data"}, dir);
    CHECK(over.status == 1);
    CHECK(over.err.find(" ! [remote rejected] HEAD -> data (Control Center policy: no files over 100 kB)") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/data") == before);
    auto ev = events(content_gateway(), "push");
    CHECK(ev.back()["refs"][0]["content"]["largestBytes"] == 100001);
}

TEST_CASE("--spec fills ${conversation} from the SandboxSpec's conversationId and takes its mode") {
    NEED_RIG();
    std::string spec = scratch_dir() + "/spec-c77.json";
    write_file(spec, R"({"sessionId": "s-1", "workspaceId": "w-1", "agentId": "coder", "conversationId": "c77"})");
    Gateway g({"--upstream", upstream().base(), "--repo", "acme/demo", "--policy", policy_file(), "--token-file",
               token_file(), "--spec", spec, "--mirror-dir", mirror_dir()});
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("spec-vars", g);
    auto own = git({"push", "origin", "HEAD:refs/heads/agent/c77/work"}, dir);
    INFO(own.err);
    CHECK(own.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/agent/c77/work") == head(dir));
    auto other = git({"push", "origin", "HEAD:refs/heads/agent/c42/work"}, dir);
    CHECK(other.status == 1);
    CHECK(other.err.find(" ! [remote rejected] HEAD -> agent/c42/work (Control Center policy: another conversation's "
                         "namespace)") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/agent/c42/work").empty());

    // A read-only spec: the same push is denied by the mode.
    std::string plan = scratch_dir() + "/spec-plan.json";
    write_file(plan, R"({"sessionId": "s-2", "workspaceId": "w-1", "conversationId": "c77", "mode": "plan"})");
    Gateway ro({"--upstream", upstream().base(), "--repo", "acme/demo", "--policy", policy_file(), "--token-file",
                token_file(), "--spec", plan, "--mirror-dir", mirror_dir()});
    std::string dir2 = agent_repo("spec-plan", ro);
    auto denied = git({"push", "origin", "HEAD:refs/heads/agent/c77/other"}, dir2);
    CHECK(denied.status == 1);
    CHECK(denied.err.find(" ! [remote rejected] HEAD -> agent/c77/other (Control Center policy: push is not allowed in "
                          "plan mode (read-only))") != std::string::npos);
}

TEST_CASE("--spec: a flag that disagrees with the spec, or a spec value the policy cannot use, exits 2") {
    NEED_RIG();
    std::string spec = scratch_dir() + "/spec-c77.json";
    write_file(spec, R"({"sessionId": "s-1", "workspaceId": "w-1", "conversationId": "c77"})");
    auto differ = run({bin("cc-pushgate"), "--upstream", upstream().base(), "--repo", "acme/demo", "--policy",
                       policy_file(), "--token-file", token_file(), "--spec", spec, "--conversation", "c42"});
    CHECK(differ.status == 2);
    CHECK(differ.err == "cc-pushgate: --conversation: 'c42' differs from the spec's conversationId 'c77'\n");
    auto mode = run({bin("cc-pushgate"), "--upstream", upstream().base(), "--repo", "acme/demo", "--policy",
                     policy_file(), "--token-file", token_file(), "--spec", spec, "--mode", "plan"});
    CHECK(mode.status == 2);
    CHECK(mode.err == "cc-pushgate: --mode: 'plan' differs from the spec's mode 'chat'\n");
    std::string strict = scratch_dir() + "/strict-session-policy.json";
    write_file(strict, R"({"version": 1, "rules": [
  {"action": "push", "refs": ["refs/heads/s/${session}/*"], "kinds": ["delete"], "decision": "deny"}]})");
    std::string odd = scratch_dir() + "/spec-odd.json";
    write_file(odd, R"({"sessionId": "s:1", "workspaceId": "w-1"})");
    auto unusable = run({bin("cc-pushgate"), "--upstream", upstream().base(), "--repo", "acme/demo", "--policy", strict,
                         "--token-file", token_file(), "--spec", odd});
    CHECK(unusable.status == 2);
    CHECK(unusable.err == "cc-pushgate: --spec: sessionId 's:1' has ':' (letters, digits, '.', '_' and '-' only), so it "
                          "cannot fill ${session}\n");
    auto missing = run({bin("cc-pushgate"), "--upstream", upstream().base(), "--repo", "acme/demo", "--policy",
                        policy_file(), "--token-file", token_file(), "--spec", scratch_dir() + "/no-such-spec.json"});
    CHECK(missing.status == 2);
    CHECK(missing.err.find("cc-pushgate: --spec '") == 0);
}

TEST_CASE("content rules: the first push into an empty repository is read whole") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string clean = agent_repo("content-empty-ok", content_gateway());
    auto ok = git({"push", "origin", "HEAD:refs/heads/main"}, clean);
    INFO(ok.err);
    CHECK(ok.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/main") == head(clean));

    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("content-empty-wf", content_gateway());
    fs::create_directories(dir + "/.github/workflows");
    commit(dir, ".github/workflows/ci.yml", "on: push\n");
    auto r = git({"push", "origin", "HEAD:refs/heads/main"}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] HEAD -> main (Control Center policy: workflows and owners are changed by people)") !=
          std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/main").empty());
    auto ev = events(content_gateway(), "push");
    CHECK(ev.back()["refs"][0]["content"]["files"] == 2);  // README and the workflow: the whole tree
}

TEST_CASE("an update to a commit the upstream already has is judged by its real ancestry, not by the pack") {
    NEED_RIG();
    // main and feature at A; then B and C on main, straight to the upstream.
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("present", gateway());
    std::string a = head(dir);
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/main", "HEAD:refs/heads/feature"},
                dir).status == 0);
    commit(dir, "b.txt", "b\n");
    std::string c = commit(dir, "c.txt", "c\n");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/main"}, dir).status == 0);

    // feature A -> C: the pack is empty (the upstream has C), yet C descends
    // from A, so it is a fast-forward and goes.
    auto ff = git({"push", "origin", c + ":refs/heads/feature"}, dir);
    INFO(ff.err);
    CHECK(ff.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/feature") == c);
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["refs"][0]["kind"] == "update");
    CHECK(ev.back()["refs"][0]["ancestryChecked"] == true);
    CHECK(ev.back()["result"] == "forwarded");

    // feature C -> A, an older commit that is there too: a force push. Git
    // itself lets it through without the gateway's rule...
    REQUIRE(git({"push", "-q", "--force", upstream().write_url("acme/demo"), a + ":refs/heads/feature"}, dir).status == 0);
    REQUIRE(upstream().ref("acme/demo", "refs/heads/feature") == a);
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), c + ":refs/heads/feature"}, dir).status == 0);
    // ...and through the gateway it is refused as one.
    auto back = git({"push", "--force", "origin", a + ":refs/heads/feature"}, dir);
    INFO(back.err);
    CHECK(back.status == 1);
    CHECK(back.err.find(" ! [remote rejected] " + a + " -> feature (Control Center policy: force push (" + c.substr(0, 12) +
                        " is not an ancestor of " + a.substr(0, 12) + "): no force pushes outside the agent's namespace)") !=
          std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/feature") == c);
    ev = events(gateway(), "push");
    CHECK(ev.back()["refs"][0]["kind"] == "force");
}

TEST_CASE("a new commit whose parent is on another upstream branch is a fast-forward of the branch it extends") {
    NEED_RIG();
    // side at A; main moves on to D (straight to the upstream, so the
    // gateway's mirror has never seen D).
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("thin-parent", gateway());
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/main", "HEAD:refs/heads/side"},
                dir).status == 0);
    commit(dir, "d.txt", "d\n");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/main"}, dir).status == 0);
    // N on D, pushed to side: the pack holds N alone (its parent D is upstream).
    std::string n = commit(dir, "n.txt", "n\n");
    auto r = git({"push", "origin", "HEAD:refs/heads/side"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/side") == n);
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["refs"][0]["kind"] == "update");
    CHECK(ev.back()["refs"][0]["ancestryChecked"] == true);
}

TEST_CASE("a force push whose new commit is already on the upstream is still a force push") {
    NEED_RIG();
    // feature at F (its own line), main at M (another line): moving feature
    // to M sends no objects, and is a force push.
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("present-force", gateway());
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/main"}, dir).status == 0);
    std::string m = commit(dir, "m.txt", "m\n");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/main"}, dir).status == 0);
    REQUIRE(git({"reset", "-q", "--hard", "HEAD~1"}, dir).status == 0);
    std::string f = commit(dir, "f.txt", "f\n");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/feature"}, dir).status == 0);
    // Without the gateway's rule git moves it.
    REQUIRE(git({"push", "-q", "--force", upstream().write_url("acme/demo"), m + ":refs/heads/feature"}, dir).status == 0);
    REQUIRE(upstream().ref("acme/demo", "refs/heads/feature") == m);
    REQUIRE(git({"push", "-q", "--force", upstream().write_url("acme/demo"), f + ":refs/heads/feature"}, dir).status == 0);
    auto r = git({"push", "--force", "origin", m + ":refs/heads/feature"}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] " + m + " -> feature (Control Center policy: force push (" + f.substr(0, 12) +
                     " is not an ancestor of " + m.substr(0, 12) + "): no force pushes outside the agent's namespace)") !=
          std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/feature") == f);
}

// The gateway used to hold back only the body's last 64 bytes, taking the
// pack to end the body: with bytes after the pack, the pack's own checksum
// reached an upstream that streams bodies into git before the force check
// ran, and the upstream applied a push the gateway then reported refused.
// Now the pack's end is the scan's, not the body's: its trailer waits for the
// verdict, and bytes after it refuse the push (400) before the trailer goes.
TEST_CASE("bytes after the pack: a streaming upstream never gets a whole pack before the verdict") {
    NEED_RIG();
    Upstream up(true);
    up.create_repo("acme/demo");
    Gateway g({"--upstream", up.base(), "--repo", "acme/demo", "--policy", policy_file(), "--token-file", token_file(),
               "--conversation", "c42", "--mirror-dir", scratch_dir() + "/mirrors-stream"});
    std::string dir = agent_repo("after-pack", g);
    commit(dir, "one.txt", "1\n");
    REQUIRE(git({"push", "-q", up.write_url("acme/demo"), "HEAD:refs/heads/feature"}, dir).status == 0);
    const std::string before = up.ref("acme/demo", "refs/heads/feature");
    REQUIRE(git({"reset", "-q", "--hard", "HEAD~1"}, dir).status == 0);
    const std::string rewritten = commit(dir, "other.txt", "rewritten\n");
    // The force push as a request body, with 4 KiB after the pack.
    auto pack = run({"git", "-C", dir, "pack-objects", "--stdout", "--revs", "-q"}, rewritten + "\n^" + before + "\n");
    REQUIRE(pack.status == 0);
    REQUIRE(pack.out.rfind("PACK", 0) == 0);
    const std::string body = cc::git::pkt(before + " " + rewritten + " refs/heads/feature" + std::string(1, '\0') +
                                          "report-status\n") +
                             "0000" + pack.out + std::string(4096, 'x');

    // Sent as a slow client would: the pack, then the extra bytes in two
    // parts a moment apart (time enough for a streaming upstream to apply a
    // pack whose checksum it was given).
    auto slow_post = [&](int port, const std::string& path, const std::string& extra_headers) {
        std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                          "\r\nContent-Type: application/x-git-receive-pack-request\r\n" + extra_headers +
                          "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
        const std::size_t first = req.size() - 4096;
        return http_raw_in_parts(port, req, {first, first + 2048}, 700);
    };

    // Sent so straight to the streaming upstream, the body rewrites the
    // branch: what comes after the pack does not stop git from applying it.
    const std::string base = up.base();  // http://127.0.0.1:P/git
    const int up_port = std::stoi(base.substr(base.rfind(':') + 1));
    auto direct = slow_post(up_port, "/git/acme/demo.git/git-receive-pack",
                            "Authorization: Basic " + cc::json::base64("x-access-token:" + write_token) + "\r\n");
    INFO(direct);
    REQUIRE(direct.rfind("HTTP/1.1 200", 0) == 0);
    REQUIRE(up.ref("acme/demo", "refs/heads/feature") == rewritten);
    REQUIRE(git({"push", "-q", "--force", up.write_url("acme/demo"), before + ":refs/heads/feature"}, dir).status == 0);
    REQUIRE(up.ref("acme/demo", "refs/heads/feature") == before);

    // Through the gateway: refused before the verdict, and the branch stays.
    std::string resp = slow_post(g.port(), g.path("/github.com/acme/demo.git/git-receive-pack"), "");
    INFO(resp << g.stderr_text());
    CHECK(resp.rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(resp.find("cc-pushgate: the request body goes on after the pack\n") != std::string::npos);
    CHECK(up.ref("acme/demo", "refs/heads/feature") == before);
    auto ev = events(g, "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["result"] == "error");
    CHECK(ev.back()["error"] == "the request body goes on after the pack");
    // The same push without the extra bytes is judged (a force push, refused).
    auto plain = git({"push", "--force", "origin", "HEAD:refs/heads/feature"}, dir);
    CHECK(plain.status == 1);
    CHECK(plain.err.find("no force pushes outside the agent's namespace") != std::string::npos);
    CHECK(up.ref("acme/demo", "refs/heads/feature") == before);
}

// The same with the body's other framings: chunked (as git sends large
// pushes) and gzip-encoded. lighttpd answers a chunked upload to a CGI with
// 411, so the upstream here is tests/git/stream_upstream.py, which streams
// every body into git-http-backend as it arrives. Each framing is first sent
// straight to it (the extra bytes arrive after the pack; the branch is
// rewritten), then through the gateway (400 before the pack's end is
// forwarded; the branch stays).
TEST_CASE("bytes after the pack, chunked and gzip-encoded: refused before a streaming upstream applies the pack") {
    NEED_RIG();
    std::unique_ptr<StreamUpstream> up;
    try {
        up = std::make_unique<StreamUpstream>();
    } catch (const std::exception& e) {
        CC_SKIP(std::string("the streaming upstream did not start: ") + e.what());
    }
    const std::string bare = up->create_repo("acme/demo");
    Gateway g({"--upstream", up->base(), "--repo", "acme/demo", "--policy", policy_file(), "--token-file", token_file(),
               "--conversation", "c42", "--mirror-dir", scratch_dir() + "/mirrors-stream-framings"});
    std::string dir = work_repo("after-pack-framings");
    commit(dir, "one.txt", "1\n");
    REQUIRE(git({"push", "-q", bare, "HEAD:refs/heads/feature"}, dir).status == 0);
    const std::string before = up->ref("acme/demo", "refs/heads/feature");
    REQUIRE(!before.empty());
    REQUIRE(git({"reset", "-q", "--hard", "HEAD~1"}, dir).status == 0);
    const std::string rewritten = commit(dir, "other.txt", "rewritten\n");
    auto pack = run({"git", "-C", dir, "pack-objects", "--stdout", "--revs", "-q"}, rewritten + "\n^" + before + "\n");
    REQUIRE(pack.status == 0);
    const std::string head = cc::git::pkt(before + " " + rewritten + " refs/heads/feature" + std::string(1, '\0') +
                                          "report-status\n") +
                             "0000" + pack.out;
    const std::string extra(4096, 'x');

    // Each framing: the request, and where to cut it (after the pack, then
    // halfway through the extra bytes), sent 700 ms apart.
    struct Framed {
        std::string name, headers, body;
        std::vector<std::size_t> cuts;  // offsets in the body
    };
    std::vector<Framed> framings;
    {
        auto chunk = [](const std::string& d) {
            char n[32];
            std::snprintf(n, sizeof n, "%zx\r\n", d.size());
            return std::string(n) + d + "\r\n";
        };
        Framed f{"chunked", "Transfer-Encoding: chunked\r\n", "", {}};
        f.body = chunk(head);
        f.cuts.push_back(f.body.size());
        f.body += chunk(extra.substr(0, 2048));
        f.cuts.push_back(f.body.size());
        f.body += chunk(extra.substr(2048)) + "0\r\n\r\n";
        framings.push_back(f);
    }
    {
        // One gzip stream, flushed after the pack: everything up to the pack's
        // end can be inflated before the rest arrives.
        auto gz = run({"python3", "-c",
                       "import sys,zlib; d=sys.stdin.buffer.read(); n=int(sys.argv[1]); "
                       "c=zlib.compressobj(9, zlib.DEFLATED, 31); a=c.compress(d[:n])+c.flush(zlib.Z_SYNC_FLUSH); "
                       "b=c.compress(d[n:])+c.flush(); sys.stdout.buffer.write(str(len(a)).encode()+b'\\n'+a+b)",
                       std::to_string(head.size())},
                      head + extra);
        REQUIRE(gz.status == 0);
        auto nl = gz.out.find('\n');
        REQUIRE(nl != std::string::npos);
        const std::size_t first = std::stoul(gz.out.substr(0, nl));
        Framed f{"gzip", "Content-Encoding: gzip\r\n", gz.out.substr(nl + 1), {}};
        f.headers += "Content-Length: " + std::to_string(f.body.size()) + "\r\n";
        f.cuts = {first, first + (f.body.size() - first) / 2};
        framings.push_back(f);
    }
    auto post = [&](int port, const std::string& path, const Framed& f) {
        std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                          "\r\nContent-Type: application/x-git-receive-pack-request\r\n" + f.headers +
                          "Connection: close\r\n\r\n";
        std::vector<std::size_t> cuts;
        for (auto c : f.cuts) cuts.push_back(req.size() + c);
        return http_raw_in_parts(port, req + f.body, cuts, 700);
    };
    for (const auto& f : framings) {
        SECTION(f.name) {
            // Straight to the streaming upstream: the branch is rewritten.
            auto direct = post(up->port(), "/git/acme/demo.git/git-receive-pack", f);
            INFO(f.name << "\n" << direct);
            REQUIRE(direct.rfind("HTTP/1.1 200", 0) == 0);
            REQUIRE(up->ref("acme/demo", "refs/heads/feature") == rewritten);
            REQUIRE(git({"push", "-q", "--force", bare, before + ":refs/heads/feature"}, dir).status == 0);
            REQUIRE(up->ref("acme/demo", "refs/heads/feature") == before);
            // Through the gateway: refused, and the branch stays.
            std::string resp = post(g.port(), g.path("/github.com/acme/demo.git/git-receive-pack"), f);
            INFO(resp << g.stderr_text());
            CHECK(resp.rfind("HTTP/1.1 400 ", 0) == 0);
            CHECK(resp.find("cc-pushgate: the request body goes on after the pack\n") != std::string::npos);
            CHECK(up->ref("acme/demo", "refs/heads/feature") == before);
        }
    }
}

TEST_CASE("an upstream that dies mid-push: git's message names the outage, not the policy, and nothing moves") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    DyingFront front(upstream().port(), 256 * 1024);
    Gateway g({"--upstream", front.base(), "--repo", "acme/demo", "--policy", policy_file(), "--token-file",
               token_file(), "--conversation", "c42"});
    std::string dir = agent_repo("dying", g);
    git({"config", "core.compression", "0"}, dir);
    REQUIRE(run({"dd", "if=/dev/urandom", "of=" + dir + "/blob", "bs=1M", "count=4", "status=none"}).status == 0);
    git({"add", "blob"}, dir);
    git({"commit", "-q", "-m", "4 MB"}, dir);
    auto r = git({"push", "origin", "HEAD:refs/heads/agent/c42/dying"}, dir);
    INFO(r.err << g.stderr_text());
    CHECK(front.cuts() == 1);
    CHECK(r.status == 1);
    CHECK(r.err.find("remote: cc-pushgate: the upstream went away during the push") != std::string::npos);
    CHECK(r.err.find(" ! [remote rejected] HEAD -> agent/c42/dying (cc-pushgate: the upstream went away during the push") !=
          std::string::npos);
    CHECK(r.err.find("it had not received the whole pack, so it applied nothing") != std::string::npos);
    CHECK(r.err.find("policy") == std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/agent/c42/dying").empty());
    auto ev = events(g, "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["result"] == "error");
    CHECK(ev.back()["error"].get<std::string>().rfind("the upstream went away during the push", 0) == 0);
    // Straight to the upstream (no front), the same push goes through.
    Gateway direct({"--upstream", upstream().base(), "--repo", "acme/demo", "--policy", policy_file(), "--token-file",
                    token_file(), "--conversation", "c42"});
    auto again = git({"push", direct.push_url("acme/demo"), "HEAD:refs/heads/agent/c42/dying"}, dir);
    INFO(again.err);
    CHECK(again.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/agent/c42/dying") == head(dir));
}

namespace {

// Every process's command line and environment, as /proc shows them to a
// process of the same uid; the pids whose text holds any of `needles`.
pid_t parent_of(const std::string& pid) {
    std::string stat = read_file("/proc/" + pid + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 > stat.size()) return 0;
    return static_cast<pid_t>(std::atol(stat.c_str() + stat.find(' ', close + 2) + 1));
}

bool descends_from(const std::string& pid, pid_t ancestor) {
    if (ancestor <= 0) return true;
    std::string p = pid;
    for (int depth = 0; depth < 16; ++depth) {
        pid_t up = parent_of(p);
        if (up <= 1) return false;
        if (up == ancestor) return true;
        p = std::to_string(up);
    }
    return false;
}

std::vector<std::string> processes_showing(const std::vector<std::string>& needles, bool* saw_git_fetch,
                                           pid_t under = 0) {
    std::vector<std::string> hits;
    for (const auto& e : fs::directory_iterator("/proc")) {
        std::string pid = e.path().filename().string();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        if (!descends_from(pid, under)) continue;
        for (const char* what : {"/cmdline", "/environ"}) {
            std::string text = read_file("/proc/" + pid + what);
            for (char& ch : text)
                if (ch == '\0') ch = ' ';
            std::string first = text.substr(0, text.find(' '));
            if (std::string(what) == "/cmdline" && first.size() >= 3 && first.compare(first.size() - 3, 3, "git") == 0 &&
                text.find(" fetch ") != std::string::npos)
                *saw_git_fetch = true;
            for (const auto& n : needles)
                if (text.find(n) != std::string::npos) hits.push_back(pid + what + ": " + text.substr(0, 200));
        }
    }
    return hits;
}

}  // namespace

TEST_CASE("the upstream token never shows in the argv or environment of the git processes the gateway runs") {
    NEED_RIG();
    if (!cc::test::is_root()) CC_SKIP("reads other processes' environments in /proc");
    upstream().create_repo("acme/demo");
    const std::vector<std::string> needles = {write_token, cc::json::base64("x-access-token:" + write_token)};
    // The scan sees a secret where one is: a process holding it in its
    // environment, as the git children once did (GIT_CONFIG_VALUE_0).
    {
        bool unused = false;
        pid_t p = ::fork();
        REQUIRE(p >= 0);
        if (p == 0) {
            ::setenv("GIT_CONFIG_VALUE_0", ("Authorization: Basic " + needles[1]).c_str(), 1);
            ::execlp("sleep", "sleep", "5", nullptr);
            ::_exit(127);
        }
        bool seen = false;
        for (int i = 0; i < 100 && !seen; ++i) {
            seen = !processes_showing(needles, &unused).empty();
            if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
        REQUIRE(seen);
    }
    // A slow upstream (each fetch request waits), so the mirror's git fetch
    // runs long enough to be looked at. feature-slow at A and main at C,
    // a descendant, on the upstream; pushing C to feature-slow sends no
    // pack, so the gateway fetches A into its mirror to judge the update.
    std::string dir = agent_repo("token-env", gateway());
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/feature-slow"}, dir).status == 0);
    commit(dir, "b.txt", "b\n");
    std::string next = commit(dir, "c.txt", "c\n");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/main"}, dir).status == 0);
    DyingFront slow(upstream().port(), ~std::size_t{0}, 700);
    std::string mirrors = scratch_dir() + "/token-env-mirrors";
    Gateway g({"--upstream", slow.base(), "--repo", "acme/demo", "--policy", policy_file(), "--token-file", token_file(),
               "--conversation", "c42", "--mirror-dir", mirrors});
    std::string gdir = agent_repo("token-env-2", g);
    REQUIRE(git({"fetch", "-q", upstream().read_url("acme/demo"), "refs/heads/main"}, gdir).status == 0);
    REQUIRE(git({"reset", "-q", "--hard", "FETCH_HEAD"}, gdir).status == 0);
    std::atomic<bool> done{false};
    RunResult pushed;
    std::thread pusher([&] {
        pushed = git({"push", "origin", "HEAD:refs/heads/feature-slow"}, gdir);
        done = true;
    });
    std::vector<std::string> hits;
    bool saw_fetch = false;
    while (!done) {
        auto h = processes_showing(needles, &saw_fetch, g.pid());
        hits.insert(hits.end(), h.begin(), h.end());
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pusher.join();
    INFO(pushed.err << g.stderr_text());
    CHECK(pushed.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/feature-slow") == next);
    CHECK(saw_fetch);  // the mirror's fetch ran, and was looked at
    std::string shown;
    for (const auto& h : hits) shown += h + "\n";
    INFO(shown);
    CHECK(hits.empty());
}
