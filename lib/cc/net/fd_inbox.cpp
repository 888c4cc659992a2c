#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

#include "cc/net/relay.hpp"
#include "cc/core/json_writer.hpp"

namespace cc::net::detail {

namespace {

// A client sends one message: SCM_RIGHTS with listening stream sockets and a
// JSON payload naming them by index, {"http":[0],"socks":[1]}. Each becomes a
// listener of that kind; the reply is one line {"ok":true} or {"ok":false,...}.
// A captured sandbox (cc-wrap --capture) adds "captured":[2,3,...], its
// wildcard listeners, one a port, "dns":[4,5], its bound UDP sockets, and
// "report":[6,...], raw UDP and TCP sockets whose copies of datagrams and
// SYNs are reported.
// With "hold":true the listeners live only as long as the client keeps its
// connection open (cc-wrap holds it for the sandbox's lifetime), so a
// long-lived session proxy serving many launches never piles up listeners in
// network namespaces that are gone. With "events":true as well, the
// connection lines of those listeners also go back on that connection after
// the reply (EventSink), until the client shuts down its side and the last
// of those connections has ended.
struct InboxRequest {
    bool hold = false, events = false;
    std::vector<std::pair<int, Kind>> listeners;
    std::vector<int> dns;
    std::vector<int> report;
};

std::string parse_inbox_request(const std::string& payload, const std::vector<int>& fds, std::vector<bool>& used,
                                InboxRequest& rq) {
    json j;
    try {
        j = json::parse(payload);
    } catch (const std::exception&) {
        return "payload is not JSON";
    }
    if (!j.is_object()) return "payload must be a JSON object";
    for (auto& [key, val] : j.items()) {
        if (key == "hold" || key == "events") {
            if (!val.is_boolean()) return "'" + key + "' must be true or false";
            (key == "hold" ? rq.hold : rq.events) = val.get<bool>();
            continue;
        }
        Kind kind;
        bool dns = key == "dns", report = key == "report";
        if (key == "http") kind = Kind::http;
        else if (key == "socks") kind = Kind::socks;
        else if (key == "captured" || dns || report) kind = Kind::captured;
        else return "unknown field '" + key + "'";
        if (!val.is_array()) return "'" + key + "' must be an array of fd indexes";
        for (auto& v : val) {
            if (!v.is_number_unsigned() || v.get<std::size_t>() >= fds.size())
                return "'" + key + "' names an fd index that was not sent";
            std::size_t i = v.get<std::size_t>();
            if (used[i]) return "fd index " + std::to_string(i) + " named twice";
            used[i] = true;
            int type = 0, listening = 0;
            socklen_t l = sizeof type;
            ::getsockopt(fds[i], SOL_SOCKET, SO_TYPE, &type, &l);
            if (report) {
                int proto = 0;
                socklen_t pl = sizeof proto;
                ::getsockopt(fds[i], SOL_SOCKET, SO_PROTOCOL, &proto, &pl);
                if (type != SOCK_RAW || (proto != IPPROTO_UDP && proto != IPPROTO_TCP))
                    return "fd index " + std::to_string(i) + " is not a raw UDP or TCP socket";
                rq.report.push_back(fds[i]);
                continue;
            }
            if (dns) {
                sockaddr_storage ss{};
                socklen_t sl = sizeof ss;
                if (type != SOCK_DGRAM || ::getsockname(fds[i], reinterpret_cast<sockaddr*>(&ss), &sl) != 0 ||
                    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
                    return "fd index " + std::to_string(i) + " is not a bound UDP socket";
                rq.dns.push_back(fds[i]);
                continue;
            }
            l = sizeof listening;
            ::getsockopt(fds[i], SOL_SOCKET, SO_ACCEPTCONN, &listening, &l);
            if (type != SOCK_STREAM || !listening) return "fd index " + std::to_string(i) + " is not a listening stream socket";
            rq.listeners.emplace_back(fds[i], kind);
        }
    }
    if (rq.listeners.empty() && rq.dns.empty()) return "no listeners named";
    if (!rq.report.empty() && rq.dns.empty()) return "'report' comes with 'dns' (a captured sandbox's)";
    if (rq.events && !rq.hold) return "'events' needs 'hold': lines go back on the held connection";
    return "";
}

std::string take_fds(Server& srv, const InboxRequest& rq, const std::shared_ptr<EventSink>& sink,
                     std::vector<int>& adopted) {
    for (auto& [fd, kind] : rq.listeners) {
        int fl = ::fcntl(fd, F_GETFL);
        ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        auto r = add_listener(srv, fd, kind, "", sink);
        if (!r) return r.error().one_line();
        adopted.push_back(fd);
        srv.log("fd inbox: listening for " + std::string(to_string(kind)) + " on " + *r +
                (rq.hold ? " (while the sender holds its connection)" : "") +
                (sink ? "; its connection lines go back to the sender too" : ""));
    }
    for (int fd : rq.dns) {
        int fl = ::fcntl(fd, F_GETFL);
        ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        // Where the query went is where the answer comes from.
        int one = 1;
        ::setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
        sockaddr_storage ss{};
        socklen_t l = sizeof ss;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &l);
        std::string name = "dns " + describe_client(Proto::endpoint(&ss, l), "");
        asio::co_spawn(srv.io, serve_dns(srv, fd, name, sink), srv.on_done("a DNS socket"));
        adopted.push_back(fd);
        srv.log("fd inbox: answering DNS on " + name.substr(4) + " from the name pool " + FakePool::range() +
                (rq.hold ? " (while the sender holds its connection)" : ""));
    }
    // The ports this handover's captured listeners take: a SYN to any other
    // is refused by the kernel, and reported.
    auto captured = std::make_shared<std::set<std::uint16_t>>();
    for (auto& [fd, kind] : rq.listeners) {
        sockaddr_storage ss{};
        socklen_t l = sizeof ss;
        if (kind == Kind::captured && ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &l) == 0)
            captured->insert(port_of(reinterpret_cast<sockaddr*>(&ss)));
    }
    for (int fd : rq.report) {
        int fl = ::fcntl(fd, F_GETFL);
        ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        asio::co_spawn(srv.io, serve_report(srv, fd, captured, sink), srv.on_done("a report socket"));
        adopted.push_back(fd);
    }
    return "";
}

// Closes handed-over listeners on every event loop: each loop accepts on its
// own duplicate of a listening socket, so they are matched by the socket's
// inode (the same for every duplicate), taken while `fds` are still open.
void close_listeners(Server& srv, const std::vector<int>& fds) {
    auto inodes = std::make_shared<std::vector<ino_t>>();
    for (int fd : fds) {
        struct stat st {};
        if (::fstat(fd, &st) == 0) inodes->push_back(st.st_ino);
    }
    for (auto& l : srv.sh.loops)
        asio::post(l->io, [loop = l.get(), inodes] {
            auto handed = [&](int fd) {
                struct stat st {};
                return ::fstat(fd, &st) == 0 && std::find(inodes->begin(), inodes->end(), st.st_ino) != inodes->end();
            };
            ErrorCode ignored;
            for (auto& a : loop->acceptors)
                if (a->is_open() && handed(a->native_handle())) a->close(ignored);
            bool parked = false;
            for (int* fd : loop->parked_listeners)
                if (*fd >= 0 && handed(*fd)) ::close(*fd), *fd = -1, parked = true;
            if (parked && loop->standby) loop->standby->cancel();  // their accept loops end
            for (auto& d : loop->datagrams)
                if (d->is_open() && handed(d->native_handle())) d->close(ignored);
        });
}

awaitable<void> serve_inbox_client(Server& srv, Sock s) {
    auto c = std::make_shared<Conn>(std::move(s));
    std::vector<int> adopted;
    bool hold = false;
    std::shared_ptr<EventSink> sink;
    try {
        std::string reply;
        {
            Deadline deadline(srv, c, srv.cfg.handshake_timeout_ms);
            c->client.native_non_blocking(true);
            char data[8192];
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 64)];
            ssize_t n;
            msghdr msg{};
            while (true) {
                iovec iov{data, sizeof data};
                msg = msghdr{};
                msg.msg_iov = &iov;
                msg.msg_iovlen = 1;
                msg.msg_control = control;
                msg.msg_controllen = sizeof control;
                n = ::recvmsg(c->client.native_handle(), &msg, MSG_CMSG_CLOEXEC);
                if (n < 0 && errno == EAGAIN) {
                    co_await c->client.async_wait(Sock::wait_read, use_awaitable);
                    continue;
                }
                break;
            }
            std::vector<int> fds;
            for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); n >= 0 && cm; cm = CMSG_NXTHDR(&msg, cm)) {
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
                std::size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (std::size_t i = 0; i < count; ++i) {
                    int fd;
                    std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
                    fds.push_back(fd);
                }
            }
            std::string err;
            std::vector<bool> used(fds.size(), false);
            InboxRequest rq;
            if (n <= 0) err = "no message";
            else if (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) err = "message or descriptors truncated";
            else err = parse_inbox_request(std::string(data, static_cast<std::size_t>(n)), fds, used, rq);
            hold = rq.hold;
            if (err.empty() && srv.cfg.fd_inbox_once && srv.inbox_taken)
                err = "this inbox took its one handover (--fd-inbox-once)";
            if (err.empty() && rq.events) sink = std::make_shared<EventSink>(srv, c);
            if (err.empty()) err = take_fds(srv, rq, sink, adopted);
            if (err.empty() && srv.cfg.fd_inbox_once) {
                // One handover per session: nobody else may hand this session
                // listeners (and hear their connection lines) later.
                srv.inbox_taken = true;
                ErrorCode ignored;
                if (srv.inbox) srv.inbox->close(ignored);
                ::unlink(srv.cfg.fd_inbox->c_str());
                srv.log("fd inbox: took its one handover; " + *srv.cfg.fd_inbox + " is closed and removed");
            }
            // Descriptors not adopted (unused, or all of them after an error) are closed.
            for (std::size_t i = 0; i < fds.size(); ++i)
                if (std::find(adopted.begin(), adopted.end(), fds[i]) == adopted.end()) ::close(fds[i]);
            if (!err.empty()) {
                // Listeners adopted before the error are dropped too: all or nothing.
                close_listeners(srv, adopted);
                adopted.clear();
            }
            reply = err.empty() ? cc::json::write(json{{"ok", true}}) : cc::json::write(json{{"ok", false}, {"error", err}});
            if (!err.empty()) {
                srv.log("fd inbox: " + err);
                if (sink) sink->forget();  // adopted nothing: nothing will report
                sink.reset();
            }
            reply += "\n";
            co_await write_all(c->client, reply);
            if (sink) sink->open();  // connection lines only after the reply
        }
        if (hold && !adopted.empty()) {
            // Nothing more is expected: wait for the sender to close, or for
            // shutdown (which closes every live connection, this one too).
            std::uint64_t id = srv.next_id++;
            srv.live[id] = c;
            // One handover per connection: a second message (or any byte) on
            // it is refused, and the listeners it holds close with it (its
            // descriptors, read here without room for them, are closed by
            // the kernel).
            std::array<char, 64> extra;
            ErrorCode ec;
            std::size_t n = 0;
            while (!ec && !srv.stopping && n == 0)
                n = co_await c->client.async_read_some(asio::buffer(extra), asio::redirect_error(use_awaitable, ec));
            close_listeners(srv, adopted);
            srv.live.erase(id);
            if (n > 0) {
                srv.log("fd inbox: refused a second message on a connection that made its handover; its " +
                        std::to_string(adopted.size()) + " handed-over listeners closed");
                c->close();
            } else if (!srv.stopping) {
                srv.log("fd inbox: sender gone; " + std::to_string(adopted.size()) + " handed-over listeners closed");
            }
        }
    } catch (const std::exception& e) {
        note_error(srv, "fd_inbox", e);
    }
    // With events, the sink closes the connection once the last connection
    // it reports for has ended (their lines still go out).
    if (!sink || srv.stopping) c->close();
}

}  // namespace

awaitable<void> inbox_loop(Server& srv, Acceptor& acc) {
    while (!srv.stopping) {
        ErrorCode ec;
        Sock s = co_await acc.async_accept(asio::redirect_error(use_awaitable, ec));
        if (ec) {
            if (srv.stopping || ec == asio::error::operation_aborted) co_return;
            continue;
        }
        asio::co_spawn(srv.io, serve_inbox_client(srv, std::move(s)), srv.on_done("an fd-inbox client"));
    }
}

}  // namespace cc::net::detail
