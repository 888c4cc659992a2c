// Inside cc-egress's proxy pair (proxy.hpp is the public face): what every
// part shares. A Server is one event loop; a Conn is both legs of one client
// connection; Shared is what the loops share (configuration, resolver, caps).
// The parts, by file:
//   session.cpp         caps, vetting (rules, resolve, addresses), dialling, one connection's entry
//   connection_log.cpp  the connection line (Record) and its copy to an fd-inbox sender (EventSink)
//   relay.cpp           reads, writes, splice, deadlines, tunnels with the TLS follower
//   http_proxy.cpp      CONNECT and absolute-form requests
//   socks5_server.cpp   RFC 1928 / 1929
//   fd_inbox.cpp        listening sockets handed over SCM_RIGHTS
//   captured.cpp        connections and DNS queries captured in a sandbox (cc-wrap --capture)
//   listeners.cpp       listening sockets and accept loops on every event loop
//   metrics_page.cpp    --metrics-socket: the OpenMetrics page on a Unix socket
//   asker.cpp           network asks put to --approver (its own thread)
//   metrics.cpp         the counters behind the page
//   proxy.cpp           run_proxy: builds the loops, listens, runs, stops
#pragma once

#include "cc/net/proxy.hpp"
#include "cc/net/asker.hpp"
#include "cc/net/fake_dns.hpp"
#include "cc/net/metrics.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

// GCC 12 at -O2 pairs an Asio coroutine frame's recycling operator delete
// with the ::operator new inside its operator new once coroutines of one
// file are inlined into each other, and warns (a false positive: both sides
// are Asio's thread_info_base allocator). Every file of the proxy includes this.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace cc::net::detail {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using Proto = asio::generic::stream_protocol;
using Sock = Proto::socket;
using Acceptor = asio::basic_socket_acceptor<Proto>;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

constexpr std::uint64_t unlimited = ~std::uint64_t{0};
constexpr std::size_t read_chunk = 64 * 1024;
constexpr int pipe_size = 256 * 1024;

// http and socks: the proxy protocols. captured: a listener on the wildcard
// address of one port in a sandbox whose every destination is local
// (cc-wrap --capture); the connection's local address is where the client
// meant to go.
enum class Kind { http, socks, captured };
const char* to_string(Kind k);

// Why the proxy itself ended a connection (the connection line's "closed").
enum class Closed { none, header_timeout, idle_timeout, first_byte_timeout, shutdown };
const char* to_string(Closed c);

struct EventSink;
struct Conn;
struct Server;

// One timeout of a loop's connection, kept in the loop's ordered list
// (Server::timeouts) that a single timer sweeps: a connection's deadlines
// cost no timer of their own, and so no timerfd update per connection (four
// per proxied request before). Each entry is removed by its owner (a
// Deadline, or the connection for its idle watch) or when it fires.
struct Timeout {
    enum class Kind {
        deadline,    // close the connection (a handshake that takes too long)
        first_byte,  // close it if no byte has moved since it was set
        idle,        // close it once no byte has moved for `limit`; looked at every `step`
    };
    Kind kind = Kind::deadline;
    std::weak_ptr<Conn> conn;
    Closed why = Closed::none;
    std::uint64_t seen = 0;  // first_byte, idle: the byte count when last looked at
    Clock::time_point since{};
    std::chrono::milliseconds step{}, limit{};
    bool* armed = nullptr;  // deadline, first_byte: the owner's flag, cleared when it fires
};
using Timeouts = std::multimap<Clock::time_point, Timeout>;

// Both legs of one client connection. Deadlines and shutdown close it by
// weak reference, so a late timer never touches a finished connection.
struct Conn {
    explicit Conn(Sock s) : client(std::move(s)) {}
    ~Conn();
    Conn(const Conn&) = delete;
    Conn& operator=(const Conn&) = delete;
    Sock client;
    std::shared_ptr<EventSink> sink;  // accepted on a listener whose sender asked for its lines
    std::optional<Sock> upstream;
    std::string upstream_key;  // "host:port" of a kept-alive upstream (absolute-form)
    std::uint64_t up = 0, down = 0;
    Closed closed = Closed::none;
    Server* idle_home = nullptr;  // watch_idle: the loop whose list holds idle_at
    Timeouts::iterator idle_at;
    void close(Closed why = Closed::none) {
        if (closed == Closed::none) closed = why;
        ErrorCode ec;
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

struct Pipe {
    int r = -1, w = -1;
};

struct Server;
class Interceptor;

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
    Metrics metrics;
    std::mutex asker_mu;
    std::unique_ptr<Asker> asker;  // with cfg.ask; reset on stop (waiters get deny)
    // With hosts to intercept (intercept.hpp): the session CA and TLS contexts.
    std::shared_ptr<Interceptor> interceptor;
    // Requests on intercepted hosts whose action the policy marks ask, put
    // to the same --approver (under asker_mu too); none: ask is deny.
    std::unique_ptr<Asker> request_asker;
    // Names the captured sandboxes' resolver answered, and the addresses
    // that stand for them (captured.cpp).
    FakePool fake_pool;
    // Each listener's own key for the caps (two sandboxes' listeners have
    // the same address, each in its own namespace).
    std::atomic<std::uint64_t> next_listener{0};

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

// The first loop counts as busy from its second connection at once: the
// later loops are then worth waking for each new connection.
constexpr std::size_t k_first_loop_busy = 2;

struct Server {
    Shared& sh;
    const ProxyConfig& cfg;
    std::size_t index = 0;
    // Before io: handlers and coroutine frames the loop still holds when it
    // is destroyed remove their entries from it.
    Timeouts timeouts;
    // Connections this loop is serving (read by the other loops). Before
    // io too: a connection's frame destroyed with io counts itself out.
    std::atomic<std::size_t> serving{0};
    asio::io_context io{1};
    asio::executor_work_guard<asio::io_context::executor_type> keep{io.get_executor()};  // until stop
    // Due at the earliest entry of timeouts (or earlier); gone before io is
    // destroyed (what io still holds may drop entries then).
    std::optional<asio::steady_timer> sweep{std::in_place, io};
    Clock::time_point sweep_at = Clock::time_point::max();
    std::vector<std::unique_ptr<Acceptor>> acceptors;
    // Captured sandboxes' DNS sockets served on this loop (serve_dns).
    std::vector<std::unique_ptr<asio::posix::stream_descriptor>> datagrams;
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
    // Loops other than the first accept only while the first is busy
    // (listeners.cpp): each wakes every waiting loop, so an idle second loop
    // that waited on every listener would be woken for each connection only
    // to find it taken. Parked accept loops wait on `standby`; the first
    // loop cancels it (on this loop's thread) when it gets busy.
    std::optional<asio::steady_timer> standby{std::in_place, io, asio::steady_timer::time_point::max()};
    std::atomic<bool> parked{false};
    // The descriptors of this loop's parked listeners (in their accept
    // loops' frames); set to -1 by whoever closes one.
    std::vector<int*> parked_listeners;

    Server(Shared& s, std::size_t i) : sh(s), cfg(s.cfg), index(i) {}
    ~Server() {
        sweep.reset();
        standby.reset();
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
        if (timeouts.empty() && sweep) {  // an armed timer would keep the loop running
            sweep->cancel();
            sweep_at = Clock::time_point::max();
        }
        for (auto& a : acceptors) a->close(ec);
        for (int* fd : parked_listeners)
            if (*fd >= 0) ::close(*fd), *fd = -1;
        if (standby) standby->cancel();  // parked accept loops end
        for (auto& d : datagrams) d->close(ec);
        for (auto& [id, w] : live)
            if (auto c = w.lock()) c->close(Closed::shutdown);
        if (signals) signals->cancel(ec);
        if (stdin_watch) stdin_watch->close(ec);
    }
    // Every loop (callable from any loop's thread).
    void stop() { sh.stop_all(); }

    // This loop's thread only: add a timeout due at `at` (the sweep timer is
    // moved only when it is due later), and act on those that are due.
    Timeouts::iterator add_timeout(Clock::time_point at, Timeout t);
    void drop_timeout(Timeouts::iterator it);
    void sweep_timeouts();

    // Runs this loop until it is stopped. A handler that throws is logged
    // and counted (internal_error) and the loop goes on serving: no input
    // ends the process through std::terminate.
    void run() noexcept;
    // The completion of a spawned coroutine (instead of asio::detached, which
    // drops what ended it): an exception is logged and counted, never lost.
    auto on_done(const char* what) {
        return [this, what](const std::exception_ptr& e) {
            if (e) internal_error(what, e);
        };
    }
    void internal_error(const char* what, const std::exception_ptr& e) noexcept;
};

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
    void push(std::string line);
    // The inbox refused the request: the connection is not the sink's to
    // close (the refusal is still being written on it).
    void forget() { to_.reset(); }
    // On the home loop, once the inbox reply is written: lines queued so far go out.
    void open();

private:
    void enqueue(std::string line);
    void write_next();
    Server& home_;
    std::shared_ptr<Conn> to_;
    std::deque<std::string> queue_;
    std::size_t queued_ = 0;
    bool writing_ = false, broken_ = false, plugged_ = true;
    std::uint64_t dropped_ = 0;
};

// One log record: emitted once, when the request or tunnel ends (emit(),
// which the destructor calls if nothing did). emit() never throws: a line it
// cannot build or deliver is counted (log_line) and said on stderr.
struct Record {
    Server& srv;
    json j;
    Clock::time_point start = Clock::now();
    std::shared_ptr<Conn> conn;
    std::uint64_t up0 = 0, down0 = 0;
    bool armed = true;

    Record(Server& s, std::shared_ptr<Conn> c, const char* proto, const std::string& client);
    void decide(const Verdict& v);
    void emit() noexcept;
    ~Record() { emit(); }
    void write_line();
    Record(const Record&) = delete;
    Record& operator=(const Record&) = delete;
};

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

// With the network rule `ask`, a target the rules allow, once its
// addresses passed, is put to the approver (once per host:port) and `rec`
// says how it was answered.
awaitable<Vetting> vet(Server& srv, const Target& t, Record& rec);
// A request's question to the request asker (an outcome of deny when there
// is none); `key` names what is asked, answers are kept for the session.
awaitable<AskOutcome> ask_request(Server& srv, std::string key, json question);
// The approver's key for a target: "host:port" ("[v6]:port" for a literal).
std::string ask_key(const std::string& host, std::uint16_t port, bool v6_literal);

// A failure the proxy recovers from (a leg reset, a write to a client that
// left, a listener's accept failing): counted by kind for the metrics, and
// logged unless the peer simply went away (end of file, reset, broken pipe,
// or a close of the proxy's own making).
void note_error(Server& srv, const char* kind, const std::exception& e);
awaitable<Dialed> dial(Server& srv, std::shared_ptr<Conn> c, const std::vector<Address>& addrs, std::uint16_t port);

// The peer address accept(2) reported (no getpeername call), or the listener's
// name for a Unix socket.
std::string describe_client(const Proto::endpoint& peer, const std::string& listener);

// Comparison with --auth-token-file's token in time independent of where
// the first difference is (the length is not secret enough to hide).
bool token_matches(const ProxyConfig& cfg, std::string_view given);
Verdict auth_denied(std::string reason);

// One accepted connection: admitted under the caps (or answered "busy" in
// its protocol), served, released. `listener_key` is that listener's own
// (every loop's accept on it shares it); the client for the caps is the
// listener and the peer address, or the listener alone when captured.
awaitable<void> serve(Server& srv, Kind kind, Sock sock, std::string listener, std::string listener_key,
                      Proto::endpoint peer, std::shared_ptr<EventSink> sink);
// `busy`: why the caps refused this connection ("" when admitted).
awaitable<void> serve_http(Server& srv, std::shared_ptr<Conn> c, std::string client, std::string busy);
awaitable<void> serve_socks(Server& srv, std::shared_ptr<Conn> c, std::string client, std::string busy);
awaitable<void> serve_captured(Server& srv, std::shared_ptr<Conn> c, std::string client, std::string busy);
// A captured sandbox's resolver: a bound UDP socket (IP_PKTINFO on), whose
// queries are answered from the fake pool for names the rules could admit
// and NXDOMAIN for the rest; one connection line per query.
awaitable<void> serve_dns(Server& srv, int fd, std::string listener, std::shared_ptr<EventSink> sink);
// A captured sandbox's raw socket. UDP: other than DNS it goes nowhere
// (every destination there is local); TCP (SYNs only): a port none of
// `captured` is refused by the kernel. Each destination is reported once,
// as a deny line (proto "udp" or "tcp").
awaitable<void> serve_report(Server& srv, int fd, std::shared_ptr<const std::set<std::uint16_t>> captured,
                             std::shared_ptr<EventSink> sink);

// Listeners (listeners.cpp). add_listener accepts on `fd` on every loop;
// its result names where it listens.
Result<int> listen_fd(const sockaddr* sa, socklen_t len, const std::string& what);
Result<std::string> add_listener(Server& srv, int fd, Kind kind, const std::string& listener,
                                 std::shared_ptr<EventSink> sink = nullptr);
Result<std::string> listen_tcp(Server& srv, const std::string& host, std::uint16_t port, Kind kind);
Result<int> listen_unix(Server& srv, const std::string& path);

// The fd inbox (fd_inbox.cpp): accepts senders of listening sockets.
awaitable<void> inbox_loop(Server& srv, Acceptor& acc);

// --metrics-socket (metrics_page.cpp): answers each connection with the page.
awaitable<void> metrics_loop(Server& srv, Acceptor& acc);

}  // namespace cc::net::detail
