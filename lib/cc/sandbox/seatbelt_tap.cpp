#include "cc/sandbox/seatbelt_tap.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <vector>

#include "cc/sandbox/seatbelt.hpp"
#include "cc/sandbox/seatbelt_log.hpp"

extern char** environ;

namespace cc::sandbox {

Status seatbelt_prepare(const Plan& plan) {
    if (plan.runtimeDir.empty()) return input_error("runtime directory", "missing");
    std::string dir = plan.runtimeDir + "/tmp";
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return io_error(dir, "cannot create the session's TMPDIR");
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        return io_error(dir, "is not a directory of ours", EEXIST);
    return ok();
}

Result<SeatbeltTap> start_seatbelt_tap(const std::string& tag, const std::string& log_exe, int wait_ms) {
    auto argv_s = seatbelt_log_argv(tag, log_exe);
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);

    int p[2];
    // pipe + FD_CLOEXEC, not pipe2: this runs on macOS, which has no pipe2.
    if (::pipe(p) != 0) return io_error("log stream", "cannot make a pipe");
    ::fcntl(p[0], F_SETFD, FD_CLOEXEC);
    ::fcntl(p[1], F_SETFD, FD_CLOEXEC);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    SeatbeltTap tap;
    int rc = ::posix_spawn(&tap.pid, log_exe.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(p[1]);
    if (rc != 0) {
        ::close(p[0]);
        return io_error(log_exe, "cannot start the violation log tap", rc);
    }
    tap.fd = p[0];

    // Wait for the first complete line (the banner); keep what follows it.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    std::string buf;
    while (buf.find('\n') == std::string::npos) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
            stop_seatbelt_tap(tap);
            return unavailable_error(log_exe, "printed nothing within " + std::to_string(wait_ms) +
                                                  " ms; Seatbelt refusals of this run are not reported");
        }
        struct pollfd pfd {tap.fd, POLLIN, 0};
        int n = ::poll(&pfd, 1, static_cast<int>(left));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) continue;
        char chunk[4096];
        ssize_t got = ::read(tap.fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            stop_seatbelt_tap(tap);
            return unavailable_error(log_exe, "ended before it attached; Seatbelt refusals of this run are not reported");
        }
        buf.append(chunk, static_cast<std::size_t>(got));
    }
    tap.pending = buf.substr(buf.find('\n') + 1);
    return tap;
}

Status seatbelt_preflight(const std::string& sandbox_exec, int wait_ms) {
    std::vector<std::string> argv_s = {sandbox_exec, "-p", "(version 1)(allow default)", "/usr/bin/true"};
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    int p[2];
    if (::pipe(p) != 0) return io_error("sandbox-exec", "cannot make a pipe");
    ::fcntl(p[0], F_SETFD, FD_CLOEXEC);
    ::fcntl(p[1], F_SETFD, FD_CLOEXEC);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, sandbox_exec.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(p[1]);
    if (rc != 0) {
        ::close(p[0]);
        return io_error(sandbox_exec, "cannot start", rc);
    }
    // Its stderr to its end (it is short), bounded by the deadline.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    std::string err;
    bool timed_out = false;
    while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd pfd {p[0], POLLIN, 0};
        int n = ::poll(&pfd, 1, static_cast<int>(left));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) continue;
        char chunk[1024];
        ssize_t got = ::read(p[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        if (err.size() < 4096) err.append(chunk, static_cast<std::size_t>(got));
    }
    ::close(p[0]);
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out)
        return unavailable_error(sandbox_exec, "did not finish a trivial profile within " + std::to_string(wait_ms) + " ms");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ok();
    std::string line = err.substr(0, err.find('\n'));
    if (auto why = seatbelt_apply_failure(line); !why.empty()) return unavailable_error("", why);
    std::string how = WIFEXITED(status) ? "exited " + std::to_string(WEXITSTATUS(status))
                                        : "was killed by signal " + std::to_string(WTERMSIG(status));
    return unavailable_error(sandbox_exec, "cannot apply even a trivial profile here (it " + how + ")" +
                                               (line.empty() ? std::string() : ": " + line));
}

void stop_seatbelt_tap(SeatbeltTap& tap) {
    if (tap.pid > 0) {
        ::kill(tap.pid, SIGTERM);
        int status = 0;
        while (::waitpid(tap.pid, &status, 0) < 0 && errno == EINTR) {
        }
        tap.pid = -1;
    }
    if (tap.fd >= 0) {
        ::close(tap.fd);
        tap.fd = -1;
    }
}

}  // namespace cc::sandbox
