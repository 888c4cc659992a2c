#include "cc/sandbox/plan_builder.hpp"

#include "cc/sandbox/seatbelt.hpp"

namespace cc::sandbox {
namespace detail {

auto Builder::has_dest(const std::string& g) const -> bool {
        return std::any_of(plan.mounts.begin(), plan.mounts.end(), [&](const Mount& m) { return m.dest == g; });
}

auto Builder::add(MountOp op, std::string src, std::string dest, std::string why) -> void {
        plan.mounts.push_back({op, std::move(src), std::move(dest), std::move(why)});
}

auto Builder::sightings(const std::string& h) const -> std::vector<Sighting> {
        std::vector<Sighting> out;
        for (std::size_t i = 0; i < plan.mounts.size(); ++i) {
            const auto& m = plan.mounts[i];
            if (m.op != MountOp::bind && m.op != MountOp::ro_bind) continue;
            std::vector<std::string> srcs = {m.src};
            if (auto r = host.resolve(m.src); r && *r != m.src) srcs.push_back(*r);
            for (const auto& s : srcs) {
                if (!is_within(h, s)) continue;
                std::string g = m.dest + h.substr(s.size());
                if (g.size() > 1 && g.back() == '/') g.pop_back();
                if (cover(g) != i) continue;  // shadowed by a deeper mount
                if (std::none_of(out.begin(), out.end(), [&](const Sighting& x) { return x.guest == g; }))
                    out.push_back({g, m.src + h.substr(s.size()), i});
                break;
            }
        }
        return out;
}

auto Builder::pin_ancestors(const Sighting& s) -> void {
        const Mount via = s.mount(plan);
        std::vector<std::string> chain;
        for (std::string g = parent_of(s.guest); depth(g) > depth(via.dest); g = parent_of(g)) chain.push_back(g);
        std::reverse(chain.begin(), chain.end());
        for (const auto& g : chain) {
            if (has_dest(g)) continue;
            add(MountOp::bind, via.src + g.substr(via.dest.size()), g,
                "pin parent of " + s.guest + " (a mount point cannot be renamed away)");
        }
}

auto Builder::system_mounts() -> void {
        for (const auto& dir : k_system_dirs) {
            if (auto link = host.read_link(dir)) {
                add(MountOp::symlink, *link, dir, "as on the host");
            } else if (host.kind(dir) == Kind::dir) {
                add(MountOp::ro_bind, dir, dir, "system directory, read-only");
            }
        }
        add(MountOp::proc, "", "/proc", "fresh /proc of the sandbox's PID namespace");
        add(MountOp::dev, "", "/dev", "minimal /dev (null, zero, full, random, urandom, tty, pts)");
        add(MountOp::tmpfs, "", "/tmp", "private /tmp");
        add(MountOp::tmpfs, "", "/var/tmp", "private /var/tmp");
        add(MountOp::tmpfs, "", "/run", "private /run (holds /run/cc)");
}

auto Builder::spec_mounts() -> void {
        std::vector<spec::BindMount> binds = in.spec.bindMounts;
        std::stable_sort(binds.begin(), binds.end(),
                         [](const auto& a, const auto& b) { return depth(a.guestPath) < depth(b.guestPath); });
        bool home_bound = false;
        if (in.profile == Profile::terminal) {
            add(MountOp::bind, in.home, in.home, "terminal profile: $HOME writable");
            home_bound = true;
        }
        for (const auto& b : binds) {
            if (is_within(in.home, b.guestPath)) home_bound = true;
            bool ro = b.readOnly || read_only_mode();
            std::string why = b.readOnly ? "spec bind, read-only"
                              : ro       ? "spec bind, read-only in " + std::string(policy::to_string(in.spec.mode)) + " mode"
                                         : "spec bind, writable";
            add(ro ? MountOp::ro_bind : MountOp::bind, normalise(b.hostPath, in.home), normalise(b.guestPath, in.home), why);
        }
        if (!home_bound && !in.home.empty() && in.home != "/")
            add(MountOp::tmpfs, "", in.home, "empty private $HOME (host home not bound)");
        // Runner state stays writable in every mode.
        for (const auto& r : in.spec.runnerStateDirs) {
            std::string h = normalise(r, in.home);
            auto seen = sightings(h);
            if (seen.empty()) {
                if (host.kind(h) == Kind::dir) add(MountOp::bind, h, h, "runnerStateDirs: writable in every mode");
                else plan.notes.push_back("runnerStateDirs '" + h + "' does not exist on the host; not bound");
                continue;
            }
            for (const auto& s : seen)
                if (!writable_op(s.mount(plan))) add(MountOp::bind, s.host, s.guest, "runnerStateDirs: writable in every mode");
        }
}

auto Builder::proxy_wiring() -> void {
        auto& p = plan.proxy;
        if (in.backend == Backend::none) {
            p.transport = Transport::none;
            p.why = "backend none: the command shares the host network; nothing is wired";
            return;
        }
        if (in.profile == Profile::terminal) {
            p.transport = Transport::host;
            p.why = "terminal profile: network open without proxies";
            return;
        }
        if (in.vm && in.vm->boot == "template") {
            p.transport = Transport::none;
            p.why = "microvm template boot: no command runs, so no proxies are wired";
            return;
        }
        p.egress = in.egress.source == EgressWiring::Source::handed ? "handed" : "own";
        p.policy = in.egress.policy;
        p.approver = in.egress.approver;
        if (!in.egress.inbox.empty()) {
            p.transport = Transport::fd_handover;
            p.inbox = in.egress.inbox;
            p.why = "cc-wrap makes the listening sockets inside the sandbox's network namespace (setns) and hands them "
                    "to cc-egress's fd inbox before the command starts; no copy hop, and the inbox is never visible "
                    "inside";
        } else {
            p.transport = Transport::socat_bridge;
            p.why = "the egress offers no fd inbox: socat inside bridges loopback to its Unix sockets (one copy hop)";
            plan.notes.push_back("proxy transport is the socat bridge: " + p.why);
            add(MountOp::ro_bind, in.egress.httpUnix, std::string(guest_egress_dir) + "/http.sock", "cc-egress HTTP proxy socket");
            add(MountOp::ro_bind, in.egress.socksUnix, std::string(guest_egress_dir) + "/socks.sock", "cc-egress SOCKS5 proxy socket");
        }
        if (in.egress.intercepting) {
            // Written when cc-egress's ready line is read, before the command
            // starts; the CA's key never leaves cc-egress.
            p.intercept = true;
            add(MountOp::ro_bind, in.runtimeDir + "/tls", guest_tls_dir,
                "the session CA of cc-egress (it terminates TLS for some hosts): ca.pem, and bundle.pem with the system's roots");
        }
        if (in.egress.capture && p.transport == Transport::fd_handover) {
            p.capture = true;
            p.capturePorts = in.egress.capturePorts;
            // /etc/resolv.conf is often a symlink (systemd-resolved's stub
            // file under /run): bubblewrap mounts over the file it leads to,
            // so the bind goes there (made in the sandbox's own /run).
            std::string resolv = "/etc/resolv.conf";
            for (int hops = 0; hops < 8; ++hops) {
                auto link = host.read_link(resolv);
                if (!link || link->empty()) break;
                resolv = normalise((*link)[0] == '/' ? *link : parent_of(resolv) + "/" + *link, "");
            }
            add(MountOp::ro_bind, in.runtimeDir + "/resolv.conf", resolv,
                "capture: the sandbox's resolver is cc-egress's name pool on 127.0.0.1:53");
            std::string ports;
            for (auto port : p.capturePorts) ports += (ports.empty() ? "" : ",") + std::to_string(port);
            plan.notes.push_back("capture: TCP to any address on ports " + ports +
                                 " goes to cc-egress as a CONNECT to its name and port; other ports are refused by the "
                                 "kernel (connection refused), and UDP other than DNS reaches nothing (both reported once a "
                                 "destination)");
        }
}

auto Builder::environment() -> void {
        if (in.inheritEnv) {
            plan.env = in.hostEnv;
            plan.inheritEnv = true;
            plan.notes.push_back("--inherit-env: the host environment is passed unchanged (backend none only)");
        } else {
            auto s = sanitise_env(in.hostEnv, in.spec.envPass);
            plan.env = std::move(s.env);
            plan.envRemoved = std::move(s.removed);
            plan.envRemovedWhy = std::move(s.why);
            plan.envPassed = std::move(s.passed);
            if (!plan.envPassed.empty()) {
                std::string names;
                for (const auto& n : plan.envPassed) names += (names.empty() ? "" : ", ") + n;
                plan.notes.push_back("envPass: credential variables passed into the sandbox: " + names);
            }
        }
        plan.env["CC_SESSION_ID"] = in.spec.sessionId;
        plan.env["CC_SANDBOX_BACKEND"] = std::string(spec::to_string(in.backend));
        if (in.backend != Backend::none) {
            plan.env["TMPDIR"] = "/tmp";
            if (!in.home.empty()) plan.env["HOME"] = in.home;
        }
        if (plan.proxy.transport == Transport::fd_handover || plan.proxy.transport == Transport::socat_bridge) {
            std::string http = "http://127.0.0.1:" + std::to_string(plan.proxy.httpPort);
            std::string socks = "127.0.0.1:" + std::to_string(plan.proxy.socksPort);
            for (const char* k : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) plan.env[k] = http;
            plan.env["ALL_PROXY"] = plan.env["all_proxy"] = "socks5h://" + socks;
            // git runs GIT_SSH_COMMAND through the shell; OpenBSD nc speaks SOCKS5.
            plan.env["GIT_SSH_COMMAND"] = "ssh -o ProxyCommand='nc -X 5 -x " + socks + " %h %p'";
        }
        if (plan.proxy.intercept) {
            // What OpenSSL, Python, curl and git read; Node adds its extra
            // CAs to its own roots.
            const std::string bundle = std::string(guest_tls_dir) + "/bundle.pem";
            for (const char* k : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"})
                plan.env[k] = bundle;
            plan.env["NODE_EXTRA_CA_CERTS"] = std::string(guest_tls_dir) + "/ca.pem";
            // The placeholders stand for the credentials cc-egress holds.
            for (const auto& [name, ph] : in.egress.placeholders)
                plan.env[name] = ph.empty() ? "(the placeholder from cc-egress's ready line)" : ph;
        }
}

auto Builder::guest_lookup(std::string g) const -> Sight {
        for (int hops = 0; hops < 40; ++hops) {
            g = normalise(g, "");
            std::size_t c = cover(g, true);
            const Mount* m = c == npos ? nullptr : &plan.mounts[c];
            if (!m || m->op == MountOp::tmpfs) return {Seen::missing, {}};  // the empty root, or a fresh tmpfs
            if (m->op == MountOp::symlink) {
                std::string target = m->src[0] == '/' ? m->src : parent_of(m->dest) + "/" + m->src;
                g = target + g.substr(m->dest.size());
                continue;
            }
            if (m->op != MountOp::bind && m->op != MountOp::ro_bind) return {};
            // Walk below the mount point on the host; a symlink there is read
            // as the guest reads it (relative to its directory, absolute from
            // the guest's root).
            std::string rest = g.substr(m->dest.size()), h = m->src, gdir = m->dest;
            bool relinked = false;
            std::size_t pos = 0;
            while (pos < rest.size()) {
                std::size_t next = rest.find('/', pos + 1);
                std::string part = rest.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
                std::string tail = next == std::string::npos ? "" : rest.substr(next);
                h += part;
                if (auto link = host.read_link(h)) {
                    g = ((*link)[0] == '/' ? *link : gdir + "/" + *link) + tail;
                    relinked = true;
                    break;
                }
                gdir += part;
                pos = next == std::string::npos ? rest.size() : next;
            }
            if (relinked) continue;
            if (host.kind(h) == Kind::missing) return {Seen::missing, {}};
            return {Seen::found, h};
        }
        return {};
}

auto Builder::decide_init_step() -> void {
        if (in.backend != Backend::microvm && plan.seatbelt.empty()) {
            // Under bubblewrap, always, as the sandbox's PID 1: bubblewrap's
            // own PID 1 would run with none of the layers (no seccomp filter,
            // no Landlock domain), and a process of the sandbox's uid could
            // open its memory where Landlock does not forbid it.
            plan.initWhy = "the init step is the sandbox's PID 1: it carries the command's layers and reaps";
            return;
        }
        if (plan.proxy.transport == Transport::socat_bridge) {
            plan.initWhy = "the socat bridge is started inside";
            return;
        }
        if (in.pty) {
            plan.initWhy = "--pty: the terminal becomes the session's controlling one inside";
            return;
        }
        if (plan.writeRules) {
            plan.initWhy = "the write supervisor's filter is installed inside, by the init step, after bubblewrap's mounts";
            return;
        }
        if (plan.landlockAbi > 0) {
            plan.initWhy = "Landlock is applied inside, by the init step, once bubblewrap's mounts are made";
            return;
        }
        const std::string& cmd = in.command.front();
        auto runnable = [&](const std::string& g) -> Seen {
            auto s = guest_lookup(g);
            if (s.seen != Seen::found) return s.seen;
            auto e = host.executable(s.host);
            if (!e.ok) return host.kind(s.host) == Kind::file ? Seen::unknown : Seen::missing;
            if (e.elf) return Seen::found;
            auto i = guest_lookup(e.interpreter);
            return i.seen == Seen::found && host.executable(i.host).elf ? Seen::found : Seen::unknown;
        };
        Seen seen = Seen::unknown;
        if (cmd.find('/') != std::string::npos) {
            seen = runnable(cmd[0] == '/' ? cmd : plan.chdir + "/" + cmd);
        } else if (!cmd.empty()) {
            auto path = plan.env.find("PATH");
            std::string dirs = path == plan.env.end() ? "/usr/local/bin:/usr/bin:/bin" : path->second;
            std::size_t pos = 0;
            while (pos <= dirs.size()) {
                std::size_t c = dirs.find(':', pos);
                std::string d = dirs.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
                pos = c == std::string::npos ? dirs.size() + 1 : c + 1;
                seen = d.empty() || d[0] != '/' ? Seen::unknown : runnable(d + "/" + cmd);
                if (seen != Seen::missing) break;  // execvp takes the first it can run
            }
        }
        if (seen == Seen::found) {
            plan.initStep = false;
            plan.initWhy = "bubblewrap execs '" + cmd + "' itself: found inside and executable";
        } else {
            plan.initWhy = "'" + cmd + "' is not certainly executable inside: the init step reports 126/127";
        }
}

auto Builder::init_argv(const std::string& exe) const -> std::vector<std::string> {
        std::vector<std::string> a = {exe, "--internal-sandbox-init", "--transport", std::string(to_string(plan.proxy.transport))};
        if (in.pty) a.insert(a.end(), {"--pty", "1"});
        if (plan.landlockAbi > 0) {
            a.insert(a.end(), {"--landlock-abi", std::to_string(plan.landlockAbi)});
            for (const auto& w : plan.landlockWritable) a.insert(a.end(), {"--landlock-write", w});
        }
        if (plan.writeRules)
            a.insert(a.end(), {"--write-filter-fd", std::to_string(write_filter_fd), "--write-sock-fd",
                               std::to_string(write_sock_fd)});
        if (plan.proxy.transport == Transport::socat_bridge) {
            a.insert(a.end(), {"--http-port", std::to_string(plan.proxy.httpPort), "--socks-port",
                               std::to_string(plan.proxy.socksPort), "--egress-dir", guest_egress_dir});
            a.insert(a.end(), {"--socat", in.socat});
        }
        a.push_back("--");
        a.insert(a.end(), in.command.begin(), in.command.end());
        return a;
}

auto Builder::bwrap_argv() -> void {
        auto& a = plan.argv;
        // --new-session stops TIOCSTI injection into the caller's terminal;
        // with --pty the child's terminal is its own, so it keeps job control.
        a = {in.bwrap, "--die-with-parent"};
        if (!in.pty) a.push_back("--new-session");
        // A user namespace always, as root too (cc-wrap has switched to an
        // unprivileged uid by then): the command's uid 0 would otherwise be
        // the host's, with write access to every root-owned file /proc shows.
        a.insert(a.end(), {"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"});
        // Nested user namespaces are refused twice: by the seccomp filter
        // and by the kernel's own limit on this namespace.
        if (!in.spec.allowNestedNamespaces) a.push_back("--disable-userns");
        // A session's own uid is nobody inside (not for the VM monitor: the
        // guest's kernel sees the host's ids through 9p and must own its files).
        if (in.identity.ownId && in.backend != Backend::microvm)
            a.insert(a.end(), {"--uid", std::to_string(k_sandbox_nobody), "--gid", std::to_string(k_sandbox_nobody)});
        if (plan.proxy.transport != Transport::host) a.push_back("--unshare-net");
        a.insert(a.end(), {"--cap-drop", "ALL", "--hostname", "cc-sandbox", "--json-status-fd", "3"});
        // fd-handover: bubblewrap waits on fd 4 until cc-wrap has handed the
        // listeners over, so the command never starts without its proxies.
        if (plan.proxy.transport == Transport::fd_handover) a.insert(a.end(), {"--block-fd", "4"});
        if (plan.seccomp) a.insert(a.end(), {"--seccomp", std::to_string(bwrap_seccomp_fd)});
        for (const auto& m : plan.mounts) {
            a.push_back("--" + std::string(to_string(m.op)));
            if (m.op == MountOp::bind || m.op == MountOp::ro_bind || m.op == MountOp::dev_bind || m.op == MountOp::symlink) a.push_back(m.src);
            a.push_back(m.dest);
        }
        if (!plan.chdir.empty()) a.insert(a.end(), {"--chdir", plan.chdir});
        a.push_back("--");
        if (plan.initStep) {
            auto init = init_argv(guest_init);
            if (in.backend != Backend::microvm) {  // the init step is the sandbox's PID 1 (decide_init_step)
                a.insert(a.end() - 1, "--as-pid-1");
                init.insert(init.begin() + 2, {"--pid1", "1"});
            }
            a.insert(a.end(), init.begin(), init.end());
        } else {
            a.insert(a.end(), in.command.begin(), in.command.end());
        }
}

auto Builder::seatbelt_plan() -> Result<Plan> {
        if (auto st = seatbelt_check(in); !st) return st.error();
        auto& p = plan.proxy;
        if (in.profile == Profile::terminal) {
            p.transport = Transport::host;
            p.why = "terminal profile: network open without proxies";
        } else {
            p.transport = Transport::loopback;
            p.egress = in.egress.source == EgressWiring::Source::handed ? "handed" : "own";
            p.httpPort = port_of(in.egress.http, 0);
            p.socksPort = port_of(in.egress.socks, 0);
            p.why = "Seatbelt shares the host loopback: the child reaches cc-egress's ports directly";
            if (p.egress == "own" && (p.httpPort == 0 || p.socksPort == 0))
                p.why += "; the session's own cc-egress listens on ports the kernel chooses, and the profile allowing "
                         "exactly those is made once its ready line names them";
        }
        if (in.dropFilenameDenies) plan.filenameDeniesDropped = k_filename;
        plan.seatbelt = seatbelt_profile(in, host, p.httpPort, p.socksPort);
        plan.notes.push_back("Seatbelt backend: generated profile not verified on Apple hardware; violations come "
                             "from the system log (tag " + seatbelt_tag(in) + ")");
        environment();
        plan.env["TMPDIR"] = seatbelt_session_tmp(in);
        if (p.transport == Transport::loopback) {
            std::string http = "http://127.0.0.1:" + std::to_string(p.httpPort);
            for (const char* k : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) plan.env[k] = http;
            std::string socks = "127.0.0.1:" + std::to_string(p.socksPort);
            plan.env["ALL_PROXY"] = plan.env["all_proxy"] = "socks5h://" + socks;
            plan.env["GIT_SSH_COMMAND"] = "ssh -o ProxyCommand='nc -X 5 -x " + socks + " %h %p'";
        }
        plan.argv = {"/usr/bin/sandbox-exec", "-p", plan.seatbelt};
        plan.initWhy = "Seatbelt: the init step runs the command and reports 126/127";
        auto init = init_argv(in.initExe);
        plan.argv.insert(plan.argv.end(), init.begin(), init.end());
        plan.chdir = in.spec.guestWorkdir.value_or("");
        return plan;
}

auto Builder::writable_by_identity() -> void {
        if (!plan.identity.drop) return;
        if (plan.identity.uid == k_sandbox_nobody)
            plan.notes.push_back("the command runs as nobody (65534; " + plan.identity.why +
                                 "), a uid the host's daemons may share: a process of theirs could trace it (give the "
                                 "working directory an owner of its own, or --run-as)");
        for (const auto& m : plan.mounts) {
            if (m.op != MountOp::bind) continue;
            auto o = host.owner(m.src);
            if (!o) continue;
            const auto& id = plan.identity;
            unsigned bit = o->uid == id.uid ? 0200 : o->gid == id.gid ? 0020 : 0002;
            if (!(o->mode & bit))
                plan.notes.push_back("writable bind '" + m.dest + "' (owner " + std::to_string(o->uid) + ":" +
                                     std::to_string(o->gid) + ", mode " + octal(o->mode) + ") is not writable by uid " +
                                     std::to_string(id.uid) + ", which the command runs as (" + id.why + ")");
        }
}

auto Builder::sources_reachable() const -> Status {
        if (!plan.identity.drop) return ok();
        const auto& id = plan.identity;
        for (const auto& m : plan.mounts) {
            if (m.op != MountOp::bind && m.op != MountOp::ro_bind) continue;
            for (std::string d = parent_of(m.src); !d.empty(); d = parent_of(d)) {
                auto o = host.owner(d);
                if (o) {
                    unsigned bit = o->uid == id.uid ? 0100 : o->gid == id.gid ? 0010 : 0001;
                    if (!(o->mode & bit))
                        return unavailable_error(
                            "bind source '" + m.src + "'",
                            "run by root, the sandbox runs as uid " + std::to_string(id.uid) + " (" + id.why +
                                "), which cannot pass directory '" + d + "' (owner " + std::to_string(o->uid) + ":" +
                                std::to_string(o->gid) + ", mode " + octal(o->mode) +
                                "): make it passable (chmod o+x), move the workspace, or --run-as a uid that can");
                }
                if (d == "/") break;
            }
        }
        return ok();
}

auto Builder::build() -> Result<Plan> {
        plan.spec = in.spec;
        plan.identity = in.identity;
        plan.backend = in.backend;
        plan.backendLog = in.backendLog;
        plan.profile = in.profile;
        plan.runtimeDir = in.runtimeDir;
        if (in.command.empty()) return input_error("command", "missing (cc-wrap [options] -- CMD ARGS...)");
        if (in.inheritEnv && in.backend != Backend::none)
            return input_error("--inherit-env", "allowed only with backend none (the sandbox always sanitises the environment)");
        if (in.backend == Backend::microvm && !in.vm)
            return unavailable_error("backend microvm", "no VM runtime was resolved; nothing runs without the isolation asked for");
        if (in.backend == Backend::none) {
            if (in.profile == Profile::terminal)
                return unavailable_error("--profile terminal",
                                         "native wrapping is unavailable (backend none); a terminal never pretends to be sandboxed");
            proxy_wiring();
            environment();
            if (auto st = filename_rules(); !st) return st.error();
            plan.notes.push_back("backend none: no sandbox; binds, deny rules and modes are not enforced");
            plan.identity.userNamespace = false;
            if (plan.identity.drop)
                plan.notes.push_back("backend none run by root: the command runs as uid " +
                                     std::to_string(plan.identity.uid) + " (" + plan.identity.why + "), never as root");
            plan.argv = init_argv(in.initExe);
            plan.initWhy = "backend none: the init step runs the command and reports 126/127";
            plan.chdir = in.spec.guestWorkdir.value_or("");
            return plan;
        }
        if (in.mechanism == "seatbelt") return seatbelt_plan();
        mask_dir = in.runtimeDir + "/mask-dir";
        mask_file = in.runtimeDir + "/mask-file";
        plan.maskFiles = {mask_dir, mask_file};
        system_mounts();
        spec_mounts();
        if (auto st = bind_sources_safe(); !st) return st.error();
        if (auto st = deny_rules(); !st) return st.error();
        if (!missing_targets_.empty()) {
            std::string list;
            for (const auto& m : missing_targets_) list += (list.empty() ? "" : ", ") + m;
            return unavailable_error(
                std::to_string(missing_targets_.size()) + " mandatory write-deny target" +
                    (missing_targets_.size() == 1 ? "" : "s"),
                "missing: " + list +
                    "; bubblewrap can only cover a path that exists and cc-wrap never creates files on the host: "
                    "create them (empty files do), or bind those directories read-only");
        }
        proxy_wiring();
        // A credential's file stays outside what the sandbox sees: under no
        // bind (its own copy would be the secret the placeholder stands for).
        for (const auto& f : in.egress.credentialFiles)
            for (const auto& m : plan.mounts) {
                if (m.src.empty() || m.op == MountOp::symlink) continue;
                const std::string src = host.resolve(m.src).value_or(m.src);  // both sides as the kernel finds them
                if (f == src || (f.size() > src.size() && f.compare(0, src.size(), src) == 0 &&
                                 (src == "/" || f[src.size()] == '/')))
                    return input_error("--credential file '" + f + "'",
                                       "is inside the sandbox's view (" + m.dest + ", " + m.why + "): keep secrets outside every bind");
            }
        // Later mounts over a path win, so parents first; same depth keeps order.
        auto by_depth = [](const Mount& x, const Mount& y) { return depth(x.dest) < depth(y.dest); };
        std::stable_sort(plan.mounts.begin(), plan.mounts.end(), by_depth);
        environment();
        if (in.spec.guestWorkdir)
            plan.chdir = *in.spec.guestWorkdir;
        else if (!in.spec.bindMounts.empty())
            plan.chdir = normalise(in.spec.bindMounts.front().guestPath, in.home);
        else
            plan.chdir = in.profile == Profile::terminal ? in.home : "/";
        plan.layers = {"user-ns", "mount-ns", "pid-ns", "ipc-ns", "uts-ns"};
        if (plan.proxy.transport != Transport::host) plan.layers.push_back("net-ns");
        if (plan.proxy.capture) plan.layers.push_back("capture");
        plan.seccomp = default_seccomp({in.spec.allowNestedNamespaces, in.spec.allowPtrace});
        plan.layers.push_back("seccomp");
        if (in.spec.allowNestedNamespaces)
            plan.notes.push_back("allowNestedNamespaces: the command may create user namespaces of its own");
        if (in.spec.allowPtrace) plan.notes.push_back("allowPtrace: the command may trace its own processes");
        if (in.landlockAbi > 0) {
            plan.landlockAbi = in.landlockAbi;
            std::set<std::string> w = {"/dev", "/proc"};
            for (const auto& m : plan.mounts)
                if (m.op == MountOp::bind || m.op == MountOp::tmpfs) w.insert(m.dest);
            plan.landlockWritable.assign(w.begin(), w.end());
            plan.layers.push_back("landlock:v" + std::to_string(in.landlockAbi));
        } else {
            plan.notes.push_back("Landlock: this kernel has none; the mounts and seccomp layers stand without it");
        }
        // The write supervisor, when a rule reaches into something writable.
        bool host_writable = std::any_of(plan.mounts.begin(), plan.mounts.end(), [](const Mount& m) { return m.op == MountOp::bind; });
        if (in.writeSupervisor && (!rules_.paths.empty() || !rules_.names.empty())) {
            rules_.writable = plan.landlockWritable;
            if (in.profile == Profile::dispatch)
                for (const auto& m : plan.mounts)
                    if (m.op == MountOp::bind) rules_.gitScope.push_back(m.dest);
            plan.writeRules = rules_;
            plan.layers.push_back("write-supervisor");
        } else if (!in.writeSupervisor && host_writable) {
            plan.notes.push_back(in.writeSupervisorRefused
                                     ? "write supervisor: off (--no-write-supervisor); write-denies are read-only binds "
                                       "over paths that exist at launch"
                                     : "write supervisor: this kernel lacks seccomp user notification with descriptor "
                                       "injection; write-denies are read-only binds over paths that exist at launch");
        }
        writable_by_identity();
        decide_init_step();
        if (plan.initStep) {
            add(MountOp::ro_bind, in.initExe, guest_init, "the init step (cc-wrap-init)");
            std::stable_sort(plan.mounts.begin(), plan.mounts.end(), by_depth);
        }
        if (in.backend == Backend::microvm) microvm_mounts();
        add(MountOp::remount_ro, "", "/", "the empty root itself is read-only: writes outside the binds fail");
        if (auto st = sources_reachable(); !st) return st.error();
        bwrap_argv();
        return plan;
}

}  // namespace detail

using namespace detail;

std::string_view to_string(Profile p) { return p == Profile::terminal ? "terminal" : "dispatch"; }

std::string_view to_string(MountOp op) {
    switch (op) {
        case MountOp::ro_bind: return "ro-bind";
        case MountOp::bind: return "bind";
        case MountOp::dev_bind: return "dev-bind";
        case MountOp::tmpfs: return "tmpfs";
        case MountOp::symlink: return "symlink";
        case MountOp::proc: return "proc";
        case MountOp::dev: return "dev";
        case MountOp::dir: return "dir";
        case MountOp::remount_ro: return "remount-ro";
    }
    return "ro-bind";
}

std::string_view to_string(Transport t) {
    switch (t) {
        case Transport::none: return "none";
        case Transport::host: return "host";
        case Transport::fd_handover: return "fd-handover";
        case Transport::socat_bridge: return "socat-bridge";
        case Transport::loopback: return "loopback";
    }
    return "none";
}

const std::vector<std::string>& secret_read_denies() { return k_secrets; }
const std::vector<std::string>& home_write_denies() { return k_home_write; }
const std::vector<std::string>& standard_filename_denies() { return k_filename; }

Result<Plan> build_plan(const PlanInput& in, const HostPaths& host) {
    if (in.backend == Backend::microvm && in.vm && !in.vm->monitor.empty()) return build_microvm_plan(in, host);
    Builder b{in, host, {}, {}, {}, {}, {}, {}, {}};
    return b.build();
}

static nlohmann::json identity_json(const Plan& p) {
    const Identity& id = p.identity;
    nlohmann::json j = {{"hostUid", id.uid}, {"hostGid", id.gid}, {"userNamespace", id.userNamespace},
                        {"switchedFromRoot", id.drop}, {"why", id.why}};
    // Shown as nobody only inside bubblewrap's user namespace (bwrap_argv).
    if (id.ownId && p.backend == Backend::native && p.seatbelt.empty())
        j["sandboxUid"] = j["sandboxGid"] = k_sandbox_nobody;
    return j;
}

nlohmann::json to_json(const Plan& p) {
    using nlohmann::json;
    json mounts = json::array();
    for (const auto& m : p.mounts) {
        json j = {{"op", std::string(to_string(m.op))}, {"dest", m.dest}, {"why", m.why}};
        if (!m.src.empty()) j["src"] = m.src;
        mounts.push_back(j);
    }
    json denies = json::array();
    for (const auto& d : p.denies)
        denies.push_back({{"kind", d.kind}, {"rule", d.rule}, {"source", d.source}, {"glob", d.glob},
                          {"spellings", d.spellings}, {"enforcement", d.enforcement}});
    json env = json::object();
    for (const auto& [k, v] : p.env) env[k] = v;
    json j = {
        {"sessionId", p.spec.sessionId},
        {"backend", spec::to_string(p.backend)},
        {"backendLog", p.backendLog},
        {"profile", to_string(p.profile)},
        {"mode", policy::to_string(p.spec.mode)},
        {"argv", p.argv},
        {"chdir", p.chdir},
        {"env", env},
        {"envRemoved", p.envRemoved},
        {"envRemovedWhy", p.envRemovedWhy},
        {"envPassed", p.envPassed},
        {"inheritEnv", p.inheritEnv},
        {"mounts", mounts},
        {"denies", denies},
        {"filenameDeniesDropped", p.filenameDeniesDropped},
        {"proxy", {{"transport", std::string(to_string(p.proxy.transport))}, {"httpPort", p.proxy.httpPort}, {"socksPort", p.proxy.socksPort},
                   {"egress", p.proxy.egress}, {"why", p.proxy.why}}},
        {"runtimeDir", p.runtimeDir},
        {"initStep", {{"used", p.initStep}, {"why", p.initWhy}}},
        {"notes", p.notes},
        {"identity", identity_json(p)},
        {"layers", p.layers},
    };
    if (p.seccomp) j["seccomp"] = to_json(*p.seccomp);
    if (p.landlockAbi > 0) j["landlock"] = {{"abi", p.landlockAbi}, {"writable", p.landlockWritable}};
    if (p.writeRules) j["writeSupervisor"] = to_json(*p.writeRules);
    if (!p.proxy.inbox.empty()) j["proxy"]["inbox"] = p.proxy.inbox;
    if (!p.proxy.policy.empty()) j["proxy"]["policy"] = p.proxy.policy;
    if (!p.proxy.approver.empty()) j["proxy"]["approver"] = p.proxy.approver;
    if (p.proxy.intercept) j["proxy"]["intercept"] = true;
    if (p.proxy.capture) j["proxy"]["capture"] = {{"ports", p.proxy.capturePorts}, {"resolver", "127.0.0.1:53"}};
    if (p.vm) j["microvm"] = to_json(*p.vm);
    return j;
}

nlohmann::json summary(const Plan& p) {
    std::size_t rw = 0;
    for (const auto& m : p.mounts) rw += m.op == MountOp::bind;
    nlohmann::json s = {{"backend", spec::to_string(p.backend)},
            {"backendLog", p.backendLog},
            {"profile", to_string(p.profile)},
            {"mode", policy::to_string(p.spec.mode)},
            {"proxyTransport", std::string(to_string(p.proxy.transport))},
            {"mounts", p.mounts.size()},
            {"writableMounts", rw},
            {"denyRules", p.denies.size()},
            {"identity", identity_json(p)},
            {"layers", p.layers},
            {"notes", p.notes}};
    if (p.vm)
        s["microvm"] = {{"accel", p.vm->in.accel}, {"monitor", p.vm->in.monitor},
                        {"monitorVersion", p.vm->in.monitorVersion}, {"kernel", p.vm->in.kernel},
                        {"kernelVersion", p.vm->in.kernelVersion}, {"share", p.vm->share}};
    return s;
}

}  // namespace cc::sandbox
