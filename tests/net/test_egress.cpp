// cc-egress with real clients: curl through the HTTP proxy (absolute-form and
// CONNECT to a local TLS server) and SOCKS5, a Python HTTP/1.1 origin, a DNS
// responder run by this test (so a name can resolve to 169.254.169.254), raw
// sockets for malformed requests, SCM_RIGHTS for the fd inbox.

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

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

TEST_CASE("egress: listening sockets handed over the fd inbox serve like the TCP ones") {
    Origin origin;
    std::string dir = cc::test::scratch_dir();
    std::string inbox = dir + "/inbox.sock";
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--fd-inbox", inbox, "--unix-dir", dir});
    REQUIRE(eg.ready["fdInbox"] == inbox);
    CHECK(eg.ready["httpUnix"] == dir + "/http.sock");
    CHECK(eg.ready["socksUnix"] == dir + "/socks.sock");
    // Two listening sockets made here (cc-wrap makes them inside the sandbox's
    // network namespace), passed with SCM_RIGHTS and a JSON payload.
    auto listen_pair = [](int* fds, std::uint16_t* ports) {
        for (int i = 0; i < 2; ++i) {
            fds[i] = ::socket(AF_INET, SOCK_STREAM, 0);
            ports[i] = bind_loopback(fds[i]);
            REQUIRE(ports[i] != 0);
            REQUIRE(::listen(fds[i], 16) == 0);
        }
    };
    // One message; the reply line. With `keep`, the connection stays open
    // and its descriptor is stored there.
    auto send_inbox = [&](const std::string& payload, const int* fds, int nfds, int* keep = nullptr) {
        int u = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un un{};
        un.sun_family = AF_UNIX;
        std::strcpy(un.sun_path, inbox.c_str());
        REQUIRE(::connect(u, reinterpret_cast<sockaddr*>(&un), sizeof un) == 0);
        alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
        iovec iov{const_cast<char*>(payload.data()), payload.size()};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        if (nfds) {
            msg.msg_control = control;
            msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
            cmsghdr* cm = CMSG_FIRSTHDR(&msg);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
            std::memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
        }
        REQUIRE(::sendmsg(u, &msg, 0) == static_cast<ssize_t>(payload.size()));
        std::string reply;
        char c;
        while (::read(u, &c, 1) == 1 && c != '\n') reply += c;
        if (keep) *keep = u;
        else ::close(u);
        return json::parse(reply);
    };
    int fds[2];
    std::uint16_t ports[2];
    listen_pair(fds, ports);
    auto bad = send_inbox(R"({"http":[5]})", fds, 2);
    CHECK(bad["ok"] == false);
    CHECK_THAT(bad["error"].get<std::string>(), Catch::Contains("index"));
    auto good = send_inbox(R"({"http":[0],"socks":[1]})", fds, 2);
    CHECK(good["ok"] == true);
    ::close(fds[0]);
    ::close(fds[1]);
    auto r = curl({"-x", "http://127.0.0.1:" + std::to_string(ports[0]), origin.url("/hello")});
    CHECK(r.out == "hello\n");
    // "hold": listeners live as long as the sender's connection (cc-wrap holds
    // it for the sandbox's lifetime), so a session proxy serving many launches
    // does not keep listeners of namespaces that are gone.
    {
        int held[2];
        std::uint16_t held_ports[2];
        listen_pair(held, held_ports);
        int u = -1;
        CHECK(send_inbox(R"({"http":[0],"socks":[1],"hold":true})", held, 2, &u)["ok"] == true);
        ::close(held[0]);
        ::close(held[1]);
        auto h = curl({"-x", "http://127.0.0.1:" + std::to_string(held_ports[0]), origin.url("/hello")});
        CHECK(h.out == "hello\n");
        ::close(u);  // the sender goes: cc-egress closes both listeners
        bool closed = false;
        for (int i = 0; i < 200 && !closed; ++i) {
            int probe = connect_to(held_ports[1]);
            closed = probe < 0;
            if (probe >= 0) ::close(probe);
            if (!closed) ::usleep(10000);
        }
        CHECK(closed);
    }
    // "events": the connection lines of these listeners come back on the
    // held connection after the reply; once the sender shuts down its side,
    // the listeners close and so, after the last line, does the connection.
    {
        int held[2];
        std::uint16_t held_ports[2];
        listen_pair(held, held_ports);
        auto lonely = send_inbox(R"({"http":[0],"socks":[1],"events":true})", held, 2);
        CHECK(lonely["ok"] == false);
        CHECK_THAT(lonely["error"].get<std::string>(), Catch::Contains("'events' needs 'hold'"));
        int u = -1;
        CHECK(send_inbox(R"({"http":[0],"socks":[1],"hold":true,"events":true})", held, 2, &u)["ok"] == true);
        ::close(held[0]);
        ::close(held[1]);
        CHECK(curl({"-x", "http://127.0.0.1:" + std::to_string(held_ports[0]), origin.url("/hello")}).out == "hello\n");
        CHECK(curl({"--socks5-hostname", "127.0.0.1:" + std::to_string(held_ports[1]), "http://evil.test/"}).status == 97);
        ::shutdown(u, SHUT_WR);
        std::string back;
        bool eof = false;
        for (int i = 0; i < 500 && !eof; ++i) {
            pollfd p{u, POLLIN, 0};
            if (::poll(&p, 1, 10) <= 0) continue;
            char buf[4096];
            ssize_t n = ::read(u, buf, sizeof buf);
            if (n <= 0) eof = true;
            else back.append(buf, static_cast<std::size_t>(n));
        }
        ::close(u);
        CHECK(eof);
        std::vector<json> lines;
        std::istringstream in(back);
        for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
        REQUIRE(lines.size() == 2);
        CHECK(lines[0]["event"] == "connection");
        CHECK(lines[0]["decision"] == "allow");
        CHECK(lines[1]["host"] == "evil.test");
        CHECK(lines[1]["decision"] == "deny");
        CHECK(lines[1]["proto"] == "socks5");
    }
    // A sender still holding its events connection when cc-egress stops: it
    // has the refused connection's line, cc-egress exits 0 and closes it.
    int still = -1;
    {
        int held[2];
        std::uint16_t held_ports[2];
        listen_pair(held, held_ports);
        CHECK(send_inbox(R"({"http":[0],"socks":[1],"hold":true,"events":true})", held, 2, &still)["ok"] == true);
        ::close(held[0]);
        ::close(held[1]);
        CHECK(curl({"--socks5-hostname", "127.0.0.1:" + std::to_string(held_ports[1]), "http://evil.test/"}).status == 97);
    }
    r = curl({"--socks5-hostname", "127.0.0.1:" + std::to_string(ports[1]), origin.url("/hello")});
    CHECK(r.out == "hello\n");
    r = curl({"--socks5-hostname", "127.0.0.1:" + std::to_string(ports[1]), "http://evil.test/"});
    CHECK(r.status == 97);
    // The Unix socket listeners speak the same protocols.
    r = curl({"--unix-socket", dir + "/http.sock", "-p", "-x", "http://proxy", origin.url("/hello")});
    CHECK(eg.stop() == 0);
    {
        std::string rest;
        char buf[4096];
        ssize_t n;
        while ((n = ::read(still, buf, sizeof buf)) > 0) rest.append(buf, static_cast<std::size_t>(n));
        CHECK(n == 0);  // closed, not left hanging
        CHECK_THAT(rest, Catch::Contains("evil.test"));
        ::close(still);
    }
    CHECK(::access((dir + "/http.sock").c_str(), F_OK) != 0);  // removed at exit
    CHECK(eg.find("evil.test", "socks5"));
}

TEST_CASE("egress: --exit-with-stdin stops when the parent's pipe closes") {
    Egress eg({"--exit-with-stdin", "--no-baseline"});
    REQUIRE(eg.ready["event"] == "ready");
    eg.in.pipe().close();
    eg.child.wait();
    CHECK(eg.child.exit_code() == 0);
    CHECK_THAT(eg.stderr_text(), Catch::Contains("stdin closed"));
}

TEST_CASE("egress: SIGTERM with tunnels open closes them, logs them and exits 0") {
    Origin origin;
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    std::vector<int> open;
    for (int i = 0; i < 20; ++i) {
        int fd = connect_to(port_of(eg.http()));
        std::string req = "CONNECT 127.0.0.1:" + std::to_string(origin.port) + " HTTP/1.1\r\n\r\n";
        (void)!::write(fd, req.data(), req.size());
        char buf[64];
        CHECK(::read(fd, buf, sizeof buf) > 0);
        open.push_back(fd);
    }
    CHECK(eg.stop() == 0);
    CHECK(eg.lines.size() == 20);
    for (int fd : open) {
        char c;
        CHECK(::read(fd, &c, 1) <= 0);  // closed by the proxy
        ::close(fd);
    }
}

TEST_CASE("egress: a listener made inside a fresh network namespace reaches out only through the inbox") {
    if (!cc::test::is_root()) CC_SKIP("needs root to create a network namespace");
    Origin origin;
    std::string dir = cc::test::scratch_dir();
    std::string inbox = dir + "/netns-inbox.sock";
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--fd-inbox", inbox});
    REQUIRE(eg.ready["event"] == "ready");
    std::string out_path = dir + "/netns-curl.out";
    std::string target = origin.url("/hello");
    std::string payload = R"({"http":[0]})";
    std::string proxy_url;  // filled in the child, so build argv there from fixed buffers
    char proxy_buf[64];
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    std::strcpy(un.sun_path, inbox.c_str());
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // Child: only system calls from here on.
        if (::unshare(CLONE_NEWNET) != 0) ::_exit(10);
        int s = ::socket(AF_INET, SOCK_DGRAM, 0);
        ifreq ifr{};
        std::strcpy(ifr.ifr_name, "lo");
        ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
        if (::ioctl(s, SIOCSIFFLAGS, &ifr) != 0) ::_exit(11);
        ::close(s);
        // The origin lives in the parent namespace: unreachable directly.
        int direct = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in o{};
        o.sin_family = AF_INET;
        o.sin_port = htons(origin.port);
        o.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(direct, reinterpret_cast<sockaddr*>(&o), sizeof o) == 0) ::_exit(12);
        int l = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 16) != 0) ::_exit(13);
        socklen_t al = sizeof a;
        ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &al);
        int u = ::socket(AF_UNIX, SOCK_STREAM, 0);
        if (::connect(u, reinterpret_cast<sockaddr*>(&un), sizeof un) != 0) ::_exit(14);
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
        iovec iov{const_cast<char*>(payload.data()), payload.size()};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(cm), &l, sizeof l);
        if (::sendmsg(u, &msg, 0) < 0) ::_exit(15);
        char reply[256] = {0};
        if (::read(u, reply, sizeof reply - 1) <= 0 || std::strncmp(reply, "{\"ok\":true}", 11) != 0) ::_exit(16);
        ::close(l);
        std::snprintf(proxy_buf, sizeof proxy_buf, "http://127.0.0.1:%d", ntohs(a.sin_port));
        int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, 1);
        char* argv[] = {const_cast<char*>("curl"), const_cast<char*>("-sS"), const_cast<char*>("--max-time"),
                        const_cast<char*>("10"), const_cast<char*>("-x"), proxy_buf,
                        const_cast<char*>(target.c_str()), nullptr};
        ::execvp("curl", argv);
        ::_exit(17);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 10 || WEXITSTATUS(status) == 11) CC_SKIP("cannot create a network namespace here");
    CHECK(WEXITSTATUS(status) == 0);
    std::ifstream f(out_path);
    std::string got(std::istreambuf_iterator<char>(f), {});
    CHECK(got == "hello\n");
    CHECK(eg.stop() == 0);
    const json* line = eg.find("127.0.0.1", "http");
    REQUIRE(line);
    CHECK((*line)["decision"] == "allow");
    (void)proxy_url;
}

TEST_CASE("egress: a kept-alive upstream that closed while idle is redialled for the next request") {
    Origin origin("0.5");  // closes idle keep-alive connections after half a second
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    int fd = connect_to(port_of(eg.http()));
    REQUIRE(fd >= 0);
    std::string req = "GET " + origin.url("/hello") + " HTTP/1.1\r\nHost: x\r\n\r\n";
    auto one = [&] {
        (void)!::write(fd, req.data(), req.size());
        std::string resp;
        char buf[4096];
        ssize_t n;
        while (resp.find("hello\n") == std::string::npos && (n = ::read(fd, buf, sizeof buf)) > 0)
            resp.append(buf, static_cast<std::size_t>(n));
        return resp;
    };
    CHECK(one().rfind("HTTP/1.1 200", 0) == 0);
    ::usleep(1500000);
    CHECK(one().rfind("HTTP/1.1 200", 0) == 0);
    ::close(fd);
    CHECK(eg.stop() == 0);
}

namespace {

// Read until the peer closes (or SO_RCVTIMEO); how long that took, in seconds.
double read_to_eof(int fd, std::string& out) {
    auto t0 = std::chrono::steady_clock::now();
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Read until `marker` has been seen; false on EOF first.
bool read_until(int fd, const std::string& marker, std::string& out) {
    char buf[4096];
    ssize_t n;
    while (out.find(marker) == std::string::npos) {
        if ((n = ::read(fd, buf, sizeof buf)) <= 0) return false;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace

TEST_CASE("egress: --header-timeout closes slow request heads and SOCKS5 handshakes, and says so") {
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--header-timeout", "0.4", "--idle-timeout", "0"});
    REQUIRE(eg.ready["headerTimeoutMs"] == 400);
    CHECK(eg.ready["idleTimeoutMs"] == 0);
    CHECK(eg.ready["threads"].get<int>() >= 1);
    // Slowloris: a head that never ends, one byte at a time.
    int h = connect_to(port_of(eg.http()));
    REQUIRE(h >= 0);
    std::string partial = "GET http://127.0.0.1/ HTTP/1.1\r\nX-Slow: ";
    (void)!::write(h, partial.data(), partial.size());
    std::thread drip([h] {
        for (int i = 0; i < 20; ++i) {
            ::usleep(100000);
            if (::send(h, "a", 1, MSG_NOSIGNAL) <= 0) break;
        }
    });
    std::string out;
    double took = read_to_eof(h, out);
    drip.join();
    ::close(h);
    CHECK(out.empty());
    CHECK(took < 1.5);  // closed while still dripping (2 s): the bound is not reset by progress
    // A SOCKS5 client that sends half a greeting.
    int s = connect_to(port_of(eg.socks()));
    REQUIRE(s >= 0);
    (void)!::write(s, "\x05", 1);
    out.clear();
    took = read_to_eof(s, out);
    ::close(s);
    CHECK(out.empty());
    CHECK(took < 5);
    CHECK(eg.stop() == 0);
    int timeouts = 0;
    for (const auto& l : eg.lines) {
        if (l.value("closed", "") != "header-timeout") continue;
        ++timeouts;
        CHECK(l["decision"] == "deny");
        CHECK(l["rule"] == "timeout");
        CHECK_THAT(l["reason"].get<std::string>(), Catch::Contains("400 ms"));
    }
    CHECK(timeouts == 2);
    CHECK_THAT(eg.stderr_text(), Catch::Contains("header-timeout: closed socks5"));
}

TEST_CASE("egress: --idle-timeout closes idle tunnels and kept-alive connections, not busy ones") {
    Origin origin;
    REQUIRE(origin.port);
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--idle-timeout", "1"});
    REQUIRE(eg.ready["idleTimeoutMs"] == 1000);
    std::string get = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

    // A SOCKS5 tunnel kept busy past the timeout (a request every 0.25 s for 1.5 s) stays open...
    int s = connect_to(port_of(eg.socks()));
    REQUIRE(s >= 0);
    std::string req("\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01", 11);
    req += static_cast<char>(origin.port >> 8);
    req += static_cast<char>(origin.port & 0xff);
    (void)!::write(s, req.data(), req.size());
    char rep[12];
    REQUIRE(::read(s, rep, 2) == 2);
    std::string r;
    for (int i = 0; i < 6; ++i) {
        (void)!::write(s, get.data(), get.size());
        CHECK(read_until(s, "hello\n", r));
        r.clear();
        ::usleep(250000);
    }
    // ...and is closed once it has been idle for the timeout.
    auto t0 = std::chrono::steady_clock::now();
    std::string rest;
    read_to_eof(s, rest);
    double idle = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(idle > 0.5);
    CHECK(idle < 5);
    ::close(s);

    // A CONNECT tunnel idle from the start.
    int c = connect_to(port_of(eg.http()));
    std::string connect = "CONNECT 127.0.0.1:" + std::to_string(origin.port) + " HTTP/1.1\r\n\r\n";
    (void)!::write(c, connect.data(), connect.size());
    std::string head;
    CHECK(read_until(c, "\r\n\r\n", head));
    CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
    std::string none;
    CHECK(read_to_eof(c, none) < 5);
    ::close(c);

    // An absolute-form keep-alive connection after its answer.
    int k = connect_to(port_of(eg.http()));
    std::string abs = "GET " + origin.url("/hello") + " HTTP/1.1\r\nHost: x\r\n\r\n";
    (void)!::write(k, abs.data(), abs.size());
    std::string ans;
    CHECK(read_until(k, "hello\n", ans));
    CHECK(read_to_eof(k, none) < 5);
    ::close(k);

    CHECK(eg.stop() == 0);
    const json* socks = eg.find("127.0.0.1", "socks5");
    REQUIRE(socks);
    CHECK((*socks)["closed"] == "idle-timeout");
    CHECK((*socks)["decision"] == "allow");
    CHECK((*socks)["bytesDown"].get<int>() > 6 * 6);
    const json* tunnel = eg.find("127.0.0.1", "http-connect");
    REQUIRE(tunnel);
    CHECK((*tunnel)["closed"] == "idle-timeout");
    const json* fwd = eg.find("127.0.0.1", "http");
    REQUIRE(fwd);
    CHECK(fwd->value("closed", "") == "");  // the request itself completed
    CHECK_THAT(eg.stderr_text(), Catch::Contains("idle-timeout: closed kept-alive connection"));
}

TEST_CASE("egress: an HTTP/1.0 client gets a chunked upstream answer de-chunked, close-delimited") {
    Origin origin;
    REQUIRE(origin.port);
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    // curl speaking HTTP/1.0 through the proxy.
    auto r = curl({"--http1.0", "-x", "http://" + eg.http(), "-D", "-", origin.url("/chunked")});
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::EndsWith("\r\n\r\na\nb\nc\n"));
    CHECK_THAT(r.out, !Catch::Contains("chunked"));
    CHECK_THAT(r.out, Catch::Contains("Connection: close"));
    // A raw HTTP/1.0 client: the body is exactly the payload, then EOF.
    std::string out = talk(port_of(eg.http()), "GET " + origin.url("/chunked") + " HTTP/1.0\r\n\r\n");
    auto body = out.find("\r\n\r\n");
    REQUIRE(body != std::string::npos);
    CHECK(out.substr(body + 4) == "a\nb\nc\n");
    CHECK_THAT(out.substr(0, body), !Catch::Contains("Transfer-Encoding"));
    // An HTTP/1.1 client still gets the chunked framing passed through.
    out = talk(port_of(eg.http()), "GET " + origin.url("/chunked") + " HTTP/1.1\r\nConnection: close\r\n\r\n");
    CHECK_THAT(out, Catch::Contains("Transfer-Encoding: chunked"));
    CHECK_THAT(out, Catch::EndsWith("0\r\n\r\n"));
    CHECK(eg.stop() == 0);
    int dechunked = 0;
    for (const auto& l : eg.lines) dechunked += l.value("dechunked", false) ? 1 : 0;
    CHECK(dechunked == 2);
}

TEST_CASE("egress: --auth-token-file requires Basic proxy credentials and SOCKS5 username/password") {
    Origin origin;
    REQUIRE(origin.port);
    std::string dir = cc::test::scratch_dir();
    std::string token_file = dir + "/token";
    std::ofstream(token_file) << "s3cret-Token_42\n";
    ::chmod(token_file.c_str(), 0600);
    // A token file other users can read, or an empty one, is refused before listening.
    std::string open_file = dir + "/token-open";
    std::ofstream(open_file) << "abc\n";
    ::chmod(open_file.c_str(), 0644);
    auto bad = cc::test::run({bin("cc-egress"), "--no-baseline", "--auth-token-file", open_file});
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains("readable by other users"));
    std::string empty_file = dir + "/token-empty";
    std::ofstream(empty_file) << "\n";
    ::chmod(empty_file.c_str(), 0600);
    bad = cc::test::run({bin("cc-egress"), "--no-baseline", "--auth-token-file", empty_file});
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains("1 to 255 bytes"));

    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--auth-token-file", token_file});
    REQUIRE(eg.ready["auth"] == true);
    std::string url = origin.url("/hello");
    // HTTP: absolute-form and CONNECT with the token as the password (any user name).
    auto r = curl({"-x", "http://cc:s3cret-Token_42@" + eg.http(), url});
    CHECK(r.out == "hello\n");
    r = curl({"-p", "-x", "http://agent:s3cret-Token_42@" + eg.http(), url});
    CHECK(r.out == "hello\n");
    // Without credentials, or with the wrong ones: 407 with a Basic challenge.
    r = curl({"-x", "http://" + eg.http(), "-D", "-", "-o", "/dev/null", url});
    CHECK(r.out.rfind("HTTP/1.1 407", 0) == 0);
    CHECK_THAT(r.out, Catch::Contains("Proxy-Authenticate: Basic realm=\"cc-egress\""));
    r = curl({"-x", "http://cc:wrong@" + eg.http(), "-o", "/dev/null", "-w", "%{http_code}", url});
    CHECK(http_code(r) == "407");
    r = curl({"-p", "-x", "http://" + eg.http(), url});
    CHECK(r.status == 56);
    CHECK_THAT(r.err, Catch::Contains("407"));
    // SOCKS5: RFC 1929 with the token; no-auth only or a wrong password is refused.
    r = curl({"-x", "socks5h://cc:s3cret-Token_42@" + eg.socks(), url});
    CHECK(r.out == "hello\n");
    r = curl({"-x", "socks5h://" + eg.socks(), url});
    CHECK(r.status == 97);  // curl: proxy handshake refused
    r = curl({"-x", "socks5h://cc:nope@" + eg.socks(), url});
    CHECK(r.status == 97);
    CHECK(r.out.empty());
    CHECK(eg.stop() == 0);
    int auth_denials = 0, allowed = 0;
    for (const auto& l : eg.lines) {
        if (l["rule"] == "auth") {
            ++auth_denials;
            CHECK(l["decision"] == "deny");
        }
        if (l["decision"] == "allow") ++allowed;
    }
    CHECK(auth_denials == 5);
    CHECK(allowed == 3);
}

TEST_CASE("egress: several event loops serve concurrent clients; every connection is counted and logged once") {
    Origin origin;
    REQUIRE(origin.port);
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--threads", "3"});
    REQUIRE(eg.ready["threads"] == 3);
    std::uint16_t sp = port_of(eg.socks()), hp = port_of(eg.http());
    std::atomic<int> ok{0};
    std::vector<std::thread> clients;
    for (int t = 0; t < 6; ++t)
        clients.emplace_back([&, t] {
            for (int i = 0; i < 25; ++i) {
                bool socks = (t + i) % 2 == 0;
                int fd = connect_to(socks ? sp : hp);
                if (fd < 0) continue;
                std::string hello;
                if (socks) {
                    std::string req("\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01", 11);
                    req += static_cast<char>(origin.port >> 8);
                    req += static_cast<char>(origin.port & 0xff);
                    req += "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
                    (void)!::write(fd, req.data(), req.size());
                } else {
                    std::string req = "GET " + origin.url("/hello") + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
                    (void)!::write(fd, req.data(), req.size());
                }
                if (read_until(fd, "hello\n", hello)) ++ok;
                ::close(fd);
            }
        });
    for (auto& c : clients) c.join();
    CHECK(ok == 150);
    CHECK(eg.stop() == 0);
    CHECK(eg.lines.size() == 150);
    int socks = 0;
    for (const auto& l : eg.lines) {
        CHECK(l["decision"] == "allow");
        socks += l["proto"] == "socks5" ? 1 : 0;
    }
    CHECK(socks == 75);
    CHECK_THAT(eg.stderr_text(), Catch::Contains("stopped: 150 connections, 0 denied"));
}
