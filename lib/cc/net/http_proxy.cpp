// The HTTP side: CONNECT tunnels and absolute-form http:// requests with
// keep-alive to the origin, Proxy-Authorization with --auth-token-file.
#include <strings.h>

#include <cstring>

#include "cc/net/intercept.hpp"
#include "cc/net/relay.hpp"
#include "cc/net/wire.hpp"

namespace cc::net::detail {

namespace {

// Answer, then close gracefully: a client still sending (an oversized head,
// a body) would otherwise get a reset that destroys the unread answer.
awaitable<void> send_error(Server& srv, std::shared_ptr<Conn> c, int status, const std::string& proxy_error,
                           const std::string& reason) {
    try {
        co_await write_all(c->client, http::error_response(status, proxy_error, reason, "cc-egress: " + reason));
        ErrorCode ec;
        c->client.shutdown(Sock::shutdown_send, ec);
        Deadline deadline(srv, c, 2000);
        std::string sink;
        for (std::size_t total = 0; total < (1u << 20);) {
            sink.clear();
            std::size_t n = co_await read_more(c->client, sink);
            if (n == 0) break;
            total += n;
        }
    } catch (const std::exception& e) {
        note_error(srv, "client_write", e);  // the client left before reading its answer
    }
}

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
    co_await relay_chunked(
        buf, count, dechunk, [&]() { return read_more(from, buf); }, [&](std::string_view d) { return write_all(to, d); });
}

// Read one head (bounded); "" on a clean EOF before any byte.
awaitable<std::string> read_head(Sock& s, std::string& buf, bool& too_big) {
    co_return co_await read_head_with(buf, too_big, [&]() { return read_more(s, buf, 16 * 1024); });
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
    Vetting v = co_await vet(srv, *t, rec);
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
    if (srv.sh.interceptor && srv.sh.interceptor->intercepts(t->host)) {
        rec.j["intercepted"] = true;
        if (!buf.empty()) {
            // The client's TLS must start after the answer: bytes sent
            // before it are not fed to a handshake that has not begun.
            rec.decide(Verdict{false, "intercept", "bytes sent before the tunnel to an intercepted host was established", ""});
            co_await send_error(srv, c, 400, "", "bytes sent before the tunnel was established");
            co_return;
        }
        std::string why;
        auto up = co_await open_upstream_tls(srv, c, *t, why);
        if (!up) {
            rec.decide(Verdict{false, "intercept", why, "tls_certificate_error"});
            co_await send_error(srv, c, 502, "tls_certificate_error", why);
            co_return;
        }
        co_await write_all(c->client, "HTTP/1.1 200 Connection established\r\n\r\n");
        co_await serve_intercepted(srv, c, *t, std::move(up), rec);
        co_return;
    }
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
    // A credential's placeholder is never sent in clear (nor in a target).
    if (srv.sh.interceptor) {
        auto inj = inject_credentials(srv.sh.interceptor->credentials(), t.host, h.headers, h.target, false);
        if (inj.refused) {
            rec.decide(Verdict{false, "credential", inj.reason, ""});
            co_await write_all(c->client, json_refusal(403, "credential", inj.reason));
            co_return false;
        }
    }
    // A port that carries TLS (--tls-ports) gets no plain HTTP from here
    // either: the request would reach it in clear, past every server-name
    // rule a tunnel there meets.
    if (srv.cfg.sni_check &&
        std::find(srv.cfg.tls_ports.begin(), srv.cfg.tls_ports.end(), t.port) != srv.cfg.tls_ports.end()) {
        Verdict v{false, "tls", "plain HTTP to " + t.host + ":" + std::to_string(t.port) +
                                    ", a TLS port (--tls-ports): use https:// (CONNECT)", ""};
        if (srv.cfg.report) {
            rec.decide(report_only(v));
        } else {
            rec.decide(v);
            co_await send_error(srv, c, 403, "", v.reason);
            co_return false;
        }
    }
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
            Vetting v = co_await vet(srv, t, rec);
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
        } catch (const std::exception& e) {
            note_error(srv, "upstream_read", e);
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

}  // namespace

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
                Deadline deadline(srv, c, srv.cfg.handshake_timeout_ms, Closed::header_timeout);
                head = co_await read_head(c->client, buf, too_big);
            } catch (const std::exception& e) {
                if (c->closed != Closed::header_timeout) note_error(srv, "client_read", e);
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
            watch_idle(srv, c, srv.cfg.idle_timeout_ms);
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
    } catch (const std::exception& e) {
        note_error(srv, "http", e);
    }
}

}  // namespace cc::net::detail
