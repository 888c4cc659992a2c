#include "cc/sandbox/launch.hpp"

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
#include "cc/sandbox/seatbelt.hpp"
#include "cc/sandbox/violation.hpp"

namespace cc::sandbox {

namespace {

namespace bp = boost::process;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using nlohmann::json;

void log(const std::string& line) { std::cerr << "cc-wrap: " << line << '\n'; }

int fail(const Error& e) {
    std::cerr << "cc-wrap: " << e.one_line() << '\n';
    return e.code == Errc::input ? tool::exit_usage : exit_own_failure;
}

std::string self_exe() {
    std::error_code ec;
    auto p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("/proc/self/exe") : p.string();
}

// Removed on every exit path; the mask directory is mode 0 and is opened up
// first so remove_all can walk it as an unprivileged user. While cc-wrap runs
// it holds an flock on <dir>/lock; a cc-wrap killed outright (SIGKILL) cannot
// clean up, so every start sweeps the directories whose lock nobody holds.
void remove_runtime_dir(const std::string& path) {
    ::chmod((path + "/mask-dir").c_str(), 0700);
    std::error_code ec;
    fs::remove_all(path, ec);
}

struct RuntimeDir {
    std::string path;
    int lock = -1;
    RuntimeDir() = default;
    RuntimeDir(RuntimeDir&& o) noexcept : path(std::exchange(o.path, {})), lock(std::exchange(o.lock, -1)) {}
    RuntimeDir& operator=(RuntimeDir&& o) noexcept {
        std::swap(path, o.path);
        std::swap(lock, o.lock);
        return *this;
    }
    ~RuntimeDir() {
        if (path.empty()) return;
        remove_runtime_dir(path);
        if (lock >= 0) ::close(lock);
    }
};

// $XDG_RUNTIME_DIR, else $TMPDIR, else /dev/shm when it is a writable tmpfs,
// else /tmp. A memory filesystem matters on the launch path: on ext4 the
// directory's creation and removal cost about 1 ms of journal work per run.
std::string runtime_base() {
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg && ::access(xdg, W_OK) == 0) return xdg;
    const char* tmp = std::getenv("TMPDIR");
    if (tmp && *tmp) return tmp;
    struct statfs fs {};
    if (::statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC && ::access("/dev/shm", W_OK | X_OK) == 0)
        return "/dev/shm";
    return "/tmp";
}

// Leftovers of cc-wrap runs that were killed outright: ours (same owner), named
// cc-wrap.*, with a lock file nobody holds. Returns how many were removed.
int sweep_stale_runtime_dirs(const std::string& base) {
    int removed = 0;
    DIR* d = ::opendir(base.c_str());
    if (!d) return 0;
    while (dirent* e = ::readdir(d)) {
        if (std::strncmp(e->d_name, "cc-wrap.", 8) != 0) continue;
        std::string dir = base + "/" + e->d_name;
        struct stat st {};
        if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
        int fd = ::open((dir + "/lock").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;  // not ours to judge (or a run between mkdtemp and its lock)
        bool dead = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
        ::close(fd);
        if (dead) {
            remove_runtime_dir(dir);
            ++removed;
        }
    }
    ::closedir(d);
    return removed;
}

Result<RuntimeDir> make_runtime_dir() {
    std::string base = runtime_base();
    if (int n = sweep_stale_runtime_dirs(base))
        log("removed " + std::to_string(n) + " runtime director" + (n == 1 ? "y" : "ies") +
            " left by cc-wrap runs that were killed outright");
    // Made under a name the sweep ignores, locked, then renamed into place:
    // a concurrent sweep never sees a cc-wrap.* directory whose lock is free.
    for (int attempt = 0; attempt < 8; ++attempt) {
        std::string tmpl = base + "/.cc-wrap-new.XXXXXX";
        if (!::mkdtemp(tmpl.data())) return io_error(base, "cannot create the runtime directory");
        RuntimeDir rt;
        rt.path = tmpl;
        rt.lock = ::open((tmpl + "/lock").c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (rt.lock < 0 || ::flock(rt.lock, LOCK_EX) != 0) return io_error(tmpl + "/lock", "cannot create or lock");
        std::string final_path = base + "/cc-wrap." + tmpl.substr(tmpl.size() - 6);
        if (::rename(tmpl.c_str(), final_path.c_str()) != 0) {
            if (errno == EEXIST || errno == ENOTEMPTY) continue;  // that name is taken: the destructor removes ours
            return io_error(final_path, "cannot rename the runtime directory into place");
        }
        rt.path = final_path;
        return rt;
    }
    return io_error(base, "cannot find a free runtime directory name");
}

Status make_masks(const Plan& plan) {
    std::string d = plan.runtimeDir + "/mask-dir", f = plan.runtimeDir + "/mask-file";
    if (::mkdir(d.c_str(), 0) != 0) return io_error(d, "cannot create the mask directory");
    int fd = ::open(f.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
    if (fd < 0) return io_error(f, "cannot create the mask file");
    ::close(fd);
    ::chmod(d.c_str(), 0);
    return ok();
}

// Waits up to `ms` for `pid` (a child) to exit and reaps it; its wait status,
// or nullopt if it is still running. A pidfd wakes us the moment it exits;
// kernels without pidfd_open get a 1 ms polling loop.
std::optional<int> wait_exit(pid_t pid, int ms) {
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) return st;
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) {
        pollfd p{fd, POLLIN, 0};
        while (::poll(&p, 1, ms) < 0 && errno == EINTR) {}
        ::close(fd);
        if (::waitpid(pid, &st, WNOHANG) == pid) return st;
        return std::nullopt;
    }
    for (int i = 0; i < ms; ++i) {
        if (::waitpid(pid, &st, WNOHANG) == pid) return st;
        ::usleep(1000);
    }
    return std::nullopt;
}

// The session's own cc-egress: started alongside the sandbox (its ready line
// is checked while bubblewrap sets up; the command itself waits in the init
// step until cc-egress has taken the listeners), stopped on every exit path
// (destructor), and told to exit when cc-wrap's pipe closes even if cc-wrap is
// killed outright (--exit-with-stdin, plus PDEATHSIG).
// Everything left in a pipe whose writer has exited, chunk by chunk.
template <class Fn>
void read_to_eof(int fd, Fn&& feed) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) feed(std::string_view(buf, static_cast<std::size_t>(n)));
}

struct Egress {
    pid_t pid = -1;
    int stdin_w = -1;
    int stdout_r = -1;
    // Its human log stays out of the command's stderr: read by cc-wrap,
    // the last few KiB kept, and shown when it fails.
    int stderr_r = -1;
    std::string err_tail;
    bool ready_seen = false;
    std::string head;  // stdout up to the end of the ready line
    ~Egress() {
        stop();
        if (stderr_r >= 0) ::close(stderr_r);
    }
    void keep_err(std::string_view data) {
        err_tail.append(data);
        if (err_tail.size() > 4096) {
            auto cut = err_tail.find('\n', err_tail.size() - 4096);
            err_tail.erase(0, cut == std::string::npos ? err_tail.size() - 4096 : cut + 1);
        }
    }
    // After it exited: the rest of its stderr, then the kept tail, on ours.
    void show_err() {
        if (stderr_r >= 0) read_to_eof(stderr_r, [this](std::string_view d) { keep_err(d); });
        if (!err_tail.empty()) std::cerr << err_tail << (err_tail.back() == '\n' ? "" : "\n");
        err_tail.clear();
    }
    // Stops it (stdin closed, then SIGTERM, then SIGKILL) and returns its
    // wait status, or nullopt when there was nothing to stop.
    std::optional<int> stop() {
        std::optional<int> st;
        // Closing its stdin is the request to stop (--exit-with-stdin); it
        // closes its connections and writes their last lines. SIGTERM only
        // if it has not gone after 2 s, SIGKILL after 3 more: a signal sent
        // at once would race its orderly stop.
        const bool asked = stdin_w >= 0;
        if (stdin_w >= 0) ::close(std::exchange(stdin_w, -1));
        if (pid > 0) {
            if (asked) st = wait_exit(pid, 2000);
            if (!st) {
                ::kill(pid, SIGTERM);
                st = wait_exit(pid, 3000);
            }
            if (!st) {
                ::kill(pid, SIGKILL);
                int raw = 0;
                ::waitpid(pid, &raw, 0);
                st = raw;
            }
            pid = -1;
        }
        if (stdout_r >= 0) ::close(std::exchange(stdout_r, -1));
        return st;
    }
};

// cc-wrap-init next to this binary; else cc-wrap itself runs the init step.
std::string init_exe() {
    std::string self = self_exe();
    std::string init = (fs::path(self).parent_path() / "cc-wrap-init").string();
    return ::access(init.c_str(), X_OK) == 0 ? init : self;
}

std::optional<std::string> find_egress() {
    fs::path dir = fs::path(self_exe()).parent_path();
    for (const auto& c : {dir / "cc-egress", dir.parent_path() / "cc-egress" / "cc-egress"})
        if (::access(c.c_str(), X_OK) == 0) return c.string();
    auto found = bp::search_path("cc-egress");
    if (!found.empty()) return found.string();
    return std::nullopt;
}

// Children are started with vfork(2) (bp::posix::use_vfork): the child borrows
// cc-wrap's memory until it execs, so neither page tables are copied nor every
// page cc-wrap writes afterwards faults (about 1.5 ms and a COW fault per
// page on this kind of VM). The rules that makes: the setup below runs in
// cc-wrap's memory, so only system calls, no allocation; and no signal
// handler of cc-wrap's may run in the child. So, as posix_spawn does, all
// signals are blocked around the spawn (SpawnMask) and the child puts the
// ones cc-wrap catches back to their defaults before unblocking them.
struct SpawnMask {
    sigset_t old{};
    SpawnMask() {
        sigset_t all;
        ::sigfillset(&all);
        ::pthread_sigmask(SIG_BLOCK, &all, &old);
    }
    ~SpawnMask() { ::pthread_sigmask(SIG_SETMASK, &old, nullptr); }
    SpawnMask(const SpawnMask&) = delete;
    SpawnMask& operator=(const SpawnMask&) = delete;
};

// The signals cc-wrap handles (the Runner's signal_set) and SIGPIPE, which
// every cc tool ignores (tool::run): a child must get all of them at their
// defaults. An ignored signal survives exec, so without this the sandboxed
// command would run with SIGPIPE ignored (`yes | head` printing EPIPE errors).
// Set, not queried first: one system call each in the vfork child.
void child_signals_default(const sigset_t& restore) {
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::sigaction(sig, &sa, nullptr);
    ::sigprocmask(SIG_SETMASK, &restore, nullptr);
}

// Marks every inherited descriptor above the ones we hand over close-on-exec,
// so nothing of cc-wrap's (or its caller's) leaks into the sandbox.
struct ChildSetup {
    int keep_from;
    bool new_session;
    const sigset_t* restore;
    template <class Exec>
    void operator()(Exec&) const {
        if (new_session) {
            // --pty: the terminal becomes the controlling one of a session
            // inside the sandbox (the init step), where the PIDs a shell
            // hands to tcsetpgrp() make sense.
            ::setsid();
        } else {
            ::setpgid(0, 0);
        }
        ::syscall(SYS_close_range, keep_from, ~0U, CLOSE_RANGE_CLOEXEC);
        child_signals_default(*restore);
    }
};

Status start_egress(Egress& eg, const std::string& exe, const std::string& spec_file, const std::string& inbox) {
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
        return io_error("pipe", "cannot create");
    // Only the inbox: cc-wrap hands it the listeners; no Unix proxy sockets needed.
    std::vector<std::string> args = {"--spec", spec_file, "--fd-inbox", inbox, "--exit-with-stdin"};
    try {
        SpawnMask mask;
        bp::child c(exe, bp::args(args), bp::posix::fd.bind(0, in[0]), bp::posix::fd.bind(1, out[1]),
                    bp::posix::fd.bind(2, err[1]),
                    bp::posix::use_vfork, bp::extend::on_exec_setup = [&mask](auto&) {
                        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
                        ::syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
                        child_signals_default(mask.old);
                    });
        eg.pid = c.id();
        c.detach();
    } catch (const std::exception& e) {
        for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
        return unavailable_error("cc-egress", std::string("cannot start: ") + e.what());
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    eg.stderr_r = err[0];
    eg.stdin_w = in[1];
    eg.stdout_r = out[0];
    return ok();
}

// The runtime copy of the spec for cc-egress: private to this run, removed
// with the runtime directory, so no fsync (it is read once, milliseconds later).
Status write_private(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return io_error(path, "cannot create");
    std::size_t off = 0;
    while (off < text.size()) {
        ssize_t n = ::write(fd, text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { ::close(fd); return io_error(path, "cannot write"); }
        off += static_cast<std::size_t>(n);
    }
    ::close(fd);
    return ok();
}

// Fills the wiring from a ready object (our own cc-egress, or --egress FILE).
Status wiring_from_ready(const json& j, EgressWiring& w, const std::string& subject) {
    if (!j.is_object() || j.value("event", "") != "ready")
        return input_error(subject, "not a cc-egress ready object");
    auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
    w.http = str("http");
    w.socks = str("socks");
    w.httpUnix = str("httpUnix");
    w.socksUnix = str("socksUnix");
    w.inbox = str("fdInbox");
    if (w.inbox.empty() && (w.httpUnix.empty() || w.socksUnix.empty()))
        return input_error(subject, "has neither fdInbox nor httpUnix and socksUnix; nothing can reach it from inside");
    return ok();
}


// ---------------------------------------------------------------------------
// Running a plan: one asio loop over the child's pipes, bwrap's status fd,
// the egress log, signals and the timeout.
class Runner {
public:
    Runner(const Plan& plan, const WrapRequest& rq, Egress* eg)
        : plan_(plan), rq_(rq), eg_(eg), ev_(plan.spec.sessionId), sigs_(io_), timeout_(io_), grace_(io_),
          drain_(io_) {}
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
        const bool status_fd = plan_.backend == spec::Backend::native && plan_.seatbelt.empty();
        if (status_fd && ::pipe2(st, O_CLOEXEC) != 0) return fail(io_error("pipe", "cannot create"));
        const bool handover = status_fd && plan_.proxy.transport == "fd-handover";
        int blk[2] = {-1, -1};
        if (handover && ::pipe2(blk, O_CLOEXEC) != 0) return fail(io_error("pipe", "cannot create"));

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
            ChildSetup setup{handover ? 5 : status_fd ? 4 : 3, rq_.pty, &mask.old};
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
        if (handover) {
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
        if (rq_.timeout > 0) {
            timeout_.expires_after(std::chrono::milliseconds(static_cast<long>(rq_.timeout * 1000)));
            timeout_.async_wait([this](auto ec) {
                if (ec || exited_) return;
                kill_all();
                killed_ = true;
                if (rq_.events) emit(ev_.line("killed", {{"reason", "timeout"}, {"signal", 9}, {"timeout", rq_.timeout}}));
                else log("timeout after " + std::to_string(rq_.timeout) + " s: sandbox killed");
            });
        }
        io_.run();
        int code = status_;
        if (eg_ && eg_->pid > 0 && egress_sd_ && egress_sd_->is_open()) {
            // Our own cc-egress: stopped now rather than after the exit event,
            // so that its last connection lines (a refusal just before the
            // command ended) are still reported.
            eg_->stop();
            read_to_eof(egress_sd_->native_handle(), [this](std::string_view d) { egress_lines(d); });
        }
        if (inbox_events_ && inbox_conn_ >= 0 && !failure_) last_inbox_lines();
        if (rq_.events) emit(ev_.line("exit", {{"exitCode", code}}));
        return code;
    }

private:
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
        auto conn = hand_over(plan_.proxy.inbox, fds->http, fds->socks, inbox_events_);
        if (!conn) return conn.error();
        inbox_conn_ = *conn;
        return ok();
    }

    // A handed-in cc-egress's connection lines for this sandbox's listeners.
    void watch_inbox(int fd) {
        egress_lines(std::exchange(inbox_rest_, {}));
        read_each(inbox_sd_, inbox_loop_, fd, [this](std::string_view d) { egress_lines(d); });
    }

    // Reads `fd` chunk by chunk into `feed` until end of file, an error or a
    // cancel. The next read lives in `loop`, a member: a closure that owned
    // itself would never be freed.
    void read_each(std::unique_ptr<asio::posix::stream_descriptor>& sd, std::function<void()>& loop, int fd,
                   std::function<void(std::string_view)> feed) {
        sd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
        auto buf = std::make_shared<std::array<char, 4096>>();
        loop = [s = sd.get(), buf, l = &loop, feed = std::move(feed)] {
            s->async_read_some(asio::buffer(*buf), [buf, l, &feed](auto ec, std::size_t n) {
                if (ec || n == 0) return;
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

    void egress_failed(const std::string& why) {
        if (exited_ || failure_) return;
        log(egress_gone(why).one_line() + ": the sandbox is stopped");
        kill_all();
    }

    const Plan& plan_;
    const WrapRequest& rq_;
    Egress* eg_;
    EventWriter ev_;
    asio::io_context io_;
    asio::signal_set sigs_;
    asio::steady_timer timeout_, grace_, drain_;
    std::unique_ptr<asio::posix::stream_descriptor> status_sd_, egress_sd_, egress_log_sd_, stdin_sd_, inbox_sd_;
    std::function<void()> egress_loop_, egress_log_loop_, stdin_loop_, inbox_loop_;  // each read's next read
    std::array<char, 512> status_buf_{};
    std::string status_text_;
    pid_t pid_ = -1, pid1_ = -1;
    int status_ = exit_own_failure;
    std::optional<int> failure_;
    int inbox_conn_ = -1;  // held open while the sandbox runs (fd-handover)
    bool inbox_events_ = false;  // a handed-in cc-egress sends connection lines on it
    std::string inbox_rest_;     // lines read along with its answer
    LineSplitter egress_split_{65536};
    int open_streams_ = 0;
    bool exited_ = false, killed_ = false, forwarded_ = false, stdout_gone_ = false;
};

}  // namespace

int wrap(const WrapRequest& rq) {
    // 1. Input: spec, switch, backend flag, profile. Bad input: exit 2.
    auto spec = spec::load_sandbox_spec(rq.specPath);
    if (!spec) return fail(spec.error());
    const char* envsw = std::getenv("CC_SERVER_SANDBOX");
    auto sw = probe::resolve_switch(rq.sandboxSwitch, envsw ? std::optional<std::string>(envsw) : std::nullopt);
    if (!sw) return fail(sw.error());
    std::optional<spec::Backend> requested;
    if (rq.backend) {
        requested = spec::parse_backend_flag(*rq.backend);
        if (!requested) return fail(input_error("--backend", "unknown backend '" + *rq.backend + "' (native, none or microvm)"));
    }
    Profile profile;
    if (rq.profile == "dispatch") profile = Profile::dispatch;
    else if (rq.profile == "terminal") profile = Profile::terminal;
    else return fail(input_error("--profile", "unknown profile '" + rq.profile + "' (dispatch or terminal)"));
    if (rq.command.empty()) return fail(input_error("command", "missing (cc-wrap [options] -- CMD ARGS...)"));

    // 2. Probe (or read it once from cc-probe --json) and choose (F4).
    probe::ProbeResult pr;
    if (rq.probePath) {
        auto loaded = probe::load(*rq.probePath);
        if (!loaded) return fail(loaded.error());
        pr = *loaded;
        if (sw->source != "default") pr.sandbox = *sw;
    } else {
        pr = probe::probe(*probe::real_host(), *sw, requested == spec::Backend::microvm);
    }
    auto choice = probe::choose_backend(pr, requested);
    if (!choice) return fail(choice.error());
    if (!choice->requested || choice->backend == spec::Backend::none) log(choice->log);

    PlanInput in;
    in.spec = *spec;
    in.backend = choice->backend;
    in.backendLog = choice->log;
    in.profile = profile;
    in.command = rq.command;
    in.hostEnv = current_env();
    in.home = in.hostEnv.count("HOME") ? in.hostEnv["HOME"] : "/";
    in.inheritEnv = rq.inheritEnv;
    in.denyWrite = rq.denyWrite;
    in.dropFilenameDenies = rq.dropFilenameDenies;
    in.initExe = init_exe();
    in.mechanism = pr.mechanism.empty() ? "bubblewrap" : pr.mechanism;
    if (pr.bwrap) in.bwrap = *pr.bwrap;
    if (pr.socat) in.socat = *pr.socat;
    in.pty = rq.pty;

    // 3. Runtime dir and the proxies, when the plan needs them.
    RuntimeDir rt;
    Egress egress;
    const bool wants_egress = choice->backend == spec::Backend::native && profile == Profile::dispatch;
    if (rq.print || rq.printSeatbelt) {
        in.runtimeDir = "/tmp/cc-wrap.XXXXXX";
    } else {
        auto d = make_runtime_dir();
        if (!d) return fail(d.error());
        rt = std::move(*d);
        in.runtimeDir = rt.path;
    }
    if (wants_egress) {
        if (rq.egressReady) {
            auto text = io::read_input(*rq.egressReady);
            if (!text) return fail(text.error());
            auto j = cc::json::parse(*text, *rq.egressReady);
            if (!j) return fail(j.error());
            in.egress.source = EgressWiring::Source::handed;
            if (auto s = wiring_from_ready(*j, in.egress, *rq.egressReady); !s) return fail(s.error());
        } else if (rq.print || rq.printSeatbelt) {
            in.egress.source = EgressWiring::Source::own;
            in.egress.inbox = in.runtimeDir + "/egress/inbox.sock";
        } else {
            auto exe = find_egress();
            if (!exe) return fail(unavailable_error("cc-egress", "not found next to cc-wrap or on PATH; the sandbox's only way out is its proxy"));
            std::string dir = rt.path + "/egress";
            if (::mkdir(dir.c_str(), 0700) != 0) return fail(io_error(dir, "cannot create"));
            if (auto s = write_private(rt.path + "/spec.json", spec::to_json(*spec).dump()); !s) return fail(s.error());
            if (auto s = start_egress(egress, *exe, rt.path + "/spec.json", dir + "/inbox.sock"); !s)
                return fail(s.error());
            in.egress.source = EgressWiring::Source::own;
            in.egress.inbox = dir + "/inbox.sock";
        }
    }

    // 4. Plan.
    auto plan = build_plan(in, *real_paths());
    if (!plan) return fail(plan.error());
    if (rq.printSeatbelt) {
        auto port = [](const std::string& a) { auto c = a.rfind(':'); return c == std::string::npos ? 0 : std::atoi(a.c_str() + c + 1); };
        std::cout << seatbelt_profile(in, *real_paths(), port(in.egress.http), port(in.egress.socks)) << std::flush;
        return 0;
    }
    if (rq.print) {
        tool::emit_line(to_json(*plan).dump(2));
        return 0;
    }
    for (const auto& n : plan->notes) log("note: " + n);

    // 5. Run.
    if (plan->backend == spec::Backend::native && plan->seatbelt.empty())
        if (auto s = make_masks(*plan); !s) return fail(s.error());
    Runner runner(*plan, rq, wants_egress ? &egress : nullptr);
    return runner.run();
}

}  // namespace cc::sandbox
