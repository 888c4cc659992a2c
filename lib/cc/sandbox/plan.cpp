#include "cc/sandbox/plan.hpp"

#include "cc/sandbox/seatbelt.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

namespace cc::sandbox {

namespace {

using spec::Backend;

const std::vector<std::string> k_secrets = {
    "~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gh", "~/.config/hub", "~/.kube", "~/.docker/config.json",
    "~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.yarnrc.yml", "~/.pypirc", "~/.config/gcloud", "~/.azure",
    "~/.oci", "~/.password-store", "~/.vault-token", "~/.terraform.d/credentials.tfrc.json",
    "~/.cargo/credentials", "~/.cargo/credentials.toml", "~/.gem/credentials", "~/.local/share/keyrings",
    "~/Library/Keychains",
    // git's second credential store, and the agent CLIs' own login tokens
    // (their settings are write-denied below; the tokens are not to be read).
    "~/.config/git/credentials", "~/.claude/.credentials.json", "~/.codex/auth.json", "~/.gemini/oauth_creds.json",
    "~/.config/op", "~/.pgpass", "~/.my.cnf", "~/.s3cfg", "~/.boto", "~/.m2/settings.xml",
    "~/.gradle/gradle.properties", "~/.composer/auth.json", "~/.config/composer/auth.json",
};

// Files whose next read by the host runs code: shell start files and the
// agent CLIs' own configuration (hooks, permission settings).
const std::vector<std::string> k_home_write = {
    "~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.bash_logout", "~/.profile",
    "~/.zshrc", "~/.zshenv", "~/.zprofile", "~/.zlogin", "~/.zlogout",
    "~/.claude", "~/.claude.json", "~/.codex", "~/.gemini",
    // git's own configuration (hooks paths, fsmonitor and pager programs),
    // files the start files commonly source, and the other places a login
    // or an editor, terminal multiplexer or desktop session runs code from.
    "~/.gitconfig", "~/.config/git", "~/.bash_aliases", "~/.config/fish", "~/.tmux.conf", "~/.vimrc",
    "~/.config/nvim", "~/.config/systemd", "~/.config/autostart", "~/.xprofile", "~/.xsessionrc",
    "~/.pam_environment", "~/.config/environment.d",
};

// The same agent CLIs read per-repository settings from the checkout (hooks
// and permission rules run code on the host's next session there).
const std::vector<std::string> k_repo_agent_config = {".claude", ".mcp.json", ".codex", ".gemini"};

const std::vector<std::string> k_filename = {".env", ".env.*", "*.key", "*.pem"};

// System files a process running as uid 0 inside could otherwise read.
const std::vector<std::string> k_etc_secrets = {
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
    "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssh/ssh_host_dsa_key", "/etc/ssl/private", "/etc/security/opasswd", "/etc/krb5.keytab",
    "/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets",
};

const std::vector<std::string> k_system_dirs = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"};

struct Builder {
    const PlanInput& in;
    const HostPaths& host;
    Plan plan;
    std::string mask_dir, mask_file;

    // --- mount bookkeeping -------------------------------------------------
    bool writable_op(const Mount& m) const { return m.op == "bind" || m.op == "tmpfs"; }
    bool is_mount_op(const Mount& m) const { return m.op == "bind" || m.op == "ro-bind" || m.op == "tmpfs"; }

    // The mount that decides what is at guest path g: the deepest mount whose
    // destination contains g; among equals the last one. Binds and tmpfs
    // only, or (any_op) also symlinks, /proc and /dev; never remount-ro,
    // which changes a flag, not what is there.
    // Indices, not pointers: mounts are appended while sightings are in use.
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    std::size_t cover(const std::string& g, bool any_op = false) const {
        std::size_t best = npos;
        for (std::size_t i = 0; i < plan.mounts.size(); ++i) {
            const auto& m = plan.mounts[i];
            if (!(any_op ? m.op != "remount-ro" : is_mount_op(m)) || !is_within(g, m.dest)) continue;
            if (best == npos || depth(m.dest) >= depth(plan.mounts[best].dest)) best = i;
        }
        return best;
    }
    bool has_dest(const std::string& g) const {
        return std::any_of(plan.mounts.begin(), plan.mounts.end(), [&](const Mount& m) { return m.dest == g; });
    }
    void add(std::string op, std::string src, std::string dest, std::string why) {
        plan.mounts.push_back({std::move(op), std::move(src), std::move(dest), std::move(why)});
    }

    // Guest paths where host path h is visible, with the mount showing it.
    struct Sighting {
        std::string guest;
        std::string host;  // h as the mount's source spells it
        std::size_t via;
        const Mount& mount(const Plan& p) const { return p.mounts[via]; }
    };
    std::vector<Sighting> sightings(const std::string& h) const {
        std::vector<Sighting> out;
        for (std::size_t i = 0; i < plan.mounts.size(); ++i) {
            const auto& m = plan.mounts[i];
            if (m.op != "bind" && m.op != "ro-bind") continue;
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

    // A mount point cannot be renamed or removed (EBUSY), so binding every
    // directory between the writable mount and the protected path over
    // itself stops "rename the parent, put a fresh tree in its place".
    void pin_ancestors(const Sighting& s) {
        const Mount via = s.mount(plan);
        std::vector<std::string> chain;
        for (std::string g = parent_of(s.guest); depth(g) > depth(via.dest); g = parent_of(g)) chain.push_back(g);
        std::reverse(chain.begin(), chain.end());
        for (const auto& g : chain) {
            if (has_dest(g)) continue;
            add("bind", via.src + g.substr(via.dest.size()), g,
                "pin parent of " + s.guest + " (a mount point cannot be renamed away)");
        }
    }

    // --- rules -------------------------------------------------------------
    // Calls fn(spelling, kind on the host, sighting) for every place a rule's
    // spellings are visible; records the spellings no bind shows. fn returns
    // a Status so a rule that cannot be enforced stops the plan.
    template <typename Fn>
    Status each_sighting(DenyRule& d, Fn&& fn) {
        for (const auto& sp : d.spellings) {
            auto seen = sightings(sp);
            if (seen.empty()) d.enforcement.push_back(sp + ": not visible (outside every bind)");
            Kind k = seen.empty() ? Kind::missing : host.kind(sp);
            for (const auto& s : seen)
                if (auto st = fn(sp, k, s); !st) return st;
        }
        return ok();
    }

    void read_deny(const std::string& rule, const std::string& source) {
        DenyRule d{"read", rule, source, is_glob(rule), spellings(rule, in.home, host), {}};
        (void)each_sighting(d, [&](const std::string&, Kind k, const Sighting& s) -> Status {
            if (k == Kind::missing) {
                d.enforcement.push_back(s.guest + ": absent on the host");
            } else if (k == Kind::dir) {
                add("ro-bind", mask_dir, s.guest, "read-deny " + rule);
                d.enforcement.push_back(s.guest + ": masked (empty mode-000 directory)");
            } else {
                add("ro-bind", mask_file, s.guest, "read-deny " + rule);
                d.enforcement.push_back(s.guest + ": masked (empty mode-000 file)");
            }
            return ok();
        });
        plan.denies.push_back(std::move(d));
    }

    // missing_ok: a protected checkout that does not exist has nothing to
    // protect; a missing start file or hooks dir inside a writable bind could
    // be created, and covering it would need a mount point on the host.
    std::vector<std::string> missing_targets_;
    WriteRules rules_;  // for the write supervisor, when the kernel offers it
    std::vector<std::string> writable_in_protected_;  // guest paths of binds said writableInProtected
    Status write_deny(const std::string& rule, const std::string& source, bool missing_ok) {
        DenyRule d{"write", rule, source, false, spellings(rule, in.home, host), {}};
        auto st = each_sighting(d, [&](const std::string& sp, Kind k, const Sighting& s) -> Status {
            const Mount via = s.mount(plan);
            if (!writable_op(via)) {
                d.enforcement.push_back(s.guest + ": read-only bind");
                return ok();
            }
            if (in.writeSupervisor) {
                WriteRules::PathRule pr{s.guest, rule, source, {}};
                for (const auto& w : writable_in_protected_)
                    if (is_within(w, s.guest)) pr.except.push_back(w);
                rules_.paths.push_back(std::move(pr));
            }
            if (k == Kind::missing) {
                if (in.writeSupervisor) {
                    d.enforcement.push_back(s.guest + ": absent on the host; the write supervisor refuses creating it");
                    return ok();
                }
                if (missing_ok) {
                    d.enforcement.push_back(s.guest + ": absent on the host");
                    return ok();
                }
                // Collected, and refused once with every one named (build()).
                missing_targets_.push_back("'" + sp + "' (" + rule + ", in writable bind '" + via.dest + "')");
                d.enforcement.push_back(s.guest + ": absent on the host, and cannot be covered");
                return ok();
            }
            pin_ancestors(s);
            add("ro-bind", s.host, s.guest, "write-deny " + rule);
            d.enforcement.push_back(s.guest + ": read-only bind over the writable bind, parents pinned" +
                                    std::string(in.writeSupervisor ? "; the write supervisor refuses replacing it" : ""));
            return ok();
        });
        if (!st) return st;
        plan.denies.push_back(std::move(d));
        return ok();
    }

    // --- phases ------------------------------------------------------------
    void system_mounts() {
        for (const auto& dir : k_system_dirs) {
            if (auto link = host.read_link(dir)) {
                add("symlink", *link, dir, "as on the host");
            } else if (host.kind(dir) == Kind::dir) {
                add("ro-bind", dir, dir, "system directory, read-only");
            }
        }
        add("proc", "", "/proc", "fresh /proc of the sandbox's PID namespace");
        add("dev", "", "/dev", "minimal /dev (null, zero, full, random, urandom, tty, pts)");
        add("tmpfs", "", "/tmp", "private /tmp");
        add("tmpfs", "", "/var/tmp", "private /var/tmp");
        add("tmpfs", "", "/run", "private /run (holds /run/cc)");
    }

    bool read_only_mode() const { return in.profile == Profile::dispatch && policy::is_read_only(in.spec.mode); }

    void spec_mounts() {
        std::vector<spec::BindMount> binds = in.spec.bindMounts;
        std::stable_sort(binds.begin(), binds.end(),
                         [](const auto& a, const auto& b) { return depth(a.guestPath) < depth(b.guestPath); });
        bool home_bound = false;
        if (in.profile == Profile::terminal) {
            add("bind", in.home, in.home, "terminal profile: $HOME writable");
            home_bound = true;
        }
        for (const auto& b : binds) {
            if (is_within(in.home, b.guestPath)) home_bound = true;
            bool ro = b.readOnly || read_only_mode();
            std::string why = b.readOnly ? "spec bind, read-only"
                              : ro       ? "spec bind, read-only in " + std::string(policy::to_string(in.spec.mode)) + " mode"
                                         : "spec bind, writable";
            add(ro ? "ro-bind" : "bind", normalise(b.hostPath, in.home), normalise(b.guestPath, in.home), why);
        }
        if (!home_bound && !in.home.empty() && in.home != "/")
            add("tmpfs", "", in.home, "empty private $HOME (host home not bound)");
        // Runner state stays writable in every mode.
        for (const auto& r : in.spec.runnerStateDirs) {
            std::string h = normalise(r, in.home);
            auto seen = sightings(h);
            if (seen.empty()) {
                if (host.kind(h) == Kind::dir) add("bind", h, h, "runnerStateDirs: writable in every mode");
                else plan.notes.push_back("runnerStateDirs '" + h + "' does not exist on the host; not bound");
                continue;
            }
            for (const auto& s : seen)
                if (!writable_op(s.mount(plan))) add("bind", s.host, s.guest, "runnerStateDirs: writable in every mode");
        }
    }

    // Two things an earlier run could have arranged, refused before anything
    // runs: a bind source that passes through a symlink lying inside another
    // writable bind (the agent replaced a directory the next run binds with a
    // link to ~/.ssh or /etc), and cc-wrap's runtime directory (its masks and
    // the egress inbox) inside any bind.
    Status bind_sources_safe() {
        std::vector<std::string> writable;
        for (const auto& m : plan.mounts)
            if (m.op == "bind") writable.push_back(m.src);
        for (const auto& b : in.spec.bindMounts) {
            std::string src = normalise(b.hostPath, in.home);
            std::string prefix;
            std::size_t pos = 1;
            while (pos <= src.size()) {
                std::size_t next = src.find('/', pos);
                prefix = src.substr(0, next);
                if (auto link = host.read_link(prefix)) {
                    for (const auto& w : writable)
                        if (w != prefix && is_within(prefix, w) && !is_within(w, prefix))
                            return unavailable_error(
                                "bind '" + src + "'",
                                "its path passes through the symlink '" + prefix + "' -> '" + *link +
                                    "', which lies inside writable bind '" + w +
                                    "' (a command could have planted it); refusing to follow it");
                }
                if (next == std::string::npos) break;
                pos = next + 1;
            }
        }
        // A writable bind inside a protected checkout would make part of it
        // writable again, below the read-only bind that protects it.
        for (const auto& b : in.spec.bindMounts) {
            if (b.readOnly || read_only_mode()) continue;
            std::string src = normalise(b.hostPath, in.home);
            for (const auto& p : in.spec.protectedPaths)
                for (const auto& sp : spellings(p, in.home, host))
                    if (is_within(src, sp)) {
                        if (!b.writableInProtected)
                            return input_error("bindMounts '" + src + "'",
                                               "a writable bind inside protectedPath '" + p +
                                                   "' would make that part of it writable; bind it read-only, or "
                                                   "say writableInProtected on the bind");
                        plan.notes.push_back("writableInProtected: '" + src + "' is writable inside protectedPath '" +
                                             p + "' (at " + normalise(b.guestPath, in.home) + ")");
                        writable_in_protected_.push_back(normalise(b.guestPath, in.home));
                    }
        }
        if (!in.runtimeDir.empty())
            for (const auto& m : plan.mounts)
                if ((m.op == "bind" || m.op == "ro-bind") && is_within(in.runtimeDir, m.src) &&
                    m.src.rfind(in.runtimeDir, 0) != 0)
                    return unavailable_error("runtime directory '" + in.runtimeDir + "'",
                                             "it lies inside bind '" + m.src + "' (" + m.dest +
                                                 "): set XDG_RUNTIME_DIR or TMPDIR outside every bind");
        return ok();
    }

    // .git directories at the top of a writable bind and up to two levels down
    // (the workdir itself, repos/<name>).
    // `.git` files seen on the way (a worktree's or submodule's "gitdir:"
    // pointer): rewritten, they send the host's next git to a directory the
    // command filled with hooks and config.
    mutable std::set<std::string> git_files_;
    std::vector<std::string> git_dirs_in(const std::string& root) const {
        std::vector<std::string> out;
        std::vector<std::pair<std::string, int>> todo = {{root, 0}};
        while (!todo.empty()) {
            auto [dir, level] = todo.back();
            todo.pop_back();
            if (host.kind(dir + "/.git") == Kind::dir) out.push_back(dir + "/.git");
            else if (!host.read_link(dir + "/.git") && host.kind(dir + "/.git") == Kind::file)
                git_files_.insert(dir + "/.git");
            if (level >= 2) continue;
            for (const auto& name : host.list(dir)) {
                if (name.empty() || name[0] == '.') continue;
                std::string child = dir == "/" ? "/" + name : dir + "/" + name;
                if (!host.read_link(child) && host.kind(child) == Kind::dir) todo.push_back({child, level + 1});
            }
        }
        std::sort(out.begin(), out.end());
        return out;
    }

    Status deny_rules() {
        // System secrets, wherever a bind shows them (/etc itself, or a bind
        // of / or /etc elsewhere).
        for (const auto& f : k_etc_secrets) read_deny(f, "system secrets");
        // Home secrets, under cc-wrap's own $HOME and under every other home
        // a bind shows (a bind of /home, or of a user's home or part of it).
        for (const auto& s : k_secrets) read_deny(s, "secrets");
        for (const auto& h : other_homes())
            for (const auto& s : k_secrets) read_deny(h + s.substr(1), "secrets (home " + h + ")");
        for (const auto& p : in.spec.protectedPaths)
            if (auto st = write_deny(p, "protectedPaths", true); !st) return st;
        if (in.profile == Profile::dispatch) {
            for (const auto& p : k_home_write)
                if (auto st = write_deny(p, "mandatory", true && !home_writable()); !st) return st;
            // Another user's home a bind shows: their start files run code as
            // them on their next login, so they are covered the same way.
            for (const auto& h : other_homes())
                for (const auto& p : k_home_write)
                    if (auto st = write_deny(h + p.substr(1), "mandatory (home " + h + ")", !writable_at(h)); !st)
                        return st;
            std::vector<std::string> roots;
            for (const auto& m : plan.mounts)
                if (m.op == "bind") roots.push_back(m.src);
            std::set<std::string> seen;
            for (const auto& r : roots)
                for (const auto& g : git_dirs_in(r))
                    if (seen.insert(g).second) {
                        if (auto st = write_deny(g + "/hooks", "mandatory", false); !st) return st;
                        if (auto st = write_deny(g + "/config", "mandatory", false); !st) return st;
                        // Per-repository agent settings: covered when present;
                        // a missing one cannot be covered without a host
                        // placeholder, which cc-wrap never creates (the deny
                        // rule's enforcement says "absent on the host").
                        std::string repo = g.substr(0, g.size() - 5);
                        for (const auto& name : k_repo_agent_config)
                            if (auto st = write_deny(repo + "/" + name, "mandatory (repository agent settings)", true); !st)
                                return st;
                    }
            for (const auto& f : git_files_)
                if (auto st = write_deny(f, "mandatory (gitdir pointer file)", true); !st) return st;
        }
        for (const auto& p : in.denyWrite) {
            if (p.find('/') == std::string::npos || is_glob(p)) continue;  // filename rules below
            if (auto st = write_deny(p, "--deny-write", true); !st) return st;
        }
        return filename_rules();
    }

    // Homes other than $HOME that some bind's source reaches: /root and
    // /home/<user> below or above a bind source.
    std::vector<std::string> other_homes() const {
        std::set<std::string> out;
        auto consider = [&](const std::string& h) {
            if (h != in.home && host.kind(h) == Kind::dir) out.insert(h);
        };
        for (const auto& m : plan.mounts) {
            if (m.op != "bind" && m.op != "ro-bind") continue;
            for (const std::string& base : {std::string("/home"), std::string("/root")}) {
                if (base == "/root") {
                    if (is_within("/root", m.src) || is_within(m.src, "/root")) consider("/root");
                    continue;
                }
                if (is_within(base, m.src)) {  // the bind shows all of /home
                    for (const auto& name : host.list(base)) consider(base + "/" + name);
                } else if (is_within(m.src, base) && m.src != base) {  // inside one user's home
                    std::string rest = m.src.substr(base.size() + 1);
                    consider(base + "/" + rest.substr(0, rest.find('/')));
                }
            }
        }
        return {out.begin(), out.end()};
    }

    bool home_writable() const { return writable_at(in.home); }
    // Is host directory h shown writable by some bind?
    bool writable_at(const std::string& h) const {
        if (h == in.home) {
            std::size_t c = cover(in.home);
            return c != npos && plan.mounts[c].op == "bind";
        }
        for (const auto& s : sightings(h))
            if (s.mount(plan).op == "bind") return true;
        return false;
    }

    // Bubblewrap can cover existing paths, not names created later.
    Status filename_rules() {
        std::vector<std::pair<std::string, std::string>> rules;
        if (in.profile == Profile::dispatch && in.backend == Backend::native) {
            for (const auto& g : k_filename) {
                if (in.dropFilenameDenies)
                    plan.filenameDeniesDropped.push_back(g);
                else
                    rules.emplace_back(g, "standard dispatch policy");
            }
        }
        for (const auto& p : in.denyWrite)
            if (p.find('/') == std::string::npos || is_glob(p)) rules.emplace_back(p, "--deny-write");
        if (!plan.filenameDeniesDropped.empty())
            plan.notes.push_back("standard filename write-denies dropped by --drop-filename-denies: files named .env, "
                                 ".env.*, *.key, *.pem can be created in writable binds");
        std::string writable;
        for (const auto& m : plan.mounts)
            if (m.op == "bind") { writable = m.dest; break; }
        for (const auto& [rule, source] : rules) {
            DenyRule d{"write", rule, source, true, {rule}, {}};
            if (in.backend == Backend::none) {
                d.enforcement.push_back("not enforced: backend none has no sandbox");
            } else if (in.writeSupervisor && in.mechanism != "seatbelt") {
                rules_.names.push_back({rule, source});
                d.enforcement.push_back("the write supervisor refuses creating, writing, renaming or removing a file of "
                                        "that name" + (writable.empty() ? std::string() : " (writable bind '" + writable + "')"));
            } else if (!writable.empty()) {
                return unavailable_error("filename write-deny '" + rule + "' (" + source + ")",
                                         "bubblewrap cannot refuse files created later under that name in writable "
                                         "bind '" + writable + "'; refusing to run with a weaker policy "
                                         "(--drop-filename-denies to run without the standard set, or a read-only mode)");
            } else {
                d.enforcement.push_back("nothing host-backed is writable");
            }
            plan.denies.push_back(std::move(d));
        }
        return ok();
    }

    void proxy_wiring() {
        auto& p = plan.proxy;
        if (in.backend == Backend::none) {
            p.transport = "none";
            p.why = "backend none: the command shares the host network; nothing is wired";
            return;
        }
        if (in.profile == Profile::terminal) {
            p.transport = "host";
            p.why = "terminal profile: network open without proxies";
            return;
        }
        p.egress = in.egress.source == EgressWiring::Source::handed ? "handed" : "own";
        if (!in.egress.inbox.empty()) {
            p.transport = "fd-handover";
            p.inbox = in.egress.inbox;
            p.why = "cc-wrap makes the listening sockets inside the sandbox's network namespace (setns) and hands them "
                    "to cc-egress's fd inbox before the command starts; no copy hop, and the inbox is never visible "
                    "inside";
        } else {
            p.transport = "socat-bridge";
            p.why = "the egress offers no fd inbox: socat inside bridges loopback to its Unix sockets (one copy hop)";
            plan.notes.push_back("proxy transport is the socat bridge: " + p.why);
            add("ro-bind", in.egress.httpUnix, std::string(guest_egress_dir) + "/http.sock", "cc-egress HTTP proxy socket");
            add("ro-bind", in.egress.socksUnix, std::string(guest_egress_dir) + "/socks.sock", "cc-egress SOCKS5 proxy socket");
        }
    }

    void environment() {
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
        if (in.backend == Backend::native) {
            plan.env["TMPDIR"] = "/tmp";
            if (!in.home.empty()) plan.env["HOME"] = in.home;
        }
        if (plan.proxy.transport == "fd-handover" || plan.proxy.transport == "socat-bridge") {
            std::string http = "http://127.0.0.1:" + std::to_string(plan.proxy.httpPort);
            std::string socks = "127.0.0.1:" + std::to_string(plan.proxy.socksPort);
            for (const char* k : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) plan.env[k] = http;
            plan.env["ALL_PROXY"] = plan.env["all_proxy"] = "socks5h://" + socks;
            // git runs GIT_SSH_COMMAND through the shell; OpenBSD nc speaks SOCKS5.
            plan.env["GIT_SSH_COMMAND"] = "ssh -o ProxyCommand='nc -X 5 -x " + socks + " %h %p'";
        }
    }

    // --- the command, seen from inside ---------------------------------------
    // What is at guest path g: found on the host at `host`, certainly missing,
    // or unknown (under /proc, /dev, or too many links): then the init step
    // decides inside.
    enum class Seen { found, missing, unknown };
    struct Sight {
        Seen seen = Seen::unknown;
        std::string host;
    };
    Sight guest_lookup(std::string g) const {
        for (int hops = 0; hops < 40; ++hops) {
            g = normalise(g, "");
            std::size_t c = cover(g, true);
            const Mount* m = c == npos ? nullptr : &plan.mounts[c];
            if (!m || m->op == "tmpfs") return {Seen::missing, {}};  // the empty root, or a fresh tmpfs
            if (m->op == "symlink") {
                std::string target = m->src[0] == '/' ? m->src : parent_of(m->dest) + "/" + m->src;
                g = target + g.substr(m->dest.size());
                continue;
            }
            if (m->op != "bind" && m->op != "ro-bind") return {};
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

    // Can bubblewrap exec the command by itself, with the same answer the
    // init step would give? Only when the command is certainly found inside
    // and executable: an ELF binary, or a script whose interpreter is one.
    void decide_init_step() {
        if (plan.proxy.transport == "socat-bridge") {
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

    std::vector<std::string> init_argv(const std::string& exe) const {
        std::vector<std::string> a = {exe, "--internal-sandbox-init", "--transport", plan.proxy.transport};
        if (in.pty) a.insert(a.end(), {"--pty", "1"});
        if (plan.landlockAbi > 0) {
            a.insert(a.end(), {"--landlock-abi", std::to_string(plan.landlockAbi)});
            for (const auto& w : plan.landlockWritable) a.insert(a.end(), {"--landlock-write", w});
        }
        if (plan.writeRules)
            a.insert(a.end(), {"--write-filter-fd", std::to_string(write_filter_fd), "--write-sock-fd",
                               std::to_string(write_sock_fd)});
        if (plan.proxy.transport == "socat-bridge") {
            a.insert(a.end(), {"--http-port", std::to_string(plan.proxy.httpPort), "--socks-port",
                               std::to_string(plan.proxy.socksPort), "--egress-dir", guest_egress_dir});
            a.insert(a.end(), {"--socat", in.socat});
        }
        a.push_back("--");
        a.insert(a.end(), in.command.begin(), in.command.end());
        return a;
    }

    void bwrap_argv() {
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
        if (plan.proxy.transport != "host") a.push_back("--unshare-net");
        a.insert(a.end(), {"--cap-drop", "ALL", "--hostname", "cc-sandbox", "--json-status-fd", "3"});
        // fd-handover: bubblewrap waits on fd 4 until cc-wrap has handed the
        // listeners over, so the command never starts without its proxies.
        if (plan.proxy.transport == "fd-handover") a.insert(a.end(), {"--block-fd", "4"});
        if (plan.seccomp) a.insert(a.end(), {"--seccomp", std::to_string(bwrap_seccomp_fd)});
        for (const auto& m : plan.mounts) {
            a.push_back("--" + m.op);
            if (m.op == "bind" || m.op == "ro-bind" || m.op == "symlink") a.push_back(m.src);
            a.push_back(m.dest);
        }
        if (!plan.chdir.empty()) a.insert(a.end(), {"--chdir", plan.chdir});
        a.push_back("--");
        if (plan.initStep) {
            auto init = init_argv(guest_init);
            a.insert(a.end(), init.begin(), init.end());
        } else {
            a.insert(a.end(), in.command.begin(), in.command.end());
        }
    }

    static int port_of(const std::string& addr, int fallback) {
        auto c = addr.rfind(':');
        if (c == std::string::npos) return fallback;
        try { return std::stoi(addr.substr(c + 1)); } catch (...) { return fallback; }
    }

    // macOS: the child shares the host's loopback and talks to cc-egress's
    // own ports; the profile limits it to those. Unverified on hardware.
    Result<Plan> seatbelt_plan() {
        if (auto st = seatbelt_check(in); !st) return st.error();
        auto& p = plan.proxy;
        if (in.profile == Profile::terminal) {
            p.transport = "host";
            p.why = "terminal profile: network open without proxies";
        } else {
            p.transport = "loopback";
            p.egress = in.egress.source == EgressWiring::Source::handed ? "handed" : "own";
            p.httpPort = port_of(in.egress.http, 0);
            p.socksPort = port_of(in.egress.socks, 0);
            p.why = "Seatbelt shares the host loopback: the child reaches cc-egress's ports directly";
        }
        if (in.dropFilenameDenies) plan.filenameDeniesDropped = k_filename;
        plan.seatbelt = seatbelt_profile(in, host, p.httpPort, p.socksPort);
        plan.notes.push_back("Seatbelt backend: generated profile not verified on Apple hardware; violations come "
                             "from the system log (tag " + seatbelt_tag(in) + ")");
        environment();
        plan.env["TMPDIR"] = seatbelt_session_tmp(in);
        if (p.transport == "loopback") {
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

    // As root the command is an ordinary uid: a writable bind it cannot write
    // works as a read-only one. Said out loud, since the mount says otherwise.
    void writable_by_identity() {
        if (!plan.identity.drop) return;
        for (const auto& m : plan.mounts) {
            if (m.op != "bind") continue;
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
    // Run by root, bubblewrap itself runs as the sandbox's uid and finds each
    // bind source by its path (it resolves even a descriptor's path again):
    // every directory above a source must let that uid pass. A workspace
    // under a mode-0700 directory (/root) is refused here, naming it, rather
    // than by bubblewrap after the sandbox started to be built.
    Status sources_reachable() const {
        if (!plan.identity.drop) return ok();
        const auto& id = plan.identity;
        for (const auto& m : plan.mounts) {
            if (m.op != "bind" && m.op != "ro-bind") continue;
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

    static std::string octal(unsigned m) {
        char b[8];
        std::snprintf(b, sizeof b, "%04o", m & 07777);
        return b;
    }

    Result<Plan> build() {
        plan.spec = in.spec;
        plan.identity = in.identity;
        plan.backend = in.backend;
        plan.backendLog = in.backendLog;
        plan.profile = in.profile;
        plan.runtimeDir = in.runtimeDir;
        if (in.command.empty()) return input_error("command", "missing (cc-wrap [options] -- CMD ARGS...)");
        if (in.inheritEnv && in.backend != Backend::none)
            return input_error("--inherit-env", "allowed only with backend none (the sandbox always sanitises the environment)");
        if (in.backend == Backend::microvm)
            return unavailable_error("backend microvm", "cc-wrap has no microvm launcher; nothing runs without the isolation asked for");
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
        if (plan.proxy.transport != "host") plan.layers.push_back("net-ns");
        plan.seccomp = default_seccomp({in.spec.allowNestedNamespaces, in.spec.allowPtrace});
        plan.layers.push_back("seccomp");
        if (in.spec.allowNestedNamespaces)
            plan.notes.push_back("allowNestedNamespaces: the command may create user namespaces of its own");
        if (in.spec.allowPtrace) plan.notes.push_back("allowPtrace: the command may trace its own processes");
        if (in.landlockAbi > 0) {
            plan.landlockAbi = in.landlockAbi;
            std::set<std::string> w = {"/dev", "/proc"};
            for (const auto& m : plan.mounts)
                if (m.op == "bind" || m.op == "tmpfs") w.insert(m.dest);
            plan.landlockWritable.assign(w.begin(), w.end());
            plan.layers.push_back("landlock:v" + std::to_string(in.landlockAbi));
        } else {
            plan.notes.push_back("Landlock: this kernel has none; the mounts and seccomp layers stand without it");
        }
        // The write supervisor, when a rule reaches into something writable.
        bool host_writable = std::any_of(plan.mounts.begin(), plan.mounts.end(), [](const Mount& m) { return m.op == "bind"; });
        if (in.writeSupervisor && (!rules_.paths.empty() || !rules_.names.empty())) {
            rules_.writable = plan.landlockWritable;
            if (in.profile == Profile::dispatch)
                for (const auto& m : plan.mounts)
                    if (m.op == "bind") rules_.gitScope.push_back(m.dest);
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
            add("ro-bind", in.initExe, guest_init, "the init step (cc-wrap-init)");
            std::stable_sort(plan.mounts.begin(), plan.mounts.end(), by_depth);
        }
        add("remount-ro", "", "/", "the empty root itself is read-only: writes outside the binds fail");
        if (auto st = sources_reachable(); !st) return st.error();
        bwrap_argv();
        return plan;
    }
};

}  // namespace

std::string_view to_string(Profile p) { return p == Profile::terminal ? "terminal" : "dispatch"; }

const std::vector<std::string>& secret_read_denies() { return k_secrets; }
const std::vector<std::string>& home_write_denies() { return k_home_write; }
const std::vector<std::string>& standard_filename_denies() { return k_filename; }

Result<Plan> build_plan(const PlanInput& in, const HostPaths& host) {
    Builder b{in, host, {}, {}, {}, {}, {}, {}, {}};
    return b.build();
}

static nlohmann::json identity_json(const Identity& id) {
    return {{"hostUid", id.uid}, {"hostGid", id.gid}, {"userNamespace", id.userNamespace},
            {"switchedFromRoot", id.drop}, {"why", id.why}};
}

nlohmann::json to_json(const Plan& p) {
    using nlohmann::json;
    json mounts = json::array();
    for (const auto& m : p.mounts) {
        json j = {{"op", m.op}, {"dest", m.dest}, {"why", m.why}};
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
        {"proxy", {{"transport", p.proxy.transport}, {"httpPort", p.proxy.httpPort}, {"socksPort", p.proxy.socksPort},
                   {"egress", p.proxy.egress}, {"why", p.proxy.why}}},
        {"runtimeDir", p.runtimeDir},
        {"initStep", {{"used", p.initStep}, {"why", p.initWhy}}},
        {"notes", p.notes},
        {"identity", identity_json(p.identity)},
        {"layers", p.layers},
    };
    if (p.seccomp) j["seccomp"] = to_json(*p.seccomp);
    if (p.landlockAbi > 0) j["landlock"] = {{"abi", p.landlockAbi}, {"writable", p.landlockWritable}};
    if (p.writeRules) j["writeSupervisor"] = to_json(*p.writeRules);
    if (!p.proxy.inbox.empty()) j["proxy"]["inbox"] = p.proxy.inbox;
    return j;
}

nlohmann::json summary(const Plan& p) {
    std::size_t rw = 0;
    for (const auto& m : p.mounts) rw += m.op == "bind";
    return {{"backend", spec::to_string(p.backend)},
            {"backendLog", p.backendLog},
            {"profile", to_string(p.profile)},
            {"mode", policy::to_string(p.spec.mode)},
            {"proxyTransport", p.proxy.transport},
            {"mounts", p.mounts.size()},
            {"writableMounts", rw},
            {"denyRules", p.denies.size()},
            {"identity", identity_json(p.identity)},
            {"layers", p.layers},
            {"notes", p.notes}};
}

}  // namespace cc::sandbox
