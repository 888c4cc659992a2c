// The write supervisor: write rules enforced when a file is created or
// opened for writing, not only where bubblewrap could put a read-only bind.
//
// Inside the sandbox the init step installs a second seccomp filter (built
// here, compile_write_filter()) whose only action is "notify": creating and
// writing calls (open/openat/creat with a write, create or truncate flag,
// decided in BPF from the flags argument, so read-only opens never leave the
// kernel; openat2, whose flags BPF cannot see; mkdir, mknod, rename, link,
// symlink, unlink, rmdir, truncate, chmod) stop in the kernel and are handed
// to a thread of cc-wrap, outside the sandbox's PID namespace, where nothing
// inside can name, signal or trace it. The init step sends it the listener
// over a socket and execs the command.
//
// For each call the supervisor copies the path out of the caller's memory
// once, resolves it in the sandbox's view of the filesystem (the caller's
// root, cwd and directory descriptors, through /proc; lookups only, O_PATH)
// and judges the final name and its resolved location (write_rules.hpp).
// It never performs the call itself: the hand does (hand_proto.h), a
// process the init step forks inside the sandbox before this filter, with
// the command's uid, mount namespace, Landlock domain and seccomp filter, on
// the parent the supervisor pinned and the final name it judged (an object
// reached through a /proc magic link is opened by the hand itself, with its
// power, and must be the object that was judged). So nothing the command
// could not open by itself becomes reachable through the supervisor. The
// new descriptor is injected into the caller (SECCOMP_IOCTL_NOTIF_ADDFD),
// other calls get their result or errno. The kernel is never asked to look
// at the caller's path again (no SECCOMP_USER_NOTIF_FLAG_CONTINUE), so a
// second thread that rewrites the path after the check changes nothing. A
// refusal is EACCES and a violation (syscall, path, rule); with the hand
// gone (killed), every call is refused (EACCES).
//
// If the supervisor is gone, the kernel fails every notified call (ENOSYS):
// the sandbox can no longer write, which is the fail-closed direction.
//
//   auto filter = compile_write_filter();             // sealed memfd, BPF
//   WriteSupervisor sup(rules, identity, on_violation);
//   sup.start(socket_fd);                             // receives the listener, serves calls
//   ...
//   sup.stop();
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/sandbox/write_rules.hpp"

namespace cc::sandbox {

// The notify-only filter, as BPF in a sealed memfd at offset 0. The init
// step loads it with SECCOMP_FILTER_FLAG_NEW_LISTENER and
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (a call the supervisor has taken is
// not restarted by a signal, so it is never performed twice).
Result<int> compile_write_filter();
// The same program written to `out` (a pipe the init step reads to its end).
Status export_write_filter(int out);

// cc-wrap side.
class WriteSupervisor {
public:
    struct Options {
        // When cc-wrap runs as root: the sandbox's uid/gid, which the serving
        // thread takes (raw setresuid: that thread only) before it touches
        // anything, so what it creates is the sandbox's and what it may not
        // touch, it cannot.
        bool drop = false;
        unsigned uid = 0, gid = 0;
    };
    using Report = std::function<void(nlohmann::json)>;  // a violation; called from the serving thread

    WriteSupervisor(WriteRules rules, Options opt, Report report);
    ~WriteSupervisor();
    WriteSupervisor(const WriteSupervisor&) = delete;
    WriteSupervisor& operator=(const WriteSupervisor&) = delete;

    // Takes ownership of sock_fd; the thread waits there for the listener.
    void start(int sock_fd);
    // Stops serving (the listener is closed: later calls fail with ENOSYS)
    // and joins the thread.
    void stop();

    struct Stats {
        std::uint64_t served = 0, refused = 0, failed = 0;
        bool sync_wake = false;  // the kernel hands calls over on one CPU
    };
    Stats stats() const;

    struct State;  // shared with detached helpers (a FIFO open that blocks)

private:
    std::shared_ptr<State> st_;
    std::thread thread_;
};

}  // namespace cc::sandbox
