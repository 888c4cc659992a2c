// cc-egress follows a tunnel's TLS handshake record by record: every
// ClientHello is checked before it goes on, including the second one a
// HelloRetryRequest asks for, and a TLS-looking stream that does not start
// with a ClientHello is refused. Against a real OpenSSL s_server (which, given
// only secp384r1, asks an x25519 client to retry), with a scripted client
// (tests/net/tls_client.py) that crafts the hellos, and curl for the honest
// retry.
#include "egress_fixture.hpp"

#include <algorithm>

#include <sys/wait.h>

#include <mutex>

using namespace egress_fixture;

namespace {

struct TlsServer {
    std::string dir = cc::test::scratch_dir();
    std::uint16_t port = 0;
    std::string p384_point;  // hex of a valid secp384r1 public point, for a second hello's key share
    bp::child child;

    bool start() {
        auto gen = cc::test::run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                                  "-days", "1", "-keyout", dir + "/tls-key.pem", "-out", dir + "/tls-cert.pem"});
        if (gen.status != 0) return false;
        if (cc::test::run({"openssl", "ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out", dir + "/p384.pem"}).status != 0)
            return false;
        auto pub = cc::test::run({"openssl", "ec", "-in", dir + "/p384.pem", "-pubout", "-outform", "DER"});
        if (pub.status != 0 || pub.out.size() < 97) return false;
        static const char* hex = "0123456789abcdef";
        for (unsigned char c : pub.out.substr(pub.out.size() - 97)) {
            p384_point += hex[c >> 4];
            p384_point += hex[c & 15];
        }
        port = free_port();
        child = bp::child(bp::search_path("openssl"), "s_server", "-accept", "127.0.0.1:" + std::to_string(port),
                          "-cert", dir + "/tls-cert.pem", "-key", dir + "/tls-key.pem", "-www", "-quiet", "-groups",
                          "secp384r1", bp::std_out > bp::null, bp::std_err > bp::null, bp::std_in < bp::null);
        return wait_listening(port);
    }
    ~TlsServer() {
        if (child.valid() && child.running()) {
            ::kill(child.id(), SIGTERM);
            child.wait();
        }
    }
    std::string target() const { return "127.0.0.1:" + std::to_string(port); }
};

json scripted(std::uint16_t proxy_port, const std::string& target, const std::vector<std::string>& args) {
    std::vector<std::string> argv{"python3", cc::test::source_dir() + "/tests/net/tls_client.py",
                                  std::to_string(proxy_port), target};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = cc::test::run(argv);
    INFO(r.err);
    return json::parse(r.out, nullptr, false);
}

}  // namespace

TEST_CASE("egress tls: a second ClientHello after a HelloRetryRequest must name the same server") {
    if (!cc::test::have_program("openssl") || !cc::test::have_program("python3")) CC_SKIP("openssl or python3 missing");
    TlsServer server;
    REQUIRE(server.start());

    // The attack shape: the first hello names an allowed server, the second
    // (after the retry request) another one. OpenSSL answers the second with
    // a ServerHello: the handshake goes on under the second name.
    json direct = scripted(server.port, "direct", {"retry", "good.test", "evil.test", server.p384_point});
    REQUIRE(direct.is_object());
    CHECK(direct["retry"] == true);
    CHECK(direct["after"] == "server_hello");
    {
        // cc-egress without its SNI check relays it just the same.
        Egress eg({"--allow", "127.0.0.1:*", "--allow", "good.test:*", "--no-baseline", "--no-sni-check"});
        json r = scripted(port_of(eg.http()), server.target(), {"retry", "good.test", "evil.test", server.p384_point});
        CHECK(r["connect"] == "HTTP/1.1 200 Connection established");
        CHECK(r["after"] == "server_hello");
        CHECK(eg.stop() == 0);
    }

    Egress eg({"--allow", "127.0.0.1:*", "--allow", "good.test:*", "--no-baseline"});
    std::uint16_t hp = port_of(eg.http());
    // The same bytes through cc-egress: the retry request comes back, the
    // second hello is never forwarded, the tunnel is closed.
    json r = scripted(hp, server.target(), {"retry", "good.test", "evil.test", server.p384_point});
    CHECK(r["connect"] == "HTTP/1.1 200 Connection established");
    CHECK(r["retry"] == true);
    CHECK(r["after"] == "closed");
    // An honest retry (both hellos name good.test) goes through.
    r = scripted(hp, server.target(), {"retry", "good.test", "good.test", server.p384_point});
    CHECK(r["retry"] == true);
    CHECK(r["after"] == "server_hello");
    // And a real client that is asked to retry: curl offering x25519 first.
    auto c = curl({"-k", "-x", "http://" + eg.http(), "--curves", "X25519:P-384", "--connect-to",
                   "good.test:" + std::to_string(server.port) + ":" + server.target(),
                   "https://good.test:" + std::to_string(server.port) + "/"});
    CHECK(c.status == 0);
    CHECK_THAT(c.out, Catch::Contains("s_server"));
    CHECK(eg.stop() == 0);

    int refused = 0, retried_ok = 0;
    for (const auto& l : eg.lines) {
        if (l.value("sni", std::string()) != "good.test") continue;
        if (l["decision"] == "deny") {
            ++refused;
            CHECK(l["rule"] == "tls");
            CHECK(l["reason"] == "ClientHello after a HelloRetryRequest names 'evil.test', the first named "
                                 "'good.test' on tunnel to 127.0.0.1");
            CHECK(l.value("tlsHelloRetry", false));
        } else if (l.value("tlsHelloRetry", false)) {
            ++retried_ok;
            CHECK(l["decision"] == "allow");
        }
    }
    CHECK(refused == 1);
    CHECK(retried_ok == 2);
}

TEST_CASE("egress tls: a TLS record other than a handshake placed first is refused, not relayed as not-TLS") {
    if (!cc::test::have_program("python3")) CC_SKIP("python3 missing");
    // An upstream that records what reaches it.
    int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    std::uint16_t up = bind_loopback(lfd);
    REQUIRE(up);
    REQUIRE(::listen(lfd, 8) == 0);
    std::vector<std::string> received;
    std::mutex mu;
    std::thread sink([&] {
        while (true) {
            int fd = ::accept(lfd, nullptr, nullptr);
            if (fd < 0) return;
            timeval tv{5, 0};
            ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            std::string got;
            char buf[4096];
            ssize_t n;
            while ((n = ::read(fd, buf, sizeof buf)) > 0) {
                got.append(buf, static_cast<std::size_t>(n));
                if (got.find("evil.test") != std::string::npos) break;
            }
            ::close(fd);
            std::lock_guard<std::mutex> lock(mu);
            received.push_back(got);
        }
    });
    std::string target = "127.0.0.1:" + std::to_string(up);
    std::string point(194, '0');  // the key share is never looked at here
    {
        // Without the check the alert and the hello naming evil.test reach the upstream.
        Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--no-sni-check"});
        json r = scripted(port_of(eg.http()), target, {"alert", "evil.test", point});
        CHECK(r["connect"] == "HTTP/1.1 200 Connection established");
        CHECK(eg.stop() == 0);
    }
    {
        std::lock_guard<std::mutex> lock(mu);
        REQUIRE(received.size() == 1);
        CHECK(received[0].rfind(std::string("\x15\x03\x03\x00\x02", 5), 0) == 0);
        CHECK(received[0].find("evil.test") != std::string::npos);
    }
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    std::uint16_t hp = port_of(eg.http());
    json r = scripted(hp, target, {"alert", "evil.test", point});
    CHECK(r["after"] == "closed");
    // An application_data record first: the same.
    std::string req = "CONNECT " + target + " HTTP/1.1\r\n\r\n" + std::string("\x17\x03\x03\x00\x01x", 6);
    std::string resp = talk(hp, req, true);
    CHECK(resp.rfind("HTTP/1.1 200", 0) == 0);
    // Not TLS at all (an SSH banner) is still relayed: only TLS-looking streams are followed.
    resp = talk(hp, "CONNECT " + target + " HTTP/1.1\r\n\r\nSSH-2.0-x evil.test\r\n", true);
    CHECK(resp.rfind("HTTP/1.1 200", 0) == 0);
    CHECK(eg.stop() == 0);
    ::shutdown(lfd, SHUT_RDWR);
    ::close(lfd);
    sink.join();
    std::lock_guard<std::mutex> lock(mu);
    // The upstream saw the SSH bytes and nothing of the two refused streams
    // (it was dialled for each and closed with nothing sent).
    int with_bytes = 0;
    for (std::size_t i = 1; i < received.size(); ++i)
        if (!received[i].empty()) {
            ++with_bytes;
            CHECK(received[i].rfind("SSH-2.0-x", 0) == 0);
        }
    CHECK(with_bytes == 1);
    std::vector<std::string> reasons;
    for (const auto& l : eg.lines)
        if (l["decision"] == "deny") reasons.push_back(l["reason"]);
    std::sort(reasons.begin(), reasons.end());  // lines come from more than one event loop
    CHECK(reasons == std::vector<std::string>{"TLS alert record before any ClientHello on tunnel to 127.0.0.1",
                                              "TLS application_data record before any ClientHello on tunnel to 127.0.0.1"});
}

TEST_CASE("egress tls: a tunnel to a TLS port (--tls-ports) must start with a ClientHello") {
    Origin origin;  // plain HTTP, on a port named a TLS port below
    std::string port = std::to_string(origin.port);
    {
        // By default only 443 is a TLS port: plain HTTP through a tunnel to another port passes.
        Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
        CHECK(eg.ready["tlsPorts"] == json::array({443}));
        auto r = curl({"-p", "-x", "http://" + eg.http(), origin.url("/hello")});
        CHECK(r.out == "hello\n");
        CHECK(eg.stop() == 0);
    }
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--tls-ports", "443," + port});
    CHECK(eg.ready["tlsPorts"] == json::array({443, origin.port}));
    auto r = curl({"-p", "-x", "http://" + eg.http(), origin.url("/hello")});
    CHECK(r.status == 52);  // the tunnel was opened, then closed with no answer
    CHECK(r.out.empty());
    CHECK(eg.stop() == 0);
    const json* l = eg.find("127.0.0.1", "http-connect");
    REQUIRE(l);
    CHECK((*l)["decision"] == "deny");
    CHECK((*l)["rule"] == "tls");
    CHECK((*l)["reason"] == "tunnel to 127.0.0.1:" + port + " does not start with a TLS ClientHello (--tls-ports)");
    CHECK((*l)["bytesUp"] == 0);

    auto bad = cc::test::run({bin("cc-egress"), "--no-baseline", "--tls-ports", "443,https"});
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains("--tls-ports '443,https'"));
}
