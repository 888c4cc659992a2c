// The SOCKS5 side (RFC 1928 CONNECT; RFC 1929 username/password with
// --auth-token-file). Every policy refusal is reply 02, "not allowed by
// ruleset", the message nc, ncat and connect print as such.
#include <cstring>

#include "cc/net/intercept.hpp"
#include "cc/net/relay.hpp"
#include "cc/net/wire.hpp"

namespace cc::net::detail {

namespace {

std::uint8_t socks_code_for(int err) {
    if (err == ECONNREFUSED) return socks5::rep_refused;
    if (err == ENETUNREACH) return socks5::rep_network_unreachable;
    return socks5::rep_host_unreachable;
}

}  // namespace

awaitable<void> serve_socks(Server& srv, std::shared_ptr<Conn> c, std::string client, std::string busy) {
    Record rec(srv, c, "socks5", client);
    std::string buf;
    try {
        std::optional<Deadline> deadline(std::in_place, srv, c, srv.cfg.handshake_timeout_ms, Closed::header_timeout);
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
        Vetting v = co_await vet(srv, *t, rec);
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
            bport = port_of(reinterpret_cast<sockaddr*>(&ss));
        }
        if (srv.sh.interceptor && srv.sh.interceptor->intercepts(t->host)) {
            rec.j["intercepted"] = true;
            std::string why = buf.empty() ? "" : "bytes sent before the tunnel to an intercepted host was established";
            std::unique_ptr<UpstreamTls> up;
            if (why.empty()) up = co_await open_upstream_tls(srv, c, *t, why);
            if (!up) {
                rec.decide(Verdict{false, "intercept", why, ""});
                co_await write_all(c->client, socks5::reply(socks5::rep_general_failure));
                co_return;
            }
            co_await write_all(c->client, socks5::reply(socks5::rep_success, bound, bport));
            co_await serve_intercepted(srv, c, *t, std::move(up), rec);
            co_return;
        }
        co_await write_all(c->client, socks5::reply(socks5::rep_success, bound, bport));
        co_await tunnel(srv, c, *t, std::move(buf), rec);
    } catch (const std::exception& e) {
        note_error(srv, "socks5", e);
        if (!rec.j.contains("error")) rec.j["error"] = e.what();
    }
}

}  // namespace cc::net::detail
