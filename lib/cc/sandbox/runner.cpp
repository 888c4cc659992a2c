// Running a plan (launch_parts.hpp: run_plan).

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

// Boost.Process compiles its vfork(2) path only for pre-2008 POSIX feature
// levels; glibc has vfork at every level, so it is asked for here.
#ifndef BOOST_POSIX_HAS_VFORK
#define BOOST_POSIX_HAS_VFORK 1
#endif
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <iostream>
#include <memory>
#include <utility>

#include "cc/core/io.hpp"
#include "cc/core/json_reader.hpp"
#include "cc/core/tool.hpp"
#include "cc/probe/probe.hpp"
#include "cc/sandbox/events.hpp"
#include "cc/sandbox/handover.hpp"
#include "cc/sandbox/plan.hpp"
#include "cc/sandbox/launch_parts.hpp"
#include "cc/sandbox/seatbelt_log.hpp"
#include "cc/sandbox/seatbelt_tap.hpp"
#include "cc/sandbox/seatbelt.hpp"
#include "cc/sandbox/seccomp.hpp"
#include "cc/sandbox/supervisor.hpp"
#include "cc/fs/unique_fd.hpp"
#include "cc/sandbox/violation.hpp"


namespace cc::sandbox::detail {

namespace bp = boost::process;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// ---------------------------------------------------------------------------
// Running a plan: one asio loop over the child's pipes, bwrap's status fd,
// the egress log, signals and the timeout.
class Runner {
public:
    Runner(const Plan& plan, const WrapRequest& rq, Egress* eg, SeatbeltTap* tap)
        : plan_(plan), rq_(rq), eg_(eg), tap_(tap), ev_(plan.spec.sessionId), sigs_(io_), timeout_(io_), grace_(io_),
          drain_(io_) {
        if (tap_) reader_.emplace(seatbelt_tag(plan.spec.sessionId, plan.runtimeDir));
    }
    ~Runner() {
        if (inbox_conn_ >= 0) ::close(inbox_conn_);
    }

    int run() {
        const bool native = plan_.backend != spec::Backend::none;
        if (rq_.events) emit(ev_.line("starting", {{"plan", summary(plan_)}}));

        int out[2] = {-1, -1}, err[2] = {-1, -1}, st[2] = {-1, -1}, pty_slave = -1, pty_master = -1;
        if (rq_.pty) {
            if (::openpty(&pty_master, &pty_slave, nullptr, nullptr, nullptr) != 0) return fail(io_error("pty", "openpty failed"));
            ::fcntl(pty_master, F_SETFD, FD_CLOEXEC);
            ::fcntl(pty_slave, F_SETFD, FD_CLOEXEC);
        } else if (rq_.events) {
            if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return fail(io_error("pipe", "cannot create"));
        }
        const bool status_fd = plan_.backend != spec::Backend::none && plan_.seatbelt.empty();
        if (status_fd && ::pipe2(st, O_CLOEXEC) != 0) return fail(io_error("pipe", "cannot create"));
        const bool handover = status_fd && plan_.proxy.transport == "fd-handover";
        // The filters (data in the plan) reach bubblewrap and the init step
        // through pipes whose read ends are kept above the numbers the
        // child's descriptors are bound to. They are compiled and written
        // once bubblewrap is starting: it reads its filter only after its
        // mounts, and the init step later still, so the compiling overlaps
        // with that work. If cc-wrap fails or dies first, the pipe ends
        // empty and nothing runs: bubblewrap refuses an empty program, the
        // init step exits 125, and --die-with-parent ends the rest.
        cc::fs::UniqueFd filter, filter_w;
        auto filter_pipe = [](cc::fs::UniqueFd& r, cc::fs::UniqueFd& w) {
            int p[2];
            if (::pipe2(p, O_CLOEXEC) != 0) return false;
            r = cc::fs::UniqueFd{::fcntl(p[0], F_DUPFD_CLOEXEC, 10)};
            ::close(p[0]);
            w = cc::fs::UniqueFd{p[1]};
            return static_cast<bool>(r);
        };
        if (status_fd && plan_.seccomp && !filter_pipe(filter, filter_w))
            return fail(io_error("seccomp filter", "cannot create its pipe"));
        int blk[2] = {-1, -1};
        if (handover && ::pipe2(blk, O_CLOEXEC) != 0) return fail(io_error("pipe", "cannot create"));
        // The write supervisor: its filter (BPF, through a pipe as above) and the
        // socket the init step sends the listener back over.
        cc::fs::UniqueFd wfilter, wfilter_w, wsock_child, wsock;
        if (status_fd && plan_.writeRules) {
            if (!filter_pipe(wfilter, wfilter_w)) return fail(io_error("write supervisor filter", "cannot create its pipe"));
            int sp[2];
            if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
                return fail(io_error("write supervisor", "cannot create its socket"));
            wsock_child = cc::fs::UniqueFd{::fcntl(sp[1], F_DUPFD_CLOEXEC, 10)};
            ::close(sp[1]);
            wsock = cc::fs::UniqueFd{sp[0]};
            int one = 1;  // the init step's credentials come with the listener
            ::setsockopt(sp[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
            if (!wfilter || !wsock_child) return fail(io_error("write supervisor", "cannot move its descriptors"));
        }

        // Handlers first: a child that exits at once must still be reaped.
        sigs_.add(SIGCHLD);
        sigs_.add(SIGTERM);
        sigs_.add(SIGINT);
        sigs_.add(SIGHUP);
        bp::environment env;
        // set(), not operator[]: Boost.Process's find() (behind operator[]) compares
        // past the end of a shorter entry, a heap over-read that ASan reports.
        for (const auto& [k, v] : plan_.env) env.set(k, v);
        std::vector<std::string> args(plan_.argv.begin() + 1, plan_.argv.end());
        std::string cwd = plan_.backend == spec::Backend::none && !plan_.chdir.empty() ? plan_.chdir : fs::current_path().string();
        try {
            SpawnMask mask;
            ChildSetup setup{wfilter ? write_sock_fd + 1 : filter ? bwrap_seccomp_fd + 1 : handover ? 5 : status_fd ? 4 : 3,
                             rq_.pty, &mask.old, &plan_.identity, filter ? filter.get() : -1,
                             wfilter ? wfilter.get() : -1, wsock_child ? wsock_child.get() : -1};
            // fd 4 is bubblewrap's --block-fd with the handover; else a second copy of fd 3.
            int block = handover ? blk[0] : status_fd ? st[1] : 2;
            int o = rq_.pty ? pty_slave : out[1], e = rq_.pty ? pty_slave : err[1], i = rq_.pty ? pty_slave : 0;
            bp::child c = (o >= 0)
                ? bp::child(plan_.argv[0], bp::args(args), env, bp::start_dir(cwd), bp::posix::fd.bind(0, i),
                            bp::posix::fd.bind(1, o), bp::posix::fd.bind(2, e),
                            bp::posix::fd.bind(3, status_fd ? st[1] : 2), bp::posix::fd.bind(4, block),
                            bp::posix::use_vfork, bp::extend::on_exec_setup = setup)
                : bp::child(plan_.argv[0], bp::args(args), env, bp::start_dir(cwd),
                            bp::posix::fd.bind(3, status_fd ? st[1] : 2), bp::posix::fd.bind(4, block),
                            bp::posix::use_vfork, bp::extend::on_exec_setup = setup);
            pid_ = c.id();
            c.detach();
        } catch (const std::exception& ex) {
            return fail(unavailable_error(plan_.argv[0], std::string("cannot start: ") + ex.what()));
        }
        for (int fd : {out[1], err[1], st[1], pty_slave, blk[0]}) if (fd >= 0) ::close(fd);
        filter = {};
        wfilter = {};
        wsock_child = {};
        Status compiled = ok();
        if (filter_w) compiled = export_seccomp(*plan_.seccomp, filter_w.get());
        if (compiled && wfilter_w) compiled = export_write_filter(wfilter_w.get());
        filter_w = {};
        wfilter_w = {};
        if (!compiled) {
            log(compiled.error().one_line() + ": the sandbox is stopped before the command runs");
            if (!failure_) failure_ = exit_own_failure;
            kill_all();
        }
        if (wsock) start_supervisor(wsock.release());
        if (handover && !compiled) ::close(blk[1]);
        if (handover && compiled) {
            // Synchronous and bounded: bubblewrap holds the command until fd 4
            // is written or closed. Until the listeners are made and in
            // cc-egress's inbox, a failure SIGKILLs the sandbox before fd 4 is
            // closed, so the command never gets to run. From then on the
            // listeners already queue connections, so the command is let go
            // while cc-egress's answer is awaited; a refusal, or no answer,
            // stops the sandbox then and cc-wrap exits 125.
            if (auto s = hand_over_listeners(st[0]); !s) {
                log(s.error().one_line() + ": the sandbox is stopped before the command runs");
                if (!failure_) failure_ = exit_own_failure;
                kill_all();
            } else {
                ssize_t w = ::write(blk[1], "1", 1);
                (void)w;
                if (auto a = await_handover_ack(inbox_conn_, plan_.proxy.inbox, 10000, &inbox_rest_); !a) {
                    log(a.error().one_line() + ": the sandbox is stopped");
                    if (!failure_) failure_ = exit_own_failure;
                    kill_all();
                }
            }
            ::close(blk[1]);
        }

        wait_signal();
        if (rq_.pty) {
            read_stream(pty_master, "stdout", false);
            relay_stdin(pty_master);
        } else if (rq_.events) {
            read_stream(out[0], "stdout", false);
            read_stream(err[0], "stderr", native && plan_.seatbelt.empty());
        }
        // Kept open until bubblewrap is gone, even once PID 1 is known: its
        // last act is an {"exit-code": N} line on this pipe, and with no
        // reader that write would kill it with SIGPIPE (a 141 for a command
        // that exited 0, once SIGPIPE is back at its default in bubblewrap).
        if (status_fd) read_status(st[0]);
        else if (rq_.events) emit(ev_.line("ready", {{"pid", pid_}}));
        if (eg_ && eg_->stdout_r >= 0 && !failure_) watch_egress(::dup(eg_->stdout_r));
        if (inbox_events_ && inbox_conn_ >= 0 && !failure_) watch_inbox(::dup(inbox_conn_));
        if (eg_ && eg_->stderr_r >= 0 && !failure_) watch_egress_log(::dup(eg_->stderr_r));
        if (tap_ && tap_->fd >= 0) watch_seatbelt_log();
        if (rq_.timeout > 0) {
            timeout_.expires_after(std::chrono::milliseconds(static_cast<long>(rq_.timeout * 1000)));
            timeout_.async_wait([this](auto ec) {
                if (ec || exited_) return;
                kill_all();
                killed_ = true;
                if (rq_.events) emit(ev_.line("killed", {{"reason", "timeout"}, {"signal", 9}, {"timeout", rq_.timeout}}));
                else {
                    // As given: "timeout after 1 s", "after 0.25 s" (never 1.000000).
                    std::ostringstream secs;
                    secs << rq_.timeout;
                    log("timeout after " + secs.str() + " s: sandbox killed");
                }
            });
        }
        io_.run();
        if (supervisor_) {
            // Its last refusals were posted to the loop: reported before `exit`.
            supervisor_->stop();
            io_.restart();
            io_.poll();
        }
        int code = status_;
        if (eg_ && eg_->pid > 0 && egress_sd_ && egress_sd_->is_open()) {
            // Our own cc-egress: stopped now rather than after the exit event,
            // so that its last connection lines (a refusal just before the
            // command ended) are still reported.
            eg_->stop();
            read_to_eof(egress_sd_->native_handle(), [this](std::string_view d) { egress_lines(d); });
        }
        if (inbox_events_ && inbox_conn_ >= 0 && !failure_) last_inbox_lines();
        // Who ended the run: the command's own 125 or 137 is not cc-wrap's.
        const char* ended = killed_                   ? "timeout"
                            : egress_lost_            ? "egress"
                            : failure_                ? "cc-wrap"
                            : forwarded_              ? "signal"
                            : status_fd && pid1_ < 0  ? "setup"
                                                      : "command";
        json exit_ev = {{"exitCode", code}, {"endedBy", ended}};
        if (reader_) {
            const auto& st = reader_->stats();
            exit_ev["violationLog"] = {{"emitted", st.emitted}, {"duplicates", st.duplicates},
                                       {"rateLimited", st.rate_limited}, {"logDropped", st.log_dropped}};
        }
        if (supervisor_) {
            auto s = supervisor_->stats();
            exit_ev["writeSupervisor"] = {{"served", s.served}, {"refused", s.refused}, {"failed", s.failed}};
        }
        if (rq_.events) emit(ev_.line("exit", exit_ev));
        return code;
    }

private:
    // The write supervisor serves from a thread of its own; a refusal comes
    // back to this loop as a violation event (or a line on stderr).
    void start_supervisor(int sock) {
        WriteSupervisor::Options o;
        o.drop = plan_.identity.drop;
        o.uid = plan_.identity.uid;
        o.gid = plan_.identity.gid;
        supervisor_ = std::make_unique<WriteSupervisor>(*plan_.writeRules, o, [this](json v) {
            asio::post(io_, [this, v = std::move(v)] {
                if (rq_.events) {
                    json j = v;
                    j["action"] = "write";
                    j["target"] = v.value("path", "");
                    emit(ev_.line("violation", j));
                } else {
                    log("refused " + v.value("syscall", std::string()) + " of " + v.value("path", std::string()) +
                        " (write-deny " + v.value("rule", std::string()) + ", " + v.value("source", std::string()) + ")");
                }
            });
        });
        supervisor_->start(sock);
    }

    // The fd-handover, before bubblewrap lets the command run: bubblewrap's
    // first status line names the sandbox's PID 1 and its network namespace;
    // the listeners are made there (handover.cpp), our own cc-egress must be
    // ready, then they go to its inbox. The inbox connection is held until
    // cc-wrap exits: cc-egress drops the listeners when it closes.
    Status hand_over_listeners(int status_fd) {
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
        auto fds = listeners_in_netns(pid1_, net_ino, plan_.proxy.httpPort, plan_.proxy.socksPort);
        if (!fds) return fds.error();
        struct Closer {
            Listeners l;
            ~Closer() { ::close(l.http); ::close(l.socks); }
        } closer{*fds};
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
        if (!inbox_events_) {
            spare_http_.reset(::fcntl(fds->http, F_DUPFD_CLOEXEC, 3));
            spare_socks_.reset(::fcntl(fds->socks, F_DUPFD_CLOEXEC, 3));
        }
        auto conn = hand_over(plan_.proxy.inbox, fds->http, fds->socks, inbox_events_);
        if (!conn) return conn.error();
        inbox_conn_ = *conn;
        return ok();
    }

    // A handed-in cc-egress's connection lines for this sandbox's listeners.
    void watch_inbox(int fd) {
        egress_lines(std::exchange(inbox_rest_, {}));
        read_each(inbox_sd_, inbox_loop_, fd, [this](std::string_view d) { egress_lines(d); },
                  [this] { asio::post(io_, [this] { handed_egress_gone(); }); });
    }

    // A handed-in cc-egress closes the inbox connection only when it exits
    // (or at our request, at the end): mid-run, the sandbox's listeners went
    // with it. It is not ours to start again, so the run ends (125, endedBy
    // "egress"); the command never gains another way out.
    void handed_egress_gone() {
        if (exited_ || failure_) return;
        json e = {{"state", "exited"}, {"how", "its inbox connection closed (a handed-in cc-egress)"}, {"restart", 0}};
        if (rq_.events) emit(ev_.line("egress", e));
        log("the handed-in cc-egress is gone (its inbox connection closed): the sandbox is stopped");
        egress_lost_ = true;
        failure_ = exit_own_failure;
        kill_all();
    }

    // Reads `fd` chunk by chunk into `feed` until end of file, an error or a
    // cancel. The next read lives in `loop`, a member: a closure that owned
    // itself would never be freed.
    // `ended` (if any) runs at end of file or a read error, not on a cancel.
    void read_each(std::unique_ptr<asio::posix::stream_descriptor>& sd, std::function<void()>& loop, int fd,
                   std::function<void(std::string_view)> feed, std::function<void()> ended = {}) {
        sd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
        auto buf = std::make_shared<std::array<char, 4096>>();
        loop = [s = sd.get(), buf, l = &loop, feed = std::move(feed), ended = std::move(ended)] {
            s->async_read_some(asio::buffer(*buf), [buf, l, &feed, &ended](auto ec, std::size_t n) {
                if (ec == asio::error::operation_aborted) return;
                if (ec || n == 0) {
                    if (ended) ended();
                    return;
                }
                feed(std::string_view(buf->data(), n));
                (*l)();
            });
        };
        loop();
    }

    // At exit: our side of the inbox connection is shut down; cc-egress
    // closes the listeners, and closes the connection once the connections
    // made on them have ended and been reported (the sandbox is gone, so
    // they end at once). Read to that end, bounded: one second.
    void last_inbox_lines() {
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

    // One line from a blocking fd, bounded; what follows it stays in `buf`.
    static std::optional<std::string> read_line(int fd, std::string& buf, int ms) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        while (true) {
            auto nl = buf.find('\n');
            if (nl != std::string::npos) {
                std::string line = buf.substr(0, nl);
                buf.erase(0, nl + 1);
                return line;
            }
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0 || buf.size() > 65536) return std::nullopt;
            pollfd pf{fd, POLLIN, 0};
            int r = ::poll(&pf, 1, static_cast<int>(left.count()));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return std::nullopt;
            char tmp[4096];
            ssize_t n = ::read(fd, tmp, sizeof tmp);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return std::nullopt;
            buf.append(tmp, static_cast<std::size_t>(n));
        }
    }

    // cc-egress refusing its input (exit 2: a bad allowlist pattern, say) is
    // the caller's bad input; anything else is our own failure.
    Error egress_gone(const std::string& why) {
        if (!failure_) failure_ = exit_own_failure;
        if (auto st = eg_->stop(); st && WIFEXITED(*st) && WEXITSTATUS(*st) == tool::exit_usage)
            failure_ = tool::exit_usage;
        eg_->show_err();
        return unavailable_error("cc-egress", why);
    }

    void emit(const std::string& line) {
        if (!tool::emit_line(line)) stdout_gone_ = true;
    }

    // Everything of the sandbox: bwrap's process group and, through its PID 1,
    // the whole PID namespace (the kernel kills the rest when PID 1 dies).
    void kill_all() {
        if (pid1_ > 0) ::kill(pid1_, SIGKILL);
        if (pid_ > 0) ::kill(-pid_, SIGKILL);
    }

    // SIGTERM/SIGINT/SIGHUP go to the command (the children of the sandbox's
    // PID 1), then everything is killed after the grace period.
    void forward(int sig) {
        bool sent = false;
        if (pid1_ > 0) {
            std::ifstream f("/proc/" + std::to_string(pid1_) + "/task/" + std::to_string(pid1_) + "/children");
            pid_t p;
            while (f >> p) sent = ::kill(p, sig) == 0 || sent;
            if (!sent) sent = ::kill(pid1_, sig) == 0;
        } else if (pid_ > 0) {
            sent = ::kill(-pid_, sig) == 0;
        }
        if (forwarded_) return;
        forwarded_ = true;
        grace_.expires_after(std::chrono::milliseconds(static_cast<long>(rq_.grace * 1000)));
        grace_.async_wait([this, sig](auto ec) {
            if (ec || exited_) return;
            kill_all();
            if (rq_.events) emit(ev_.line("killed", {{"reason", "grace period after signal"}, {"signal", 9}, {"forwarded", sig}}));
        });
    }

    void wait_signal() {
        sigs_.async_wait([this](auto ec, int sig) {
            if (ec) return;
            if (sig == SIGCHLD) {
                reap();
            } else {
                forward(sig);
            }
            if (!exited_ || open_streams_ > 0) wait_signal();
            finish_if_done();
        });
    }

    void reap() {
        int st = 0;
        if (exited_ || ::waitpid(pid_, &st, WNOHANG) != pid_) return;
        exited_ = true;
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (killed_) status_ = 128 + SIGKILL;
        if (failure_) status_ = *failure_;
        // Leftovers in the group (backend none: daemons the command started).
        ::kill(-pid_, SIGKILL);
        timeout_.cancel();
        grace_.cancel();
        // Output still buffered in the pipes is read; a writer that never
        // closes (a stray holder of the pipe) gets two seconds.
        drain_.expires_after(std::chrono::seconds(2));
        drain_.async_wait([this](auto ec) {
            if (!ec) io_.stop();
        });
    }

    void finish_if_done() {
        if (exited_ && open_streams_ == 0) {
            sigs_.cancel();
            drain_.cancel();
            if (egress_sd_) egress_sd_->cancel();
            if (egress_log_sd_) egress_log_sd_->cancel();
            if (inbox_sd_) inbox_sd_->cancel();
            if (stdin_sd_) stdin_sd_->cancel();
            if (status_sd_) status_sd_->cancel();
            if (tap_sd_) tap_sd_->cancel();
        }
    }

    // macOS: the session's Seatbelt refusals, read off `log stream` (its
    // lines parsed, de-duplicated and rate-limited by SeatbeltLogReader).
    void watch_seatbelt_log() {
        tap_lines_.feed(tap_->pending.data(), tap_->pending.size(), [this](const std::string& l) { seatbelt_line(l); });
        tap_->pending.clear();
        read_each(tap_sd_, tap_loop_, ::dup(tap_->fd), [this](std::string_view d) {
            tap_lines_.feed(d.data(), d.size(), [this](const std::string& l) { seatbelt_line(l); });
        });
    }
    void seatbelt_line(const std::string& line) {
        auto v = reader_->feed(line, std::chrono::steady_clock::now());
        if (!v) return;
        if (rq_.events) {
            json j = {{"action", v->action}, {"target", v->target}};
            if (v->raw) j["raw"] = *v->raw;
            emit(ev_.line("violation", j));
        } else {
            log("Seatbelt refused " + v->action + " " + v->target);
        }
    }

    struct Stream {
        std::unique_ptr<asio::posix::stream_descriptor> sd;
        std::vector<char> buf = std::vector<char>(k_chunk);
        std::string scratch, line;
        Utf8Carry carry;
        LineSplitter lines;
        std::string kind;
        bool violations = false;
    };

    // Bigger pipes, bigger reads: fewer wake-ups and event lines per MB.
    static constexpr std::size_t k_chunk = 256 * 1024;

    // Writes the event line in the stream's reused buffer plus a newline.
    void emit_chunk(Stream& s, std::string_view data) {
        ev_.chunk_into(s.line, s.kind, data);
        s.line.push_back('\n');
        std::size_t off = 0;
        while (off < s.line.size()) {
            ssize_t n = ::write(1, s.line.data() + off, s.line.size() - off);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) { stdout_gone_ = true; return; }
            off += static_cast<std::size_t>(n);
        }
    }

    void read_stream(int fd, const char* kind, bool violations) {
        ::fcntl(fd, F_SETPIPE_SZ, static_cast<int>(k_chunk));
        auto s = std::make_shared<Stream>();
        s->sd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
        s->kind = kind;
        s->violations = violations;
        ++open_streams_;
        pump(s);
    }

    void on_line(const std::string& line) {
        if (auto v = parse_violation(line)) {
            // With the write supervisor, its refusals (EACCES) are reported
            // by it, with the call, path and rule; the message a program
            // prints about them is not a second violation.
            if (supervisor_ && v->raw && v->raw->find("Permission denied") != std::string::npos) return;
            json j = {{"action", v->action}, {"target", v->target}};
            if (v->raw) j["raw"] = *v->raw;
            emit(ev_.line("violation", j));
        }
    }

    void pump(std::shared_ptr<Stream> s) {
        s->sd->async_read_some(asio::buffer(s->buf), [this, s](auto ec, std::size_t n) {
            if (ec || n == 0) {
                std::string rest = s->carry.flush();
                if (rq_.events) {
                    if (!rest.empty()) emit_chunk(*s, rest);
                    if (s->violations) s->lines.finish([this](const std::string& l) { on_line(l); });
                }
                --open_streams_;
                finish_if_done();
                return;
            }
            if (rq_.events) {
                std::string_view data = s->carry.take(std::string_view(s->buf.data(), n), s->scratch);
                if (!data.empty()) emit_chunk(*s, data);
                if (s->violations) s->lines.feed(s->buf.data(), n, [this](const std::string& l) { on_line(l); });
            } else {  // --pty without --events: the terminal's bytes as they are
                std::size_t off = 0;
                while (off < n) {
                    ssize_t w = ::write(1, s->buf.data() + off, n - off);
                    if (w <= 0) break;
                    off += static_cast<std::size_t>(w);
                }
            }
            pump(s);
        });
    }

    void relay_stdin(int master) {
        stdin_sd_ = std::make_unique<asio::posix::stream_descriptor>(io_, ::dup(0));
        auto buf = std::make_shared<std::array<char, 4096>>();
        auto* loop = &stdin_loop_;  // a member: a self-owning closure would never be freed
        *loop = [this, buf, master, loop] {
            stdin_sd_->async_read_some(asio::buffer(*buf), [buf, master, loop](auto ec, std::size_t n) {
                if (ec == asio::error::operation_aborted) return;
                if (ec || n == 0) {
                    // End of input: the terminal's EOF character, as script(1) does.
                    ssize_t w = ::write(master, "\x04", 1);
                    (void)w;
                    return;
                }
                ssize_t w = ::write(master, buf->data(), n);
                (void)w;
                (*loop)();
            });
        };
        (*loop)();
    }

    // bwrap's --json-status-fd: {"child-pid": N} once the sandbox is set up.
    // The pid is trusted only if it is bwrap's own child.
    void read_status(int fd) {
        status_sd_ = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
        status_loop();
    }
    void status_loop() {
        status_sd_->async_read_some(asio::buffer(status_buf_), [this](auto ec, std::size_t n) {
            if (ec || n == 0) return;
            status_text_.append(status_buf_.data(), n);
            auto nl = status_text_.find('\n');
            if (pid1_ < 0 && nl != std::string::npos) adopt_status_line(status_text_.substr(0, nl));
            if (pid1_ < 0 && status_text_.size() < 4096) status_loop();
        });
    }

    // bwrap's first status line: {"child-pid": N, "net-namespace": ...}. The
    // pid becomes the sandbox's PID 1 (and "ready" is emitted) only if it is
    // bwrap's own child. Returns the parsed line (discarded if not JSON).
    json adopt_status_line(const std::string& line) {
        json j = json::parse(line, nullptr, false);
        pid_t p = j.is_object() ? j.value("child-pid", -1) : -1;
        if (p > 0 && parent_of(p) == pid_) {
            pid1_ = p;
            if (rq_.events) emit(ev_.line("ready", {{"pid", pid_}}));
        }
        return j;
    }

    static pid_t parent_of(pid_t p) {
        std::ifstream f("/proc/" + std::to_string(p) + "/stat");
        std::string all((std::istreambuf_iterator<char>(f)), {});
        auto rp = all.rfind(')');
        if (rp == std::string::npos) return -1;
        std::istringstream rest(all.substr(rp + 2));
        std::string state;
        pid_t pp = -1;
        rest >> state >> pp;
        return pp;
    }

    // cc-egress's stdout: first its ready line, checked here while the
    // sandbox starts (the command waits in the init step until cc-egress has
    // taken the listeners); then one line per connection, drained so its pipe
    // never fills. An egress that fails before it is ready stops the sandbox.
    void watch_egress(int fd) {
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
    void egress_lines(std::string_view data) {
        if (data.empty()) return;
        egress_split_.feed(data.data(), data.size(), [this](const std::string& line) {
            auto v = network_violation(line);
            if (!v) return;
            if (rq_.events) {
                json j = {{"action", v->action}, {"target", v->target}};
                if (v->raw) j["raw"] = *v->raw;
                emit(ev_.line("violation", j));
            } else {
                auto j = json::parse(*v->raw, nullptr, false);
                log("cc-egress refused " + v->target + ": " + j.value("reason", std::string("denied")));
            }
        });
    }

    // cc-egress's human log: kept (the last few KiB) for when it fails.
    void watch_egress_log(int fd) {
        read_each(egress_log_sd_, egress_log_loop_, fd, [this](std::string_view d) { eg_->keep_err(d); });
    }

    // The session's own cc-egress exited while the command runs. Said at
    // once (an `egress` event, or a line on stderr), then a new one is
    // started on the same in-sandbox listeners, at most k_egress_restarts
    // times; past that, or if the restart fails, the sandbox is stopped and
    // cc-wrap exits 125 (endedBy "egress").
    static constexpr int k_egress_restarts = 3;
    void egress_died() {
        if (exited_ || failure_) return;
        auto st = eg_->stop();  // reaps it (it has gone; nothing is waited for)
        std::string how = !st ? "exited" : WIFSIGNALED(*st) ? "killed by signal " + std::to_string(WTERMSIG(*st))
                                                           : "exited with status " + std::to_string(WEXITSTATUS(*st));
        ++egress_restarts_;
        const bool retry = egress_restarts_ <= k_egress_restarts && spare_http_ && spare_socks_;
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

    Status restart_egress() {
        ::unlink(eg_->inbox.c_str());
        eg_->ready_seen = false;
        eg_->head.clear();
        if (eg_->stderr_r >= 0) ::close(std::exchange(eg_->stderr_r, -1));
        if (auto s = start_egress(*eg_, eg_->exe, eg_->spec_file, eg_->inbox); !s) return s;
        auto ready = read_line(eg_->stdout_r, eg_->head, 5000);
        if (!ready) return egress_gone("exited before it was ready (restart)");
        eg_->ready_seen = true;
        // The inbox is made when cc-egress is ready.
        auto conn = hand_over(eg_->inbox, spare_http_.get(), spare_socks_.get(), false);
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

    void egress_failed(const std::string& why) {
        if (exited_ || failure_) return;
        log(egress_gone(why).one_line() + ": the sandbox is stopped");
        kill_all();
    }

    const Plan& plan_;
    const WrapRequest& rq_;
    Egress* eg_;
    SeatbeltTap* tap_;
    std::optional<SeatbeltLogReader> reader_;
    std::unique_ptr<WriteSupervisor> supervisor_;
    LineSplitter tap_lines_{65536};
    EventWriter ev_;
    asio::io_context io_;
    asio::signal_set sigs_;
    asio::steady_timer timeout_, grace_, drain_;
    std::unique_ptr<asio::posix::stream_descriptor> status_sd_, egress_sd_, egress_log_sd_, stdin_sd_, inbox_sd_, tap_sd_;
    std::function<void()> egress_loop_, egress_log_loop_, stdin_loop_, inbox_loop_, tap_loop_;  // each read's next read
    std::array<char, 512> status_buf_{};
    std::string status_text_;
    pid_t pid_ = -1, pid1_ = -1;
    int status_ = exit_own_failure;
    std::optional<int> failure_;
    int inbox_conn_ = -1;  // held open while the sandbox runs (fd-handover)
    cc::fs::UniqueFd spare_http_, spare_socks_;  // the listeners again, for a restarted cc-egress
    int egress_restarts_ = 0;
    bool egress_lost_ = false;
    bool inbox_events_ = false;  // a handed-in cc-egress sends connection lines on it
    std::string inbox_rest_;     // lines read along with its answer
    LineSplitter egress_split_{65536};
    int open_streams_ = 0;
    bool exited_ = false, killed_ = false, forwarded_ = false, stdout_gone_ = false;
};

}  // namespace

int run_plan(const Plan& plan, const WrapRequest& rq, Egress* eg, SeatbeltTap* tap) {
    Runner runner(plan, rq, eg, tap);
    return runner.run();
}

}  // namespace cc::sandbox::detail
