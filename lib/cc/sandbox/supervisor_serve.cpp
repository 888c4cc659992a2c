// The write supervisor's serving thread (supervisor.hpp): receive a call,
// read its arguments once, resolve them in the sandbox's view of the
// filesystem, judge, perform, answer.
//
// Resolution. The caller's root is /proc/TID/root: a directory of the
// sandbox's mount namespace, reachable from cc-wrap's. A path is made
// absolute (the caller's cwd or directory descriptor, read back as the path
// the sandbox sees it at: /proc shows another namespace's paths relative to
// that namespace's root) and its parent is opened with openat2(root, ...,
// RESOLVE_IN_ROOT), which follows symlinks as the kernel would for the
// caller, absolute ones to the sandbox's root, never out of it. The final
// name is then handled by this code: a symlink the call would follow is read
// and resolved again (at most 40 times), and the call is performed on the
// pinned parent with O_NOFOLLOW, so what was judged is what is touched.
//
// /proc/self, /proc/thread-self and /dev/{fd,stdin,stdout,stderr} name the
// caller, not the supervisor: they are rewritten to the caller's PID in the
// sandbox. A descriptor reached through /proc/PID/fd/N is opened as an
// object (O_PATH), judged by the path it has, and reopened. The caller's own
// /proc/PID/cwd and /proc/PID/root stand for the paths they name.

#include "cc/sandbox/supervisor.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
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

namespace cc::sandbox {

namespace {

enum class Call {
    open, openat, openat2, creat, mkdir, mkdirat, mknod, mknodat, rename, renameat, renameat2, link, linkat, symlink,
    symlinkat, unlink, unlinkat, rmdir, truncate, chmod, fchmodat, fchmod
};

const std::pair<const char*, Call> k_names[] = {
    {"open", Call::open},         {"openat", Call::openat},       {"openat2", Call::openat2},
    {"creat", Call::creat},       {"mkdir", Call::mkdir},         {"mkdirat", Call::mkdirat},
    {"mknod", Call::mknod},       {"mknodat", Call::mknodat},     {"rename", Call::rename},
    {"renameat", Call::renameat}, {"renameat2", Call::renameat2}, {"link", Call::link},
    {"linkat", Call::linkat},     {"symlink", Call::symlink},     {"symlinkat", Call::symlinkat},
    {"unlink", Call::unlink},     {"unlinkat", Call::unlinkat},   {"rmdir", Call::rmdir},
    {"truncate", Call::truncate}, {"chmod", Call::chmod},         {"fchmodat", Call::fchmodat},
    {"fchmod", Call::fchmod},
};

const char* name_of(Call c) {
    for (const auto& [n, k] : k_names)
        if (k == c) return n;
    return "?";
}

// (audit arch, number) -> call, for the ABIs the filter covers.
std::unordered_map<std::uint64_t, Call> call_table() {
    std::unordered_map<std::uint64_t, Call> t;
    std::vector<std::uint32_t> arches = {seccomp_arch_native()};
#if defined(__x86_64__)
    arches.push_back(SCMP_ARCH_X86);
    arches.push_back(SCMP_ARCH_X32);
#endif
    for (auto a : arches)
        for (const auto& [n, k] : k_names) {
            int nr = seccomp_syscall_resolve_name_arch(a, n);
            if (nr >= 0) t[(std::uint64_t{a} << 32) | static_cast<std::uint32_t>(nr)] = k;
        }
    return t;
}

struct Fd {
    int fd = -1;
    Fd() = default;
    explicit Fd(int f) : fd(f) {}
    Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
        std::swap(fd, o.fd);
        return *this;
    }
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
    explicit operator bool() const { return fd >= 0; }
};

std::string fd_path(int fd) {
    char buf[PATH_MAX + 1];
    std::string link = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

bool on_procfs(int fd) {
    struct statfs s {};
    return ::fstatfs(fd, &s) == 0 && s.f_type == PROC_SUPER_MAGIC;
}

// An errno result, or a value.
struct Outcome {
    int err = 0;         // >0: the call fails with this errno
    long long val = 0;   // else its return value
    int fd = -1;         // else a descriptor to inject (ours, closed after)
    bool cloexec = false;
    // A FIFO with no reader yet: the open blocks, so it is finished on a
    // thread of its own (this pinned object, reopened with these flags).
    int defer_pin = -1;
    int defer_flags = 0;
};

}  // namespace

struct WriteSupervisor::State {
    WriteRules rules;
    Options opt;
    Report report;
    int listener = -1;
    int stop_fd = -1;
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
    std::unordered_map<std::uint64_t, Call> calls = call_table();
    mode_t umask_now = 022;
    ~State() {
        for (int f : {listener, stop_fd, sock})
            if (f >= 0) ::close(f);
    }
};

namespace {

using State = WriteSupervisor::State;

// Linux 6.6's SECCOMP_IOCTL_NOTIF_SET_FLAGS and its one flag; Debian 12's
// kernel headers predate them.
constexpr unsigned long ioctl_notif_set_flags = _IOW('!', 4, std::uint64_t);
constexpr std::uint64_t user_notif_fd_sync_wake_up = 1;

// One notified call being served.
struct Job {
    State& st;
    const seccomp_notif& req;
    pid_t tid;
    Call call;
    Fd root;
    std::string first_path;  // for the violation
    int nspid = -1, nstgid = -1;

    std::optional<std::string> read_string(std::uint64_t addr) {
        if (addr == 0) return std::nullopt;
        std::string out;
        const long page = 4096;
        while (out.size() < PATH_MAX) {
            std::size_t chunk = static_cast<std::size_t>(page - static_cast<long>(addr % page));
            char buf[4096];
            iovec local{buf, chunk}, remote{reinterpret_cast<void*>(addr), chunk};
            ssize_t n = ::process_vm_readv(tid, &local, 1, &remote, 1, 0);
            if (n <= 0) return std::nullopt;
            std::string_view got(buf, static_cast<std::size_t>(n));
            auto z = got.find('\0');
            if (z != std::string_view::npos) {
                out.append(got.substr(0, z));
                return out;
            }
            out.append(got);
            addr += static_cast<std::uint64_t>(n);
        }
        return std::nullopt;  // ENAMETOOLONG
    }
    bool read_bytes(std::uint64_t addr, void* dst, std::size_t len) {
        iovec local{dst, len}, remote{reinterpret_cast<void*>(addr), len};
        return ::process_vm_readv(tid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
    }
    // The notification still belongs to the task we read from (its TID was
    // not reused in between).
    bool valid() { return ::ioctl(st.listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) == 0; }

    std::string proc(const std::string& rest) const { return "/proc/" + std::to_string(tid) + rest; }

    // The caller's /proc/TID/status (its first 4 KiB: Umask, NSpid, NStgid).
    std::string status() {
        std::string out;
        int fd = ::open(proc("/status").c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return out;
        char buf[4096];
        ssize_t n = ::read(fd, buf, sizeof buf);
        ::close(fd);
        if (n > 0) out.assign(buf, static_cast<std::size_t>(n));
        return out;
    }

    bool ns_ids() {
        if (nspid > 0) return true;
        const std::string text = status();
        std::string_view s(text);
        if (s.empty()) return false;
        auto last = [&](std::string_view key) -> int {
            auto p = s.find(key);
            if (p == std::string_view::npos) return -1;
            auto e = s.find('\n', p);
            auto line = s.substr(p + key.size(), e - p - key.size());
            auto sp = line.find_last_of(" \t");
            return std::atoi(std::string(sp == std::string_view::npos ? line : line.substr(sp + 1)).c_str());
        };
        nspid = last("NSpid:");
        nstgid = last("NStgid:");
        return nspid > 0 && nstgid > 0;
    }

    // The caller's umask, for calls that create (the supervisor's thread has
    // its own, set to match).
    bool take_umask() {
        const std::string text = status();
        std::string_view s(text);
        if (s.empty()) return false;
        auto p = s.find("Umask:");
        if (p == std::string_view::npos) return false;
        mode_t m = static_cast<mode_t>(std::strtol(std::string(s.substr(p + 6, 8)).c_str(), nullptr, 8));
        if (m != st.umask_now) {
            ::umask(m);
            st.umask_now = m;
        }
        return true;
    }

    // The caller's paths that name the caller itself, rewritten.
    std::string rewrite_self(std::string p) {
        auto starts = [&](std::string_view pre) {
            return p.compare(0, pre.size(), pre) == 0 && (p.size() == pre.size() || p[pre.size()] == '/');
        };
        if (!(starts("/proc/self") || starts("/proc/thread-self") || starts("/dev/fd") || starts("/dev/stdin") ||
              starts("/dev/stdout") || starts("/dev/stderr")))
            return p;
        if (!ns_ids()) return p;
        std::string me = "/proc/" + std::to_string(nstgid);
        if (starts("/proc/self")) return me + p.substr(10);
        if (starts("/proc/thread-self")) return me + "/task/" + std::to_string(nspid) + p.substr(17);
        if (starts("/dev/fd")) return me + "/fd" + p.substr(7);
        if (starts("/dev/stdin")) return me + "/fd/0" + p.substr(10);
        if (starts("/dev/stdout")) return me + "/fd/1" + p.substr(11);
        return me + "/fd/2" + p.substr(11);
    }

    // The caller's own working directory and root spelled through procfs
    // (/proc/self/cwd/x, /proc/PID/root/x with its own PID): magic links,
    // which the parent's resolution refuses (RESOLVE_NO_MAGICLINKS), so they
    // are rewritten to the paths they name. Another process's are not (ELOOP).
    std::optional<std::variant<std::string, int>> own_dirs(const std::string& p) {
        if (p.compare(0, 6, "/proc/") != 0 || !ns_ids()) return std::nullopt;
        const std::string tgid = "/proc/" + std::to_string(nstgid);
        for (const std::string& me : {tgid, tgid + "/task/" + std::to_string(nspid), "/proc/" + std::to_string(nspid)}) {
            for (const std::string which : {"/cwd", "/root"}) {
                const std::string pre = me + which;
                if (p.compare(0, pre.size(), pre) != 0 || (p.size() != pre.size() && p[pre.size()] != '/')) continue;
                std::string rest = p.substr(pre.size());  // "" or "/..."
                while (!rest.empty() && rest[0] == '/') rest.erase(0, 1);
                if (which == "/root") return std::variant<std::string, int>("/" + rest);
                return absolute(AT_FDCWD, rest.empty() ? "." : rest);
            }
        }
        return std::nullopt;
    }

    // The absolute guest path of `path` relative to directory fd `dirfd` of
    // the caller (AT_FDCWD: its cwd). Errno on failure.
    std::variant<std::string, int> absolute(int dirfd, const std::string& path) {
        if (path.empty()) return ENOENT;
        if (path[0] == '/') {
            if (auto own = own_dirs(rewrite_self(path))) return *own;
            return path;
        }
        std::string link = dirfd == AT_FDCWD ? proc("/cwd") : proc("/fd/" + std::to_string(dirfd));
        char buf[PATH_MAX + 1];
        ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
        if (n <= 0) return EBADF;
        std::string base(buf, static_cast<std::size_t>(n));
        if (base.empty() || base[0] != '/') return ENOTDIR;
        if (base.size() > 10 && base.compare(base.size() - 10, 10, " (deleted)") == 0) return ENOENT;
        return base == "/" ? "/" + path : base + "/" + path;
    }

    // Parent directory (pinned) and final name of an absolute guest path.
    struct Split {
        Fd dir;
        std::string dir_path;  // guest path of dir, as the kernel names it now
        std::string name;      // one component, or "." for the directory itself
        bool slash = false;    // the path ended in '/'
    };
    std::variant<Split, int> split(std::string abs) {
        abs = rewrite_self(std::move(abs));
        Split s;
        while (abs.size() > 1 && abs.back() == '/') {
            abs.pop_back();
            s.slash = true;
        }
        auto cut = abs.rfind('/');
        std::string parent = cut == 0 ? "/" : abs.substr(0, cut);
        s.name = abs.substr(cut + 1);
        if (s.name.empty() || s.name == "." || s.name == "..") {
            parent = abs;
            s.name = ".";
        }
        if (s.name.size() > NAME_MAX) return ENAMETOOLONG;
        open_how how{};
        how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        long fd = ::syscall(SYS_openat2, root.fd, parent.c_str(), &how, sizeof how);
        if (fd < 0) return errno;
        s.dir = Fd(static_cast<int>(fd));
        s.dir_path = fd_path(s.dir.fd);
        if (s.dir_path.empty() || s.dir_path[0] != '/') return ENOENT;
        return s;
    }
    static std::string join(const Split& s) {
        if (s.name == ".") return s.dir_path;
        return s.dir_path == "/" ? "/" + s.name : s.dir_path + "/" + s.name;
    }

    // Resolves to a pinned parent and a final name that is not a symlink the
    // call would follow (follow = false: the name itself).
    std::variant<Split, int> resolve(int dirfd, const std::string& path, bool follow) {
        auto a = absolute(dirfd, path);
        if (auto* e = std::get_if<int>(&a)) return *e;
        std::string abs = std::get<std::string>(a);
        for (int hops = 0; hops <= 40; ++hops) {
            auto r = split(abs);
            if (std::holds_alternative<int>(r) || !follow) return r;
            Split& s = std::get<Split>(r);
            if (s.name == "." || on_procfs(s.dir.fd)) return r;
            char buf[PATH_MAX + 1];
            ssize_t n = ::readlinkat(s.dir.fd, s.name.c_str(), buf, sizeof buf - 1);
            if (n < 0) return r;  // not a symlink (or not there): this is the final name
            std::string target(buf, static_cast<std::size_t>(n));
            abs = target[0] == '/' ? target : (s.dir_path == "/" ? "/" : s.dir_path + "/") + target;
            if (s.slash) abs += "/";
        }
        return ELOOP;
    }

    // Judged; a refusal is reported and returned as EACCES.
    bool allowed(const std::string& path, WriteOp op) {
        auto v = judge(st.rules, path, op);
        if (v.allowed) return true;
        st.refused++;
        if (st.report) {
            nlohmann::json j = {{"syscall", name_of(call)}, {"path", path}, {"op", to_string(op)},
                                {"rule", v.rule},         {"source", v.source}, {"errno", "EACCES"}};
            if (ns_ids()) j["pid"] = nspid;
            st.report(std::move(j));
        }
        return false;
    }

    // --- the calls --------------------------------------------------------
    Outcome open_call(int dirfd, const std::string& path, std::uint64_t flags, mode_t mode) {
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

    Outcome openat2_call(int dirfd, const std::string& path, std::uint64_t how_addr, std::uint64_t size) {
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

    Outcome result(long rc) { return rc < 0 ? Outcome{errno} : Outcome{0, rc}; }

    Outcome make_call(int dirfd, const std::string& path, bool dir, mode_t mode, dev_t dev) {
        auto r = resolve(dirfd, path, false);
        if (auto* e = std::get_if<int>(&r)) return {*e};
        Split& s = std::get<Split>(r);
        if (!allowed(join(s), dir ? WriteOp::create_dir : WriteOp::create)) return {EACCES};
        if (!take_umask()) return {ESRCH};
        return result(dir ? ::mkdirat(s.dir.fd, s.name.c_str(), mode) : ::mknodat(s.dir.fd, s.name.c_str(), mode, dev));
    }

    Outcome unlink_call(int dirfd, const std::string& path, int flags) {
        auto r = resolve(dirfd, path, false);
        if (auto* e = std::get_if<int>(&r)) return {*e};
        Split& s = std::get<Split>(r);
        if (!allowed(join(s), WriteOp::remove)) return {EACCES};
        return result(::unlinkat(s.dir.fd, s.name.c_str(), flags));
    }

    Outcome rename_call(int od, const std::string& op, int nd, const std::string& np, unsigned flags) {
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

    Outcome link_call(int od, const std::string& op, int nd, const std::string& np, int flags) {
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

    Outcome symlink_call(const std::string& target, int nd, const std::string& np) {
        auto b = resolve(nd, np, false);
        if (auto* e = std::get_if<int>(&b)) return {*e};
        Split& t = std::get<Split>(b);
        if (!allowed(join(t), WriteOp::create)) return {EACCES};
        return result(::symlinkat(target.c_str(), t.dir.fd, t.name.c_str()));
    }

    // truncate and chmod: the object, pinned, then changed through the pin.
    Outcome object_call(int dirfd, const std::string& path, bool follow, bool is_chmod, std::uint64_t arg) {
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
    Outcome fd_chmod_call(int fd, mode_t mode) {
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

    Outcome serve() {
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
};

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
            o = job.serve();
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
