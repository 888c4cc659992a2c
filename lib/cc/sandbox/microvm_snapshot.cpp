// Snapshots of the microvm guest (microvm.hpp): where they are kept, what
// each must match, and putting a template boot's snapshot in place.
//
// A snapshot is the guest's memory and devices where the guest init waits
// for its plan: it holds the kernel, the modules and the init, and nothing of
// any session. Whoever can write one decides what runs as the kernel of every
// later guest, so the directory must be this user's alone (it is made 0700;
// one that is not is refused and the boot is cold, saying why), the files are
// only ever written by cc-wrap from a template boot that runs no command, and
// the default directories are masked in every sandbox cc-wrap makes.
#include "cc/sandbox/microvm.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "cc/core/io.hpp"
#include "cc/sandbox/launch_parts.hpp"

namespace cc::sandbox {

namespace {

// Bump when the monitor's devices or the guest's boot protocol change in a
// way the files below do not show.
constexpr const char* k_format = "cc-microvm-snapshot 1";
constexpr std::size_t k_keep = 4;  // snapshots kept per directory (the least recently used go)

std::string file_id(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return path + ":missing";
    return path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ino);
}

// FNV-1a, 64 bits: a name for the key, not a check of the file's contents
// (the directory's ownership is that).
std::string key_name(const std::string& key) {
    unsigned long long h = 1469598103934665603ull;
    for (unsigned char c : key) {
        h ^= c;
        h *= 1099511628211ull;
    }
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", h);
    return b;
}

std::string default_dir() {
    if (const char* d = std::getenv("CC_VM_SNAPSHOT_DIR"); d && *d) return d;
    if (::geteuid() == 0) return "/var/cache/cc/microvm";
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/cc/microvm";
    if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/cc/microvm";
    return {};
}

// Makes the directory (0700 for the parts made here) and checks it is this
// user's alone; "" or why not.
std::string usable_dir(const std::string& dir) {
    if (dir.empty() || dir[0] != '/') return "no snapshot directory (no HOME; set CC_VM_SNAPSHOT_DIR)";
    std::string part;
    for (std::size_t i = 1; i <= dir.size(); ++i)
        if (i == dir.size() || dir[i] == '/') {
            part = dir.substr(0, i);
            if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
                return part + ": cannot create: " + std::strerror(errno);
        }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) return dir + ": " + std::strerror(errno);
    if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
    if (st.st_uid != ::geteuid()) return dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user";
    if (st.st_mode & 077) {
        char m[8];
        std::snprintf(m, sizeof m, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return dir + " is mode " + m + "; only its owner may use it (chmod 700 " + dir + ")";
    }
    return {};
}

// A snapshot file of ours: regular, this user's, nobody else may write it.
bool trusted_file(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
           (st.st_mode & 022) == 0 && st.st_size > 0;
}

// Keeps the k_keep most recently used snapshots (a restore touches its file).
void prune(const std::string& dir, const std::string& keep) {
    std::vector<std::pair<long long, std::string>> snaps;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (auto* e = ::readdir(d)) {
            std::string n = e->d_name;
            if (n.size() < 6 || n.compare(n.size() - 5, 5, ".snap") != 0 || n == keep) continue;
            struct stat st {};
            if (::lstat((dir + "/" + n).c_str(), &st) == 0 && S_ISREG(st.st_mode))
                snaps.emplace_back(static_cast<long long>(st.st_mtim.tv_sec), n);
        }
        ::closedir(d);
    }
    std::sort(snaps.rbegin(), snaps.rend());
    for (std::size_t i = k_keep - 1; i < snaps.size(); ++i) ::unlink((dir + "/" + snaps[i].second).c_str());
}

}  // namespace

void resolve_vm_snapshot(VmInput& vm, bool want) {
    vm.boot = "cold";
    if (!want) return;
    std::string key = std::string(k_format) + "\n" + file_id(vm.monitor) + " " + vm.monitorVersion + "\n" + vm.accel + " " +
                      std::to_string(vm.memoryMiB) + "M " + std::to_string(vm.cpus) + " tsc " +
                      std::to_string(vm.tscKhz) + "\n" + file_id(vm.kernel) + "\n" + file_id(vm.guestExe) + "\n" +
                      file_id(detail::self_exe()) + "\n";
    for (const auto& m : vm.modules) key += file_id(vm.modulesDir + "/" + m) + "\n";
    vm.snapshotKey = key_name(key);
    std::string dir = default_dir();
    if (auto why = usable_dir(dir); !why.empty()) {
        vm.bootWhy = why;
        return;
    }
    vm.snapshotDir = dir;
    vm.snapshot = dir + "/" + vm.snapshotKey + ".snap";
    if (trusted_file(vm.snapshot)) {
        vm.boot = "restore";
        ::utimensat(AT_FDCWD, vm.snapshot.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // recently used
    } else {
        vm.boot = "save";
    }
}

Result<std::string> install_vm_snapshot(const VmInput& vm, const std::string& saved) {
    int in = ::open(saved.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);  // (a FIFO never blocks it)
    if (in < 0) return io_error(saved, "the template boot saved nothing");
    struct stat st {};
    if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        ::close(in);
        return io_error(saved, "the template boot's snapshot is empty");
    }
    std::string final_path = vm.snapshotDir + "/" + vm.snapshotKey + ".snap";
    std::string tmp = vm.snapshotDir + "/." + vm.snapshotKey + ".XXXXXX";
    int out = ::mkostemp(tmp.data(), O_CLOEXEC);  // 0600, this user's
    if (out < 0) {
        ::close(in);
        return io_error(vm.snapshotDir, "cannot create a snapshot file");
    }
    char buf[1 << 16];
    bool ok = true;
    for (;;) {
        ssize_t n = ::read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) ok = false;
        if (n <= 0) break;
        if (cc::io::write_all(out, std::string_view(buf, static_cast<std::size_t>(n))) != 0) {
            ok = false;
            break;
        }
    }
    ::close(in);
    ok = ok && ::fsync(out) == 0;
    ::close(out);
    if (!ok || ::rename(tmp.c_str(), final_path.c_str()) != 0) {
        ::unlink(tmp.c_str());
        return io_error(final_path, "cannot write the snapshot");
    }
    prune(vm.snapshotDir, vm.snapshotKey + ".snap");
    return final_path;
}

}  // namespace cc::sandbox
