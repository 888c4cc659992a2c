// cc-egress with real clients: curl through the HTTP proxy (absolute-form and
// CONNECT to a local TLS server) and SOCKS5, a Python HTTP/1.1 origin, a DNS
// responder run by this test (so a name can resolve to 169.254.169.254), raw
// sockets for malformed requests. The fd inbox and the proxy's lifecycle are
// in test_egress_lifecycle.cpp, timeouts, credentials and concurrent loops in
// test_egress_serving.cpp (the same test executable).

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

#include "egress_fixture.hpp"

using namespace egress_fixture;

TEST_CASE("egress: bad input is refused with exit 2 naming it, nothing listens") {
    auto r = cc::test::run({bin("cc-egress"), "--allow", "foo*.com"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("'foo*.com'"));
    CHECK(r.out.empty());
    r = cc::test::run({bin("cc-egress"), "--allow", "*.*.example.com"});
    CHECK(r.status == 2);
    r = cc::test::run({bin("cc-egress"), "--deny", "*"});
    CHECK(r.status == 2);
    r = cc::test::run({bin("cc-egress"), "--spec", "-"}, std::string(R"({"sessionId":"s","workspaceId":"w","bogus":1})"));
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("bogus"));
    r = cc::test::run({bin("cc-egress"), "--spec", "-", "--exit-with-stdin"}, std::string("{}"));
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("--exit-with-stdin"));
    r = cc::test::run({bin("cc-egress"), "--network", "maybe"});
    CHECK(r.status == 2);
    r = cc::test::run({bin("cc-egress"), "--allow-file", "/nonexistent/x.txt"});
    CHECK(r.status == 2);  // an unreadable input file is bad input
    CHECK_THAT(r.err, Catch::Contains("/nonexistent/x.txt"));
    CHECK(r.out.empty());
    for (auto [opt, val] : {std::pair{"--header-timeout", "-1"}, std::pair{"--idle-timeout", "never"},
                            std::pair{"--threads", "100"}, std::pair{"--auth-token-file", "/nonexistent/token"}}) {
        r = cc::test::run({bin("cc-egress"), "--no-baseline", opt, val});
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains(opt));
        CHECK(r.out.empty());
    }
}

TEST_CASE("egress: --check applies the rules without listening") {
    auto r = cc::test::run({bin("cc-egress"), "--check", "api.github.com:443", "METADATA.GOOGLE.INTERNAL.", "0x7f.1",
                            "169.254.43518", "bedrock.us-east-1.amazonaws.com", "bedrock.x.y.amazonaws.com",
                            "--allow", "127.0.0.1:*", "--allow", "metadata.google.internal"});
    CHECK(r.status == 1);  // something was denied
    std::vector<json> lines;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
    REQUIRE(lines.size() == 6);
    CHECK(lines[0]["decision"] == "allow");
    CHECK(lines[1]["decision"] == "deny");
    CHECK_THAT(lines[1]["rule"].get<std::string>(), Catch::Contains("always-deny"));
    CHECK(lines[2]["decision"] == "allow");
    CHECK(lines[2]["canonical"] == "127.0.0.1");
    CHECK(lines[3]["decision"] == "deny");
    CHECK(lines[3]["canonical"] == "169.254.169.254");
    CHECK(lines[4]["decision"] == "allow");
    CHECK(lines[5]["decision"] == "deny");

    Dns dns({{"rebind.test", "169.254.169.254"}, {"ok.test", "127.0.0.1"}});
    r = cc::test::run({bin("cc-egress"), "--check", "rebind.test", "ok.test", "--resolve", "--allow", "*.test:*",
                       "--dns-server", dns.server()});
    std::istringstream in2(r.out);
    std::string a, b;
    std::getline(in2, a);
    std::getline(in2, b);
    CHECK(json::parse(a)["decision"] == "deny");
    CHECK(json::parse(a)["addresses"][0] == "169.254.169.254");
    CHECK(json::parse(b)["decision"] == "deny");  // 127.0.0.1 is non-public and not named
}

TEST_CASE("egress: curl through the HTTP proxy, absolute-form and CONNECT") {
    Origin origin;
    REQUIRE(origin.port);
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    REQUIRE(eg.ready["event"] == "ready");
    CHECK(eg.ready["network"] == "on");
    std::string proxy = "http://" + eg.http();

    auto r = curl({"-x", proxy, origin.url("/hello")});
    CHECK(r.status == 0);
    CHECK(r.out == "hello\n");
    // Keep-alive: two requests on one client connection, a chunked response.
    r = curl({"-x", proxy, origin.url("/hello"), origin.url("/chunked")});
    CHECK(r.out == "hello\na\nb\nc\n");
    // The origin sees Host from the URI and no proxy headers.
    r = curl({"-x", "http://u:p@" + eg.http(), "-H", "Host: evil.test", origin.url("/headers")});
    CHECK_THAT(r.out, Catch::Contains("host: 127.0.0.1:" + std::to_string(origin.port)));
    CHECK_THAT(r.out, !Catch::Contains("proxy-authorization"));
    CHECK_THAT(r.out, !Catch::Contains("evil.test"));
    // Request bodies: Content-Length and chunked.
    std::string body_file = cc::test::scratch_dir() + "/body.bin";
    std::ofstream(body_file) << std::string(200000, 'b');
    r = curl({"-x", proxy, "--data-binary", "@" + body_file, origin.url("/echo")});
    CHECK(r.out == "got 200000 bytes\n");
    r = curl({"-x", proxy, "-H", "Transfer-Encoding: chunked", "--data-binary", "0123456789", origin.url("/echo")});
    CHECK(r.out == "got 10 bytes\n");
    // A large body both ways through splice.
    r = curl({"-x", proxy, "-o", "/dev/null", "-w", "%{size_download}", origin.url("/size/5000000")});
    CHECK(r.out == "5000000");
    // CONNECT tunnel to the same origin.
    r = curl({"-p", "-x", proxy, origin.url("/hello")});
    CHECK(r.out == "hello\n");
    // Denied: not in the allowlist (absolute-form 403, CONNECT refused with curl 56).
    r = curl({"-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://localhost:" + std::to_string(origin.port) + "/hello"});
    CHECK(http_code(r) == "403");
    r = curl({"-p", "-x", proxy, "http://example.com:80/"});
    CHECK(r.status == 56);
    CHECK_THAT(r.err, Catch::Contains("403"));
    // Metadata address written the C library's way.
    r = curl({"-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://169.254.169.254/latest/meta-data/"});
    CHECK(http_code(r) == "403");

    CHECK(eg.stop() == 0);
    const json* denied = eg.find("localhost", "http");
    REQUIRE(denied);
    CHECK((*denied)["decision"] == "deny");
    CHECK((*denied)["rule"] == "no allow entry");
    const json* ok = eg.find("127.0.0.1", "http-connect");
    REQUIRE(ok);
    CHECK((*ok)["decision"] == "allow");
    CHECK((*ok)["bytesDown"].get<int>() > 0);
    CHECK((*ok)["port"] == origin.port);
    CHECK(eg.find("169.254.169.254")->at("rule").get<std::string>().find("always-deny") != std::string::npos);

    // What was written matches the published schemas (share/cc/schema/egress-*.schema.json).
    if (!cc::test::have_program("python3")) return;
    std::string lines_file = cc::test::scratch_dir() + "/egress-lines.jsonl";
    {
        std::ofstream f(lines_file);
        f << eg.ready.dump() << "\n";
        for (const auto& l : eg.lines) f << l.dump() << "\n";
    }
    std::string script =
        "import json,sys,jsonschema\n"
        "d=sys.argv[1]\n"
        "ready=jsonschema.Draft202012Validator(json.load(open(d+'/egress-ready.schema.json')))\n"
        "conn=jsonschema.Draft202012Validator(json.load(open(d+'/egress-connection.schema.json')))\n"
        "lines=[json.loads(l) for l in open(sys.argv[2])]\n"
        "ready.validate(lines[0])\n"
        "[conn.validate(l) for l in lines[1:]]\n"
        "print(len(lines))\n";
    auto v = cc::test::run({"python3", "-c", script, cc::test::source_dir() + "/share/cc/schema", lines_file});
    if (v.err.find("No module named 'jsonschema'") != std::string::npos) return;
    CHECK(v.status == 0);
    CHECK(v.err == "");
}

TEST_CASE("egress: raw IP-literal spellings through the proxy") {
    Origin origin;
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    std::string port = std::to_string(origin.port);
    for (const char* host : {"2130706433", "0x7f.1", "0177.0.0.1", "127.1", "[::ffff:127.0.0.1]"}) {
        INFO(host);
        std::string req = std::string("GET http://") + host + ":" + port + "/hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        std::string resp = talk(port_of(eg.http()), req);
        CHECK(resp.rfind("HTTP/1.1 200", 0) == 0);
        CHECK_THAT(resp, Catch::EndsWith("hello\n"));
    }
    for (const char* host : {"2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518", "[::ffff:a9fe:a9fe]",
                             "127.0.0.2", "[fd00:ec2::254]"}) {
        INFO(host);
        std::string req = std::string("CONNECT ") + host + ":80 HTTP/1.1\r\n\r\n";
        std::string resp = talk(port_of(eg.http()), req);
        CHECK(resp.rfind("HTTP/1.1 403", 0) == 0);
        CHECK_THAT(resp, Catch::Contains("error=destination_ip_prohibited"));
    }
    CHECK(eg.stop() == 0);
}

TEST_CASE("egress: SOCKS5 with curl, and the protocol's own refusals") {
    Origin origin;
    Egress eg({"--allow", "127.0.0.1:*", "--allow", "metadata.google.internal", "--no-baseline"});
    auto r = curl({"--socks5-hostname", eg.socks(), origin.url("/hello")});
    CHECK(r.out == "hello\n");
    r = curl({"--socks5", eg.socks(), origin.url("/size/300000"), "-o", "/dev/null", "-w", "%{size_download}"});
    CHECK(r.out == "300000");
    r = curl({"--socks5-hostname", eg.socks(), "http://evil.test/"});
    CHECK(r.status == 97);
    CHECK_THAT(r.err, Catch::Contains("(2)"));
    r = curl({"--socks5-hostname", eg.socks(), "http://Metadata.Google.Internal./"});
    CHECK(r.status == 97);

    std::uint16_t sp = port_of(eg.socks());
    // BIND and UDP ASSOCIATE: command not supported.
    std::string bind = std::string("\x05\x01\x00", 3) + std::string("\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50", 10);
    CHECK(talk(sp, bind).substr(2, 2) == std::string("\x05\x07", 2));
    std::string udp = std::string("\x05\x01\x00", 3) + std::string("\x05\x03\x00\x01\x7f\x00\x00\x01\x00\x50", 10);
    CHECK(talk(sp, udp).substr(2, 2) == std::string("\x05\x07", 2));
    // Unknown address type: 08.
    std::string atyp = std::string("\x05\x01\x00", 3) + std::string("\x05\x01\x00\x07\x00\x00", 6);
    CHECK(talk(sp, atyp).substr(2, 2) == std::string("\x05\x08", 2));
    // Only user/pass offered: 05 FF.
    CHECK(talk(sp, std::string("\x05\x01\x02", 3)) == std::string("\x05\xff", 2));
    // Truncated greeting, then EOF: closed without an answer, and the proxy lives on.
    CHECK(talk(sp, std::string("\x05\x03\x00", 3), true).empty());
    CHECK(talk(sp, std::string("\x04\x01\x00\x50", 4), true).empty());
    r = curl({"--socks5-hostname", eg.socks(), origin.url("/hello")});
    CHECK(r.out == "hello\n");
    CHECK(eg.stop() == 0);
    const json* d = eg.find("evil.test", "socks5");
    REQUIRE(d);
    CHECK((*d)["decision"] == "deny");
}

TEST_CASE("egress: DNS rebinding and resolution failures, with a resolver the test controls") {
    Origin origin;
    Dns dns({{"rebind.test", "169.254.169.254"}, {"private.test", "10.1.2.3"}, {"local.test", "127.0.0.1"}});
    Egress eg({"--allow", "*.test:*", "--allow", "127.0.0.1:*", "--no-baseline", "--dns-server", dns.server()});
    std::string proxy = "http://" + eg.http();
    std::string port = std::to_string(origin.port);
    auto r = curl({"-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://rebind.test:" + port + "/hello"});
    CHECK(http_code(r) == "403");
    r = curl({"-p", "-x", proxy, "http://private.test:" + port + "/hello"});
    CHECK(r.status == 56);
    r = curl({"--socks5-hostname", eg.socks(), "http://rebind.test:" + port + "/hello"});
    CHECK(r.status == 97);
    // A name that resolves to an address the allowlist names: dialled as resolved.
    r = curl({"-x", proxy, "http://local.test:" + port + "/hello"});
    CHECK(r.out == "hello\n");
    // NXDOMAIN: 502 dns_error from the HTTP proxy, host unreachable from SOCKS5.
    std::string resp = talk(port_of(eg.http()), "CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n");
    CHECK(resp.rfind("HTTP/1.1 502", 0) == 0);
    CHECK_THAT(resp, Catch::Contains("error=dns_error"));
    r = curl({"--socks5-hostname", eg.socks(), "http://nowhere.test/"});
    CHECK(r.status == 97);
    CHECK(eg.stop() == 0);
    const json* rb = eg.find("rebind.test");
    REQUIRE(rb);
    CHECK((*rb)["decision"] == "deny");
    CHECK_THAT((*rb)["reason"].get<std::string>(), Catch::Contains("169.254.169.254"));
    const json* pv = eg.find("private.test");
    REQUIRE(pv);
    CHECK_THAT((*pv)["rule"].get<std::string>(), Catch::Contains("non-public"));
    const json* lc = eg.find("local.test");
    REQUIRE(lc);
    CHECK((*lc)["address"] == "127.0.0.1");
}

TEST_CASE("egress: HTTPS through CONNECT to a local TLS server, and the SNI check") {
    if (!cc::test::have_program("openssl")) CC_SKIP("openssl not installed");
    std::string dir = cc::test::scratch_dir();
    auto gen = cc::test::run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                              "-days", "1", "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem"});
    REQUIRE(gen.status == 0);
    std::uint16_t tls_port = free_port();
    bp::child server(bp::search_path("openssl"), "s_server", "-accept", "127.0.0.1:" + std::to_string(tls_port),
                     "-cert", dir + "/cert.pem", "-key", dir + "/key.pem", "-www", "-quiet",
                     bp::std_out > bp::null, bp::std_err > bp::null, bp::std_in < bp::null);
    REQUIRE(wait_listening(tls_port));
    Egress eg({"--allow", "127.0.0.1:*", "--allow", "good.test:*", "--no-baseline"});
    std::string proxy = "http://" + eg.http();
    std::string p = std::to_string(tls_port);
    auto r = curl({"-k", "-x", proxy, "https://127.0.0.1:" + p + "/"});
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("s_server"));
    // CONNECT to an allowed address while the ClientHello names another host.
    r = curl({"-k", "-x", proxy, "--connect-to", "evil.test:" + p + ":127.0.0.1:" + p, "https://evil.test:" + p + "/"});
    CHECK(r.status == 35);  // curl: the TLS handshake was cut (SSL connect error)
    CHECK(eg.stop() == 0);
    ::kill(server.id(), SIGTERM);
    server.wait();
    bool saw = false;
    for (const auto& l : eg.lines)
        if (l.value("sni", std::string()) == "evil.test") {
            saw = true;
            CHECK(l["decision"] == "deny");
            CHECK_THAT(l["rule"].get<std::string>(), Catch::Contains("tls sni"));
        }
    CHECK(saw);
}

TEST_CASE("egress: malformed HTTP requests get 400 / 431 and the proxy lives on") {
    Origin origin;
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    std::uint16_t hp = port_of(eg.http());
    CHECK(talk(hp, "CONNECT nohostport HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
    CHECK(talk(hp, "CONNECT [::1 HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
    CHECK(talk(hp, "GARBAGE\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
    CHECK(talk(hp, "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
    CHECK(talk(hp, "GET https://127.0.0.1/ HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
    std::string smuggle = "POST " + origin.url("/echo") +
                          " HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    CHECK(talk(hp, smuggle).rfind("HTTP/1.1 400", 0) == 0);
    std::string big = "GET " + origin.url("/hello") + " HTTP/1.1\r\nX-Big: " + std::string(40000, 'a') + "\r\n\r\n";
    CHECK(talk(hp, big).rfind("HTTP/1.1 431", 0) == 0);
    CHECK(talk(hp, "GET http://127.0.0.1", true).empty());  // truncated head, then EOF
    // A NUL in the host is refused, never read up to the NUL as an allowed one.
    CHECK(talk(hp, std::string("CONNECT 127.0.0.1\0evil:80 HTTP/1.1\r\n\r\n", 38)).rfind("HTTP/1.1 400", 0) == 0);
    CHECK(talk(hp, std::string("CONNECT [::1\0x]:80 HTTP/1.1\r\n\r\n", 31)).rfind("HTTP/1.1 400", 0) == 0);
    auto r = curl({"-x", "http://" + eg.http(), origin.url("/hello")});
    CHECK(r.out == "hello\n");
    CHECK(eg.stop() == 0);
}

// One byte that is not UTF-8 in a name the client chose used to end the
// whole process (the connection line's writer threw in a destructor): every
// tunnel of the session went, with its log lines. Each spelling is refused,
// the line keeps the bytes ({"bytes": base64}), and the proxy serves on.
TEST_CASE("egress: a host name that is not UTF-8 is refused and the proxy serves on") {
    // The writer nlohmann gives would throw on this name.
    CHECK_THROWS(json{{"host", "ex\xff" "ample.com"}}.dump());
    Origin origin;
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    std::uint16_t hp = port_of(eg.http()), sp = port_of(eg.socks());
    std::string answer = talk(hp, "CONNECT ex\xff" "ample.com:443 HTTP/1.1\r\nHost: ex\xff" "ample.com:443\r\n\r\n");
    INFO(answer << eg.stderr_text());
    CHECK(answer.rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
    CHECK(answer.find("\r\n\r\ncc-egress: bad CONNECT target\n") != std::string::npos);
    CHECK(curl({"-x", "http://" + eg.http(), origin.url("/hello")}).out == "hello\n");
    answer = talk(hp, "GET http://caf\xe9.example/ HTTP/1.1\r\nHost: caf\xe9.example\r\n\r\n");
    CHECK(answer.rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
    // SOCKS5 CONNECT to a domain name of 10 bytes, one of them 0xff: 01
    // (general failure: names are UTF-8 or refused), and the proxy lives on.
    std::string socks = std::string("\x05\x01\x00", 3) + std::string("\x05\x01\x00\x03\x0a", 5) + "ex\xff" "mple.co" +
                        std::string("\x01\xbb", 2);
    CHECK(talk(sp, socks) == std::string("\x05\x00\x05\x01\x00\x01\x00\x00\x00\x00\x00\x00", 12));
    CHECK(curl({"--socks5-hostname", eg.socks(), origin.url("/hello")}).out == "hello\n");
    CHECK(eg.stop() == 0);
    // Every line is there: three refusals, two allowed requests; the CONNECT
    // target as its bytes.
    std::vector<std::string> bytes;
    int denied = 0, allowed = 0;
    for (const auto& l : eg.lines) {
        if (l.value("event", "") != "connection") continue;
        (l["decision"] == "deny" ? denied : allowed)++;
        if (l.contains("host") && l["host"].is_object()) bytes.push_back(l["host"]["bytes"].get<std::string>());
    }
    CHECK(denied == 3);
    CHECK(allowed == 2);
    CHECK(bytes == std::vector<std::string>{"ZXj/YW1wbGUuY29tOjQ0Mw=="});  // base64 of "ex\xffample.com:443"
}

TEST_CASE("egress: network off still listens and refuses everything; policy deny turns it off") {
    Origin origin;
    std::string dir = cc::test::scratch_dir();
    {
        std::ofstream(dir + "/spec.json") << R"({"sessionId":"s-off","workspaceId":"w","networkEnabled":false,"egressAllowlist":["127.0.0.1:*"]})";
        Egress eg({"--spec", dir + "/spec.json", "--allow", "127.0.0.1:*"});
        CHECK(eg.ready["network"] == "off");
        CHECK(eg.ready["sessionId"] == "s-off");
        auto r = curl({"-x", "http://" + eg.http(), "-o", "/dev/null", "-w", "%{http_code}", origin.url("/hello")});
        CHECK(http_code(r) == "403");
        r = curl({"--socks5-hostname", eg.socks(), origin.url("/hello")});
        CHECK(r.status == 97);
        CHECK(eg.stop() == 0);
        REQUIRE(eg.find("127.0.0.1", "http"));
        CHECK(eg.find("127.0.0.1", "http")->at("rule") == "network off");
    }
    {
        std::ofstream(dir + "/spec2.json") << R"({"sessionId":"s-on","workspaceId":"w","egressAllowlist":["127.0.0.1:*"]})";
        std::ofstream(dir + "/policy.json") << R"({"version":1,"rules":[{"action":"network_access","decision":"deny","reason":"offline task"}]})";
        Egress eg({"--spec", dir + "/spec2.json", "--policy", dir + "/policy.json"});
        CHECK(eg.ready["network"] == "off");
        CHECK(eg.ready["networkRule"]["decision"] == "deny");
        CHECK(eg.stop() == 0);
    }
    {
        // The spec's egressAllowlist is honoured end to end.
        Egress eg({"--spec", dir + "/spec2.json", "--no-baseline"});
        CHECK(eg.ready["network"] == "on");
        auto r = curl({"-x", "http://" + eg.http(), origin.url("/hello")});
        CHECK(r.out == "hello\n");
        CHECK(eg.stop() == 0);
    }
}

TEST_CASE("egress: no descriptors are left after 1,000 connections close") {
    Origin origin;
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    pid_t pid = eg.child.id();
    std::uint16_t hp = port_of(eg.http()), sp = port_of(eg.socks());
    // Warm up (the pipe pool and the resolver thread exist after the first tunnel).
    talk(hp, "CONNECT 127.0.0.1:" + std::to_string(origin.port) + " HTTP/1.1\r\n\r\n", true);
    ::usleep(200000);
    int before = count_fds(pid);
    std::string connect = "CONNECT 127.0.0.1:" + std::to_string(origin.port) + " HTTP/1.1\r\n\r\n";
    std::string socks = std::string("\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01", 11);
    socks += static_cast<char>(origin.port >> 8);
    socks += static_cast<char>(origin.port & 0xff);
    for (int i = 0; i < 1000; ++i) {
        switch (i % 4) {
        case 0: talk(hp, connect, true); break;
        case 1: talk(sp, socks, true); break;
        case 2: talk(hp, "CONNECT evil.test:443 HTTP/1.1\r\n\r\n"); break;
        default: talk(hp, "GARBAGE\r\n\r\n"); break;
        }
    }
    int after = -1;
    for (int i = 0; i < 50; ++i) {  // the last tunnels may still be closing
        after = count_fds(pid);
        if (after <= before) break;
        ::usleep(100000);
    }
    CHECK(after <= before);
    CHECK(eg.stop() == 0);
    CHECK(eg.lines.size() >= 1000);
}
