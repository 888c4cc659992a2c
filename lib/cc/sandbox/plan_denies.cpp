// The plan's deny rules (plan_builder.hpp): secrets masked, write-denies as
// read-only binds, and the rules the write supervisor judges by.
#include "cc/sandbox/plan_builder.hpp"

namespace cc::sandbox::detail {

auto Builder::read_deny(const std::string& rule, const std::string& source) -> void {
        DenyRule d{"read", rule, source, is_glob(rule), spellings(rule, in.home, host), {}};
        (void)each_sighting(d, [&](const std::string&, Kind k, const Sighting& s) -> Status {
            if (k == Kind::missing) {
                d.enforcement.push_back(s.guest + ": absent on the host");
            } else if (k == Kind::dir) {
                add(MountOp::ro_bind, mask_dir, s.guest, "read-deny " + rule);
                d.enforcement.push_back(s.guest + ": masked (empty mode-000 directory)");
            } else {
                add(MountOp::ro_bind, mask_file, s.guest, "read-deny " + rule);
                d.enforcement.push_back(s.guest + ": masked (empty mode-000 file)");
            }
            return ok();
        });
        plan.denies.push_back(std::move(d));
}

auto Builder::write_deny(const std::string& rule, const std::string& source, bool missing_ok) -> Status {
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
            add(MountOp::ro_bind, s.host, s.guest, "write-deny " + rule);
            d.enforcement.push_back(s.guest + ": read-only bind over the writable bind, parents pinned" +
                                    std::string(in.writeSupervisor ? "; the write supervisor refuses replacing it" : ""));
            return ok();
        });
        if (!st) return st;
        plan.denies.push_back(std::move(d));
        return ok();
}

auto Builder::bind_sources_safe() -> Status {
        std::vector<std::string> writable;
        for (const auto& m : plan.mounts)
            if (m.op == MountOp::bind) writable.push_back(m.src);
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
                if ((m.op == MountOp::bind || m.op == MountOp::ro_bind) && is_within(in.runtimeDir, m.src) &&
                    m.src.rfind(in.runtimeDir, 0) != 0)
                    return unavailable_error("runtime directory '" + in.runtimeDir + "'",
                                             "it lies inside bind '" + m.src + "' (" + m.dest +
                                                 "): set XDG_RUNTIME_DIR or TMPDIR outside every bind");
        return ok();
}

auto Builder::git_dirs_in(const std::string& root) const -> std::vector<std::string> {
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

auto Builder::deny_rules() -> Status {
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
                if (m.op == MountOp::bind) roots.push_back(m.src);
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

auto Builder::other_homes() const -> std::vector<std::string> {
        std::set<std::string> out;
        auto consider = [&](const std::string& h) {
            if (h != in.home && host.kind(h) == Kind::dir) out.insert(h);
        };
        for (const auto& m : plan.mounts) {
            if (m.op != MountOp::bind && m.op != MountOp::ro_bind) continue;
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

auto Builder::writable_at(const std::string& h) const -> bool {
        if (h == in.home) {
            std::size_t c = cover(in.home);
            return c != npos && plan.mounts[c].op == MountOp::bind;
        }
        for (const auto& s : sightings(h))
            if (s.mount(plan).op == MountOp::bind) return true;
        return false;
}

auto Builder::filename_rules() -> Status {
        std::vector<std::pair<std::string, std::string>> rules;
        if (in.profile == Profile::dispatch && in.backend != Backend::none) {
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
            if (m.op == MountOp::bind) { writable = m.dest; break; }
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
}  // namespace cc::sandbox::detail
