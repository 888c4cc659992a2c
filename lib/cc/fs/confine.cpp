#include "cc/fs/confine.hpp"

#include "cc/core/io.hpp"
#include "cc/core/json_writer.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <deque>

namespace cc::fs {

namespace {

// The kernel's own bound on symlinks followed in one lookup (MAXSYMLINKS).
constexpr int max_symlinks = 40;

inline constexpr const char* reason_changed = "changed-during-open";
inline constexpr const char* reason_not_regular = "not-a-regular-file";
inline constexpr const char* reason_hardlinked = "hardlinked";

std::deque<std::string> split(const std::string& path) {
    std::deque<std::string> out;
    std::size_t i = 0;
    while (i <= path.size()) {
        std::size_t j = path.find('/', i);
        if (j == std::string::npos) j = path.size();
        if (j > i) out.push_back(path.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

std::string join(const std::vector<std::string>& parts, std::size_t n) {
    if (n == 0) return "/";
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += "/" + parts[i];
    return s;
}

struct Resolution {
    std::string path;
    const char* refusal = nullptr;
};

// Physical resolution, the way path_lookup would do it, but by name and one
// component at a time so that symlinks can be judged on the way. This is the
// question; the answer that matters for safety is the confined open.
Resolution resolve(const std::string& absolute) {
    std::deque<std::string> pending = split(absolute);
    std::vector<std::string> stack;
    std::size_t missing_from = SIZE_MAX;  // stack index of the first component that does not exist
    int links = 0;
    while (!pending.empty()) {
        std::string c = std::move(pending.front());
        pending.pop_front();
        if (c == ".") continue;
        if (c == "..") {
            if (!stack.empty()) stack.pop_back();
            if (stack.size() <= missing_from) missing_from = SIZE_MAX;
            continue;
        }
        if (c.size() > NAME_MAX) return {"", reason::too_long};
        stack.push_back(std::move(c));
        if (missing_from != SIZE_MAX) continue;
        std::string cand = join(stack, stack.size());
        if (cand.size() >= PATH_MAX) return {"", reason::too_long};
        struct stat st {};
        if (::lstat(cand.c_str(), &st) != 0) {
            if (errno == ENOENT || errno == ENOTDIR) {
                missing_from = stack.size() - 1;
                continue;
            }
            if (errno == ENAMETOOLONG) return {"", reason::too_long};
            return {"", reason::unresolvable};
        }
        if (!S_ISLNK(st.st_mode)) continue;
        // procfs links (/proc/self, /proc/<pid>/root, cwd, fd/N) name objects,
        // not paths: following them could land anywhere, so never do.
        std::string parent = join(stack, stack.size() - 1);
        struct statfs sfs {};
        if (::statfs(parent.c_str(), &sfs) != 0) return {"", reason::unresolvable};
        if (sfs.f_type == PROC_SUPER_MAGIC) return {"", reason::magic_link};
        if (++links > max_symlinks) return {"", reason::symlink_loop};
        std::string target(PATH_MAX, '\0');
        ssize_t n = ::readlink(cand.c_str(), target.data(), target.size());
        if (n < 0 || n >= static_cast<ssize_t>(target.size())) return {"", reason::unresolvable};
        target.resize(static_cast<std::size_t>(n));
        stack.pop_back();
        if (!target.empty() && target[0] == '/') stack.clear();
        auto parts = split(target);
        pending.insert(pending.begin(), parts.begin(), parts.end());
    }
    std::string out = join(stack, stack.size());
    if (out.size() >= PATH_MAX) return {"", reason::too_long};
    return {out, nullptr};
}

Error refused(const std::string& path, const std::string& why) {
    return Error{Errc::denied, "refused: " + why, "'" + path + "'", 0};
}

int sys_openat2(int dirfd, const char* path, unsigned long long flags, unsigned long long mode) {
    struct open_how how {};
    how.flags = flags;
    how.mode = mode;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS;
    return static_cast<int>(::syscall(SYS_openat2, dirfd, path, &how, sizeof how));
}

// The fallback for kernels without openat2 (before 5.6) or where a seccomp
// filter hides it: one openat per component, each O_NOFOLLOW, each from the
// fd of the directory before, so no name is ever looked up twice. The path
// is already resolved, so meeting a symlink means it was swapped in.
int walk_open(int base_fd, const std::string& rel, int flags, unsigned mode, bool& swapped) {
    swapped = false;
    auto parts = split(rel);
    if (parts.empty()) parts.push_back(".");
    UniqueFd held;
    int cur = base_fd;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        int next = ::openat(cur, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            int e = errno;
            struct stat st {};
            if (::fstatat(cur, parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                swapped = true;
            errno = e;
            return -1;
        }
        held.reset(next);
        cur = next;
    }
    int fd = ::openat(cur, parts.back().c_str(), flags, mode);
    if (fd < 0 && errno == ELOOP) swapped = true;
    return fd;
}

}  // namespace

const char* method_name(OpenMethod m) { return m == OpenMethod::openat2 ? "openat2" : "walk"; }

namespace {
std::string hex(const std::string& s) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 15]);
    }
    return out;
}
}  // namespace

nlohmann::ordered_json to_json(const Verdict& v) {
    nlohmann::ordered_json j = {{"path", v.path}, {"resolved", v.resolved}, {"allowed", v.allowed}, {"reason", v.reason}};
    if (!v.root.empty()) j["root"] = v.root;
    if (!cc::json::utf8_valid(v.path)) j["pathHex"] = hex(v.path);
    if (!cc::json::utf8_valid(v.resolved)) j["resolvedHex"] = hex(v.resolved);
    return j;
}

bool is_within(const std::string& path, const std::string& base) {
    if (base == "/") return !path.empty() && path[0] == '/';
    return path == base || (path.size() > base.size() && path.compare(0, base.size(), base) == 0 &&
                            path[base.size()] == '/');
}

std::string lexically_normal(const std::string& absolute) {
    std::vector<std::string> stack;
    for (auto& c : split(absolute)) {
        if (c == ".") continue;
        if (c == "..") {
            if (!stack.empty()) stack.pop_back();
            continue;
        }
        stack.push_back(c);
    }
    return join(stack, stack.size());
}

Result<Confinement> Confinement::make(const std::string& workdir, const std::vector<std::string>& roots) {
    Confinement c;
    std::vector<std::string> all{workdir};
    all.insert(all.end(), roots.begin(), roots.end());
    for (std::size_t i = 0; i < all.size(); ++i) {
        const std::string& p = all[i];
        const char* what = i == 0 ? "workdir" : "root";
        if (p.empty()) return input_error(what, "must not be empty");
        char* real = ::realpath(p.c_str(), nullptr);
        if (!real) return Error{Errc::input, std::string(what) + " cannot be resolved", "'" + p + "'", errno};
        std::string rp = real;
        std::free(real);
        UniqueFd fd{::open(rp.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
        if (!fd) return Error{Errc::input, std::string(what) + " cannot be opened", "'" + p + "'", errno};
        c.bases_.push_back(Base{rp, std::move(fd), i == 0});
    }
    return c;
}

Verdict Confinement::check(const std::string& path) const {
    Verdict v;
    v.path = path;
    if (path.empty()) {
        v.reason = reason::empty;
        return v;
    }
    std::string absolute = path[0] == '/' ? path : workdir() + "/" + path;
    Resolution r = resolve(absolute);
    if (r.refusal) {
        v.reason = r.refusal;
        return v;
    }
    v.resolved = r.path;
    for (const auto& b : bases_) {
        if (is_within(v.resolved, b.path)) {
            v.allowed = true;
            v.reason = b.is_workdir ? reason::workdir : reason::root;
            v.root = b.path;
            return v;
        }
    }
    std::string lexical = lexically_normal(absolute);
    bool lexically_inside = false;
    for (const auto& b : bases_) lexically_inside = lexically_inside || is_within(lexical, b.path);
    v.reason = lexically_inside ? reason::symlink_escape : reason::outside;
    return v;
}

Result<Opened> Confinement::open(const std::string& path, Access access, const OpenOptions& opts) const {
    Opened o;
    o.verdict = check(path);
    if (!o.verdict.allowed) return refused(path, o.verdict.reason);
    const Base* base = nullptr;
    for (const auto& b : bases_)
        if (b.path == o.verdict.root) base = &b;
    if (!base) return Error{Errc::internal, "no base for an allowed path", "'" + path + "'", 0};
    std::string rel = o.verdict.resolved == base->path ? "." : o.verdict.resolved.substr(base->path == "/" ? 1 : base->path.size() + 1);

    // A trailing slash asks for a directory, and only regular files are ever
    // opened: answer as the kernel would (ENOTDIR for a file, EISDIR when
    // creating), never open the file without its slash.
    if (path.back() == '/') {
        struct stat st {};
        if (::fstatat(base->fd.get(), rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISDIR(st.st_mode)) return refused(path, reason_not_regular);
            return io_error("'" + path + "'", "cannot open", ENOTDIR);
        }
        return io_error("'" + path + "'", "cannot open", access == Access::write && errno == ENOENT ? EISDIR : errno);
    }

    // O_NONBLOCK: a FIFO planted at the path must not hang the tool before
    // the file type is checked. O_NOFOLLOW: the last component too.
    int common = O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK;
    std::vector<int> attempts;
    if (access == Access::read) {
        attempts.push_back(O_RDONLY | common);
    } else {
        attempts.push_back(O_WRONLY | O_CREAT | O_EXCL | common);  // tells "created" from "truncated"
        attempts.push_back(O_WRONLY | common);
    }
    bool try_openat2 = opts.use_openat2;
    int fd = -1;
    for (std::size_t i = 0; i < attempts.size(); ++i) {
        int flags = attempts[i];
        unsigned mode = (flags & O_CREAT) ? opts.create_mode : 0;
        bool swapped = false;
        if (try_openat2) {
            fd = sys_openat2(base->fd.get(), rel.c_str(), static_cast<unsigned>(flags), mode);
            if (fd < 0 && (errno == ENOSYS || errno == EPERM || errno == E2BIG)) {
                try_openat2 = false;  // not offered here: the walk gives the same guarantee
            } else {
                o.method = OpenMethod::openat2;
                // EXDEV: the walk would leave the base; ELOOP: a symlink on the way.
                if (fd < 0 && (errno == EXDEV || errno == ELOOP)) swapped = true;
            }
        }
        if (!try_openat2) {
            o.method = OpenMethod::walk;
            fd = walk_open(base->fd.get(), rel, flags, mode, swapped);
        }
        if (fd >= 0) {
            o.created = (flags & O_EXCL) != 0;
            break;
        }
        if (swapped) return refused(path, reason_changed);
        if (errno == EEXIST && i + 1 < attempts.size()) continue;
        return io_error("'" + path + "'", "cannot open");
    }
    o.fd.reset(fd);

    struct stat st {};
    if (::fstat(fd, &st) != 0) return io_error("'" + path + "'", "cannot stat");
    if (!S_ISREG(st.st_mode)) return refused(path, reason_not_regular);
    if (access == Access::write && st.st_nlink > 1) return refused(path, reason_hardlinked);
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) return io_error("'" + path + "'", "cannot set blocking");
    if (access == Access::write && !o.created && ::ftruncate(fd, 0) != 0)
        return io_error("'" + path + "'", "cannot truncate");
    return o;
}

Result<std::string> read_all(int fd) { return io::read_all(fd, "fd " + std::to_string(fd)); }

Status write_all(int fd, const std::string& data) {
    if (int e = io::write_all(fd, data); e != 0) return io_error("fd " + std::to_string(fd), "cannot write", e);
    return ok();
}

}  // namespace cc::fs
