#include "cc/git/gateway_impl.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/process.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <filesystem>
#include <thread>
#include <tuple>

#include "cc/git/ancestry.hpp"
#include "cc/git/decision.hpp"
#include "cc/git/http.hpp"
#include "cc/git/receive_pack.hpp"
#include "cc/git/redact.hpp"
#include "cc/git/forward.hpp"
#include "cc/git/server.hpp"
#include "cc/git/upstream.hpp"

namespace cc::git {

namespace {
// The share of served connections is the authenticated session's (one per
// gateway: whoever holds the secret is that session), whatever address it
// connects from.
const std::string session_key = "session";
}  // namespace

namespace asio = boost::asio;
using nlohmann::json;

namespace detail {

namespace {

// a == b in time independent of where they differ (the secret is the whole
// of the client's credential); the length is not secret enough to hide.
bool same_secret(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
    return diff == 0;
}

}  // namespace

// Only the session this gateway serves may push. Its requests carry the
// session's secret in the X-CC-Pushgate-Session header (what the git
// configuration sets: no process listing shows it), or, for a client that
// cannot set a header, as the first path segment of the ready event's URL
// (which puts it in the argv of git's remote helper). The Host check keeps a
// web page that rebinds a DNS name to 127.0.0.1 out (its requests name that
// host). On success a secret in the path is cut from the target.
std::optional<std::string> Gateway::refusal(http::RequestHead& h) const {
    auto host = h.header("host");
    if (!host) return std::string("request has no Host header");
    std::string lower_host = *host;
    for (char& ch : lower_host) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (std::find(hosts_.begin(), hosts_.end(), lower_host) == hosts_.end())
        return "Host '" + one_line(*host, 100) + "' is not this gateway's address";
    if (auto session = h.header("x-cc-pushgate-session")) {
        std::string v = *session;
        while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
        std::size_t b = v.find_first_not_of(" \t");
        v = b == std::string::npos ? std::string() : v.substr(b);
        if (!same_secret(v, secret_)) return std::string("request carries a wrong session secret");
        // The target may still hold the secret as its first segment (a
        // client with both): cut it the same way.
        if (h.target.size() >= prefix_.size() && same_secret(std::string_view(h.target).substr(0, prefix_.size()), prefix_))
            h.target = h.target.substr(prefix_.size() - 1);
        return std::nullopt;
    }
    const std::string& t = h.target;
    bool same = t.size() >= prefix_.size();
    unsigned char diff = same ? 0 : 1;
    // Compared in constant time: the secret is the whole of the client's credential.
    for (std::size_t i = 0; i < prefix_.size(); ++i)
        diff |= static_cast<unsigned char>(prefix_[i] ^ (i < t.size() ? t[i] : 0));
    if (diff != 0)
        return std::string("request does not carry this session's gateway secret (use the git configuration from the ready event)");
    h.target = t.substr(prefix_.size() - 1);
    return std::nullopt;
}

void Gateway::serve_connection(int fd, const std::string& client) {
    Conn c(fd, cfg_.io_timeout);
    bool admitted = false;
    struct Leave {
        Gateway& g;
        int fd;
        const std::string& client;
        bool& admitted;
        ~Leave() {
            if (admitted) g.admitted_.leave(session_key);
            else if (g.pending_) g.pending_->remove(fd);
        }
    } leave{*this, fd, client, admitted};
    for (;;) {
        std::optional<http::RequestHead> head;
        // The whole head must arrive within --head-timeout (a slow or idle
        // client is not given the body's idle timeout to sit on a thread).
        auto deadline = Clock::now() + cfg_.head_timeout;
        while (!head) {
            auto h = http::take_head(c.in);
            if (!h) {
                send_whole(c, 400, "text/plain", "cc-pushgate: " + h.error().message + "\n", true);
                return;
            }
            if (*h) {
                head = std::move(**h);
                break;
            }
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) return;
            auto f = c.fill(left);
            if (!f || !*f) return;  // head timeout or the client went away
        }
        bool close = !head->keep_alive();
        ++busy_;
        struct Done {
            std::atomic<int>& n;
            ~Done() { --n; }
        } done{busy_};
        // Two Host headers: which one names the gateway is a matter of
        // reading order between programs. Malformed: 400, nothing read on.
        if (std::count_if(head->headers.begin(), head->headers.end(), [](const auto& kv) { return kv.first == "host"; }) > 1) {
            log_line("refused a request: more than one Host header");
            send_whole(c, 400, "text/plain", "cc-pushgate: request has more than one Host header\n", true);
            return;
        }
        if (auto why = refusal(*head)) {
            // Never 401 (git would prompt): an ERR advertisement makes git print
            // "fatal: remote error: <why>"; anything else gets a 403 saying it.
            log_line("refused a request: " + *why);
            emit_({{"event", "refused"}, {"repo", ""}, {"reason", *why}});
            Body b(c, *head);
            if (!b.init_error()) (void)b.drain(1u << 20, std::chrono::seconds(5));
            bool advert = head->target.find("/info/refs") != std::string::npos;
            send_whole(c, advert ? 200 : 403, advert ? advert_type : "text/plain",
                       advert ? error_advertisement("cc-pushgate: " + *why) : "cc-pushgate: " + *why + "\n", true);
            return;
        }
        if (!admitted) {
            if (pending_) pending_->remove(fd);
            if (auto busy = admitted_.enter(session_key)) {
                log_line("refused a connection: " + *busy);
                emit_({{"event", "refused"}, {"repo", ""}, {"reason", *busy}, {"client", client}});
                Body b(c, *head);
                if (!b.init_error()) (void)b.drain(1u << 20, std::chrono::seconds(5));
                send_whole(c, 503, "text/plain", "cc-pushgate: " + *busy + "\n", true);
                return;
            }
            admitted = true;
        }
        Route route = parse_route(head->target);
        if (route.kind == Route::Kind::info_refs && (head->method == "GET" || head->method == "HEAD")) {
            handle_info_refs(c, *head, route, close);
        } else if (route.kind == Route::Kind::receive_pack && head->method == "POST") {
            if (!handle_push(c, *head, route, close)) return;
        } else {
            // Anything else (fetch included: fetch keeps the original URL and
            // goes upstream with the read token) is not this gateway's job.
            std::string why = route.kind == Route::Kind::upload_pack
                                  ? "cc-pushgate: this gateway only takes pushes; fetch from the original URL\n"
                                  : "cc-pushgate: not a git push URL\n";
            Body b(c, *head);
            bool drained = !b.init_error() && b.drain(1u << 20, std::chrono::seconds(5));
            send_whole(c, route.kind == Route::Kind::upload_pack ? 403 : 404, "text/plain", why, true);
            (void)drained;
            return;
        }
        if (close) return;
    }
}

void Gateway::handle_info_refs(Conn& c, const http::RequestHead& h, const Route& route, bool close) {
    if (route.service != "git-receive-pack") {
        send_whole(c, 403, "text/plain",
                   "cc-pushgate: this gateway only takes pushes; fetch from the original URL\n", close);
        return;
    }
    auto it = linked_.find(route.repo_key);
    if (it == linked_.end()) {
        // Never 401: git would prompt for credentials. An ERR packet makes git
        // print "fatal: remote error: <text>".
        log_line("refused '" + route.repo_key + "': not linked");
        emit_({{"event", "refused"}, {"repo", route.repo_key}, {"reason", "repository is not linked"}});
        send_whole(c, 200, advert_type,
                   error_advertisement("cc-pushgate: repository '" + route.repo_key +
                                       "' is not linked to this workspace, so the gateway will not push to it"),
                   close);
        return;
    }
    std::string agent = h.header("user-agent").value_or("git/cc-pushgate");
    std::string failure;
    std::string body;
    auto token = cfg_.tokens->token(it->second.owner, it->second.name);
    if (!token) {
        failure = "could not get a write token: " + token.error().one_line();
    } else {
        CurlHandle ch;
        char errbuf[CURL_ERROR_SIZE] = {0};
        common_curl(ch, upstream_url(it->second) + "/info/refs?service=git-receive-pack", *token, agent,
                    cfg_.io_timeout);
        // No Git-Protocol header upstream: push is protocol v0 either way.
        ch.header("Accept: */*");
        ch.header("Pragma: no-cache");
        curl_easy_setopt(ch.h, CURLOPT_HTTPHEADER, ch.headers);
        curl_easy_setopt(ch.h, CURLOPT_WRITEFUNCTION, collect_capped);
        curl_easy_setopt(ch.h, CURLOPT_WRITEDATA, &body);
        curl_easy_setopt(ch.h, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(ch.h, CURLOPT_TIMEOUT, static_cast<long>(cfg_.io_timeout.count()));
        CURLcode rc = curl_easy_perform(ch.h);
        long status = 0;
        curl_easy_getinfo(ch.h, CURLINFO_RESPONSE_CODE, &status);
        if (rc != CURLE_OK) {
            failure = "upstream unreachable: " + curl_error_text(rc, errbuf);
        } else if (status != 200) {
            failure = "upstream answered HTTP " + std::to_string(status) + " to the ref advertisement";
        } else {
            auto filtered = filter_advertisement(body);
            if (!filtered)
                failure = "upstream ref advertisement is unreadable: " + filtered.error().message;
            else
                body = std::move(*filtered);
        }
    }
    if (!failure.empty()) {
        // Let git go on to POST, where the push gets rejected refs carrying
        // this reason, instead of a bare fatal error here.
        log_line(route.repo_key + ": " + failure + " (answering an empty advertisement)");
        body = synthetic_advertisement();
    }
    send_whole(c, 200, advert_type, h.method == "HEAD" ? std::string() : body, close);
}


}  // namespace detail

using namespace detail;

Status serve(const GatewayConfig& cfg, const EmitFn& emit) {
    if (auto s = validate(cfg); !s) return s;
    // Before any thread: whatever ends this process from here on, what it
    // minted is revoked (by the watch when not by the shutdown below).
    if (auto s = cfg.tokens->watch_for_exit(); !s) return s;
    // The force check trusts the mirror: it lives where only the gateway's
    // user can write (made 0700; refused when group or others may write it,
    // or it is a link or someone else's).
    if (!cfg.mirror_dir.empty()) {
        std::error_code ec;
        if (!std::filesystem::exists(cfg.mirror_dir, ec)) {
            std::filesystem::create_directories(cfg.mirror_dir, ec);
            if (!ec) ::chmod(cfg.mirror_dir.c_str(), 0700);
        }
        struct stat st {};
        if (::lstat(cfg.mirror_dir.c_str(), &st) != 0) return io_error("--mirror-dir '" + cfg.mirror_dir + "'", "cannot use");
        if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022))
            return io_error("--mirror-dir '" + cfg.mirror_dir + "'",
                            "must be a directory of the gateway's own user that group and others cannot write "
                            "(chmod 700 it)", 0);
    }
    if (!cfg.mirror_dir.empty())
        if (std::size_t n = sweep_all_quarantines(cfg.mirror_dir); n > 0)
            log_line("removed " + std::to_string(n) + " quarantine(s) a gateway that was killed left in '" +
                     cfg.mirror_dir + "'");
    auto ep = parse_listen(cfg.listen);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    asio::io_context io;
    asio::ip::tcp::acceptor acceptor(io);
    boost::system::error_code ec;
    acceptor.open(ep->protocol(), ec);
    // Asio opens sockets without SOCK_CLOEXEC: the listener must not reach a token command.
    if (!ec && ::fcntl(acceptor.native_handle(), F_SETFD, FD_CLOEXEC) != 0)
        ec = boost::system::error_code(errno, boost::system::system_category());
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(*ep, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return io_error("--listen '" + cfg.listen + "'", ec.message(), ec.value());
    auto local = acceptor.local_endpoint();
    std::string host = local.address().is_v6() ? "[" + local.address().to_string() + "]" : local.address().to_string();
    std::string port = std::to_string(local.port());
    std::string secret = session_secret();
    if (secret.empty()) return io_error("session secret", "could not read random bytes");
    std::string url = "http://" + host + ":" + port + "/" + secret + "/";

    auto gateway = std::make_shared<Gateway>(cfg, emit);
    std::vector<std::string> hosts = {"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, host + ":" + port};
    gateway->admit_only(secret, hosts);
    auto active = std::make_shared<std::atomic<std::size_t>>(0);
    auto pending = std::make_shared<Pending>(cfg.max_pending, cfg.max_client_connections);
    gateway->watch_pending(pending);
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int) {
        acceptor.close();
        io.stop();
    });
    std::function<void()> accept_next = [&] {
        acceptor.async_accept([&](const boost::system::error_code& aec, asio::ip::tcp::socket sock) {
            if (aec) {
                if (acceptor.is_open()) accept_next();
                return;
            }
            // Close-on-exec: a token command started by another connection's
            // thread must not inherit this client's socket.
            boost::system::error_code pec;
            auto peer = sock.remote_endpoint(pec);
            std::string client = pec ? std::string("unknown") : peer.address().to_string();
            int fd = ::fcntl(sock.native_handle(), F_DUPFD_CLOEXEC, 0);
            sock.close();
            if (fd >= 0) {
                // Threads are bounded by the two caps: pending (evicting the
                // oldest) and admitted (503 past --max-connections).
                pending->add(fd, client);
                ++*active;
                std::thread([gateway, active, fd, client] {
                    // Nothing a client sends ends the process: what escapes
                    // a connection is said and counted, and the others go on.
                    try {
                        gateway->serve_connection(fd, client);
                    } catch (const std::exception& e) {
                        gateway->internal_error(client, e.what());
                    } catch (...) {
                        gateway->internal_error(client, "an unknown exception");
                    }
                    ::shutdown(fd, SHUT_RDWR);
                    ::close(fd);
                    --*active;
                }).detach();
            }
            accept_next();
        });
    };
    accept_next();
    emit(ready_event(url, cfg));
    for (;;) {
        try {
            io.run();
            break;
        } catch (const std::exception& e) {  // a throwing handler: the loop picks up again
            gateway->internal_error("the accept loop", e.what());
        }
    }
    // Let pushes in flight finish before their tokens are revoked.
    auto grace = Clock::now() + std::chrono::seconds(30);
    while (gateway->busy() > 0 && Clock::now() < grace) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    json revoked = cfg.tokens->revoke_all();
    json ev = {{"event", "shutdown"}, {"activeConnections", active->load()}, {"busy", gateway->busy()},
               {"evictedConnections", pending->evicted()}};
    if (gateway->internal_errors() > 0) ev["internalErrors"] = gateway->internal_errors();
    if (!revoked.empty()) ev["tokens"] = revoked;
    emit(ev);
    return ok();
}

}  // namespace cc::git
