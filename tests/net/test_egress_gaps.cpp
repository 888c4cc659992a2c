// Gaps an attacker's survey found in cc-egress, each first shown working
// without the check (directly against the origin, against c-ares as the host
// configures it, or with the check's old reading), then refused exactly:
// chunked framing with bare LF, the resolver's search list and ndots, the
// IPv6 special-purpose blocks and 6to4, non-ASCII wildcard patterns, and a
// second handover on the fd inbox.
#include "egress_fixture.hpp"

#include <algorithm>

#include <ares.h>
#include <sys/un.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

using namespace egress_fixture;

namespace {

// A request smuggled inside a chunked body that a lenient origin (one that
// ends lines at a bare LF, as tests/net/origin.py does) reads as a second
// request on the same connection.
const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";

std::string hex(std::size_t n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%zx", n);
    return buf;
}

// Bare LF ends the size line for the origin; a reader that took it as part of
// the extension would see one chunk holding the whole smuggled request.
std::string size_line_smuggle() {
    std::string inner = "0\r\n\r\n" + smuggled;
    return hex(inner.size()) + ";x\n" + std::string(inner.size(), 'a') + "\r\n" + inner + "\r\n0\r\n\r\n";
}

// Bare LF ends a trailer line for the origin, so its blank line comes early.
std::string trailer_smuggle() { return "0\r\nX: y\n\r\n" + smuggled + "\r\n"; }

// Kept alive unless `close`: the smuggled request, read as the next one,
// closes the connection itself.
std::string post(const std::string& target, const std::string& body, bool close = false) {
    return "POST " + target + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" +
           (close ? "Connection: close\r\n" : "") + "\r\n" + body;
}

int count(const std::string& s, const std::string& what) {
    int n = 0;
    for (auto i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
    return n;
}

// c-ares as a program gets it by default (environment, resolv.conf), asked
// for `name` through `server`: the addresses it returns.
std::vector<std::string> default_cares(const std::string& name, const std::string& server) {
    std::vector<std::string> out;
    ares_library_init(ARES_LIB_INIT_ALL);
    ares_channel ch = nullptr;
    ares_options o{};
    if (ares_init_options(&ch, &o, 0) != ARES_SUCCESS) return out;
    ares_set_servers_ports_csv(ch, server.c_str());
    ares_addrinfo_hints hints{};
    hints.ai_family = AF_INET;
    bool done = false;
    struct Ctx {
        std::vector<std::string>* out;
        bool* done;
    } ctx{&out, &done};
    ares_getaddrinfo(ch, name.c_str(), nullptr, &hints, [](void* arg, int status, int, ares_addrinfo* res) {
        auto* c = static_cast<Ctx*>(arg);
        *c->done = true;
        if (status != ARES_SUCCESS) return;
        for (auto* n = res->nodes; n; n = n->ai_next) {
            char buf[64];
            auto* in = reinterpret_cast<sockaddr_in*>(n->ai_addr);
            c->out->push_back(inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf));
        }
        ares_freeaddrinfo(res);
    }, &ctx);
    for (int i = 0; i < 500 && !done; ++i) {
        ares_socket_t socks[ARES_GETSOCK_MAXNUM];
        int bits = ares_getsock(ch, socks, ARES_GETSOCK_MAXNUM);
        pollfd p[ARES_GETSOCK_MAXNUM];
        int n = 0;
        for (int k = 0; k < ARES_GETSOCK_MAXNUM; ++k)
            if (ARES_GETSOCK_READABLE(bits, k)) p[n++] = {socks[k], POLLIN, 0};
        ::poll(p, static_cast<nfds_t>(n), 20);
        bool any = false;
        for (int k = 0; k < n; ++k)
            if (p[k].revents) {
                any = true;
                ares_process_fd(ch, p[k].fd, ARES_SOCKET_BAD);
            }
        if (!any) ares_process_fd(ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    }
    ares_destroy(ch);
    return out;
}

// One fd-inbox message (SCM_RIGHTS + JSON) on connection `u`; the reply line.
json inbox_send(int u, const std::string& payload, const std::vector<int>& fds) {
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    iovec iov{const_cast<char*>(payload.data()), payload.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds.empty()) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
    }
    if (::sendmsg(u, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(payload.size())) return json();
    std::string reply;
    char c;
    while (::read(u, &c, 1) == 1 && c != '\n') reply += c;
    return json::parse(reply, nullptr, false);
}

// A connection to the inbox at `path`, or -1 with errno.
int inbox_connect(const std::string& path) {
    int u = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    std::strcpy(un.sun_path, path.c_str());
    if (::connect(u, reinterpret_cast<sockaddr*>(&un), sizeof un) != 0) {
        int e = errno;
        ::close(u);
        errno = e;
        return -1;
    }
    timeval tv{10, 0};
    ::setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return u;
}

int listening_socket(std::uint16_t& port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    port = bind_loopback(fd);
    ::listen(fd, 16);
    return fd;
}

bool closes_soon(std::uint16_t port) {
    for (int i = 0; i < 200; ++i) {
        int probe = connect_to(port);
        if (probe < 0) return true;
        ::close(probe);
        ::usleep(10000);
    }
    return false;
}

}  // namespace

TEST_CASE("egress gaps: a bare LF in chunked framing is refused with 400, never relayed") {
    Origin origin;
    REQUIRE(origin.port);
    // Directly, the origin reads each body as ending early and then serves
    // the request hidden in it: two answers on one connection.
    for (const auto& body : {size_line_smuggle(), trailer_smuggle()}) {
        std::string direct = talk(origin.port, post("/echo", body));
        CHECK(direct.rfind("HTTP/1.1 200", 0) == 0);
        CHECK(count(direct, "HTTP/1.") == 2);
        CHECK_THAT(direct, Catch::Contains("HTTP/1.1 404"));
    }
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    std::uint16_t hp = port_of(eg.http());
    std::string resp = talk(hp, post(origin.url("/echo"), size_line_smuggle()));
    CHECK(resp.rfind("HTTP/1.1 400", 0) == 0);
    CHECK(count(resp, "HTTP/1.") == 1);
    CHECK_THAT(resp, Catch::Contains("malformed chunked request body: bare LF in a chunk size line"));
    resp = talk(hp, post(origin.url("/echo"), trailer_smuggle()));
    CHECK(resp.rfind("HTTP/1.1 400", 0) == 0);
    CHECK(count(resp, "HTTP/1.") == 1);
    CHECK_THAT(resp, Catch::Contains("malformed chunked request body: bare LF in the trailer section"));
    // Well-formed chunked bodies still pass.
    resp = talk(hp, post(origin.url("/echo"), "5;x=1\r\nhello\r\n0\r\nX: y\r\n\r\n", true));
    CHECK(resp.rfind("HTTP/1.1 200", 0) == 0);
    CHECK_THAT(resp, Catch::EndsWith("got 5 bytes\n"));
    CHECK(eg.stop() == 0);
    std::vector<std::string> reasons;
    for (const auto& l : eg.lines)
        if (l["decision"] == "deny") {
            CHECK(l["rule"] == "malformed");
            reasons.push_back(l["reason"]);
        }
    // Connection lines come from more than one event loop: in any order.
    std::sort(reasons.begin(), reasons.end());
    CHECK(reasons == std::vector<std::string>{"malformed chunked request body: bare LF in a chunk size line",
                                              "malformed chunked request body: bare LF in the trailer section"});
}

TEST_CASE("egress gaps: the vetted name is resolved as is: no search list, ndots, LOCALDOMAIN or RES_OPTIONS") {
    Origin origin;
    // Only the searched spelling exists: an allowed name dialled as
    // "allowed.test.corp.example" would reach whatever that answers.
    Dns dns(std::map<std::string, std::string>{{"allowed.test.corp.example", "127.0.0.1"}});
    std::map<std::string, std::string> env{{"LOCALDOMAIN", "corp.example"}, {"RES_OPTIONS", "ndots:5"}};
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    auto found = default_cares("allowed.test", dns.server());
    for (const auto& [k, v] : env) ::unsetenv(k.c_str());
    CHECK(found == std::vector<std::string>{"127.0.0.1"});
    auto asked = dns.questions();
    REQUIRE_FALSE(asked.empty());
    CHECK(asked.front() == "allowed.test.corp.example");  // ndots:5: the search list first

    std::string url = "http://allowed.test:" + std::to_string(origin.port) + "/hello";
    auto exact_only = [&] {
        auto q = dns.questions();
        std::size_t from = asked.size();
        if (q.size() <= from) return false;
        for (std::size_t i = from; i < q.size(); ++i)
            if (q[i] != "allowed.test") return false;
        return true;
    };
    {
        Egress eg({"--allow", "allowed.test:*", "--allow", "127.0.0.1:*", "--no-baseline", "--dns-server", dns.server()}, env);
        auto r = curl({"-x", "http://" + eg.http(), "-o", "/dev/null", "-w", "%{http_code}", url});
        CHECK(http_code(r) == "502");
        CHECK(exact_only());
        CHECK(eg.stop() == 0);
        const json* l = eg.find("allowed.test");
        REQUIRE(l);
        CHECK((*l)["rule"] == "dns");
        CHECK_THAT((*l)["reason"].get<std::string>(), Catch::StartsWith("cannot resolve allowed.test: "));
        CHECK_FALSE(l->contains("address"));
    }
    // The host's resolv.conf with a search list and ndots (as in a Kubernetes
    // pod), put in place for cc-egress alone by a mount namespace.
    if (!cc::test::have_program("bwrap") || cc::test::run({"bwrap", "--dev-bind", "/", "/", "true"}).status != 0)
        CC_SKIP("bubblewrap cannot create namespaces here");
    std::string conf = cc::test::scratch_dir() + "/resolv.conf";
    std::ofstream(conf) << "search corp.example\noptions ndots:5\nnameserver 127.0.0.1\n";
    asked = dns.questions();
    Egress eg({"--allow", "allowed.test:*", "--allow", "127.0.0.1:*", "--no-baseline", "--dns-server", dns.server()}, {},
              {"bwrap", "--dev-bind", "/", "/", "--ro-bind", conf, "/etc/resolv.conf", "--die-with-parent", "--"});
    REQUIRE(eg.ready.value("event", "") == "ready");
    auto r = curl({"-x", "http://" + eg.http(), "-o", "/dev/null", "-w", "%{http_code}", url});
    CHECK(http_code(r) == "502");
    CHECK(exact_only());
}

TEST_CASE("egress gaps: Teredo and the other special-purpose IPv6 blocks; 6to4 only in its exact form") {
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline"});
    std::uint16_t hp = port_of(eg.http());
    // Teredo whose (inverted) client address is the metadata service.
    std::string resp = talk(hp, "CONNECT [2001:0:101:101::5601:5601]:80 HTTP/1.1\r\n\r\n");
    CHECK(resp.rfind("HTTP/1.1 403", 0) == 0);
    CHECK_THAT(resp, Catch::Contains("error=destination_ip_prohibited"));
    CHECK(eg.stop() == 0);
    const json* t = eg.find("2001:0:101:101::5601:5601");
    REQUIRE(t);
    CHECK_THAT((*t)["rule"].get<std::string>(), Catch::Contains("always-deny") && Catch::Contains("169.254.0.0/16"));

    auto r = cc::test::run({bin("cc-egress"), "--no-baseline", "--allow", "127.0.0.1:*", "--check", "[2002:7f00:1::]:80",
                            "[2002:7f00:1:abcd::1]:80", "[64:ff9b:1::a9fe:a9fe]:80", "[2001:2::1]:80", "[3fff::1]:80"});
    CHECK(r.status == 1);
    std::vector<json> lines;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
    REQUIRE(lines.size() == 5);
    CHECK(lines[0]["decision"] == "allow");  // 127.0.0.1 spelt exactly as 6to4
    CHECK(lines[1]["decision"] == "deny");   // elsewhere in its /48
    CHECK(lines[1]["rule"] == "no allow entry");
    CHECK_THAT(lines[2]["rule"].get<std::string>(), Catch::Contains("always-deny"));
    for (int i = 3; i < 5; ++i) CHECK(lines[i]["decision"] == "deny");
}

TEST_CASE("egress gaps: a non-ASCII wildcard pattern is refused at start, naming it") {
    auto r = cc::test::run({bin("cc-egress"), "--no-baseline", "--allow", "*.bücher.example", "--dry-run"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("'*.bücher.example'") && Catch::Contains("punycode"));
    CHECK(r.out.empty());
    r = cc::test::run({bin("cc-egress"), "--no-baseline", "--allow", "*.xn--bcher-kva.example", "--check",
                       "a.xn--bcher-kva.example:443", "a.bücher.example:443"});
    CHECK(r.status == 0);  // a client's non-ASCII name is mapped and then matched
    CHECK(count(r.out, "\"decision\":\"allow\"") == 2);
}

TEST_CASE("egress gaps: the fd inbox takes one handover per connection, and with --fd-inbox-once one in all") {
    Origin origin;
    std::string dir = cc::test::scratch_dir();
    std::string inbox = dir + "/gaps-inbox.sock";
    {
        // Without --fd-inbox-once anyone who can reach the inbox hands over
        // listeners (and, with "events", hears their connection lines) any
        // number of times: the shared-proxy case.
        Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--fd-inbox", inbox});
        REQUIRE(eg.ready["fdInbox"] == inbox);
        std::uint16_t p1 = 0, p2 = 0, p3 = 0;
        int l1 = listening_socket(p1), l2 = listening_socket(p2), l3 = listening_socket(p3);
        int a = inbox_connect(inbox), b = inbox_connect(inbox);
        REQUIRE(a >= 0);
        REQUIRE(b >= 0);
        CHECK(inbox_send(a, R"({"http":[0],"hold":true})", {l1})["ok"] == true);
        CHECK(inbox_send(b, R"({"http":[0],"hold":true})", {l2})["ok"] == true);
        ::close(l1);
        ::close(l2);
        auto r = curl({"-x", "http://127.0.0.1:" + std::to_string(p2), origin.url("/hello")});
        CHECK(r.out == "hello\n");
        // A second message on connection a: refused; a's listener closes and
        // so does a; l3 is never served (the kernel closed cc-egress's copy).
        std::string second = R"({"http":[0]})";
        CHECK(inbox_send(a, second, {l3}).is_discarded());
        CHECK(closes_soon(p1));
        char c;
        CHECK(::read(a, &c, 1) == 0);
        r = curl({"-x", "http://127.0.0.1:" + std::to_string(p2), origin.url("/hello")});
        CHECK(r.out == "hello\n");  // b's handover is untouched
        ::close(a);
        ::close(b);
        ::close(l3);
        CHECK(eg.stop() == 0);
        CHECK_THAT(eg.stderr_text(), Catch::Contains("fd inbox: refused a second message on a connection that made its "
                                                     "handover; its 1 handed-over listeners closed"));
    }
    auto r = cc::test::run({bin("cc-egress"), "--no-baseline", "--fd-inbox-once"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("--fd-inbox-once"));

    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--fd-inbox", inbox, "--fd-inbox-once"});
    REQUIRE(eg.ready["fdInbox"] == inbox);
    std::uint16_t p1 = 0, p2 = 0;
    int l1 = listening_socket(p1), l2 = listening_socket(p2);
    // Two connections made before the first handover: only one handover counts.
    int a = inbox_connect(inbox), b = inbox_connect(inbox);
    REQUIRE(a >= 0);
    REQUIRE(b >= 0);
    CHECK(inbox_send(a, R"({"http":[0],"hold":true})", {l1})["ok"] == true);
    json late = inbox_send(b, R"({"http":[0],"hold":true})", {l2});
    CHECK(late["ok"] == false);
    CHECK(late["error"] == "this inbox took its one handover (--fd-inbox-once)");
    // And the inbox is gone for anyone later.
    errno = 0;
    CHECK(inbox_connect(inbox) == -1);
    CHECK(errno == ENOENT);
    ::close(l1);
    auto c = curl({"-x", "http://127.0.0.1:" + std::to_string(p1), origin.url("/hello")});
    CHECK(c.out == "hello\n");
    ::close(a);
    ::close(b);
    ::close(l2);
    CHECK(eg.stop() == 0);
    CHECK_THAT(eg.stderr_text(), Catch::Contains("fd inbox: took its one handover; " + inbox + " is closed and removed"));
}
