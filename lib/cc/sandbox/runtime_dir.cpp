// cc-wrap's private runtime directory for one launch (launch_parts.hpp).

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/magic.h>
#include <sys/random.h>
#include <sys/statfs.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "cc/sandbox/launch_parts.hpp"

namespace cc::sandbox::detail {

namespace fs = std::filesystem;

// Removed on every exit path; the mask directory is mode 0 and is opened up
// first so remove_all can walk it as an unprivileged user. While cc-wrap runs
// it holds an flock on <dir>/lock; a cc-wrap killed outright (SIGKILL) cannot
// clean up, so every start sweeps the directories whose lock nobody holds.
void remove_runtime_dir(const std::string& path) {
    // Opened up only if it is our mode-0 directory, never through a link.
    struct stat st {};
    std::string mask = path + "/mask-dir";
    if (::lstat(mask.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) ::chmod(mask.c_str(), 0700);
    std::error_code ec;
    fs::remove_all(path, ec);
}


namespace {

// $XDG_RUNTIME_DIR, else $TMPDIR, else /dev/shm when it is a writable tmpfs,
// else /tmp. A memory filesystem matters on the launch path: on ext4 the
// directory's creation and removal cost about 1 ms of journal work per run.
std::string runtime_base() {
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg && ::access(xdg, W_OK) == 0) return xdg;
    const char* tmp = std::getenv("TMPDIR");
    if (tmp && *tmp) return tmp;
#ifdef __linux__
    struct statfs fs {};
    if (::statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC && ::access("/dev/shm", W_OK | X_OK) == 0)
        return "/dev/shm";
#endif
    return "/tmp";
}

// Leftovers of cc-wrap runs that were killed outright: ours (same owner), named
// cc-wrap.*, with a lock file nobody holds. Returns how many were removed.
int sweep_stale_runtime_dirs(const std::string& base) {
    int removed = 0;
    DIR* d = ::opendir(base.c_str());
    if (!d) return 0;
    while (dirent* e = ::readdir(d)) {
        if (std::strncmp(e->d_name, "cc-wrap.", 8) != 0) continue;
        std::string dir = base + "/" + e->d_name;
        struct stat st {};
        if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
        int fd = ::open((dir + "/lock").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;  // not ours to judge (or a run between mkdtemp and its lock)
        bool dead = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
        ::close(fd);
        if (dead) {
            remove_runtime_dir(dir);
            ++removed;
        }
    }
    ::closedir(d);
    return removed;
}

}  // namespace

// A name for this launch's runtime directory, chosen before the plan is
// made (the plan names it; nothing exists yet).
std::string choose_runtime_path() {
    static const char k[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char rnd[6] = {};
#ifdef __linux__
    if (::getrandom(rnd, sizeof rnd, 0) != static_cast<ssize_t>(sizeof rnd))
        for (auto& c : rnd) c = static_cast<unsigned char>(std::rand());
#else
    ::arc4random_buf(rnd, sizeof rnd);
#endif
    std::string name = "cc-wrap.";
    for (unsigned char c : rnd) name += k[c % (sizeof k - 1)];
    return runtime_base() + "/" + name;
}

Result<RuntimeDir> make_runtime_dir(const std::string& final_path) {
    std::string base = final_path.substr(0, final_path.rfind('/'));
    if (int n = sweep_stale_runtime_dirs(base))
        log("removed " + std::to_string(n) + " runtime director" + (n == 1 ? "y" : "ies") +
            " left by cc-wrap runs that were killed outright");
    // Made under a name the sweep ignores, locked, then renamed into place
    // (never over anything): a concurrent sweep never sees a cc-wrap.*
    // directory whose lock is free.
    std::string tmpl = base + "/.cc-wrap-new.XXXXXX";
    if (!::mkdtemp(tmpl.data())) return io_error(base, "cannot create the runtime directory");
    RuntimeDir rt;
    rt.path = tmpl;
    rt.lock = ::open((tmpl + "/lock").c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (rt.lock < 0 || ::flock(rt.lock, LOCK_EX) != 0) return io_error(tmpl + "/lock", "cannot create or lock");
#ifdef __linux__
    if (::renameat2(AT_FDCWD, tmpl.c_str(), AT_FDCWD, final_path.c_str(), RENAME_NOREPLACE) != 0) {
#else
    if (::renamex_np(tmpl.c_str(), final_path.c_str(), RENAME_EXCL) != 0) {  // macOS: never over anything
#endif
        if (errno == EEXIST) return io_error(final_path, "is taken", EEXIST);  // the destructor removes ours
        return io_error(final_path, "cannot rename the runtime directory into place");
    }
    rt.path = final_path;
    return rt;
}

Status make_masks(const Plan& plan) {
    std::string d = plan.runtimeDir + "/mask-dir", f = plan.runtimeDir + "/mask-file";
    if (::mkdir(d.c_str(), 0) != 0) return io_error(d, "cannot create the mask directory");
    int fd = ::open(f.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
    if (fd < 0) return io_error(f, "cannot create the mask file");
    ::close(fd);
    ::chmod(d.c_str(), 0);
    if (plan.proxy.capture) {
        // The sandbox's resolver: cc-egress's name pool, on loopback.
        const std::string r = plan.runtimeDir + "/resolv.conf";
        int rfd = ::open(r.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        const std::string text =
            "# cc-wrap --capture: names are answered by cc-egress\nnameserver 127.0.0.1\noptions attempts:2\n";
        bool written = rfd >= 0 && ::write(rfd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
        if (rfd >= 0) ::close(rfd);
        if (!written || ::chmod(r.c_str(), 0644) != 0) return io_error(r, "cannot write the sandbox's resolv.conf");
    }
    return ok();
}

}  // namespace cc::sandbox::detail
