// cc-pushgate end to end: the real git client pushes through the real gateway
// binary to a real smart-HTTP upstream (lighttpd + git http-backend) on
// 127.0.0.1. Protocol tests send hand-made bytes to the gateway's socket.
#include "harness.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

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
        std::string p = scratch_dir() + "/policy.json";
        write_file(p, R"({"version": 1, "rules": [
  {"action": "push", "refs": ["main"], "decision": "deny", "reason": "main is released by CI"},
  {"action": "push", "refs": ["refs/tags/v*"], "decision": "deny", "reason": "release tags are made by CI"},
  {"action": "push", "refs": ["ask/*"], "decision": "ask"},
  {"action": "push", "decision": "allow"}]})");
        return p;
    }();
    return path;
}

std::string token_file() {
    static std::string path = [] {
        std::string p = scratch_dir() + "/write-token";
        write_file(p, write_token + "\n", 0600);
        return p;
    }();
    return path;
}

std::vector<std::string> gateway_args(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> a{"--upstream", upstream().base(), "--repo", "acme/demo", "--repo", "Acme/Linked",
                               "--policy", policy_file()};
    bool has_source = false;
    for (const auto& e : extra)
        if (e == "--token-command" || e == "--app-id") has_source = true;
    if (!has_source) {
        a.push_back("--token-file");
        a.push_back(token_file());
    }
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
}

// The shared gateway most tests push through.
Gateway& gateway() {
    static Gateway g(gateway_args());
    return g;
}

void no_token_leak(const Gateway& g, const RunResult& r) {
    CHECK(g.stdout_text().find(write_token) == std::string::npos);
    CHECK(g.stderr_text().find(write_token) == std::string::npos);
    CHECK(r.out.find(write_token) == std::string::npos);
    CHECK(r.err.find(write_token) == std::string::npos);
}

std::string post_to(const Gateway& g, const std::string& path, const std::string& body, const std::string& extra_headers) {
    return "POST " + g.path(path) + " HTTP/1.1\r\nHost: " + g.host() + "\r\nContent-Type: application/x-git-receive-pack-request\r\n" +
           extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

// A POST to the shared gateway (its secret and Host added).
std::string post(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
    return post_to(gateway(), path, body, extra_headers);
}

const std::string zero(40, '0');
const std::string some_oid = "1111111111111111111111111111111111111111";

std::string command_body(const std::string& ref, const std::string& caps = "report-status side-band-64k") {
    return cc::git::pkt(zero + " " + some_oid + " " + ref + std::string(1, '\0') + caps + "\n") + "0000";
}

}  // namespace

#define NEED_RIG()                                                        \
    do {                                                                  \
        if (!have_rig()) CC_SKIP("needs lighttpd, git and git-http-backend"); \
    } while (0)

TEST_CASE("an allowed branch goes upstream through the gateway with its own token") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("allowed", gateway());
    // GIT_TRACE logs the argv of every program git runs, as /proc shows it
    // to any local user: git's remote helper gets the URL on its command line.
    std::string trace = scratch_dir() + "/allowed-trace";
    auto r = git({"push", "origin", "HEAD:refs/heads/feature"}, dir, {{"GIT_TRACE", trace}});
    INFO(r.err);
    CHECK(r.status == 0);
    const std::string base = "http://" + gateway().host() + "/";
    CHECK(r.err.find("To " + base + "github.com/acme/demo.git") != std::string::npos);  // the rewritten URL
    // The session's secret travels as a header: in no argv, no message.
    const std::string secret = gateway().url().substr(base.size(), gateway().url().size() - base.size() - 1);
    REQUIRE(secret.size() == 32);
    std::string traced = read_file(trace);
    CHECK(traced.find("remote-http origin " + base + "github.com/acme/demo.git") != std::string::npos);
    CHECK(traced.find(secret) == std::string::npos);
    CHECK(r.err.find(secret) == std::string::npos);
    // The ready event's URL pushed to directly does put it there: why the
    // configuration uses the header.
    std::string trace2 = scratch_dir() + "/allowed-trace-url";
    auto u = git({"push", gateway().push_url("acme/demo"), "HEAD:refs/heads/feature-url"}, dir, {{"GIT_TRACE", trace2}});
    CHECK(u.status == 0);
    CHECK(read_file(trace2).find(secret) != std::string::npos);
    CHECK(r.err.find("* [new branch]      HEAD -> feature") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/feature") == head(dir));
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["repo"] == "github.com/acme/demo");
    CHECK(ev.back()["result"] == "forwarded");
    CHECK(ev.back()["upstreamStatus"] == 200);
    CHECK(ev.back()["refs"][0]["decision"] == "allow");
    CHECK(ev.back()["refs"][0]["old"] == zero);
    no_token_leak(gateway(), r);
}

TEST_CASE("a denied branch shows git's own [remote rejected] line with the policy reason") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("denied", gateway());
    auto r = git({"push", "origin", "main"}, dir);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] main -> main (Control Center policy: main is released by CI)") !=
          std::string::npos);
    CHECK(r.err.find("remote: Control Center policy denied refs/heads/main: main is released by CI") !=
          std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/main").empty());
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["result"] == "rejected");
    CHECK(ev.back()["refs"][0]["decision"] == "deny");
    CHECK(ev.back()["refs"][0]["source"] == "rules[0]");
    no_token_leak(gateway(), r);
}

TEST_CASE("a multi-ref push with one denied ref: the rest go through, git prints both") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("multi", gateway());
    auto r = git({"push", "origin", "main", "HEAD:refs/heads/f1"}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find("* [new branch]      HEAD -> f1") != std::string::npos);
    CHECK(r.err.find(" ! [remote rejected] main -> main (Control Center policy: main is released by CI)") !=
          std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/f1") == head(dir));
    CHECK(upstream().ref("acme/demo", "refs/heads/main").empty());
    CHECK(events(gateway(), "push").back()["result"] == "partial");
}

TEST_CASE("an atomic multi-ref push with one denied ref forwards nothing") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("atomic", gateway());
    auto r = git({"push", "--atomic", "origin", "main", "HEAD:refs/heads/f2"}, dir);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] main -> main (Control Center policy: main is released by CI)") !=
          std::string::npos);
    CHECK(r.err.find(" ! [remote rejected] HEAD -> f2 (atomic transaction failed)") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/f2").empty());
}

TEST_CASE("deleting a branch: allowed deletes go upstream, a denied delete is rejected") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("delete", gateway());
    // main exists upstream (pushed by CI, i.e. with the write token directly).
    REQUIRE(git({"push", upstream().write_url("acme/demo"), "main", "HEAD:refs/heads/old"}, dir).status == 0);
    auto r = git({"push", "origin", ":refs/heads/old"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.err.find(" - [deleted]         old") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/old").empty());
    auto d = git({"push", "origin", ":refs/heads/main"}, dir);
    CHECK(d.status == 1);
    CHECK(d.err.find(" ! [remote rejected] main (Control Center policy: main is released by CI)") != std::string::npos);
    CHECK(!upstream().ref("acme/demo", "refs/heads/main").empty());
    CHECK(events(gateway(), "push").back()["refs"][0]["kind"] == "delete");
}

TEST_CASE("tags: a release tag is denied by its glob, another tag is pushed") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("tags", gateway());
    git({"tag", "v1.0"}, dir);
    git({"tag", "-a", "-m", "nightly", "nightly-7"}, dir);
    auto r = git({"push", "origin", "v1.0", "nightly-7"}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] v1.0 -> v1.0 (Control Center policy: release tags are made by CI)") !=
          std::string::npos);
    CHECK(r.err.find("* [new tag]         nightly-7 -> nightly-7") != std::string::npos);
    CHECK(!upstream().ref("acme/demo", "refs/tags/nightly-7").empty());
    CHECK(upstream().ref("acme/demo", "refs/tags/v1.0").empty());
}

TEST_CASE("push options reach upstream's hooks and the push event") {
    NEED_RIG();
    std::string bare = upstream().create_repo("acme/demo");
    write_file(bare + "/hooks/pre-receive",
               "#!/bin/sh\ncat >/dev/null\n"
               "i=0; while [ $i -lt \"${GIT_PUSH_OPTION_COUNT:-0}\" ]; do eval echo \"\\$GIT_PUSH_OPTION_$i\"; "
               "i=$((i+1)); done > \"$GIT_DIR/options.txt\"\n",
               0755);
    std::string dir = agent_repo("options", gateway());
    auto r = git({"push", "-o", "ci.skip", "-o", "title=hello world", "origin", "HEAD:refs/heads/opt"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(read_file(bare + "/options.txt") == "ci.skip\ntitle=hello world\n");
    CHECK(events(gateway(), "push").back()["options"] == json::array({"ci.skip", "title=hello world"}));
}

TEST_CASE("repository names are normalised; an unlinked repository is refused in git's words, never with 401") {
    NEED_RIG();
    // The operator's spelling decides the upstream URL; the agent's is normalised.
    upstream().create_repo("Acme/Linked");
    std::string dir = agent_repo("linked", gateway(), "ACME/Linked");
    auto ok = git({"push", "origin", "HEAD:refs/heads/x"}, dir);
    INFO(ok.err);
    CHECK(ok.status == 0);
    CHECK(!upstream().ref("Acme/Linked", "refs/heads/x").empty());

    upstream().create_repo("other/secret");
    std::string other = agent_repo("unlinked", gateway(), "other/secret");
    auto r = git({"push", "origin", "HEAD:refs/heads/x"}, other);
    CHECK(r.status == 128);
    CHECK(r.err.find("fatal: remote error: cc-pushgate: repository 'github.com/other/secret' is not linked") !=
          std::string::npos);
    CHECK(r.err.find("Username") == std::string::npos);
    CHECK(upstream().ref("other/secret", "refs/heads/x").empty());
    // A POST straight to the unlinked repo is answered with rejected refs.
    std::string resp = http_raw(gateway().port(), post("/github.com/other/secret.git/git-receive-pack",
                                                       command_body("refs/heads/x") + "PACK"));
    CHECK(resp.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(resp.find("ng refs/heads/x Control Center policy: repository 'github.com/other/secret' is not linked") !=
          std::string::npos);
}

TEST_CASE("--worktree checks the worktree's origin against the repositories the operator named") {
    NEED_RIG();
    upstream().create_repo("acme/own");
    Gateway probe_gw(gateway_args());
    std::string dir = agent_repo("own", probe_gw, "acme/own");
    Gateway g({"--upstream", upstream().base(), "--repo", "acme/own", "--worktree", dir, "--policy", policy_file(),
               "--token-file", token_file()});
    auto ready = json::parse(g.stdout_text().substr(0, g.stdout_text().find('\n')));
    CHECK(ready["repos"] == json::array({"github.com/acme/own"}));
    auto r = git({"push", g.push_url("acme/own"), "HEAD:refs/heads/wt"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(upstream().ref("acme/own", "refs/heads/wt") == head(dir));
    auto bad = run({bin("cc-pushgate"), "--upstream", upstream().base(), "--repo", "acme/own", "--worktree",
                    scratch_dir(), "--policy", policy_file(), "--token-file", token_file()});
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--worktree") != std::string::npos);
    // The agent rewrites its origin to aim the gateway at another repository:
    // the gateway does not start, and links nothing the operator did not name.
    REQUIRE(git({"remote", "set-url", "origin", "https://github.com/acme/secret.git"}, dir).status == 0);
    auto aimed = run({bin("cc-pushgate"), "--upstream", upstream().base(), "--repo", "acme/own", "--worktree", dir,
                      "--policy", policy_file(), "--token-file", token_file()});
    CHECK(aimed.status == 2);
    CHECK(aimed.err.find("--worktree: origin of '" + dir + "' is github.com/acme/secret, which no --repo names") !=
          std::string::npos);
}

TEST_CASE("the upstream down: git shows a remote: line and a rejected ref, no hang") {
    NEED_RIG();
    Gateway g({"--upstream", "http://127.0.0.1:" + std::to_string(free_port()) + "/git", "--repo", "acme/demo",
               "--policy", policy_file(), "--token-file", token_file()});
    std::string dir = agent_repo("down", g);
    auto r = git({"push", "origin", "HEAD:refs/heads/feature"}, dir);
    CHECK(r.status == 1);
    CHECK(r.err.find("remote: cc-pushgate: upstream unreachable") != std::string::npos);
    CHECK(r.err.find(" ! [remote rejected] HEAD -> feature (cc-pushgate: upstream unreachable") != std::string::npos);
    auto ev = events(g, "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["result"] == "error");
}

TEST_CASE("a failing token command: git shows the reason, the push goes nowhere") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string cmd = scratch_dir() + "/bad-token.sh";
    write_file(cmd, "#!/bin/sh\necho 'vault is sealed' >&2\nexit 3\n", 0755);
    Gateway g(gateway_args({"--token-command", cmd}));
    std::string dir = agent_repo("badtoken", g);
    auto r = git({"push", "origin", "HEAD:refs/heads/feature"}, dir);
    CHECK(r.status == 1);
    CHECK(r.err.find("remote: cc-pushgate: could not get a write token") != std::string::npos);
    // The helper's stderr goes to the operator's log, never to the agent.
    CHECK(r.err.find("exited with status 3 (its stderr is in the gateway's log))") != std::string::npos);
    CHECK(r.err.find("vault is sealed") == std::string::npos);
    CHECK(g.stderr_text().find("stderr: vault is sealed") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/feature").empty());
}

TEST_CASE("a token command is run per push and sees which repository") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string log = scratch_dir() + "/token-calls";
    std::string cmd = scratch_dir() + "/good-token.sh";
    write_file(cmd, "#!/bin/sh\necho \"$CC_PUSHGATE_REPO\" >> " + log + "\necho " + write_token + "\n", 0755);
    Gateway g(gateway_args({"--token-command", cmd}));
    std::string dir = agent_repo("goodtoken", g);
    auto r = git({"push", "origin", "HEAD:refs/heads/tc"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(read_file(log).find("acme/demo\n") != std::string::npos);
    no_token_leak(g, r);
}

TEST_CASE("the read token cannot push straight to the upstream") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = work_repo("readtoken");
    auto r = git({"push", upstream().read_url("acme/demo"), "HEAD:refs/heads/sneaky"}, dir);
    CHECK(r.status == 128);  // git: fatal
    CHECK(r.err.find("Authentication failed") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/sneaky").empty());
    // ... while the read token can fetch.
    CHECK(git({"ls-remote", upstream().read_url("acme/demo")}, dir).status == 0);
}

TEST_CASE("read-only mode denies every push; ask without an approver is deny, with one it is asked") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    {
        Gateway g(gateway_args({"--mode", "plan"}));
        std::string dir = agent_repo("plan", g);
        auto r = git({"push", "origin", "HEAD:refs/heads/feature"}, dir);
        CHECK(r.status == 1);
        CHECK(r.err.find("(Control Center policy: push is not allowed in plan mode (read-only))") != std::string::npos);
    }
    std::string dir = agent_repo("ask", gateway());
    auto denied = git({"push", "origin", "HEAD:refs/heads/ask/x"}, dir);
    CHECK(denied.status == 1);
    CHECK(denied.err.find("no approver is connected, so ask is deny") != std::string::npos);

    std::string approver = scratch_dir() + "/approver.sh";
    std::string questions = scratch_dir() + "/questions";
    write_file(approver, "#!/bin/sh\ncat >> " + questions + "\necho allow\n", 0755);
    Gateway g(gateway_args({"--approver", approver}));
    std::string dir2 = agent_repo("ask2", g);
    auto r = git({"push", "origin", "HEAD:refs/heads/ask/y"}, dir2);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(!upstream().ref("acme/demo", "refs/heads/ask/y").empty());
    auto q = json::parse(read_file(questions).substr(0, read_file(questions).find('\n')));
    CHECK(q["ref"] == "refs/heads/ask/y");
    CHECK(q["repo"] == "github.com/acme/demo");
}

TEST_CASE("the git config bypasses an HTTP proxy for the loopback gateway") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("proxy", gateway());
    // A proxy that does not exist: going through it would fail.
    auto r = git({"push", "origin", "HEAD:refs/heads/viaproxy"}, dir, {{"http_proxy", "http://127.0.0.1:1"}});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(!upstream().ref("acme/demo", "refs/heads/viaproxy").empty());
}

TEST_CASE("a 200 MB pack streams through the gateway") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = work_repo("big");
    git({"config", "core.compression", "0"}, dir);
    git({"config", "core.bigFileThreshold", "1m"}, dir);
    for (int i = 0; i < 4; ++i)
        REQUIRE(run({"dd", "if=/dev/urandom", "of=" + dir + "/blob" + std::to_string(i), "bs=1M", "count=50",
                     "status=none"})
                    .status == 0);
    git({"add", "."}, dir);
    git({"commit", "-q", "-m", "big"}, dir);
    auto r = git({"push", gateway().push_url("acme/demo"), "HEAD:refs/heads/big"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/big") == head(dir));
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["bytes"].get<std::uint64_t>() > 200u * 1000 * 1000);
    fs::remove_all(dir);
}

TEST_CASE("a large denied push is drained first, so git shows the reason instead of a broken pipe") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("bigdeny", gateway());
    git({"config", "core.compression", "0"}, dir);
    REQUIRE(run({"dd", "if=/dev/urandom", "of=" + dir + "/blob", "bs=1M", "count=20", "status=none"}).status == 0);
    git({"add", "blob"}, dir);
    git({"commit", "-q", "-m", "20 MB"}, dir);
    auto r = git({"push", "origin", "main"}, dir);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] main -> main (Control Center policy: main is released by CI)") !=
          std::string::npos);
    CHECK(r.err.find("Broken pipe") == std::string::npos);
    CHECK(events(gateway(), "push").back()["bytes"].get<std::uint64_t>() > 20u * 1000 * 1000);

    // Past the drain cap the gateway answers and closes: git fails, it does not hang.
    Gateway capped(gateway_args({"--drain-limit", "100000", "--drain-timeout", "5"}));
    auto c = git({"push", capped.push_url("acme/demo"), "main"}, dir);
    CHECK(c.status == 1);  // git: the push failed (remote hung up), not a hang or a crash
    CHECK(c.status != 128 + 9);  // not killed by the harness timeout
    CHECK(upstream().ref("acme/demo", "refs/heads/main").empty());
    CHECK(capped.stderr_text().find("stopped draining") != std::string::npos);
}

// ---------------------------------------------------------------- hand-made bytes

TEST_CASE("protocol: bad bodies get a 400 naming the problem, never a hang") {
    NEED_RIG();
    int port = gateway().port();
    std::string path = "/github.com/acme/demo.git/git-receive-pack";
    auto check400 = [&](const std::string& body, const std::string& words) {
        std::string resp = http_raw(port, post(path, body));
        INFO(words << "\n" << resp);
        CHECK(resp.rfind("HTTP/1.1 400", 0) == 0);
        CHECK(resp.find(words) != std::string::npos);
    };
    check400("00a", "body ends before the command list");
    check400("zzzz", "bad length");
    check400(command_body("refs/heads/x").substr(0, command_body("refs/heads/x").size() - 4), "missing flush");
    check400(command_body("refs/heads/" + std::string(3000, 'r')), "longer than 1024");
}

TEST_CASE("protocol: a probe is answered like http-backend, and keep-alive serves the next request") {
    NEED_RIG();
    std::string path = "/github.com/acme/demo.git/git-receive-pack";
    std::string probe = "POST " + gateway().path(path) + " HTTP/1.1\r\nHost: " + gateway().host() + "\r\nContent-Length: 4\r\n\r\n0000";
    std::string denied = post(path, command_body("refs/heads/main"));
    std::string resp = http_raw(gateway().port(), probe + denied);
    CHECK(resp.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    CHECK(resp.find("Content-Length: 0\r\n") != std::string::npos);
    CHECK(resp.find("ng refs/heads/main Control Center policy: main is released by CI") != std::string::npos);
}

TEST_CASE("protocol: chunked and gzip bodies are decoded") {
    NEED_RIG();
    std::string path = "/github.com/acme/demo.git/git-receive-pack";
    auto gz = run({"gzip", "-c"}, command_body("refs/heads/main", "report-status"));
    REQUIRE(gz.status == 0);
    std::string chunked;
    for (std::size_t i = 0; i < gz.out.size(); i += 7) {
        std::string part = gz.out.substr(i, 7);
        char hex[16];
        std::snprintf(hex, sizeof hex, "%zx", part.size());
        chunked += std::string(hex) + "\r\n" + part + "\r\n";
    }
    chunked += "0\r\n\r\n";
    std::string req = "POST " + gateway().path(path) + " HTTP/1.1\r\nHost: " + gateway().host() +
                      "\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"
                      "Connection: close\r\n\r\n" + chunked;
    std::string resp = http_raw(gateway().port(), req);
    INFO(resp);
    CHECK(resp.rfind("HTTP/1.1 200", 0) == 0);
    // report-status without side-band: the bare report.
    CHECK(resp.find("000eunpack ok\n" + cc::git::pkt("ng refs/heads/main Control Center policy: main is released by CI\n") +
                    "0000") != std::string::npos);
    std::string bad = http_raw(gateway().port(), post(path, "not gzip", "Content-Encoding: gzip\r\n"));
    CHECK(bad.rfind("HTTP/1.1 400", 0) == 0);
    std::string br = http_raw(gateway().port(), post(path, "x", "Content-Encoding: br\r\n"));
    CHECK(br.rfind("HTTP/1.1 415", 0) == 0);
}

TEST_CASE("protocol: fetch and stray paths are refused, never with 401") {
    NEED_RIG();
    int port = gateway().port();
    std::string fetch =
        http_raw(port, "GET " + gateway().path("/github.com/acme/demo.git/info/refs?service=git-upload-pack") +
                           " HTTP/1.1\r\nHost: " + gateway().host() + "\r\nConnection: close\r\n\r\n");
    CHECK(fetch.rfind("HTTP/1.1 403", 0) == 0);
    CHECK(fetch.find("fetch from the original URL") != std::string::npos);
    std::string stray = http_raw(port, "GET " + gateway().path("/etc/passwd") + " HTTP/1.1\r\nHost: " + gateway().host() +
                                           "\r\nConnection: close\r\n\r\n");
    CHECK(stray.rfind("HTTP/1.1 404", 0) == 0);
    std::string garbage = http_raw(port, "HELLO\r\n\r\n");
    CHECK(garbage.rfind("HTTP/1.1 400", 0) == 0);
    for (const auto& s : {fetch, stray, garbage}) CHECK(s.find(" 401 ") == std::string::npos);
}

// ---------------------------------------------------------------- GitHub App mode

namespace {

std::string b64url_decode(std::string s) {
    for (char& c : s) c = c == '-' ? '+' : c == '_' ? '/' : c;
    while (s.size() % 4) s.push_back('=');
    std::string out(s.size(), '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
    if (n < 0) return "";
    std::size_t pad = s.size() - s.find_last_not_of('=') - 1;
    out.resize(static_cast<std::size_t>(n) - pad);
    return out;
}

// A fake GitHub API on 127.0.0.1: mints installation tokens (checking the JWT
// signature with the App's public key) and records revocations.
class FakeApi {
public:
    explicit FakeApi(const std::string& pubkey_pem) {
        BIO* bio = BIO_new_mem_buf(pubkey_pem.data(), static_cast<int>(pubkey_pem.size()));
        key_ = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
        BIO_free(bio);
        fd_ = bound_loopback_socket(&port_);
        ::listen(fd_, 16);
        thread_ = std::thread([this] { loop(); });
    }
    ~FakeApi() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
        thread_.join();
        EVP_PKEY_free(key_);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::vector<std::string> log() {
        std::lock_guard<std::mutex> l(mu_);
        return log_;
    }
    int minted = 0, revoked = 0, bad_jwt = 0;
    json last_claims, last_body;

private:
    bool verify(const std::string& jwt) {
        auto d2 = jwt.rfind('.');
        if (d2 == std::string::npos) return false;
        std::string input = jwt.substr(0, d2), sig = b64url_decode(jwt.substr(d2 + 1));
        EVP_MD_CTX* ctx = EVP_MD_CTX_new();
        bool good = EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key_) == 1 &&
                    EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                                     reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
        EVP_MD_CTX_free(ctx);
        auto d1 = jwt.find('.');
        last_claims = json::parse(b64url_decode(jwt.substr(d1 + 1, d2 - d1 - 1)), nullptr, false);
        return good;
    }
    void loop() {
        while (!stop_) {
            int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0) return;
            std::string req;
            char buf[8192];
            std::size_t need = std::string::npos;
            while (true) {
                ssize_t n = ::recv(c, buf, sizeof buf, 0);
                if (n <= 0) break;
                req.append(buf, static_cast<std::size_t>(n));
                auto end = req.find("\r\n\r\n");
                if (end != std::string::npos && need == std::string::npos) {
                    auto cl = req.find("Content-Length: ");
                    std::size_t len = cl != std::string::npos && cl < end ? std::stoul(req.substr(cl + 16)) : 0;
                    need = end + 4 + len;
                }
                if (need != std::string::npos && req.size() >= need) break;
            }
            std::string line = req.substr(0, req.find("\r\n"));
            std::string auth;
            if (auto a = req.find("Authorization: Bearer "); a != std::string::npos)
                auth = req.substr(a + 22, req.find("\r\n", a) - a - 22);
            std::string resp;
            {
                std::lock_guard<std::mutex> l(mu_);
                log_.push_back(line);
            }
            if (line == "POST /app/installations/7/access_tokens HTTP/1.1") {
                if (verify(auth) && last_claims.value("iss", "") == "42") {
                    ++minted;
                    last_body = json::parse(req.substr(req.find("\r\n\r\n") + 4), nullptr, false);
                    std::string body = json{{"token", write_token}, {"expires_at", "2099-01-01T00:00:00Z"}}.dump();
                    resp = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
                } else {
                    ++bad_jwt;
                    resp = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                }
            } else if (line == "DELETE /installation/token HTTP/1.1" && auth == write_token) {
                ++revoked;
                resp = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
            } else {
                resp = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            }
            ::send(c, resp.data(), resp.size(), MSG_NOSIGNAL);
            ::close(c);
        }
    }
    EVP_PKEY* key_ = nullptr;
    int fd_ = -1, port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
    std::mutex mu_;
    std::vector<std::string> log_;
};

}  // namespace

TEST_CASE("GitHub App mode: a repository-scoped token per push, every minted token revoked at shutdown") {
    NEED_RIG();
    if (!have_program("openssl")) CC_SKIP("needs openssl to make an App key");
    upstream().create_repo("acme/demo");
    std::string key = scratch_dir() + "/app.pem", pub = scratch_dir() + "/app.pub";
    REQUIRE(run({"openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key}).status == 0);
    REQUIRE(run({"openssl", "pkey", "-in", key, "-pubout", "-out", pub}).status == 0);
    FakeApi api(read_file(pub));
    REQUIRE(::chmod(key.c_str(), 0644) == 0);  // a key others can read: used, with a warning
    Gateway g(gateway_args({"--app-id", "42", "--app-key", key, "--installation-id", "7", "--api-url", api.url()}));
    std::string dir = agent_repo("app", g);
    auto r = git({"push", "origin", "HEAD:refs/heads/app"}, dir);
    INFO(r.err << g.stderr_text());
    CHECK(r.status == 0);
    CHECK(g.stderr_text().find("warning: --app-key '" + key + "' is readable by group or others (chmod 600 it)") !=
          std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/app") == head(dir));
    CHECK(api.minted >= 1);
    CHECK(api.bad_jwt == 0);
    CHECK(api.last_body["repositories"] == json::array({"demo"}));
    CHECK(api.last_body["permissions"]["contents"] == "write");
    CHECK(api.last_claims["exp"].get<long>() - api.last_claims["iat"].get<long>() <= 600);
    int minted = api.minted;
    CHECK(g.stop() == 0);
    CHECK(api.revoked == minted);
    auto down = events(g, "shutdown");
    REQUIRE(down.size() == 1);
    CHECK(down[0]["tokens"]["revoked"] == minted);
    CHECK(down[0]["tokens"]["failures"].empty());
    no_token_leak(g, r);
}

// Killed with SIGKILL, the gateway cannot revoke: the revocation watch it
// forked at start does, as soon as the gateway's end of the pipe closes.
TEST_CASE("GitHub App mode: a gateway killed outright still has its tokens revoked") {
    NEED_RIG();
    if (!have_program("openssl")) CC_SKIP("needs openssl to make an App key");
    upstream().create_repo("acme/demo");
    std::string key = scratch_dir() + "/app-kill.pem", pub = scratch_dir() + "/app-kill.pub";
    REQUIRE(run({"openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key}).status == 0);
    REQUIRE(run({"openssl", "pkey", "-in", key, "-pubout", "-out", pub}).status == 0);
    REQUIRE(::chmod(key.c_str(), 0600) == 0);
    FakeApi api(read_file(pub));
    Gateway g(gateway_args({"--app-id", "42", "--app-key", key, "--installation-id", "7", "--api-url", api.url()}));
    std::string dir = agent_repo("app-kill", g);
    auto r = git({"push", "origin", "HEAD:refs/heads/app-kill"}, dir);
    INFO(r.err << g.stderr_text());
    REQUIRE(r.status == 0);
    int minted = api.minted;
    REQUIRE(minted >= 1);
    CHECK(api.revoked == 0);  // nothing revoked while the gateway runs
    REQUIRE(::kill(g.pid(), SIGKILL) == 0);
    for (int i = 0; i < 100 && api.revoked < minted; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(api.revoked == minted);
    for (int i = 0; i < 50 && g.stderr_text().find("revocation watch") == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(g.stderr_text().find("cc-pushgate: the gateway ended without revoking its tokens: the revocation watch revoked " +
                               std::to_string(minted) + " of " + std::to_string(minted) + " minted") != std::string::npos);
    no_token_leak(g, r);
}

TEST_CASE("the reject label (--reject-label) names the refusal in git's reject line; a bad label is refused") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    Gateway g(gateway_args({"--reject-label", "Acme gate"}));
    std::string dir = agent_repo("label", g);
    auto r = git({"push", "origin", "main"}, dir);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] main -> main (Acme gate policy: main is released by CI)") != std::string::npos);
    CHECK(r.err.find("remote: Acme gate policy denied refs/heads/main: main is released by CI") != std::string::npos);
    for (const char* bad : {"", "a (b)", "two\nlines"}) {
        auto b = run({bin("cc-pushgate"), "--upstream", "http://x", "--repo", "acme/demo", "--policy", policy_file(),
                      "--token-file", token_file(), "--reject-label", bad});
        CHECK(b.status == 2);
        CHECK(b.err == "cc-pushgate: --reject-label: must be 1 to 64 printable characters, no parentheses\n");
    }
}

// The force check trusts the mirror: one that others may write (a replace
// ref or a graft planted there could make a rewrite look like an update) is
// refused at start.
TEST_CASE("a mirror directory that group or others can write is refused at start") {
    std::string m = scratch_dir() + "/open-mirrors";
    fs::create_directories(m);
    REQUIRE(::chmod(m.c_str(), 0777) == 0);
    auto r = run({bin("cc-pushgate"), "--upstream", "http://127.0.0.1:1", "--repo", "acme/demo", "--policy",
                  policy_file(), "--token-file", token_file(), "--mirror-dir", m});
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "cc-pushgate: --mirror-dir '" + m +
                       "': must be a directory of the gateway's own user that group and others cannot write "
                       "(chmod 700 it)\n");
    // A new one is made 0700.
    std::string fresh = scratch_dir() + "/fresh-mirrors/m";
    Gateway g(gateway_args({"--mirror-dir", fresh}));
    struct stat st {};
    REQUIRE(::stat(fresh.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("bad options exit 2 with one line naming the problem, nothing started") {
    auto r = run({bin("cc-pushgate"), "--upstream", "http://127.0.0.1:1", "--repo", "acme/demo", "--policy",
                  "/nonexistent/policy.json", "--token-file", "/etc/hostname"});
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("/nonexistent/policy.json") != std::string::npos);
    std::string pol = scratch_dir() + "/p.json";
    write_file(pol, R"({"rules":[]})");
    auto two = run({bin("cc-pushgate"), "--upstream", "http://x", "--repo", "acme/demo", "--policy", pol,
                    "--token-file", pol, "--token-command", "true"});
    CHECK(two.status == 2);
    CHECK(two.err.find("exactly one of") != std::string::npos);
    auto listen = run({bin("cc-pushgate"), "--upstream", "http://x", "--repo", "acme/demo", "--policy", pol,
                       "--token-file", pol, "--listen", "0.0.0.0:0"});
    CHECK(listen.status == 2);
    CHECK(listen.err.find("not a loopback address") != std::string::npos);
    auto repo = run({bin("cc-pushgate"), "--upstream", "http://x", "--repo", "acme", "--policy", pol, "--token-file", pol});
    CHECK(repo.status == 2);
    auto mode = run({bin("cc-pushgate"), "--upstream", "http://x", "--repo", "a/b", "--policy", pol, "--token-file",
                     pol, "--mode", "yolo"});
    CHECK(mode.status == 2);
    CHECK(mode.err.find("unknown mode 'yolo'") != std::string::npos);
    auto key = run({bin("cc-pushgate"), "--upstream", "http://x", "--repo", "a/b", "--policy", pol, "--app-id", "1",
                    "--app-key", pol, "--installation-id", "2"});
    CHECK(key.status == 2);
    CHECK(key.err.find("not a PEM private key") != std::string::npos);
    auto cfg = run({bin("cc-pushgate"), "git-config", "--url", "http://127.0.0.1:5/"});
    CHECK(cfg.status == 0);
    CHECK(cfg.out.find("pushInsteadOf = git@github.com:") != std::string::npos);
}

TEST_CASE("every line the gateway wrote validates against its schema") {
    NEED_RIG();
    if (!have_program("python3") || run({"python3", "-c", "import jsonschema"}).status != 0)
        CC_SKIP("needs python3-jsonschema");
    std::string lines = gateway().stdout_text();
    REQUIRE(!lines.empty());
    const char* script = R"(
import json, sys, jsonschema
d = sys.argv[1]
load = lambda n: jsonschema.Draft202012Validator(json.load(open(d + "/pushgate-" + n + ".schema.json")))
v = {"ready": load("ready"), "push": load("push")}
other = load("event")
bad = 0
for line in sys.stdin:
    j = json.loads(line)
    errs = list(v.get(j["event"], other).iter_errors(j))
    if errs:
        bad += 1
        print(j["event"], errs[0].message)
sys.exit(1 if bad else 0)
)";
    auto r = run({"python3", "-c", script, source_dir() + "/share/cc/schema"}, lines);
    INFO(r.out << r.err);
    CHECK(r.status == 0);
}

// A ref name git allows but that is not UTF-8 used to end the gateway (its
// push event's writer threw on a connection thread), and with it every push
// of the session. The push is judged, the event keeps the name's bytes, and
// the gateway serves the next push.
TEST_CASE("a ref name that is not UTF-8 is judged, logged as bytes, and the gateway serves on", "[bytes]") {
    NEED_RIG();
    CHECK_THROWS(json{{"ref", "refs/heads/caf\xe9"}}.dump());  // what the gateway used to call
    upstream().create_repo("acme/demo");
    Gateway g(gateway_args());
    std::string dir = agent_repo("latin1", g);
    // git itself takes the name.
    REQUIRE(git({"check-ref-format", "refs/heads/caf\xe9"}, dir).status == 0);
    auto r = git({"push", "origin", "HEAD:refs/heads/caf\xe9"}, dir);
    INFO(r.err << g.stderr_text());
    CHECK(r.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/caf\xe9") == head(dir));
    auto ev = events(g, "push");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0]["result"] == "forwarded");
    CHECK(ev[0]["refs"][0]["ref"] == json{{"bytes", "cmVmcy9oZWFkcy9jYWbp"}});  // base64 of refs/heads/caf\xe9
    auto next = git({"push", "origin", "HEAD:refs/heads/after-latin1"}, dir);
    CHECK(next.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/after-latin1") == head(dir));
    CHECK(g.stop() == 0);
}

// The gateway holds the only push token. No other process of its uid may
// trace it or read its memory (root may: run as root, only the baseline is
// checked; the as-user run checks the refusal).
TEST_CASE("no process of the gateway's uid can trace it or read its memory", "[private]") {
    auto attach = [&](pid_t pid) { return ptrace_attach_from(pid); };
    // Without the gateway: a process of this uid traces another.
    pid_t sleeper = ::fork();
    if (sleeper == 0) {
        ::execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
        _exit(127);
    }
    CHECK(attach(sleeper) == "attached\n");
    ::kill(sleeper, SIGKILL);
    ::waitpid(sleeper, nullptr, 0);
    if (::geteuid() == 0) CC_SKIP("root may trace any process; pushgate-bytes-as-user checks the refusal");

    Gateway g({"--upstream", "http://127.0.0.1:" + std::to_string(free_port()) + "/git", "--repo", "acme/demo",
               "--policy", policy_file(), "--token-file", token_file()});
    const std::string pid = std::to_string(g.pid());
    CHECK(attach(g.pid()) == "Operation not permitted\n");
    for (const char* what : {"/environ", "/mem"}) {
        auto r = run({"/bin/cat", "/proc/" + pid + what});
        INFO(what);
        CHECK(r.status == 1);
        CHECK(r.err == "/bin/cat: /proc/" + pid + what + ": Permission denied\n");
    }
}
