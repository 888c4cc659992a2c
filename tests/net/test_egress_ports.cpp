// Ports in the allowlist: `host:443`, `host:22,443`, `host:*`; an entry
// without a port admits 80 and 443 only, and a listed host on another port
// is refused with "port not allowed" in each protocol's words.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "egress_fixture.hpp"

using namespace egress_fixture;
namespace fs = std::filesystem;

namespace {

std::vector<json> json_lines(const std::string& text) {
    std::vector<json> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (!l.empty()) out.push_back(json::parse(l));
    return out;
}

}  // namespace

TEST_CASE("egress ports: --check decides the port and shows the ports an entry admits") {
    auto r = cc::test::run({bin("cc-egress"), "--no-baseline", "--allow", "git.example.org:22,443", "--allow",
                            "plain.example.org", "--allow", "*.any.example:*", "--allow", "[fd00::5]:8080",
                            "--check", "git.example.org:22", "git.example.org:8080", "plain.example.org",
                            "plain.example.org:443", "plain.example.org:8443", "a.b.any.example:65535",
                            "[fd00::5]:8080", "[fd00::5]:80"});
    CHECK(r.status == 1);
    auto l = json_lines(r.out);
    REQUIRE(l.size() == 8);
    CHECK(l[0]["decision"] == "allow");
    CHECK(l[0]["rule"] == "allow git.example.org:22,443 (--allow)");
    CHECK(l[0]["ports"] == json::array({22, 443}));
    CHECK(l[1]["decision"] == "deny");
    CHECK(l[1]["rule"] == "port not allowed");
    CHECK(l[1]["reason"] == "port 8080 not allowed for host git.example.org (its allow entries admit 22,443)");
    // No port given: decided on the name; the default ports shown.
    CHECK(l[2]["decision"] == "allow");
    CHECK(l[2]["ports"] == json::array({80, 443}));
    CHECK(l[3]["decision"] == "allow");
    CHECK(l[4]["decision"] == "deny");
    CHECK(l[4]["reason"] == "port 8443 not allowed for host plain.example.org (its allow entries admit 80,443)");
    CHECK(l[5]["decision"] == "allow");
    CHECK(l[5]["ports"] == "*");
    CHECK(l[6]["decision"] == "allow");
    CHECK(l[6]["rule"] == "allow [fd00::5]:8080 (--allow)");
    CHECK(l[7]["decision"] == "deny");
    CHECK(l[7]["rule"] == "port not allowed");

    // The baseline's GitHub list: git over SSH to github.com, not to the rest.
    r = cc::test::run({bin("cc-egress"), "--check", "github.com:22", "ssh.github.com:22", "api.github.com:22",
                       "api.github.com:443"});
    l = json_lines(r.out);
    REQUIRE(l.size() == 4);
    CHECK(l[0]["decision"] == "allow");
    CHECK(l[1]["decision"] == "allow");
    CHECK(l[2]["decision"] == "deny");
    CHECK(l[2]["rule"] == "port not allowed");
    CHECK(l[3]["decision"] == "allow");
}

TEST_CASE("egress ports: --dry-run lists every allow entry's ports") {
    auto r = cc::test::run({bin("cc-egress"), "--no-baseline", "--allow", "127.0.0.1:*", "--allow", "a.example",
                            "--allow", "b.example:8443,443,8443", "--dry-run"});
    REQUIRE(r.status == 0);
    json plan = json::parse(r.out);
    CHECK(plan["rules"]["allowAddresses"][0]["address"] == "127.0.0.1/32");
    CHECK(plan["rules"]["allowAddresses"][0]["ports"] == "*");
    CHECK(plan["rules"]["allowNames"][0]["pattern"] == "a.example");
    CHECK(plan["rules"]["allowNames"][0]["ports"] == json::array({80, 443}));
    CHECK(plan["rules"]["allowNames"][1]["ports"] == json::array({443, 8443}));
    r = cc::test::run({bin("cc-egress"), "--dry-run"});
    plan = json::parse(r.out);
    bool github = false;
    for (const auto& e : plan["rules"]["allowNames"])
        if (e["pattern"] == "github.com") {
            github = true;
            CHECK(e["ports"] == json::array({22, 80, 443}));
        }
    CHECK(github);
}

TEST_CASE("egress ports: a bad port or a port on a deny entry is bad input (exit 2, naming it)") {
    for (const std::string& entry : std::vector<std::string>{"h.example:0", "h.example:65536", "h.example:", "h.example:80,", "h.example:x",
                              "h.example:-1", "h.example:80 ", "[fd00::5", "[h.example]:80", "[fd00::5]80"}) {
        auto r = cc::test::run({bin("cc-egress"), "--no-baseline", "--allow", entry, "--dry-run"});
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains("'" + entry + "'"));
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    auto r = cc::test::run({bin("cc-egress"), "--no-baseline", "--allow", "h.example:99999", "--dry-run"});
    CHECK_THAT(r.err, Catch::Contains("ports must be 1-65535, comma-separated, or *"));
    r = cc::test::run({bin("cc-egress"), "--no-baseline", "--deny", "evil.example:443", "--dry-run"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("deny entry 'evil.example:443' (--deny): deny entries take no port"));
}

TEST_CASE("egress ports: a listed host on a port its entry does not admit is refused, through every protocol") {
    Origin origin;
    REQUIRE(origin.port);
    std::string port = std::to_string(origin.port);
    // Without the proxy the origin's port answers: there is something to refuse.
    auto direct = curl({origin.url("/hello")});
    REQUIRE(direct.out == "hello\n");

    {
        // A bare entry: 80 and 443 only.
        Egress eg({"--allow", "127.0.0.1", "--no-baseline"});
        std::string proxy = "http://" + eg.http();
        auto r = curl({"-x", proxy, "-D", "-", origin.url("/hello")});
        CHECK(r.status == 0);
        CHECK_THAT(r.out, Catch::StartsWith("HTTP/1.1 403 "));
        CHECK_THAT(r.out, Catch::Contains("Proxy-Status: cc-egress; error=http_request_denied"));
        CHECK_THAT(r.out, Catch::Contains("port " + port + " not allowed for host 127.0.0.1 (its allow entries admit 80,443)"));
        CHECK_THAT(r.out, !Catch::Contains("hello"));
        // CONNECT: refused before any tunnel (curl 56: CONNECT answered 403).
        r = curl({"-p", "-x", proxy, "-o", "/dev/null", origin.url("/hello")});
        CHECK(r.status == 56);
        CHECK_THAT(r.err, Catch::Contains("403"));
        // SOCKS5: reply 02, "not allowed by ruleset" (curl 97).
        r = curl({"--socks5-hostname", eg.socks(), origin.url("/hello")});
        CHECK(r.status == 97);
        CHECK_THAT(r.err, Catch::Contains("(2)"));
        CHECK(eg.stop() == 0);
        int refused = 0;
        for (const auto& l : eg.lines) {
            CHECK(l["decision"] == "deny");
            CHECK(l["rule"] == "port not allowed");
            CHECK(l["port"] == origin.port);
            ++refused;
        }
        CHECK(refused == 3);
    }
    {
        // The port named, or every port: allowed.
        for (const std::string& entry : std::vector<std::string>{"127.0.0.1:" + port, "127.0.0.1:1," + port, "127.0.0.1:*"}) {
            Egress eg({"--allow", entry, "--no-baseline"});
            std::string proxy = "http://" + eg.http();
            CHECK(curl({"-x", proxy, origin.url("/hello")}).out == "hello\n");
            CHECK(curl({"-p", "-x", proxy, origin.url("/hello")}).out == "hello\n");
            CHECK(curl({"--socks5-hostname", eg.socks(), origin.url("/hello")}).out == "hello\n");
            CHECK(eg.stop() == 0);
            for (const auto& l : eg.lines) CHECK(l["decision"] == "allow");
        }
    }
}

TEST_CASE("egress ports: an exactly named non-public address is excepted on its entry's ports only") {
    // (Without the port rule a name resolving to an address allowed on
    // another port would reach every port of it.)
    Origin origin;
    REQUIRE(origin.port);
    std::string port = std::to_string(origin.port);
    Dns dns(std::map<std::string, std::string>{{"name.test", "127.0.0.1"}});
    // name.test is allowed on every port, 127.0.0.1 only on port 1: the name
    // resolving to loopback does not reach the origin's port.
    Egress eg({"--allow", "name.test:*", "--allow", "127.0.0.1:1", "--no-baseline", "--dns-server", dns.server()});
    auto r = curl({"-x", "http://" + eg.http(), "-D", "-", "http://name.test:" + port + "/hello"});
    CHECK_THAT(r.out, Catch::StartsWith("HTTP/1.1 403 "));
    CHECK_THAT(r.out, Catch::Contains("host name.test resolves to 127.0.0.1, allowed on 1 only, not on port " + port));
    CHECK(eg.stop() == 0);
    REQUIRE(eg.lines.size() == 1);
    CHECK(eg.lines[0]["rule"] == "port not allowed");

    Egress ok({"--allow", "name.test:*", "--allow", "127.0.0.1:" + port, "--no-baseline", "--dns-server", dns.server()});
    CHECK(curl({"-x", "http://" + ok.http(), "http://name.test:" + port + "/hello"}).out == "hello\n");
    CHECK(ok.stop() == 0);
}

TEST_CASE("egress ports: report mode lets a port through as wouldDeny, and learn writes the port") {
    Origin origin;
    REQUIRE(origin.port);
    std::string port = std::to_string(origin.port);
    Egress eg({"--allow", "127.0.0.1", "--no-baseline", "--report"});
    CHECK(curl({"-x", "http://" + eg.http(), origin.url("/hello")}).out == "hello\n");
    CHECK(eg.stop() == 0);
    REQUIRE(eg.lines.size() == 1);
    CHECK(eg.lines[0]["decision"] == "allow");
    CHECK(eg.lines[0]["wouldDeny"] == true);
    CHECK(eg.lines[0]["rule"] == "port not allowed");
    std::string text;
    for (const auto& l : eg.lines) text += l.dump() + "\n";
    // Two more lines: the same host on 443 and on 80 (the default ports add
    // nothing to write), and an IPv6 address on another port.
    text += R"({"event":"connection","host":"127.0.0.1","port":443,"decision":"allow","rule":"x"})" "\n";
    text += R"({"event":"connection","host":"a.example","port":80,"decision":"allow","rule":"x"})" "\n";
    text += R"({"event":"connection","host":"fd00::5","port":8080,"decision":"deny","rule":"port not allowed"})" "\n";
    // With the operator's entries for the two non-public addresses (learn
    // never writes one the operator did not name: enforcement refuses it).
    auto learnt = cc::test::run({bin("cc-egress"), "--allow", "127.0.0.1", "--allow", "fd00::5", "learn"}, text);
    CHECK(learnt.status == 0);
    CHECK(learnt.out == "127.0.0.1:443," + port + "\n" + "[fd00::5]:8080\na.example\n");
    auto bare = cc::test::run({bin("cc-egress"), "learn"}, text);
    CHECK(bare.status == 0);
    CHECK(bare.out == "a.example\n");
}

// --dry-run stops short of listening only: what a start would refuse, it
// refuses the same way (exit 2, one line), and a good setup prints the plan.
TEST_CASE("egress: --dry-run checks what a start checks (the token file's mode, socket paths, TLS ports)") {
    std::string dir = cc::test::scratch_dir() + "/dry-run";
    fs::create_directories(dir);
    std::string token = dir + "/token";
    std::ofstream(token) << "s3cret\n";
    ::chmod(token.c_str(), 0644);
    auto dry = [&](std::vector<std::string> extra) {
        std::vector<std::string> argv = {bin("cc-egress"), "--no-baseline", "--allow", "a.example", "--dry-run"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return cc::test::run(argv);
    };
    // A token readable by others: refused by a start, so by --dry-run too.
    auto r = dry({"--auth-token-file", token});
    CHECK(r.status == 2);
    CHECK(r.err == "cc-egress: --auth-token-file '" + token + "': is readable by other users (chmod 600 it)\n");
    CHECK(r.out.empty());
    ::chmod(token.c_str(), 0600);
    r = dry({"--auth-token-file", token});
    CHECK(r.status == 0);
    CHECK(json::parse(r.out)["event"] == "plan");
    r = dry({"--unix-dir", dir + "/missing"});
    CHECK(r.status == 2);
    CHECK(r.err == "cc-egress: --unix-dir '" + dir + "/missing': is not a directory\n");
    r = dry({"--fd-inbox", dir + "/missing/inbox.sock"});
    CHECK(r.status == 2);
    CHECK(r.err == "cc-egress: --fd-inbox '" + dir + "/missing/inbox.sock': its directory does not exist\n");
    std::string longpath = dir + "/" + std::string(120, 'x') + ".sock";
    r = dry({"--metrics-socket", longpath});
    CHECK(r.status == 2);
    CHECK(r.err == "cc-egress: --metrics-socket '" + longpath + "': is too long for a Unix socket (at most 107 bytes)\n");
    r = dry({"--tls-ports", "443,nope"});
    CHECK(r.status == 2);
    CHECK(r.err.find("--tls-ports") != std::string::npos);
    CHECK(r.out.empty());
    r = dry({"--unix-dir", dir, "--fd-inbox", dir + "/inbox.sock", "--metrics-socket", dir + "/m.sock"});
    CHECK(r.status == 0);
    CHECK(json::parse(r.out)["event"] == "plan");
    CHECK_FALSE(fs::exists(dir + "/inbox.sock"));  // nothing was made
}

// A port named by --tls-ports carries TLS: a tunnel there must start with a
// ClientHello, and a plain-HTTP request for it (absolute form, which the
// proxy would send on in clear) is refused the same way.
TEST_CASE("egress ports: plain HTTP to a TLS port is refused, with the tls rule") {
    Origin origin;
    REQUIRE(origin.port);
    std::string port = std::to_string(origin.port);
    // Not a TLS port: the same request goes through (there is something to refuse).
    {
        Egress eg({"--allow", "127.0.0.1:" + port, "--no-baseline"});
        CHECK(curl({"-x", "http://" + eg.http(), origin.url("/hello")}).out == "hello\n");
        CHECK(eg.stop() == 0);
    }
    Egress eg({"--allow", "127.0.0.1:" + port, "--no-baseline", "--tls-ports", port});
    auto r = curl({"-x", "http://" + eg.http(), "-D", "-", origin.url("/hello")});
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::StartsWith("HTTP/1.1 403 "));
    CHECK_THAT(r.out, Catch::Contains("plain HTTP to 127.0.0.1:" + port + ", a TLS port (--tls-ports): use https:// (CONNECT)"));
    CHECK_THAT(r.out, !Catch::Contains("hello"));
    CHECK(eg.stop() == 0);
    REQUIRE(!eg.lines.empty());
    CHECK(eg.lines.back()["decision"] == "deny");
    CHECK(eg.lines.back()["rule"] == "tls");
}
