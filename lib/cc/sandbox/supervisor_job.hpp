// Internal to the write supervisor (supervisor.hpp): what its serving
// thread (supervisor_serve.cpp) and its reading and resolution of a call's
// paths (supervisor_resolve.cpp) share: the state, one notified call (Job)
// and what serving it comes to (Outcome).
#pragma once

#include "cc/sandbox/supervisor.hpp"

#include "cc/fs/unique_fd.hpp"
#include "cc/sandbox/hand_proto.h"

#include <linux/seccomp.h>
#include <sys/types.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

namespace cc::sandbox {

namespace supervisor_detail {

enum class Call {
    open, openat, openat2, creat, mkdir, mkdirat, mknod, mknodat, rename, renameat, renameat2, link, linkat, symlink,
    symlinkat, unlink, unlinkat, rmdir, truncate, chmod, fchmodat, fchmod, setxattr, lsetxattr, fsetxattr,
    removexattr, lremovexattr, fremovexattr, bind
};

const char* name_of(Call c);

// (audit arch, number) -> call, for the ABIs the filter covers.
std::unordered_map<std::uint64_t, Call> call_table();

using Fd = cc::fs::UniqueFd;

// The path the kernel gives descriptor fd (empty when it has none).
std::string fd_path(int fd);
bool on_procfs(int fd);

// An errno result, or a value.
struct Outcome {
    int err = 0;         // >0: the call fails with this errno
    long long val = 0;   // else its return value
    int fd = -1;         // else a descriptor to inject (ours, closed after)
    bool cloexec = false;
    // A FIFO with no reader yet: the hand's helper waits for one, and its
    // answer comes on this socket (a thread of ours waits for it).
    int defer_sock = -1;
};

}  // namespace supervisor_detail

struct WriteSupervisor::State {
    WriteRules rules;
    Options opt;
    Report report;
    int listener = -1;
    int stop_fd = -1;
    // The socket the init step sent the listener over; afterwards the
    // hand's (hand_proto.h): every call is performed there.
    int sock = -1;
    // The sandbox's mount namespace (the init step's, as it sent the
    // listener): a call made from another (a namespace the command made,
    // where paths mean something else) is refused.
    ino_t mnt_ns = 0;
    dev_t mnt_ns_dev = 0;
    std::atomic<std::uint64_t> served{0}, refused{0}, failed{0};
    // Whether the kernel switches straight between the caller and this
    // thread on one CPU (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6).
    std::atomic<bool> sync_wake{false};
    std::unordered_map<std::uint64_t, supervisor_detail::Call> calls = supervisor_detail::call_table();
    ~State() {
        for (int f : {listener, stop_fd, sock})
            if (f >= 0) ::close(f);
    }
};

namespace supervisor_detail {

using State = WriteSupervisor::State;

// One notified call being served.
struct Job {
    State& st;
    const seccomp_notif& req;
    pid_t tid;
    Call call;
    Fd root;
    std::string first_path;  // for the violation
    // The caller's /proc/TID, opened before its notification was checked
    // valid (so it is the caller's, not a reused TID's): what this call
    // reads of the caller is looked up from it, not spelt again.
    Fd pdir;
    int nspid = -1, nstgid = -1;
    mode_t umask = 022;      // the caller's, read by take_umask()

    // Reading the caller, resolving its paths, judging (supervisor_resolve.cpp).
    std::optional<std::string> read_string(std::uint64_t addr);
    bool read_bytes(std::uint64_t addr, void* dst, std::size_t len);
    bool valid();
    std::string proc(const std::string& rest) const { return "/proc/" + std::to_string(tid) + rest; }
    // "cwd" for AT_FDCWD, else "fd/N": the caller's directory, under pdir.
    static std::string dir_entry(int dirfd) { return dirfd == AT_FDCWD ? "cwd" : "fd/" + std::to_string(dirfd); }
    std::string status();
    bool ns_ids();
    bool take_umask();
    std::string rewrite_self(std::string p);
    std::optional<std::variant<std::string, int>> own_dirs(const std::string& p);
    std::variant<std::string, int> absolute(int dirfd, const std::string& path);
    // Parent directory (pinned) and final name of an absolute guest path.
    struct Split {
        Fd dir;
        std::string dir_path;  // guest path of dir, as the kernel names it now
        std::string name;      // one component, or "." for the directory itself
        bool slash = false;    // the path ended in '/'
    };
    std::variant<Split, int> split(std::string abs);
    static std::string join(const Split& s);
    std::variant<Split, int> resolve(int dirfd, const std::string& path, bool follow);
    bool allowed(const std::string& path, WriteOp op);

    // The calls, served on the pinned parent (supervisor_serve.cpp).
    Outcome open_call(int dirfd, const std::string& path, std::uint64_t flags, mode_t mode);
    Outcome openat2_call(int dirfd, const std::string& path, std::uint64_t how_addr, std::uint64_t size);
    // Performed by the hand, with the caller's restrictions (hand_proto.h).
    Outcome hand(cc_hand_req q, const std::string& name1, const std::string& name2, int dir1, int dir2,
                 const std::string& data = {});
    Outcome make_call(int dirfd, const std::string& path, bool dir, mode_t mode, dev_t dev);
    Outcome unlink_call(int dirfd, const std::string& path, int flags);
    Outcome rename_call(int od, const std::string& op, int nd, const std::string& np, unsigned flags);
    Outcome link_call(int od, const std::string& op, int nd, const std::string& np, int flags);
    Outcome symlink_call(const std::string& target, int nd, const std::string& np);
    Outcome change_object(int dirfd, const std::string& path, bool follow, cc_hand_req q, int link_errno,
                          const std::string& name2 = {}, const std::string& data = {});
    Outcome object_call(int dirfd, const std::string& path, bool follow, bool is_chmod, std::uint64_t arg);
    std::variant<std::string, int> xattr_value(std::uint64_t addr, std::uint64_t size, bool remove);
    Outcome fd_chmod_call(int fd, mode_t mode);
    // The caller's descriptor fd as an O_PATH pin; EBADF when it has none or
    // it was opened O_PATH (the calls on it would fail so).
    std::variant<Fd, int> own_fd(int fd);
    std::variant<Fd, int> writable_own_fd(int fd);
    Outcome xattr_call(const std::string& path, bool follow, const std::string& name, std::uint64_t value,
                       std::uint64_t size, int flags, bool remove);
    Outcome fxattr_call(int fd, const std::string& name, std::uint64_t value, std::uint64_t size, int flags,
                        bool remove);
    Outcome bind_call(int fd, std::uint64_t addr, std::uint64_t len);
    Outcome serve();
};

}  // namespace supervisor_detail

}  // namespace cc::sandbox
