#include "cc/net/proxy.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "cc/net/tls.hpp"
#include "cc/net/wire.hpp"

namespace cc::net {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using Proto = asio::generic::stream_protocol;
using Sock = Proto::socket;
using Acceptor = asio::basic_socket_acceptor<Proto>;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

namespace {

constexpr std::uint64_t unlimited = ~std::uint64_t{0};
constexpr std::size_t read_chunk = 64 * 1024;
constexpr int pipe_size = 256 * 1024;

enum class Kind { http, socks };

// Why the proxy itself ended a connection (the connection line's "closed").
enum class Closed { none, header_timeout, idle_timeout, first_byte_timeout, shutdown };
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

struct EventSink;

// Both legs of one client connection. Deadlines and shutdown close it by
// weak reference, so a late timer never touches a finished connection.
struct Conn {
    explicit Conn(Sock s) : client(std::move(s)) {}
    Sock client;
    std::shared_ptr<EventSink> sink;  // accepted on a listener whose sender asked for its lines
    std::optional<Sock> upstream;
    std::string upstream_key;  // "host:port" of a kept-alive upstream (absolute-form)
    std::uint64_t up = 0, down = 0;
    Closed closed = Closed::none;
    std::optional<asio::steady_timer> idle_timer;  // armed by watch_idle
    void close(Closed why = Closed::none) {
        if (closed == Closed::none) closed = why;
        ErrorCode ec;
        if (idle_timer) idle_timer->cancel();
        client.close(ec);
        if (upstream) upstream->close(ec);
    }
    void close_upstream() {
        ErrorCode ec;
        if (upstream) upstream->close(ec);
        upstream.reset();
        upstream_key.clear();
    }
};

void set_nodelay(Sock& s) {
    int one = 1;
    ::setsockopt(s.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on AF_UNIX
}

struct Pipe {
    int r = -1, w = -1;
};

struct Server;

// What every event loop shares: the configuration, the resolver, the log.
// Each loop is a Server of its own; a connection lives on the loop that
// accepted it, so per-connection state needs no locks.
struct Shared {
    const ProxyConfig& cfg;
    std::vector<std::unique_ptr<Server>> loops;
    std::mutex resolver_mu;
    std::unique_ptr<Resolver> resolver;  // reset on stop: pending lookups complete with an error
    std::mutex out_mu;                   // on_connection and on_log are called under it
    std::atomic<bool> stopping{false};
    // Connection caps, over every loop: one client (a listener and a peer
    // address) holding idle tunnels cannot take the session's descriptors.
    std::mutex limits_mu;
    std::unordered_map<std::string, std::size_t> per_client;
    std::size_t open = 0;
    std::size_t max_connections = 0, max_client = 0;  // effective values

    explicit Shared(const ProxyConfig& c) : cfg(c) {}
    void stop_all();
    // "" when admitted (then release() once done), else why not.
    std::string admit(const std::string& key, const std::string& client) {
        std::lock_guard<std::mutex> lock(limits_mu);
        if (open >= max_connections)
            return "the proxy holds " + std::to_string(open) + " connections (--max-connections " +
                   std::to_string(max_connections) + ")";
        std::size_t& n = per_client[key];
        if (n >= max_client)
            return "client " + client + " holds " + std::to_string(n) + " connections (--max-client-connections " +
                   std::to_string(max_client) + ")";
        ++n;
        ++open;
        return "";
    }
    void release(const std::string& key) {
        std::lock_guard<std::mutex> lock(limits_mu);
        --open;
        if (auto it = per_client.find(key); it != per_client.end() && --it->second == 0) per_client.erase(it);
    }
};

struct Server {
    Shared& sh;
    const ProxyConfig& cfg;
    std::size_t index = 0;
    asio::io_context io{1};
    asio::executor_work_guard<asio::io_context::executor_type> keep{io.get_executor()};  // until stop
    std::vector<std::unique_ptr<Acceptor>> acceptors;
    std::unordered_map<std::uint64_t, std::weak_ptr<Conn>> live;
    std::uint64_t next_id = 0;
    std::vector<Pipe> pipes;  // idle, empty pipes for splice
    std::vector<std::string> unlink_at_exit;
    std::optional<asio::signal_set> signals;
    std::optional<asio::posix::stream_descriptor> stdin_watch;
    bool stopping = false;
    ProxyStats stats;
    Acceptor* inbox = nullptr;  // the fd inbox's acceptor (on this loop), if any
    bool inbox_taken = false;   // --fd-inbox-once: its one handover is done

    Server(Shared& s, std::size_t i) : sh(s), cfg(s.cfg), index(i) {}
    ~Server() {
        for (auto& p : pipes) ::close(p.r), ::close(p.w);
    }

    void log(const std::string& line) {
        if (!cfg.on_log) return;
        std::lock_guard<std::mutex> lock(sh.out_mu);
        cfg.on_log(line);
    }

    std::optional<Pipe> acquire_pipe() {
        if (!pipes.empty()) {
            Pipe p = pipes.back();
            pipes.pop_back();
            return p;
        }
        int fds[2];
        if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return std::nullopt;
        ::fcntl(fds[1], F_SETPIPE_SZ, pipe_size);  // best effort; the default 64 KiB works too
        return Pipe{fds[0], fds[1]};
    }
    void release_pipe(Pipe p) {
        if (pipes.size() < 64) pipes.push_back(p);
        else ::close(p.r), ::close(p.w);
    }

    // This loop only, on its own thread: close the listeners and every connection.
    void stop_here() {
        if (stopping) return;
        stopping = true;
        keep.reset();
        ErrorCode ec;
        for (auto& a : acceptors) a->close(ec);
        for (auto& [id, w] : live)
            if (auto c = w.lock()) c->close(Closed::shutdown);
        if (signals) signals->cancel(ec);
        if (stdin_watch) stdin_watch->close(ec);
    }
    // Every loop (callable from any loop's thread).
    void stop() { sh.stop_all(); }
};

void Shared::stop_all() {
    if (stopping.exchange(true)) return;
    for (auto& l : loops) asio::post(l->io, [s = l.get()] { s->stop_here(); });
    // Destroying the resolver joins its thread; pending lookups complete with an error.
    std::unique_ptr<Resolver> r;
    {
        std::lock_guard<std::mutex> lock(resolver_mu);
        r = std::move(resolver);
    }
}

// The connection lines of the listeners one fd-inbox client handed over,
// sent back to that client on the connection it holds ("events":true):
// cc-wrap turns the refusals into violation events even when cc-egress is
// not its own. Written by the loop that owns that connection (other loops
// post there), never blocking a loop: past 1 MiB waiting, lines are dropped
// and counted. Every connection accepted on those listeners holds the sink,
// so the connection is closed only once the last of them has reported.
struct EventSink : std::enable_shared_from_this<EventSink> {
    EventSink(Server& home, std::shared_ptr<Conn> to) : home_(home), to_(std::move(to)) {}
    ~EventSink();
    void push(std::string line) {
        asio::post(home_.io, [self = shared_from_this(), l = std::move(line)]() mutable { self->enqueue(std::move(l)); });
    }
    // The inbox refused the request: the connection is not the sink's to
    // close (the refusal is still being written on it).
    void forget() { to_.reset(); }
    // On the home loop, once the inbox reply is written: lines queued so far go out.
    void open() {
        plugged_ = false;
        if (!writing_ && !queue_.empty()) write_next();
    }

private:
    void enqueue(std::string line) {
        if (broken_ || queued_ + line.size() > (1u << 20)) {
            ++dropped_;
            return;
        }
        queued_ += line.size();
        queue_.push_back(std::move(line));
        if (!writing_ && !plugged_) write_next();
    }
    void write_next() {
        writing_ = true;
        asio::async_write(to_->client, asio::buffer(queue_.front()), [self = shared_from_this()](ErrorCode ec, std::size_t) {
            self->queued_ -= self->queue_.front().size();
            self->queue_.pop_front();
            if (ec) {
                self->broken_ = true;
                self->dropped_ += 1 + self->queue_.size();
                self->queue_.clear();
                self->queued_ = 0;
            }
            if (!self->queue_.empty()) self->write_next();
            else self->writing_ = false;
        });
    }
    Server& home_;
    std::shared_ptr<Conn> to_;
    std::deque<std::string> queue_;
    std::size_t queued_ = 0;
    bool writing_ = false, broken_ = false, plugged_ = true;
    std::uint64_t dropped_ = 0;
};

EventSink::~EventSink() {
    if (dropped_ > 0)
        home_.log("fd inbox: " + std::to_string(dropped_) + " connection line(s) not delivered to the sender (" +
                  (broken_ ? "its connection failed" : "it did not read them") + ")");
    // Closed on its own loop.
    if (to_) asio::post(home_.io, [c = std::move(to_)] { c->close(); });
}

// One log record: emitted once, when the request or tunnel ends.
struct Record {
    Server& srv;
    json j;
    Clock::time_point start = Clock::now();
    std::shared_ptr<Conn> conn;
    std::uint64_t up0 = 0, down0 = 0;
    bool armed = true;

    Record(Server& s, std::shared_ptr<Conn> c, const char* proto, const std::string& client)
        : srv(s), conn(std::move(c)) {
        j = {{"event", "connection"}, {"proto", proto}, {"client", client}};
        up0 = conn->up;
        down0 = conn->down;
    }
    void decide(const Verdict& v) {
        j["decision"] = v.allow ? "allow" : "deny";
        if (v.would_deny) j["wouldDeny"] = true;
        j["rule"] = v.rule;
        j["reason"] = v.reason;
    }
    ~Record() {
        if (!armed) return;
        if (conn->closed != Closed::none) {
            j["closed"] = to_string(conn->closed);
            j.erase("error");  // the aborted read or write the close caused
            if (conn->closed == Closed::header_timeout && !j.contains("decision")) {
                j["rule"] = "timeout";
                j["reason"] = "handshake not complete within " + std::to_string(srv.cfg.handshake_timeout_ms) + " ms";
            }
        }
        if (!j.contains("decision")) j["decision"] = "deny";
        if (!j.contains("rule")) j["rule"] = "malformed";
        if (j["decision"] == "deny") ++srv.stats.denied;
        j["bytesUp"] = conn->up - up0;
        j["bytesDown"] = conn->down - down0;
        j["durationMs"] = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        if (conn->closed == Closed::header_timeout || conn->closed == Closed::idle_timeout ||
            conn->closed == Closed::first_byte_timeout) {
            std::string what = j.value("host", std::string("?"));
            if (j.contains("port")) what += ":" + std::to_string(j["port"].get<int>());
            srv.log(std::string(to_string(conn->closed)) + ": closed " + j["proto"].get<std::string>() + " " + what +
                    " from " + j["client"].get<std::string>());
        } else if (j["decision"] == "deny") {
            std::string what = j.value("host", std::string("?"));
            if (j.contains("port")) what += ":" + std::to_string(j["port"].get<int>());
            srv.log("deny " + j["proto"].get<std::string>() + " " + what + ": " + j.value("reason", std::string()));
        }
        if (srv.cfg.on_connection) {
            std::lock_guard<std::mutex> lock(srv.sh.out_mu);
            srv.cfg.on_connection(j);
        }
        if (conn->sink) conn->sink->push(j.dump() + "\n");
    }
};

// Closes the connection if the deadline passes before it is destroyed.
// A deadline of 0 ms (or less) is no deadline.
class Deadline {
public:
    Deadline(asio::io_context& io, const std::shared_ptr<Conn>& c, int ms, Closed why = Closed::none) : timer_(io) {
        if (ms <= 0) return;
        timer_.expires_after(std::chrono::milliseconds(ms));
        timer_.async_wait([w = std::weak_ptr<Conn>(c), why](ErrorCode ec) {
            if (ec) return;
            if (auto conn = w.lock()) conn->close(why);
        });
    }
    ~Deadline() { timer_.cancel(); }

private:
    asio::steady_timer timer_;
};

// Closes the connection once no byte has been relayed either way for
// `idle_timeout_ms`. The timer looks at the byte counters a few times per
// period rather than being re-armed on every read, so busy tunnels pay nothing.
void watch_idle(asio::io_context& io, const std::shared_ptr<Conn>& c, int ms) {
    if (ms <= 0 || c->idle_timer) return;
    c->idle_timer.emplace(io);
    auto step = std::chrono::milliseconds(std::max(1, ms / 8));
    struct Tick {
        std::weak_ptr<Conn> w;
        std::chrono::milliseconds step, limit;
        std::uint64_t seen;
        Clock::time_point since;
        void operator()(ErrorCode ec) {
            if (ec) return;
            auto c = w.lock();
            if (!c || !c->idle_timer || !c->client.is_open()) return;  // finished or closed for another reason
            auto now = Clock::now();
            if (c->up + c->down != seen) {
                seen = c->up + c->down;
                since = now;
            } else if (now - since >= limit) {
                c->close(Closed::idle_timeout);
                return;
            }
            c->idle_timer->expires_after(step);
            c->idle_timer->async_wait(std::move(*this));
        }
    };
    c->idle_timer->expires_after(step);
    c->idle_timer->async_wait(Tick{c, step, std::chrono::milliseconds(ms), c->up + c->down, Clock::now()});
}

// Append up to `max` bytes to `buf`; 0 at end of stream. Reads go through one
// scratch buffer right after readiness (no suspension between the read and
// the append), so an idle connection holds no read buffer of its own: 1,000
// tunnels waiting for their first bytes cost no 64 KiB each.
awaitable<std::size_t> read_more(Sock& s, std::string& buf, std::size_t max = read_chunk) {
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

awaitable<void> write_all(Sock& s, std::string_view data) {
    co_await asio::async_write(s, asio::buffer(data.data(), data.size()), use_awaitable);
}

// Copy bytes from `from` to `to` until EOF or `limit` bytes: splice(2) through
// a pipe (the kernel moves pages, nothing is copied through user space), or
// 64 KiB read/write when a socket type cannot splice.
awaitable<void> pump(Server& srv, Sock& from, Sock& to, std::uint64_t& count, std::uint64_t limit,
                     bool half_close) {
    // splice(2) needs non-blocking sockets; the getter reads a flag, the setter is an ioctl.
    if (!from.native_non_blocking()) from.native_non_blocking(true);
    if (!to.native_non_blocking()) to.native_non_blocking(true);
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
        if (!use_splice && can_splice && moved >= read_chunk) use_splice = true;
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
    } catch (const std::exception&) {
        c->close();  // a reset on one leg ends the tunnel
    }
    *finished = true;
    done->cancel();
}

struct Dialed {
    bool ok = false;
    int err = 0;
    std::string address;
};

// Resolve (names only) and vet; on success `addrs` holds vetted addresses.
struct Vetting {
    Verdict verdict;
    bool dns_failed = false;
    std::vector<Address> addrs;
};

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

awaitable<Vetting> vet(Server& srv, const Target& t) {
    Vetting v;
    v.verdict = srv.cfg.rules->check_target(t);
    if (srv.cfg.report) v.verdict = report_only(v.verdict);
    if (!v.verdict.allow) co_return v;
    if (t.address) {
        // An allowed literal was vetted by check_target; one let through by
        // report mode still meets the address rules.
        if (v.verdict.would_deny) {
            Verdict av = srv.cfg.rules->check_address(t, *t.address);
            if (!av.allow) {
                v.verdict = av;
                co_return v;
            }
        }
        v.addrs.push_back(*t.address);
        co_return v;
    }
    Resolution r = co_await async_resolve(srv, t.host, use_awaitable);
    if (!r.ok) {
        v.dns_failed = true;
        v.verdict = Verdict{false, "dns", "cannot resolve " + t.host + ": " + r.error, "dns_error"};
        co_return v;
    }
    // Every address must pass, not just the one dialled: a resolver that mixes
    // a public and a private answer is rebinding.
    for (const auto& a : r.addresses) {
        Verdict av = srv.cfg.rules->check_address(t, a);
        if (!av.allow) {
            v.verdict = av;
            co_return v;
        }
    }
    v.addrs = std::move(r.addresses);
    co_return v;  // (a would_deny name verdict stays, its addresses vetted)
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
        Proto::endpoint ep(&ss, len, IPPROTO_TCP);
        c->upstream.emplace(srv.io);
        ErrorCode ec;
        {
            asio::steady_timer timer(srv.io);
            timer.expires_after(std::chrono::milliseconds(srv.cfg.connect_timeout_ms));
            timer.async_wait([w = std::weak_ptr<Conn>(c)](ErrorCode tec) {
                if (tec) return;
                if (auto conn = w.lock(); conn && conn->upstream) {
                    ErrorCode e;
                    conn->upstream->close(e);
                }
            });
            co_await c->upstream->async_connect(ep, asio::redirect_error(use_awaitable, ec));
            timer.cancel();
        }
        if (!ec && c->upstream->is_open()) {
            set_nodelay(*c->upstream);
            d.ok = true;
            d.address = a.to_string();
            co_return d;
        }
        d.err = ec == asio::error::operation_aborted ? ETIMEDOUT : ec.value();
        c->upstream.reset();
        if (srv.stopping) break;
    }
    co_return d;
}

// The server names of the ClientHellos the follower has seen: each must be
// the tunnel's host, or allowed itself (protocols.md B3: CONNECT to an
// allowed host carrying SNI for another one). False: refused and decided.
bool hellos_pass(Server& srv, tls::Follower& f, const Target& t, Record& rec) {
    for (const auto& h : f.take_hellos()) {
        if (!h.has_sni) continue;
        if (!rec.j.contains("sni")) rec.j["sni"] = h.sni;
        Verdict v = srv.cfg.rules->check_sni(t, h.sni);
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
    watch_idle(srv.io, c, srv.cfg.idle_timeout_ms);
    // A tunnel on which no byte moves either way is closed sooner than an
    // idle one: opened and left empty, it only holds two descriptors.
    asio::steady_timer first_byte(srv.io);
    if (srv.cfg.first_byte_timeout_ms > 0 && pending.empty()) {
        first_byte.expires_after(std::chrono::milliseconds(srv.cfg.first_byte_timeout_ms));
        first_byte.async_wait([w = std::weak_ptr<Conn>(c), up = c->up, down = c->down](ErrorCode ec) {
            if (ec) return;
            if (auto conn = w.lock(); conn && conn->up == up && conn->down == down)
                conn->close(Closed::first_byte_timeout);
        });
    }
    asio::co_spawn(ex, pump_detached(&srv, c, done, finished, follow), asio::detached);
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
                    deadline.emplace(srv.io, c, srv.cfg.handshake_timeout_ms, Closed::header_timeout);
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
        }
    } catch (const std::exception&) {
        c->close();
    }
    if (!*finished) {
        ErrorCode ec;
        co_await done->async_wait(asio::redirect_error(use_awaitable, ec));
    }
}

// The peer address accept(2) reported (no getpeername call), or the listener's
// name for a Unix socket.
std::string describe_client(const Proto::endpoint& peer, const std::string& listener) {
    const sockaddr* sa = peer.data();
    if (peer.size() >= sizeof(sockaddr_in) && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)) {
        if (auto a = address_of(sa)) {
            std::uint16_t port = ntohs(sa->sa_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(sa)->sin_port
                                                                : reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
            return a->to_string() + ":" + std::to_string(port);
        }
    }
    return listener;
}

// ------------------------------------------------------------ authentication

// Comparison with --auth-token-file's token in time independent of where
// the first difference is (the length is not secret enough to hide).
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

// ------------------------------------------------------------ SOCKS5

std::uint8_t socks_code_for(int err) {
    if (err == ECONNREFUSED) return socks5::rep_refused;
    if (err == ENETUNREACH) return socks5::rep_network_unreachable;
    return socks5::rep_host_unreachable;
}

awaitable<void> serve_socks(Server& srv, std::shared_ptr<Conn> c, std::string client, std::string busy) {
    Record rec(srv, c, "socks5", client);
    std::string buf;
    try {
        std::optional<Deadline> deadline(std::in_place, srv.io, c, srv.cfg.handshake_timeout_ms, Closed::header_timeout);
        socks5::Greeting g;
        Parse p;
        while ((p = socks5::parse_greeting(buf, g)) == Parse::more)
            if (co_await read_more(c->client, buf, 512) == 0) break;
        if (p != Parse::ok) {
            rec.j["reason"] = "malformed SOCKS5 greeting";
            co_return;
        }
        buf.erase(0, g.consumed);
        // With a token, only username/password (RFC 1929) is acceptable.
        std::uint8_t method = srv.cfg.auth_token ? socks5::method_userpass : socks5::method_none;
        if (std::find(g.methods.begin(), g.methods.end(), method) == g.methods.end()) {
            if (srv.cfg.auth_token) rec.decide(auth_denied("SOCKS5 client offered no username/password method"));
            else rec.j["reason"] = "client offered no acceptable authentication method";
            // (GCC 12 cannot keep an initializer_list inside a co_await expression.)
            std::string refuse(1, '\x05');
            refuse += static_cast<char>(socks5::method_unacceptable);
            co_await write_all(c->client, refuse);
            co_return;
        }
        std::string chosen(1, '\x05');
        chosen += static_cast<char>(method);
        co_await write_all(c->client, chosen);
        if (srv.cfg.auth_token) {
            socks5::UserPass up;
            while ((p = socks5::parse_userpass(buf, up)) == Parse::more)
                if (co_await read_more(c->client, buf, 600) == 0) break;
            bool ok = p == Parse::ok && token_matches(srv.cfg, up.password);
            std::string status(1, '\x01');
            status += ok ? '\x00' : '\x01';
            co_await write_all(c->client, status);
            if (!ok) {
                rec.decide(auth_denied(p == Parse::ok ? "wrong SOCKS5 password" : "malformed SOCKS5 username/password"));
                co_return;
            }
            buf.erase(0, up.consumed);
        }
        socks5::Request req;
        while ((p = socks5::parse_request(buf, req)) == Parse::more)
            if (co_await read_more(c->client, buf, 512) == 0) break;
        if (p != Parse::ok) {
            rec.j["reason"] = "malformed SOCKS5 request";
            co_await write_all(c->client, socks5::reply(req.error_reply));
            co_return;
        }
        buf.erase(0, req.consumed);
        rec.j["host"] = req.host;
        rec.j["port"] = req.port;
        if (req.cmd != socks5::cmd_connect) {
            rec.j["reason"] = "SOCKS5 command " + std::to_string(req.cmd) + " not supported";
            co_await write_all(c->client, socks5::reply(socks5::rep_command_not_supported));
            co_return;
        }
        if (!busy.empty()) {
            rec.decide(Verdict{false, "limit", busy, "connection_limit_reached"});
            co_await write_all(c->client, socks5::reply(socks5::rep_general_failure));
            co_return;
        }
        auto t = canonical_target(req.host);
        if (!t || req.port == 0) {
            rec.j["reason"] = t ? std::string("port 0") : t.error().one_line();
            co_await write_all(c->client, socks5::reply(socks5::rep_general_failure));
            co_return;
        }
        t->port = req.port;
        rec.j["host"] = t->host;
        deadline.reset();
        Vetting v = co_await vet(srv, *t);
        rec.decide(v.verdict);
        if (!v.verdict.allow) {
            co_await write_all(c->client, socks5::reply(v.dns_failed ? socks5::rep_host_unreachable
                                                                     : socks5::rep_not_allowed));
            co_return;
        }
        Dialed d = co_await dial(srv, c, v.addrs, t->port);
        if (!d.ok) {
            rec.j["error"] = std::strerror(d.err);
            co_await write_all(c->client, socks5::reply(socks_code_for(d.err)));
            co_return;
        }
        rec.j["address"] = d.address;
        std::optional<Address> bound;
        std::uint16_t bport = 0;
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        if (::getsockname(c->upstream->native_handle(), reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
            bound = address_of(reinterpret_cast<sockaddr*>(&ss));
            bport = ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                                  : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
        }
        co_await write_all(c->client, socks5::reply(socks5::rep_success, bound, bport));
        co_await tunnel(srv, c, *t, std::move(buf), rec);
    } catch (const std::exception& e) {
        if (!rec.j.contains("error")) rec.j["error"] = e.what();
    }
}

// ------------------------------------------------------------ HTTP

// Answer, then close gracefully: a client still sending (an oversized head,
// a body) would otherwise get a reset that destroys the unread answer.
awaitable<void> send_error(Server& srv, std::shared_ptr<Conn> c, int status, const std::string& proxy_error,
                           const std::string& reason) {
    try {
        co_await write_all(c->client, http::error_response(status, proxy_error, reason, "cc-egress: " + reason));
        ErrorCode ec;
        c->client.shutdown(Sock::shutdown_send, ec);
        Deadline deadline(srv.io, c, 2000);
        std::string sink;
        for (std::size_t total = 0; total < (1u << 20);) {
            sink.clear();
            std::size_t n = co_await read_more(c->client, sink);
            if (n == 0) break;
            total += n;
        }
    } catch (const std::exception&) {
    }
}

// A chunked body broke its framing (ChunkedScanner::error() says how). The
// bytes from the bad line on were not forwarded.
struct MalformedBody : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Forward a body of known framing from `from` (with `buf` already read) to
// `to`; `dechunk` sends a chunked body's payload only (the client reads to EOF).
awaitable<void> forward_body(Server& srv, Sock& from, std::string& buf, Sock& to, const http::Framing& f,
                             std::uint64_t& count, bool dechunk = false) {
    using http::BodyKind;
    if (f.kind == BodyKind::none) co_return;
    if (f.kind == BodyKind::length || f.kind == BodyKind::until_close) {
        std::uint64_t want = f.kind == BodyKind::length ? f.length : unlimited;
        std::size_t now = static_cast<std::size_t>(std::min<std::uint64_t>(want, buf.size()));
        if (now) {
            co_await write_all(to, std::string_view(buf).substr(0, now));
            count += now;
            buf.erase(0, now);
            if (want != unlimited) want -= now;
        }
        if (want > 0) co_await pump(srv, from, to, count, want, false);
        co_return;
    }
    http::ChunkedScanner scan;
    std::string data;
    while (true) {
        data.clear();
        std::size_t n = scan.feed(buf, dechunk ? &data : nullptr);
        if (scan.failed()) throw MalformedBody(scan.error());
        if (n) {
            std::string_view out = dechunk ? std::string_view(data) : std::string_view(buf).substr(0, n);
            if (!out.empty()) co_await write_all(to, out);
            count += out.size();
            buf.erase(0, n);
        }
        if (scan.done()) co_return;
        if (co_await read_more(from, buf) == 0) throw std::runtime_error("chunked body cut short");
    }
}

// Read one head (bounded); "" on a clean EOF before any byte.
awaitable<std::string> read_head(Sock& s, std::string& buf, bool& too_big) {
    too_big = false;
    while (true) {
        std::size_t n = http::head_length(buf);
        if (n > http::max_head) {
            too_big = true;
            co_return std::string();
        }
        if (n) {
            std::string head = buf.substr(0, n);
            buf.erase(0, n);
            co_return head;
        }
        if (buf.size() > http::max_head) {
            too_big = true;
            co_return std::string();
        }
        if (co_await read_more(s, buf, 16 * 1024) == 0) {
            if (!buf.empty()) throw std::runtime_error("connection closed inside a head");
            co_return std::string();
        }
    }
}

awaitable<void> serve_connect(Server& srv, std::shared_ptr<Conn> c, const std::string& client,
                              const http::RequestHead& h, std::string buf) {
    Record rec(srv, c, "http-connect", client);
    auto t = parse_authority(h.target);
    if (!t) {
        rec.j["host"] = h.target;
        rec.j["reason"] = "bad CONNECT target: " + t.error().one_line();
        co_await send_error(srv, c, 400, "", "bad CONNECT target");
        co_return;
    }
    rec.j["host"] = t->host;
    rec.j["port"] = t->port;
    Vetting v = co_await vet(srv, *t);
    rec.decide(v.verdict);
    if (!v.verdict.allow) {
        co_await send_error(srv, c, v.dns_failed ? 502 : 403, v.verdict.proxy_error, v.verdict.reason);
        co_return;
    }
    Dialed d = co_await dial(srv, c, v.addrs, t->port);
    if (!d.ok) {
        rec.j["error"] = std::strerror(d.err);
        co_await send_error(srv, c, d.err == ETIMEDOUT ? 504 : 502,
                            d.err == ECONNREFUSED ? "connection_refused" : "destination_unavailable",
                            "cannot connect to " + t->host + ": " + std::strerror(d.err));
        co_return;
    }
    rec.j["address"] = d.address;
    co_await write_all(c->client, "HTTP/1.1 200 Connection established\r\n\r\n");
    co_await tunnel(srv, c, *t, std::move(buf), rec);
}

// One absolute-form request; returns false when the client connection ends.
awaitable<bool> serve_forward(Server& srv, std::shared_ptr<Conn> c, const std::string& client,
                              http::RequestHead h, std::string& buf) {
    Record rec(srv, c, "http", client);
    rec.j["method"] = h.method;
    auto uri = http::parse_absolute_uri(h.target);
    if (!uri) {
        rec.j["reason"] = uri.error().one_line();
        bool https = h.target.rfind("https://", 0) == 0;
        co_await send_error(srv, c, 400, "", https ? "https:// targets need CONNECT" :
                            h.target.front() == '/' ? "this is a proxy: send an absolute-form request"
                                                    : "bad request target");
        co_return false;
    }
    const Target& t = uri->target;
    rec.j["host"] = t.host;
    rec.j["port"] = t.port;
    auto framing = http::request_framing(h);
    if (!framing) {
        rec.j["reason"] = framing.error().one_line();
        co_await send_error(srv, c, 400, "", framing.error().one_line());
        co_return false;
    }
    std::string key = t.host + ":" + std::to_string(t.port);
    // Answer Expect: 100-continue ourselves; the upstream never sees it.
    bool expect = http::has_token(h.headers, "expect", "100-continue");
    std::erase_if(h.headers, [](const http::Header& x) {
        return x.name.size() == 6 && strncasecmp(x.name.c_str(), "expect", 6) == 0;
    });
    bool client_close = http::has_token(h.headers, "connection", "close") ||
                        (h.version == "HTTP/1.0" && !http::has_token(h.headers, "connection", "keep-alive"));
    std::string up_head = http::upstream_request_head(h, *uri, *framing);
    std::string ubuf, head;
    bool too_big = false;
    for (int attempt = 0;; ++attempt) {
        bool reused = c->upstream && c->upstream_key == key;
        if (reused) {
            if (attempt == 0)
                rec.decide(srv.cfg.report ? report_only(srv.cfg.rules->check_target(t)) : srv.cfg.rules->check_target(t));
        } else {
            c->close_upstream();
            Vetting v = co_await vet(srv, t);
            rec.decide(v.verdict);
            if (!v.verdict.allow) {
                co_await send_error(srv, c, v.dns_failed ? 502 : 403, v.verdict.proxy_error, v.verdict.reason);
                co_return false;
            }
            Dialed d = co_await dial(srv, c, v.addrs, t.port);
            if (!d.ok) {
                rec.j["error"] = std::strerror(d.err);
                co_await send_error(srv, c, d.err == ETIMEDOUT ? 504 : 502,
                                    d.err == ECONNREFUSED ? "connection_refused" : "destination_unavailable",
                                    "cannot connect to " + t.host + ": " + std::strerror(d.err));
                co_return false;
            }
            c->upstream_key = key;
            rec.j["address"] = d.address;
        }
        // A kept-alive upstream may have closed while idle; a request without a
        // body is then sent once more on a fresh connection (RFC 9112 9.3.1).
        bool retry = reused && framing->kind == http::BodyKind::none && attempt == 0;
        ErrorCode werr;
        co_await asio::async_write(*c->upstream, asio::buffer(up_head), asio::redirect_error(use_awaitable, werr));
        if (werr) {
            c->close_upstream();
            if (retry) continue;
            throw boost::system::system_error(werr);
        }
        c->up += up_head.size();
        if (expect && framing->kind != http::BodyKind::none)
            co_await write_all(c->client, "HTTP/1.1 100 Continue\r\n\r\n");
        std::string bad_body;
        try {
            co_await forward_body(srv, c->client, buf, *c->upstream, *framing, c->up);
        } catch (const MalformedBody& e) {
            bad_body = e.what();
        }
        if (!bad_body.empty()) {
            // The upstream never sees the bad line nor anything after it, and
            // its connection is dropped mid-body: nothing it could read as a
            // second request reaches it.
            c->close_upstream();
            rec.decide(Verdict{false, "malformed", "malformed chunked request body: " + bad_body, ""});
            co_await send_error(srv, c, 400, "", "malformed chunked request body: " + bad_body);
            co_return false;
        }
        ubuf.clear();
        bool failed = false;
        try {
            head = co_await read_head(*c->upstream, ubuf, too_big);
        } catch (const std::exception&) {
            failed = true;
        }
        if ((failed || (head.empty() && !too_big)) && retry) {
            c->close_upstream();
            continue;
        }
        if (failed) head.clear();
        break;
    }

    http::ResponseHead resp;
    while (true) {
        if (head.empty()) {
            c->close_upstream();
            co_await send_error(srv, c, 502, "http_response_incomplete",
                                too_big ? "upstream response head too large" : "upstream closed without a response");
            co_return false;
        }
        auto r = http::parse_response_head(head);
        if (!r) {
            c->close_upstream();
            co_await send_error(srv, c, 502, "http_protocol_error", "malformed upstream response");
            co_return false;
        }
        resp = std::move(*r);
        if (resp.status >= 100 && resp.status < 200) {
            if (resp.status == 101) {
                c->close_upstream();
                co_await send_error(srv, c, 502, "http_protocol_error", "protocol upgrades are not proxied");
                co_return false;
            }
            head = co_await read_head(*c->upstream, ubuf, too_big);  // interim responses are hop-local
            continue;
        }
        break;
    }
    rec.j["status"] = resp.status;
    http::Framing rf = http::response_framing(resp, h.method);
    bool upstream_close = rf.kind == http::BodyKind::until_close || http::has_token(resp.headers, "connection", "close") ||
                          (resp.version == "HTTP/1.0" && !http::has_token(resp.headers, "connection", "keep-alive"));
    // An HTTP/1.0 client cannot read chunked framing: the payload is sent
    // de-chunked and the end of the body is the end of the connection.
    bool dechunk = rf.kind == http::BodyKind::chunked && h.version == "HTTP/1.0";
    if (dechunk) rec.j["dechunked"] = true;
    bool close_after = client_close || rf.kind == http::BodyKind::until_close || dechunk;
    std::string down_head =
        http::client_response_head(resp, dechunk ? http::Framing{http::BodyKind::until_close, 0} : rf, close_after);
    co_await write_all(c->client, down_head);
    c->down += down_head.size();
    co_await forward_body(srv, *c->upstream, ubuf, c->client, rf, c->down, dechunk);
    if (upstream_close || !ubuf.empty()) c->close_upstream();
    co_return !close_after;
}

// With --auth-token-file: Proxy-Authorization Basic with the token as the
// password, or 407 with Proxy-Authenticate and a connection line.
awaitable<bool> authorized(Server& srv, std::shared_ptr<Conn> c, const std::string& client, const http::RequestHead& h) {
    auto pass = http::basic_password(h.headers, "proxy-authorization");
    if (pass && token_matches(srv.cfg, *pass)) co_return true;
    bool connect = h.method == "CONNECT";
    {
        Record rec(srv, c, connect ? "http-connect" : "http", client);
        if (!connect) rec.j["method"] = h.method;
        rec.decide(auth_denied(pass ? "wrong proxy password" : "proxy authentication required"));
    }
    co_await send_error(srv, c, 407, "", "proxy authentication required");
    co_return false;
}

awaitable<void> serve_http(Server& srv, std::shared_ptr<Conn> c, std::string client, std::string busy) {
    std::string buf;
    bool first = true;
    try {
        while (!srv.stopping) {
            std::string head;
            bool too_big = false;
            if (!first && buf.empty()) {
                // Keep-alive: the idle watch bounds the wait for the next request.
                ErrorCode ec;
                co_await c->client.async_wait(Sock::wait_read, asio::redirect_error(use_awaitable, ec));
                if (c->closed == Closed::idle_timeout)
                    srv.log("idle-timeout: closed kept-alive connection from " + client);
                if (ec) co_return;
            }
            try {
                Deadline deadline(srv.io, c, srv.cfg.handshake_timeout_ms, Closed::header_timeout);
                head = co_await read_head(c->client, buf, too_big);
            } catch (const std::exception&) {
                if (c->closed == Closed::header_timeout) {
                    Record rec(srv, c, "http", client);  // a connection line with "closed":"header-timeout"
                }
                co_return;
            }
            if (too_big) {
                Record rec(srv, c, "http", client);
                rec.j["reason"] = "request head larger than " + std::to_string(http::max_head) + " bytes";
                co_await send_error(srv, c, 431, "", "request head too large");
                co_return;
            }
            if (head.empty()) co_return;
            first = false;
            watch_idle(srv.io, c, srv.cfg.idle_timeout_ms);
            auto h = http::parse_request_head(head);
            if (!h) {
                Record rec(srv, c, "http", client);
                rec.j["reason"] = "malformed request: " + h.error().one_line();
                co_await send_error(srv, c, 400, "", "malformed request");
                co_return;
            }
            if (srv.cfg.auth_token && !co_await authorized(srv, c, client, *h)) co_return;
            if (!busy.empty()) {
                Record rec(srv, c, h->method == "CONNECT" ? "http-connect" : "http", client);
                if (h->method != "CONNECT") rec.j["method"] = h->method;
                rec.decide(Verdict{false, "limit", busy, "connection_limit_reached"});
                co_await send_error(srv, c, 503, "connection_limit_reached", busy);
                co_return;
            }
            if (h->method == "CONNECT") {
                c->close_upstream();
                co_await serve_connect(srv, c, client, *h, std::move(buf));
                co_return;
            }
            if (!co_await serve_forward(srv, c, client, std::move(*h), buf)) co_return;
        }
    } catch (const std::exception&) {
    }
}

awaitable<void> serve(Server& srv, Kind kind, Sock sock, std::string listener, Proto::endpoint peer,
                      std::shared_ptr<EventSink> sink) {
    auto c = std::make_shared<Conn>(std::move(sock));
    c->sink = std::move(sink);
    std::uint64_t id = srv.next_id++;
    srv.live[id] = c;
    ++srv.stats.connections;
    set_nodelay(c->client);
    std::string client = describe_client(peer, listener);
    // The peer's address without its port (a Unix listener is one client).
    std::string who = client;
    if (auto colon = who.rfind(':'); colon != std::string::npos && colon + 1 < who.size() &&
                                     who.find_first_not_of("0123456789", colon + 1) == std::string::npos)
        who.erase(colon);
    std::string key = listener + "|" + who;
    std::string busy = srv.sh.admit(key, who);
    try {
        if (kind == Kind::http) co_await serve_http(srv, c, client, busy);
        else co_await serve_socks(srv, c, client, busy);
    } catch (const std::exception&) {
    }
    c->close();
    srv.live.erase(id);
    if (busy.empty()) srv.sh.release(key);
}

awaitable<void> accept_loop(Server& srv, Acceptor& acc, Kind kind, std::string listener,
                            std::shared_ptr<EventSink> sink) {
    while (!srv.stopping) {
        ErrorCode ec;
        Proto::endpoint peer;
        Sock s = co_await acc.async_accept(peer, asio::redirect_error(use_awaitable, ec));
        if (ec) {
            if (srv.stopping || ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
            srv.log("accept on " + listener + ": " + ec.message());
            // Out of descriptors: back off rather than spin.
            asio::steady_timer t(srv.io, std::chrono::milliseconds(100));
            co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
            continue;
        }
        asio::co_spawn(srv.io, serve(srv, kind, std::move(s), listener, peer, sink), asio::detached);
    }
}

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
                                 std::shared_ptr<EventSink> sink = nullptr) {
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
        std::uint16_t port = ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                                           : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
        where = (a->v4() ? a->to_string() : "[" + a->to_string() + "]") + ":" + std::to_string(port);
    }
    std::string name = listener.empty() ? where : listener;
    asio::co_spawn(srv.io, accept_loop(srv, *acc, kind, name, sink), asio::detached);
    srv.acceptors.push_back(std::move(acc));
    for (std::size_t i = 1; i < srv.sh.loops.size(); ++i) {
        Server* other = srv.sh.loops[i].get();
        asio::post(other->io, [other, d = dups[i - 1], family = ss.ss_family, kind, name, sink] {
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
            asio::co_spawn(other->io, accept_loop(*other, *a, kind, name, sink), asio::detached);
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

// ------------------------------------------------------------ fd inbox

// A client sends one message: SCM_RIGHTS with listening stream sockets and a
// JSON payload naming them by index, {"http":[0],"socks":[1]}. Each becomes a
// listener of that kind; the reply is one line {"ok":true} or {"ok":false,...}.
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
        if (key == "http") kind = Kind::http;
        else if (key == "socks") kind = Kind::socks;
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
            l = sizeof listening;
            ::getsockopt(fds[i], SOL_SOCKET, SO_ACCEPTCONN, &listening, &l);
            if (type != SOCK_STREAM || !listening) return "fd index " + std::to_string(i) + " is not a listening stream socket";
            rq.listeners.emplace_back(fds[i], kind);
        }
    }
    if (rq.listeners.empty()) return "no listeners named";
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
        srv.log("fd inbox: listening for " + std::string(kind == Kind::http ? "http" : "socks") + " on " + *r +
                (rq.hold ? " (while the sender holds its connection)" : "") +
                (sink ? "; its connection lines go back to the sender too" : ""));
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
            for (auto& a : loop->acceptors) {
                struct stat st {};
                if (!a->is_open() || ::fstat(a->native_handle(), &st) != 0) continue;
                if (std::find(inodes->begin(), inodes->end(), st.st_ino) == inodes->end()) continue;
                ErrorCode ignored;
                a->close(ignored);
            }
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
            Deadline deadline(srv.io, c, srv.cfg.handshake_timeout_ms);
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
            reply = err.empty() ? json{{"ok", true}}.dump() : json{{"ok", false}, {"error", err}}.dump();
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
    } catch (const std::exception&) {
    }
    // With events, the sink closes the connection once the last connection
    // it reports for has ended (their lines still go out).
    if (!sink || srv.stopping) c->close();
}

awaitable<void> inbox_loop(Server& srv, Acceptor& acc) {
    while (!srv.stopping) {
        ErrorCode ec;
        Sock s = co_await acc.async_accept(asio::redirect_error(use_awaitable, ec));
        if (ec) {
            if (srv.stopping || ec == asio::error::operation_aborted) co_return;
            continue;
        }
        asio::co_spawn(srv.io, serve_inbox_client(srv, std::move(s)), asio::detached);
    }
}

// A parent that dies closes our stdin: stop with it.
awaitable<void> watch_stdin(Server& srv) {
    std::array<char, 512> buf;
    ErrorCode ec;
    while (!ec) co_await srv.stdin_watch->async_read_some(asio::buffer(buf), asio::redirect_error(use_awaitable, ec));
    if (!srv.sh.stopping) {
        srv.log("stdin closed: stopping");
        srv.stop();
    }
}

// Up to the hard limit: 1,000 tunnels are 2,000 sockets plus pipes. The
// descriptor limit afterwards.
std::size_t raise_fd_limit() {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &rl);
        ::getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY ? std::size_t{1} << 20 : static_cast<std::size_t>(rl.rlim_cur);
}

// Event loops: --threads, or one per CPU this process may run on (at most 8).
std::size_t loop_count(int asked) {
    if (asked > 0) return static_cast<std::size_t>(asked);
    cpu_set_t set;
    CPU_ZERO(&set);
    int n = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return static_cast<std::size_t>(std::clamp(n, 1, 8));
}

}  // namespace

Result<ProxyStats> run_proxy(const ProxyConfig& cfg) {
    std::size_t nofile = raise_fd_limit();
    Shared sh(cfg);
    std::size_t n = loop_count(cfg.threads);
    // A tunnel holds a client and an upstream socket and, while splicing, up
    // to two pipes (6 descriptors at worst, 4 counted); each loop keeps up to
    // 64 idle pipes; 256 more are kept for listeners, the resolver and logs.
    // So the upstream socket of every admitted connection has a descriptor.
    std::size_t reserve = 256 + 128 * n;
    std::size_t fit = nofile > reserve + 64 ? (nofile - reserve) / 4 : 16;
    sh.max_connections = cfg.max_connections > 0 ? cfg.max_connections : fit;
    sh.max_client = cfg.max_client_connections > 0 ? cfg.max_client_connections
                                                   : std::min<std::size_t>(1024, std::max<std::size_t>(8, sh.max_connections / 2));
    for (std::size_t i = 0; i < n; ++i) sh.loops.push_back(std::make_unique<Server>(sh, i));
    Server& srv = *sh.loops[0];
    auto resolver = Resolver::create(cfg.dns);
    if (!resolver) return resolver.error();
    sh.resolver = std::move(*resolver);

    json ready = {{"event", "ready"}};
    auto cleanup = [&] {
        for (const auto& p : srv.unlink_at_exit) ::unlink(p.c_str());
    };
    auto fail = [&](const Error& e) -> Result<ProxyStats> {
        srv.stop();
        for (auto& l : sh.loops) l->io.poll();  // listeners handed to the other loops are closed too
        cleanup();
        return e;
    };
    auto h = listen_tcp(srv, cfg.listen_host, cfg.http_port, Kind::http);
    if (!h) return fail(h.error());
    auto s = listen_tcp(srv, cfg.listen_host, cfg.socks_port, Kind::socks);
    if (!s) return fail(s.error());
    ready["http"] = *h;
    ready["socks"] = *s;
    if (cfg.unix_dir) {
        for (auto [name, kind, field] : {std::tuple{"http.sock", Kind::http, "httpUnix"},
                                         std::tuple{"socks.sock", Kind::socks, "socksUnix"}}) {
            std::string path = *cfg.unix_dir + "/" + name;
            auto fd = listen_unix(srv, path);
            if (!fd) return fail(fd.error());
            auto r = add_listener(srv, *fd, kind, "unix:" + path);
            if (!r) return fail(r.error());
            ready[field] = path;
        }
    }
    if (cfg.fd_inbox) {
        auto fd = listen_unix(srv, *cfg.fd_inbox);
        if (!fd) return fail(fd.error());
        auto acc = std::make_unique<Acceptor>(srv.io);
        ErrorCode ec;
        acc->assign(Proto(AF_UNIX, 0), *fd, ec);
        if (ec) return fail(io_error(*cfg.fd_inbox, "cannot use inbox socket", ec.value()));
        asio::co_spawn(srv.io, inbox_loop(srv, *acc), asio::detached);
        srv.inbox = acc.get();
        srv.acceptors.push_back(std::move(acc));
        ready["fdInbox"] = *cfg.fd_inbox;
    }

    srv.signals.emplace(srv.io, SIGTERM, SIGINT);
    srv.signals->async_wait([&srv](ErrorCode ec, int sig) {
        if (ec) return;
        srv.log(std::string("stopping on ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT"));
        srv.stop();
    });
    if (cfg.exit_with_stdin) {
        struct stat st {};
        if (::fstat(0, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
            srv.stdin_watch.emplace(srv.io, ::dup(0));
            asio::co_spawn(srv.io, watch_stdin(srv), asio::detached);
        } else {
            srv.log("--exit-with-stdin: stdin is not a pipe; ignored");
            ready["exitWithStdin"] = false;
        }
    }
    ready["threads"] = n;
    ready["maxConnections"] = sh.max_connections;
    ready["maxClientConnections"] = sh.max_client;
    ready["firstByteTimeoutMs"] = cfg.first_byte_timeout_ms;
    for (auto& [k, v] : cfg.ready.items()) ready[k] = v;
    if (cfg.on_ready) cfg.on_ready(ready);

    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < n; ++i) threads.emplace_back([l = sh.loops[i].get()] { l->io.run(); });
    srv.io.run();
    for (auto& t : threads) t.join();
    // Handlers posted to a loop after it had stopped (connection lines for an
    // fd-inbox sender) still hold what they refer to: run them out here, on
    // this one thread, while every loop is still there to be referred to.
    for (bool ran = true; ran;) {
        ran = false;
        for (auto& l : sh.loops) {
            l->io.restart();
            if (l->io.poll() > 0) ran = true;
        }
    }
    // Stopping now, on this one thread. The signal sets go with the loops,
    // and their signals back to the default action: a SIGTERM arriving from
    // here to exit would kill the process before its last lines are out. So
    // they are blocked (and die pending with the process).
    sigset_t late;
    ::sigemptyset(&late);
    ::sigaddset(&late, SIGTERM);
    ::sigaddset(&late, SIGINT);
    ::pthread_sigmask(SIG_BLOCK, &late, nullptr);
    cleanup();
    ProxyStats total;
    for (auto& l : sh.loops) {
        total.connections += l->stats.connections;
        total.denied += l->stats.denied;
    }
    return total;
}

}  // namespace cc::net
