// Who the sandboxed command is on the host (plan.hpp: Identity).
#include "cc/sandbox/plan.hpp"

namespace cc::sandbox {

Result<Identity> choose_identity(const spec::SandboxSpec& spec, const std::string& home, unsigned caller_uid,
                                 unsigned caller_gid, const std::optional<std::string>& run_as, const HostPaths& host) {
    Identity id;
    constexpr unsigned nobody = 65534;
    if (run_as) {
        // UID or UID:GID, decimal: no user database is consulted (a static
        // cc-wrap has no NSS), so names are refused rather than guessed.
        auto num = [](const std::string& t) -> std::optional<unsigned> {
            if (t.empty() || t.size() > 10 || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
            unsigned long v = std::stoul(t);
            if (v > 0xfffffffeUL) return std::nullopt;
            return static_cast<unsigned>(v);
        };
        auto colon = run_as->find(':');
        auto u = num(run_as->substr(0, colon));
        auto g = colon == std::string::npos ? u : num(run_as->substr(colon + 1));
        if (!u || !g) return input_error("--run-as", "'" + *run_as + "' is not UID or UID:GID (decimal numbers)");
        if (*u == 0 || *g == 0)
            return input_error("--run-as", "'" + *run_as + "': the command never runs as uid or gid 0 of the host");
        if (caller_uid != 0 && (*u != caller_uid || *g != caller_gid))
            return input_error("--run-as", "only root can run the command as another user");
        id.uid = *u;
        id.gid = *g;
        id.drop = caller_uid == 0;
        id.why = "--run-as " + *run_as;
        return id;
    }
    if (caller_uid != 0) {
        id.uid = caller_uid;
        id.gid = caller_gid;
        id.why = "the calling user";
        return id;
    }
    id.drop = true;
    // The working directory's host path: the bind that shows guestWorkdir,
    // else the first writable bind.
    std::string work;
    auto guest_of = [&](const spec::BindMount& b) { return normalise(b.guestPath, home); };
    if (spec.guestWorkdir) {
        std::string g = normalise(*spec.guestWorkdir, home);
        std::size_t best = 0;
        for (const auto& b : spec.bindMounts)
            if (is_within(g, guest_of(b)) && guest_of(b).size() >= best) {
                best = guest_of(b).size();
                work = normalise(b.hostPath, home) + g.substr(guest_of(b).size());
            }
    }
    if (work.empty())
        for (const auto& b : spec.bindMounts)
            if (!b.readOnly) {
                work = normalise(b.hostPath, home);
                break;
            }
    auto o = work.empty() ? std::nullopt : host.owner(work);
    if (o && o->uid != 0 && o->gid != 0) {
        id.uid = o->uid;
        id.gid = o->gid;
        id.why = "run by root: the owner of the working directory " + work;
    } else if (o && o->uid != 0) {
        id.uid = o->uid;
        id.gid = nobody;
        id.why = "run by root: the owner of the working directory " + work + " (its group is root: gid nobody)";
    } else {
        // Not nobody: every host process of nobody (daemons, other tools'
        // workers) could trace the command and act with its power. A uid and
        // gid of its own, which no account, range or process has.
        auto own = host.unused_id();
        if (!own)
            return unavailable_error("run by root", "no unused uid found in " + std::to_string(k_session_id_first) + "-" +
                                                        std::to_string(k_session_id_last) + " (--run-as to choose)");
        id.uid = id.gid = *own;
        id.ownId = true;
        id.why = (work.empty() ? "run by root, no writable working directory"
                               : "run by root, the working directory " + work + " belongs to root") +
                 ": a uid and gid of this session's own, " + std::to_string(*own) +
                 ", that no account or running process has (--run-as to choose)";
    }
    return id;
}

}  // namespace cc::sandbox
