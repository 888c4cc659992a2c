// TLS terminated for named hosts (intercept.hpp): the contexts, the upstream
// handshake, and the requests carried between the two TLS legs.

#include "cc/net/intercept.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ssl/error.hpp>

#include <cstring>

#include "cc/core/json_writer.hpp"
#include "cc/net/relay.hpp"
#include "cc/net/request_rules.hpp"
#include "cc/net/wire.hpp"

namespace cc::net::detail {

namespace {

// TLS 1.3 suites, AES-128-GCM first: every byte of an intercepted
// connection is decrypted and encrypted again here, and it is the cheapest
// of the three with AES instructions (about 15% below AES-256-GCM).
constexpr const char* k_suites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

// ALPN: HTTP/1.1 is what this proxy reads; a client offering only h2 gets
// no protocol and speaks HTTP/1.1 (RFC 7301 3.2 lets it).
int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned inlen,
                  void*) {
    static const unsigned char h11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    unsigned char* sel = nullptr;
    unsigned char sellen = 0;
    if (SSL_select_next_proto(&sel, &sellen, h11, sizeof h11, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    *outlen = sellen;
    return SSL_TLSEXT_ERR_OK;
}

// The client must ask for the host it CONNECTed to (or send no name, as
// for an address): another name would be a certificate it never gets.
int check_server_name(SSL* s, int* alert, void* arg) {
    const char* name = SSL_get_servername(s, TLSEXT_NAMETYPE_host_name);
    if (!name) return SSL_TLSEXT_ERR_OK;
    const auto* host = static_cast<const std::string*>(arg);
    auto t = canonical_target(name);
    if (t && t->host == *host) return SSL_TLSEXT_ERR_OK;
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

// Append up to `max` bytes of plaintext to `buf`; 0 at the end. A peer
// that closes without close_notify ends its stream the same way: every body
// read here has its own framing or ends at the close anyway.
awaitable<std::size_t> tls_read(TlsLeg& s, std::string& buf, std::size_t max = read_chunk) {
    co_await s.readable();  // `buf` grows only once there is something to read
    std::size_t old = buf.size();
    buf.resize(old + max);
    ErrorCode ec;
    std::size_t n = co_await s.read_some(buf.data() + old, max, ec);
    buf.resize(old + n);
    if (ec && ec != asio::error::eof && ec != ssl::error::stream_truncated) throw boost::system::system_error(ec);
    co_return n;
}

// One head (bounded); "" on a clean end before any byte.
awaitable<std::string> tls_head(TlsLeg& s, std::string& buf, bool& too_big) {
    co_return co_await read_head_with(buf, too_big, [&]() { return tls_read(s, buf, 16 * 1024); });
}

// A head (`head`) and its body of known framing from `from` (`buf` read
// already) to `to`. The head and what was read with it leave in one write:
// a short answer is one send.
awaitable<void> tls_body(TlsLeg& from, std::string& buf, TlsLeg& to, std::string head, const http::Framing& f,
                         std::uint64_t& count, bool dechunk = false) {
    using http::BodyKind;
    count += head.size();
    if (f.kind == BodyKind::length || f.kind == BodyKind::until_close) {
        std::uint64_t want = f.kind == BodyKind::length ? f.length : unlimited;
        // What was read with the head first, then straight through one
        // buffer (no string growth per read).
        std::size_t now = static_cast<std::size_t>(std::min<std::uint64_t>(want, buf.size()));
        head.append(buf, 0, now);
        co_await to.write(head);
        count += now;
        buf.erase(0, now);
        if (want != unlimited) want -= now;
        std::vector<char> chunk(read_chunk);
        while (want > 0) {
            std::size_t room = static_cast<std::size_t>(std::min<std::uint64_t>(want, chunk.size()));
            ErrorCode ec;
            std::size_t n = co_await from.read_some(chunk.data(), room, ec);
            if (n == 0 || ec) {
                if (ec && ec != asio::error::eof && ec != ssl::error::stream_truncated)
                    throw boost::system::system_error(ec);
                if (want == unlimited) co_return;
                throw std::runtime_error("body cut short");
            }
            co_await to.write(std::string_view(chunk.data(), n));
            count += n;
            if (want != unlimited) want -= n;
        }
        co_return;
    }
    co_await to.write(head);
    if (f.kind == BodyKind::none) co_return;
    co_await relay_chunked(
        buf, count, dechunk, [&]() { return tls_read(from, buf); }, [&](std::string_view d) { return to.write(d); });
}

// The whole payload of a request body (chunked framing removed), when a
// rule must read it; false when it is larger than `cap`.
awaitable<bool> tls_payload(TlsLeg& s, std::string& buf, const http::Framing& f, std::string& out, std::size_t cap) {
    using http::BodyKind;
    if (f.kind == BodyKind::none) co_return true;
    if (f.kind == BodyKind::length) {
        if (f.length > cap) co_return false;
        const auto want = static_cast<std::size_t>(f.length);
        while (buf.size() < want)
            if (co_await tls_read(s, buf) == 0) throw std::runtime_error("body cut short");
        out = buf.substr(0, want);
        buf.erase(0, want);
        co_return true;
    }
    if (f.kind != BodyKind::chunked) co_return false;
    http::ChunkedScanner scan;
    while (true) {
        std::size_t n = scan.feed(buf, &out);
        if (scan.failed()) throw std::runtime_error(std::string("malformed chunked body: ") + scan.error());
        buf.erase(0, n);
        if (out.size() > cap) co_return false;
        if (scan.done()) co_return true;
        if (co_await tls_read(s, buf) == 0) throw std::runtime_error("chunked body cut short");
    }
}

// The Host header names the host this connection was opened to.
bool host_matches(const http::Headers& headers, const Target& t) {
    const http::Header* h = http::find(headers, "host");
    if (!h) return false;
    std::string_view v = h->value;
    std::string_view name = v;
    if (!v.empty() && v.front() == '[') {
        auto close = v.find(']');
        if (close == std::string_view::npos) return false;
        name = v.substr(1, close - 1);
        v.remove_prefix(close + 1);
        if (!v.empty() && (v.front() != ':' || v.substr(1) != std::to_string(t.port))) return false;
    } else if (auto colon = v.rfind(':'); colon != std::string_view::npos) {
        if (v.substr(colon + 1) != std::to_string(t.port)) return false;
        name = v.substr(0, colon);
    }
    auto ct = canonical_target(name);
    return ct && ct->host == t.host;
}

std::string tls_error(const ErrorCode& ec) { return ec.message(); }

// At most this many upstream sessions are kept (one per host and port).
constexpr std::size_t k_max_sessions = 256;

// Where the new-session callback finds its Interceptor (on the client
// context) and the connection's key (on the SSL): ex_data slots of our
// own (asio's context keeps a callback of its own in the app data slot).
int ctx_slot() {
    static const int slot = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return slot;
}
int ssl_slot() {
    static const int slot = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return slot;
}

// The client context's new-session callback: a ticket the upstream sent,
// kept under the key its connection carries.
int on_new_session(SSL* s, SSL_SESSION* sess) {
    auto* ic = static_cast<Interceptor*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(s), ctx_slot()));
    const auto* key = static_cast<const std::string*>(SSL_get_ex_data(s, ssl_slot()));
    if (!ic || !key) return 0;
    ic->keep_session(*key, sess);
    return 1;  // the reference is ours now
}

}  // namespace

std::string json_refusal(int status, const std::string& rule, const std::string& reason) {
    nlohmann::json body = {{"error", "refused by cc-egress"}, {"rule", rule}, {"reason", reason}};
    std::string text = cc::json::write(body) + "\n";
    std::string line = status == 403 ? "403 Forbidden" : status == 421 ? "421 Misdirected Request"
                     : status == 400 ? "400 Bad Request" : status == 431 ? "431 Request Header Fields Too Large"
                     : std::to_string(status) + " Error";
    return "HTTP/1.1 " + line + "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
           "\r\nConnection: close\r\n\r\n" + text;
}

Result<std::shared_ptr<Interceptor>> Interceptor::create(const ProxyConfig& cfg) {
    auto ic = std::make_shared<Interceptor>();
    ic->hosts_ = cfg.intercept;
    ic->creds_ = cfg.credentials;
    for (const auto& c : cfg.credentials)
        for (const auto& h : c.hosts)
            if (std::find(ic->hosts_.begin(), ic->hosts_.end(), h) == ic->hosts_.end()) ic->hosts_.push_back(h);
    auto ca = SessionCa::create(ic->hosts_);
    if (!ca) return ca.error();
    ic->ca_ = std::move(*ca);
    try {
        ic->client_ = std::make_unique<ssl::context>(ssl::context::tls_client);
        SSL_CTX* x = ic->client_->native_handle();
        SSL_CTX_set_min_proto_version(x, TLS1_2_VERSION);
        SSL_CTX_set_ciphersuites(x, k_suites);
        ic->client_->set_default_verify_paths();
        if (cfg.upstream_ca) ic->client_->load_verify_file(*cfg.upstream_ca);
        ic->client_->set_verify_mode(ssl::verify_peer);
        static const unsigned char h11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
        SSL_CTX_set_alpn_protos(x, h11, sizeof h11);
        // Upstream sessions are resumed: a fresh client connection to a host
        // seen before skips the upstream's certificate and its checks.
        SSL_CTX_set_session_cache_mode(x, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(x, on_new_session);
        SSL_CTX_set_ex_data(x, ctx_slot(), ic.get());
    } catch (const std::exception& e) {
        return input_error("--upstream-ca '" + cfg.upstream_ca.value_or("") + "'", "cannot be read as PEM certificates");
    }
    return ic;
}

Interceptor::~Interceptor() {
    for (auto& [key, sess] : sessions_) SSL_SESSION_free(sess);
}

SSL_SESSION* Interceptor::take_session(const std::string& key) {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    auto it = sessions_.find(key);
    if (it == sessions_.end()) return nullptr;
    SSL_SESSION* s = it->second;
    sessions_.erase(it);
    return s;
}

void Interceptor::keep_session(const std::string& key, SSL_SESSION* s) {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    auto it = sessions_.find(key);
    if (it != sessions_.end()) {
        SSL_SESSION_free(it->second);
        it->second = s;
        return;
    }
    if (sessions_.size() >= k_max_sessions) {
        SSL_SESSION_free(sessions_.begin()->second);
        sessions_.erase(sessions_.begin());
    }
    sessions_.emplace(key, s);
}

bool Interceptor::intercepts(const std::string& host) const {
    return std::find(hosts_.begin(), hosts_.end(), host) != hosts_.end();
}

Result<std::shared_ptr<ssl::context>> Interceptor::server_context(const std::string& host) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = served_.find(host); it != served_.end()) return it->second->ctx;
    auto s = std::make_unique<Served>();
    s->host = host;
    s->ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    SSL_CTX* x = s->ctx->native_handle();
    SSL_CTX_set_min_proto_version(x, TLS1_2_VERSION);
    SSL_CTX_set_ciphersuites(x, k_suites);
    SSL_CTX_set_options(x, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (auto r = ca_->use_leaf(x, host); !r) return r.error();
    SSL_CTX_set_alpn_select_cb(x, select_http11, nullptr);
    SSL_CTX_set_tlsext_servername_callback(x, check_server_name);
    SSL_CTX_set_tlsext_servername_arg(x, &s->host);
    auto ctx = s->ctx;
    served_[host] = std::move(s);
    return ctx;
}

awaitable<std::unique_ptr<UpstreamTls>> open_upstream_tls(Server& srv, std::shared_ptr<Conn> c, const Target& t,
                                                          std::string& why) {
    auto up = std::make_unique<UpstreamTls>(*c->upstream, srv.sh.interceptor->client_context(),
                                            t.host + ":" + std::to_string(t.port));
    SSL* s = up->tls.native_handle();
    SSL_set_ex_data(s, ssl_slot(), &up->key);
    if (SSL_SESSION* sess = srv.sh.interceptor->take_session(up->key)) {
        SSL_set_session(s, sess);
        SSL_SESSION_free(sess);
    }
    if (parse_ip_literal(t.host)) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), t.host.c_str());
    } else {
        SSL_set_tlsext_host_name(s, t.host.c_str());
        SSL_set1_host(s, t.host.c_str());
    }
    ErrorCode ec;
    {
        Deadline deadline(srv, c, srv.cfg.handshake_timeout_ms, Closed::header_timeout);
        ec = co_await up->tls.handshake(false);
    }
    if (!ec) {
        up->resumed = SSL_session_reused(s) == 1;
        co_return up;
    }
    long vr = SSL_get_verify_result(s);
    if (vr != X509_V_OK)
        why = "upstream certificate of " + t.host + " not trusted: " + X509_verify_cert_error_string(vr);
    else if (c->closed == Closed::header_timeout)
        why = "upstream TLS handshake with " + t.host + " not complete within " +
              std::to_string(srv.cfg.handshake_timeout_ms) + " ms";
    else
        why = "upstream TLS handshake with " + t.host + " failed: " + tls_error(ec);
    co_return nullptr;
}

awaitable<void> serve_intercepted(Server& srv, std::shared_ptr<Conn> c, const Target& t,
                                  std::unique_ptr<UpstreamTls> up, Record& rec) {
    const std::string client = rec.j.value("client", std::string());
    rec.j["upstreamResumed"] = up->resumed;
    auto ctx = srv.sh.interceptor->server_context(t.host);
    if (!ctx) {
        rec.decide(Verdict{false, "intercept", ctx.error().one_line(), ""});
        c->close();
        co_return;
    }
    TlsLeg cs(c->client, (*ctx)->native_handle());
    ErrorCode ec;
    {
        Deadline deadline(srv, c, srv.cfg.handshake_timeout_ms, Closed::header_timeout);
        ec = co_await cs.handshake(true);
    }
    if (ec) {
        // Most often the client does not trust the session CA (an alert
        // unknown_ca), or asked for another name.
        rec.j["error"] = "client TLS handshake: " + tls_error(ec);
        c->close();
        co_return;
    }
    watch_idle(srv, c, srv.cfg.idle_timeout_ms);
    const auto& creds = srv.sh.interceptor->credentials();
    std::string buf, ubuf;
    try {
        while (!srv.stopping) {
            // Between requests a kept-alive connection holds no buffer of
            // ours: what the last answer needed goes back.
            up->tls.trim();
            cs.trim();
            if (buf.empty()) std::string().swap(buf);
            if (ubuf.empty()) std::string().swap(ubuf);
            bool too_big = false;
            std::string head = co_await tls_head(cs, buf, too_big);
            if (head.empty() && !too_big) break;
            Record req(srv, c, "https", client);
            req.j["host"] = t.host;
            req.j["port"] = t.port;
            auto refuse = [&](int status, const std::string& rule, const std::string& reason) -> std::string {
                req.decide(Verdict{false, rule, reason, ""});
                return json_refusal(status, rule, reason);
            };
            std::string answer;
            auto h = too_big ? Result<http::RequestHead>(input_error("head", "too large")) : http::parse_request_head(head);
            if (too_big) {
                answer = refuse(431, "malformed", "request head larger than " + std::to_string(http::max_head) + " bytes");
            } else if (!h) {
                answer = refuse(400, "malformed", "malformed request: " + h.error().one_line());
            } else {
                req.j["method"] = h->method;
                if (h->target.empty() || (h->target[0] != '/' && !(h->method == "OPTIONS" && h->target == "*")))
                    answer = refuse(400, "malformed", "request target must be origin-form (/path)");
                else if (!host_matches(h->headers, t))
                    answer = refuse(421, "intercept", "Host header does not name " + t.host + ":" + std::to_string(t.port));
            }
            Injection inj;
            if (answer.empty()) {
                inj = inject_credentials(creds, t.host, h->headers, h->target, true);
                if (inj.refused) answer = refuse(403, "credential", inj.reason);
            }
            auto framing = answer.empty() ? http::request_framing(*h) : Result<http::Framing>(http::Framing{});
            if (answer.empty() && !framing) answer = refuse(400, "malformed", framing.error().one_line());
            // What the request does, judged like every other action: the
            // mode first, then the request rules and the policy.
            std::string payload;
            bool buffered = false;
            if (answer.empty()) {
                const std::string& m = h->method;
                const std::string mode(policy::to_string(srv.cfg.mode));
                auto np = normal_path(h->target);
                if (!np) {
                    answer = refuse(400, "malformed", "a request path that cannot be read one way only");
                } else if (policy::is_read_only(srv.cfg.mode) && m != "GET" && m != "HEAD" && m != "OPTIONS") {
                    answer = refuse(403, "read-only mode",
                                    m + " to " + t.host + " in " + mode + " mode: only GET, HEAD and OPTIONS reach an intercepted host");
                } else if (srv.cfg.request_rules) {
                    const RequestRules& rr = *srv.cfg.request_rules;
                    if (needs_body(rr, t.host, m, h->target)) {
                        buffered = true;
                        if (http::has_token(h->headers, "expect", "100-continue") && framing->kind != http::BodyKind::none)
                            co_await cs.write("HTTP/1.1 100 Continue\r\n\r\n");
                        if (!co_await tls_payload(cs, buf, *framing, payload, 1u << 20))
                            answer = refuse(413, "malformed", "a request body a rule must read is larger than 1 MiB");
                    }
                    auto cls = answer.empty() ? classify_request(rr, t.host, m, h->target, buffered ? &payload : nullptr)
                                              : std::nullopt;
                    if (cls) {
                        req.j["action"] = cls->action;
                        const std::string rule = cls->rule + " (" + cls->action + ")";
                        policy::Verdict v = cls->decision ? policy::Verdict{*cls->decision, cls->why, cls->rule}
                                                          : policy::decide(*srv.cfg.policy, {cls->action, srv.cfg.mode, std::nullopt});
                        if (v.decision == policy::Decision::ask) {
                            json q = {{"action", cls->action}, {"mode", mode}, {"host", t.host}, {"method", m},
                                      {"path", *np}, {"reason", cls->why}, {"client", client}};
                            AskOutcome o = co_await ask_request(srv, cls->action + " " + m + " " + t.host + *np, std::move(q));
                            req.j["ask"] = o.allow ? "allow" : "deny";
                            if (!o.allow) answer = refuse(403, rule, cls->why + ": " + o.reason);
                        } else if (v.decision == policy::Decision::deny) {
                            answer = refuse(403, rule, cls->why + ": " + (cls->decision ? std::string("refused here") : v.reason));
                        }
                    }
                }
            }
            if (!answer.empty()) {
                co_await cs.write(answer);
                break;
            }
            if (!inj.injected.empty()) req.j["credentials"] = inj.injected;
            req.decide(Verdict{true, "intercept", "intercepted request to " + t.host, ""});
            http::AbsoluteUri uri;
            uri.target = t;
            uri.authority = t.port == 443 ? t.host : t.host + ":" + std::to_string(t.port);
            uri.origin_form = h->target;
            const bool client_close = http::has_token(h->headers, "connection", "close") || h->version == "HTTP/1.0";
            // Expect: 100-continue is answered here (the upstream's own 100
            // would be an interim answer this loop does not relay).
            const bool expect = http::has_token(h->headers, "expect", "100-continue");
            std::erase_if(h->headers, [](const http::Header& x) { return cc::http::equal_ci(x.name, "expect"); });
            // A body read whole goes on as it was read, with its length.
            const http::Framing sent = buffered && framing->kind != http::BodyKind::none
                                           ? http::Framing{http::BodyKind::length, payload.size()} : *framing;
            std::string up_head = http::upstream_request_head(*h, uri, sent);
            if (buffered) {
                c->up += up_head.size() + payload.size();
                co_await up->tls.write(up_head += payload);
            } else {
                if (expect && framing->kind != http::BodyKind::none) co_await cs.write("HTTP/1.1 100 Continue\r\n\r\n");
                co_await tls_body(cs, buf, up->tls, std::move(up_head), *framing, c->up);
            }
            // The response; interim ones are hop-local, upgrades not carried.
            http::ResponseHead resp;
            while (true) {
                std::string rh = co_await tls_head(up->tls, ubuf, too_big);
                auto r = rh.empty() ? Result<http::ResponseHead>(input_error("response", "none")) : http::parse_response_head(rh);
                if (!r) {
                    req.j["error"] = too_big ? "upstream response head too large" : "no valid upstream response";
                    co_await cs.write(http::error_response(502, "http_protocol_error", req.j["error"].get<std::string>(),
                                                                "cc-egress: " + req.j["error"].get<std::string>()));
                    co_return;
                }
                resp = std::move(*r);
                if (resp.status == 101) {
                    req.j["error"] = "protocol upgrades are not carried on an intercepted host";
                    co_await cs.write(http::error_response(502, "http_protocol_error", req.j["error"].get<std::string>(),
                                                                "cc-egress: " + req.j["error"].get<std::string>()));
                    co_return;
                }
                if (resp.status >= 200) break;
            }
            req.j["status"] = resp.status;
            http::Framing rf = http::response_framing(resp, h->method);
            const bool dechunk = rf.kind == http::BodyKind::chunked && h->version == "HTTP/1.0";
            const bool upstream_close = rf.kind == http::BodyKind::until_close ||
                                        http::has_token(resp.headers, "connection", "close") ||
                                        (resp.version == "HTTP/1.0" && !http::has_token(resp.headers, "connection", "keep-alive"));
            const bool close_after = client_close || upstream_close || dechunk;
            std::string down_head = http::client_response_head(
                resp, dechunk ? http::Framing{http::BodyKind::until_close, 0} : rf, close_after);
            co_await tls_body(up->tls, ubuf, cs, std::move(down_head), rf, c->down, dechunk);
            if (close_after || !ubuf.empty()) break;
        }
        // close_notify, so that a body that ends at the close is not read
        // as cut short; the client's own is waited for briefly.
        Deadline deadline(srv, c, 2000);
        co_await cs.shutdown();
    } catch (const std::exception& e) {
        note_error(srv, "intercept", e);
    }
    c->close();
}

}  // namespace cc::net::detail
