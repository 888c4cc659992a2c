// The real filesystem behind HostPaths (OS-touching, so it lives in cc_sys).
#include <dirent.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __APPLE__
#include <sys/random.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "cc/sandbox/paths.hpp"

namespace cc::sandbox {

namespace {

// Every uid and gid the host knows of: the account and group files, the
// subordinate ranges, and each running process's real, effective, saved and
// filesystem ids (a process of the same uid and gid may trace another).
struct IdsInUse {
    std::unordered_set<unsigned> ids;
    std::vector<std::pair<unsigned long, unsigned long>> ranges;  // [first, first + count)
    bool taken(unsigned id) const {
        if (ids.count(id)) return true;
        for (const auto& [first, end] : ranges)
            if (id >= first && id < end) return true;
        return false;
    }
};

// The ':'-separated fields of an account, group or subordinate-id line.
std::vector<std::string> colon_fields(const std::string& line) {
    std::vector<std::string> f;
    std::istringstream in(line);
    for (std::string x; std::getline(in, x, ':');) f.push_back(x);
    return f;
}

std::optional<unsigned long> number(const std::string& t) {
    if (t.empty() || t.size() > 10 || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoul(t);
}

IdsInUse ids_in_use() {
    IdsInUse u;
    for (unsigned id : ids_in_account_file("/etc/passwd", true)) u.ids.insert(id);
    for (unsigned id : ids_in_account_file("/etc/group", false)) u.ids.insert(id);
    for (const char* db : {"/etc/subuid", "/etc/subgid"}) {
        std::ifstream in(db);
        for (std::string line; std::getline(in, line);) {
            auto f = colon_fields(line);
            if (f.size() < 3) continue;
            auto first = number(f[1]), count = number(f[2]);
            if (first && count) u.ranges.emplace_back(*first, *first + *count);
        }
    }
    if (DIR* d = ::opendir("/proc")) {
        while (auto* e = ::readdir(d)) {
            if (!number(e->d_name)) continue;
            std::ifstream in(std::string("/proc/") + e->d_name + "/status");
            for (std::string line; std::getline(in, line);) {
                if (line.rfind("Uid:", 0) != 0 && line.rfind("Gid:", 0) != 0) continue;
                std::istringstream v(line.substr(4));
                for (unsigned long n; v >> n;) u.ids.insert(static_cast<unsigned>(n));
            }
        }
        ::closedir(d);
    }
    return u;
}

// One plan asks about the same few dozen paths hundreds of times (every deny
// rule in both spellings against every mount); the answers are remembered for
// the life of this object, which is one plan: the host does not change under
// it in a way the plan could act on anyway (it is a snapshot either way).
class RealPaths final : public HostPaths {
public:
    RealPaths(uid_t uid, gid_t gid) : uid_(uid), gid_(gid) {}
    std::optional<unsigned> unused_id() const override {
        IdsInUse u = ids_in_use();
        for (int tries = 0; tries < 64; ++tries) {
            unsigned r = 0;
            if (::getentropy(&r, sizeof r) != 0) return std::nullopt;  // (unistd.h; sys/random.h on macOS)
            unsigned id = k_session_id_first + r % (k_session_id_last - k_session_id_first + 1);
            if (!u.taken(id)) return id;
        }
        return std::nullopt;
    }
    std::optional<Owner> owner(const std::string& path) const override {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return std::nullopt;
        return Owner{st.st_uid, st.st_gid, st.st_mode & 07777};
    }
    // realpath(3), one component at a time, each resolved prefix remembered:
    // a plan resolves a hundred paths under the same few directories ($HOME,
    // ~/.config, /etc), and realpath alone would readlink every component of
    // every one of them again.
    std::optional<std::string> resolve(const std::string& path) const override {
        if (path.empty() || path[0] != '/') {
            char buf[PATH_MAX];
            if (::realpath(path.c_str(), buf)) return std::string(buf);
            return std::nullopt;
        }
        int links = 0;
        return resolve_abs(path, links);
    }
    Kind kind(const std::string& path) const override {
        if (auto it = kinds_.find(path); it != kinds_.end()) return it->second;
        struct stat st {};
        Kind k = Kind::other;
        if (::stat(path.c_str(), &st) != 0) k = Kind::missing;
        else if (S_ISDIR(st.st_mode)) k = Kind::dir;
        else if (S_ISREG(st.st_mode)) k = Kind::file;
        kinds_.emplace(path, k);
        return k;
    }
    std::optional<std::string> read_link(const std::string& path) const override {
        if (auto it = links_.find(path); it != links_.end()) return it->second;
        char buf[PATH_MAX];
        ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
        std::optional<std::string> r;
        if (n >= 0) r = std::string(buf, static_cast<std::size_t>(n));
        links_.emplace(path, r);
        return r;
    }
    std::vector<std::string> list(const std::string& dir) const override {
        std::vector<std::string> out;
        DIR* d = ::opendir(dir.c_str());
        if (!d) return out;
        while (auto* e = ::readdir(d)) {
            std::string n = e->d_name;
            if (n != "." && n != "..") out.push_back(n);
        }
        ::closedir(d);
        return out;
    }

    Exec executable(const std::string& path) const override {
        Exec e;
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) return e;
        struct stat st {};
        struct statvfs vfs {};
        char head[256];
        ssize_t n = -1;
        if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::fstatvfs(fd, &vfs) == 0 && !(vfs.f_flag & ST_NOEXEC))
            n = ::read(fd, head, sizeof head);
        ::close(fd);
        if (n < 4) return e;
        // The permission bits as the kernel applies them to an unprivileged
        // process: the owner's if we own it, else the group's if ours, else others'.
        mode_t bit = st.st_uid == uid_ ? S_IXUSR : st.st_gid == gid_ ? S_IXGRP : S_IXOTH;
        if (!(st.st_mode & bit)) return e;
        std::string_view h(head, static_cast<std::size_t>(n));
        if (h.substr(0, 4) == "\x7f" "ELF") {
            e.ok = e.elf = true;
        } else if (h.substr(0, 2) == "#!") {
            auto line = h.substr(2, h.find('\n') - 2);  // to the newline, or all of it (npos - 2 is still past the end)
            auto b = line.find_first_not_of(" \t");
            if (b == std::string_view::npos) return e;
            auto end = line.find_first_of(" \t\r", b);
            e.interpreter = std::string(line.substr(b, end == std::string_view::npos ? std::string_view::npos : end - b));
            e.ok = !e.interpreter.empty() && e.interpreter[0] == '/';
        }
        return e;
    }

private:
    // `path` is absolute. A result in resolved_ is final; `links` counts the
    // symlinks followed for this one call (40, as the kernel, then ELOOP).
    std::optional<std::string> resolve_abs(const std::string& path, int& links) const {
        if (auto it = resolved_.find(path); it != resolved_.end()) return it->second;
        std::string cur = "/";  // resolved so far: a real directory, no symlink in it
        std::size_t i = 0;
        while (i < path.size()) {
            while (i < path.size() && path[i] == '/') ++i;
            if (i >= path.size()) break;
            std::size_t j = path.find('/', i);
            if (j == std::string::npos) j = path.size();
            std::string name = path.substr(i, j - i);
            i = j;
            if (name == ".") continue;
            if (name == "..") {
                // The parent of a resolved directory is lexical: it has no links.
                auto slash = cur.find_last_of('/');
                cur = slash == 0 ? "/" : cur.substr(0, slash);
                continue;
            }
            std::string next = cur == "/" ? "/" + name : cur + "/" + name;
            std::string rest = path.substr(i);  // "" or "/..."
            if (auto it = resolved_.find(next); it != resolved_.end()) {
                if (!it->second) return remember(path, std::nullopt);
                cur = *it->second;
                continue;
            }
            char buf[PATH_MAX];
            ssize_t n = ::readlink(next.c_str(), buf, sizeof buf - 1);
            if (n < 0) {
                // EINVAL: there and not a link. Anything else (ENOENT,
                // ENOTDIR, EACCES, ...) is a path realpath fails on too.
                if (errno != EINVAL) return remember(path, std::nullopt);
                resolved_.emplace(next, next);
                cur = std::move(next);
                continue;
            }
            if (++links > 40) return std::nullopt;  // ELOOP
            std::string target(buf, static_cast<std::size_t>(n));
            std::string via = target.empty() ? next : target[0] == '/' ? target : cur + "/" + target;
            auto r = resolve_abs(via, links);
            if (!r) return remember(path, std::nullopt);
            resolved_.emplace(next, r);
            cur = *r;
        }
        // What realpath checks at the end: the last component exists (done
        // above) and every component but the last is a directory (a readlink
        // of "file/x" fails with ENOTDIR above), and a trailing slash names a
        // directory.
        if (path.size() > 1 && path.back() == '/') {
            struct stat st {};
            if (::stat(cur.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return remember(path, std::nullopt);
        }
        return remember(path, cur);
    }
    std::optional<std::string> remember(const std::string& path, std::optional<std::string> r) const {
        resolved_.emplace(path, r);
        return r;
    }

    uid_t uid_;
    gid_t gid_;
    mutable std::unordered_map<std::string, std::optional<std::string>> resolved_, links_;
    mutable std::unordered_map<std::string, Kind> kinds_;
};

}  // namespace

std::vector<unsigned> ids_in_account_file(const std::string& path, bool passwd) {
    std::vector<unsigned> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        auto f = colon_fields(line);  // ("grp:x:100:", a group without members, splits into three)
        if (f.size() > 2)
            if (auto n = number(f[2])) out.push_back(static_cast<unsigned>(*n));
        if (passwd && f.size() > 3)
            if (auto n = number(f[3])) out.push_back(static_cast<unsigned>(*n));
    }
    return out;
}

std::unique_ptr<HostPaths> real_paths() { return std::make_unique<RealPaths>(::geteuid(), ::getegid()); }
std::unique_ptr<HostPaths> real_paths(unsigned uid, unsigned gid) { return std::make_unique<RealPaths>(uid, gid); }

}  // namespace cc::sandbox
