#include "cc/net/resolver.hpp"

#include <ares.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <deque>
#include <future>
#include <mutex>
#include <thread>

namespace cc::net {

struct Resolver::Impl {
    ares_channel channel = nullptr;
    int wake = -1;  // eventfd: new work or stop
    std::mutex mu;
    std::deque<std::pair<std::string, Callback>> queue;
    bool stopping = false;
    std::thread thread;

    static void on_result(void* arg, int status, int /*timeouts*/, ares_addrinfo* res) {
        std::unique_ptr<Callback> cb(static_cast<Callback*>(arg));
        Resolution r;
        if (status != ARES_SUCCESS) {
            r.error = ares_strerror(status);
        } else {
            for (ares_addrinfo_node* n = res ? res->nodes : nullptr; n; n = n->ai_next) {
                if (auto a = address_of(n->ai_addr)) {
                    bool seen = false;
                    for (const auto& x : r.addresses) seen = seen || x == *a;
                    if (!seen) r.addresses.push_back(*a);
                }
            }
            r.ok = !r.addresses.empty();
            if (!r.ok) r.error = "no addresses";
        }
        if (res) ares_freeaddrinfo(res);
        (*cb)(std::move(r));
    }

    void loop() {
        for (;;) {
            {
                std::lock_guard<std::mutex> lock(mu);
                if (stopping) break;
                while (!queue.empty()) {
                    auto [name, cb] = std::move(queue.front());
                    queue.pop_front();
                    ares_addrinfo_hints hints{};
                    hints.ai_family = AF_UNSPEC;
                    hints.ai_socktype = SOCK_STREAM;
                    ares_getaddrinfo(channel, name.c_str(), nullptr, &hints, on_result, new Callback(std::move(cb)));
                }
            }
            ares_socket_t socks[ARES_GETSOCK_MAXNUM];
            int bits = ares_getsock(channel, socks, ARES_GETSOCK_MAXNUM);
            pollfd pfds[ARES_GETSOCK_MAXNUM + 1];
            int n = 0;
            pfds[n++] = {wake, POLLIN, 0};
            for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
                short ev = 0;
                if (ARES_GETSOCK_READABLE(bits, i)) ev |= POLLIN;
                if (ARES_GETSOCK_WRITABLE(bits, i)) ev |= POLLOUT;
                if (ev) pfds[n++] = {socks[i], ev, 0};
            }
            timeval tv{}, max{1, 0};
            timeval* t = ares_timeout(channel, &max, &tv);
            int ms = static_cast<int>(t->tv_sec * 1000 + t->tv_usec / 1000) + 1;
            int rc = ::poll(pfds, static_cast<nfds_t>(n), ms);
            if (rc < 0) continue;
            if (pfds[0].revents) {
                std::uint64_t v;
                [[maybe_unused]] auto ignored = ::read(wake, &v, sizeof v);
            }
            bool any = false;
            for (int i = 1; i < n; ++i) {
                if (!pfds[i].revents) continue;
                any = true;
                ares_socket_t r = (pfds[i].revents & (POLLIN | POLLERR | POLLHUP)) ? pfds[i].fd : ARES_SOCKET_BAD;
                ares_socket_t w = (pfds[i].revents & POLLOUT) ? pfds[i].fd : ARES_SOCKET_BAD;
                ares_process_fd(channel, r, w);
            }
            if (!any) ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // timeouts
        }
        ares_destroy(channel);  // runs pending callbacks with ARES_EDESTRUCTION
        channel = nullptr;
    }
};

Resolver::Resolver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Resolver::~Resolver() {
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->stopping = true;
    }
    std::uint64_t one = 1;
    [[maybe_unused]] auto ignored = ::write(impl_->wake, &one, sizeof one);
    if (impl_->thread.joinable()) impl_->thread.join();
    ::close(impl_->wake);
}

Result<std::unique_ptr<Resolver>> Resolver::create(const ResolverOptions& o) {
    static std::once_flag init_once;
    static int init_rc = ARES_SUCCESS;
    std::call_once(init_once, [] { init_rc = ares_library_init(ARES_LIB_INIT_ALL); });
    if (init_rc != ARES_SUCCESS) return unavailable_error("c-ares", ares_strerror(init_rc));

    auto impl = std::make_unique<Impl>();
    ares_options opts{};
    int mask = ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_FLAGS | ARES_OPT_NDOTS | ARES_OPT_DOMAINS;
    opts.timeout = o.timeout_ms;
    opts.tries = o.tries;
    // The vetted name is the name asked, as a fully qualified name. A search
    // list (resolv.conf "search", LOCALDOMAIN) with ndots (Kubernetes pods use
    // ndots:5, also settable through RES_OPTIONS) would first ask
    // "allowed.example.corp.example" and dial whatever that answers;
    // HOSTALIASES would rename it. c-ares takes values given here over the
    // environment and resolv.conf, so: no domains, ndots 0 (every name is
    // tried as is, single labels too), no search, no aliases.
    opts.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
    opts.ndots = 0;
    opts.domains = nullptr;
    opts.ndomains = 0;
    std::string lookups = "b";  // a named server answers alone; no hosts file
    if (!o.server.empty()) {
        opts.lookups = lookups.data();
        mask |= ARES_OPT_LOOKUPS;
    }
    int rc = ares_init_options(&impl->channel, &opts, mask);
    if (rc != ARES_SUCCESS) return unavailable_error("c-ares", ares_strerror(rc));
    if (!o.server.empty()) {
        rc = ares_set_servers_ports_csv(impl->channel, o.server.c_str());
        if (rc != ARES_SUCCESS) {
            ares_destroy(impl->channel);
            return input_error("--dns-server '" + o.server + "'", "is not IP[:PORT]");
        }
    }
    impl->wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (impl->wake < 0) {
        ares_destroy(impl->channel);
        return io_error("eventfd", "cannot create");
    }
    Impl* raw = impl.get();
    impl->thread = std::thread([raw] { raw->loop(); });
    return std::unique_ptr<Resolver>(new Resolver(std::move(impl)));
}

void Resolver::resolve(std::string name, Callback done) {
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->queue.emplace_back(std::move(name), std::move(done));
    }
    std::uint64_t one = 1;
    [[maybe_unused]] auto ignored = ::write(impl_->wake, &one, sizeof one);
}

Resolution Resolver::resolve_blocking(const std::string& name) {
    auto p = std::make_shared<std::promise<Resolution>>();
    auto f = p->get_future();
    resolve(name, [p](Resolution r) { p->set_value(std::move(r)); });
    return f.get();
}

}  // namespace cc::net
