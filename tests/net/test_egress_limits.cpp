// cc-egress's connection caps and the first-byte limit of a tunnel: a client
// holding connections up to its cap cannot starve another one; over a cap
// the answer is 503 (HTTP) or reply 01 (SOCKS5) with rule "limit".
#include "egress_fixture.hpp"

#include <chrono>
#include <sstream>

using namespace egress_fixture;

namespace {

// A TCP connection to 127.0.0.1:port from the loopback address `from`.
int connect_from(const std::string& from, std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    ::inet_pton(AF_INET, from.c_str(), &src.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
        ::close(fd);
        return -1;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

// Sends `data`, reads until the end of a response head (or EOF); the head.
std::string ask(int fd, const std::string& data) {
    (void)!::write(fd, data.data(), data.size());
    std::string out;
    char c;
    while (out.find("\r\n\r\n") == std::string::npos && ::read(fd, &c, 1) == 1) out += c;
    return out;
}

// A tunnel to the origin opened from `from` and held; -1 if not established.
int hold_tunnel(const std::string& from, std::uint16_t proxy, std::uint16_t origin) {
    int fd = connect_from(from, proxy);
    if (fd < 0) return -1;
    std::string head = ask(fd, "CONNECT 127.0.0.1:" + std::to_string(origin) + " HTTP/1.1\r\n\r\n");
    if (head.rfind("HTTP/1.1 200", 0) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// An upstream that holds every connection open and never reads or answers
// (the kernel completes up to `backlog` handshakes; nobody accepts them).
struct Silent {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    std::uint16_t port = bind_loopback(fd);
    explicit Silent(int backlog) { ::listen(fd, backlog); }
    ~Silent() { ::close(fd); }
    Silent(const Silent&) = delete;
    Silent& operator=(const Silent&) = delete;
};

// A new tunnel is served within a second (asked every 50 ms).
bool served_within_a_second(std::uint16_t proxy, std::uint16_t origin) {
    for (int i = 0; i < 20; ++i) {
        ::usleep(50000);
        int fd = hold_tunnel("127.0.0.1", proxy, origin);
        if (fd >= 0) {
            ::close(fd);
            return true;
        }
    }
    return false;
}

std::string read_all(int fd) {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    return out;
}

}  // namespace

TEST_CASE("egress limits: one client at its cap does not starve another; over a cap 503 / SOCKS5 01") {
    Origin origin;
    REQUIRE(origin.port);
    if (int probe = connect_from("127.0.0.2", origin.port); probe < 0) CC_SKIP("cannot bind 127.0.0.2");
    else ::close(probe);
    std::string connect = "CONNECT 127.0.0.1:" + std::to_string(origin.port) + " HTTP/1.1\r\n\r\n";
    std::vector<int> held;
    {
        // Without caps one client holds as many idle tunnels as it likes.
        Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
        CHECK(eg.ready["maxClientConnections"].get<int>() >= 8);
        for (int i = 0; i < 4; ++i) held.push_back(hold_tunnel("127.0.0.1", port_of(eg.http()), origin.port));
        CHECK(std::count(held.begin(), held.end(), -1) == 0);
        for (int fd : held) ::close(fd);
        held.clear();
        CHECK(eg.stop() == 0);
    }
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--max-connections", "5", "--max-client-connections", "3"});
    REQUIRE(eg.ready["maxConnections"] == 5);
    REQUIRE(eg.ready["maxClientConnections"] == 3);
    std::uint16_t hp = port_of(eg.http()), sp = port_of(eg.socks());
    for (int i = 0; i < 3; ++i) held.push_back(hold_tunnel("127.0.0.1", hp, origin.port));
    REQUIRE(std::count(held.begin(), held.end(), -1) == 0);
    // Client 127.0.0.1 is at its cap: its next connection is answered 503.
    int a4 = connect_from("127.0.0.1", hp);
    std::string resp = ask(a4, connect);
    resp += read_all(a4);
    ::close(a4);
    CHECK(resp.rfind("HTTP/1.1 503 Service Unavailable", 0) == 0);
    CHECK_THAT(resp, Catch::Contains("error=connection_limit_reached"));
    CHECK_THAT(resp, Catch::Contains("client 127.0.0.1 holds 3 connections (--max-client-connections 3)"));
    // Another client is served meanwhile, through both proxies.
    auto r = curl({"--interface", "127.0.0.2", "-x", "http://" + eg.http(), origin.url("/hello")});
    CHECK(r.out == "hello\n");
    r = curl({"--interface", "127.0.0.2", "--socks5", eg.socks(), origin.url("/hello")});
    CHECK(r.out == "hello\n");
    // Two more held by 127.0.0.2 fill the proxy (5): then everyone is refused.
    // The two curl connections above are released by the proxy's loops a
    // moment after curl closes them; until then they still count.
    auto hold_when_released = [&](const char* from) {
        for (int i = 0; i < 100; ++i) {
            int fd = hold_tunnel(from, hp, origin.port);
            if (fd >= 0) return fd;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return -1;
    };
    held.push_back(hold_when_released("127.0.0.2"));
    held.push_back(hold_when_released("127.0.0.2"));
    REQUIRE(std::count(held.begin(), held.end(), -1) == 0);
    int b3 = connect_from("127.0.0.2", hp);
    resp = ask(b3, connect);
    resp += read_all(b3);
    ::close(b3);
    CHECK(resp.rfind("HTTP/1.1 503", 0) == 0);
    CHECK_THAT(resp, Catch::Contains("the proxy holds 5 connections (--max-connections 5)"));
    // SOCKS5 over the cap: the handshake completes and the request gets 01.
    int s = connect_from("127.0.0.2", sp);
    std::string greet = std::string("\x05\x01\x00", 3);
    (void)!::write(s, greet.data(), greet.size());
    char m[2];
    REQUIRE(::read(s, m, 2) == 2);
    CHECK(std::string(m, 2) == std::string("\x05\x00", 2));
    std::string req = std::string("\x05\x01\x00\x01\x7f\x00\x00\x01", 8);
    req += static_cast<char>(origin.port >> 8);
    req += static_cast<char>(origin.port & 0xff);
    (void)!::write(s, req.data(), req.size());
    std::string rep = read_all(s);
    ::close(s);
    REQUIRE(rep.size() >= 2);
    CHECK(rep.substr(0, 2) == std::string("\x05\x01", 2));
    // Tunnels closed: room again.
    for (int fd : held) ::close(fd);
    bool again = false;
    for (int i = 0; i < 100 && !again; ++i) {
        r = curl({"-x", "http://" + eg.http(), origin.url("/hello")});
        again = r.out == "hello\n";
        if (!again) ::usleep(20000);
    }
    CHECK(again);
    CHECK(eg.stop() == 0);
    int limits = 0;
    for (const auto& l : eg.lines)
        if (l.value("rule", "") == "limit") {
            ++limits;
            CHECK(l["decision"] == "deny");
        }
    CHECK(limits >= 3);  // and any retry above that came before the tunnels were gone
}

TEST_CASE("egress limits: a tunnel on which nothing moves is closed after --first-byte-timeout") {
    Origin origin;
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--first-byte-timeout", "0.3", "--idle-timeout", "0"});
    CHECK(eg.ready["firstByteTimeoutMs"] == 300);
    std::uint16_t hp = port_of(eg.http());
    int quiet = hold_tunnel("127.0.0.1", hp, origin.port);
    REQUIRE(quiet >= 0);
    CHECK(read_all(quiet).empty());  // closed by the proxy
    ::close(quiet);
    // A tunnel that is used right away is not.
    int busy = hold_tunnel("127.0.0.1", hp, origin.port);
    REQUIRE(busy >= 0);
    std::string resp = ask(busy, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(resp.rfind("HTTP/1.1 200", 0) == 0);
    ::usleep(500000);
    resp = ask(busy, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    CHECK(resp.find("HTTP/1.1 200") != std::string::npos);
    ::close(busy);
    CHECK(eg.stop() == 0);
    int closed = 0;
    for (const auto& l : eg.lines)
        if (l.value("closed", "") == "first-byte-timeout") ++closed;
    CHECK(closed == 1);
    CHECK_THAT(eg.stderr_text(), Catch::Contains("first-byte-timeout: closed http-connect 127.0.0.1:"));
}

// A client that fills its cap with tunnels that never carry a byte, then
// closes them all: its place is free at once, not when each upstream hangs
// up or the first-byte deadline passes.
TEST_CASE("egress limits: tunnels a client left without a byte free its place at once") {
    Silent origin(64);
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--max-client-connections", "8", "--first-byte-timeout", "60"});
    std::uint16_t hp = port_of(eg.http());
    std::vector<int> held;
    for (int i = 0; i < 8; ++i) {
        int fd = hold_tunnel("127.0.0.1", hp, origin.port);
        REQUIRE(fd >= 0);
        held.push_back(fd);
    }
    // At the cap: the next one is refused.
    int over = connect_to(hp);
    REQUIRE(over >= 0);
    std::string refused = ask(over, "CONNECT 127.0.0.1:" + std::to_string(origin.port) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(refused.rfind("HTTP/1.1 503", 0) == 0);
    ::close(over);
    for (int fd : held) ::close(fd);
    // The load gone: a new tunnel is served well before any deadline.
    CHECK(served_within_a_second(hp, origin.port));
    CHECK(eg.stop() == 0);
}

// Run out of descriptors for real: cc-egress under a hard RLIMIT_NOFILE of
// 128, one client asking for hundreds of tunnels to an upstream that never
// answers. Past what fits, each gets a 503 at once (never silence); when the
// client lets go, a new client is served at once. Both with the caps
// cc-egress derives from the limit and with caps set far above it (the
// descriptors themselves then run out, and the reserve still answers).
TEST_CASE("egress limits: at a hard descriptor limit of 128, excess is refused and the proxy recovers") {
    if (!cc::test::have_program("prlimit")) CC_SKIP("prlimit (util-linux) missing");
    Silent origin(512);
    const bool explicit_caps = GENERATE(false, true);
    INFO((explicit_caps ? "--max-connections 1000" : "derived caps"));
    std::vector<std::string> args = {"--allow", "127.0.0.1:*", "--no-baseline", "--threads", "1",
                                     "--first-byte-timeout", "60"};
    if (explicit_caps) args.insert(args.end(), {"--max-connections", "1000", "--max-client-connections", "1000"});
    Egress eg(args, {}, {"prlimit", "--nofile=128:128"});
    REQUIRE(eg.ready.is_object());
    CHECK(eg.ready["descriptorLimit"] == 128);
    CHECK(eg.ready["maxConnections"] == 16);
    if (explicit_caps) CHECK(eg.ready["maxConnectionsAsked"] == 1000);
    else CHECK_FALSE(eg.ready.contains("maxConnectionsAsked"));
    std::uint16_t hp = port_of(eg.http());
    const std::string connect = "CONNECT 127.0.0.1:" + std::to_string(origin.port) + " HTTP/1.1\r\n\r\n";
    std::vector<int> fds;
    int served = 0, refused = 0, silent = 0;
    for (int i = 0; i < 300; ++i) {
        int fd = connect_to(hp);
        if (fd < 0) {
            ++silent;
            continue;
        }
        std::string head = ask(fd, connect);
        if (head.rfind("HTTP/1.1 200", 0) == 0) ++served;
        else if (head.rfind("HTTP/1.1 503", 0) == 0) ++refused;
        else ++silent;
        fds.push_back(fd);
    }
    INFO("served " << served << ", refused " << refused << ", no answer " << silent);
    CHECK(served > 0);
    CHECK(served < 128);
    CHECK(refused > 0);
    CHECK(silent == 0);
    for (int fd : fds) ::close(fd);
    // The load gone: a new client is served within a second.
    CHECK(served_within_a_second(hp, origin.port));
    CHECK(eg.stop() == 0);
    if (explicit_caps)
        CHECK_THAT(eg.stderr_text(), Catch::Contains("--max-connections 1000 does not fit the descriptor limit (128): "
                                                     "16 connections at once"));
}
