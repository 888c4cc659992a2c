// cc-egress serving: --header-timeout and --idle-timeout, an HTTP/1.0
// client and a chunked upstream, --auth-token-file credentials, several
// event loops under concurrent clients.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "egress_fixture.hpp"

using namespace egress_fixture;

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

// A SOCKS5 tunnel to 127.0.0.1:`port` through the proxy at `proxy`
// (greeting and request in one write, no authentication): the descriptor
// once the proxy answered "succeeded", else -1.
int socks_tunnel(std::uint16_t proxy, std::uint16_t port) {
    int fd = connect_to(proxy);
    if (fd < 0) return -1;
    std::string req("\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01", 11);
    req += static_cast<char>(port >> 8);
    req += static_cast<char>(port & 0xff);
    (void)!::write(fd, req.data(), req.size());
    char reply[12];
    std::size_t got = 0;
    ssize_t n;
    while (got < sizeof reply && (n = ::read(fd, reply + got, sizeof reply - got)) > 0) got += static_cast<std::size_t>(n);
    // Greeting answered "no authentication", then "succeeded" with an IPv4 bound address.
    const bool succeeded = got == sizeof reply && std::string_view(reply, 6) == std::string_view("\x05\x00\x05\x00\x00\x01", 6);
    if (!succeeded) {
        ::close(fd);
        return -1;
    }
    return fd;
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

// The loops after the first take connections only while the first is busy
// (each waiting loop is woken by every new connection, so an idle second
// loop would be woken for each one only to find it taken). Read from the
// metrics page: connections accepted by each loop.
TEST_CASE("egress: a second event loop takes connections only while the first is busy") {
    Origin origin;
    REQUIRE(origin.port);
    std::string sock = cc::test::scratch_dir() + "/loops.sock";
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--threads", "2", "--metrics-socket", sock});
    REQUIRE(eg.ready["threads"] == 2);
    std::uint16_t sp = port_of(eg.socks());
    auto value = [&](const std::string& key) -> long {
        std::string m = curl({"--unix-socket", sock, "http://localhost/metrics"}).out;
        auto at = m.find("\n" + key + " ");  // the sample, not its # TYPE line
        if (at == std::string::npos) return -1;
        return std::stol(m.substr(at + key.size() + 2));
    };
    const std::string loop0 = "cc_egress_loop_connections_total{loop=\"0\"}";
    const std::string loop1 = "cc_egress_loop_connections_total{loop=\"1\"}";
    auto idle = [&] {
        for (int i = 0; i < 200 && value("cc_egress_connections_active") > 0; ++i) ::usleep(10000);
        REQUIRE(value("cc_egress_connections_active") == 0);
    };
    std::string connect("\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01", 11);
    connect += static_cast<char>(origin.port >> 8);
    connect += static_cast<char>(origin.port & 0xff);
    auto one = [&] {
        int fd = connect_to(sp);
        REQUIRE(fd >= 0);
        std::string req = connect + "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        (void)!::write(fd, req.data(), req.size());
        std::string got;
        CHECK(read_until(fd, "hello\n", got));
        ::close(fd);
        idle();
    };
    // One client at a time: the first loop serves every one, the second is
    // never woken.
    for (int i = 0; i < 20; ++i) one();
    CHECK(value(loop0) == 20);
    CHECK(value(loop1) == 0);
    // Tunnels held open together: once the first loop holds two, the
    // second takes connections too.
    std::vector<int> held;
    long second = 0;
    for (int i = 0; i < 64 && second == 0; ++i) {
        int fd = socks_tunnel(sp, origin.port);
        REQUIRE(fd >= 0);
        held.push_back(fd);
        if (held.size() >= 2) second = value(loop1);
    }
    CHECK(second >= 1);
    INFO("tunnels held before the second loop took one: " << held.size());
    for (int fd : held) ::close(fd);
    idle();
    // The load gone, the second loop parks again after at most one more.
    long before = value(loop1);
    for (int i = 0; i < 20; ++i) one();
    CHECK(value(loop1) <= before + 1);
    CHECK(value(loop0) + value(loop1) == 20 + static_cast<long>(held.size()) + 20);
    CHECK(eg.stop() == 0);  // a parked loop stops too
    CHECK(eg.lines.size() == 40 + held.size());
}

// Both legs of a tunnel have no delay (TCP_NODELAY): the upstream socket is
// given it when made, the client's inherits it from the listener. Read off
// cc-egress's own sockets, copied out with pidfd_getfd (root: the proxy is
// undumpable, so nothing of its own uid may take them).
TEST_CASE("egress: both legs of a tunnel are sent without delay") {
    const bool root = ::geteuid() == 0;
    if (!root) CC_SKIP("pidfd_getfd on an undumpable cc-egress needs root");
    Origin origin;
    REQUIRE(origin.port);
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    int fd = socks_tunnel(port_of(eg.socks()), origin.port);
    REQUIRE(fd >= 0);
    sockaddr_in mine{};
    socklen_t len = sizeof mine;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &len) == 0);
    // The same check on a socket of the test's own: a plain accepted
    // socket has Nagle on, so the reading below can tell.
    {
        int l = ::socket(AF_INET, SOCK_STREAM, 0);
        std::uint16_t lp = bind_loopback(l);
        REQUIRE(::listen(l, 1) == 0);
        int c = connect_to(lp);
        int a = ::accept(l, nullptr, nullptr);
        int v = -1;
        socklen_t vl = sizeof v;
        REQUIRE(::getsockopt(a, IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0);
        CHECK(v == 0);
        ::close(a), ::close(c), ::close(l);
    }
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, eg.child.id(), 0));
    REQUIRE(pidfd >= 0);
    int client_leg = -1, upstream_leg = -1;
    for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(eg.child.id()) + "/fd")) {
        int target = std::stoi(e.path().filename().string());
        int copy = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, target, 0));
        if (copy < 0) continue;
        sockaddr_in peer{};
        socklen_t pl = sizeof peer;
        if (::getpeername(copy, reinterpret_cast<sockaddr*>(&peer), &pl) == 0 && peer.sin_family == AF_INET) {
            int v = -1;
            socklen_t vl = sizeof v;
            ::getsockopt(copy, IPPROTO_TCP, TCP_NODELAY, &v, &vl);
            if (peer.sin_port == mine.sin_port) client_leg = v;
            if (ntohs(peer.sin_port) == origin.port) upstream_leg = v;
        }
        ::close(copy);
    }
    ::close(pidfd);
    CHECK(client_leg == 1);
    CHECK(upstream_leg == 1);
    ::close(fd);
    CHECK(eg.stop() == 0);
}
