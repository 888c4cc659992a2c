#include "cc/core/child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include <array>
#include <cstring>
#include <memory>

#include <boost/asio.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>

namespace cc::child {

namespace bp = boost::process;
namespace asio = boost::asio;

namespace {

// In the child, after its stdin, stdout and stderr are in place (handlers run
// in argument order; this one is last). Only async-signal-safe calls here.
// Every other descriptor becomes close-on-exec rather than being closed:
// Boost.Process's own exec-error pipe must survive until exec. A tool with
// several threads may be mid-way through opening a socket elsewhere, without
// O_CLOEXEC yet (Asio): the child takes none of it along.
struct ChildSetup : bp::extend::handler {
    const std::vector<int>* pass = nullptr;
    template <typename Executor>
    void on_exec_setup(Executor&) const {
        ::setpgid(0, 0);  // its own group: the deadline kills what it started too
        // The descriptors passed on go out of the way first (a source may
        // sit where another is due), then to 3, 4, ... without close-on-exec.
        int moved[16];
        std::size_t n = pass ? std::min<std::size_t>(pass->size(), 16) : 0;
        for (std::size_t i = 0; i < n; ++i) moved[i] = ::fcntl((*pass)[i], F_DUPFD_CLOEXEC, 64);
        bool done = false;
#ifdef __linux__
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // not left running if the tool is killed
        done = ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0;
#endif
        if (!done) {
            long max = ::sysconf(_SC_OPEN_MAX);
            for (int fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); ++fd) {
                int fl = ::fcntl(fd, F_GETFD);
                if (fl >= 0) ::fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
            }
        }
        for (std::size_t i = 0; i < n; ++i)
            if (moved[i] >= 0) ::dup2(moved[i], 3 + static_cast<int>(i));  // dup2 clears close-on-exec
    }
};

// One output stream, read to its end; past `cap` bytes read and dropped.
struct Sink {
    bp::async_pipe pipe;
    std::string data;
    std::size_t cap;
    std::array<char, 16384> buf{};
    Sink(asio::io_context& io, std::size_t c) : pipe(io), cap(c) {}
    void read() {
        pipe.async_read_some(asio::buffer(buf), [this](const boost::system::error_code& ec, std::size_t n) {
            if (ec) return;
            if (data.size() < cap) data.append(buf.data(), std::min(n, cap - data.size()));
            read();
        });
    }
};

}  // namespace

Result<Outcome> run(const Spec& s) {
    if (s.argv.empty() || s.argv[0].empty()) return input_error("child", "no program named");
    const std::string& name = s.argv[0];
    boost::filesystem::path exe =
        name.find('/') == std::string::npos ? bp::search_path(name) : boost::filesystem::path(name);
    if (exe.empty()) return io_error(name, "not found on PATH", ENOENT);
    bp::environment env;
    for (const auto& [k, v] : s.env) env.set(k, v);  // set(), not operator[] (an over-read in Boost's find)
    std::vector<std::string> args(s.argv.begin() + 1, s.argv.end());

    asio::io_context io;
    Sink out(io, s.capture_out ? s.output_cap : 0), err(io, s.capture_err ? s.output_cap : 0);
    bp::async_pipe in(io);
    asio::steady_timer timer(io, s.deadline);
    bool late = false, exited = false;
    pid_t pid = -1;
    std::unique_ptr<bp::child> c;
    try {
        c = std::make_unique<bp::child>(
            exe, bp::args(args), env, bp::std_in < in, bp::std_out > out.pipe, bp::std_err > err.pipe, io,
            bp::on_exit([&](int, const std::error_code&) {
                exited = true;
                timer.cancel();
                // Whatever it left behind in its group goes with it, so that
                // a grandchild holding the pipes cannot keep run() waiting.
                if (pid > 0) ::kill(-pid, SIGKILL);
            }),
            [&] {
                ChildSetup setup;
                setup.pass = &s.pass_fds;
                return setup;
            }());
    } catch (const std::exception& e) {
        return io_error(name, std::string("could not start: ") + e.what(), 0);
    }
    pid = c->id();
    timer.async_wait([&](const boost::system::error_code& ec) {
        if (ec || exited) return;
        late = true;
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
    });
    // A child that exits without reading its input makes the write fail
    // with EPIPE, and the SIGPIPE that comes with it is this thread's: it is
    // blocked while run() writes (after the child started, which must not
    // inherit the mask) and taken back after, so a caller that does not
    // ignore SIGPIPE (a library user, a test) is not killed by it.
    struct PipeGuard {
        sigset_t pipe, old;
        PipeGuard() {
            sigemptyset(&pipe);
            sigaddset(&pipe, SIGPIPE);
            pthread_sigmask(SIG_BLOCK, &pipe, &old);
        }
        ~PipeGuard() {
            if (!sigismember(&old, SIGPIPE)) {
                timespec zero{0, 0};
                while (sigtimedwait(&pipe, nullptr, &zero) > 0) {
                }
            }
            pthread_sigmask(SIG_SETMASK, &old, nullptr);
        }
    } pipe_guard;
    out.read();
    err.read();
    boost::system::error_code ignored;
    if (s.input && !s.input->empty()) {
        asio::async_write(in, asio::buffer(*s.input), [&](const boost::system::error_code&, std::size_t) {
            boost::system::error_code e;
            in.close(e);
        });
    } else {
        in.close(ignored);
    }
    try {
        io.run();
    } catch (const std::exception& e) {
        ::kill(-pid, SIGKILL);
        std::error_code wec;
        c->wait(wec);
        return io_error(name, std::string("lost track of it: ") + e.what(), 0);
    }
    std::error_code wec;
    c->wait(wec);
    Outcome o;
    o.late = late;
    int raw = c->native_exit_code();
    o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : -1;
    o.out = std::move(out.data);
    o.err = std::move(err.data);
    return o;
}

std::map<std::string, std::string> environment_of(const std::function<bool(const std::string&)>& keep) {
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
        const char* eq = std::strchr(*e, '=');
        if (!eq) continue;
        std::string name(*e, static_cast<std::size_t>(eq - *e));
        if (!name.empty() && keep(name)) env.emplace(std::move(name), std::string(eq + 1));
    }
    return env;
}

bool not_git(const std::string& name) { return name.rfind("GIT_", 0) != 0; }

}  // namespace cc::child
