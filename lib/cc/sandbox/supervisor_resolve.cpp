// The write supervisor (supervisor.hpp): reading a notified call's
// arguments from the caller, resolving its paths, judging them.
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

#include "cc/sandbox/supervisor_job.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace cc::sandbox::supervisor_detail {

namespace {

const std::pair<const char*, Call> k_names[] = {
    {"open", Call::open},         {"openat", Call::openat},       {"openat2", Call::openat2},
    {"creat", Call::creat},       {"mkdir", Call::mkdir},         {"mkdirat", Call::mkdirat},
    {"mknod", Call::mknod},       {"mknodat", Call::mknodat},     {"rename", Call::rename},
    {"renameat", Call::renameat}, {"renameat2", Call::renameat2}, {"link", Call::link},
    {"linkat", Call::linkat},     {"symlink", Call::symlink},     {"symlinkat", Call::symlinkat},
    {"unlink", Call::unlink},     {"unlinkat", Call::unlinkat},   {"rmdir", Call::rmdir},
    {"truncate", Call::truncate}, {"chmod", Call::chmod},         {"fchmodat", Call::fchmodat},
    {"fchmod", Call::fchmod},     {"setxattr", Call::setxattr},   {"lsetxattr", Call::lsetxattr},
    {"fsetxattr", Call::fsetxattr}, {"removexattr", Call::removexattr}, {"lremovexattr", Call::lremovexattr},
    {"fremovexattr", Call::fremovexattr}, {"bind", Call::bind},
};

}  // namespace

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

std::optional<std::string> Job::read_string(std::uint64_t addr) {
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

bool Job::read_bytes(std::uint64_t addr, void* dst, std::size_t len) {
    iovec local{dst, len}, remote{reinterpret_cast<void*>(addr), len};
    return ::process_vm_readv(tid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

// The notification still belongs to the task we read from (its TID was
// not reused in between).
bool Job::valid() { return ::ioctl(st.listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) == 0; }

// The caller's /proc/TID/status (its first 4 KiB: Umask, NSpid, NStgid).
std::string Job::status() {
    std::string out;
    int fd = ::openat(pdir.get(), "status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (n > 0) out.assign(buf, static_cast<std::size_t>(n));
    return out;
}

bool Job::ns_ids() {
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

// The caller's umask, for calls that create (the hand applies it).
bool Job::take_umask() {
    const std::string text = status();
    std::string_view s(text);
    if (s.empty()) return false;
    auto p = s.find("Umask:");
    if (p == std::string_view::npos) return false;
    umask = static_cast<mode_t>(std::strtol(std::string(s.substr(p + 6, 8)).c_str(), nullptr, 8));
    return true;
}

// The caller's paths that name the caller itself, rewritten.
std::string Job::rewrite_self(std::string p) {
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
std::optional<std::variant<std::string, int>> Job::own_dirs(const std::string& p) {
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
std::variant<std::string, int> Job::absolute(int dirfd, const std::string& path) {
    if (path.empty()) return ENOENT;
    if (path[0] == '/') {
        if (auto own = own_dirs(rewrite_self(path))) return *own;
        return path;
    }
    char buf[PATH_MAX + 1];
    ssize_t n = ::readlinkat(pdir.get(), dir_entry(dirfd).c_str(), buf, sizeof buf - 1);
    if (n <= 0) return EBADF;
    std::string base(buf, static_cast<std::size_t>(n));
    if (base.empty() || base[0] != '/') return ENOTDIR;
    if (base.size() > 10 && base.compare(base.size() - 10, 10, " (deleted)") == 0) return ENOENT;
    return base == "/" ? "/" + path : base + "/" + path;
}

std::variant<Job::Split, int> Job::split(std::string abs) {
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
    long fd = ::syscall(SYS_openat2, root.get(), parent.c_str(), &how, sizeof how);
    if (fd < 0) return errno;
    s.dir = Fd(static_cast<int>(fd));
    s.dir_path = fd_path(s.dir.get());
    if (s.dir_path.empty() || s.dir_path[0] != '/') return ENOENT;
    return s;
}

std::string Job::join(const Split& s) {
    if (s.name == ".") return s.dir_path;
    return s.dir_path == "/" ? "/" + s.name : s.dir_path + "/" + s.name;
}

// Resolves to a pinned parent and a final name that is not a symlink the
// call would follow (follow = false: the name itself).
std::variant<Job::Split, int> Job::resolve(int dirfd, const std::string& path, bool follow) {
    auto a = absolute(dirfd, path);
    if (auto* e = std::get_if<int>(&a)) return *e;
    std::string abs = std::get<std::string>(a);
    for (int hops = 0; hops <= 40; ++hops) {
        auto r = split(abs);
        if (std::holds_alternative<int>(r) || !follow) return r;
        Split& s = std::get<Split>(r);
        if (s.name == "." || on_procfs(s.dir.get())) return r;
        char buf[PATH_MAX + 1];
        ssize_t n = ::readlinkat(s.dir.get(), s.name.c_str(), buf, sizeof buf - 1);
        if (n < 0) return r;  // not a symlink (or not there): this is the final name
        std::string target(buf, static_cast<std::size_t>(n));
        abs = target[0] == '/' ? target : (s.dir_path == "/" ? "/" : s.dir_path + "/") + target;
        if (s.slash) abs += "/";
    }
    return ELOOP;
}

// Judged; a refusal is reported and returned as EACCES.
bool Job::allowed(const std::string& path, WriteOp op) {
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

}  // namespace cc::sandbox::supervisor_detail
