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
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <variant>

namespace cc::sandbox::supervisor_detail {

namespace {

// The path to judge an object by, from the kernel's name for it: a file
// that was unlinked is judged by the name it had; an object with no path
// (a pipe, a socket) by its pseudo-name, which no rule names. nullopt when
// the kernel gives no name at all: never judged by a substitute, refused.
std::optional<std::string> judged_path(int pin) {
    std::string p = fd_path(pin);
    if (p.empty()) return std::nullopt;
    constexpr std::string_view deleted = " (deleted)";
    if (p[0] == '/' && p.size() > deleted.size() && p.compare(p.size() - deleted.size(), deleted.size(), deleted) == 0)
        p.resize(p.size() - deleted.size());
    return p;
}

// The hand's answer: its errno or value, the descriptor it sends with it
// (an open's), or a socket a deferred answer comes on later. false when
// the hand is gone or the answer is not one.
bool receive_answer(int sock, Outcome& o) {
    cc_hand_ans ans{};
    iovec iov{&ans, sizeof ans};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(ucred))] = {};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    ssize_t n;
    while ((n = ::recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    int fd = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int)))
            std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
    if (n != static_cast<ssize_t>(sizeof ans) || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        if (fd >= 0) ::close(fd);
        return false;
    }
    o = Outcome{};
    if (ans.err != 0) {
        if (fd >= 0) ::close(fd);
        o.err = ans.err;
        return true;
    }
    if (ans.deferred) {
        if (fd < 0) return false;
        o.defer_sock = fd;
        return true;
    }
    o.val = ans.val;
    o.fd = fd;
    return true;
}

}  // namespace

// How long the serving thread asks again for the hand's answer before it
// sleeps (the hand's own wait for the next request is CC_HAND_SPIN_NS). A
// create on a disk filesystem takes the hand 100-300 us; waking a thread
// that slept costs tens of microseconds more (most in a virtual machine,
// where an idle CPU is halted). So the thread asks for up to 1 ms: at most
// that much CPU per call, spent while the caller is stopped anyway.
constexpr std::chrono::microseconds k_answer_spin{1000};

// The hand (hand_proto.h): one request, one answer, over the socket the
// listener came on. The serving thread is the only one that asks.
Outcome Job::hand(cc_hand_req q, const std::string& name1, const std::string& name2, int dir1, int dir2,
                  const std::string& data) {
    if (name1.size() > CC_HAND_MAX_NAME || name2.size() > CC_HAND_MAX_NAME) return {ENAMETOOLONG};
    if (data.size() > CC_HAND_MAX_DATA) return {E2BIG};
    q.umask = umask;
    q.len1 = static_cast<std::uint32_t>(name1.size() + 1);
    q.len2 = static_cast<std::uint32_t>(name2.size() + 1);
    q.len3 = static_cast<std::uint32_t>(data.size());
    std::string msg(reinterpret_cast<const char*>(&q), sizeof q);
    msg.append(name1).push_back('\0');
    msg.append(name2).push_back('\0');
    msg.append(data);
    iovec iov{msg.data(), msg.size()};
    alignas(cmsghdr) char ctl[CMSG_SPACE(2 * sizeof(int))] = {};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    int fds[2] = {dir1, dir2};
    const int nfd = dir1 < 0 ? 0 : dir2 < 0 ? 1 : 2;
    if (nfd > 0) {
        m.msg_control = ctl;
        m.msg_controllen = CMSG_SPACE(static_cast<std::size_t>(nfd) * sizeof(int));
        cmsghdr* c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(static_cast<std::size_t>(nfd) * sizeof(int));
        std::memcpy(CMSG_DATA(c), fds, static_cast<std::size_t>(nfd) * sizeof(int));
    }
    ssize_t n;
    while ((n = ::sendmsg(st.sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    // No hand (it was killed, or never started): nothing is performed.
    if (n != static_cast<ssize_t>(msg.size())) return {EACCES};
    // Waited for with the stop signal: stop() never waits on the hand. The
    // hand's answer usually comes within microseconds: asked again for a
    // moment before sleeping, so it costs no wake-up of this thread.
    const auto spin_until = std::chrono::steady_clock::now() + k_answer_spin;
    for (;;) {
        pollfd p[2] = {{st.sock, POLLIN, 0}, {st.stop_fd, POLLIN, 0}};
        const bool spin = std::chrono::steady_clock::now() < spin_until;
        int pr = ::poll(p, 2, spin ? 0 : -1);
        if (pr == 0) continue;
        if (pr < 0) {
            if (errno == EINTR) continue;
            return {EACCES};
        }
        if (p[1].revents) return {EACCES};
        break;
    }
    Outcome o;
    if (!receive_answer(st.sock, o)) return {EACCES};
    return o;
}

// The calls: each resolved and judged here (lookups only), then performed
// by the hand on the pinned parent.
Outcome Job::open_call(int dirfd, const std::string& path, std::uint64_t flags, mode_t mode) {
    int fl = static_cast<int>(flags);
    bool follow = !(fl & O_NOFOLLOW) && !((fl & O_CREAT) && (fl & O_EXCL));
    auto r = resolve(dirfd, path, follow);
    if (auto* e = std::get_if<int>(&r)) return {*e};
    Split& s = std::get<Split>(r);
    const bool creating = (fl & O_CREAT) || (fl & __O_TMPFILE) == __O_TMPFILE;
    if (creating && !take_umask()) return {ESRCH};
    cc_hand_req q{};
    q.op = CC_HAND_OPEN;
    q.flags = fl;
    q.mode = static_cast<std::uint32_t>(mode);
    Outcome o;
    if (s.name == "." || on_procfs(s.dir.get())) {
        // The object itself: a directory, or what /proc/PID/fd/N refers to.
        // Looked up here to judge what it is; the hand opens it again (a
        // magic link followed with the caller's power, not ours) and must
        // get the same object.
        Fd pin(::openat(s.dir.get(), s.name.c_str(), O_PATH | O_CLOEXEC | (fl & O_NOFOLLOW)));
        if (!pin) return {errno};
        auto p = judged_path(pin.get());
        if (!p || !allowed(*p, WriteOp::write)) return {EACCES};
        struct stat sb {};
        if (::fstat(pin.get(), &sb) != 0) return {errno};
        q.dev = sb.st_dev;
        q.ino = sb.st_ino;
        q.follow = !(fl & O_NOFOLLOW);
        q.flags = fl & ~O_CREAT & ~O_EXCL;
    } else {
        // The final name in the pinned parent, never followed: a symlink put
        // there since it was resolved is not followed now.
        if (!allowed(join(s), (fl & O_CREAT) ? WriteOp::create : WriteOp::write)) return {EACCES};
    }
    o = hand(q, s.name, "", s.dir.get(), -1);
    o.cloexec = fl & O_CLOEXEC;
    return o;
}

Outcome Job::openat2_call(int dirfd, const std::string& path, std::uint64_t how_addr, std::uint64_t size) {
    if (size < sizeof(open_how)) return {EINVAL};
    open_how how{};
    if (!read_bytes(how_addr, &how, sizeof how)) return {EFAULT};
    if (how.resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT)) {
        // Scoped to the caller's own directory: looked up from our pinned
        // copy of it (which cannot leave it), performed by the hand.
        Fd base(::openat(pdir.get(), dir_entry(dirfd).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!base) return {EBADF};
        const bool writes = how.flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC);
        open_how pin = how;
        pin.flags = O_PATH | O_CLOEXEC | (how.flags & O_NOFOLLOW);
        pin.mode = 0;
        long p = ::syscall(SYS_openat2, base.get(), path.c_str(), &pin, sizeof pin);
        if (p < 0 && !(errno == ENOENT && (how.flags & O_CREAT))) return {errno};
        if (p >= 0) {
            Fd pinned(static_cast<int>(p));
            auto gp = judged_path(pinned.get());
            if (!gp || (writes && !allowed(*gp, WriteOp::write))) return {EACCES};
            if ((how.flags & O_CREAT) && (how.flags & O_EXCL)) return {EEXIST};
            struct stat sb {};
            if (::fstat(pinned.get(), &sb) != 0) return {errno};
            cc_hand_req q{};
            q.op = CC_HAND_OPENAT2;
            q.flags = static_cast<int>(how.flags & ~O_CREAT & ~O_EXCL);
            q.arg = how.resolve;
            q.dev = sb.st_dev;
            q.ino = sb.st_ino;
            Outcome o = hand(q, path, "", base.get(), -1);
            o.cloexec = how.flags & O_CLOEXEC;
            return o;
        }
        // Creating: the parent, scoped the same way.
        auto cut = path.rfind('/');
        std::string parent = cut == std::string::npos ? "." : (cut == 0 ? "/" : path.substr(0, cut));
        std::string name = cut == std::string::npos ? path : path.substr(cut + 1);
        open_how ph = how;
        ph.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        ph.mode = 0;
        long d = ::syscall(SYS_openat2, base.get(), parent.c_str(), &ph, sizeof ph);
        if (d < 0) return {errno};
        Fd dir(static_cast<int>(d));
        std::string dp = fd_path(dir.get());
        if (dp.empty() || dp[0] != '/') return {ENOENT};  // a directory with no path: removed
        if (!allowed(dp == "/" ? "/" + name : dp + "/" + name, WriteOp::create)) return {EACCES};
        if (!take_umask()) return {ESRCH};
        cc_hand_req q{};
        q.op = CC_HAND_OPEN;
        q.flags = static_cast<int>(how.flags);
        q.mode = static_cast<std::uint32_t>(how.mode);
        Outcome o = hand(q, name, "", dir.get(), -1);
        o.cloexec = how.flags & O_CLOEXEC;
        return o;
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
    cc_hand_req q{};
    q.op = dir ? CC_HAND_MKDIR : CC_HAND_MKNOD;
    q.mode = static_cast<std::uint32_t>(mode);
    q.arg = dev;
    return hand(q, s.name, "", s.dir.get(), -1);
}

Outcome Job::unlink_call(int dirfd, const std::string& path, int flags) {
    auto r = resolve(dirfd, path, false);
    if (auto* e = std::get_if<int>(&r)) return {*e};
    Split& s = std::get<Split>(r);
    if (!allowed(join(s), WriteOp::remove)) return {EACCES};
    cc_hand_req q{};
    q.op = CC_HAND_UNLINK;
    q.flags = flags;
    return hand(q, s.name, "", s.dir.get(), -1);
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
    cc_hand_req q{};
    q.op = CC_HAND_RENAME;
    q.flags = static_cast<int>(flags);
    return hand(q, s.name, t.name, s.dir.get(), t.dir.get());
}

Outcome Job::link_call(int od, const std::string& op, int nd, const std::string& np, int flags) {
    if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) return {EINVAL};
    auto b = resolve(nd, np, false);
    if (auto* e = std::get_if<int>(&b)) return {*e};
    Split& t = std::get<Split>(b);
    cc_hand_req q{};
    if ((flags & AT_EMPTY_PATH) && op.empty()) {
        // The caller's own descriptor: the object it holds.
        Fd pin(::openat(pdir.get(), dir_entry(od).c_str(), O_PATH | O_CLOEXEC));
        if (!pin) return {EBADF};
        auto from = judged_path(pin.get());
        if (!from || !allowed(*from, WriteOp::link_from) || !allowed(join(t), WriteOp::create)) return {EACCES};
        q.op = CC_HAND_LINK_FD;
        return hand(q, "", t.name, pin.get(), t.dir.get());
    }
    auto a = resolve(od, op, flags & AT_SYMLINK_FOLLOW);
    if (auto* e = std::get_if<int>(&a)) return {*e};
    Split& s = std::get<Split>(a);
    if (!allowed(join(s), WriteOp::link_from) || !allowed(join(t), WriteOp::create)) return {EACCES};
    // Resolved to a final name that is not a symlink: linked as it is.
    q.op = CC_HAND_LINK;
    return hand(q, s.name, t.name, s.dir.get(), t.dir.get());
}

Outcome Job::symlink_call(const std::string& target, int nd, const std::string& np) {
    auto b = resolve(nd, np, false);
    if (auto* e = std::get_if<int>(&b)) return {*e};
    Split& t = std::get<Split>(b);
    if (!allowed(join(t), WriteOp::create)) return {EACCES};
    if (!take_umask()) return {ESRCH};
    cc_hand_req q{};
    q.op = CC_HAND_SYMLINK;
    return hand(q, t.name, target, t.dir.get(), -1);
}

// An object change (truncate, chmod, setxattr, removexattr): the object
// looked up and judged here (a write of it), changed by the hand, which looks
// it up again and must find the same object. `link_errno`: the answer when
// the object is a symlink (0: the hand's own refusal stands).
Outcome Job::change_object(int dirfd, const std::string& path, bool follow, cc_hand_req q, int link_errno,
                           const std::string& name2, const std::string& data) {
    auto r = resolve(dirfd, path, follow);
    if (auto* e = std::get_if<int>(&r)) return {*e};
    Split& s = std::get<Split>(r);
    // Symlinks were followed by resolve(); only a /proc magic link is
    // followed here (to the object it stands for).
    const bool magic = follow && on_procfs(s.dir.get());
    Fd pin(::openat(s.dir.get(), s.name.c_str(), O_PATH | O_CLOEXEC | (magic ? 0 : O_NOFOLLOW)));
    if (!pin) return {errno};
    struct stat sb {};
    if (::fstat(pin.get(), &sb) != 0) return {errno};
    if (link_errno && S_ISLNK(sb.st_mode)) return {link_errno};
    auto p = judged_path(pin.get());
    if (!p || !allowed(*p, WriteOp::write)) return {EACCES};
    q.dev = sb.st_dev;
    q.ino = sb.st_ino;
    q.follow = magic;
    return hand(q, s.name, name2, s.dir.get(), -1, data);
}

Outcome Job::object_call(int dirfd, const std::string& path, bool follow, bool is_chmod, std::uint64_t arg) {
    cc_hand_req q{};
    q.op = is_chmod ? CC_HAND_CHMOD : CC_HAND_TRUNCATE;
    q.arg = arg;
    return change_object(dirfd, path, follow, q, is_chmod ? EOPNOTSUPP : ELOOP);
}

// fchmod: the caller's descriptor, pinned, judged by what it names now,
// then changed by the hand through that pin. A descriptor opened with
// O_PATH cannot be changed (EBADF), as without the supervisor.
std::variant<Fd, int> Job::own_fd(int fd) {
    Fd pin(::openat(pdir.get(), dir_entry(fd).c_str(), O_PATH | O_CLOEXEC));
    if (!pin) return EBADF;
    std::ifstream info(proc("/fdinfo/" + std::to_string(fd)));
    std::string key;
    unsigned long flags = 0;
    while (info >> key)
        if (key == "flags:" && (info >> std::oct >> flags)) break;
    if (flags & O_PATH) return EBADF;
    return pin;
}

// The caller's descriptor for a change of its object (fchmod, fsetxattr):
// pinned, and judged by what it names now as a write of it.
std::variant<Fd, int> Job::writable_own_fd(int fd) {
    auto own = own_fd(fd);
    if (std::holds_alternative<int>(own)) return own;
    auto p = judged_path(std::get<Fd>(own).get());
    if (!p || !allowed(*p, WriteOp::write)) return EACCES;
    return own;
}

Outcome Job::fd_chmod_call(int fd, mode_t mode) {
    auto own = writable_own_fd(fd);
    if (auto* e = std::get_if<int>(&own)) return {*e};
    Fd& pin = std::get<Fd>(own);
    cc_hand_req q{};
    q.op = CC_HAND_FCHMOD;
    q.arg = mode;
    return hand(q, "", "", pin.get(), -1);
}

// setxattr and removexattr of a path: the object looked up and judged here
// (a write of it), changed by the hand, which must find the same object.
// An extended attribute's value, from the caller's memory (none for a removal).
std::variant<std::string, int> Job::xattr_value(std::uint64_t addr, std::uint64_t size, bool remove) {
    if (remove) return std::string();
    if (size > CC_HAND_MAX_DATA) return E2BIG;
    std::string data(size, '\0');
    if (!data.empty() && !read_bytes(addr, data.data(), data.size())) return EFAULT;
    return data;
}

Outcome Job::xattr_call(const std::string& path, bool follow, const std::string& name, std::uint64_t value,
                        std::uint64_t size, int flags, bool remove) {
    auto data = xattr_value(value, size, remove);
    if (auto* e = std::get_if<int>(&data)) return {*e};
    cc_hand_req q{};
    q.op = remove ? CC_HAND_REMOVEXATTR : CC_HAND_SETXATTR;
    q.flags = flags;
    return change_object(AT_FDCWD, path, follow, q, 0, name, std::get<std::string>(data));
}

// fsetxattr and fremovexattr: the caller's descriptor, judged by what it
// names now, changed by the hand through our pin of it.
Outcome Job::fxattr_call(int fd, const std::string& name, std::uint64_t value, std::uint64_t size, int flags,
                         bool remove) {
    auto data = xattr_value(value, size, remove);
    if (auto* e = std::get_if<int>(&data)) return {*e};
    auto own = writable_own_fd(fd);
    if (auto* e = std::get_if<int>(&own)) return {*e};
    Fd& pin = std::get<Fd>(own);
    cc_hand_req q{};
    q.op = remove ? CC_HAND_REMOVEXATTR : CC_HAND_SETXATTR;
    q.flags = flags;
    q.follow = 2;
    return hand(q, "", name, pin.get(), -1, std::get<std::string>(data));
}

// bind: a Unix socket made at a path is a file (created in the judged
// parent, by the hand); any other address is bound by the hand as given,
// since the caller could rewrite it after we read it. The socket is the
// caller's own, taken with pidfd_getfd.
Outcome Job::bind_call(int fd, std::uint64_t addr, std::uint64_t len) {
    if (len < sizeof(sa_family_t) || len > sizeof(sockaddr_storage)) return {EINVAL};
    std::string raw(len, '\0');
    if (!read_bytes(addr, raw.data(), raw.size())) return {EFAULT};
    const std::string text = status();
    auto t = text.find("Tgid:");
    if (t == std::string::npos) return {ESRCH};
    const int tgid = std::atoi(text.c_str() + t + 5);
    Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, tgid, 0)));
    if (!pidfd) return {ESRCH};
    Fd sock(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), fd, 0)));
    if (!sock) return {errno == EBADF ? EBADF : ESRCH};
    if (!valid()) return {ESRCH};  // the descriptor is the caller's, not a reused PID's
    struct stat sb {};
    if (::fstat(sock.get(), &sb) != 0 || !S_ISSOCK(sb.st_mode)) return {ENOTSOCK};
    sa_family_t family = 0;
    std::memcpy(&family, raw.data(), sizeof family);
    const std::size_t head = offsetof(sockaddr_un, sun_path);
    cc_hand_req q{};
    q.op = CC_HAND_BIND;
    if (family != AF_UNIX || raw.size() <= head || raw[head] == '\0')
        return hand(q, "", "", sock.get(), -1, raw);  // not a path (an abstract name, an address)
    std::string path = raw.substr(head);
    path = path.substr(0, path.find('\0'));
    auto r = resolve(AT_FDCWD, path, false);
    if (auto* e = std::get_if<int>(&r)) return {*e};
    Split& s = std::get<Split>(r);
    if (!allowed(join(s), WriteOp::create)) return {EACCES};
    if (!take_umask()) return {ESRCH};
    return hand(q, s.name, "", sock.get(), s.dir.get());
}

Outcome Job::serve() {
    pdir = Fd(::open(proc("").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!pdir) return {ESRCH};
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
        case Call::fchmod: case Call::bind: break;  // a descriptor, no path
        case Call::setxattr: case Call::lsetxattr: case Call::removexattr: case Call::lremovexattr:
            if (!need(p1, 0) || !need(p2, 1)) return {EFAULT};
            break;
        case Call::fsetxattr: case Call::fremovexattr:
            if (!need(p2, 1)) return {EFAULT};
            break;
    }
    // Everything the call will act on has been copied: from here on the
    // caller's memory is not read again.
    if (!valid()) return {ESRCH};
    first_path = p1 ? *p1 : "descriptor " + std::to_string(dfd(0));
    struct stat ns {};
    if (::fstatat(pdir.get(), "ns/mnt", &ns, 0) != 0) return {ESRCH};
    if (ns.st_ino != st.mnt_ns || ns.st_dev != st.mnt_ns_dev) {
        st.refused++;
        if (st.report)
            st.report({{"syscall", name_of(call)}, {"path", first_path}, {"op", "write"},
                       {"rule", "a mount namespace of its own"}, {"source", "write supervisor"}, {"errno", "EPERM"}});
        return {EPERM};
    }
    root = Fd(::openat(pdir.get(), "root", O_PATH | O_DIRECTORY | O_CLOEXEC));
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
        case Call::setxattr: return xattr_call(*p1, true, *p2, a[2], a[3], static_cast<int>(a[4]), false);
        case Call::lsetxattr: return xattr_call(*p1, false, *p2, a[2], a[3], static_cast<int>(a[4]), false);
        case Call::removexattr: return xattr_call(*p1, true, *p2, 0, 0, 0, true);
        case Call::lremovexattr: return xattr_call(*p1, false, *p2, 0, 0, 0, true);
        case Call::fsetxattr: return fxattr_call(dfd(0), *p2, a[2], a[3], static_cast<int>(a[4]), false);
        case Call::fremovexattr: return fxattr_call(dfd(0), *p2, 0, 0, 0, true);
        case Call::bind: return bind_call(dfd(0), a[1], a[2]);
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
        // The socket stays: the hand answers on it from now on (with no
        // credentials attached).
        int zero = 0;
        ::setsockopt(st.sock, SOL_SOCKET, SO_PASSCRED, &zero, sizeof zero);
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
    // This thread's own cwd and root, and, run by root, the sandbox's
    // identity for this thread alone (its lookups are made with it; every
    // call itself is performed by the hand).
    if (::unshare(CLONE_FS) != 0) return;
    if (st.opt.drop) {
        if (::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setresgid, st.opt.gid, st.opt.gid, st.opt.gid) != 0 ||
            ::syscall(SYS_setresuid, st.opt.uid, st.opt.uid, st.opt.uid) != 0)
            return;  // the listener is never taken: every notified call fails
    }
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
            Job job{st, req, static_cast<pid_t>(req.pid), it->second, {}, {}, {}};
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
        if (o.defer_sock >= 0) {
            // A FIFO open waiting for a reader, in the hand's helper: its
            // answer is awaited here, so other calls are served meanwhile.
            std::thread([sp, req, o] {
                Outcome r;
                if (!receive_answer(o.defer_sock, r) || r.defer_sock >= 0) r = Outcome{EACCES};
                ::close(o.defer_sock);
                r.cloexec = o.cloexec;
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
