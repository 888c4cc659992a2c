#include "cc/net/proxy.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <thread>

#include "cc/core/io.hpp"
#include "cc/net/intercept.hpp"
#include "cc/net/session.hpp"

namespace cc::net {

using namespace detail;

namespace {

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
    // Caps asked for above what the descriptors hold are held to what they
    // hold: past it the proxy would run out of descriptors and stop
    // answering (accept fails), where within it the excess gets a 503.
    std::string clamped;
    sh.max_connections = cfg.max_connections > 0 ? std::min<std::size_t>(cfg.max_connections, fit) : fit;
    if (cfg.max_connections > fit)
        clamped = "--max-connections " + std::to_string(cfg.max_connections) + " does not fit the descriptor limit (" +
                  std::to_string(nofile) + "): " + std::to_string(fit) + " connections at once";
    sh.max_client = cfg.max_client_connections > 0 ? std::min<std::size_t>(cfg.max_client_connections, sh.max_connections)
                                                   : std::min<std::size_t>(1024, std::max<std::size_t>(8, sh.max_connections / 2));
    for (std::size_t i = 0; i < n; ++i) sh.loops.push_back(std::make_unique<Server>(sh, i));
    sh.metrics.set_loops(n);
    Server& srv = *sh.loops[0];
    auto resolver = Resolver::create(cfg.dns);
    if (!resolver) return resolver.error();
    sh.resolver = std::move(*resolver);
    if (cfg.ask)
        sh.asker = std::make_unique<Asker>(cfg.approver, cfg.network_rule, [&srv](const std::string& l) { srv.log(l); });
    if (!cfg.intercept.empty() || !cfg.credentials.empty()) {
        // Made before anything listens: a CA or trust file that fails is an
        // error with nothing started.
        auto ic = Interceptor::create(cfg);
        if (!ic) return ic.error();
        sh.interceptor = std::move(*ic);
        if (!cfg.approver.argv.empty())
            sh.request_asker = std::make_unique<Asker>(
                cfg.approver, policy::Verdict{policy::Decision::ask, "a request to an intercepted host", "request rules"},
                [&srv](const std::string& l) { srv.log(l); });
        if (cfg.ca_cert_out)
            if (auto w = io::write_file_atomic(*cfg.ca_cert_out, sh.interceptor->ca_pem(), 0644); !w) return w.error();
    }

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
        // Whoever connects can hand listeners in and read connection lines:
        // the socket is the owner's alone (0600) from the start, whatever the
        // umask (bind() gives it the umask's mode; no loop runs yet).
        mode_t old_mask = ::umask(0177);
        auto fd = listen_unix(srv, *cfg.fd_inbox);
        ::umask(old_mask);
        if (!fd) return fail(fd.error());
        auto acc = std::make_unique<Acceptor>(srv.io);
        ErrorCode ec;
        acc->assign(Proto(AF_UNIX, 0), *fd, ec);
        if (ec) return fail(io_error(*cfg.fd_inbox, "cannot use inbox socket", ec.value()));
        asio::co_spawn(srv.io, inbox_loop(srv, *acc), srv.on_done("the fd inbox"));
        srv.inbox = acc.get();
        srv.acceptors.push_back(std::move(acc));
        ready["fdInbox"] = *cfg.fd_inbox;
    }

    if (cfg.metrics_socket) {
        // The page is the operator's: the socket is made 0600 from the start
        // (bind() gives it the umask's mode; no loop runs yet).
        mode_t old_mask = ::umask(0177);
        auto fd = listen_unix(srv, *cfg.metrics_socket);
        ::umask(old_mask);
        if (!fd) return fail(fd.error());
        auto acc = std::make_unique<Acceptor>(srv.io);
        ErrorCode ec;
        acc->assign(Proto(AF_UNIX, 0), *fd, ec);
        if (ec) return fail(io_error(*cfg.metrics_socket, "cannot use the metrics socket", ec.value()));
        asio::co_spawn(srv.io, metrics_loop(srv, *acc), srv.on_done("the metrics listener"));
        srv.acceptors.push_back(std::move(acc));
        ready["metricsSocket"] = *cfg.metrics_socket;
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
            asio::co_spawn(srv.io, watch_stdin(srv), srv.on_done("--exit-with-stdin"));
        } else {
            srv.log("--exit-with-stdin: stdin is not a pipe; ignored");
            ready["exitWithStdin"] = false;
        }
    }
    if (sh.interceptor) {
        std::vector<std::string> hosts = cfg.intercept;
        json creds = json::array();
        for (const auto& c : cfg.credentials) {
            creds.push_back({{"name", c.name}, {"hosts", c.hosts}, {"placeholder", c.placeholder}});
            for (const auto& name : c.hosts)
                if (std::find(hosts.begin(), hosts.end(), name) == hosts.end()) hosts.push_back(name);
        }
        ready["intercept"] = hosts;
        ready["interceptCa"] = sh.interceptor->ca_pem();
        ready["credentials"] = creds;
    }
    ready["threads"] = n;
    ready["maxConnections"] = sh.max_connections;
    ready["descriptorLimit"] = nofile;
    if (!clamped.empty()) {
        srv.log(clamped);
        ready["maxConnectionsAsked"] = cfg.max_connections;
    }
    ready["maxClientConnections"] = sh.max_client;
    ready["firstByteTimeoutMs"] = cfg.first_byte_timeout_ms;
    for (auto& [k, v] : cfg.ready.items()) ready[k] = v;
    if (cfg.on_ready) cfg.on_ready(ready);

    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < n; ++i) threads.emplace_back([l = sh.loops[i].get()] { l->run(); });
    srv.run();
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
