#include "cc/probe/diagnose.hpp"
#include "cc/sandbox/handover.hpp"
#include "cc/sandbox/microvm.hpp"
#include "cc/probe/confinement.hpp"
#include "cc/core/child.hpp"

#include "cc/core/io.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

namespace cc::probe {

namespace bp = boost::process;

namespace {

struct Ran {
    bool started = false;
    bool timed_out = false;
    int status = -1;
    std::string out, err;
};

// Runs argv with no shell, capturing both streams, killed after timeout_ms.
Ran run(const std::string& exe, const std::vector<std::string>& args, int timeout_ms) {
    Ran r;
    cc::child::Spec spec;
    spec.argv.push_back(exe);
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = cc::child::environment_of(cc::child::not_git);
    spec.deadline = std::chrono::milliseconds(timeout_ms);
    spec.output_cap = 256 * 1024;
    auto done = cc::child::run(spec);
    if (!done) {
        r.err = done.error().one_line();
        return r;
    }
    r.started = true;
    r.timed_out = done->late;
    r.status = done->status;
    r.out = std::move(done->out);
    r.err = std::move(done->err);
    return r;
}

std::string first_line(const std::string& s) {
    std::string line = s.substr(0, s.find('\n'));
    return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

std::optional<std::string> read_trimmed(const std::string& path) {
    std::ifstream f(path);
    if (!f) return std::nullopt;
    std::string v;
    std::getline(f, v);
    return v;
}

#ifndef CC_LIBEXECDIR
#define CC_LIBEXECDIR "/usr/libexec/cc"
#endif

// The exact fix where AppArmor restricts unprivileged user namespaces: the
// narrow profile cc ships for bubblewrap, put in place by its setup script.
std::string apparmor_fix() {
    std::string script;
    for (const std::string& s : {std::string(CC_LIBEXECDIR) + "/cc-apparmor-setup", io::data_dir() + "/apparmor/cc-apparmor-setup"})
        if (::access(s.c_str(), X_OK) == 0) {
            script = s;
            break;
        }
    std::string fix = "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1): ";
    if (!script.empty())
        fix += "run 'sudo " + script + " install' (it loads cc's narrow profile for /usr/bin/bwrap unless another "
               "profile for it exists), ";
    return fix + "or load an AppArmor profile for /usr/bin/bwrap that allows 'userns,', or set the sysctl "
                 "kernel.apparmor_restrict_unprivileged_userns=0 (for every program)";
}

Check check_userns(const Confinement& conf) {
    Check c{"userns", CheckStatus::fail, "", "", false};
    // Fork so the calling process keeps its namespaces; the child reports errno.
    pid_t pid = ::fork();
    if (pid == 0) {
        int rc = ::unshare(CLONE_NEWUSER);
        ::_exit(rc == 0 ? 0 : (errno & 0x7f));
    }
    int st = 0;
    if (pid < 0 || ::waitpid(pid, &st, 0) < 0) {
        c.detail = std::string("fork failed: ") + std::strerror(errno);
        return c;
    }
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (code == 0) {
        c.status = CheckStatus::ok;
        c.detail = "unshare(CLONE_NEWUSER) succeeded as uid " + std::to_string(::getuid());
        // On Ubuntu 23.10+ creating the namespace succeeds but AppArmor strips
        // its capabilities; bwrap then fails to set up mounts.
        if (read_trimmed("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").value_or("0") == "1")
            c.detail += "; kernel.apparmor_restrict_unprivileged_userns=1 may still deny capabilities inside it";
        return c;
    }
    c.detail = std::string("unshare(CLONE_NEWUSER) failed: ") + (code > 0 ? std::strerror(code) : "child died");
    if (read_trimmed("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").value_or("0") == "1")
        c.hint = apparmor_fix();
    else if (read_trimmed("/proc/sys/kernel/unprivileged_userns_clone").value_or("1") == "0")
        c.hint = "unprivileged user namespaces are disabled: sysctl kernel.unprivileged_userns_clone=1";
    else if (read_trimmed("/proc/sys/user/max_user_namespaces").value_or("1") == "0")
        c.hint = "user namespaces are disabled: sysctl user.max_user_namespaces=15000";
    else {
        // In a container: which of its restrictions, and the setting that lifts it.
        std::string fix = container_fix(conf, "userns");
        if (!fix.empty())
            c.hint = describe(conf) + " stops it: " + fix;
        else
            c.hint = "user namespaces are unavailable (kernel config: CONFIG_USER_NS, or a seccomp or LSM policy)";
    }
    return c;
}

Check check_bwrap(const ProbeResult& p, int timeout_ms, const Confinement& conf) {
    Check c{"bwrap", CheckStatus::fail, "", "", false};
    if (!p.bwrap) {
        c.detail = "bwrap not found on PATH";
        c.hint = "install bubblewrap";
        return c;
    }
    // What cc-wrap asks of bubblewrap: a user namespace always (as root
    // too), pid, ipc, uts, net and cgroup, nested user namespaces refused,
    // and its own host name (sethostname, which a container's seccomp
    // profile may refuse where the namespaces themselves are fine).
    auto r = run(*p.bwrap,
                 {"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                  "--unshare-net", "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                  "--hostname", "cc-sandbox", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs",
                  "/tmp", "--", "/bin/sh", "-c", "echo cc-probe-ok"},
                 timeout_ms);
    if (r.timed_out) {
        c.detail = "bwrap did not finish within " + std::to_string(timeout_ms) + " ms";
        return c;
    }
    if (r.status == 0 && r.out.find("cc-probe-ok") != std::string::npos) {
        c.status = CheckStatus::ok;
        c.detail = *p.bwrap + " ran a command in the namespaces cc-wrap uses (user, pid, ipc, uts, net, cgroup)";
        return c;
    }
    c.detail = "bwrap exited " + std::to_string(r.status) + ": " + first_line(r.err);
    if (read_trimmed("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").value_or("0") == "1")
        c.hint = apparmor_fix();  // the namespace is made, its capabilities are not there
    else if (r.err.find("mount proc") != std::string::npos || r.err.find("/proc") != std::string::npos) {
        // A new /proc cannot be mounted over a masked one.
        std::string fix = container_fix(conf, "proc");
        c.hint = fix.empty() ? "bwrap cannot mount a new /proc here (a masked /proc in a container?)"
                             : describe(conf) + " stops it: " + fix;
    } else if (r.err.find("set hostname") != std::string::npos) {
        // The namespaces were made; the container's seccomp profile refuses
        // sethostname to a process without CAP_SYS_ADMIN.
        std::string fix = container_fix(conf, "hostname");
        // bubblewrap mounts /proc next: a masked one is the following refusal.
        if (!fix.empty() && conf.proc_masked) fix += "; and then " + container_fix(conf, "proc");
        c.hint = fix.empty() ? "bwrap cannot set the sandbox's host name here (a seccomp profile refusing sethostname?)"
                             : describe(conf) + " stops it: " + fix;
    } else if (r.err.find("setting up uid map") != std::string::npos || r.err.find("No permissions to creat") != std::string::npos ||
               r.err.find("Operation not permitted") != std::string::npos) {
        std::string fix = container_fix(conf, "userns");
        if (!fix.empty() && conf.proc_masked) fix += "; and then " + container_fix(conf, "proc");
        c.hint = fix.empty() ? "bwrap cannot create namespaces here; see the userns check"
                             : describe(conf) + " stops it: " + fix;
    } else {
        c.hint = "run the bwrap command by hand to see why";
    }
    return c;
}

Check check_socat(const ProbeResult& p, int timeout_ms) {
    Check c{"socat", CheckStatus::fail, "", "", false};
    if (!p.socat) {
        c.detail = "socat not found on PATH";
        c.hint = "install socat";
        return c;
    }
    // Bridge for real: socat connects to a Unix socket we listen on, and must
    // copy what we send to its stdout (what cc-wrap's fallback bridge does).
    char dir_tmpl[] = "/tmp/cc-probe-XXXXXX";
    if (!::mkdtemp(dir_tmpl)) {
        c.detail = std::string("cannot make a temporary directory: ") + std::strerror(errno);
        return c;
    }
    std::string dir = dir_tmpl, path = dir + "/s";
    int ls = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    bool listening = ls >= 0 && ::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(ls, 1) == 0;
    std::thread server;
    if (listening) {
        server = std::thread([ls] {
            int fd = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd >= 0) {
                const char msg[] = "cc-probe-bridge\n";
                (void)!::write(fd, msg, sizeof msg - 1);
                ::shutdown(fd, SHUT_WR);
                char buf[64];
                while (::read(fd, buf, sizeof buf) > 0) {
                }
                ::close(fd);
            }
        });
    }
    Ran r;
    if (listening) r = run(*p.socat, {"-u", "UNIX-CONNECT:" + path, "STDOUT"}, timeout_ms);
    if (ls >= 0) {
        ::shutdown(ls, SHUT_RDWR);
        if (!r.started) {  // unblock accept()
            int k = ::socket(AF_UNIX, SOCK_STREAM, 0);
            (void)!::connect(k, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
            ::close(k);
        }
    }
    if (server.joinable()) server.join();
    if (ls >= 0) ::close(ls);
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
    if (!listening) {
        c.detail = std::string("cannot listen on a Unix socket: ") + std::strerror(errno);
        return c;
    }
    if (r.status == 0 && r.out == "cc-probe-bridge\n") {
        c.status = CheckStatus::ok;
        c.detail = *p.socat + " relayed bytes from a Unix socket";
        return c;
    }
    c.detail = "socat exited " + std::to_string(r.status) + ": " + first_line(r.err);
    c.hint = "socat is present but could not bridge a Unix socket";
    return c;
}

Check check_landlock() {
    Check c{"landlock", CheckStatus::fail, "", "", false};
#ifdef SYS_landlock_create_ruleset
    constexpr unsigned kVersion = 1U << 0;  // LANDLOCK_CREATE_RULESET_VERSION
    long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kVersion);
    if (abi >= 1) {
        c.status = CheckStatus::ok;
        c.detail = "Landlock ABI version " + std::to_string(abi);
        return c;
    }
    int e = errno;
    c.detail = std::string("landlock_create_ruleset: ") + std::strerror(e);
    c.hint = e == EOPNOTSUPP ? "Landlock is built in but disabled: add 'landlock' to the lsm= boot parameter"
                             : "the kernel has no Landlock (5.13+ with CONFIG_SECURITY_LANDLOCK)";
#else
    c.detail = "this build has no Landlock syscall number";
#endif
    return c;
}

Check check_seccomp_notify() {
    Check c{"seccomp-notify", CheckStatus::fail, "", "", false};
    unsigned action = SECCOMP_RET_USER_NOTIF;
    if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0) {
        struct seccomp_notif_sizes sizes {};
        if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0) {
            c.status = CheckStatus::ok;
            c.detail = "SECCOMP_RET_USER_NOTIF available (notif " + std::to_string(sizes.seccomp_notif) +
                       " bytes, resp " + std::to_string(sizes.seccomp_notif_resp) + " bytes)";
            return c;
        }
    }
    c.detail = std::string("seccomp user notification unavailable: ") + std::strerror(errno);
    c.hint = "needs Linux 5.0+ with CONFIG_SECCOMP_FILTER";
    return c;
}

Check check_reflink(const std::string& dir) {
    Check c{"reflink", CheckStatus::fail, "", "", false};
    std::string src = dir + "/.cc-probe-reflink-src." + std::to_string(::getpid());
    std::string dst = dir + "/.cc-probe-reflink-dst." + std::to_string(::getpid());
    int s = ::open(src.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (s < 0) {
        c.detail = "cannot create a file in '" + dir + "': " + std::strerror(errno);
        c.hint = "the data directory must be writable";
        return c;
    }
    std::string block(4096, 'c');
    bool wrote = ::write(s, block.data(), block.size()) == static_cast<ssize_t>(block.size());
    int d = ::open(dst.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int rc = -1, e = 0;
    if (wrote && d >= 0) {
        rc = ::ioctl(d, FICLONE, s);
        e = errno;
    }
    if (d >= 0) ::close(d);
    ::close(s);
    ::unlink(src.c_str());
    ::unlink(dst.c_str());
    if (rc == 0) {
        c.status = CheckStatus::ok;
        c.detail = "FICLONE succeeded in '" + dir + "'";
        return c;
    }
    c.detail = "FICLONE failed in '" + dir + "': " + std::strerror(e);
    c.hint = "copy-on-write worktrees need a reflink filesystem for the data directory (XFS with reflink=1, btrfs)";
    return c;
}

Check check_vm_runtime(const ProbeResult& p, int timeout_ms) {
    Check c{"vm-runtime", CheckStatus::fail, "", "", false};
    for (const auto& rt : p.microvm.runtimes) {
        if (rt.rfind("qemu-system-", 0) == 0) {
            auto path = bp::search_path(rt);
            auto r = run(path.string(), {"-machine", "help"}, timeout_ms);
            if (r.status == 0 && r.out.find("microvm") != std::string::npos) {
                c.status = CheckStatus::ok;
                c.detail = rt + " offers the microvm machine type";
                return c;
            }
            c.detail = rt + " has no microvm machine type";
        } else {
            c.status = CheckStatus::ok;
            c.detail = rt + " found";
            return c;
        }
    }
    if (c.detail.empty()) c.detail = "no VM runtime on PATH";
    c.hint = "install qemu-system-x86 (microvm machine type) or firecracker";
    return c;
}

// The microvm backend's guest kernel, where cc-wrap looks for one.
Check check_vm_kernel() {
    Check c{"vm-kernel", CheckStatus::fail, "", "", false};
    std::string looked;
    for (const auto& k : sandbox::vm_kernel_candidates()) {
        if (::access(k.c_str(), R_OK) == 0) {
            auto dir = std::filesystem::path(k).parent_path();
            if (::access((dir / "modules" / "order").c_str(), R_OK) != 0) {
                c.detail = k + " has no modules/order beside it";
                break;
            }
            c.status = CheckStatus::ok;
            c.detail = k;
            return c;
        }
        looked += (looked.empty() ? "" : ", ") + k;
    }
    if (c.detail.empty()) c.detail = "no guest kernel (looked for " + looked + ")";
    c.hint = "run " + sandbox::vm_kernel_helper() +
             " once, as root: it fetches Debian's linux-image-amd64 (not installed on the host) and extracts its "
             "kernel where cc-wrap looks; or give cc-wrap --vm-kernel FILE";
    return c;
}

}  // namespace

std::string_view to_string(CheckStatus s) {
    switch (s) {
        case CheckStatus::ok: return "ok";
        case CheckStatus::skip: return "skip";
        case CheckStatus::fail: break;
    }
    return "fail";
}

Result<Diagnosis> diagnose(const ProbeResult& p, const DiagnoseOptions& opts) {
    if (opts.data_dir) {
        struct stat st {};
        if (::stat(opts.data_dir->c_str(), &st) != 0)
            return input_error("--data-dir '" + *opts.data_dir + "'", std::string("cannot be read: ") + std::strerror(errno));
        if (!S_ISDIR(st.st_mode)) return input_error("--data-dir '" + *opts.data_dir + "'", "is not a directory");
        if (::access(opts.data_dir->c_str(), R_OK | X_OK) != 0)
            return input_error("--data-dir '" + *opts.data_dir + "'", std::string("cannot be read: ") + std::strerror(errno));
    }
    Diagnosis d;
    d.backend = opts.backend.value_or(p.backend);
    bool linux_native = d.backend == spec::Backend::native && p.mechanism == "bubblewrap";
    bool linux = p.platform == "linux" || p.platform == "wsl2";

    if (linux) {
        // What confines this process, said first: the checks below name it
        // when it is what stops them.
        Confinement conf = read_confinement();
        std::string what = describe(conf);
        d.checks.push_back({"confinement", CheckStatus::ok,
                            what.empty() ? "no container, seccomp filter, AppArmor profile or masked /proc found" : what,
                            "", false});
        Check u = check_userns(conf);
        // As root bwrap does not need an unprivileged user namespace; a normal user does.
        u.required = linux_native && ::geteuid() != 0;
        d.checks.push_back(u);
        Check b = check_bwrap(p, opts.timeout_ms, conf);
        b.required = linux_native;
        d.checks.push_back(b);
        Check s = check_socat(p, opts.timeout_ms);
        s.required = linux_native;
        d.checks.push_back(s);
        d.checks.push_back(check_landlock());
        d.checks.push_back(check_seccomp_notify());
        // cc-wrap --capture: every destination local in a network namespace.
        if (auto cap = sandbox::capture_self_test(); cap)
            d.checks.push_back({"capture", CheckStatus::ok,
                                "a network namespace of this user takes every destination as its own (local route for "
                                "0.0.0.0/0 on loopback): cc-wrap --capture can hand programs that ignore the proxy "
                                "variables to cc-egress",
                                "", false});
        else
            d.checks.push_back({"capture", CheckStatus::fail, cap.error().one_line(),
                                "cc-wrap --capture needs a network namespace whose routes this user may change "
                                "(rtnetlink, the namespace's own CAP_NET_ADMIN); without it, only clients that honour "
                                "the proxy variables reach the network",
                                false});
    } else if (p.platform == "macos") {
        Check s{"sandbox-exec", p.sandboxExec ? CheckStatus::ok : CheckStatus::fail, p.sandboxExec.value_or("sandbox-exec not found"),
                p.sandboxExec ? "" : "sandbox-exec ships with macOS in /usr/bin", d.backend == spec::Backend::native};
        d.checks.push_back(s);
    }
    if (opts.data_dir)
        d.checks.push_back(check_reflink(*opts.data_dir));
    else
        d.checks.push_back({"reflink", CheckStatus::skip, "no --data-dir given", "pass --data-dir to check copy-on-write", false});

    Check k{"kvm", p.microvm.kvmUsable ? CheckStatus::ok : CheckStatus::fail, p.microvm.kvmDetail,
            p.microvm.kvmUsable ? "" : "microvm needs /dev/kvm (hardware virtualisation, kvm group membership)",
            d.backend == spec::Backend::microvm};
    d.checks.push_back(k);
    Check v = check_vm_runtime(p, opts.timeout_ms);
    v.required = d.backend == spec::Backend::microvm;
    d.checks.push_back(v);
    if (linux) {
        Check vk = check_vm_kernel();
        vk.required = d.backend == spec::Backend::microvm;
        d.checks.push_back(vk);
    }

    for (auto& c : d.checks)
        if (c.status == CheckStatus::ok) c.hint.clear();
    d.ok = d.backend != spec::Backend::none || !p.sandbox.on;
    for (const auto& c : d.checks)
        if (c.required && c.status != CheckStatus::ok) d.ok = false;
    return d;
}

nlohmann::json to_json(const Diagnosis& d) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& c : d.checks)
        checks.push_back({{"name", c.name}, {"status", std::string(to_string(c.status))}, {"detail", c.detail}, {"hint", c.hint}, {"required", c.required}});
    return {{"backend", std::string(spec::to_string(d.backend))}, {"ok", d.ok}, {"checks", checks}};
}

std::string to_text(const Diagnosis& d) {
    std::ostringstream out;
    for (const auto& c : d.checks) {
        out << (c.status == CheckStatus::ok ? "  ok    " : c.status == CheckStatus::skip ? "  skip  " : "  FAIL  ") << c.name;
        out << std::string(c.name.size() < 15 ? 15 - c.name.size() : 1, ' ') << c.detail;
        if (c.required) out << " [required]";
        out << '\n';
        if (!c.hint.empty()) out << "                       hint: " << c.hint << '\n';
    }
    out << (d.ok ? "backend " + std::string(spec::to_string(d.backend)) + ": every required check passed\n"
                 : "backend " + std::string(spec::to_string(d.backend)) + ": not usable on this host\n");
    return out.str();
}

}  // namespace cc::probe
