// The guest init of the microvm backend (microvm_guest.hpp): PID 1 inside the
// VM. Two phases: the generic boot (/cc/boot.json of the initramfs: the
// modules, the ports, the network), then "ready" on the status port and the
// session's plan read from it (the host step sends it). A snapshot is taken
// between the two, so a restored guest holds nothing of any session until
// its plan comes. Everything it does comes from those two files, which
// cc-wrap wrote from the plan; nothing here decides policy.
#include "cc/sandbox/microvm_guest.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <linux/random.h>
#include <time.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace cc::sandbox {

namespace {

int console_fd = 2;

void say(const std::string& line) {
    std::string l = "cc-wrap-vm: " + line + "\n";
    ssize_t w = ::write(console_fd, l.data(), l.size());
    (void)w;
}

[[noreturn]] void power_off() {
    ::sync();
    // Without ACPI (a kernel built for this backend) power-off only halts
    // the CPU, and the monitor would wait forever: a reset instead.
    if (::access("/sys/firmware/acpi", F_OK) == 0) ::reboot(RB_POWER_OFF);
    // -no-reboot turns a reset into the monitor's exit as well.
    ::reboot(RB_AUTOBOOT);
    for (;;) ::pause();
}

void write_all(int fd, const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
        ssize_t n = ::write(fd, s.data() + off, s.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        off += static_cast<std::size_t>(n);
    }
}

// Reports a failure of the init itself (the host step turns it into 125).
[[noreturn]] void die(int status_fd, const std::string& why) {
    say(why);
    if (status_fd >= 0) write_all(status_fd, "error " + why + "\n");
    power_off();
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// /dev/vportNpM by the port's name, waiting for the driver to create it.
std::map<std::string, std::string> find_ports(const std::vector<std::string>& want) {
    std::map<std::string, std::string> found;
    for (int tries = 0; tries < 400 && found.size() < want.size(); ++tries) {
        if (DIR* d = ::opendir("/sys/class/virtio-ports")) {
            while (auto* e = ::readdir(d)) {
                if (e->d_name[0] == '.') continue;
                std::string name = read_file(std::string("/sys/class/virtio-ports/") + e->d_name + "/name");
                while (!name.empty() && (name.back() == '\n' || name.back() == '\0')) name.pop_back();
                std::string dev = std::string("/dev/") + e->d_name;
                if (!name.empty() && ::access(dev.c_str(), F_OK) == 0) found[name] = dev;
            }
            ::closedir(d);
        }
        if (found.size() < want.size()) ::usleep(5000);
    }
    return found;
}

bool load_module(const std::string& path, std::string& err) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err = path + ": " + std::strerror(errno);
        return false;
    }
    long r = ::syscall(SYS_finit_module, fd, "", 0);
    int e = errno;
    ::close(fd);
    if (r != 0 && e != EEXIST) {
        err = path + ": finit_module: " + std::strerror(e);
        return false;
    }
    return true;
}

bool set_addr(int s, const char* ifname, unsigned long req, const char* addr) {
    struct ifreq ifr {};
    std::strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
    auto* sin = reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr);
    sin->sin_family = AF_INET;
    ::inet_pton(AF_INET, addr, &sin->sin_addr);
    return ::ioctl(s, req, &ifr) == 0;
}

bool link_up(int s, const char* ifname) {
    struct ifreq ifr {};
    std::strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
    if (::ioctl(s, SIOCGIFFLAGS, &ifr) != 0) return false;
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    return ::ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
}

// Loopback, and the proxy link: an address on the user-mode network's
// subnet and no default route, so only that subnet is reachable (and the
// monitor forwards only the proxies' addresses there).
std::string network(const nlohmann::json& net) {
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return std::string("socket: ") + std::strerror(errno);
    std::string err;
    if (!link_up(s, "lo")) err = "cannot bring up lo";
    if (err.empty() && net.is_object()) {
        std::string ifname = net.value("interface", "eth0");
        std::string addr = net.value("address", "");
        std::string mask = net.value("netmask", "255.255.255.0");
        for (int tries = 0; tries < 200 && ::if_nametoindex(ifname.c_str()) == 0; ++tries) ::usleep(5000);
        if (!set_addr(s, ifname.c_str(), SIOCSIFADDR, addr.c_str()) ||
            !set_addr(s, ifname.c_str(), SIOCSIFNETMASK, mask.c_str()) || !link_up(s, ifname.c_str()))
            err = "cannot configure " + ifname + ": " + std::strerror(errno);
    }
    ::close(s);
    return err;
}

// A fresh /dev for the command: the usual nodes, a devpts, nothing of the
// VM's devices (the virtio ports stay PID 1's).
std::string make_dev(const std::string& root) {
    std::string dev = root + "/dev";
    if (::mount("tmpfs", dev.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m") != 0)
        return dev + ": mount tmpfs: " + std::strerror(errno);
    struct Node {
        const char* name;
        unsigned maj, min;
    };
    for (const Node& n : {Node{"null", 1, 3}, Node{"zero", 1, 5}, Node{"full", 1, 7}, Node{"random", 1, 8},
                          Node{"urandom", 1, 9}, Node{"tty", 5, 0}}) {
        std::string p = dev + "/" + n.name;
        if (::mknod(p.c_str(), S_IFCHR | 0666, makedev(n.maj, n.min)) != 0)
            return p + ": mknod: " + std::strerror(errno);
        ::chmod(p.c_str(), 0666);
    }
    std::string pts = dev + "/pts";
    ::mkdir(pts.c_str(), 0755);
    if (::mount("devpts", pts.c_str(), "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") != 0)
        return pts + ": mount devpts: " + std::strerror(errno);
    if (::symlink("pts/ptmx", (dev + "/ptmx").c_str()) != 0) return dev + "/ptmx: " + std::strerror(errno);
    for (auto [from, to] : {std::pair{"/proc/self/fd", "fd"}, std::pair{"/proc/self/fd/0", "stdin"},
                            std::pair{"/proc/self/fd/1", "stdout"}, std::pair{"/proc/self/fd/2", "stderr"}})
        if (::symlink(from, (dev + "/" + to).c_str()) != 0) return dev + "/" + to + ": " + std::strerror(errno);
    std::string shm = dev + "/shm";
    ::mkdir(shm.c_str(), 01777);
    ::mount("tmpfs", shm.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
    return {};
}

// The command's process: the ports as stdio, the shared root, its uid.
[[noreturn]] void exec_command(const nlohmann::json& plan, int in, int out, int err) {
    ::setsid();
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    auto fail = [&](const std::string& what, int status) {
        std::string l = "cc-wrap: " + what + "\n";
        write_all(2, l);
        ::_exit(status);
    };
    // The native backend's seccomp program, read before the root changes
    // and installed last, once the command's uid is set.
    std::string bpf;
    if (int fd = ::open("/cc/seccomp.bpf", O_RDONLY | O_CLOEXEC); fd >= 0) {
        char buf[65536];
        for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) bpf.append(buf, static_cast<std::size_t>(n));
        ::close(fd);
        if (bpf.empty() || bpf.size() % sizeof(sock_filter) != 0) fail("seccomp program: unreadable", 125);
    }
    if (::chroot("/newroot") != 0) fail(std::string("chroot: ") + std::strerror(errno), 125);
    std::string cwd = plan.value("cwd", "/");
    if (::chdir(cwd.c_str()) != 0) fail("working directory " + cwd + ": " + std::strerror(errno), 125);
    unsigned uid = plan.value("uid", 65534u), gid = plan.value("gid", 65534u);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0)
        fail("cannot switch to uid " + std::to_string(uid), 125);
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (!bpf.empty()) {
        sock_fprog prog{static_cast<unsigned short>(bpf.size() / sizeof(sock_filter)),
                        reinterpret_cast<sock_filter*>(bpf.data())};
        if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
            fail(std::string("seccomp: ") + std::strerror(errno), 125);
    }
    std::vector<std::string> args = plan.value("argv", std::vector<std::string>{});
    std::vector<std::string> envs;
    std::string path = "/usr/local/bin:/usr/bin:/bin";
    const nlohmann::json env = plan.value("env", nlohmann::json::object());
    for (const auto& [k, v] : env.items()) {
        envs.push_back(k + "=" + v.get<std::string>());
        if (k == "PATH") path = v.get<std::string>();
    }
    if (args.empty()) fail("no command", 125);
    std::vector<char*> av, ev;
    for (auto& a : args) av.push_back(a.data());
    av.push_back(nullptr);
    for (auto& e : envs) ev.push_back(e.data());
    ev.push_back(nullptr);
    ::setenv("PATH", path.c_str(), 1);  // execvpe searches the command's PATH
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &sa, nullptr);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe(av[0], av.data(), ev.data());
    int e = errno;
    if (e == ENOENT) fail(args[0] + ": command not found", 127);
    fail(args[0] + ": " + std::strerror(e), 126);
    ::_exit(126);
}

std::string unhex(const std::string& h) {
    std::string out;
    auto v = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
    for (std::size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(v(h[i]) << 4 | v(h[i + 1]));
    return out;
}

// The session's plan: "plan N" and N bytes of JSON on the status port. A
// "kill N" line first (the host step was signalled before the plan went
// out) ends the guest as that signal would have ended the command. Whatever
// came after the plan (a "kill N" sent right behind it) is left in `rest`.
nlohmann::json receive_plan(int status, std::string& rest) {
    std::string got;
    char buf[65536];
    for (;;) {
        auto nl = got.find('\n');
        if (nl != std::string::npos) {
            std::string line = got.substr(0, nl);
            if (line.rfind("kill ", 0) == 0) {
                write_all(status, "signal " + std::to_string(std::atoi(line.c_str() + 5)) + "\n");
                power_off();
            }
            if (line.rfind("plan ", 0) != 0) die(status, "status port: expected the plan, got '" + line.substr(0, 40) + "'");
            std::size_t n = std::strtoul(line.c_str() + 5, nullptr, 10);
            if (n == 0 || n > (64u << 20)) die(status, "status port: plan of " + std::to_string(n) + " bytes");
            while (got.size() < nl + 1 + n) {
                ssize_t k = ::read(status, buf, sizeof buf);
                if (k < 0 && errno == EINTR) continue;
                if (k <= 0) die(status, "status port closed in the plan");
                got.append(buf, static_cast<std::size_t>(k));
            }
            nlohmann::json plan = nlohmann::json::parse(got.substr(nl + 1, n), nullptr, false);
            if (!plan.is_object()) die(status, "the plan is not a JSON object");
            rest = got.substr(nl + 1 + n);
            return plan;
        }
        ssize_t k = ::read(status, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) die(status, "status port closed before the plan");
        got.append(buf, static_cast<std::size_t>(k));
    }
}

// What a restored guest must not share with any other guest restored from
// the same snapshot: the random generator's state (the host's fresh bytes
// are mixed in and the generator reseeded at once, so every later read,
// the command's AT_RANDOM and ASLR included, differs per session) and the
// wall clock (the snapshot's is from when it was taken).
std::string freshen(const nlohmann::json& plan) {
    std::string seed = unhex(plan.value("seed", std::string()));
    if (seed.size() < 32) return "the plan has no seed";
    int fd = ::open("/dev/urandom", O_RDWR | O_CLOEXEC);
    if (fd < 0) return std::string("/dev/urandom: ") + std::strerror(errno);
    std::vector<char> info(sizeof(rand_pool_info) + seed.size());
    auto* rp = reinterpret_cast<rand_pool_info*>(info.data());
    rp->entropy_count = static_cast<int>(seed.size() * 8);
    rp->buf_size = static_cast<int>(seed.size());
    std::memcpy(rp->buf, seed.data(), seed.size());
    bool ok = ::ioctl(fd, RNDADDENTROPY, rp) == 0 && ::ioctl(fd, RNDRESEEDCRNG) == 0;
    int e = errno;
    ::close(fd);
    if (!ok) return std::string("reseeding the random generator: ") + std::strerror(e);
    if (plan.contains("realtime")) {
        timespec ts{};
        ts.tv_sec = plan["realtime"].value("sec", 0L);
        ts.tv_nsec = plan["realtime"].value("nsec", 0L);
        if (::clock_settime(CLOCK_REALTIME, &ts) != 0) return std::string("setting the clock: ") + std::strerror(errno);
    }
    std::string bpf = unhex(plan.value("seccomp", std::string()));
    if (!bpf.empty()) {
        int s = ::open("/cc/seccomp.bpf", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (s < 0) return std::string("/cc/seccomp.bpf: ") + std::strerror(errno);
        write_all(s, bpf);
        ::close(s);
    }
    return {};
}

}  // namespace

void vm_guest_main() {
    ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
    ::mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
    ::mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, nullptr);
    int c = ::open("/dev/console", O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (c >= 0) console_fd = c;
    nlohmann::json boot = nlohmann::json::parse(read_file("/cc/boot.json"), nullptr, false);
    if (!boot.is_object()) die(-1, "/cc/boot.json: not a JSON object");
    std::string err;
    for (const auto& m : boot.value("modules", std::vector<std::string>{}))
        if (!load_module("/lib/modules/" + m, err)) die(-1, "module " + err);

    auto ports = find_ports({vm_port_stdin, vm_port_stdout, vm_port_stderr, vm_port_status});
    int status = ports.count(vm_port_status) ? ::open(ports[vm_port_status].c_str(), O_RDWR | O_CLOEXEC) : -1;
    if (status < 0) die(-1, "no status port (virtio-serial " + std::string(vm_port_status) + ")");
    for (const char* p : {vm_port_stdin, vm_port_stdout, vm_port_stderr})
        if (!ports.count(p)) die(status, std::string("no virtio-serial port ") + p);
    int in = ::open(ports[vm_port_stdin].c_str(), O_RDONLY | O_CLOEXEC);
    int out = ::open(ports[vm_port_stdout].c_str(), O_WRONLY | O_CLOEXEC);
    int errp = ::open(ports[vm_port_stderr].c_str(), O_WRONLY | O_CLOEXEC);
    if (in < 0 || out < 0 || errp < 0) die(status, std::string("cannot open the stdio ports: ") + std::strerror(errno));

    if (auto e = network(boot.contains("net") ? boot["net"] : nlohmann::json()); !e.empty()) die(status, e);
    // Generic up to here. A snapshot is taken while the guest waits below.
    write_all(status, "ready\n");
    std::string pending;
    nlohmann::json plan = receive_plan(status, pending);
    if (auto e = freshen(plan); !e.empty()) die(status, e);
    ::mkdir("/newroot", 0755);
    std::string opts = "trans=virtio,version=9p2000.L,msize=" + std::to_string(plan.value("msize", 512000)) +
                       ",cache=" + plan.value("cache", std::string("mmap")) + ",access=client";
    if (::mount(plan.value("rootTag", std::string("ccroot")).c_str(), "/newroot", "9p", MS_NOSUID | MS_NODEV,
                opts.c_str()) != 0)
        die(status, std::string("mount 9p root: ") + std::strerror(errno));
    if (::mount("proc", "/newroot/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=0") != 0)
        die(status, std::string("mount /proc: ") + std::strerror(errno));
    if (auto e = make_dev("/newroot"); !e.empty()) die(status, e);
    if (plan.contains("note")) say(plan["note"].get<std::string>());

    pid_t child = ::fork();
    if (child < 0) die(status, std::string("fork: ") + std::strerror(errno));
    if (child == 0) exec_command(plan, in, out, errp);
    ::close(in);
    ::close(out);
    ::close(errp);

    // Wait for the command; meanwhile the host step may ask for a signal.
    int wst = 0;
    for (;;) {
        pid_t r = ::waitpid(-1, &wst, WNOHANG);
        if (r == child) break;
        if (r > 0) continue;
        struct pollfd p = {status, POLLIN, 0};
        const bool have_line = pending.find('\n') != std::string::npos;  // left behind the plan
        if (have_line || (::poll(&p, 1, 20) > 0 && (p.revents & POLLIN))) {
            char buf[64];
            ssize_t n = have_line ? 0 : ::read(status, buf, sizeof buf);
            if (n > 0) pending.append(buf, static_cast<std::size_t>(n));
            for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
                std::string line = pending.substr(0, nl);
                pending.erase(0, nl + 1);
                if (line.rfind("kill ", 0) == 0) ::kill(-child, std::atoi(line.c_str() + 5));
            }
        }
    }
    ::kill(-1, SIGKILL);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    ::umount2("/newroot/dev/pts", MNT_DETACH);
    ::sync();
    write_all(status, WIFSIGNALED(wst) ? "signal " + std::to_string(WTERMSIG(wst)) + "\n"
                                       : "exit " + std::to_string(WEXITSTATUS(wst)) + "\n");
    power_off();
}

}  // namespace cc::sandbox
