#include <netinet/tcp.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>

#include "cc/net/session.hpp"

namespace cc::net::detail {

namespace {

// Parked: the listener is taken out of this loop's epoll set (asio's
// release; the descriptor stays ours, listed in `parked_listeners` so that
// closing handed-over listeners and stopping close it too), and the loop
// waits on its standby timer. True when it may accept again.
awaitable<bool> park(Server& srv, Acceptor& acc) {
    ErrorCode ec;
    Proto proto = acc.local_endpoint(ec).protocol();
    if (ec) co_return false;  // the first loop still accepts on it
    int held = acc.release(ec);
    if (ec) co_return false;
    srv.parked_listeners.push_back(&held);
    // Woken when the first loop gets busy, when this loop stops, and when
    // parked listeners are closed (the frame holds the listeners' event
    // sink, which must go with them); otherwise parked again.
    Server& first = *srv.sh.loops[0];
    do {
        co_await srv.standby->async_wait(asio::redirect_error(use_awaitable, ec));
        if (held < 0 || srv.stopping) break;
        srv.parked.store(true);
    } while (first.serving.load() < k_first_loop_busy);
    std::erase(srv.parked_listeners, &held);
    if (held < 0) co_return false;  // closed while parked
    if (srv.stopping) {
        ::close(held);
        co_return false;
    }
    acc.assign(proto, held, ec);
    if (ec) {
        ::close(held);
        srv.log("loop " + std::to_string(srv.index) + ": cannot take up a parked listener again: " + ec.message());
        co_return false;
    }
    co_return true;
}

awaitable<void> accept_loop(Server& srv, Acceptor& acc, Kind kind, std::string listener, std::string key,
                            std::shared_ptr<EventSink> sink) {
    Server& first = *srv.sh.loops[0];
    bool joined = false;
    while (!srv.stopping) {
        ErrorCode ec;
        // A later loop joins when the first serves k_first_loop_busy
        // connections, and takes connections while the first serves any;
        // otherwise it parks until the first gets busy. `parked` is
        // published before the count is read, and the first loop reads it
        // after counting: one of the two sees the other (sequentially
        // consistent atomics), so no wake is lost.
        if (&srv != &first && first.serving.load() < (joined ? 1 : k_first_loop_busy)) {
            srv.parked.store(true);
            if (first.serving.load() < k_first_loop_busy) {
                if (!co_await park(srv, acc)) co_return;
                continue;
            }
        }
        joined = true;
        Proto::endpoint peer;
        Sock s = co_await acc.async_accept(peer, asio::redirect_error(use_awaitable, ec));
        if (ec) {
            if (srv.stopping || ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
            srv.sh.metrics.error("accept");
            srv.log("accept on " + listener + ": " + ec.message());
            // Out of descriptors: back off rather than spin.
            asio::steady_timer t(srv.io, std::chrono::milliseconds(100));
            co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
            continue;
        }
        asio::co_spawn(srv.io, serve(srv, kind, std::move(s), listener, key, peer, sink), srv.on_done("a connection"));
    }
}

}  // namespace

Result<int> listen_fd(const sockaddr* sa, socklen_t len, const std::string& what) {
    int fd = ::socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return io_error(what, "cannot create socket");
    int one = 1;
    if (sa->sa_family != AF_UNIX) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, sa, len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        ::close(fd);
        return io_error(what, "cannot listen", e);
    }
    return fd;
}

Result<std::string> add_listener(Server& srv, int fd, Kind kind, const std::string& listener,
                                 std::shared_ptr<EventSink> sink) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return io_error(listener, "getsockname");
    auto acc = std::make_unique<Acceptor>(srv.io);
    ErrorCode ec;
    acc->assign(Proto(ss.ss_family, IPPROTO_IP), fd, ec);
    if (ec) return io_error(listener, "cannot use listening socket", ec.value());
    // Every other loop accepts on a duplicate of the same socket: whichever
    // loop is free takes the next connection.
    std::vector<int> dups;
    for (std::size_t i = 1; i < srv.sh.loops.size(); ++i) {
        int d = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (d < 0) {
            for (int x : dups) ::close(x);
            return io_error(listener, "cannot duplicate listening socket", errno);
        }
        dups.push_back(d);
    }
    std::string where = listener;
    if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
        auto a = address_of(reinterpret_cast<sockaddr*>(&ss));
        where = (a->v4() ? a->to_string() : "[" + a->to_string() + "]") + ":" +
                std::to_string(port_of(reinterpret_cast<sockaddr*>(&ss)));
    }
    std::string name = listener.empty() ? where : listener;
    std::string key = name + "#" + std::to_string(srv.sh.next_listener++);
    // The proxy protocols speak first from the client's side: a connection
    // is taken only once its first bytes are there (TCP_DEFER_ACCEPT), so
    // its first read needs no second trip through the event loop, and a
    // client that connects and says nothing holds no descriptor of ours.
    // Not on captured listeners: SSH, SMTP and the like wait for the server.
    if (kind != Kind::captured && (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)) {
        int secs = std::max(1, srv.cfg.handshake_timeout_ms / 1000);
        ::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof secs);
    }
    // No delay on the client leg: set once here, every accepted socket
    // inherits it (serve() then needs no call per connection).
    if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    asio::co_spawn(srv.io, accept_loop(srv, *acc, kind, name, key, sink), srv.on_done("a listener"));
    srv.acceptors.push_back(std::move(acc));
    for (std::size_t i = 1; i < srv.sh.loops.size(); ++i) {
        Server* other = srv.sh.loops[i].get();
        asio::post(other->io, [other, d = dups[i - 1], family = ss.ss_family, kind, name, key, sink] {
            if (other->stopping) {
                ::close(d);
                return;
            }
            auto a = std::make_unique<Acceptor>(other->io);
            ErrorCode e;
            a->assign(Proto(family, IPPROTO_IP), d, e);
            if (e) {
                ::close(d);
                other->log("loop " + std::to_string(other->index) + ": cannot use listening socket " + name);
                return;
            }
            asio::co_spawn(other->io, accept_loop(*other, *a, kind, name, key, sink), other->on_done("a listener"));
            other->acceptors.push_back(std::move(a));
        });
    }
    return where;
}

Result<std::string> listen_tcp(Server& srv, const std::string& host, std::uint16_t port, Kind kind) {
    auto a = parse_ip_literal(host);
    if (!a) return input_error("'" + host + "'", "listen address must be an IP address");
    sockaddr_storage ss{};
    socklen_t len;
    if (a->v4()) {
        auto* in = reinterpret_cast<sockaddr_in*>(&ss);
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        std::memcpy(&in->sin_addr, a->bytes.data() + 12, 4);
        len = sizeof *in;
    } else {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        std::memcpy(&in6->sin6_addr, a->bytes.data(), 16);
        len = sizeof *in6;
    }
    auto fd = listen_fd(reinterpret_cast<sockaddr*>(&ss), len, host + ":" + std::to_string(port));
    if (!fd) return fd.error();
    return add_listener(srv, *fd, kind, "");
}

Result<int> listen_unix(Server& srv, const std::string& path) {
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    if (path.size() >= sizeof un.sun_path) return input_error("'" + path + "'", "Unix socket path too long");
    std::memcpy(un.sun_path, path.c_str(), path.size() + 1);
    auto fd = listen_fd(reinterpret_cast<sockaddr*>(&un), sizeof un, "'" + path + "'");
    if (!fd) return fd.error();
    srv.unlink_at_exit.push_back(path);
    return *fd;
}

}  // namespace cc::net::detail
