#include "cc/fs/reflink.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "cc/fs/unique_fd.hpp"

namespace cc::fs {

namespace {

constexpr int dir_flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

std::string q(const std::string& s) { return "'" + s + "'"; }

std::string child(const std::string& rel, const char* name) { return rel.empty() ? name : rel + "/" + name; }

// Names in a directory, read through a duplicate so `fd` stays usable.
Result<std::vector<std::string>> list_names(int fd, const std::string& what) {
    int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return io_error(q(what), "cannot duplicate directory fd");
    DIR* d = ::fdopendir(dup);
    if (!d) {
        int e = errno;
        ::close(dup);
        return io_error(q(what), "cannot read directory", e);
    }
    ::rewinddir(d);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* ent = ::readdir(d)) {
        if (std::strcmp(ent->d_name, ".") != 0 && std::strcmp(ent->d_name, "..") != 0) names.emplace_back(ent->d_name);
        errno = 0;
    }
    int e = errno;
    ::closedir(d);
    if (e != 0) return io_error(q(what), "cannot read directory", e);
    return names;
}

struct Cloner {
    std::string src_root;
    dev_t dev = 0;
    bool as_root = ::geteuid() == 0;
    CloneStats stats;

    Status attributes(int dfd, const char* name, int fd, const struct stat& st, const std::string& rel) {
        // chown before chmod: chown clears set-id bits.
        if (as_root) {
            int r = fd >= 0 ? ::fchown(fd, st.st_uid, st.st_gid)
                            : ::fchownat(dfd, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
            if (r != 0) return io_error(q(rel), "cannot set owner");
        }
        if (!S_ISLNK(st.st_mode)) {
            int r = fd >= 0 ? ::fchmod(fd, st.st_mode & 07777) : ::fchmodat(dfd, name, st.st_mode & 07777, 0);
            if (r != 0) return io_error(q(rel), "cannot set mode");
        }
        struct timespec times[2] = {st.st_atim, st.st_mtim};
        int r = fd >= 0 ? ::futimens(fd, times) : ::utimensat(dfd, name, times, AT_SYMLINK_NOFOLLOW);
        if (r != 0) return io_error(q(rel), "cannot set times");
        return ok();
    }

    Status file(int sfd, int dfd, const char* name, const struct stat& st, const std::string& rel) {
        // O_NOATIME keeps the source's access times as they were; it needs
        // ownership (or CAP_FOWNER), so retry without it when refused.
        int in = ::openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
        if (in < 0 && errno == EPERM) in = ::openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        UniqueFd src{in};
        if (!src) return io_error(q(src_root + "/" + rel), "cannot open");
        UniqueFd dst{::openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
        if (!dst) return io_error(q(rel), "cannot create");
        if (st.st_size > 0 && ::ioctl(dst.get(), FICLONE, src.get()) != 0)
            return Error{Errc::unavailable, "cannot reflink (FICLONE)", q(src_root + "/" + rel), errno};
        ++stats.files;
        stats.bytes += static_cast<std::uint64_t>(st.st_size);
        if (st.st_nlink > 1) ++stats.hardlinks_split;
        return attributes(dfd, name, dst.get(), st, rel);
    }

    Status symlink(int sfd, int dfd, const char* name, const struct stat& st, const std::string& rel) {
        std::string target(PATH_MAX, '\0');
        ssize_t n = ::readlinkat(sfd, name, target.data(), target.size());
        if (n < 0 || n >= static_cast<ssize_t>(target.size())) return io_error(q(src_root + "/" + rel), "cannot read link");
        target.resize(static_cast<std::size_t>(n));
        if (::symlinkat(target.c_str(), dfd, name) != 0) return io_error(q(rel), "cannot create symlink");
        ++stats.symlinks;
        if (target == src_root || target.rfind(src_root + "/", 0) == 0) ++stats.absolute_symlinks_into_source;
        return attributes(dfd, name, -1, st, rel);
    }

    Status directory(int sfd, int dfd, const std::string& rel) {
        auto names = list_names(sfd, src_root + "/" + rel);
        if (!names) return names.error();
        for (const auto& n : *names) {
            const char* name = n.c_str();
            std::string crel = child(rel, name);
            struct stat st {};
            if (::fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return io_error(q(src_root + "/" + crel), "cannot stat");
            if (st.st_dev != dev)
                return Error{Errc::unavailable, "is a mount point inside the repo; a reflink clone cannot cross filesystems",
                             q(src_root + "/" + crel), 0};
            Status s = ok();
            if (S_ISREG(st.st_mode)) {
                s = file(sfd, dfd, name, st, crel);
            } else if (S_ISDIR(st.st_mode)) {
                if (::mkdirat(dfd, name, 0700) != 0) return io_error(q(crel), "cannot create directory");
                UniqueFd ns{::openat(sfd, name, dir_flags | O_NOATIME)};
                if (!ns && errno == EPERM) ns.reset(::openat(sfd, name, dir_flags));
                if (!ns) return io_error(q(src_root + "/" + crel), "cannot open directory");
                UniqueFd nd{::openat(dfd, name, dir_flags)};
                if (!nd) return io_error(q(crel), "cannot open directory");
                s = directory(ns.get(), nd.get(), crel);
                // Mode and times last: filling the directory changed its mtime,
                // and a read-only mode would have stopped the filling.
                if (s) s = attributes(dfd, name, nd.get(), st, crel);
                if (s) ++stats.directories;
            } else if (S_ISLNK(st.st_mode)) {
                s = symlink(sfd, dfd, name, st, crel);
            } else if (S_ISFIFO(st.st_mode)) {
                if (::mkfifoat(dfd, name, 0600) != 0) return io_error(q(crel), "cannot create fifo");
                s = attributes(dfd, name, -1, st, crel);
            } else {
                stats.skipped.push_back(crel);  // sockets and device nodes have no content to share
            }
            if (!s) return s;
        }
        return ok();
    }
};

}  // namespace

Status probe_reflink(const std::string& dir) {
    std::string a = dir + "/.cc-reflink-probe-a." + std::to_string(::getpid());
    std::string b = dir + "/.cc-reflink-probe-b." + std::to_string(::getpid());
    UniqueFd fa{::open(a.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
    if (!fa) return io_error(q(dir), "cannot create a probe file");
    UniqueFd fb{::open(b.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
    int err = errno;
    if (fb) {
        // One block of data: cloning needs something to share.
        std::string block(4096, 'x');
        err = 0;
        if (::write(fa.get(), block.data(), block.size()) != static_cast<ssize_t>(block.size()))
            err = errno ? errno : EIO;
        else if (::ioctl(fb.get(), FICLONE, fa.get()) != 0)
            err = errno;
    }
    ::unlink(a.c_str());
    if (fb) ::unlink(b.c_str());
    if (!fb) return io_error(q(dir), "cannot create a probe file", err);
    if (err != 0)
        return Error{Errc::unavailable, "filesystem does not support reflink (FICLONE); no fallback to copying", q(dir), err};
    return ok();
}

Result<CloneStats> clone_tree(const std::string& src, const std::string& dst) {
    Cloner c;
    c.src_root = src;
    UniqueFd sfd{::open(src.c_str(), dir_flags)};
    if (!sfd) return io_error(q(src), "cannot open directory");
    struct stat st {};
    if (::fstat(sfd.get(), &st) != 0) return io_error(q(src), "cannot stat");
    c.dev = st.st_dev;
    if (::mkdir(dst.c_str(), 0700) != 0) return io_error(q(dst), "cannot create directory");
    UniqueFd dfd{::open(dst.c_str(), dir_flags)};
    if (!dfd) return io_error(q(dst), "cannot open directory");
    if (Status s = c.directory(sfd.get(), dfd.get(), ""); !s) return s.error();
    if (Status s = c.attributes(AT_FDCWD, dst.c_str(), dfd.get(), st, dst); !s) return s.error();
    ++c.stats.directories;
    return std::move(c.stats);
}

namespace {
Status remove_in(int parent_fd, const std::string& name, const std::string& shown, dev_t dev, bool top) {
    struct stat st {};
    if (::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return ok();
        return io_error(q(shown), "cannot stat");
    }
    if (!S_ISDIR(st.st_mode)) {
        if (::unlinkat(parent_fd, name.c_str(), 0) != 0 && errno != ENOENT) return io_error(q(shown), "cannot remove");
        return ok();
    }
    if (!top && st.st_dev != dev)
        return Error{Errc::denied, "is a mount point; refusing to remove across filesystems", q(shown), 0};
    // A read-only or unsearchable directory (a checked-out tree may contain
    // them): give the owner rights back so its entries can go.
    if ((st.st_mode & 0700) != 0700 && ::fchmodat(parent_fd, name.c_str(), (st.st_mode & 07777) | 0700, 0) != 0)
        return io_error(q(shown), "cannot make writable");
    UniqueFd fd{::openat(parent_fd, name.c_str(), dir_flags)};
    if (!fd) return io_error(q(shown), "cannot open directory");
    auto names = list_names(fd.get(), shown);
    if (!names) return names.error();
    for (const auto& n : *names)
        if (Status s = remove_in(fd.get(), n, shown + "/" + n, st.st_dev, false); !s) return s;
    if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
        return io_error(q(shown), "cannot remove directory");
    return ok();
}
}  // namespace

Status remove_tree(int parent_fd, const std::string& name) { return remove_in(parent_fd, name, name, 0, true); }

}  // namespace cc::fs
