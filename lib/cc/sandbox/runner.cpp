// Running a plan (launch_parts.hpp: run_plan; the Runner in runner.hpp).

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
#include "cc/sandbox/runner.hpp"
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

Runner::Runner(const Plan& plan, const WrapRequest& rq, Egress* eg, SeatbeltTap* tap)
    : plan_(plan), rq_(rq), eg_(eg), tap_(tap), ev_(plan.spec.sessionId), sigs_(io_), timeout_(io_), grace_(io_),
      drain_(io_) {
    if (tap_) reader_.emplace(seatbelt_tag(plan.spec.sessionId, plan.runtimeDir));
}

Runner::~Runner() {
    if (inbox_conn_ >= 0) ::close(inbox_conn_);
}

int Runner::run() {
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
    const bool handover = status_fd && plan_.proxy.transport == Transport::fd_handover;
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
    // A handler that throws is said and the loop goes on: the command's
    // status and its exit event are never lost to one bad line.
    for (;;) {
        try {
            io_.run();
            break;
        } catch (const std::exception& e) {
            log(std::string("internal error in the event loop (still running): ") + e.what());
        }
    }
    if (supervisor_) {
        // Killed (a timeout, a signal's grace period), bubblewrap exits at
        // once while the sandbox's PID 1 is still dying; the kernel kills
        // the rest of its PID namespace only on the way. Until then the
        // listener is kept: closed earlier, a call the command is waiting
        // in would come back (ENOSYS) and the command run on for a moment.
        if (pid1_fd_) {
            pollfd p{pid1_fd_.get(), POLLIN, 0};
            int left = 5000;  // SIGKILLed: this is milliseconds
            auto t0 = std::chrono::steady_clock::now();
            while (::poll(&p, 1, left) < 0 && errno == EINTR)
                left = std::max(0, 5000 - static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                               std::chrono::steady_clock::now() - t0)
                                                               .count()));
        }
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
        const auto& vs = reader_->stats();
        exit_ev["violationLog"] = {{"emitted", vs.emitted}, {"duplicates", vs.duplicates},
                                   {"rateLimited", vs.rate_limited}, {"logDropped", vs.log_dropped}};
    }
    if (supervisor_) {
        auto s = supervisor_->stats();
        exit_ev["writeSupervisor"] = {{"served", s.served}, {"refused", s.refused}, {"failed", s.failed},
                                      {"syncWakeUp", s.sync_wake}};
    }
    if (rq_.events) emit(ev_.line("exit", exit_ev));
    return code;
}

// The write supervisor serves from a thread of its own; a refusal comes
// back to this loop as a violation event, or is a line on stderr.
void Runner::start_supervisor(int sock) {
    WriteSupervisor::Options o;
    o.drop = plan_.identity.drop;
    o.uid = plan_.identity.uid;
    o.gid = plan_.identity.gid;
    supervisor_ = std::make_unique<WriteSupervisor>(*plan_.writeRules, o, [this](json v) {
        if (!rq_.events) {
            // On the command's own stderr: written whole from the serving
            // thread before the call returns, so the line comes before the
            // command's own message about it, never inside it.
            log("refused " + v.value("syscall", std::string()) + " of " + v.value("path", std::string()) +
                " (write-deny " + v.value("rule", std::string()) + ", " + v.value("source", std::string()) + ")");
            return;
        }
        asio::post(io_, [this, v = std::move(v)] {
            json j = v;
            j["action"] = "write";
            j["target"] = v.value("path", "");
            emit(ev_.line("violation", j));
        });
    });
    supervisor_->start(sock);
}

// Reads `fd` chunk by chunk into `feed` until end of file, an error or a
// cancel. The next read lives in `loop`, a member: a closure that owned
// itself would never be freed.
// `ended` (if any) runs at end of file or a read error, not on a cancel.
void Runner::read_each(std::unique_ptr<asio::posix::stream_descriptor>& sd, std::function<void()>& loop, int fd,
               std::function<void(std::string_view)> feed, std::function<void()> ended) {
    sd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    auto buf = std::make_shared<std::array<char, 4096>>();
    loop = [this, s = sd.get(), buf, l = &loop, feed = std::move(feed), ended = std::move(ended)] {
        s->async_read_some(asio::buffer(*buf), [this, buf, l, &feed, &ended](auto ec, std::size_t n) {
            if (ec == asio::error::operation_aborted) return;
            if (ec || n == 0) {
                if (ended) ended();
                return;
            }
            feed(std::string_view(buf->data(), n));
            if (!watchers_done_) (*l)();
        });
    };
    loop();
}

// One line from a blocking fd, bounded; what follows it stays in `buf`.
std::optional<std::string> Runner::read_line(int fd, std::string& buf, int ms) {
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

void Runner::emit(const std::string& line) {
    if (!tool::emit_line(line)) stdout_gone_ = true;
}

// Everything of the sandbox: bwrap's process group and, through its PID 1,
// the whole PID namespace (the kernel kills the rest when PID 1 dies).
void Runner::kill_all() {
    if (pid1_ > 0) ::kill(pid1_, SIGKILL);
    if (pid_ > 0) ::kill(-pid_, SIGKILL);
}

// SIGTERM/SIGINT/SIGHUP go to the command (through the init step as PID 1,
// or to the children of bubblewrap's PID 1), then everything is killed after
// the grace period.
void Runner::forward(int sig) {
    bool sent = false;
    if (pid1_ > 0 && plan_.initStep && plan_.backend != spec::Backend::microvm) {
        // The init step is PID 1 (bubblewrap's --as-pid-1): it passes the
        // signal on to the command, and only to it (not to the write
        // supervisor's hand or the socat bridge, which the command's own
        // clean-up may still need).
        sent = ::kill(pid1_, sig) == 0;
    } else if (pid1_ > 0) {
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

void Runner::wait_signal() {
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

void Runner::reap() {
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

void Runner::finish_if_done() {
    if (exited_ && open_streams_ == 0) {
        watchers_done_ = true;
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

int run_plan(const Plan& plan, const WrapRequest& rq, Egress* eg, SeatbeltTap* tap) {
    Runner runner(plan, rq, eg, tap);
    return runner.run();
}

}  // namespace cc::sandbox::detail
