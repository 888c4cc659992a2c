#include "cc/net/session.hpp"

#include <netinet/tcp.h>

#include <cstring>

#include "cc/net/relay.hpp"

namespace cc::net::detail {

const char* to_string(Closed c) {
    switch (c) {
    case Closed::header_timeout: return "header-timeout";
    case Closed::first_byte_timeout: return "first-byte-timeout";
    case Closed::idle_timeout: return "idle-timeout";
    case Closed::shutdown: return "shutdown";
    case Closed::none: break;
    }
    return "";
}

void Shared::stop_all() {
    if (stopping.exchange(true)) return;
    for (auto& l : loops) asio::post(l->io, [s = l.get()] { s->stop_here(); });
    // Destroying the resolver joins its thread; pending lookups complete with an error.
    std::unique_ptr<Resolver> r;
    {
        std::lock_guard<std::mutex> lock(resolver_mu);
        r = std::move(resolver);
    }
    // Destroying the asker kills running approvers; their waiters get deny.
    std::unique_ptr<Asker> a, b;
    {
        std::lock_guard<std::mutex> lock(asker_mu);
        a = std::move(asker);
        b = std::move(request_asker);
    }
}

void note_error(Server& srv, const char* kind, const std::exception& e) {
    srv.sh.metrics.error(kind);
    if (auto* se = dynamic_cast<const boost::system::system_error*>(&e)) {
        auto ec = se->code();
        if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
            ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor ||
            ec == asio::error::not_connected || ec == asio::error::timed_out)
            return;
    }
    srv.log(std::string(kind) + ": " + e.what());
}

void Server::internal_error(const char* what, const std::exception_ptr& e) noexcept {
    try {
        std::string why = "an unknown exception";
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            why = x.what();
        } catch (...) {
        }
        sh.metrics.error("internal_error");
        log(std::string("internal error in ") + what + " (still serving): " + why);
    } catch (...) {
    }
}

Conn::~Conn() {
    if (idle_home) idle_home->drop_timeout(idle_at);
}

// While the loop runs the timer is left as it is (it finds nothing due and
// moves on); once it is stopping, the last entry gone lets the loop end.
void Server::drop_timeout(Timeouts::iterator it) {
    timeouts.erase(it);
    if (stopping && timeouts.empty() && sweep) {
        sweep->cancel();
        sweep_at = Clock::time_point::max();
    }
}

Timeouts::iterator Server::add_timeout(Clock::time_point at, Timeout t) {
    auto it = timeouts.emplace(at, std::move(t));
    if (at < sweep_at && sweep) {
        sweep_at = at;
        sweep->expires_at(at);  // a wait already armed ends with operation_aborted
        sweep->async_wait([this](ErrorCode ec) {
            if (!ec) sweep_timeouts();
        });
    }
    return it;
}

// The due entries are taken out first and the connections closed after, so
// that nothing a close sets off can touch the list while it is walked.
void Server::sweep_timeouts() {
    sweep_at = Clock::time_point::max();
    const auto now = Clock::now();
    std::vector<std::pair<std::shared_ptr<Conn>, Closed>> due;
    while (!timeouts.empty() && timeouts.begin()->first <= now) {
        auto node = timeouts.extract(timeouts.begin());
        Timeout& t = node.mapped();
        auto c = t.conn.lock();
        switch (t.kind) {
        case Timeout::Kind::deadline:
            *t.armed = false;
            if (c) due.emplace_back(std::move(c), t.why);
            break;
        case Timeout::Kind::first_byte:
            *t.armed = false;
            if (c && c->up + c->down == t.seen) due.emplace_back(std::move(c), t.why);
            break;
        case Timeout::Kind::idle: {
            if (!c) break;  // (the connection takes its entry out when it goes)
            if (!c->client.is_open()) {  // finished or closed for another reason
                c->idle_home = nullptr;
                break;
            }
            if (c->up + c->down != t.seen) {
                t.seen = c->up + c->down;
                t.since = now;
            } else if (now - t.since >= t.limit) {
                c->idle_home = nullptr;
                due.emplace_back(std::move(c), t.why);
                break;
            }
            node.key() = now + t.step;
            c->idle_at = timeouts.insert(std::move(node));
            break;
        }
        }
    }
    if (!timeouts.empty() && sweep) {
        sweep_at = timeouts.begin()->first;
        sweep->expires_at(sweep_at);
        sweep->async_wait([this](ErrorCode ec) {
            if (!ec) sweep_timeouts();
        });
    }
    for (auto& [c, why] : due) c->close(why);
}

void Server::run() noexcept {
    for (;;) {
        try {
            io.run();
            return;
        } catch (...) {
            // Asio lets a throwing handler's exception out of run(); the
            // loop's other work is intact and run() picks it up again.
            internal_error("an event handler", std::current_exception());
        }
    }
}

template <typename Token>
auto async_ask(Server& s, std::string key, json question, Token&& token, std::unique_ptr<Asker> Shared::*which = &Shared::asker) {
    return asio::async_initiate<Token, void(AskOutcome)>(
        [&s, which](auto handler, std::string k, json q) {
            auto work = asio::make_work_guard(s.io);
            auto h = std::make_shared<decltype(handler)>(std::move(handler));
            std::lock_guard<std::mutex> lock(s.sh.asker_mu);
            auto& asker = s.sh.*which;
            if (!asker) {
                asio::post(s.io, [h] { (*h)(AskOutcome{false, "ask without approver", false}); });
                return;
            }
            // The answer comes on the asker's thread (or here, when cached): back to this loop.
            asker->ask(k, std::move(q), [&s, h, work](const AskOutcome& o) mutable {
                asio::post(s.io, [h, o, work]() mutable { (*h)(o); });
            });
        },
        token, std::move(key), std::move(question));
}

awaitable<AskOutcome> ask_request(Server& srv, std::string key, json question) {
    co_return co_await async_ask(srv, std::move(key), std::move(question), use_awaitable, &Shared::request_asker);
}

template <typename Token>
auto async_resolve(Server& s, std::string name, Token&& token) {
    return asio::async_initiate<Token, void(Resolution)>(
        [&s](auto handler, std::string n) {
            auto work = asio::make_work_guard(s.io);
            auto h = std::make_shared<decltype(handler)>(std::move(handler));
            std::lock_guard<std::mutex> lock(s.sh.resolver_mu);
            if (!s.sh.resolver) {
                asio::post(s.io, [h] { (*h)(Resolution{false, "shutting down", {}}); });
                return;
            }
            s.sh.resolver->resolve(std::move(n), [&s, h, work](Resolution r) mutable {
                asio::post(s.io, [h, r = std::move(r), work]() mutable { (*h)(std::move(r)); });
            });
        },
        token, std::move(name));
}

std::string ask_key(const std::string& host, std::uint16_t port, bool v6_literal) {
    return (v6_literal ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

awaitable<Vetting> vet(Server& srv, const Target& t, Record& rec) {
    Vetting v;
    v.verdict = srv.cfg.rules->check_target(t);
    if (srv.cfg.report) v.verdict = report_only(v.verdict);
    if (!v.verdict.allow) co_return v;
    if (srv.cfg.ask) {
        // Without an approver an ask is deny whatever the addresses: the
        // name is never looked up.
        bool can_ask = false;
        {
            std::lock_guard<std::mutex> lock(srv.sh.asker_mu);
            can_ask = srv.sh.asker && srv.sh.asker->has_approver();
        }
        if (!can_ask) {
            rec.j["ask"] = "deny";
            srv.sh.metrics.ask("deny");
            v.verdict = Verdict{false, "ask", "ask without approver", "http_request_denied"};
            co_return v;
        }
    }
    // Every address must pass, not just the one dialled: a resolver that mixes
    // a public and a private answer is rebinding. In report mode an address
    // refused only for its port is let through, marked.
    auto vet_address = [&](const Address& a) {
        Verdict av = srv.cfg.rules->check_address(t, a);
        if (srv.cfg.report) av = report_only(av);
        if (!av.allow || (av.would_deny && !v.verdict.would_deny)) v.verdict = av;
        return av.allow;
    };
    if (t.address) {
        // An allowed literal was vetted by check_target; one let through by
        // report mode still meets the address rules.
        if (v.verdict.would_deny && !vet_address(*t.address)) co_return v;
        v.addrs.push_back(*t.address);
    } else {
        auto asked = Clock::now();
        Resolution r = co_await async_resolve(srv, t.host, use_awaitable);
        srv.sh.metrics.resolved(std::chrono::duration<double>(Clock::now() - asked).count());
        if (!r.ok) {
            srv.sh.metrics.error("dns");
            v.dns_failed = true;
            v.verdict = Verdict{false, "dns", "cannot resolve " + t.host + ": " + r.error, "dns_error"};
            co_return v;
        }
        for (const auto& a : r.addresses)
            if (!vet_address(a)) co_return v;
        v.addrs = std::move(r.addresses);  // (a would_deny name verdict stays, its addresses vetted)
    }
    // Asked last, once every address passed: a name that resolves to a
    // refused address is refused without asking (the approver never sees,
    // and never approves, what the address checks would refuse). Only
    // targets the rules let through are asked, so looking the name up first
    // tells the resolver nothing a connection would not.
    if (srv.cfg.ask) {
        json q = srv.cfg.ask_question;
        q["host"] = t.host;
        q["port"] = t.port;
        q["proto"] = rec.j.value("proto", "");
        q["client"] = rec.j.value("client", "");
        AskOutcome o = co_await async_ask(srv, ask_key(t.host, t.port, t.address && !t.address->v4()), std::move(q),
                                          use_awaitable);
        rec.j["ask"] = o.allow ? "allow" : "deny";
        if (o.cached) rec.j["askCached"] = true;
        srv.sh.metrics.ask(o.cached ? "cached" : o.allow ? "allow" : "deny");
        if (!o.allow) {
            v.verdict = Verdict{false, "ask", o.reason, "http_request_denied"};
            v.addrs.clear();
        }
    }
    co_return v;
}

awaitable<Dialed> dial(Server& srv, std::shared_ptr<Conn> c, const std::vector<Address>& addrs, std::uint16_t port) {
    Dialed d;
    for (const auto& a : addrs) {
        sockaddr_storage ss{};
        socklen_t len;
        if (a.v4()) {
            auto* in = reinterpret_cast<sockaddr_in*>(&ss);
            in->sin_family = AF_INET;
            in->sin_port = htons(port);
            std::memcpy(&in->sin_addr, a.bytes.data() + 12, 4);
            len = sizeof(sockaddr_in);
        } else {
            auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
            in6->sin6_family = AF_INET6;
            in6->sin6_port = htons(port);
            std::memcpy(&in6->sin6_addr, a.bytes.data(), 16);
            len = sizeof(sockaddr_in6);
        }
        // Connected here and then waited on for writability: asio's
        // connect adds a poll (for the result) to every dial. The socket is
        // opened through asio (an accepted or assigned one is closed with
        // an extra EPOLL_CTL_DEL, as asio cannot know it is no duplicate).
        ErrorCode ec;
        int err = 0;
        c->upstream.emplace(srv.io);
        c->upstream->open(Proto(ss.ss_family, IPPROTO_TCP), ec);
        if (!ec) c->upstream->native_non_blocking(true, ec);
        if (ec) err = ec.value();
        else {
            int fd = c->upstream->native_handle();
            int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            if (::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) err = errno == EINTR ? EINPROGRESS : errno;
        }
        if (err == EINPROGRESS) {
            asio::steady_timer timer(srv.io);
            timer.expires_after(std::chrono::milliseconds(srv.cfg.connect_timeout_ms));
            timer.async_wait([w = std::weak_ptr<Conn>(c)](ErrorCode tec) {
                if (tec) return;
                if (auto conn = w.lock(); conn && conn->upstream) {
                    ErrorCode e;
                    conn->upstream->close(e);
                }
            });
            co_await c->upstream->async_wait(Sock::wait_write, asio::redirect_error(use_awaitable, ec));
            timer.cancel();
            if (ec) err = ec == asio::error::operation_aborted ? ETIMEDOUT : ec.value();
            else if (!c->upstream->is_open()) err = ETIMEDOUT;
            else {
                socklen_t elen = sizeof err;
                if (::getsockopt(c->upstream->native_handle(), SOL_SOCKET, SO_ERROR, &err, &elen) != 0) err = errno;
            }
        }
        if (err == 0 && c->upstream->is_open()) {
            d.ok = true;
            d.address = a.to_string();
            co_return d;
        }
        d.err = err;
        srv.sh.metrics.error(d.err == ETIMEDOUT ? "connect_timeout" : d.err == ECONNREFUSED ? "connect_refused" : "connect_failed");
        c->upstream.reset();
        if (srv.stopping) break;
    }
    co_return d;
}

std::string describe_client(const Proto::endpoint& peer, const std::string& listener) {
    const sockaddr* sa = peer.data();
    if (peer.size() >= sizeof(sockaddr_in) && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)) {
        if (auto a = address_of(sa)) {
            return a->to_string() + ":" + std::to_string(port_of(sa));
        }
    }
    return listener;
}

bool token_matches(const ProxyConfig& cfg, std::string_view given) {
    const std::string& want = *cfg.auth_token;
    if (given.size() != want.size()) return false;
    volatile unsigned char diff = 0;
    for (std::size_t i = 0; i < want.size(); ++i) diff = diff | (given[i] ^ want[i]);
    return diff == 0;
}

Verdict auth_denied(std::string reason) {
    return Verdict{false, "auth", std::move(reason), "http_request_denied"};
}

const char* to_string(Kind k) {
    switch (k) {
        case Kind::http:
            return "http";
        case Kind::socks:
            return "socks";
        case Kind::captured:
            return "captured";
    }
    return "?";
}

awaitable<void> serve(Server& srv, Kind kind, Sock sock, std::string listener, std::string listener_key,
                      Proto::endpoint peer, std::shared_ptr<EventSink> sink) {
    auto c = std::make_shared<Conn>(std::move(sock));
    c->sink = std::move(sink);
    std::uint64_t id = srv.next_id++;
    srv.live[id] = c;
    ++srv.stats.connections;
    // The first loop, once busy, wakes the parked later loops (listeners.cpp).
    if (srv.serving.fetch_add(1) + 1 >= k_first_loop_busy && srv.index == 0)
        for (std::size_t i = 1; i < srv.sh.loops.size(); ++i) {
            Server* other = srv.sh.loops[i].get();
            if (other->parked.exchange(false))
                asio::post(other->io, [other] {
                    if (other->standby) other->standby->cancel();
                });
        }
    struct Served {
        std::atomic<std::size_t>& n;
        ~Served() { --n; }
    } served{srv.serving};
    std::string client = describe_client(peer, listener);
    // The peer's address without its port (a Unix listener is one client).
    std::string who = client;
    if (auto colon = who.rfind(':'); colon != std::string::npos && colon + 1 < who.size() &&
                                     who.find_first_not_of("0123456789", colon + 1) == std::string::npos)
        who.erase(colon);
    // A captured connection's peer address is its own destination (the
    // sandbox's every address is local): the listener is the client.
    if (kind == Kind::captured) who = "sandbox " + listener;
    std::string key = kind == Kind::captured ? listener_key : listener_key + "|" + who;
    std::string busy = srv.sh.admit(key, who);
    srv.sh.metrics.connection_opened(kind == Kind::http ? "http" : kind == Kind::socks ? "socks5" : "captured", srv.index);
    try {
        if (kind == Kind::http) co_await serve_http(srv, c, client, busy);
        else if (kind == Kind::socks) co_await serve_socks(srv, c, client, busy);
        else co_await serve_captured(srv, c, client, busy);
    } catch (const std::exception& e) {
        note_error(srv, "connection", e);
    }
    srv.sh.metrics.connection_closed();
    c->close();
    srv.live.erase(id);
    if (busy.empty()) srv.sh.release(key);
}

}  // namespace cc::net::detail
