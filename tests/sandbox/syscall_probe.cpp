// cc-test-syscall OP [ARG]: makes one system call the sandbox's seccomp layer
// is about, and prints "OP ok" or "OP errno=NAME". It always exits 0 when it
// ran, so a test tells "the call was refused" (EPERM, ENOSYS) from "the probe
// never ran" (cc-wrap's 125, 126, 127).
//
// Arguments are chosen so that, without the filter, the kernel itself
// answers with something other than EPERM where it can (a bad command for
// bpf, bad flags for userfaultfd): an EPERM inside is then the filter's.
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <linux/openat2.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <thread>
#include <cstring>
#include <string>

namespace {

long call(const std::string& op, const char* arg) {
    if (op == "io_uring") {
        io_uring_params p{};
        return syscall(SYS_io_uring_setup, 1, &p);
    }
    if (op == "keyctl") return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
    if (op == "add_key") return syscall(SYS_add_key, "user", "cc-test", "x", 1, KEY_SPEC_PROCESS_KEYRING);
    if (op == "bpf") return syscall(SYS_bpf, 0xffff, nullptr, 0);
    if (op == "perf_event_open") return syscall(SYS_perf_event_open, nullptr, 0, -1, -1, 0);
    if (op == "userfaultfd") return syscall(SYS_userfaultfd, 0xfff0001);  // UFFD_USER_MODE_ONLY: not refused for users first
    if (op == "mount") return syscall(SYS_mount, "none", "/cc-no-such-dir", "tmpfs", 0, nullptr);
    if (op == "open_tree") return syscall(SYS_open_tree, AT_FDCWD, "/", 0);
    if (op == "fsopen") return syscall(SYS_fsopen, "tmpfs", 0);
    if (op == "setns") return syscall(SYS_setns, -1, 0);
    if (op == "unshare_user") return syscall(SYS_unshare, CLONE_NEWUSER);
    if (op == "clone_user") {
        long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (pid == 0) _exit(0);
        if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
        return pid;
    }
    if (op == "clone3") return syscall(SYS_clone3, nullptr, 0);
    if (op == "ptrace") return ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    if (op == "tiocsti") {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        char c = 'x';
        return ioctl(fd, TIOCSTI, &c);
    }
    if (op == "personality_rie") return personality(static_cast<unsigned long>(PER_LINUX) | static_cast<unsigned long>(READ_IMPLIES_EXEC));
    if (op == "personality_linux") return personality(PER_LINUX);
    if (op == "write") {  // write ARG's current value back into it
        int fd = open(arg, O_RDWR | O_CLOEXEC);
        if (fd < 0) return -1;
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) return -1;
        if (lseek(fd, 0, SEEK_SET) < 0) return -1;
        return write(fd, buf, static_cast<std::size_t>(n)) < 0 ? -1 : 0;
    }
    if (op == "fchmod_x" || op == "fchmod_rw" || op == "fchmod_path") {
        // ARG: a path opened read-only (fchmod_path: O_PATH), then fchmod
        // to 0755 (fchmod_x) or 0600 (fchmod_rw).
        int fd = open(arg, (op == "fchmod_path" ? O_PATH : O_RDONLY) | O_CLOEXEC);
        if (fd < 0) return -1;
        long r = fchmod(fd, op == "fchmod_rw" ? 0600 : 0755);
        int e = errno;
        close(fd);
        errno = e;
        return r;
    }
    // ARG opened for reading and writing (open_rw), through openat2
    // (openat2_rw), or as NAME under DIR given as "DIR//NAME" (openat_rw:
    // the directory opened first, O_PATH): the ways to one object.
    if (op == "open_rw" || op == "openat2_rw" || op == "openat_rw") {
        long fd;
        if (op == "open_rw") {
            fd = open(arg, O_RDWR | O_CLOEXEC);
        } else if (op == "openat2_rw") {
            open_how how{};
            how.flags = O_RDWR | O_CLOEXEC;
            fd = syscall(SYS_openat2, AT_FDCWD, arg, &how, sizeof how);
        } else {
            std::string a(arg);
            auto cut = a.find("//");
            if (cut == std::string::npos) {
                errno = EINVAL;
                return -1;
            }
            int dir = open(a.substr(0, cut).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (dir < 0) return -1;
            fd = openat(dir, a.substr(cut + 2).c_str(), O_RDWR | O_CLOEXEC);
            int e = errno;
            close(dir);
            errno = e;
        }
        if (fd >= 0) close(static_cast<int>(fd));
        return fd < 0 ? -1 : 0;
    }
    // getpid through the i386 ABI (int 0x80, call 20) from this 64-bit
    // process: the kernel runs it where IA32 emulation is built in.
    if (op == "int80_getpid") {
#if defined(__x86_64__)
        long r;
        asm volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
        if (r < 0) {
            errno = static_cast<int>(-r);
            return -1;
        }
        return r;
#else
        errno = ENOSYS;
        return -1;
#endif
    }
    if (op == "openat2_create") {  // ARG: a path, created through openat2 (flags BPF cannot see)
        open_how how{};
        how.flags = O_WRONLY | O_CREAT | O_CLOEXEC;
        how.mode = 0644;
        long fd = syscall(SYS_openat2, AT_FDCWD, arg, &how, sizeof how);
        if (fd >= 0) close(static_cast<int>(fd));
        return fd;
    }
    errno = EINVAL;
    std::fprintf(stderr, "cc-test-syscall: unknown op '%s'\n", op.c_str());
    _exit(2);
}

// race GOOD BAD N: while one thread rewrites a path buffer between GOOD and
// BAD (same length) as fast as it can, the main thread opens that buffer
// with O_CREAT N times. Prints "race good=G bad=B": how many opens created
// or opened each (judged by which file the descriptor is).
int race(const char* good, const char* bad, int n) {
    std::size_t len = std::strlen(good);
    if (std::strlen(bad) != len) return 2;
    static char buf[4096];
    std::memcpy(buf, good, len + 1);
    std::atomic<bool> stop{false};
    std::thread flipper([&] {
        volatile char* b = buf;
        while (!stop.load(std::memory_order_relaxed)) {
            for (std::size_t i = 0; i < len; ++i) b[i] = bad[i];
            for (std::size_t i = 0; i < len; ++i) b[i] = good[i];
        }
    });
    int g = 0, x = 0;
    for (int i = 0; i < n; ++i) {
        int fd = open(buf, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) continue;
        char link[64], path[4096];
        std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t m = readlink(link, path, sizeof path - 1);
        close(fd);
        if (m <= 0) continue;
        path[m] = 0;
        std::string p(path);
        if (p == bad) ++x;
        else ++g;
    }
    stop = true;
    flipper.join();
    std::printf("race good=%d bad=%d\n", g, x);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 5 && std::string(argv[1]) == "race") return race(argv[2], argv[3], std::atoi(argv[4]));
    for (int i = 1; i < argc; ++i) {
        std::string op = argv[i];
        const char* arg = nullptr;
        if ((op == "write" || op == "openat2_create" || op.rfind("fchmod_", 0) == 0 || op == "open_rw" ||
             op == "openat2_rw" || op == "openat_rw") &&
            i + 1 < argc)
            arg = argv[++i];
        errno = 0;
        long r = call(op, arg);
        if (r < 0) std::printf("%s errno=%s\n", op.c_str(), strerrorname_np(errno));
        else std::printf("%s ok\n", op.c_str());
    }
    return 0;
}
