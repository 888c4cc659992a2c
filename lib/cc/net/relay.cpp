#include "cc/net/relay.hpp"

#include <algorithm>

#include "cc/net/tls.hpp"

namespace cc::net::detail {

Deadline::Deadline(Server& srv, const std::shared_ptr<Conn>& c, int ms, Closed why, bool only_if_silent) : srv_(srv) {
    if (ms <= 0) return;
    Timeout t;
    t.kind = only_if_silent ? Timeout::Kind::first_byte : Timeout::Kind::deadline;
    t.conn = c;
    t.why = why;
    t.seen = c->up + c->down;
    t.armed = &armed_;
    at_ = srv.add_timeout(Clock::now() + std::chrono::milliseconds(ms), std::move(t));
    armed_ = true;
}

Deadline::~Deadline() {
    if (armed_) srv_.drop_timeout(at_);
}

void watch_idle(Server& srv, const std::shared_ptr<Conn>& c, int ms) {
    if (ms <= 0 || c->idle_home) return;
    Timeout t;
    t.kind = Timeout::Kind::idle;
    t.conn = c;
    t.why = Closed::idle_timeout;
    t.seen = c->up + c->down;
    t.since = Clock::now();
    t.step = std::chrono::milliseconds(std::max(1, ms / 8));
    t.limit = std::chrono::milliseconds(ms);
    auto at = t.since + t.step;
    c->idle_at = srv.add_timeout(at, std::move(t));
    c->idle_home = &srv;
}

// Append up to `max` bytes to `buf`; 0 at end of stream. Reads go through one
// scratch buffer right after readiness (no suspension between the read and
// the append), so an idle connection holds no read buffer of its own: 1,000
// tunnels waiting for their first bytes cost no 64 KiB each.
awaitable<std::size_t> read_more(Sock& s, std::string& buf, std::size_t max) {
    static thread_local char scratch[read_chunk];
    max = std::min(max, sizeof scratch);
    while (true) {
        ssize_t n = ::recv(s.native_handle(), scratch, max, MSG_DONTWAIT);
        if (n > 0) {
            buf.append(scratch, static_cast<std::size_t>(n));
            co_return static_cast<std::size_t>(n);
        }
        if (n == 0) co_return 0;
        if (errno == EINTR) continue;
        if (errno != EAGAIN) throw boost::system::system_error(ErrorCode(errno, boost::system::system_category()));
        co_await s.async_wait(Sock::wait_read, use_awaitable);
    }
}

// Written at once where the socket takes it (a reply of a few bytes almost
// always does), as read_more reads: no trip through the event loop per
// reply; the loop is waited on only while the socket's buffer is full.
awaitable<void> write_all(Sock& s, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::send(s.native_handle(), data.data(), data.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN) throw boost::system::system_error(ErrorCode(errno, boost::system::system_category()));
        co_await s.async_wait(Sock::wait_write, use_awaitable);
    }
}

// Copy bytes from `from` to `to` until EOF or `limit` bytes: splice(2) through
// a pipe (the kernel moves pages, nothing is copied through user space), or
// 64 KiB read/write when a socket type cannot splice.
awaitable<void> pump(Server& srv, Sock& from, Sock& to, std::uint64_t& count, std::uint64_t limit,
                     bool half_close) {
    int in = from.native_handle(), out = to.native_handle();
    std::optional<Pipe> pipe;
    std::size_t in_pipe = 0;
    std::uint64_t remaining = limit;
    bool eof = false;
    struct Release {
        Server& s;
        std::optional<Pipe>& p;
        std::size_t& n;
        ~Release() {
            if (!p) return;
            if (n == 0) s.release_pipe(*p);
            else ::close(p->r), ::close(p->w);  // holding stale bytes: never reuse
        }
    } release{srv, pipe, in_pipe};
    // Short exchanges go through read/write: a pipe costs more system calls
    // than it saves until a stream has moved some data. Past 64 KiB, splice.
    bool use_splice = false;
    bool can_splice = true;
    std::uint64_t moved = 0;
    std::string buf;
    while (true) {
        if (!use_splice && can_splice && moved >= read_chunk) {
            // splice(2) needs non-blocking sockets (read and write here use
            // MSG_DONTWAIT). The getter reads a flag, the setter is an
            // ioctl: paid by streams that get this far, not by every short one.
            if (!from.native_non_blocking()) from.native_non_blocking(true);
            if (!to.native_non_blocking()) to.native_non_blocking(true);
            use_splice = true;
        }
        if (use_splice) {
            if (in_pipe > 0) {
                ssize_t n = ::splice(pipe->r, nullptr, out, nullptr, in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n > 0) {
                    in_pipe -= static_cast<std::size_t>(n);
                    count += static_cast<std::uint64_t>(n);
                    continue;
                }
                if (n < 0 && errno == EAGAIN) {
                    co_await to.async_wait(Sock::wait_write, use_awaitable);
                    continue;
                }
                throw boost::system::system_error(ErrorCode(errno, boost::system::system_category()));
            }
            if (eof || remaining == 0) break;
            if (!pipe) {
                pipe = srv.acquire_pipe();
                if (!pipe) use_splice = can_splice = false;
                continue;
            }
            std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(remaining, 1 << 20));
            ssize_t n = ::splice(in, nullptr, pipe->w, nullptr, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                in_pipe += static_cast<std::size_t>(n);
                if (remaining != unlimited) remaining -= static_cast<std::uint64_t>(n);
                continue;
            }
            if (n == 0) {
                eof = true;
                continue;
            }
            if (errno == EAGAIN) {
                // Idle with an empty pipe: give it back so idle tunnels hold no pipes.
                srv.release_pipe(*pipe);
                pipe.reset();
                co_await from.async_wait(Sock::wait_read, use_awaitable);
                continue;
            }
            if (errno == EINVAL && in_pipe == 0) {
                use_splice = can_splice = false;
                continue;
            }
            throw boost::system::system_error(ErrorCode(errno, boost::system::system_category()));
        } else {
            if (eof || remaining == 0) break;
            std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(remaining, read_chunk));
            buf.clear();
            std::size_t n = co_await read_more(from, buf, want);
            if (n == 0) {
                eof = true;
                continue;
            }
            co_await write_all(to, buf);
            count += n;
            moved += n;
            if (remaining != unlimited) remaining -= n;
        }
    }
    if (eof && limit != unlimited) throw boost::system::system_error(asio::error::eof);  // body cut short
    if (eof && half_close) {
        ErrorCode ec;
        to.shutdown(Sock::shutdown_send, ec);
    }
}

namespace {

// The upstream-to-client half of a tunnel runs as its own coroutine; this
// wrapper owns its parameters (a coroutine must not borrow from its caller).
// With a TLS follower, the server's records are read (and passed on as they
// come) until its ServerHello says which version, and whether it asks for a
// second ClientHello; then splice.
awaitable<void> pump_detached(Server* srv, std::shared_ptr<Conn> c, std::shared_ptr<asio::steady_timer> done,
                              std::shared_ptr<bool> finished, std::shared_ptr<tls::Follower> follow) {
    try {
        if (follow) {
            std::string buf;
            while (!follow->server_done() && !follow->refused()) {
                buf.clear();
                std::size_t n = co_await read_more(*c->upstream, buf, 16 * 1024);
                if (n == 0) break;
                follow->server(buf);
                co_await write_all(c->client, buf);
                c->down += n;
            }
        }
        co_await pump(*srv, *c->upstream, c->client, c->down, unlimited, true);
    } catch (const std::exception& e) {
        note_error(*srv, "tunnel_down", e);
        c->close();  // a reset on one leg ends the tunnel
    }
    *finished = true;
    done->cancel();
}

}  // namespace


namespace {

// The server names of the ClientHellos the follower has seen: each must be
// the tunnel's host, or allowed itself (a CONNECT to an allowed host can
// carry the server name of another). With the network rule `ask`, another
// name must also have been approved already for this port: a tunnel the
// approver allowed for one name carries no name it refused or was never
// asked about. False: refused and decided.
bool hellos_pass(Server& srv, tls::Follower& f, const Target& t, Record& rec) {
    for (const auto& h : f.take_hellos()) {
        if (!h.has_sni) continue;
        if (!rec.j.contains("sni")) rec.j["sni"] = h.sni;
        Verdict v = srv.cfg.rules->check_sni(t, h.sni);
        if (v.allow && srv.cfg.ask) {
            auto n = canonical_target(h.sni);
            if (n && n->host != t.host) {
                bool ok = false;
                {
                    std::lock_guard<std::mutex> lock(srv.sh.asker_mu);
                    ok = srv.sh.asker && srv.sh.asker->approved(ask_key(n->host, t.port, n->address && !n->address->v4()));
                }
                if (!ok)
                    v = Verdict{false, "ask",
                                "TLS server name " + n->host + " was not approved (the approver was asked about " +
                                    t.host + ")",
                                "http_request_denied"};
            }
        }
        if (srv.cfg.report) v = report_only(v);
        if (v.would_deny) rec.decide(v);
        if (!v.allow) {
            rec.decide(v);
            return false;
        }
    }
    if (f.hello_retries() > 0) rec.j["tlsHelloRetry"] = true;
    return true;
}

}  // namespace


// Tunnel both ways. With the SNI check, the client's bytes go on record by
// record as the TLS follower clears them: every ClientHello (the first, and
// a second one after a HelloRetryRequest) is checked before it is forwarded,
// until the handshake's encrypted part starts; then splice.
awaitable<void> tunnel(Server& srv, std::shared_ptr<Conn> c, const Target& t, std::string pending, Record& rec) {
    auto ex = co_await asio::this_coro::executor;
    auto done = std::make_shared<asio::steady_timer>(ex, asio::steady_timer::time_point::max());
    auto finished = std::make_shared<bool>(false);
    std::shared_ptr<tls::Follower> follow;
    if (srv.cfg.sni_check) follow = std::make_shared<tls::Follower>();
    watch_idle(srv, c, srv.cfg.idle_timeout_ms);
    // A tunnel on which no byte moves either way is closed sooner than an
    // idle one: opened and left empty, it only holds two descriptors.
    Deadline first_byte(srv, c, pending.empty() ? srv.cfg.first_byte_timeout_ms : 0, Closed::first_byte_timeout, true);
    asio::co_spawn(ex, pump_detached(&srv, c, done, finished, follow), srv.on_done("a tunnel's downstream pump"));
    try {
        bool cleared = true;  // every client byte read so far may go on
        if (follow) {
            std::optional<Deadline> deadline;
            std::uint64_t sent = 0;
            follow->client(pending);
            bool tls_port = std::find(srv.cfg.tls_ports.begin(), srv.cfg.tls_ports.end(), t.port) != srv.cfg.tls_ports.end();
            while (true) {
                if (tls_port && follow->not_tls()) {
                    // Port 443 and the like carry TLS: other bytes there are
                    // some protocol the server-name rules cannot see into.
                    rec.decide(Verdict{false, "tls", "tunnel to " + t.host + ":" + std::to_string(t.port) +
                                                         " does not start with a TLS ClientHello (--tls-ports)", ""});
                    c->close();
                    break;
                }
                if (!hellos_pass(srv, *follow, t, rec)) {
                    c->close();
                    break;
                }
                if (follow->refused()) {
                    rec.decide(Verdict{false, "tls", follow->error() + " on tunnel to " + t.host, ""});
                    c->close();
                    break;
                }
                std::uint64_t ready = follow->client_ready();
                if (ready > sent) {
                    std::size_t n = static_cast<std::size_t>(ready - sent);
                    co_await write_all(*c->upstream, std::string_view(pending).substr(0, n));
                    c->up += n;
                    pending.erase(0, n);
                    sent = ready;
                }
                if (follow->client_done()) break;
                // The first ClientHello is due within the handshake timeout.
                if (follow->hellos() == 0 && !pending.empty() && !deadline)
                    deadline.emplace(srv, c, srv.cfg.handshake_timeout_ms, Closed::header_timeout);
                if (follow->hellos() > 0) deadline.reset();
                std::size_t before = pending.size();
                if (co_await read_more(c->client, pending, 16 * 1024) == 0) {
                    // Held bytes (part of a record) are not forwarded unread.
                    cleared = pending.empty();
                    break;
                }
                follow->client(std::string_view(pending).substr(before));
            }
        }
        if (c->client.is_open()) {
            if (!pending.empty() && cleared) {
                co_await write_all(*c->upstream, pending);
                c->up += pending.size();
            }
            std::string().swap(pending);
            co_await pump(srv, c->client, *c->upstream, c->up, unlimited, true);
            // The client left without a byte moving either way: nothing is
            // half-finished, so its descriptors (and its place under the
            // caps) are given back now, not when the upstream hangs up.
            if (c->up == 0 && c->down == 0) c->close();
        }
    } catch (const std::exception& e) {
        note_error(srv, "tunnel_up", e);
        c->close();
    }
    if (!*finished) {
        ErrorCode ec;
        co_await done->async_wait(asio::redirect_error(use_awaitable, ec));
    }
}

}  // namespace cc::net::detail
