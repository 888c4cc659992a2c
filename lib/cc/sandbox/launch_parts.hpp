// The pieces wrap() (launch.cpp) puts together, internal to lib/cc/sandbox:
// the runtime directory (runtime_dir.cpp), the session's own cc-egress and
// how children are started (child.cpp), and the Runner that watches a
// running plan (runner.cpp).
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cc/core/result.hpp"
#include "cc/core/tool.hpp"
#include "cc/sandbox/launch.hpp"
#include "cc/sandbox/plan.hpp"
#include "cc/sandbox/portable.hpp"
#include "cc/sandbox/seatbelt_tap.hpp"

namespace cc::sandbox::detail {

inline void log(const std::string& line) { tool::log("cc-wrap", line); }  // silent under --quiet

inline int fail(const Error& e) {
    std::cerr << tool::log_prefix("cc-wrap") << e.one_line() << '\n';
    return e.code == Errc::input ? tool::exit_usage : exit_own_failure;
}

std::string self_exe();

// --- runtime_dir.cpp ---------------------------------------------------------
void remove_runtime_dir(const std::string& path);

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

// The plan names the runtime directory before it exists: a fresh name under
// $XDG_RUNTIME_DIR (else $TMPDIR, /dev/shm, /tmp), then, once the plan is
// made, the directory itself (locked, renamed into place, never over
// anything: an io error with EEXIST when the name was taken meanwhile).
std::string choose_runtime_path();
Result<RuntimeDir> make_runtime_dir(const std::string& path);
Status make_masks(const Plan& plan);

// --- child.cpp ---------------------------------------------------------------
// Waits up to `ms` for `pid` (a child) to exit and reaps it; its wait status,
// or nullopt if it is still running.
std::optional<int> wait_exit(pid_t pid, int ms);

// Everything left in a pipe whose writer has exited, chunk by chunk.
template <class Fn>
void read_to_eof(int fd, Fn&& feed) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) feed(std::string_view(buf, static_cast<std::size_t>(n)));
}

// The session's own cc-egress: started alongside the sandbox (its ready line
// is checked while bubblewrap sets up; the command itself waits in the init
// step until cc-egress has taken the listeners), stopped on every exit path
// (destructor), and told to exit when cc-wrap's pipe closes even if cc-wrap is
// killed outright (--exit-with-stdin, plus PDEATHSIG).
struct Egress {
    std::string exe, spec_file, inbox;  // how it was started (a restart starts it the same way)
    std::string policy_file, approver;  // its --policy and --approver (empty: none)
    // --intercept, --credential, --upstream-ca: it holds the session CA and
    // the secrets, so it is not started again if it dies (a new one would
    // have another CA and other placeholders).
    std::vector<std::string> intercept, credentials;
    std::string upstream_ca;
    std::vector<int> credential_fds;  // its fd 3, 4, ...: the fd: credentials (closed here once it has them)
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
std::string init_exe();
std::optional<std::string> find_egress();
// inbox empty: no fd inbox, cc-egress listens on loopback ports of its
// choosing (Seatbelt, where the sandbox shares the host's loopback).
Status start_egress(Egress& eg, const std::string& exe, const std::string& spec_file, const std::string& inbox);
// Waits up to `ms` for its ready line and returns it (eg.ready_seen set);
// on failure cc-egress is stopped and its stderr shown (exit 2 from it is
// an input error).
Result<nlohmann::json> read_egress_ready(Egress& eg, int ms);
// The runtime copy of the spec for cc-egress (0600, private to this run).
Status write_private(const std::string& path, const std::string& text);
// Fills the wiring from a ready object (our own cc-egress, or --egress FILE).
Status wiring_from_ready(const nlohmann::json& j, EgressWiring& w, const std::string& subject);
// A cc-egress that terminates TLS: its CA (interceptCa) and the credentials'
// placeholders into `w`; a ready line without interceptCa leaves it alone.
Status intercept_from_ready(const nlohmann::json& j, EgressWiring& w, const std::string& subject);
// The session CA for the sandbox, in DIR/tls (bound at guest_tls_dir):
// ca.pem, and bundle.pem with the system's roots before it.
Status write_tls_bundle(const std::string& runtime_dir, const std::string& ca_pem);

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
inline void child_signals_default(const sigset_t& restore) {
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::sigaction(sig, &sa, nullptr);
    ::sigprocmask(SIG_SETMASK, &restore, nullptr);
}

// Marks every inherited descriptor above the ones we hand over close-on-exec,
// so nothing of cc-wrap's (or its caller's) leaks into the sandbox.
//
// It also gives the sandbox its identity: a fresh, empty session keyring
// (the caller's stays out of reach), and, when cc-wrap runs as root, the
// plan's unprivileged uid and gid with no supplementary groups. Raw system
// calls: glibc's setresuid() would signal every thread of the process whose
// memory this vfork child borrows. Failing either, the child exits 125 before
// bubblewrap (or the command) ever runs.
struct ChildSetup {
    int keep_from;
    bool new_session;
    const sigset_t* restore;
    const Identity* identity = nullptr;
    int seccomp_fd = -1;  // moved to bwrap_seccomp_fd
    int write_filter_src = -1;  // moved to write_filter_fd (the write supervisor's BPF)
    int write_sock_src = -1;    // moved to write_sock_fd
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
        if (identity && identity->drop) {
#ifdef __linux__
            if (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
                ::syscall(SYS_setresgid, identity->gid, identity->gid, identity->gid) != 0 ||
                ::syscall(SYS_setresuid, identity->uid, identity->uid, identity->uid) != 0)
#else
            // macOS: a vfork child has its own credentials; plain calls.
            if (::setgroups(0, nullptr) != 0 || ::setgid(identity->gid) != 0 || ::setuid(identity->uid) != 0)
#endif
                die("cc-wrap: cannot switch to the sandbox's unprivileged uid/gid; nothing was started\n");
        }
#ifdef __linux__
        // KEYCTL_JOIN_SESSION_KEYRING with no name: a new anonymous keyring.
        // (macOS has no kernel keyring; its keychain is behind the profile's
        // Mach-service denies.)
        if (::syscall(SYS_keyctl, 1, nullptr) < 0)
            die("cc-wrap: cannot join a fresh session keyring; nothing was started\n");
#endif
        if (seccomp_fd >= 0) {
            if (::dup2(seccomp_fd, bwrap_seccomp_fd) < 0)
                die("cc-wrap: cannot hand the seccomp filter to bubblewrap; nothing was started\n");
        }
        if (write_filter_src >= 0 &&
            (::dup2(write_filter_src, write_filter_fd) < 0 || ::dup2(write_sock_src, write_sock_fd) < 0))
            die("cc-wrap: cannot hand the write supervisor's filter to the sandbox; nothing was started\n");
        cloexec_from(keep_from);
        child_signals_default(*restore);
    }
    [[noreturn]] static void die(const char* msg) {
        ssize_t w = ::write(2, msg, std::strlen(msg));
        (void)w;
        ::_exit(exit_own_failure);
    }
};

// --- runner.cpp --------------------------------------------------------------
// Runs the plan and reports (events, violations, signals, timeout); returns
// cc-wrap's exit status.
// tap: macOS, the session's Seatbelt log stream (violations), or nullptr.
int run_plan(const Plan& plan, const WrapRequest& rq, Egress* eg, SeatbeltTap* tap = nullptr);

}  // namespace cc::sandbox::detail
