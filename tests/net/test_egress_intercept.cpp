// cc-egress terminating TLS for named hosts: a real HTTPS origin on
// 127.0.0.1 posing as api.one.test (its own test CA, trusted through
// --upstream-ca), real curl through both proxies. The origin sees the real
// credential, the client side only the placeholder; every refusal is shown
// to matter first (the same request without the offending part gets
// through, or the request reaches the origin without the proxy) and then
// asserted exactly: status, JSON body, connection line, nothing at the origin.

#include "egress_fixture.hpp"

#include <sys/stat.h>

#include <fstream>

using namespace egress_fixture;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

void spit(const std::string& path, const std::string& text, mode_t mode = 0644) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
}

const std::string k_secret = "real-secret-4f1c9e";

struct Setup {
    std::string dir = cc::test::scratch_dir() + "/intercept-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
    std::string log;
    std::unique_ptr<Origin> origin;
    std::unique_ptr<Dns> dns;
    std::string port;
    static inline int n = 0;
    Setup() {
        ::mkdir(dir.c_str(), 0700);
        make_origin_pki(dir, "DNS:api.one.test,DNS:other.test,DNS:third.test,IP:127.0.0.1");
        spit(dir + "/token", k_secret + "\n", 0600);
        log = dir + "/origin.log";
        origin = std::make_unique<Origin>(
            "0", std::map<std::string, std::string>{{"ORIGIN_TLS_CERT", dir + "/origin.pem"},
                                                    {"ORIGIN_TLS_KEY", dir + "/origin.key"},
                                                    {"ORIGIN_LOG", log},
                                                    {"ORIGIN_AUTH_LOG", dir + "/origin-auth.log"},
                                                    {"ORIGIN_TLS_LOG", dir + "/origin-tls.log"}});
        REQUIRE(origin->port != 0);
        port = std::to_string(origin->port);
        dns = std::make_unique<Dns>(std::map<std::string, std::string>{
            {"api.one.test", "127.0.0.1"}, {"other.test", "127.0.0.1"}, {"third.test", "127.0.0.1"}});
    }
    std::vector<std::string> args(std::vector<std::string> more) const {
        std::vector<std::string> a{"--no-baseline", "--allow", "*.test:*", "--allow", "127.0.0.1:*", "--dns-server",
                                   dns->server()};
        a.insert(a.end(), more.begin(), more.end());
        return a;
    }
    std::string url(const std::string& host, const std::string& path) const {
        return "https://" + host + ":" + port + path;
    }
    std::string origin_log() const { return slurp(log); }
};

std::string all_lines(const Egress& eg) {
    std::string out;
    for (const auto& l : eg.lines) out += l.dump() + "\n";
    return out;
}

}  // namespace

TEST_CASE("egress intercept: the origin gets the real credential, the client only ever holds the placeholder") {
    Setup s;
    Egress eg(s.args({"--credential", "GH_TOKEN@api.one.test=file:" + s.dir + "/token", "--upstream-ca",
                      s.dir + "/ca.pem", "--ca-cert-out", s.dir + "/session-ca.pem"}));
    INFO(eg.stderr_text());
    REQUIRE(eg.ready["intercept"] == json::array({"api.one.test"}));
    REQUIRE(eg.ready["credentials"].size() == 1);
    const std::string ph = eg.ready["credentials"][0]["placeholder"];
    CHECK(eg.ready["credentials"][0]["name"] == "GH_TOKEN");
    CHECK(ph.rfind("cc-placeholder-", 0) == 0);
    CHECK(ph.size() == 15 + 32);
    // The CA the clients trust: the same in the ready line and the file,
    // limited to the intercepted host.
    CHECK(slurp(s.dir + "/session-ca.pem") == eg.ready["interceptCa"].get<std::string>());
    auto text = cc::test::run({"openssl", "x509", "-in", s.dir + "/session-ca.pem", "-noout", "-text"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("X509v3 Name Constraints: critical") != std::string::npos);
    CHECK(text.out.find("DNS:api.one.test") != std::string::npos);
    CHECK(text.out.find("DNS:other.test") == std::string::npos);

    // Straight to the origin, the placeholder is what arrives: worthless there.
    auto direct = curl({"--cacert", s.dir + "/ca.pem", "--resolve", "api.one.test:" + s.port + ":127.0.0.1", "-H",
                        "Authorization: Bearer " + ph, s.url("api.one.test", "/headers")});
    REQUIRE(direct.status == 0);
    CHECK(direct.out.find("authorization: Bearer " + ph) != std::string::npos);

    // Through the HTTP proxy: Bearer replaced.
    auto r = curl({"--cacert", s.dir + "/session-ca.pem", "-x", "http://" + eg.http(), "-H",
                   "Authorization: Bearer " + ph, s.url("api.one.test", "/headers")});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("authorization: Bearer " + k_secret) != std::string::npos);
    CHECK(r.out.find(ph) == std::string::npos);
    // Through SOCKS5, as git sends it: Basic x-access-token:<placeholder>.
    r = curl({"--cacert", s.dir + "/session-ca.pem", "-x", "socks5h://" + eg.socks(), "-u",
              "x-access-token:" + ph, s.url("api.one.test", "/headers")});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("authorization: Basic eC1hY2Nlc3MtdG9rZW46cmVhbC1zZWNyZXQtNGYxYzll") != std::string::npos);
    // A POST body goes through too.
    r = curl({"--cacert", s.dir + "/session-ca.pem", "-x", "http://" + eg.http(), "--data-binary", "0123456789",
              s.url("api.one.test", "/echo")});
    CHECK(r.out == "got 10 bytes\n");

    // A client that does not trust the session CA gets no answer at all.
    r = curl({"-x", "http://" + eg.http(), s.url("api.one.test", "/hello")});
    CHECK(r.status == 60);

    CHECK(eg.stop() == 0);
    const std::string lines = all_lines(eg);
    CHECK(lines.find(k_secret) == std::string::npos);
    CHECK(eg.stderr_text().find(k_secret) == std::string::npos);
    int injected = 0, requests = 0;
    for (const auto& l : eg.lines) {
        if (l.value("proto", "") != "https") continue;
        ++requests;
        CHECK(l["decision"] == "allow");
        CHECK(l["host"] == "api.one.test");
        if (l.contains("credentials")) {
            CHECK(l["credentials"] == json::array({"GH_TOKEN"}));
            ++injected;
        }
    }
    CHECK(requests == 3);
    CHECK(injected == 2);
    const json* tunnel = eg.find("api.one.test", "http-connect");
    REQUIRE(tunnel);
    CHECK((*tunnel)["intercepted"] == true);
}

// What the origin's /pattern/N and /close/N send: 0..250 over and over, so
// a record lost, doubled or out of order (16 KiB is no multiple of 251) shows.
namespace {
std::string pattern(std::size_t n) {
    std::string p(n, '\0');
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<char>(i % 251);
    return p;
}
}  // namespace

TEST_CASE("egress intercept: megabyte bodies cross both TLS legs byte for byte, both ways, through both proxies") {
    Setup s;
    Egress eg(s.args({"--intercept", "api.one.test", "--upstream-ca", s.dir + "/ca.pem", "--ca-cert-out",
                      s.dir + "/session-ca.pem"}));
    INFO(eg.stderr_text());
    const std::vector<std::string> trust{"--cacert", s.dir + "/session-ca.pem"};
    auto via = [&](const std::string& proxy, std::vector<std::string> more) {
        std::vector<std::string> a = trust;
        a.push_back("-x");
        a.push_back(proxy);
        a.insert(a.end(), more.begin(), more.end());
        return curl(a);
    };
    const std::string http = "http://" + eg.http(), socks = "socks5h://" + eg.socks();

    // The origin's answer as it is, without the proxy.
    auto direct = curl({"--cacert", s.dir + "/ca.pem", "--resolve", "api.one.test:" + s.port + ":127.0.0.1",
                        s.url("api.one.test", "/pattern/300000")});
    REQUIRE(direct.status == 0);
    REQUIRE(direct.out == pattern(300000));

    // Downloads: with a length, through each proxy.
    auto r = via(http, {s.url("api.one.test", "/pattern/5000000")});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.out.size() == 5000000);
    CHECK(r.out == pattern(5000000));
    r = via(socks, {s.url("api.one.test", "/pattern/3000001")});
    CHECK(r.status == 0);
    CHECK(r.out == pattern(3000001));
    // Ended by the origin's close (no close_notify on its leg): every byte,
    // then a clean end on the client's.
    r = via(http, {s.url("api.one.test", "/close/2000000")});
    CHECK(r.status == 0);
    CHECK(r.out == pattern(2000000));
    // Two answers on one kept-alive connection, neither running into the other.
    r = via(http, {s.url("api.one.test", "/pattern/100000"), s.url("api.one.test", "/pattern/70000")});
    CHECK(r.status == 0);
    CHECK(r.out == pattern(100000) + pattern(70000));

    // Uploads: 4 MiB of random bytes, with a length and chunked; the
    // origin answers the SHA-256 of what reached it.
    const std::string file = s.dir + "/upload.bin";
    {
        std::ifstream rnd("/dev/urandom", std::ios::binary);
        std::string bytes(4u << 20, '\0');
        rnd.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        REQUIRE(rnd.gcount() == static_cast<std::streamsize>(bytes.size()));
        spit(file, bytes);
    }
    auto sum = cc::test::run({"sha256sum", file});
    REQUIRE(sum.status == 0);
    const std::string want = sum.out.substr(0, 64) + "\n";
    r = via(http, {"--data-binary", "@" + file, s.url("api.one.test", "/sha256")});
    CHECK(r.status == 0);
    CHECK(r.out == want);
    r = via(socks, {"-H", "Transfer-Encoding: chunked", "--data-binary", "@" + file, s.url("api.one.test", "/sha256")});
    CHECK(r.status == 0);
    CHECK(r.out == want);

    CHECK(eg.stop() == 0);
    // Each request its own line, its bytes counted.
    std::uint64_t down = 0, up = 0;
    int requests = 0;
    for (const auto& l : eg.lines) {
        if (l.value("proto", "") != "https") continue;
        ++requests;
        CHECK(l["decision"] == "allow");
        CHECK(l["status"] == 200);
    }
    for (const auto& l : eg.lines)
        if (l.value("intercepted", false)) {
            down += l.value("bytesDown", std::uint64_t{0});
            up += l.value("bytesUp", std::uint64_t{0});
        }
    CHECK(requests == 7);
    CHECK(down >= 5000000u + 3000001u + 2000000u + 170000u);
    CHECK(up >= 2 * (4u << 20));
}

namespace {
// tests/net/intercept_client.py through the HTTP proxy: one JSON line.
json shaped_client(const Egress& eg, const std::string& port, const std::string& ca, const std::string& mode) {
    auto r = cc::test::run({"python3", cc::test::source_dir() + "/tests/net/intercept_client.py",
                            std::to_string(port_of(eg.http())), "api.one.test", port, ca, mode});
    INFO(mode << ": " << r.err);
    REQUIRE(r.status == 0);
    return json::parse(r.out);
}
}  // namespace

TEST_CASE("egress intercept: a head in one-byte records, pipelined requests and TLS 1.2 on either leg are carried whole") {
    Setup s;
    // The same origin held to TLS 1.2: the proxy's upstream leg speaks 1.2.
    Origin tls12("0", {{"ORIGIN_TLS_CERT", s.dir + "/origin.pem"},
                       {"ORIGIN_TLS_KEY", s.dir + "/origin.key"},
                       {"ORIGIN_TLS_MAX", "1.2"}});
    REQUIRE(tls12.port > 0);
    Egress eg(s.args({"--intercept", "api.one.test", "--upstream-ca", s.dir + "/ca.pem", "--ca-cert-out",
                      s.dir + "/session-ca.pem"}));
    INFO(eg.stderr_text());
    const std::string ca = s.dir + "/session-ca.pem";
    json one = shaped_client(eg, s.port, ca, "bytewise");
    CHECK(one["version"] == "TLSv1.3");
    REQUIRE(one["answers"].size() == 1);
    CHECK(one["answers"][0]["status"] == "HTTP/1.1 200 OK");
    CHECK(one["answers"][0]["length"] == 70000);
    CHECK(one["answers"][0]["same"] == true);

    json two = shaped_client(eg, s.port, ca, "pipelined");
    REQUIRE(two["answers"].size() == 2);
    CHECK(two["answers"][0]["length"] == 1000);
    CHECK(two["answers"][0]["same"] == true);
    CHECK(two["answers"][1]["status"] == "HTTP/1.1 200 OK");
    CHECK(two["answers"][1]["same"] == true);

    json old = shaped_client(eg, s.port, ca, "tls12");
    CHECK(old["version"] == "TLSv1.2");
    CHECK(old["answers"][0]["length"] == 70000);
    CHECK(old["answers"][0]["same"] == true);

    json up12 = shaped_client(eg, std::to_string(tls12.port), ca, "bytewise");
    CHECK(up12["version"] == "TLSv1.3");  // the client's leg; the origin's was 1.2
    CHECK(up12["answers"][0]["length"] == 70000);
    CHECK(up12["answers"][0]["same"] == true);

    CHECK(eg.stop() == 0);
    int requests = 0;
    for (const auto& l : eg.lines)
        if (l.value("proto", "") == "https") {
            ++requests;
            CHECK(l["status"] == 200);
        }
    CHECK(requests == 5);
    // What reached the first origin (the TLS 1.2 one keeps no log), in order.
    CHECK(s.origin_log() == "GET /pattern/70000\nGET /pattern/1000\nGET /hello\nGET /pattern/70000\n");
}

TEST_CASE("egress intercept: a fresh connection resumes the upstream's session for the same host and port, never another's") {
    Setup s;
    Egress eg(s.args({"--intercept", "api.one.test", "--intercept", "other.test", "--upstream-ca", s.dir + "/ca.pem",
                      "--ca-cert-out", s.dir + "/session-ca.pem"}));
    INFO(eg.stderr_text());
    const std::vector<std::string> trust{"--cacert", s.dir + "/session-ca.pem"};
    auto get = [&](const std::string& proxy, const std::string& host, int n) {
        std::vector<std::string> a = trust;
        a.insert(a.end(), {"-x", proxy, s.url(host, "/size/" + std::to_string(n))});
        auto r = curl(a);
        INFO(r.err);
        CHECK(r.status == 0);
        CHECK(r.out == std::string(static_cast<std::size_t>(n), 'x'));
    };
    const std::string http = "http://" + eg.http(), socks = "socks5h://" + eg.socks();
    // Each curl is a client connection of its own, and so each an upstream
    // connection of its own.
    get(http, "api.one.test", 1);
    get(http, "api.one.test", 2);
    get(socks, "api.one.test", 3);
    // The same origin, the same certificate, another name: no session of
    // api.one.test's is offered to it.
    get(http, "other.test", 4);
    get(http, "other.test", 5);
    CHECK(eg.stop() == 0);
    // What the origin saw: a full handshake for each name's first connection.
    CHECK(slurp(s.dir + "/origin-tls.log") ==
          "/size/1 full\n/size/2 resumed\n/size/3 resumed\n/size/4 full\n/size/5 resumed\n");
    std::vector<bool> resumed;
    for (const auto& l : eg.lines)
        if (l.value("intercepted", false)) resumed.push_back(l["upstreamResumed"].get<bool>());
    CHECK(resumed == std::vector<bool>{false, true, true, false, true});
}

TEST_CASE("egress intercept: a placeholder anywhere but Authorization on its own hosts is refused, nothing reaches the origin") {
    Setup s;
    Egress eg(s.args({"--credential", "GH_TOKEN@api.one.test=file:" + s.dir + "/token", "--intercept", "other.test",
                      "--upstream-ca", s.dir + "/ca.pem", "--ca-cert-out", s.dir + "/session-ca.pem"}));
    INFO(eg.stderr_text());
    const std::string ph = eg.ready["credentials"][0]["placeholder"];
    const std::string proxy = "http://" + eg.http();
    auto tls = [&](std::vector<std::string> more) {
        std::vector<std::string> a{"--cacert", s.dir + "/session-ca.pem", "-x", proxy, "-w", "\n%{http_code}"};
        a.insert(a.end(), more.begin(), more.end());
        return curl(a);
    };
    // The same requests without the placeholder reach the origin.
    auto ok1 = tls({"-H", "X-Token: none", s.url("api.one.test", "/hello?t=x")});
    auto ok2 = tls({"-H", "Authorization: Bearer none", s.url("other.test", "/hello")});
    CHECK(http_code(ok1) == "404");  // the origin's answer: it has no /hello?t=x
    CHECK(http_code(ok2) == "200");
    CHECK(s.origin_log() == "GET /hello?t=x\nGET /hello\n");

    struct Case {
        std::vector<std::string> args;
        std::string reason;
    };
    const std::vector<Case> cases = {
        {{"-H", "X-Token: " + ph, s.url("api.one.test", "/hello")},
         "the placeholder of credential GH_TOKEN in header X-Token (only Authorization carries it)"},
        {{s.url("api.one.test", "/hello?t=" + ph)},
         "the placeholder of credential GH_TOKEN in the request target (send it in a header)"},
        {{"-H", "Authorization: Bearer " + ph, s.url("other.test", "/hello")},
         "the placeholder of credential GH_TOKEN sent to other.test, a host it is not for"},
        {{"-u", "x:" + ph, s.url("other.test", "/hello")},
         "the placeholder of credential GH_TOKEN sent to other.test, a host it is not for"},
    };
    for (const auto& c : cases) {
        auto r = tls(c.args);
        INFO(c.reason);
        CHECK(http_code(r) == "403");
        auto body = json::parse(r.out.substr(0, r.out.rfind('\n')), nullptr, false);
        CHECK(body == json{{"error", "refused by cc-egress"}, {"rule", "credential"}, {"reason", c.reason}});
    }
    // Plain HTTP with the placeholder: refused before anything is dialled.
    auto plain = curl({"-x", proxy, "-w", "\n%{http_code}", "-H", "Authorization: Bearer " + ph,
                       "http://api.one.test:" + s.port + "/hello"});
    CHECK(http_code(plain) == "403");
    CHECK(plain.out.find("in plain HTTP") != std::string::npos);
    CHECK(s.origin_log() == "GET /hello?t=x\nGET /hello\n");  // nothing more arrived

    CHECK(eg.stop() == 0);
    int refused = 0;
    for (const auto& l : eg.lines)
        if (l.value("rule", "") == "credential") {
            CHECK(l["decision"] == "deny");
            ++refused;
        }
    CHECK(refused == 5);
    CHECK(all_lines(eg).find(k_secret) == std::string::npos);
}

TEST_CASE("egress intercept: the upstream is verified; an untrusted or misnamed certificate is a 502 and a deny line") {
    Setup s;
    // third.test is on the origin's certificate; fourth.test is not.
    Dns dns2({{"api.one.test", "127.0.0.1"}, {"fourth.test", "127.0.0.1"}});
    {
        // Without --upstream-ca the origin's test CA is not trusted.
        Egress eg(s.args({"--intercept", "api.one.test"}));
        INFO(eg.stderr_text());
        auto r = curl({"-k", "-x", "http://" + eg.http(), s.url("api.one.test", "/hello")});
        CHECK(r.status == 56);  // CONNECT tunnel failed
        CHECK(r.err.find("502") != std::string::npos);
        CHECK(eg.stop() == 0);
        const json* l = eg.find("api.one.test", "http-connect");
        REQUIRE(l);
        CHECK((*l)["decision"] == "deny");
        CHECK((*l)["rule"] == "intercept");
        CHECK((*l)["reason"] ==
              "upstream certificate of api.one.test not trusted: unable to get local issuer certificate");
    }
    {
        Egress eg({"--no-baseline", "--allow", "*.test:*", "--allow", "127.0.0.1:*", "--dns-server", dns2.server(),
                   "--intercept", "fourth.test", "--intercept", "api.one.test", "--upstream-ca", s.dir + "/ca.pem"});
        INFO(eg.stderr_text());
        auto good = curl({"-k", "-x", "http://" + eg.http(), s.url("api.one.test", "/hello")});
        CHECK(good.out == "hello\n");
        auto r = curl({"-k", "-x", "http://" + eg.http(), s.url("fourth.test", "/hello")});
        CHECK(r.status == 56);
        CHECK(eg.stop() == 0);
        const json* l = eg.find("fourth.test", "http-connect");
        REQUIRE(l);
        CHECK((*l)["decision"] == "deny");
        CHECK((*l)["reason"] == "upstream certificate of fourth.test not trusted: hostname mismatch");
    }
    CHECK(s.origin_log() == "GET /hello\n");  // only the good request arrived
}

TEST_CASE("egress intercept: bad options start nothing (exit 2, one line)") {
    std::string dir = cc::test::scratch_dir();
    spit(dir + "/open-token", "x\n", 0644);
    spit(dir + "/ok-token", "x\n", 0600);
    struct Case {
        std::vector<std::string> args;
        std::string err;
    };
    const std::vector<Case> cases = {
        {{"--intercept", "*.one.test"}, "--intercept '*.one.test': takes an exact host name (no port or pattern)"},
        {{"--intercept", "a.test:443"}, "--intercept 'a.test:443': takes an exact host name (no port or pattern)"},
        {{"--credential", "GH_TOKEN=file:" + dir + "/ok-token"},
         "--credential 'GH_TOKEN': expected NAME@HOST[,HOST...]=file:PATH or =fd:N"},
        {{"--credential", "GH TOKEN@a.test=file:" + dir + "/ok-token"},
         "--credential 'GH TOKEN@a.test': NAME must be an environment variable name"},
        {{"--credential", "T@*.test=file:" + dir + "/ok-token"},
         "--credential 'T@*.test': '*.test' is not a host name (exact names only, no port or pattern)"},
        {{"--credential", "T@a.test=file:" + dir + "/open-token"},
         "--credential 'T@a.test' file '" + dir + "/open-token': is readable by other users (chmod 600 it)"},
        {{"--credential", "T@a.test=fd:1"}, "--credential 'T@a.test': fd:N needs a descriptor number of 3 or more"},
        {{"--credential", "T@a.test=file:" + dir + "/ok-token", "--credential", "T@b.test=file:" + dir + "/ok-token"},
         "--credential T: is given twice"},
        {{"--upstream-ca", dir + "/ok-token"}, "--upstream-ca: only with --intercept or --credential"},
        {{"--intercept", "a.test", "--upstream-ca", dir + "/ok-token"},
         "--upstream-ca '" + dir + "/ok-token': cannot be read as PEM certificates"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> argv{bin("cc-egress"), "--no-baseline"};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        auto r = cc::test::run(argv);
        INFO(c.err);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.err == "cc-egress: " + c.err + "\n");
    }
}

TEST_CASE("cc-wrap --credential: the command holds a placeholder, its clients reach the origin with the secret") {
    if (!cc::test::bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    Setup s;
    const std::string work = s.dir + "/work";
    ::mkdir(work.c_str(), 0777);
    ::chmod(work.c_str(), 0777);
    ::chmod(s.dir.c_str(), 0755);
    ::chmod((s.dir + "/ca.pem").c_str(), 0644);
    spit(s.dir + "/spec.json", json{{"sessionId", "ic"}, {"workspaceId", "ws"}, {"bindMounts", {{{"hostPath", work}}}},
                                    {"guestWorkdir", work}, {"egressAllowlist", {"127.0.0.1:*"}}}.dump());
    const std::string url = "https://127.0.0.1:" + s.port + "/headers";
    // The secret is a file this user reads on the host (what an agent run
    // without the boundary could do)...
    auto host_read = cc::test::run({"cat", s.dir + "/token"});
    REQUIRE(host_read.status == 0);
    CHECK(host_read.out == k_secret + "\n");
    const std::string script =
        "printf 'var=%s\\n' \"$GH_TOKEN\"; env | grep -c " + k_secret + "; "
        "cat " + s.dir + "/token; "
        "curl -sS -H \"Authorization: Bearer $GH_TOKEN\" " + url + " | grep authorization; "
        "python3 -c 'import os, urllib.request; r = urllib.request.Request(\"" + url +
        "\", headers={\"Authorization\": \"token \" + os.environ[\"GH_TOKEN\"]}); "
        "print(urllib.request.urlopen(r).read().decode())' | grep authorization; "
        "git -c http.extraHeader=\"Authorization: Bearer $GH_TOKEN\" ls-remote https://127.0.0.1:" + s.port +
        "/o/r.git; echo git=$?";
    auto r = cc::test::run({bin("cc-wrap"), "--spec", s.dir + "/spec.json", "--credential",
                            "GH_TOKEN@127.0.0.1=file:" + s.dir + "/token", "--upstream-ca", s.dir + "/ca.pem", "--",
                            "sh", "-c", script});
    INFO(r.err);
    CHECK(r.status == 0);
    // ...inside, only the placeholder: not in the environment, not on disk.
    CHECK(r.out.rfind("var=cc-placeholder-", 0) == 0);
    CHECK(r.out.find("\n0\n") != std::string::npos);  // env holds no secret
    CHECK(r.err.find("cat: " + s.dir + "/token: No such file or directory") != std::string::npos);
    // The origin got the secret from both clients (its /headers echoes it).
    CHECK(r.out.find("authorization: Bearer " + k_secret + "\n") != std::string::npos);
    CHECK(r.out.find("authorization: token " + k_secret + "\n") != std::string::npos);
    // git, as CI checkouts send a token (http.extraHeader): the origin (no
    // git server, so git exits 128 on its 404) saw the secret.
    CHECK(r.out.find("git=128") != std::string::npos);
    CHECK(slurp(s.dir + "/origin-auth.log").find("GET /o/r.git/info/refs?service=git-upload-pack Bearer " + k_secret) !=
          std::string::npos);
    // The secret from an inherited descriptor instead of a file: nothing on
    // disk, and the descriptor reaches cc-egress only, never the command.
    auto fromfd = cc::test::run(
        {"sh", "-c",
         "exec 7<\"$1\"; exec \"$2\" --spec \"$3\" --credential GH_TOKEN@127.0.0.1=fd:7 --upstream-ca \"$4\" -- "
         "sh -c '[ -e /proc/self/fd/7 ] && echo fd7=open || echo fd7=closed; curl -sS -H \"Authorization: Bearer $GH_TOKEN\" " +
             url + " | grep authorization'",
         "sh", s.dir + "/token", bin("cc-wrap"), s.dir + "/spec.json", s.dir + "/ca.pem"});
    INFO(fromfd.err);
    CHECK(fromfd.status == 0);
    CHECK(fromfd.out == "fd7=closed\nauthorization: Bearer " + k_secret + "\n");
    auto nofile = cc::test::run({bin("cc-wrap"), "--spec", s.dir + "/spec.json", "--credential",
                                 "GH_TOKEN@127.0.0.1=file:" + s.dir + "/absent", "--", "true"});
    CHECK(nofile.status == 2);
    CHECK(nofile.err.find("cc-wrap: --credential 'GH_TOKEN' file '" + s.dir +
                          "/absent': cannot read: No such file or directory\n") != std::string::npos);
    auto nofd = cc::test::run({bin("cc-wrap"), "--spec", s.dir + "/spec.json", "--credential", "GH_TOKEN@127.0.0.1=fd:99",
                               "--", "true"});
    CHECK(nofd.status == 2);
    CHECK(nofd.err.find("cc-wrap: --credential 'GH_TOKEN': fd:N needs an open descriptor number of 3 or more\n") !=
          std::string::npos);
    // The placeholder in another header: refused at the proxy, and a
    // violation event in cc-wrap's stream naming the host and the reason.
    auto ev = cc::test::run({bin("cc-wrap"), "--spec", s.dir + "/spec.json", "--events", "--credential",
                             "GH_TOKEN@127.0.0.1=file:" + s.dir + "/token", "--upstream-ca", s.dir + "/ca.pem", "--",
                             "sh", "-c", "curl -s -o /dev/null -w '%{http_code}' -H \"X-Token: $GH_TOKEN\" " + url});
    INFO(ev.out);
    CHECK(ev.status == 0);
    int violations = 0;
    for (std::size_t p = 0, q; p < ev.out.size(); p = q + 1) {
        q = ev.out.find('\n', p);
        if (q == std::string::npos) q = ev.out.size();
        auto j = json::parse(ev.out.substr(p, q - p), nullptr, false);
        if (!j.is_object()) continue;
        if (j.value("event", "") == "stdout") CHECK(j.dump().find("403") != std::string::npos);
        if (j.value("event", "") != "violation") continue;
        ++violations;
        CHECK(j.dump().find("\"target\":\"127.0.0.1:" + s.port + "\"") != std::string::npos);
        CHECK(j.dump().find("credential GH_TOKEN in header X-Token") != std::string::npos);
        CHECK(j.dump().find(k_secret) == std::string::npos);
    }
    CHECK(violations == 1);
    // A secret file inside the sandbox's view is refused before anything starts.
    spit(work + "/token", k_secret + "\n", 0600);
    auto bad = cc::test::run({bin("cc-wrap"), "--spec", s.dir + "/spec.json", "--credential",
                              "GH_TOKEN@127.0.0.1=file:" + work + "/token", "--", "true"});
    CHECK(bad.status == 2);
    CHECK(bad.err.find("cc-wrap: --credential file '" + work + "/token': is inside the sandbox's view (" + work) !=
          std::string::npos);
    // A hard link to the secret inside the bind: the secret file itself is
    // outside, but its other name is not.
    REQUIRE(::link((s.dir + "/token").c_str(), (work + "/token-link").c_str()) == 0);
    auto shown = cc::test::run({bin("cc-wrap"), "--spec", s.dir + "/spec.json", "--", "cat", work + "/token-link"});
    // What the link gives the command when nothing refuses it: the secret,
    // to a command of the same user (run by root, the sandbox is another
    // uid, which the file's mode 0600 keeps out).
    if (cc::test::is_root()) CHECK(shown.err.find("token-link: Permission denied") != std::string::npos);
    else CHECK(shown.out == k_secret + "\n");
    auto linked = cc::test::run({bin("cc-wrap"), "--spec", s.dir + "/spec.json", "--credential",
                                 "GH_TOKEN@127.0.0.1=file:" + s.dir + "/token", "--", "cat", work + "/token-link"});
    CHECK(linked.status == 2);
    CHECK(linked.out.empty());
    CHECK(linked.err.find("cc-wrap: --credential 'GH_TOKEN' file '" + s.dir +
                          "/token': has 2 hard links: another name may be inside the sandbox's view") != std::string::npos);
}

namespace {

// An origin posing as GitHub (api.github.com and github.com) for the request
// rules, its test CA trusted through --upstream-ca.
struct GitHub {
    Setup s;
    std::unique_ptr<Origin> gh;
    std::unique_ptr<Dns> dns;
    std::string port, log;
    GitHub() {
        ::mkdir((s.dir + "/gh").c_str(), 0755);
        make_origin_pki(s.dir + "/gh", "DNS:api.github.com,DNS:github.com");
        log = s.dir + "/gh.log";
        gh = std::make_unique<Origin>(
            "0", std::map<std::string, std::string>{{"ORIGIN_TLS_CERT", s.dir + "/gh/origin.pem"},
                                                    {"ORIGIN_TLS_KEY", s.dir + "/gh/origin.key"},
                                                    {"ORIGIN_LOG", log}});
        REQUIRE(gh->port != 0);
        port = std::to_string(gh->port);
        dns = std::make_unique<Dns>(std::map<std::string, std::string>{{"api.github.com", "127.0.0.1"},
                                                                        {"github.com", "127.0.0.1"}});
    }
    std::vector<std::string> args(std::vector<std::string> more) const {
        std::vector<std::string> a{"--no-baseline", "--allow", "*.github.com:*", "--allow", "github.com:*", "--allow",
                                   "127.0.0.1:*", "--dns-server", dns->server(), "--intercept", "api.github.com",
                                   "--intercept", "github.com", "--upstream-ca", s.dir + "/gh/ca.pem",
                                   "--ca-cert-out", s.dir + "/session-ca.pem"};
        a.insert(a.end(), more.begin(), more.end());
        return a;
    }
    cc::test::RunResult req(const Egress& eg, const std::string& method, const std::string& host, const std::string& path,
                            const std::string& body = "") const {
        std::vector<std::string> a{"--cacert", s.dir + "/session-ca.pem", "-x", "http://" + eg.http(), "-X", method,
                                   "-w", "\n%{http_code}", "https://" + host + ":" + port + path};
        if (!body.empty()) a.insert(a.end(), {"--data-binary", body});
        return curl(a);
    }
    std::string seen() const { return slurp(log); }
};

std::string refusal_rule(const cc::test::RunResult& r) {
    auto j = json::parse(r.out.substr(0, r.out.rfind('\n')), nullptr, false);
    return j.is_object() ? j.value("rule", std::string("?")) : "not json: " + r.out;
}

}  // namespace

TEST_CASE("egress intercept: merges, reviews and pushes are judged at the request, whichever client sends them") {
    GitHub g;
    std::string dir = g.s.dir;
    // Chat mode, the default policy: merging is ask, and with no approver ask is deny.
    Egress eg(g.args({}));
    INFO(eg.stderr_text());
    REQUIRE(eg.ready.contains("interceptCa"));
    // Reads go through (they reach the origin, which has no such page: 404).
    auto r = g.req(eg, "GET", "api.github.com", "/repos/o/r/pulls/7");
    CHECK(http_code(r) == "404");
    auto merge = g.req(eg, "PUT", "api.github.com", "/repos/o/r/pulls/7/merge");
    CHECK(http_code(merge) == "403");
    CHECK(refusal_rule(merge) == "requests.json rules[5] (publish_review_or_merge)");
    // The same merge spelt another way.
    auto sly = g.req(eg, "PUT", "api.github.com", "/repos/o/r/pulls/7/x/..//MERGE");
    CHECK(http_code(sly) == "403");
    auto gql = g.req(eg, "POST", "api.github.com", "/graphql",
                     R"({"query":"mutation { m: mergePullRequest(input:{pullRequestId:\"1\"}) { clientMutationId } }"})");
    CHECK(http_code(gql) == "403");
    CHECK(refusal_rule(gql) == "requests.json rules[15] (publish_review_or_merge)");
    auto query = g.req(eg, "POST", "api.github.com", "/graphql", R"({"query":"query { viewer { login } }"})");
    CHECK(http_code(query) == "200");  // the origin answers a POST: "got N bytes"
    CHECK(query.out.rfind("got 38 bytes", 0) == 0);
    // git push over HTTPS: refused whatever the policy; fetch goes through.
    auto push = g.req(eg, "GET", "github.com", "/o/r.git/info/refs?service=git-receive-pack");
    CHECK(http_code(push) == "403");
    CHECK(refusal_rule(push) == "requests.json rules[0] (push)");
    auto fetch = g.req(eg, "GET", "github.com", "/o/r.git/info/refs?service=git-upload-pack");
    CHECK(http_code(fetch) == "404");
    CHECK(eg.stop() == 0);
    // Only what was let through reached the origin.
    CHECK(g.seen() == "GET /repos/o/r/pulls/7\nPOST /graphql\nGET /o/r.git/info/refs?service=git-upload-pack\n");
    int refused = 0;
    for (const auto& l : eg.lines)
        if (l.value("proto", "") == "https" && l.value("decision", "") == "deny") {
            CHECK(l.contains("action"));
            ++refused;
        }
    CHECK(refused == 4);
}

TEST_CASE("egress intercept: the policy decides the request's class; an approver answers its asks; read-only modes only read") {
    GitHub g;
    std::string dir = g.s.dir;
    {
        // A policy that allows merging: the merge reaches the origin.
        spit(dir + "/allow-merge.json",
             R"({"version": 1, "rules": [{"action": "publish_review_or_merge", "decision": "allow"}]})");
        Egress eg(g.args({"--policy", dir + "/allow-merge.json"}));
        auto merge = g.req(eg, "PUT", "api.github.com", "/repos/o/r/pulls/7/merge");
        CHECK(http_code(merge) == "501");  // the origin's: it has no PUT
        CHECK(eg.stop() == 0);
        CHECK(g.seen() == "PUT /repos/o/r/pulls/7/merge\n");
    }
    {
        // Ask, with an approver that allows and writes down what it was asked.
        spit(dir + "/approver.sh", "#!/bin/sh\ncat >> " + dir + "/asked.jsonl\necho allow\n", 0755);
        Egress eg(g.args({"--approver", dir + "/approver.sh"}));
        auto merge = g.req(eg, "PUT", "api.github.com", "/repos/o/r/pulls/8/merge");
        CHECK(http_code(merge) == "501");
        CHECK(eg.stop() == 0);
        auto q = json::parse(slurp(dir + "/asked.jsonl"), nullptr, false);
        REQUIRE(q.is_object());
        CHECK(q["action"] == "publish_review_or_merge");
        CHECK(q["method"] == "PUT");
        CHECK(q["path"] == "/repos/o/r/pulls/8/merge");
        CHECK(q["host"] == "api.github.com");
    }
    {
        // Plan mode (the network allowed to it by the policy): reads only.
        spit(dir + "/plan.json", R"({"sessionId": "p", "workspaceId": "w", "mode": "plan"})");
        spit(dir + "/plan-net.json",
             R"({"version": 1, "rules": [{"action": "network_access", "modes": ["plan"], "decision": "allow"}]})");
        Egress eg(g.args({"--spec", dir + "/plan.json", "--policy", dir + "/plan-net.json"}));
        INFO(eg.stderr_text());
        auto get = g.req(eg, "GET", "api.github.com", "/repos/o/r");
        CHECK(http_code(get) == "404");
        auto post = g.req(eg, "POST", "api.github.com", "/graphql", R"({"query":"query { viewer { login } }"})");
        CHECK(http_code(post) == "403");
        CHECK(refusal_rule(post) == "read-only mode");
        CHECK(eg.stop() == 0);
    }
    CHECK(g.seen() == "PUT /repos/o/r/pulls/7/merge\nPUT /repos/o/r/pulls/8/merge\nGET /repos/o/r\n");
}

TEST_CASE("egress intercept: a real git push over HTTPS is refused at the proxy; without interception it reaches the host") {
    GitHub g;
    std::string dir = g.s.dir;
    std::string repo = dir + "/repo";
    auto git = [&](std::vector<std::string> args, const std::string& proxy, const std::string& ca) {
        std::vector<std::string> a{"git", "-C", repo, "-c", "http.proxy=http://" + proxy, "-c", "http.sslCAInfo=" + ca};
        a.insert(a.end(), args.begin(), args.end());
        cc::test::RunOptions o;
        o.env = {{"GIT_TERMINAL_PROMPT", "0"}, {"GIT_CONFIG_NOSYSTEM", "1"}, {"HOME", dir}};
        o.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy", "GIT_SSL_CAINFO", "SSL_CERT_FILE"};
        return cc::test::run(a, o);
    };
    REQUIRE(cc::test::run({"git", "init", "-q", repo}).status == 0);
    REQUIRE(cc::test::run({"git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
                           "-m", "x"}).status == 0);
    const std::string remote = "https://github.com:" + g.port + "/o/r.git";
    {
        // Without interception the push's first request reaches the host.
        Egress plain({"--no-baseline", "--allow", "github.com:*", "--allow", "127.0.0.1:*", "--dns-server", g.dns->server()});
        auto r = git({"push", remote, "HEAD:refs/heads/main"}, plain.http(), dir + "/gh/ca.pem");
        CHECK(r.status == 128);
        CHECK(plain.stop() == 0);
        CHECK(g.seen().find("GET /o/r.git/info/refs?service=git-receive-pack") != std::string::npos);
    }
    std::string before = g.seen();
    Egress eg(g.args({}));
    INFO(eg.stderr_text());
    auto r = git({"push", remote, "HEAD:refs/heads/main"}, eg.http(), dir + "/session-ca.pem");
    CHECK(r.status == 128);
    CHECK(r.err.find("The requested URL returned error: 403") != std::string::npos);
    // Fetching is not pushing: its request goes through.
    auto f = git({"ls-remote", remote}, eg.http(), dir + "/session-ca.pem");
    CHECK(f.status == 128);  // the origin is no git server: 404
    CHECK(eg.stop() == 0);
    CHECK(g.seen() == before + "GET /o/r.git/info/refs?service=git-upload-pack\n");
    const json* l = nullptr;
    for (const auto& x : eg.lines)
        if (x.value("proto", "") == "https" && x.value("decision", "") == "deny") l = &x;
    REQUIRE(l);
    CHECK((*l)["action"] == "push");
    CHECK((*l)["rule"] == "requests.json rules[0] (push)");
}

// Node's fetch ignores the proxy variables: without --capture it has no way
// out of the sandbox at all; with it, its connection is captured,
// intercepted like any other, and the origin gets the secret.
TEST_CASE("cc-wrap --credential --capture: Node's fetch, which ignores the proxy variables, gets the secret injected") {
    if (!cc::test::bwrap_works()) CC_SKIP("bubblewrap cannot create namespaces here");
    if (!cc::test::have_program("node")) CC_SKIP("node not installed");
    Setup s;
    ::chmod(s.dir.c_str(), 0755);
    ::chmod((s.dir + "/ca.pem").c_str(), 0644);
    spit(s.dir + "/spec.json",
         json{{"sessionId", "nf"}, {"workspaceId", "ws"}, {"egressAllowlist", {"127.0.0.1:" + s.port}}}.dump());
    const std::string fetch =
        "node -e 'fetch(\"https://127.0.0.1:" + s.port +
        "/headers\", {headers: {authorization: \"Bearer \" + process.env.GH_TOKEN}})"
        ".then(r => r.text()).then(t => console.log(t.split(\"\\n\").filter(l => l.startsWith(\"authorization\")).join()))"
        ".catch(e => console.log(\"failed:\", e.cause ? e.cause.code : e.message))'";
    std::vector<std::string> base = {bin("cc-wrap"), "--spec", s.dir + "/spec.json", "--credential",
                                     "GH_TOKEN@127.0.0.1=file:" + s.dir + "/token", "--upstream-ca", s.dir + "/ca.pem"};
    auto without = base;
    without.insert(without.end(), {"--", "sh", "-c", fetch});
    auto w = cc::test::run(without);
    INFO(w.err);
    CHECK(w.out == "failed: ECONNREFUSED\n");
    auto with = base;
    with.insert(with.end(), {"--capture", "--", "sh", "-c", fetch});
    auto r = cc::test::run(with);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.out == "authorization: Bearer " + k_secret + "\n");
    CHECK(s.origin_log().find("GET /headers") != std::string::npos);
}

// cc-egress holds the real credentials and the session CA's key in memory.
// Run by root for a sandbox, it runs as the sandbox's uid; no other process
// of that uid (a host process of the same user, or of nobody) may trace it
// or read its memory. First shown for a plain process of the same uid.
TEST_CASE("egress intercept: no process of cc-egress's own uid can trace it or read its memory") {
    using cc::test::run;
    const bool root = ::geteuid() == 0;
    std::vector<std::string> as;  // run as the unprivileged uid both sides share
    if (root) as = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
    auto cmd = [&](std::vector<std::string> c) {
        c.insert(c.begin(), as.begin(), as.end());
        return c;
    };
    auto attach = [&](pid_t pid) { return cc::test::ptrace_attach_from(pid, as); };

    // Without cc-egress: a process of the uid traces another and reads its memory.
    auto sleeper_argv = cmd({"sleep", "30"});
    bp::child sleeper(bp::search_path(sleeper_argv[0]), std::vector<std::string>(sleeper_argv.begin() + 1, sleeper_argv.end()));
    for (int i = 0; i < 200 && slurp("/proc/" + std::to_string(sleeper.id()) + "/comm") != "sleep\n"; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(slurp("/proc/" + std::to_string(sleeper.id()) + "/comm") == "sleep\n");
    CHECK(attach(sleeper.id()) == "attached\n");
    ::kill(sleeper.id(), SIGKILL);
    sleeper.wait();

    std::string dir = cc::test::scratch_dir() + "/private-" + std::to_string(::getpid());
    ::mkdir(dir.c_str(), 0700);
    spit(dir + "/token", k_secret + "\n", 0600);
    if (root) REQUIRE(run({"chown", "-R", "65534:65534", dir}).status == 0);
    Egress eg({"--no-baseline", "--allow", "api.one.test", "--credential", "GH_TOKEN@api.one.test=file:" + dir + "/token"},
              {}, as);
    REQUIRE(eg.ready.value("event", "") == "ready");
    const std::string pid = std::to_string(eg.ready["pid"].get<long>());
    CHECK(attach(static_cast<pid_t>(eg.ready["pid"].get<long>())) == "Operation not permitted\n");
    for (const char* what : {"/environ", "/mem", "/maps"}) {
        auto r = run(cmd({"/bin/cat", "/proc/" + pid + what}));
        INFO(what);
        CHECK(r.status == 1);
        CHECK(r.err == "/bin/cat: /proc/" + pid + what + ": Permission denied\n");
    }
    CHECK(eg.stop() == 0);
}
