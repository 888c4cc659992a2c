// Name resolution with c-ares on one small thread of its own, so the proxy's
// event loop never blocks on DNS. A name is asked exactly as given, fully
// qualified: no search list, no ndots, no LOCALDOMAIN, RES_OPTIONS or
// HOSTALIASES from the environment. Each name is resolved once; the caller
// vets every address and dials one of them (never re-resolving, which is
// what defeats DNS rebinding).
//
//   auto r = cc::net::Resolver::create({"127.0.0.1:5353"});   // "" = the host's resolv.conf
//   (*r)->resolve("api.github.com", [](cc::net::Resolution res) { ... });  // on the resolver thread
//   cc::net::Resolution res = (*r)->resolve_blocking("api.github.com");
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/net/host.hpp"

namespace cc::net {

struct Resolution {
    bool ok = false;
    std::string error;  // c-ares' text ("Domain name not found") when !ok
    std::vector<Address> addresses;
};

struct ResolverOptions {
    std::string server;       // "IP:PORT" or "IP"; empty: the host's resolver configuration
    int timeout_ms = 5000;    // per try
    int tries = 2;
};

class Resolver {
public:
    using Callback = std::function<void(Resolution)>;

    static Result<std::unique_ptr<Resolver>> create(const ResolverOptions& o);
    ~Resolver();
    Resolver(const Resolver&) = delete;
    Resolver& operator=(const Resolver&) = delete;

    // `done` runs on the resolver thread; hand the result to your own loop.
    void resolve(std::string name, Callback done);
    Resolution resolve_blocking(const std::string& name);

    struct Impl;

private:
    explicit Resolver(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace cc::net
