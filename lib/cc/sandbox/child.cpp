// Children of cc-wrap: the session's own cc-egress, and waiting for exits (launch_parts.hpp).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif
#ifdef __APPLE__
#include <mach-o/dyld.h>
#endif

// Boost.Process compiles its vfork(2) path only for pre-2008 POSIX feature
// levels; glibc has vfork at every level, so it is asked for here.
#ifndef BOOST_POSIX_HAS_VFORK
#define BOOST_POSIX_HAS_VFORK 1
#endif
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <iostream>
#include <memory>
#include <utility>

#include "cc/core/io.hpp"
#include "cc/core/json_reader.hpp"
#include "cc/core/tool.hpp"
#include "cc/probe/probe.hpp"
#include "cc/sandbox/events.hpp"
#include "cc/sandbox/handover.hpp"
#include "cc/sandbox/plan.hpp"
#include "cc/sandbox/launch_parts.hpp"
#include "cc/sandbox/portable.hpp"
#include "cc/sandbox/seatbelt.hpp"
#include "cc/sandbox/seccomp.hpp"
#include "cc/fs/unique_fd.hpp"
#include "cc/sandbox/violation.hpp"


namespace cc::sandbox::detail {

namespace bp = boost::process;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using nlohmann::json;

std::string self_exe() {
#ifdef __APPLE__
    char buf[4096];
    std::uint32_t size = sizeof buf;
    if (::_NSGetExecutablePath(buf, &size) != 0) return "cc-wrap";
    std::error_code ec;
    auto real = fs::canonical(buf, ec);
    return ec ? std::string(buf) : real.string();
#else
    std::error_code ec;
    auto p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("/proc/self/exe") : p.string();
#endif
}

// Waits up to `ms` for `pid` (a child) to exit and reaps it; its wait status,
// or nullopt if it is still running. A pidfd wakes us the moment it exits;
// kernels without pidfd_open get a 1 ms polling loop.
std::optional<int> wait_exit(pid_t pid, int ms) {
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) return st;
#ifdef __linux__
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) {
        pollfd p{fd, POLLIN, 0};
        while (::poll(&p, 1, ms) < 0 && errno == EINTR) {}
        ::close(fd);
        if (::waitpid(pid, &st, WNOHANG) == pid) return st;
        return std::nullopt;
    }
#endif
    for (int i = 0; i < ms; ++i) {
        if (::waitpid(pid, &st, WNOHANG) == pid) return st;
        ::usleep(1000);
    }
    return std::nullopt;
}

#ifndef CC_LIBEXECDIR
#define CC_LIBEXECDIR "/usr/libexec/cc"
#endif

// cc-wrap-init next to this binary (a build tree), else the installed one in
// libexec/cc; else cc-wrap itself runs the init step.
std::string init_exe() {
    std::string self = self_exe();
    for (const std::string& init : {(fs::path(self).parent_path() / "cc-wrap-init").string(),
                                    std::string(CC_LIBEXECDIR) + "/cc-wrap-init"})
        if (::access(init.c_str(), X_OK) == 0) return init;
    return self;
}

std::optional<std::string> find_egress() {
    fs::path dir = fs::path(self_exe()).parent_path();
    for (const auto& c : {dir / "cc-egress", dir.parent_path() / "cc-egress" / "cc-egress"})
        if (::access(c.c_str(), X_OK) == 0) return c.string();
    auto found = bp::search_path("cc-egress");
    if (!found.empty()) return found.string();
    return std::nullopt;
}

Status start_egress(Egress& eg, const std::string& exe, const std::string& spec_file, const std::string& inbox) {
    int in[2], out[2], err[2];
    if (!pipe_cloexec(in) || !pipe_cloexec(out) || !pipe_cloexec(err)) return io_error("pipe", "cannot create");
    // Only the inbox, and for one handover (this sandbox's): cc-wrap hands it the
    // listeners; no Unix proxy sockets needed, and nothing else gets in after.
    // No inbox (Seatbelt): its own loopback listeners on ports the kernel
    // chooses, which its ready line names (read_egress_ready).
    std::vector<std::string> args = {"--spec", spec_file, "--exit-with-stdin"};
    if (!inbox.empty()) args.insert(args.end(), {"--fd-inbox", inbox, "--fd-inbox-once"});
    if (!eg.policy_file.empty()) args.insert(args.end(), {"--policy", eg.policy_file});
    if (!eg.approver.empty()) args.insert(args.end(), {"--approver", eg.approver});
    for (const auto& h : eg.intercept) args.insert(args.end(), {"--intercept", h});
    for (const auto& c : eg.credentials) args.insert(args.end(), {"--credential", c});
    if (!eg.upstream_ca.empty()) args.insert(args.end(), {"--upstream-ca", eg.upstream_ca});
    try {
        SpawnMask mask;
        bp::child c(exe, bp::args(args), bp::posix::fd.bind(0, in[0]), bp::posix::fd.bind(1, out[1]),
                    bp::posix::fd.bind(2, err[1]),
                    bp::posix::use_vfork, bp::extend::on_exec_setup = [&mask, &eg](auto&) {
                        die_with_parent();
                        // The fd: credentials as 3, 4, ... (their copies here are 100 and up).
                        int keep = 3;
                        for (int fd : eg.credential_fds)
                            if (::dup2(fd, keep++) < 0) ::_exit(125);
                        cloexec_from(keep);
                        child_signals_default(mask.old);
                    });
        eg.pid = c.id();
        c.detach();
        // Read by cc-egress once; nothing else needs them.
        for (int fd : eg.credential_fds) ::close(fd);
        eg.credential_fds.clear();
    } catch (const std::exception& e) {
        for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
        return unavailable_error("cc-egress", std::string("cannot start: ") + e.what());
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    eg.stderr_r = err[0];
    eg.stdin_w = in[1];
    eg.stdout_r = out[0];
    return ok();
}

Result<json> read_egress_ready(Egress& eg, int ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    auto gone = [&](const std::string& why) -> Error {
        // cc-egress refusing its input (exit 2: a bad allowlist pattern) is
        // the caller's bad input; anything else is our own failure.
        auto st = eg.stop();
        eg.show_err();
        if (st && WIFEXITED(*st) && WEXITSTATUS(*st) == tool::exit_usage)
            return input_error("cc-egress", why + " (it refused its input)");
        return unavailable_error("cc-egress", why);
    };
    while (eg.head.find('\n') == std::string::npos) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return gone("not ready within " + std::to_string(ms) + " ms");
        if (eg.head.size() > 65536) return gone("no ready line in its first 64 KiB of output");
        pollfd pf{eg.stdout_r, POLLIN, 0};
        int r = ::poll(&pf, 1, static_cast<int>(left.count()));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        char tmp[4096];
        ssize_t n = ::read(eg.stdout_r, tmp, sizeof tmp);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return gone("exited before it was ready");
        eg.head.append(tmp, static_cast<std::size_t>(n));
    }
    auto nl = eg.head.find('\n');
    auto j = json::parse(eg.head.substr(0, nl), nullptr, false);
    if (!j.is_object() || j.value("event", "") != "ready")
        return gone("first line is not a ready object: " + eg.head.substr(0, std::min<std::size_t>(nl, 200)));
    // Nothing connects before the command starts, so nothing follows yet.
    eg.head.erase(0, nl + 1);
    eg.ready_seen = true;
    return j;
}

// The runtime copy of the spec for cc-egress: private to this run, removed
// with the runtime directory, so no fsync (it is read once, milliseconds later).
Status write_private(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return io_error(path, "cannot create");
    int e = io::write_all(fd, text);
    ::close(fd);
    if (e != 0) return io_error(path, "cannot write", e);
    return ok();
}

// Fills the wiring from a ready object (our own cc-egress, or --egress FILE).
Status wiring_from_ready(const json& j, EgressWiring& w, const std::string& subject) {
    if (!j.is_object() || j.value("event", "") != "ready")
        return input_error(subject, "not a cc-egress ready object");
    auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
    w.http = str("http");
    w.socks = str("socks");
    w.httpUnix = str("httpUnix");
    w.socksUnix = str("socksUnix");
    w.inbox = str("fdInbox");
    if (w.inbox.empty() && (w.httpUnix.empty() || w.socksUnix.empty()))
        return input_error(subject, "has neither fdInbox nor httpUnix and socksUnix; nothing can reach it from inside");
    return ok();
}

Status intercept_from_ready(const json& j, EgressWiring& w, const std::string& subject) {
    if (!j.contains("interceptCa")) return ok();
    const json& ca = j["interceptCa"];
    if (!ca.is_string() || ca.get<std::string>().rfind("-----BEGIN CERTIFICATE-----", 0) != 0)
        return input_error(subject, "interceptCa is not a PEM certificate");
    w.caPem = ca.get<std::string>();
    if (j.contains("credentials")) {
        if (!j["credentials"].is_array()) return input_error(subject, "credentials is not an array");
        for (const auto& c : j["credentials"]) {
            if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || !c.contains("placeholder") ||
                !c["placeholder"].is_string())
                return input_error(subject, "a credential without a name and a placeholder");
            const std::string name = c["name"], ph = c["placeholder"];
            if (ph.size() != 47 || ph.rfind("cc-placeholder-", 0) != 0 ||
                ph.find_first_not_of("0123456789abcdef", 15) != std::string::npos)
                return input_error(subject, "credential " + name + ": the placeholder is not cc-placeholder- and 32 hex digits");
            if (name.empty() || name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
                                    std::string::npos)
                return input_error(subject, "credential '" + name + "': not a variable name");
            auto it = std::find_if(w.placeholders.begin(), w.placeholders.end(), [&](const auto& p) { return p.first == name; });
            if (it != w.placeholders.end()) it->second = ph;
            else w.placeholders.push_back({name, ph});
        }
    }
    for (const auto& [name, ph] : w.placeholders)
        if (ph.empty()) return input_error(subject, "names no placeholder for credential " + name);
    return ok();
}

Status write_tls_bundle(const std::string& runtime_dir, const std::string& ca_pem) {
    const std::string dir = runtime_dir + "/tls";
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return io_error(dir, "cannot create");
    ::chmod(dir.c_str(), 0755);
    std::string bundle;
    if (auto sys = io::read_input("/etc/ssl/certs/ca-certificates.crt"); sys) bundle = *sys;
    if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
    bundle += ca_pem;
    for (const auto& [name, text] : {std::pair{"/ca.pem", ca_pem}, std::pair{"/bundle.pem", bundle}})
        if (auto s = io::write_file_atomic(dir + name, text, 0644); !s) return s.error();
    return ok();
}

}  // namespace cc::sandbox::detail
