// The Runner's side of the session's cc-egress (runner.hpp): handing the
// sandbox's listeners over, reading its lines, noticing its death and
// starting it again on the same listeners.

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include <boost/asio/post.hpp>

#include "cc/sandbox/handover.hpp"
#include "cc/sandbox/runner.hpp"

namespace cc::sandbox::detail {

namespace asio = boost::asio;
using nlohmann::json;

// The fd-handover, before bubblewrap lets the command run: bubblewrap's
// first status line names the sandbox's PID 1 and its network namespace;
// the listeners are made there (handover.cpp), our own cc-egress must be
// ready, then they go to its inbox. The inbox connection is held until
// cc-wrap exits: cc-egress drops the listeners when it closes.
Status Runner::hand_over_listeners(int status_fd) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    auto left_ms = [&] {
        return static_cast<int>(std::max<long>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
                   .count()));
    };
    auto line = read_line(status_fd, status_text_, left_ms());
    if (!line) return unavailable_error("bubblewrap", "no status line (it failed to set up the sandbox)");
    json j = adopt_status_line(*line);
    if (pid1_ < 0) return unavailable_error("bubblewrap", "status line names no child of it");
    std::optional<unsigned long> net_ino;
    if (j.contains("net-namespace") && j["net-namespace"].is_number_unsigned())
        net_ino = j["net-namespace"].get<unsigned long>();
    std::optional<std::pair<unsigned, unsigned>> as;
    if (plan_.identity.drop) as = std::pair{plan_.identity.uid, plan_.identity.gid};
    CaptureSetup capture{plan_.proxy.capturePorts};
    auto fds = listeners_in_netns(pid1_, net_ino, plan_.proxy.httpPort, plan_.proxy.socksPort, as,
                                  plan_.proxy.capture ? &capture : nullptr);
    if (!fds) return fds.error();
    struct Owned {  // ours until the end of this step
        Listeners& l;
        ~Owned() { close_listeners(l); }
    } owned{*fds};
    if (eg_ && eg_->stdout_r >= 0 && !eg_->ready_seen) {
        auto ready = read_line(eg_->stdout_r, eg_->head, left_ms());
        if (!ready) return egress_gone("exited before it was ready");
        auto r = json::parse(*ready, nullptr, false);
        if (!r.is_object() || r.value("event", "") != "ready")
            return egress_gone("first line is not a ready object: " + ready->substr(0, 200));
        eg_->ready_seen = true;
    }
    // A handed-in cc-egress writes its lines to its own stdout, which is
    // not ours: it is asked to send the lines of these listeners back on
    // the inbox connection too, so refusals still become violations.
    inbox_events_ = !(eg_ && eg_->stdout_r >= 0);
    // Our own cc-egress may die mid-run: a copy of the listeners is kept
    // to hand to its successor (egress_died), so the command's proxies
    // stay where they are and it never gains another way out.
    // Not with capture: the names its resolver gave out live in that
    // cc-egress alone, and a successor would refuse their addresses.
    if (!inbox_events_ && !plan_.proxy.capture) {
        spare_http_.reset(::fcntl(fds->http, F_DUPFD_CLOEXEC, 3));
        spare_socks_.reset(::fcntl(fds->socks, F_DUPFD_CLOEXEC, 3));
    }
    if (plan_.proxy.capture && !fds->ipv6)
        log("--capture: the sandbox's network namespace has no IPv6; IPv4 destinations are captured, IPv6 ones are "
            "unreachable");
    auto conn = hand_over(plan_.proxy.inbox, *fds, inbox_events_);
    if (!conn) return conn.error();
    inbox_conn_ = *conn;
    return ok();
}

// A handed-in cc-egress's connection lines for this sandbox's listeners.
void Runner::watch_inbox(int fd) {
    egress_lines(std::exchange(inbox_rest_, {}));
    read_each(inbox_sd_, inbox_loop_, fd, [this](std::string_view d) { egress_lines(d); },
              [this] { asio::post(io_, [this] { handed_egress_gone(); }); });
}

// A handed-in cc-egress closes the inbox connection only when it exits
// (or at our request, at the end): mid-run, the sandbox's listeners went
// with it. It is not ours to start again, so the run ends (125, endedBy
// "egress"); the command never gains another way out.
void Runner::handed_egress_gone() {
    if (exited_ || failure_) return;
    json e = {{"state", "exited"}, {"how", "its inbox connection closed (a handed-in cc-egress)"}, {"restart", 0}};
    if (rq_.events) emit(ev_.line("egress", e));
    log("the handed-in cc-egress is gone (its inbox connection closed): the sandbox is stopped");
    egress_lost_ = true;
    failure_ = exit_own_failure;
    kill_all();
}

// At exit: our side of the inbox connection is shut down; cc-egress
// closes the listeners, and closes the connection once the connections
// made on them have ended and been reported (the sandbox is gone, so
// they end at once). Read to that end, bounded: one second.
void Runner::last_inbox_lines() {
    if (inbox_sd_) inbox_sd_->cancel();
    ::shutdown(inbox_conn_, SHUT_WR);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    char buf[4096];
    while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            log("cc-egress did not finish its connection lines within 1 s: a refusal at the very end may be unreported");
            return;
        }
        pollfd p{inbox_conn_, POLLIN, 0};
        int r = ::poll(&p, 1, static_cast<int>(left.count()));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        ssize_t n = ::recv(inbox_conn_, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) egress_lines(std::string_view(buf, static_cast<std::size_t>(n)));
        else if (n == 0 || (errno != EAGAIN && errno != EINTR)) return;
    }
}

// cc-egress refusing its input (exit 2: a bad allowlist pattern, say) is
// the caller's bad input; anything else is our own failure.
Error Runner::egress_gone(const std::string& why) {
    if (!failure_) failure_ = exit_own_failure;
    if (auto st = eg_->stop(); st && WIFEXITED(*st) && WEXITSTATUS(*st) == tool::exit_usage)
        failure_ = tool::exit_usage;
    eg_->show_err();
    return unavailable_error("cc-egress", why);
}

// cc-egress's stdout: first its ready line, checked here while the
// sandbox starts (the command waits in the init step until cc-egress has
// taken the listeners); then one line per connection, drained so its pipe
// never fills. An egress that fails before it is ready stops the sandbox.
void Runner::watch_egress(int fd) {
    egress_sd_ = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    auto buf = std::make_shared<std::array<char, 4096>>();
    auto* loop = &egress_loop_;  // a member: a self-owning closure would never be freed
    *loop = [this, buf, loop] {
        egress_sd_->async_read_some(asio::buffer(*buf), [this, buf, loop](auto ec, std::size_t n) {
            if (ec == asio::error::operation_aborted) return;
            if (ec || n == 0) {
                if (!eg_->ready_seen) egress_failed("exited before it was ready");
                else if (!exited_ && !failure_) asio::post(io_, [this] { egress_died(); });
                return;
            }
            std::string_view data(buf->data(), n);
            if (!eg_->ready_seen) {
                eg_->head.append(data);
                auto nl = eg_->head.find('\n');
                if (nl != std::string::npos) {
                    auto j = json::parse(eg_->head.substr(0, nl), nullptr, false);
                    if (!j.is_object() || j.value("event", "") != "ready") {
                        egress_failed("first line is not a ready object: " + eg_->head.substr(0, std::min<std::size_t>(nl, 200)));
                        return;
                    }
                    eg_->ready_seen = true;
                    data = {};
                    egress_lines(eg_->head.substr(nl + 1));
                    eg_->head.clear();
                } else if (eg_->head.size() > 65536) {
                    egress_failed("no ready line in its first 64 KiB of output");
                    return;
                }
            }
            egress_lines(data);
            (*loop)();
        });
    };
    (*loop)();
}

// After its ready line, cc-egress writes one line per connection: a
// refused request from inside becomes a `violation` event with --events,
// else one line of ours on stderr.
void Runner::egress_lines(std::string_view data) {
    if (data.empty()) return;
    egress_split_.feed(data.data(), data.size(), [this](const std::string& line) {
        auto v = network_violation(line);
        if (!v) return;
        if (rq_.events) {
            emit_violation(*v);
        } else {
            auto j = json::parse(*v->raw, nullptr, false);
            log("cc-egress refused " + v->target + ": " + j.value("reason", std::string("denied")));
        }
    });
}

// cc-egress's human log: kept (the last few KiB) for when it fails.
void Runner::watch_egress_log(int fd) {
    read_each(egress_log_sd_, egress_log_loop_, fd, [this](std::string_view d) { eg_->keep_err(d); });
}

void Runner::egress_died() {
    if (exited_ || failure_) return;
    auto st = eg_->stop();  // reaps it (it has gone; nothing is waited for)
    std::string how = !st ? "exited" : WIFSIGNALED(*st) ? "killed by signal " + std::to_string(WTERMSIG(*st))
                                                       : "exited with status " + std::to_string(WEXITSTATUS(*st));
    ++egress_restarts_;
    // One that holds the session CA and the credentials is not started
    // again: another would have another CA and other placeholders.
    const bool holds_tls = !eg_->intercept.empty() || !eg_->credentials.empty();
    const bool retry = egress_restarts_ <= k_egress_restarts && spare_http_ && spare_socks_ && !holds_tls;
    json e = {{"state", "exited"}, {"how", how}, {"restart", retry ? egress_restarts_ : 0}};
    if (rq_.events) emit(ev_.line("egress", e));
    else log("the session's cc-egress " + how + (retry ? "; starting it again" : ""));
    if (retry) {
        if (auto r = restart_egress(); r) {
            if (rq_.events) emit(ev_.line("egress", {{"state", "restarted"}, {"restart", egress_restarts_}}));
            else log("cc-egress started again (" + std::to_string(egress_restarts_) + " of " +
                     std::to_string(k_egress_restarts) + ")");
            return;
        } else {
            log(r.error().one_line());
        }
    }
    log("the session's proxy is gone: the sandbox is stopped");
    egress_lost_ = true;
    failure_ = exit_own_failure;
    kill_all();
}

Status Runner::restart_egress() {
    ::unlink(eg_->inbox.c_str());
    eg_->ready_seen = false;
    eg_->head.clear();
    if (eg_->stderr_r >= 0) ::close(std::exchange(eg_->stderr_r, -1));
    if (auto s = start_egress(*eg_, eg_->exe, eg_->spec_file, eg_->inbox); !s) return s;
    auto ready = read_line(eg_->stdout_r, eg_->head, 5000);
    if (!ready) return egress_gone("exited before it was ready (restart)");
    eg_->ready_seen = true;
    // The inbox is made when cc-egress is ready.
    Listeners spare;
    spare.http = spare_http_.get();
    spare.socks = spare_socks_.get();
    auto conn = hand_over(eg_->inbox, spare, false);
    if (!conn) return conn.error();
    if (auto a = await_handover_ack(*conn, eg_->inbox, 5000, nullptr); !a) {
        ::close(*conn);
        return a;
    }
    if (inbox_conn_ >= 0) ::close(inbox_conn_);
    inbox_conn_ = *conn;
    egress_lines(eg_->head);
    eg_->head.clear();
    watch_egress(::dup(eg_->stdout_r));
    watch_egress_log(::dup(eg_->stderr_r));
    return ok();
}

void Runner::egress_failed(const std::string& why) {
    if (exited_ || failure_) return;
    log(egress_gone(why).one_line() + ": the sandbox is stopped");
    kill_all();
}

}  // namespace cc::sandbox::detail
