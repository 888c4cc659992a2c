// TLS terminated at the proxy for the hosts the operator names (--intercept,
// and every host a --credential names): the client's TLS ends here with a
// certificate the session CA minted for the host it asked for (session_ca.hpp),
// cc-egress opens its own TLS to the upstream, verified against the system's
// trust store (and --upstream-ca), and carries HTTP/1.1 between them through
// the project's one HTTP reader, one request at a time: credentials are
// injected (credentials.hpp), each request gets its own connection line.
// Hosts not named are tunnelled as before, their server names checked.
//
//   CONNECT api.github.com:443 -> vet, dial -> open_upstream_tls (verified, or 502)
//     -> "200 Connection established" -> serve_intercepted (client TLS, requests)
#pragma once

#include "cc/net/session.hpp"
#include "cc/net/credentials.hpp"
#include "cc/net/session_ca.hpp"
#include "cc/net/tls_leg.hpp"

#include <boost/asio/ssl/context.hpp>

namespace cc::net::detail {

namespace ssl = asio::ssl;

class Interceptor {
public:
    // The session CA and both TLS contexts; input errors name the option.
    static Result<std::shared_ptr<Interceptor>> create(const ProxyConfig& cfg);

    bool intercepts(const std::string& host) const;
    // The server context that presents `host`'s certificate (made once,
    // then shared by every connection to that host).
    Result<std::shared_ptr<ssl::context>> server_context(const std::string& host);
    ssl::context& client_context() { return *client_; }
    std::string ca_pem() const { return ca_->cert_pem(); }
    const std::vector<Credential>& credentials() const { return creds_; }

    // The upstream's last session ticket for "host:port", taken (a TLS 1.3
    // ticket is offered once); nullptr when there is none. The caller
    // frees it (SSL_SESSION_free) after SSL_set_session.
    SSL_SESSION* take_session(const std::string& key);
    // From the client context's new-session callback: keeps `s` (owned)
    // for `key`, in place of any before.
    void keep_session(const std::string& key, SSL_SESSION* s);
    ~Interceptor();

private:
    std::vector<std::string> hosts_;
    std::vector<Credential> creds_;
    std::unique_ptr<SessionCa> ca_;
    std::unique_ptr<ssl::context> client_;
    std::mutex mu_;
    struct Served {
        std::string host;  // the name the client must ask for (its SNI)
        std::shared_ptr<ssl::context> ctx;
    };
    std::map<std::string, std::unique_ptr<Served>> served_;
    // Upstream sessions by "host:port": the upstream was verified for that
    // name in the handshake that made each, and none is offered to another.
    std::mutex sessions_mu_;
    std::map<std::string, SSL_SESSION*> sessions_;
};

// The upstream leg, TLS verified.
struct UpstreamTls {
    UpstreamTls(Sock& s, ssl::context& ctx, std::string k) : key(std::move(k)), tls(s, ctx.native_handle()) {}
    std::string key;  // "host:port": where its session tickets are kept
    TlsLeg tls;
    bool resumed = false;
};

// After the upstream socket is dialled: TLS to it, the certificate verified
// for t.host. nullptr when it fails, with `why` saying how.
awaitable<std::unique_ptr<UpstreamTls>> open_upstream_tls(Server& srv, std::shared_ptr<Conn> c, const Target& t,
                                                          std::string& why);

// The client's TLS (a certificate for t.host), then its requests, one by
// one, to the upstream. `rec` is the tunnel's line; each request gets its own.
awaitable<void> serve_intercepted(Server& srv, std::shared_ptr<Conn> c, const Target& t,
                                  std::unique_ptr<UpstreamTls> up, Record& rec);

// A refusal as JSON ({"error","rule","reason"}), Connection: close.
std::string json_refusal(int status, const std::string& rule, const std::string& reason);

}  // namespace cc::net::detail
