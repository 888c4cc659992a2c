// The plan builder, internal to lib/cc/sandbox: build_plan() (plan.cpp)
// fills a Plan phase by phase; the mounts, environment and argv are made in
// plan.cpp, the deny rules (masks, read-only binds, the write supervisor's
// rules) in plan_denies.cpp.
#pragma once

#include "cc/sandbox/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

namespace cc::sandbox::detail {

using spec::Backend;


inline const std::vector<std::string> k_secrets = {
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
    // cc's own: the microvm backend's snapshots (a guest kernel's memory,
    // which every later guest resumes from).
    "~/.cache/cc",
};

// Files whose next read by the host runs code: shell start files and the
// agent CLIs' own configuration (hooks, permission settings).
inline const std::vector<std::string> k_home_write = {
    "~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.bash_logout", "~/.profile",
    "~/.zshrc", "~/.zshenv", "~/.zprofile", "~/.zlogin", "~/.zlogout",
    "~/.claude", "~/.claude.json", "~/.codex", "~/.gemini",
    // git's own configuration (hooks paths, fsmonitor and pager programs),
    // files the start files commonly source, and the other places a login
    // or an editor, terminal multiplexer or desktop session runs code from.
    "~/.gitconfig", "~/.config/git", "~/.bash_aliases", "~/.config/fish", "~/.tmux.conf", "~/.vimrc",
    "~/.config/nvim", "~/.config/systemd", "~/.config/autostart", "~/.xprofile", "~/.xsessionrc",
    "~/.pam_environment", "~/.config/environment.d",
    // Directories a login puts first on PATH (Debian's ~/.profile adds them
    // when they exist), and Python's user site (a .pth file there runs at
    // every interpreter start): a program dropped there runs instead of the
    // real one, or before it.
    "~/.local/bin", "~/bin", "~/.local/lib",
    // What start files source or put on PATH for language version managers,
    // and the toolchains they run.
    "~/.cargo/bin", "~/.cargo/env", "~/.cargo/config", "~/.cargo/config.toml", "~/.rustup", "~/.nvm", "~/.pyenv",
    "~/.rbenv", "~/.asdf", "~/.sdkman", "~/.volta", "~/.bun/bin", "~/.deno/bin", "~/go/bin", "~/.npm-global",
    // Files sourced by every interactive shell or run by the tools a person
    // starts next: completions, shell frameworks and prompts, pagers (less's
    // lesskey can set LESSOPEN to a command), debuggers, REPLs, editors and
    // their plugin directories, terminal multiplexers, X sessions, package
    // managers' settings that name a program or an index to install from.
    "~/.bash_completion", "~/.local/share/bash-completion", "~/.oh-my-zsh", "~/.config/starship.toml",
    "~/.lesskey", "~/.less", "~/.config/lesskey", "~/.gdbinit", "~/.config/gdb", "~/.lldbinit", "~/.ipython",
    "~/.jupyter", "~/.Rprofile", "~/.irbrc", "~/.pryrc", "~/.psqlrc", "~/.sqliterc", "~/.emacs", "~/.emacs.d",
    "~/.config/emacs", "~/.vim", "~/.local/share/nvim", "~/.vscode", "~/.config/Code", "~/.tmux", "~/.screenrc",
    "~/.xinitrc", "~/.local/share/applications", "~/.config/direnv", "~/.yarnrc", "~/.config/pip", "~/.pip",
    "~/.pydistutils.cfg",
};

// The same agent CLIs read per-repository settings from the checkout (hooks
// and permission rules run code on the host's next session there).
inline const std::vector<std::string> k_repo_agent_config = {".claude", ".mcp.json", ".codex", ".gemini"};

inline const std::vector<std::string> k_filename = {".env", ".env.*", "*.key", "*.pem"};

// System files a process running as uid 0 inside could otherwise read.
inline const std::vector<std::string> k_etc_secrets = {
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
    "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssh/ssh_host_dsa_key", "/etc/ssl/private", "/etc/security/opasswd", "/etc/krb5.keytab",
    "/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets",
    "/var/cache/cc",  // cc's own: root's microvm snapshots
};

inline const std::vector<std::string> k_system_dirs = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"};

struct Builder {
    const PlanInput& in;
    const HostPaths& host;
    Plan plan;
    std::string mask_dir, mask_file;

    // --- mount bookkeeping -------------------------------------------------
    bool writable_op(const Mount& m) const { return m.op == MountOp::bind || m.op == MountOp::tmpfs; }
    bool is_mount_op(const Mount& m) const { return m.op == MountOp::bind || m.op == MountOp::ro_bind || m.op == MountOp::tmpfs; }

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
            if (!(any_op ? m.op != MountOp::remount_ro : is_mount_op(m)) || !is_within(g, m.dest)) continue;
            if (best == npos || depth(m.dest) >= depth(plan.mounts[best].dest)) best = i;
        }
        return best;
    }
    bool has_dest(const std::string& g) const;
    void add(MountOp op, std::string src, std::string dest, std::string why);

    // Guest paths where host path h is visible, with the mount showing it.
    struct Sighting {
        std::string guest;
        std::string host;  // h as the mount's source spells it
        std::size_t via;
        const Mount& mount(const Plan& p) const { return p.mounts[via]; }
    };
    std::vector<Sighting> sightings(const std::string& h) const;

    // A mount point cannot be renamed or removed (EBUSY), so binding every
    // directory between the writable mount and the protected path over
    // itself stops "rename the parent, put a fresh tree in its place".
    void pin_ancestors(const Sighting& s);

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

    void read_deny(const std::string& rule, const std::string& source);

    // missing_ok: a protected checkout that does not exist has nothing to
    // protect; a missing start file or hooks dir inside a writable bind could
    // be created, and covering it would need a mount point on the host.
    std::vector<std::string> missing_targets_;
    WriteRules rules_;  // for the write supervisor, when the kernel offers it
    std::vector<std::string> writable_in_protected_;  // guest paths of binds said writableInProtected
    Status write_deny(const std::string& rule, const std::string& source, bool missing_ok);

    // --- phases ------------------------------------------------------------
    void system_mounts();

    bool read_only_mode() const { return in.profile == Profile::dispatch && policy::is_read_only(in.spec.mode); }

    void spec_mounts();

    // Two things an earlier run could have arranged, refused before anything
    // runs: a bind source that passes through a symlink lying inside another
    // writable bind (the agent replaced a directory the next run binds with a
    // link to ~/.ssh or /etc), and cc-wrap's runtime directory (its masks and
    // the egress inbox) inside any bind.
    Status bind_sources_safe();

    // .git directories at the top of a writable bind and up to two levels down
    // (the workdir itself, repos/<name>).
    // `.git` files seen on the way (a worktree's or submodule's "gitdir:"
    // pointer): rewritten, they send the host's next git to a directory the
    // command filled with hooks and config.
    mutable std::set<std::string> git_files_;
    std::vector<std::string> git_dirs_in(const std::string& root) const;

    Status deny_rules();

    // Homes other than $HOME that some bind's source reaches: /root and
    // /home/<user> below or above a bind source.
    std::vector<std::string> other_homes() const;

    bool home_writable() const { return writable_at(in.home); }
    // Is host directory h shown writable by some bind?
    bool writable_at(const std::string& h) const;

    // Bubblewrap can cover existing paths, not names created later.
    Status filename_rules();

    void proxy_wiring();

    void environment();

    // --- the command, seen from inside ---------------------------------------
    // What is at guest path g: found on the host at `host`, certainly missing,
    // or unknown (under /proc, /dev, or too many links): then the init step
    // decides inside.
    enum class Seen { found, missing, unknown };
    struct Sight {
        Seen seen = Seen::unknown;
        std::string host;
    };
    Sight guest_lookup(std::string g) const;

    // Can bubblewrap exec the command by itself, with the same answer the
    // init step would give? Only when the command is certainly found inside
    // and executable: an ELF binary, or a script whose interpreter is one.
    void decide_init_step();

    std::vector<std::string> init_argv(const std::string& exe) const;

    void bwrap_argv();
    // Backend microvm: the VM's files (and /dev/kvm) bound in (microvm_plan.cpp).
    void microvm_mounts();

    static int port_of(const std::string& addr, int fallback) {
        auto c = addr.rfind(':');
        if (c == std::string::npos) return fallback;
        try { return std::stoi(addr.substr(c + 1)); } catch (...) { return fallback; }
    }

    // macOS: the child shares the host's loopback and talks to cc-egress's
    // own ports; the profile limits it to those. Unverified on hardware.
    Result<Plan> seatbelt_plan();

    // As root the command is an ordinary uid: a writable bind it cannot write
    // works as a read-only one. Said out loud, since the mount says otherwise.
    void writable_by_identity();
    // Run by root, bubblewrap itself runs as the sandbox's uid and finds each
    // bind source by its path (it resolves even a descriptor's path again):
    // every directory above a source must let that uid pass. A workspace
    // under a mode-0700 directory (/root) is refused here, naming it, rather
    // than by bubblewrap after the sandbox started to be built.
    Status sources_reachable() const;

    static std::string octal(unsigned m) {
        char b[8];
        std::snprintf(b, sizeof b, "%04o", m & 07777);
        return b;
    }

    Result<Plan> build();
};

}  // namespace cc::sandbox::detail
