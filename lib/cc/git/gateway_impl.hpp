// Inside cc-pushgate's gateway (gateway.hpp is the public face): the
// connection caps and the Gateway that answers requests. The parts, by file:
//   gateway.cpp       serve(): listener, accept loop, one thread per connection;
//                     the secret and Host check, the request loop, ref advertisements
//   gateway_push.cpp  one push: prefix, decision (decide_push), ancestry and
//                     content checks, forwarding upstream, the report
//   gateway_config.cpp options -> GatewayConfig, the ready event
#pragma once

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include "cc/git/decision.hpp"
#include "cc/git/gateway.hpp"
#include "cc/git/http.hpp"
#include "cc/git/server.hpp"
#include "cc/git/upstream.hpp"

namespace cc::git::detail {

using nlohmann::json;

inline const char* const advert_type = "application/x-git-receive-pack-advertisement";

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

// Connections past the secret check, in total and per session: the share
// is keyed on who authenticated, not on the peer address, so a session gains
// nothing by connecting from other addresses (all of 127.0.0.0/8 is this
// host's). A gateway serves one session, so its share is the session's.
class Admitted {
public:
    Admitted(std::size_t cap, std::size_t per_client) : cap_(cap), per_client_(per_client) {}
    // nullopt when admitted, else why not. `session`: the authenticated
    // session's key.
    std::optional<std::string> enter(const std::string& session) {
        std::lock_guard<std::mutex> lock(mu_);
        if (total_ >= cap_) return "gateway is busy (" + std::to_string(cap_) + " connections at once)";
        std::size_t& mine = per_client_count_[session];
        if (mine >= per_client_)
            return "too many connections for this session (at most " + std::to_string(per_client_) + " at once)";
        ++mine;
        ++total_;
        return std::nullopt;
    }
    void leave(const std::string& session) {
        std::lock_guard<std::mutex> lock(mu_);
        --total_;
        if (--per_client_count_[session] == 0) per_client_count_.erase(session);
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
        prefix_ = "/" + secret + "/";
        secret_ = std::move(secret);
        hosts_ = std::move(hosts);
    }
    // Requests being answered (idle keep-alive connections do not count).
    int busy() const { return busy_.load(); }
    // An exception that ended a connection's thread or a loop handler:
    // said on stderr, counted in the shutdown event, and serving goes on.
    void internal_error(const std::string& where, const std::string& what) noexcept {
        ++internal_errors_;
        try {
            log_line("internal error (" + where + "), still serving: " + what);
        } catch (...) {
        }
    }
    std::uint64_t internal_errors() const { return internal_errors_.load(); }

private:
    std::atomic<std::uint64_t> internal_errors_{0};
    void handle_info_refs(Conn& c, const http::RequestHead& h, const Route& route, bool close);
    bool handle_push(Conn& c, const http::RequestHead& h, const Route& route, bool close);
    std::optional<std::string> read_symrefs(const Linked& target, const std::string& token, const http::RequestHead& h,
                                            const PushPlan& plan, PushContext& ctx);
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
    std::string secret_;               // what X-CC-Pushgate-Session carries
    std::vector<std::string> hosts_;   // lower case host:port
    std::optional<std::string> refusal(http::RequestHead& h) const;
};

}  // namespace cc::git::detail
