// cc-egress's fd inbox (listening sockets passed with SCM_RIGHTS, one made
// inside a fresh network namespace) and its lifecycle: --exit-with-stdin,
// SIGTERM with tunnels open, an idle upstream redialled.

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

#include <sys/stat.h>

#include "egress_fixture.hpp"

using namespace egress_fixture;

TEST_CASE("egress: listening sockets handed over the fd inbox serve like the TCP ones") {
    Origin origin;
    std::string dir = cc::test::scratch_dir();
    std::string inbox = dir + "/inbox.sock";
    Egress eg({"--allow", "127.0.0.1:*", "--no-baseline", "--fd-inbox", inbox, "--unix-dir", dir});
    REQUIRE(eg.ready["fdInbox"] == inbox);
    // The owner's alone whatever the umask (the test runs with 022: a socket
    // would be 0755 by default, connectable by anyone).
    struct stat ist {};
    REQUIRE(::stat(inbox.c_str(), &ist) == 0);
    CHECK((ist.st_mode & 0777) == 0600);
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
    // Removed at exit: gone, not merely unreadable.
    CHECK(::access((dir + "/http.sock").c_str(), F_OK) == -1);
    CHECK(errno == ENOENT);
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
