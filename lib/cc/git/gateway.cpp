#include "cc/git/gateway.hpp"

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

#include <atomic>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
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

namespace asio = boost::asio;
using nlohmann::json;

namespace {

const char* advert_type = "application/x-git-receive-pack-advertisement";

// ---------------------------------------------------------------- the gateway

struct Linked {
    std::string owner, name;  // as the operator spelled them
};

// Connections that have not yet shown the session secret. Capped in total and
// per client (peer address): when a client is at its own cap, its oldest
// waiting connection is cut; when the whole registry is full, the one waiting
// longest is. Cut means shutdown, so its thread sees the end. Idle or slow
// clients thus cannot keep the session's own pushes out, and one client's
// flood only ever cuts that client's connections first.
// Only this registry shuts a pending fd down, under its lock, and a connection
// leaves it before its fd is closed, so a reused fd number is never hit.
class Pending {
public:
    Pending(std::size_t cap, std::size_t per_client) : cap_(cap), per_client_(per_client) {}
    void add(int fd, const std::string& client) {
        std::lock_guard<std::mutex> lock(mu_);
        std::size_t mine = 0;
        for (const auto& e : fds_) mine += e.second == client;
        while (mine >= per_client_ && mine > 0) {
            auto it = std::find_if(fds_.begin(), fds_.end(), [&](const auto& e) { return e.second == client; });
            cut(it);
            --mine;
        }
        while (fds_.size() >= cap_ && !fds_.empty()) cut(fds_.begin());
        fds_.emplace_back(fd, client);
    }
    void remove(int fd) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = std::find_if(fds_.begin(), fds_.end(), [&](const auto& e) { return e.first == fd; });
        if (it != fds_.end()) fds_.erase(it);
    }
    std::size_t evicted() const {
        std::lock_guard<std::mutex> lock(mu_);
        return evicted_;
    }

private:
    using Fds = std::deque<std::pair<int, std::string>>;
    void cut(Fds::iterator it) {
        ::shutdown(it->first, SHUT_RDWR);
        fds_.erase(it);
        ++evicted_;
    }
    std::size_t cap_, per_client_;
    mutable std::mutex mu_;
    Fds fds_;
    std::size_t evicted_ = 0;
};

// Connections past the secret check, in total and per client.
class Admitted {
public:
    Admitted(std::size_t cap, std::size_t per_client) : cap_(cap), per_client_(per_client) {}
    // nullopt when admitted, else why not.
    std::optional<std::string> enter(const std::string& client) {
        std::lock_guard<std::mutex> lock(mu_);
        if (total_ >= cap_) return "gateway is busy (" + std::to_string(cap_) + " connections at once)";
        std::size_t& mine = per_client_count_[client];
        if (mine >= per_client_)
            return "too many connections from " + client + " (at most " + std::to_string(per_client_) + " at once)";
        ++mine;
        ++total_;
        return std::nullopt;
    }
    void leave(const std::string& client) {
        std::lock_guard<std::mutex> lock(mu_);
        --total_;
        if (--per_client_count_[client] == 0) per_client_count_.erase(client);
    }

private:
    std::size_t cap_, per_client_;
    std::mutex mu_;
    std::size_t total_ = 0;
    std::map<std::string, std::size_t> per_client_count_;
};

class Gateway {
public:
    Gateway(const GatewayConfig& cfg, const EmitFn& emit)
        : cfg_(cfg), admitted_(cfg.max_connections, cfg.max_client_connections), emit_([this, &emit](const json& ev) {
              // One line at a time: connection threads emit concurrently.
              std::lock_guard<std::mutex> lock(emit_mu_);
              emit(ev);
          }) {
        upstream_ = cfg.upstream;
        while (!upstream_.empty() && upstream_.back() == '/') upstream_.pop_back();
        for (const auto& r : cfg.repos) {
            auto key = normalise_repo(r);
            // OWNER/NAME spelled as given, minus any URL prefix and .git.
            std::string k = *key;
            std::string tail = k.substr(std::string("github.com/").size());
            std::string owner = tail.substr(0, tail.find('/')), name = tail.substr(tail.find('/') + 1);
            // Recover the operator's case from the original spelling.
            std::string lower_r = r;
            for (char& ch : lower_r) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            auto pos = lower_r.rfind(owner + "/" + name);
            if (pos != std::string::npos) {
                owner = r.substr(pos, owner.size());
                name = r.substr(pos + owner.size() + 1, name.size());
            }
            linked_[k] = {owner, name};
        }
    }

    // `client` is the peer's address: the per-client caps count by it.
    void serve_connection(int fd, const std::string& client);
    // The session secret (first path segment of every request) and the Host
    // values this gateway answers to; set once, before the first connection.
    void watch_pending(std::shared_ptr<Pending> p) { pending_ = std::move(p); }
    void admit_only(std::string secret, std::vector<std::string> hosts) {
        prefix_ = "/" + std::move(secret) + "/";
        hosts_ = std::move(hosts);
    }
    // Requests being answered (idle keep-alive connections do not count).
    int busy() const { return busy_.load(); }

private:
    void handle_info_refs(Conn& c, const http::RequestHead& h, const Route& route, bool close);
    bool handle_push(Conn& c, const http::RequestHead& h, const Route& route, bool close);
    std::optional<std::string> read_symrefs(const Linked& target, const std::string& token, const http::RequestHead& h,
                                            const std::vector<std::string>& names, PushContext& ctx);
    void ask_approver(RefPlan& r, const std::string& repo_key) const;
    std::mutex& mirror_lock(const std::string& repo_key) {
        std::lock_guard<std::mutex> lock(mirrors_mu_);
        auto& m = mirror_locks_[repo_key];
        if (!m) m = std::make_unique<std::mutex>();
        return *m;
    }
    std::string upstream_url(const Linked& l) const { return upstream_ + "/" + l.owner + "/" + l.name + ".git"; }

    const GatewayConfig& cfg_;
    Admitted admitted_;  // connections past the secret check
    std::mutex emit_mu_;
    EmitFn emit_;
    std::string upstream_;
    std::map<std::string, Linked> linked_;
    std::atomic<int> busy_{0};
    std::mutex mirrors_mu_;
    std::map<std::string, std::unique_ptr<std::mutex>> mirror_locks_;
    std::shared_ptr<Pending> pending_;
    std::string prefix_;               // "/<secret>/"
    std::vector<std::string> hosts_;   // lower case host:port
    std::optional<std::string> refusal(http::RequestHead& h) const;
};

// Only the session this gateway serves may push: its requests carry the
// secret from the ready event's URL as their first path segment. The Host
// check keeps a web page that rebinds a DNS name to 127.0.0.1 out (its
// requests name that host). On success the secret is cut from the target.
std::optional<std::string> Gateway::refusal(http::RequestHead& h) const {
    auto host = h.header("host");
    if (!host) return std::string("request has no Host header");
    std::string lower_host = *host;
    for (char& ch : lower_host) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (std::find(hosts_.begin(), hosts_.end(), lower_host) == hosts_.end())
        return "Host '" + one_line(*host, 100) + "' is not this gateway's address";
    const std::string& t = h.target;
    bool same = t.size() >= prefix_.size();
    unsigned char diff = same ? 0 : 1;
    // Compared in constant time: the secret is the whole of the client's credential.
    for (std::size_t i = 0; i < prefix_.size(); ++i)
        diff |= static_cast<unsigned char>(prefix_[i] ^ (i < t.size() ? t[i] : 0));
    if (diff != 0) return std::string("request does not carry this session's gateway secret (use the URL from the ready event)");
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
            if (admitted) g.admitted_.leave(client);
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
                send_whole(c, 400, "text/plain", "Control Center: " + h.error().message + "\n", true);
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
        if (auto why = refusal(*head)) {
            // Never 401 (git would prompt): an ERR advertisement makes git print
            // "fatal: remote error: <why>"; anything else gets a 403 saying it.
            log_line("refused a request: " + *why);
            emit_({{"event", "refused"}, {"repo", ""}, {"reason", *why}});
            Body b(c, *head);
            if (!b.init_error()) (void)b.drain(1u << 20, std::chrono::seconds(5));
            bool advert = head->target.find("/info/refs") != std::string::npos;
            send_whole(c, advert ? 200 : 403, advert ? advert_type : "text/plain",
                       advert ? error_advertisement("Control Center: " + *why) : "Control Center: " + *why + "\n", true);
            return;
        }
        if (!admitted) {
            if (pending_) pending_->remove(fd);
            if (auto busy = admitted_.enter(client)) {
                log_line("refused a connection: " + *busy);
                emit_({{"event", "refused"}, {"repo", ""}, {"reason", *busy}, {"client", client}});
                Body b(c, *head);
                if (!b.init_error()) (void)b.drain(1u << 20, std::chrono::seconds(5));
                send_whole(c, 503, "text/plain", "Control Center: " + *busy + "\n", true);
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
                                  ? "Control Center: this gateway only takes pushes; fetch from the original URL\n"
                                  : "Control Center: not a git push URL\n";
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
                   "Control Center: this gateway only takes pushes; fetch from the original URL\n", close);
        return;
    }
    auto it = linked_.find(route.repo_key);
    if (it == linked_.end()) {
        // Never 401: git would prompt for credentials. An ERR packet makes git
        // print "fatal: remote error: <text>".
        log_line("refused '" + route.repo_key + "': not linked");
        emit_({{"event", "refused"}, {"repo", route.repo_key}, {"reason", "repository is not linked"}});
        send_whole(c, 200, advert_type,
                   error_advertisement("Control Center: repository '" + route.repo_key +
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


// Which of the pushed names the upstream resolves through a symbolic ref
// (decide_push then judges their targets too). When the upstream cannot say,
// nothing goes (fail closed): the reason is returned, and the push fails as
// when upstream is down.
std::optional<std::string> Gateway::read_symrefs(const Linked& target, const std::string& token,
                                                 const http::RequestHead& h, const std::vector<std::string>& names,
                                                 PushContext& ctx) {
    auto remote = ls_refs(upstream_url(target), token, h.header("user-agent").value_or("git/cc-pushgate"), names,
                          cfg_.io_timeout);
    if (!remote) {
        if (remote.error().subject == "upstream unreachable") return remote.error().one_line();
        return "could not read the upstream's symbolic refs (" + remote.error().one_line() + ")";
    }
    std::map<std::string, std::string> symrefs;
    for (const auto& [name, r] : *remote)
        if (!r.symref_target.empty()) symrefs[name] = r.symref_target;
    ctx.symrefs = std::move(symrefs);
    return std::nullopt;
}

// An `ask` goes to the approver (none configured: deny).
void Gateway::ask_approver(RefPlan& r, const std::string& repo_key) const {
    if (r.verdict.decision != policy::Decision::ask) return;
    json q = {{"action", "push"},   {"mode", policy::to_string(cfg_.mode)},
              {"repo", repo_key},   {"ref", r.cmd.ref},
              {"old", r.cmd.old_oid}, {"new", r.cmd.new_oid},
              {"kind", r.kind},     {"reason", r.verdict.reason}};
    if (!r.symref_target.empty()) q["symrefTarget"] = r.symref_target;
    r.verdict = policy::resolve_ask(r.verdict, q, cfg_.approver);
}

bool Gateway::handle_push(Conn& c, const http::RequestHead& h, const Route& route, bool close) {
    auto t0 = Clock::now();
    Body body(c, h);
    if (auto e = body.init_error()) {
        send_whole(c, e->code == Errc::input ? 415 : 400, "text/plain", "Control Center: " + e->one_line() + "\n", true);
        return false;
    }
    if (auto e = h.header("expect"); e && e->find("100") != std::string::npos)
        if (!c.write_all("HTTP/1.1 100 Continue\r\n\r\n")) return false;

    auto protocol_error = [&](const Error& e) {
        log_line(route.repo_key + ": bad push request: " + e.one_line());
        emit_({{"event", "error"}, {"repo", route.repo_key}, {"error", e.one_line()}});
        send_whole(c, 400, "text/plain", "Control Center: bad push request: " + e.message + "\n", true);
        return false;
    };

    // 1. The prefix: shallow lines, commands, push options.
    RequestParser parser;
    std::string chunk;
    bool eof = false;
    while (!parser.done()) {
        chunk.clear();
        auto n = body.read(chunk, io_chunk);
        if (!n) return protocol_error(n.error());
        if (*n == 0) {
            eof = true;
            break;
        }
        auto r = parser.feed(chunk);
        if (!r) return protocol_error(r.error());
    }
    if (eof)
        if (auto s = parser.finish(); !s) return protocol_error(s.error());
    const PushRequest& req = parser.request();
    std::string pack_start = parser.take_rest();
    if (req.is_probe()) {
        // The probe before a large push: answer as http-backend does.
        if (!pack_start.empty()) return protocol_error(input_error("request", "data after an empty command list"));
        chunk.clear();
        auto n = body.read(chunk, io_chunk);
        if (!n) return protocol_error(n.error());
        if (*n) return protocol_error(input_error("request", "data after an empty command list"));
        return send_whole(c, 200, result_type, "", close);
    }

    // 2. One verdict per ref: decided from the names as pushed, then again
    // with the upstream's symbolic refs among them.
    auto it = linked_.find(route.repo_key);
    PushContext ctx{route.repo_key, it != linked_.end(), cfg_.mode, &cfg_.policy, cfg_.ref_vars, std::nullopt};
    PushPlan plan = decide_push(req, ctx);
    // The write token is fetched once per push, before anything is asked of
    // upstream; a failure rejects the refs that would have gone (below).
    std::optional<Result<std::string>> token;
    std::optional<std::string> upstream_failure;
    if (plan.any_open()) {
        token = cfg_.tokens->token(it->second.owner, it->second.name);
        if (*token) upstream_failure = read_symrefs(it->second, **token, h, plan.open_refs(), ctx);
        if (ctx.symrefs) plan = decide_push(req, ctx);
    }
    for (auto& r : plan.refs) ask_approver(r, route.repo_key);
    // Ancestry checks: the old tips into the mirror, a quarantine for the pack.
    // When that cannot be done, the update is judged as a force push.
    std::unique_ptr<Quarantine> quarantine;
    std::unique_lock<std::mutex> mirror_guard;
    std::vector<RefPlan*> to_check, to_read;  // ancestry; content (paths, sizes)
    for (auto& r : plan.refs) {
        if (r.needs_ancestry()) to_check.push_back(&r);
        if (r.needs_content()) to_read.push_back(&r);
    }
    std::string head_base;  // the upstream's default branch: what a new branch's content is read against
    if (!to_check.empty() || !to_read.empty()) {
        std::string failure;
        if (!token || !*token) {
            failure = "no write token to fetch the old tip with";
        } else {
            mirror_guard = std::unique_lock<std::mutex>(mirror_lock(route.repo_key));
            auto mirror = Mirror::open(cfg_.mirror_dir, route.repo_key);
            if (!mirror) failure = mirror.error().one_line();
            auto have_old = [&](const RefPlan& r) {
                if (!failure.empty() || r.cmd.is_create()) return;
                const std::string& fetch_ref = r.symref_target.empty() ? r.cmd.ref : r.symref_target;
                if (auto e = mirror->ensure(r.cmd.old_oid, upstream_url(it->second), fetch_ref, **token); !e)
                    failure = e.error().one_line();
            };
            for (auto* r : to_check) have_old(*r);
            for (auto* r : to_read) have_old(*r);
            if (failure.empty() &&
                std::any_of(to_read.begin(), to_read.end(), [](const RefPlan* r) { return r->cmd.is_create(); })) {
                if (auto hb = mirror->fetch_head(upstream_url(it->second), **token)) head_base = *hb;
                else failure = hb.error().one_line();
            }
            if (failure.empty()) {
                auto q = Quarantine::start(*mirror);
                if (q) quarantine = std::move(*q);
                else failure = q.error().one_line();
            }
        }
        if (!failure.empty()) {
            log_line(route.repo_key + ": ancestry and content checks unavailable: " + failure);
            for (auto* r : to_check) {
                settle_ancestry(*r, Result<bool>(io_error("", failure, 0)));
                r->checked = false;
                ask_approver(*r, route.repo_key);
            }
            for (auto* r : to_read) settle_content(*r, Result<policy::PushContent>(io_error("", failure, 0)), ctx);
            to_check.clear();
            to_read.clear();
            quarantine.reset();
        }
    }
    PushOutcome out = outcome(plan, req.atomic());
    const std::vector<Command>& allowed = out.forward;
    const std::vector<RefStatus>& rejected = out.rejected;
    const std::vector<std::string>& messages = out.messages;

    json event = {{"event", "push"}, {"repo", route.repo_key}, {"atomic", req.atomic()}, {"options", req.options}};
    auto fill_refs = [&] {
        json refs = json::array();
        for (const auto& r : plan.refs) {
            json j = {{"ref", r.cmd.ref},
                      {"old", r.cmd.old_oid},
                      {"new", r.cmd.new_oid},
                      {"kind", r.kind},
                      {"decision", policy::to_string(r.verdict.decision)},
                      {"reason", r.verdict.reason},
                      {"source", r.verdict.source}};
            if (!r.symref_target.empty()) j["symrefTarget"] = r.symref_target;
            if (r.checked) j["ancestryChecked"] = true;
            if (r.content)
                j["content"] = {{"files", r.content->files}, {"largestBytes", r.content->largest}};
            if (!r.looks_like.empty()) j["looksLike"] = r.looks_like;
            refs.push_back(std::move(j));
        }
        event["refs"] = refs;
    };
    auto finish_event = [&](const std::string& result, std::optional<long> upstream_status, const std::string& err) {
        fill_refs();
        event["result"] = result;
        event["forwarded"] = json::array();
        if (result == "forwarded" || result == "partial")
            for (const auto& a : allowed) event["forwarded"].push_back(a.ref);
        event["bytes"] = body.wire_bytes();
        event["upstreamStatus"] = upstream_status ? json(*upstream_status) : json(nullptr);
        if (!err.empty()) event["error"] = err;
        event["durationMs"] =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
        emit_(event);
    };

    // Answers with rejections only, after reading the whole body: replying
    // early makes git fail with "Broken pipe" and lose the reason.
    auto reject_all = [&](std::vector<RefStatus> lines, std::vector<std::string> msgs, const std::string& result,
                          std::optional<long> upstream_status, const std::string& err) {
        bool drained = body.drain(cfg_.drain_limit, cfg_.drain_timeout);
        if (!drained) log_line(route.repo_key + ": stopped draining the push body at a cap; closing");
        bool ok = send_whole(c, 200, result_type, response_body(req, msgs, report_status(lines)), close || !drained);
        finish_event(result, upstream_status, err);
        return ok && drained;
    };

    if (out.forward_nothing()) return reject_all(rejected, messages, "rejected", std::nullopt, "");

    // 3. Forward the allowed commands with the pack.
    const Linked& target = it->second;
    bool partial = !rejected.empty();
    auto gateway_failure = [&](const std::string& why, std::optional<long> status) {
        std::vector<RefStatus> lines = rejected;
        std::vector<std::string> msgs = messages;
        for (const auto& a : allowed) lines.push_back({a.ref, false, "Control Center: " + why});
        msgs.push_back("Control Center: " + why);
        log_line(route.repo_key + ": " + why);
        return reject_all(lines, msgs, "error", status, why);
    };
    bool with_pack = std::any_of(allowed.begin(), allowed.end(), [](const Command& a) { return !a.is_delete(); });
    if (!with_pack && !body.drain(cfg_.drain_limit, cfg_.drain_timeout)) {
        // Only deletes go upstream: the pack stays behind, read before upstream answers.
        send_whole(c, 413, "text/plain", "Control Center: push body over the drain cap\n", true);
        finish_event("error", std::nullopt, "push body over the drain cap");
        return false;
    }
    if (upstream_failure) return gateway_failure(*upstream_failure, std::nullopt);
    if (!token || !*token) return gateway_failure("could not get a write token: " + (token ? token->error().one_line() : std::string("not asked")), std::nullopt);

    Forward f(secret_spellings(**token));
    for (const auto& a : allowed) f.forwarded.push_back(a.ref);
    f.conn = &c;
    f.body = &body;
    f.out = encode_prefix(req, allowed);
    const std::uint64_t prefix_len = f.out.size();
    // Deletes carry no pack; when only deletes remain, the pack stays behind.
    f.with_pack = with_pack;
    if (f.with_pack && quarantine) {
        f.quarantine = quarantine.get();
        f.held = pack_start;
        if (auto w = quarantine->write(pack_start); !w) f.check_error = w.error().one_line();
    } else if (f.with_pack) {
        f.out += pack_start;
    }
    std::vector<RefStatus> check_rejected;  // refs whose force push the check stopped
    f.on_body_end = [&]() -> bool {
        std::string failure = f.check_error;
        if (failure.empty())
            if (auto s = quarantine->finish(); !s) failure = s.error().one_line();
        bool go = true;
        for (auto* r : to_check) {
            Result<bool> ff = failure.empty() ? quarantine->is_ancestor(r->cmd.old_oid, r->cmd.new_oid)
                                              : Result<bool>(io_error("", failure, 0));
            if (!ff) log_line(route.repo_key + ": ancestry check failed: " + ff.error().one_line());
            settle_ancestry(*r, ff);
            ask_approver(*r, route.repo_key);
            if (!r->allowed()) {
                go = false;
                check_rejected.push_back({r->cmd.ref, false, policy_reason(r->verdict)});
            }
        }
        // Content rules: what each update brings, read from the same quarantine.
        for (auto* r : to_read) {
            if (!r->allowed()) continue;
            bool create = r->cmd.is_create();
            Result<policy::PushContent> got = !failure.empty() ? Result<policy::PushContent>(io_error("", failure, 0))
                                                               : quarantine->content(create ? head_base : r->cmd.old_oid,
                                                                                     r->cmd.new_oid, create);
            if (!got) log_line(route.repo_key + ": content check failed: " + got.error().one_line());
            settle_content(*r, got, ctx);
            ask_approver(*r, route.repo_key);
            if (!r->allowed()) {
                go = false;
                check_rejected.push_back({r->cmd.ref, false, policy_reason(r->verdict)});
            }
        }
        return go;
    };
    f.merge = partial;
    f.band_max = req.sideband_max();
    f.close_after = close;
    ChunkedWriter writer(c);
    f.writer = &writer;

    CurlHandle ch;
    char errbuf[CURL_ERROR_SIZE] = {0};
    f.curl = ch.h;
    common_curl(ch, upstream_url(target) + "/git-receive-pack", **token, h.header("user-agent").value_or("git/cc-pushgate"),
                cfg_.io_timeout);
    ch.header("Content-Type: application/x-git-receive-pack-request");
    ch.header(std::string("Accept: ") + result_type);
    // Mirror the client's framing: a declared length stays a declared length
    // (some servers refuse chunked request bodies, e.g. lighttpd streaming
    // to CGI answers 411); otherwise chunked, as git itself sends large pushes.
    std::optional<curl_off_t> upload_len;
    if (auto len = body.declared_length(); len && *len >= parser.prefix_bytes())
        upload_len = static_cast<curl_off_t>(prefix_len + (f.with_pack ? *len - parser.prefix_bytes() : 0));
    else
        ch.header("Transfer-Encoding: chunked");
    ch.header("Expect:");
    curl_easy_setopt(ch.h, CURLOPT_HTTPHEADER, ch.headers);
    curl_easy_setopt(ch.h, CURLOPT_POST, 1L);
    if (upload_len) curl_easy_setopt(ch.h, CURLOPT_POSTFIELDSIZE_LARGE, *upload_len);
    curl_easy_setopt(ch.h, CURLOPT_READFUNCTION, Forward::on_read);
    curl_easy_setopt(ch.h, CURLOPT_READDATA, &f);
    curl_easy_setopt(ch.h, CURLOPT_WRITEFUNCTION, Forward::on_write);
    curl_easy_setopt(ch.h, CURLOPT_WRITEDATA, &f);
    curl_easy_setopt(ch.h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(ch.h, CURLOPT_UPLOAD_BUFFERSIZE, static_cast<long>(io_chunk));
    CURLcode rc = curl_easy_perform(ch.h);
    long status = 0;
    curl_easy_getinfo(ch.h, CURLINFO_RESPONSE_CODE, &status);

    if (f.body_failed) {
        // The client's body broke (closed, bad framing): nobody to answer.
        log_line(route.repo_key + ": push body failed: " + f.client_error->one_line());
        finish_event("error", status ? std::optional<long>(status) : std::nullopt, f.client_error->one_line());
        return false;
    }
    if (f.stopped_by_check) {
        // Upstream got the commands and all of the pack but its checksum, so it
        // applied nothing. Every ref of this push reads as not pushed.
        std::vector<RefStatus> lines = rejected;
        std::vector<std::string> msgs = messages;
        for (const auto& r : check_rejected) {
            lines.push_back(r);
            msgs.push_back("Control Center policy denied " + r.ref + ": " + r.reason.substr(std::string("Control Center policy: ").size()));
        }
        for (const auto& a : allowed)
            if (std::none_of(check_rejected.begin(), check_rejected.end(), [&](const RefStatus& r) { return r.ref == a.ref; }))
                lines.push_back({a.ref, false, "atomic transaction failed"});
        finish_event("rejected", std::nullopt, "");
        std::string out = response_body(req, msgs, report_status(lines));
        bool okw;
        if (writer.started())
            okw = writer.chunk(out).ok() && writer.end().ok();
        else
            okw = send_whole(c, 200, result_type, out, close);
        return okw && body.complete();
    }
    if (writer.started() && rc != CURLE_OK) {
        // Mid-relay failure: the only honest signal left is to cut the stream.
        finish_event("error", status, "upstream failed mid-response: " + curl_error_text(rc, errbuf));
        return false;
    }
    if (rc != CURLE_OK || status != 200) {
        std::string why;
        if (rc != CURLE_OK && status == 0)
            why = "upstream unreachable: " + curl_error_text(rc, errbuf);
        else if (status == 401 || status == 403)
            why = "upstream refused the write token (HTTP " + std::to_string(status) + ")";
        else if (status != 200)
            why = "upstream answered HTTP " + std::to_string(status);
        else
            why = "upstream failed: " + curl_error_text(rc, errbuf);
        return gateway_failure(why, status ? std::optional<long>(status) : std::nullopt);
    }
    // A partial push: upstream's report plus the gateway's rejections, so git
    // prints both the pushed and the rejected refs.
    std::string tail = f.tail(rejected, messages);
    bool okw;
    if (writer.started())
        okw = writer.chunk(tail).ok() && writer.end().ok();
    else
        okw = send_whole(c, 200, result_type, tail, close);
    if (f.plain.masked() || f.progress.masked() || f.fatal.masked()) {
        log_line(route.repo_key + ": upstream's answer carried the write token; masked before relaying");
        event["tokenMasked"] = true;
    }
    finish_event(partial ? "partial" : "forwarded", status, "");
    return okw && body.complete();
}

}  // namespace

Status serve(const GatewayConfig& cfg, const EmitFn& emit) {
    if (auto s = validate(cfg); !s) return s;
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
                    gateway->serve_connection(fd, client);
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
    io.run();
    // Let pushes in flight finish before their tokens are revoked.
    auto grace = Clock::now() + std::chrono::seconds(30);
    while (gateway->busy() > 0 && Clock::now() < grace) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    json revoked = cfg.tokens->revoke_all();
    json ev = {{"event", "shutdown"}, {"activeConnections", active->load()}, {"busy", gateway->busy()},
               {"evictedConnections", pending->evicted()}};
    if (!revoked.empty()) ev["tokens"] = revoked;
    emit(ev);
    return ok();
}

}  // namespace cc::git
