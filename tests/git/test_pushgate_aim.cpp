// cc-pushgate end to end, the things around the ref check that the agent or
// the upstream could aim: symbolic refs on the upstream, the session secret
// and Host check, token echoes, capability spellings. Real git, the real
// gateway binary and a real smart-HTTP upstream on 127.0.0.1 (rig.hpp).
#include "harness.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <nlohmann/json.hpp>

#include "rig.hpp"

using namespace cc::test;
using namespace cc::test::rig;
using nlohmann::json;

namespace {

Upstream& upstream() {
    static Upstream u;
    return u;
}

std::string policy_file() {
    static std::string path = [] {
        std::string p = scratch_dir() + "/aim-policy.json";
        write_file(p, R"({"version": 1, "rules": [
  {"action": "push", "refs": ["main"], "decision": "deny", "reason": "main is released by CI"},
  {"action": "push", "decision": "allow"}]})");
        return p;
    }();
    return path;
}

std::string token_file() {
    static std::string path = [] {
        std::string p = scratch_dir() + "/aim-write-token";
        write_file(p, write_token + "\n", 0600);
        return p;
    }();
    return path;
}

std::vector<std::string> gateway_args(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> a{"--upstream", upstream().base(), "--repo", "acme/demo", "--policy", policy_file()};
    bool has_source = false;
    for (const auto& e : extra)
        if (e == "--token-command" || e == "--token-file") has_source = true;
    if (!has_source) a.insert(a.end(), {"--token-file", token_file()});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
}

Gateway& gateway() {
    static Gateway g(gateway_args());
    return g;
}

// acme/demo on the upstream with main at the first commit of `dir`, and
// refs/heads/alias a symbolic ref to `target`.
void repo_with_symref(const std::string& dir, const std::string& target) {
    upstream().create_repo("acme/demo");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/main"}, dir).status == 0);
    REQUIRE(git({"symbolic-ref", "refs/heads/alias", target}, upstream().repo_path("acme/demo")).status == 0);
}

}  // namespace

#define NEED_RIG()                                                            \
    do {                                                                      \
        if (!have_rig()) CC_SKIP("needs lighttpd, git and git-http-backend"); \
    } while (0)

// A symbolic ref hidden from fetches (uploadpack.hideRefs) is listed by no
// protocol the gateway can ask, yet receive-pack shows it to git: an update
// through it moves its target. An update or delete of a name the listing
// does not show is refused.
TEST_CASE("a hidden symbolic ref cannot be used to move or delete the ref it points to") {
    NEED_RIG();
    std::string dir = agent_repo("hidden", gateway());
    auto setup = [&] {
        repo_with_symref(dir, "refs/heads/main");
        REQUIRE(git({"config", "uploadpack.hideRefs", "refs/heads/alias"}, upstream().repo_path("acme/demo")).status == 0);
        auto listed = git({"ls-remote", upstream().read_url("acme/demo")}, dir);
        REQUIRE(listed.status == 0);
        REQUIRE(listed.out.find("alias") == std::string::npos);
    };
    // Without the gateway the attack works: the update through the alias moves main.
    setup();
    std::string moved = commit(dir, "h1.txt", "one\n");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/alias"}, dir).status == 0);
    REQUIRE(upstream().ref("acme/demo", "refs/heads/main") == moved);

    // Through the gateway it is refused, and main stays.
    setup();
    std::string base = upstream().ref("acme/demo", "refs/heads/main");
    commit(dir, "h2.txt", "two\n");
    auto r = git({"push", "origin", "HEAD:refs/heads/alias"}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] HEAD -> alias (Control Center policy: refs/heads/alias is not listed by the "
                     "upstream (hidden from fetches): it may be a symbolic ref to another ref, which this update would "
                     "change)") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/main") == base);
    auto d = git({"push", "origin", ":refs/heads/alias"}, dir);
    CHECK(d.status == 1);
    CHECK(d.err.find("refs/heads/alias is not listed by the upstream (hidden from fetches)") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/main") == base);
}

TEST_CASE("a symbolic ref on the upstream is judged by its target: pushing to an alias of main is refused") {
    NEED_RIG();
    std::string dir = agent_repo("symref", gateway());
    std::string base = head(dir);

    // Without the gateway's check the attack works: a push to the alias moves main.
    repo_with_symref(dir, "refs/heads/main");
    std::string moved = commit(dir, "a.txt", "one\n");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/alias"}, dir).status == 0);
    REQUIRE(upstream().ref("acme/demo", "refs/heads/main") == moved);

    // Through the gateway it is judged as a push to main, and refused.
    repo_with_symref(dir, "refs/heads/main");
    base = upstream().ref("acme/demo", "refs/heads/main");
    std::string next = commit(dir, "b.txt", "two\n");
    auto r = git({"push", "origin", "HEAD:refs/heads/alias"}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] HEAD -> alias (Control Center policy: refs/heads/alias is a symbolic ref to "
                     "refs/heads/main on the upstream: main is released by CI)") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/main") == base);
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["refs"][0]["ref"] == "refs/heads/alias");
    CHECK(ev.back()["refs"][0]["symrefTarget"] == "refs/heads/main");
    CHECK(ev.back()["refs"][0]["decision"] == "deny");
    CHECK(ev.back()["refs"][0]["source"] == "rules[0]");

    // Deleting the alias would delete main upstream: refused the same way.
    auto d = git({"push", "origin", ":refs/heads/alias"}, dir);
    CHECK(d.status == 1);
    CHECK(d.err.find(" ! [remote rejected] alias (Control Center policy: refs/heads/alias is a symbolic ref to "
                     "refs/heads/main on the upstream") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/main") == base);
}

TEST_CASE("a symbolic ref to an allowed branch is pushed, with its target in the event") {
    NEED_RIG();
    std::string dir = agent_repo("symref-ok", gateway());
    repo_with_symref(dir, "refs/heads/work");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/work"}, dir).status == 0);
    std::string next = commit(dir, "c.txt", "three\n");
    auto r = git({"push", "origin", "HEAD:refs/heads/alias"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/work") == next);
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["refs"][0]["symrefTarget"] == "refs/heads/work");
    CHECK(ev.back()["refs"][0]["decision"] == "allow");
    CHECK(ev.back()["result"] == "forwarded");
}

TEST_CASE("a symbolic ref on the upstream whose target does not exist yet is refused, not judged by its own name") {
    NEED_RIG();
    std::string dir = agent_repo("dangling", gateway());
    // acme/demo with refs/heads/other only, and refs/heads/alias pointing at
    // refs/heads/main, which does not exist: no protocol lists the alias.
    auto setup = [&] {
        upstream().create_repo("acme/demo");
        REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/other"}, dir).status == 0);
        REQUIRE(git({"symbolic-ref", "refs/heads/alias", "refs/heads/main"}, upstream().repo_path("acme/demo")).status ==
                0);
        auto listed = git({"ls-remote", "--symref", upstream().read_url("acme/demo")}, dir);
        REQUIRE(listed.status == 0);
        REQUIRE(listed.out.find("alias") == std::string::npos);
    };
    // Without the gateway's check the attack works: a push to the alias creates main.
    setup();
    std::string a = commit(dir, "a.txt", "one\n");
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/alias"}, dir).status == 0);
    REQUIRE(upstream().ref("acme/demo", "refs/heads/main") == a);

    // Through the gateway the name is found to exist all the same, and refused.
    setup();
    commit(dir, "b.txt", "two\n");
    auto r = git({"push", "origin", "HEAD:refs/heads/alias"}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(" ! [remote rejected] HEAD -> alias (Control Center policy: refs/heads/alias exists on the upstream "
                     "but is listed as no ref: a symbolic ref whose target does not exist (or a broken ref), so the "
                     "push would create a ref nobody named)") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/main").empty());
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["refs"][0]["decision"] == "deny");
    CHECK(ev.back()["refs"][0]["source"] == "symrefs");

    // A new name that really is new goes, and the question left nothing behind.
    auto fresh = git({"push", "origin", "HEAD:refs/heads/fresh"}, dir);
    INFO(fresh.err);
    CHECK(fresh.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/fresh") == head(dir));
    auto refs = git({"for-each-ref", "--format=%(refname)"}, upstream().repo_path("acme/demo"));
    CHECK(refs.out.find("cc-pushgate-probe") == std::string::npos);
    CHECK(git({"symbolic-ref", "refs/heads/alias"}, upstream().repo_path("acme/demo")).out == "refs/heads/main\n");

    // An upstream without atomic pushes applies the question's create: it is
    // deleted again, and the push goes.
    REQUIRE(git({"config", "receive.advertiseAtomic", "false"}, upstream().repo_path("acme/demo")).status == 0);
    auto plain = git({"push", "origin", "HEAD:refs/heads/fresh2"}, dir);
    INFO(plain.err);
    CHECK(plain.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/fresh2") == head(dir));
    refs = git({"for-each-ref", "--format=%(refname)"}, upstream().repo_path("acme/demo"));
    CHECK(refs.out.find("cc-pushgate-probe") == std::string::npos);
    // ...and the dangling alias is still found.
    auto again = git({"push", "origin", "HEAD:refs/heads/alias"}, dir);
    CHECK(again.status == 1);
    CHECK(again.err.find("Control Center policy: refs/heads/alias exists on the upstream but is listed as no ref") !=
          std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/main").empty());
}

// Each new name the upstream does not list costs one probe request: a push
// of many new names is refused before the gateway sends them, so one push
// cannot make it flood the upstream.
TEST_CASE("probes are bounded: a push of more new names than the gateway checks is refused, nothing goes") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("manynames", gateway());
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:refs/heads/base"}, dir).status == 0);
    std::vector<std::string> args = {"push", "origin"};
    for (int i = 0; i < 40; ++i) args.push_back("HEAD:refs/heads/many-" + std::to_string(i));
    auto r = git(args, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find("cc-pushgate: this push creates 40 names the upstream does not list; at most 32 are checked in "
                     "one push: push them in parts") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/many-0").empty());
    // In parts, they go.
    std::vector<std::string> part = {"push", "origin"};
    for (int i = 0; i < 8; ++i) part.push_back("HEAD:refs/heads/many-" + std::to_string(i));
    auto p = git(part, dir);
    INFO(p.err);
    CHECK(p.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/many-7") == head(dir));
}

TEST_CASE("a push without the session's secret is refused in git's words, never with a 401 prompt") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("nosecret", gateway());
    // The session's own URL (secret included) pushes ...
    auto good = git({"push", gateway().push_url("acme/demo"), "HEAD:refs/heads/with-secret"}, dir);
    INFO(good.err);
    REQUIRE(good.status == 0);
    REQUIRE(!upstream().ref("acme/demo", "refs/heads/with-secret").empty());
    // ... and so does the base URL with the git configuration, which sends
    // the secret as a header (the URL, which git's remote helper gets on its
    // command line, holds none) ...
    std::string bare = "http://" + gateway().host() + "/github.com/acme/demo.git";
    auto header = git({"push", bare, "HEAD:refs/heads/with-header"}, dir);
    INFO(header.err);
    REQUIRE(header.status == 0);
    REQUIRE(!upstream().ref("acme/demo", "refs/heads/with-header").empty());
    // ... but a repository without that configuration, with neither, does not.
    std::string plain = work_repo("nosecret-plain");
    auto r = git({"push", bare, "HEAD:refs/heads/no-secret"}, plain);
    INFO(r.err);
    CHECK(r.status == 128);
    CHECK(r.err.find("fatal: remote error: cc-pushgate: request does not carry this session's gateway secret") !=
          std::string::npos);
    CHECK(r.err.find("Username") == std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/no-secret").empty());
    // A wrong secret of the right length is the same.
    std::string wrong = gateway().url();
    wrong[wrong.size() - 2] = wrong[wrong.size() - 2] == '0' ? '1' : '0';
    auto w = git({"push", wrong + "github.com/acme/demo.git", "HEAD:refs/heads/no-secret"}, plain);
    CHECK(w.status == 128);
    CHECK(w.err.find("does not carry this session's gateway secret") != std::string::npos);
    // A wrong secret in the header is refused too, whatever the URL holds.
    auto wh = git({"-c", "http.extraHeader=X-CC-Pushgate-Session: " + std::string(32, '0'), "push", gateway().push_url("acme/demo"),
                   "HEAD:refs/heads/no-secret"},
                  plain);
    CHECK(wh.status == 128);
    CHECK(wh.err.find("fatal: remote error: cc-pushgate: request carries a wrong session secret") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/no-secret").empty());
    // A POST straight to receive-pack without it: 403 naming the problem.
    std::string post = http_raw(gateway().port(), "POST /github.com/acme/demo.git/git-receive-pack HTTP/1.1\r\nHost: " +
                                                      gateway().host() + "\r\nContent-Length: 4\r\nConnection: close\r\n\r\n0000");
    CHECK(post.rfind("HTTP/1.1 403", 0) == 0);
    CHECK(post.find("does not carry this session's gateway secret") != std::string::npos);
    auto ev = events(gateway(), "refused");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["reason"] == "request does not carry this session's gateway secret (use the git configuration from the ready event)");
}

TEST_CASE("a request naming another host (DNS rebinding) is refused even with the secret") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string target = gateway().path("/github.com/acme/demo.git/info/refs?service=git-receive-pack");
    auto get = [&](const std::string& host) {
        return http_raw(gateway().port(), "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
    };
    std::string own = get(gateway().host());
    CHECK(own.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(own.find("# service=git-receive-pack") != std::string::npos);
    CHECK(own.find("ERR ") == std::string::npos);
    std::string local = get("localhost:" + std::to_string(gateway().port()));
    CHECK(local.find("ERR ") == std::string::npos);
    std::string rebound = get("attacker.example:" + std::to_string(gateway().port()));
    CHECK(rebound.find("ERR cc-pushgate: Host 'attacker.example:" + std::to_string(gateway().port()) +
                       "' is not this gateway's address") != std::string::npos);
    std::string none = http_raw(gateway().port(), "GET " + target + " HTTP/1.1\r\nConnection: close\r\n\r\n");
    CHECK(none.find("ERR cc-pushgate: request has no Host header") != std::string::npos);
    for (const auto& s : {own, rebound, none}) CHECK(s.find(" 401 ") == std::string::npos);
    // Two Host headers, one of them the gateway's: malformed, whichever a reader takes.
    std::string two = http_raw(gateway().port(), "GET " + target + " HTTP/1.1\r\nHost: " + gateway().host() +
                                                     "\r\nHost: attacker.example\r\nConnection: close\r\n\r\n");
    CHECK(two.rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(two.find("\r\n\r\ncc-pushgate: request has more than one Host header\n") != std::string::npos);
}

TEST_CASE("an upstream hook that prints the write token: the agent sees it in no spelling") {
    NEED_RIG();
    std::string dir = agent_repo("echo-hook", gateway());
    // Percent-encoding leaves this token as it is (only unreserved characters).
    std::string pct = write_token;
    auto b64 = [](const std::string& s) {
        auto r = run({"base64", "-w0"}, s);
        return r.out;
    };
    std::string basic = b64("x-access-token:" + write_token);
    std::string bare = b64(write_token);
    auto install_hook = [&] {
        upstream().create_repo("acme/demo");
        std::string hook = upstream().repo_path("acme/demo") + "/hooks/pre-receive";
        write_file(hook,
                   "#!/bin/sh\n"
                   "cat >/dev/null\n"
                   "echo \"raw: " + write_token + "\"\n"
                   "echo \"basic: Authorization: Basic " + basic + "\"\n"
                   "echo \"bare64: " + bare + "\"\n"
                   "echo \"url: https://x-access-token:" + pct + "@github.com/acme/demo.git\"\n"
                   "printf 'split: " + write_token.substr(0, 5) + "' >&2; sleep 0.3; printf '" + write_token.substr(5) +
                       "\\n' >&2\n"
                   "echo 'after the token'\n",
                   0755);
    };
    // Straight to the upstream, the hook's output carries the token to the pusher.
    install_hook();
    auto direct = git({"push", upstream().write_url("acme/demo"), "HEAD:refs/heads/direct"}, dir);
    REQUIRE(direct.status == 0);
    REQUIRE(direct.err.find("remote: raw: " + write_token) != std::string::npos);
    REQUIRE(direct.err.find(basic) != std::string::npos);

    // Through the gateway: masked in every spelling, the rest of the lines intact.
    install_hook();
    auto r = git({"push", "origin", "HEAD:refs/heads/echoed"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(!upstream().ref("acme/demo", "refs/heads/echoed").empty());
    CHECK(r.err.find("remote: raw: " + std::string(write_token.size(), '*')) != std::string::npos);
    CHECK(r.err.find("remote: after the token") != std::string::npos);
    CHECK(r.err.find(write_token) == std::string::npos);
    CHECK(r.err.find(basic.substr(0, 36)) == std::string::npos);
    CHECK(r.err.find(bare.substr(0, 16)) == std::string::npos);
    CHECK(r.err.find(write_token.substr(0, 5) + write_token.substr(5)) == std::string::npos);
    CHECK(r.err.find("remote: split: " + std::string(write_token.size(), '*')) != std::string::npos);
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["tokenMasked"] == true);
    CHECK(gateway().stdout_text().find(write_token) == std::string::npos);
}

TEST_CASE("the token command inherits no socket of the gateway's") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string log = scratch_dir() + "/token-fds";
    std::string cmd = scratch_dir() + "/fd-token.sh";
    write_file(cmd, "#!/bin/sh\nls -l /proc/$$/fd >> " + log + " 2>&1\necho " + write_token + "\n", 0755);
    Gateway g(gateway_args({"--token-command", cmd}));
    std::string dir = agent_repo("fds", g);
    auto r = git({"push", "origin", "HEAD:refs/heads/fds"}, dir);
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::string fds = read_file(log);
    INFO(fds);
    REQUIRE(fds.find("pipe:") != std::string::npos);  // the listing ran
    CHECK(fds.find("socket:") == std::string::npos);
}

TEST_CASE("many idle connections beside a real push: the push goes through, the oldest idle ones are cut") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    Gateway g(gateway_args({"--head-timeout", "30"}));
    std::string dir = agent_repo("idle", g);
    // 100 connections that never send a byte: more than the 64 that may wait
    // for their head at once, and more than the 32 admitted connections.
    std::vector<int> idle;
    for (int i = 0; i < 100; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(g.port()));
        REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        idle.push_back(fd);
    }
    auto r = git({"push", "origin", "HEAD:refs/heads/beside-idle"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/beside-idle") == head(dir));
    // The first (oldest) idle connection was cut to make room: it reads the end.
    timeval tv{10, 0};
    ::setsockopt(idle.front(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b;
    CHECK(::recv(idle.front(), &b, 1, 0) == 0);
    for (int fd : idle) ::close(fd);
    CHECK(g.stop() == 0);
    auto sd = events(g, "shutdown");
    REQUIRE(!sd.empty());
    CHECK(sd.back()["evictedConnections"].get<int>() >= 36);
}

TEST_CASE("a client that sends half a head is cut at --head-timeout") {
    NEED_RIG();
    Gateway g(gateway_args({"--head-timeout", "1"}));
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(g.port()));
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    std::string half = "GET " + g.path("/github.com/acme/demo.git/info/refs") + " HTTP/1.1\r\nHost: " + g.host() + "\r\n";
    REQUIRE(::send(fd, half.data(), half.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(half.size()));
    // The gateway closes it long before this 20 s receive timeout.
    timeval tv{20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b;
    errno = 0;
    CHECK(::recv(fd, &b, 1, 0) == 0);
    CHECK(errno == 0);
    ::close(fd);
}

TEST_CASE("a ref name with an invisible or bidi character is denied; one drawn like a protected ref is judged as it") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    std::string dir = agent_repo("bidi", gateway());
    const std::string zwsp = "\xE2\x80\x8B";  // U+200B ZERO WIDTH SPACE
    std::string sneaky = "refs/heads/ma" + zwsp + "in";
    // Straight to the upstream such a name is taken as it is.
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:" + sneaky}, dir).status == 0);
    REQUIRE(!upstream().ref("acme/demo", sneaky).empty());
    upstream().create_repo("acme/demo");
    auto r = git({"push", "origin", "HEAD:" + sneaky}, dir);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find("(Control Center policy: ref name has an invisible or bidi control character (U+200B))") !=
          std::string::npos);
    CHECK(upstream().ref("acme/demo", sneaky).empty());
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["refs"][0]["source"] == "refname");
    CHECK(ev.back()["refs"][0]["looksLike"] == "refs/heads/main");
    // Another case is another ref for git and for the rules, but it is reported.
    auto upper = git({"push", "origin", "HEAD:refs/heads/MAIN"}, dir);
    CHECK(upper.status == 0);
    ev = events(gateway(), "push");
    CHECK(ev.back()["refs"][0]["decision"] == "allow");
    CHECK(ev.back()["refs"][0]["looksLike"] == "refs/heads/main");
    // A Cyrillic a (U+0430) is drawn like a Latin one: the name is judged as
    // main, whose deletion the policy refuses. Straight to the upstream the
    // deletion goes through; through the gateway it is refused and the ref
    // stays.
    const std::string cyr = "refs/heads/m\xD0\xB0in";
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:" + cyr}, dir).status == 0);
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), ":" + cyr}, dir).status == 0);
    REQUIRE(upstream().ref("acme/demo", cyr).empty());
    REQUIRE(git({"push", "-q", upstream().write_url("acme/demo"), "HEAD:" + cyr}, dir).status == 0);
    auto del = git({"push", "origin", ":" + cyr}, dir);
    INFO(del.err);
    CHECK(del.status == 1);
    CHECK(del.err.find("(Control Center policy: looks like refs/heads/main: ") != std::string::npos);
    CHECK(!upstream().ref("acme/demo", cyr).empty());
    ev = events(gateway(), "push");
    CHECK(ev.back()["refs"][0]["decision"] == "deny");
    CHECK(ev.back()["refs"][0]["looksLike"] == "refs/heads/main");
}

TEST_CASE("a gzip body that inflates past 100 times its size is cut, not streamed upstream") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    // An allowed ref, then 64 MiB of zeros as its "pack": about 64 KiB gzipped.
    std::string prefix = std::string("0082") + std::string(40, '0') + " " + std::string(40, '1') +
                         " refs/heads/bomb" + std::string(1, '\0') + "report-status side-band-64k\n0000";
    std::string raw = prefix + std::string(64u << 20, '\0');
    auto gz = run({"gzip", "-c"}, raw);
    REQUIRE(gz.status == 0);
    REQUIRE(gz.out.size() < (1u << 20));
    std::string req = "POST " + gateway().path("/github.com/acme/demo.git/git-receive-pack") + " HTTP/1.1\r\nHost: " +
                      gateway().host() + "\r\nContent-Type: application/x-git-receive-pack-request\r\n"
                      "Content-Encoding: gzip\r\nContent-Length: " + std::to_string(gz.out.size()) +
                      "\r\nConnection: close\r\n\r\n" + gz.out;
    http_raw(gateway().port(), req);
    auto ev = events(gateway(), "push");
    REQUIRE(!ev.empty());
    CHECK(ev.back()["result"] == "error");
    CHECK(ev.back()["error"] == "gzip body: inflates to more than 100 times its size");
    CHECK(upstream().ref("acme/demo", "refs/heads/bomb").empty());
}

namespace {

// A connection to the gateway from `source` (a loopback address), or -1.
int connect_from(const Gateway& g, const char* source) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in s{};
    s.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &s.sin_addr);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(g.port()));
    timeval tv{20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&s), sizeof s) != 0 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// A keep-alive request on `fd` whose answer (an ERR advertisement: the repo is
// not linked) is read whole; the connection then stays admitted and idle.
bool hold_admitted(const Gateway& g, int fd) {
    std::string req = "GET " + g.path("/github.com/acme/unlinked.git/info/refs?service=git-receive-pack") +
                      " HTTP/1.1\r\nHost: " + g.host() + "\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return false;
    std::string got;
    char buf[4096];
    while (got.find("not linked to this workspace") == std::string::npos) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return false;
        got.append(buf, static_cast<std::size_t>(n));
    }
    return got.rfind("HTTP/1.1 200", 0) == 0;
}

}  // namespace

TEST_CASE("connections per session are capped: past the cap a request gets git's 503, from any address") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    Gateway g(gateway_args({"--max-client-connections", "2", "--head-timeout", "30"}));
    std::string dir = agent_repo("per-client", g);
    // The push works while the client holds no other connection.
    auto r = git({"push", "origin", "HEAD:refs/heads/per-client-1"}, dir);
    INFO(r.err);
    REQUIRE(r.status == 0);

    // Two admitted keep-alive connections from 127.0.0.1 fill its share.
    int a = connect_from(g, "127.0.0.1"), b = connect_from(g, "127.0.0.1");
    REQUIRE(a >= 0);
    REQUIRE(b >= 0);
    REQUIRE(hold_admitted(g, a));
    REQUIRE(hold_admitted(g, b));
    commit(dir, "second.txt", "2\n");
    r = git({"push", "origin", "HEAD:refs/heads/per-client-2"}, dir);
    INFO(r.err);
    CHECK(r.status == 128);
    CHECK(r.err.find("remote: cc-pushgate: too many connections for this session (at most 2 at once)") !=
          std::string::npos);
    CHECK(r.err.find("The requested URL returned error: 503") != std::string::npos);
    CHECK(upstream().ref("acme/demo", "refs/heads/per-client-2").empty());
    auto refused = events(g, "refused");
    REQUIRE(!refused.empty());
    CHECK(refused.back()["client"] == "127.0.0.1");

    // Another address of this host does not widen the session's share: the
    // share is the authenticated session's, not the peer address's (keyed by
    // address, 127.0.0.2 had a share of its own, and 127.0.0.0/8 holds 16M).
    int other = connect_from(g, "127.0.0.2");
    if (other < 0) CC_SKIP("cannot bind 127.0.0.2");
    CHECK_FALSE(hold_admitted(g, other));
    ::close(other);
    refused = events(g, "refused");
    REQUIRE(!refused.empty());
    CHECK(refused.back()["client"] == "127.0.0.2");
    CHECK(refused.back()["reason"] == "too many connections for this session (at most 2 at once)");

    // Once the client lets its connections go, it pushes again.
    ::close(a);
    ::close(b);
    std::string answer;
    for (int i = 0; i < 200; ++i) {  // until the gateway has seen both closes
        answer = http_raw(g.port(), "GET " + g.path("/github.com/acme/unlinked.git/info/refs?service=git-receive-pack") +
                                        " HTTP/1.1\r\nHost: " + g.host() + "\r\nConnection: close\r\n\r\n");
        if (answer.rfind("HTTP/1.1 200", 0) == 0) break;
        ::usleep(50 * 1000);
    }
    REQUIRE(answer.rfind("HTTP/1.1 200", 0) == 0);
    r = git({"push", "origin", "HEAD:refs/heads/per-client-2"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/per-client-2") == head(dir));
    CHECK(g.stop() == 0);
}

TEST_CASE("one client's idle connections cut its own oldest waiting connection, not another client's push") {
    NEED_RIG();
    upstream().create_repo("acme/demo");
    Gateway g(gateway_args({"--max-client-connections", "3", "--head-timeout", "30"}));
    std::string dir = agent_repo("flood", g);
    // 20 idle connections from 127.0.0.2: past its share of 3 waiting ones.
    std::vector<int> idle;
    for (int i = 0; i < 20; ++i) {
        int fd = connect_from(g, "127.0.0.2");
        if (fd < 0) CC_SKIP("cannot bind 127.0.0.2");
        idle.push_back(fd);
    }
    // Its first connection was cut to make room for its own later ones.
    char ch;
    CHECK(::recv(idle.front(), &ch, 1, 0) == 0);
    auto r = git({"push", "origin", "HEAD:refs/heads/beside-flood"}, dir);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(upstream().ref("acme/demo", "refs/heads/beside-flood") == head(dir));
    for (int fd : idle) ::close(fd);
    CHECK(g.stop() == 0);
    auto sd = events(g, "shutdown");
    REQUIRE(!sd.empty());
    CHECK(sd.back()["evictedConnections"].get<int>() >= 17);
}
