// The write supervisor's serving thread (supervisor.hpp): receive a call,
// read its arguments once, resolve them in the sandbox's view of the
// filesystem, judge, perform, answer. Reading the caller, resolving its
// paths and judging them are in supervisor_resolve.cpp, which says how.

#include "cc/sandbox/supervisor.hpp"
#include "cc/sandbox/supervisor_job.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>

namespace cc::sandbox::supervisor_detail {

// The calls: each resolved, judged, then performed on the pinned parent.
Outcome Job::open_call(int dirfd, const std::string& path, std::uint64_t flags, mode_t mode) {
    int fl = static_cast<int>(flags);
    bool follow = !(fl & O_NOFOLLOW) && !((fl & O_CREAT) && (fl & O_EXCL));
    auto r = resolve(dirfd, path, follow);
    if (auto* e = std::get_if<int>(&r)) return {*e};
    Split& s = std::get<Split>(r);
    const bool creating = (fl & O_CREAT) || (fl & __O_TMPFILE) == __O_TMPFILE;
    if (creating && !take_umask()) return {ESRCH};
    const int ours = (fl & ~O_CLOEXEC) | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    Outcome o;
    o.cloexec = fl & O_CLOEXEC;
    if (s.name == "." || on_procfs(s.dir.fd)) {
        // The object itself: a directory, or what /proc/PID/fd/N refers to.
        Fd pin(::openat(s.dir.fd, s.name.c_str(), O_PATH | O_CLOEXEC | (fl & O_NOFOLLOW)));
        if (!pin) return {errno};
        std::string p = fd_path(pin.fd);
        if (!allowed(p.empty() ? join(s) : p, WriteOp::write)) return {EACCES};
        std::string again = "/proc/self/fd/" + std::to_string(pin.fd);
        o.fd = ::open(again.c_str(), ours & ~O_CREAT & ~O_EXCL, mode);
    } else {
        if (!allowed(join(s), (fl & O_CREAT) ? WriteOp::create : WriteOp::write)) return {EACCES};
        o.fd = ::openat(s.dir.fd, s.name.c_str(), ours | (follow ? O_NOFOLLOW : 0), mode);
        // A symlink put there since it was resolved: not followed now.
    }
    if (o.fd < 0) {
        const int e = errno;
        if (e == ENXIO && !(fl & O_NONBLOCK)) {
            // A FIFO nobody reads yet: the caller would wait for a reader.
            int pin = s.name == "." || on_procfs(s.dir.fd)
                          ? -1
                          : ::openat(s.dir.fd, s.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
            struct stat sb {};
            if (pin >= 0 && ::fstat(pin, &sb) == 0 && S_ISFIFO(sb.st_mode)) {
                Outcome d;
                d.cloexec = o.cloexec;
                d.defer_pin = pin;
                d.defer_flags = (ours & ~O_NONBLOCK & ~O_CREAT & ~O_EXCL & ~O_TRUNC);
                return d;
            }
            if (pin >= 0) ::close(pin);
        }
        return {e};
    }
    // Opened non-blocking (a FIFO without a reader fails rather than
    // waits); the caller's descriptor gets its own flags back. F_SETFL
    // takes only the status flags from these (access mode and creation
    // flags are ignored; O_ASYNC, which open() ignores, is left out), so
    // no F_GETFL is needed.
    if (!(fl & O_NONBLOCK)) ::fcntl(o.fd, F_SETFL, ours & ~O_NONBLOCK & ~O_ASYNC);
    return o;
}

Outcome Job::openat2_call(int dirfd, const std::string& path, std::uint64_t how_addr, std::uint64_t size) {
    if (size < sizeof(open_how)) return {EINVAL};
    open_how how{};
    if (!read_bytes(how_addr, &how, sizeof how)) return {EFAULT};
    if (how.resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT)) {
        // Scoped to the caller's own directory: the kernel does the walk
        // from our pinned copy of it, which cannot leave it.
        Fd base(::open((dirfd == AT_FDCWD ? proc("/cwd") : proc("/fd/" + std::to_string(dirfd))).c_str(),
                       O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!base) return {EBADF};
        const bool writes = how.flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC);
        open_how pin = how;
        pin.flags = O_PATH | O_CLOEXEC | (how.flags & O_NOFOLLOW);
        pin.mode = 0;
        long p = ::syscall(SYS_openat2, base.fd, path.c_str(), &pin, sizeof pin);
        if (p < 0 && !(errno == ENOENT && (how.flags & O_CREAT))) return {errno};
        if (p >= 0) {
            Fd pinned(static_cast<int>(p));
            std::string gp = fd_path(pinned.fd);
            if (writes && !allowed(gp, WriteOp::write)) return {EACCES};
            if ((how.flags & O_CREAT) && (how.flags & O_EXCL)) return {EEXIST};
            Outcome o;
            o.cloexec = how.flags & O_CLOEXEC;
            std::string again = "/proc/self/fd/" + std::to_string(pinned.fd);
            o.fd = ::open(again.c_str(), static_cast<int>(how.flags & ~O_CREAT & ~O_EXCL) | O_CLOEXEC | O_NOCTTY);
            return o.fd < 0 ? Outcome{errno} : o;
        }
        // Creating: the parent, scoped the same way.
        auto cut = path.rfind('/');
        std::string parent = cut == std::string::npos ? "." : (cut == 0 ? "/" : path.substr(0, cut));
        std::string name = cut == std::string::npos ? path : path.substr(cut + 1);
        open_how ph = how;
        ph.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        ph.mode = 0;
        long d = ::syscall(SYS_openat2, base.fd, parent.c_str(), &ph, sizeof ph);
        if (d < 0) return {errno};
        Fd dir(static_cast<int>(d));
        std::string dp = fd_path(dir.fd);
        if (!allowed(dp == "/" ? "/" + name : dp + "/" + name, WriteOp::create)) return {EACCES};
        if (!take_umask()) return {ESRCH};
        Outcome o;
        o.cloexec = how.flags & O_CLOEXEC;
        o.fd = ::openat(dir.fd, name.c_str(), static_cast<int>(how.flags) | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                        static_cast<mode_t>(how.mode));
        return o.fd < 0 ? Outcome{errno} : o;
    }
    if (how.resolve & ~(RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_CACHED))
        return {EINVAL};
    if (how.resolve & RESOLVE_NO_SYMLINKS) how.flags |= O_NOFOLLOW;
    // RESOLVE_NO_XDEV and friends only narrow what the kernel would
    // accept; the supervisor's walk is what decides here.
    return open_call(dirfd, path, how.flags, static_cast<mode_t>(how.mode));
}

Outcome Job::make_call(int dirfd, const std::string& path, bool dir, mode_t mode, dev_t dev) {
    auto r = resolve(dirfd, path, false);
    if (auto* e = std::get_if<int>(&r)) return {*e};
    Split& s = std::get<Split>(r);
    if (!allowed(join(s), dir ? WriteOp::create_dir : WriteOp::create)) return {EACCES};
    if (!take_umask()) return {ESRCH};
    return result(dir ? ::mkdirat(s.dir.fd, s.name.c_str(), mode) : ::mknodat(s.dir.fd, s.name.c_str(), mode, dev));
}

Outcome Job::unlink_call(int dirfd, const std::string& path, int flags) {
    auto r = resolve(dirfd, path, false);
    if (auto* e = std::get_if<int>(&r)) return {*e};
    Split& s = std::get<Split>(r);
    if (!allowed(join(s), WriteOp::remove)) return {EACCES};
    return result(::unlinkat(s.dir.fd, s.name.c_str(), flags));
}

Outcome Job::rename_call(int od, const std::string& op, int nd, const std::string& np, unsigned flags) {
    auto a = resolve(od, op, false);
    if (auto* e = std::get_if<int>(&a)) return {*e};
    auto b = resolve(nd, np, false);
    if (auto* e = std::get_if<int>(&b)) return {*e};
    Split &s = std::get<Split>(a), &t = std::get<Split>(b);
    if (!allowed(join(s), WriteOp::rename_from) || !allowed(join(t), WriteOp::rename_to)) return {EACCES};
    if ((flags & RENAME_EXCHANGE) && (!allowed(join(t), WriteOp::rename_from) || !allowed(join(s), WriteOp::rename_to)))
        return {EACCES};
    return result(::syscall(SYS_renameat2, s.dir.fd, s.name.c_str(), t.dir.fd, t.name.c_str(), flags));
}

Outcome Job::link_call(int od, const std::string& op, int nd, const std::string& np, int flags) {
    if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) return {EINVAL};
    Fd pin;
    std::string from;
    if ((flags & AT_EMPTY_PATH) && op.empty()) {
        pin = Fd(::open(proc("/fd/" + std::to_string(od)).c_str(), O_PATH | O_CLOEXEC));
        if (!pin) return {EBADF};
        from = fd_path(pin.fd);
    } else {
        auto a = resolve(od, op, flags & AT_SYMLINK_FOLLOW);
        if (auto* e = std::get_if<int>(&a)) return {*e};
        Split& s = std::get<Split>(a);
        pin = Fd(::openat(s.dir.fd, s.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        if (!pin) return {errno};
        from = join(s);
    }
    auto b = resolve(nd, np, false);
    if (auto* e = std::get_if<int>(&b)) return {*e};
    Split& t = std::get<Split>(b);
    if (!allowed(from, WriteOp::link_from) || !allowed(join(t), WriteOp::create)) return {EACCES};
    std::string src = "/proc/self/fd/" + std::to_string(pin.fd);
    return result(::linkat(AT_FDCWD, src.c_str(), t.dir.fd, t.name.c_str(), AT_SYMLINK_FOLLOW));
}

Outcome Job::symlink_call(const std::string& target, int nd, const std::string& np) {
    auto b = resolve(nd, np, false);
    if (auto* e = std::get_if<int>(&b)) return {*e};
    Split& t = std::get<Split>(b);
    if (!allowed(join(t), WriteOp::create)) return {EACCES};
    return result(::symlinkat(target.c_str(), t.dir.fd, t.name.c_str()));
}

// truncate and chmod: the object, pinned, then changed through the pin.
Outcome Job::object_call(int dirfd, const std::string& path, bool follow, bool is_chmod, std::uint64_t arg) {
    auto r = resolve(dirfd, path, follow);
    if (auto* e = std::get_if<int>(&r)) return {*e};
    Split& s = std::get<Split>(r);
    // Symlinks were followed by resolve(); only a /proc magic link is
    // followed here (to the object it stands for).
    const bool magic = follow && on_procfs(s.dir.fd);
    Fd pin(::openat(s.dir.fd, s.name.c_str(), O_PATH | O_CLOEXEC | (magic ? 0 : O_NOFOLLOW)));
    if (!pin) return {errno};
    struct stat sb {};
    if (::fstat(pin.fd, &sb) != 0) return {errno};
    if (S_ISLNK(sb.st_mode)) return {is_chmod ? EOPNOTSUPP : ELOOP};
    std::string p = fd_path(pin.fd);
    if (!allowed(p.empty() || p[0] != '/' ? join(s) : p, WriteOp::write)) return {EACCES};
    std::string via = "/proc/self/fd/" + std::to_string(pin.fd);
    if (is_chmod) return result(::chmod(via.c_str(), static_cast<mode_t>(arg)));
    return result(::truncate(via.c_str(), static_cast<off_t>(arg)));
}

// fchmod: the caller's descriptor, pinned, judged by what it names now,
// then changed through the pin. A descriptor opened with O_PATH cannot
// be changed (EBADF), as without the supervisor.
Outcome Job::fd_chmod_call(int fd, mode_t mode) {
    Fd pin(::open(proc("/fd/" + std::to_string(fd)).c_str(), O_PATH | O_CLOEXEC));
    if (!pin) return {EBADF};
    {
        std::ifstream info(proc("/fdinfo/" + std::to_string(fd)));
        std::string key;
        unsigned long flags = 0;
        while (info >> key)
            if (key == "flags:" && (info >> std::oct >> flags)) break;
        if (flags & O_PATH) return {EBADF};
    }
    std::string p = fd_path(pin.fd);
    if (!p.empty() && p[0] == '/' && !allowed(p, WriteOp::write)) return {EACCES};
    std::string via = "/proc/self/fd/" + std::to_string(pin.fd);
    return result(::chmod(via.c_str(), mode));
}

Outcome Job::serve() {
    const auto* a = req.data.args;
    auto str = [&](int i) { return read_string(a[i]); };
    auto dfd = [&](int i) { return static_cast<int>(static_cast<std::int32_t>(a[i])); };
    std::optional<std::string> p1, p2;
    auto need = [&](std::optional<std::string>& out, int i) {
        out = str(i);
        return out.has_value();
    };
    switch (call) {
        case Call::open: if (!need(p1, 0)) return {EFAULT}; break;
        case Call::creat: case Call::mkdir: case Call::mknod: case Call::unlink: case Call::rmdir:
        case Call::truncate: case Call::chmod:
            if (!need(p1, 0)) return {EFAULT};
            break;
        case Call::openat: case Call::openat2: case Call::mkdirat: case Call::mknodat: case Call::unlinkat:
        case Call::fchmodat:
            if (!need(p1, 1)) return {EFAULT};
            break;
        case Call::rename: case Call::link: case Call::symlink:
            if (!need(p1, 0) || !need(p2, 1)) return {EFAULT};
            break;
        case Call::renameat: case Call::renameat2: case Call::linkat:
            if (!need(p1, 1) || !need(p2, 3)) return {EFAULT};
            break;
        case Call::symlinkat:
            if (!need(p1, 0) || !need(p2, 2)) return {EFAULT};
            break;
        case Call::fchmod: break;  // a descriptor, no path
    }
    // Everything the call will act on has been copied: from here on the
    // caller's memory is not read again.
    if (!valid()) return {ESRCH};
    first_path = p1 ? *p1 : "descriptor " + std::to_string(dfd(0));
    struct stat ns {};
    if (::stat(proc("/ns/mnt").c_str(), &ns) != 0) return {ESRCH};
    if (ns.st_ino != st.mnt_ns || ns.st_dev != st.mnt_ns_dev) {
        st.refused++;
        if (st.report)
            st.report({{"syscall", name_of(call)}, {"path", first_path}, {"op", "write"},
                       {"rule", "a mount namespace of its own"}, {"source", "write supervisor"}, {"errno", "EPERM"}});
        return {EPERM};
    }
    root = Fd(::open(proc("/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) return {ESRCH};
    switch (call) {
        case Call::open: return open_call(AT_FDCWD, *p1, a[1], static_cast<mode_t>(a[2]));
        case Call::openat: return open_call(dfd(0), *p1, a[2], static_cast<mode_t>(a[3]));
        case Call::openat2: return openat2_call(dfd(0), *p1, a[2], a[3]);
        case Call::creat: return open_call(AT_FDCWD, *p1, O_CREAT | O_WRONLY | O_TRUNC, static_cast<mode_t>(a[1]));
        case Call::mkdir: return make_call(AT_FDCWD, *p1, true, static_cast<mode_t>(a[1]), 0);
        case Call::mkdirat: return make_call(dfd(0), *p1, true, static_cast<mode_t>(a[2]), 0);
        case Call::mknod: return make_call(AT_FDCWD, *p1, false, static_cast<mode_t>(a[1]), static_cast<dev_t>(a[2]));
        case Call::mknodat: return make_call(dfd(0), *p1, false, static_cast<mode_t>(a[2]), static_cast<dev_t>(a[3]));
        case Call::rename: return rename_call(AT_FDCWD, *p1, AT_FDCWD, *p2, 0);
        case Call::renameat: return rename_call(dfd(0), *p1, dfd(2), *p2, 0);
        case Call::renameat2: return rename_call(dfd(0), *p1, dfd(2), *p2, static_cast<unsigned>(a[4]));
        case Call::link: return link_call(AT_FDCWD, *p1, AT_FDCWD, *p2, 0);
        case Call::linkat: return link_call(dfd(0), *p1, dfd(2), *p2, static_cast<int>(a[4]));
        case Call::symlink: return symlink_call(*p1, AT_FDCWD, *p2);
        case Call::symlinkat: return symlink_call(*p1, dfd(1), *p2);
        case Call::unlink: return unlink_call(AT_FDCWD, *p1, 0);
        case Call::unlinkat: return unlink_call(dfd(0), *p1, static_cast<int>(a[2]));
        case Call::rmdir: return unlink_call(AT_FDCWD, *p1, AT_REMOVEDIR);
        case Call::truncate: return object_call(AT_FDCWD, *p1, true, false, a[1]);
        case Call::chmod: return object_call(AT_FDCWD, *p1, true, true, a[1]);
        case Call::fchmodat: return object_call(dfd(0), *p1, true, true, a[2]);
        case Call::fchmod: return fd_chmod_call(dfd(0), static_cast<mode_t>(a[1]));
    }
    return {ENOSYS};
}

}  // namespace cc::sandbox::supervisor_detail

namespace cc::sandbox {

namespace {

using namespace supervisor_detail;

// Linux 6.6's SECCOMP_IOCTL_NOTIF_SET_FLAGS and its one flag; Debian 12's
// kernel headers predate them.
constexpr unsigned long ioctl_notif_set_flags = _IOW('!', 4, std::uint64_t);
constexpr std::uint64_t user_notif_fd_sync_wake_up = 1;


void answer(State& st, const seccomp_notif& req, const Outcome& o) {
    if (o.err == 0 && o.fd >= 0) {
        seccomp_notif_addfd add{};
        add.id = req.id;
        add.flags = SECCOMP_ADDFD_FLAG_SEND;
        add.srcfd = static_cast<std::uint32_t>(o.fd);
        add.newfd_flags = o.cloexec ? O_CLOEXEC : 0;
        if (::ioctl(st.listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0) {
            st.failed++;
            ::close(o.fd);
            if (errno == ENOENT) return;  // the caller is gone
            // Never leave a caller waiting: the call fails instead.
            seccomp_notif_resp resp{};
            resp.id = req.id;
            resp.error = -EIO;
            ::ioctl(st.listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
            return;
        }
        ::close(o.fd);
        return;
    }
    seccomp_notif_resp resp{};
    resp.id = req.id;
    resp.error = o.err ? -o.err : 0;
    resp.val = o.err ? 0 : o.val;
    if (::ioctl(st.listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0) st.failed++;
}

bool receive_listener(State& st) {
    for (;;) {
        pollfd p[2] = {{st.sock, POLLIN, 0}, {st.stop_fd, POLLIN, 0}};
        if (::poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if (p[1].revents) return false;
        char byte;
        iovec iov{&byte, 1};
        alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(ucred))] = {};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctl;
        msg.msg_controllen = sizeof ctl;
        ssize_t n = ::recvmsg(st.sock, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        pid_t sender = -1;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET) continue;
            if (c->cmsg_type == SCM_RIGHTS && st.listener < 0) std::memcpy(&st.listener, CMSG_DATA(c), sizeof(int));
            if (c->cmsg_type == SCM_CREDENTIALS) {
                ucred u{};
                std::memcpy(&u, CMSG_DATA(c), sizeof u);
                sender = u.pid;
            }
        }
        ::close(std::exchange(st.sock, -1));
        struct stat ns {};
        if (st.listener < 0 || sender <= 0 ||
            ::stat(("/proc/" + std::to_string(sender) + "/ns/mnt").c_str(), &ns) != 0)
            return false;  // no listener we can trust: it is closed, every call fails
        st.mnt_ns = ns.st_ino;
        st.mnt_ns_dev = ns.st_dev;
        return true;
    }
}

void serve_loop(std::shared_ptr<State> sp) {
    int one = 1;
    ::setsockopt(sp->sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
    State& st = *sp;
    // This thread's own cwd, root and umask (set per call to the caller's),
    // and, run by root, the sandbox's identity for this thread alone.
    if (::unshare(CLONE_FS) != 0) return;
    if (st.opt.drop) {
        if (::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setresgid, st.opt.gid, st.opt.gid, st.opt.gid) != 0 ||
            ::syscall(SYS_setresuid, st.opt.uid, st.opt.uid, st.opt.uid) != 0)
            return;  // the listener is never taken: every notified call fails
    }
    ::umask(st.umask_now);
    if (!receive_listener(st)) return;
    // Each notified call is a hand-off from the caller to this thread and
    // back; woken on the same CPU, neither side waits for an inter-processor
    // wake-up (the difference is largest in a virtual machine). Older
    // kernels refuse the flag (EINVAL or ENOTTY): calls are served the
    // same, only the hand-off is slower, and the exit event says which.
    std::uint64_t sync = user_notif_fd_sync_wake_up;
    st.sync_wake = ::ioctl(st.listener, ioctl_notif_set_flags, sync) == 0;
    std::vector<char> rbuf(sizeof(seccomp_notif) + 256);
    for (;;) {
        pollfd p[2] = {{st.listener, POLLIN, 0}, {st.stop_fd, POLLIN, 0}};
        if (::poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[1].revents) break;
        if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)) break;  // every task of the filter is gone
        if (!(p[0].revents & POLLIN)) continue;
        seccomp_notif req{};
        if (::ioctl(st.listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
            if (errno == EINTR || errno == ENOENT) continue;  // the caller went away before we took it
            break;
        }
        auto it = st.calls.find((std::uint64_t{req.data.arch} << 32) | static_cast<std::uint32_t>(req.data.nr));
        Outcome o;
        if (it == st.calls.end()) {
            o.err = ENOSYS;
        } else {
            Job job{st, req, static_cast<pid_t>(req.pid), it->second, {}, {}};
            // Nothing thrown leaves this thread (it would end cc-wrap and
            // lose the command's status): a call that could not be judged
            // is refused.
            try {
                o = job.serve();
            } catch (...) {
                o = Outcome{};
                o.err = EACCES;
            }
        }
        st.served++;
        if (o.defer_pin >= 0) {
            std::thread([sp, req, o] {
                Outcome r = o;
                std::string again = "/proc/self/fd/" + std::to_string(o.defer_pin);
                r.fd = ::open(again.c_str(), o.defer_flags);
                if (r.fd < 0) r.err = errno;
                ::close(o.defer_pin);
                r.defer_pin = -1;
                answer(*sp, req, r);
            }).detach();
            continue;
        }
        answer(st, req, o);
    }
}

}  // namespace

WriteSupervisor::WriteSupervisor(WriteRules rules, Options opt, Report report) : st_(std::make_shared<State>()) {
    st_->rules = std::move(rules);
    st_->opt = opt;
    st_->report = std::move(report);
    st_->stop_fd = ::eventfd(0, EFD_CLOEXEC);
}

WriteSupervisor::~WriteSupervisor() { stop(); }

void WriteSupervisor::start(int sock_fd) {
    st_->sock = sock_fd;
    thread_ = std::thread(serve_loop, st_);
}

void WriteSupervisor::stop() {
    if (!thread_.joinable()) return;
    std::uint64_t one = 1;
    ssize_t w = ::write(st_->stop_fd, &one, sizeof one);
    (void)w;
    thread_.join();
}

WriteSupervisor::Stats WriteSupervisor::stats() const {
    return {st_->served, st_->refused, st_->failed, st_->sync_wake};
}

}  // namespace cc::sandbox
