#include "cc/spec/spec.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "cc/core/io.hpp"
#include "cc/core/json_reader.hpp"

namespace cc::spec {

namespace {

using nlohmann::json;

Status check_absolute(const std::string& path, const std::string& field) {
    if (path.empty()) return input_error(field, "must not be empty");
    if (path[0] != '/') return input_error(field, "must be absolute");
    if (path.find('\0') != std::string::npos) return input_error(field, "must not contain NUL");
    return ok();
}

Status check_all_absolute(const std::vector<std::string>& paths, const std::string& field) {
    for (std::size_t i = 0; i < paths.size(); ++i)
        if (auto s = check_absolute(paths[i], cc::json::join(field, i)); !s) return s;
    return ok();
}

Status parse_bind(const json& j, const std::string& path, BindMount& b) {
    cc::json::ObjectReader r(j, path);
    r.required("hostPath", b.hostPath);
    std::optional<std::string> guest;
    r.optional("guestPath", guest);
    r.optional("readOnly", b.readOnly);
    r.optional("writableInProtected", b.writableInProtected);
    if (auto e = r.finish()) return *e;
    if (auto s = check_absolute(b.hostPath, cc::json::join(path, "hostPath")); !s) return s;
    b.guestPath = guest.value_or(b.hostPath);
    if (auto s = check_absolute(b.guestPath, cc::json::join(path, "guestPath")); !s) return s;
    return ok();
}

}  // namespace

Result<SandboxSpec> sandbox_spec_from_json(const json& j) {
    SandboxSpec s;
    cc::json::ObjectReader r(j, "");
    std::string mode = "chat";
    r.required("sessionId", s.sessionId);
    r.required("workspaceId", s.workspaceId);
    r.optional("agentId", s.agentId);
    r.optional("conversationId", s.conversationId);
    r.optional_value("bindMounts", [&](const json& arr, const std::string& path) -> Status {
        if (!arr.is_array()) return input_error(path, std::string("must be an array, not ") + cc::json::type_name(arr));
        for (std::size_t i = 0; i < arr.size(); ++i) {
            BindMount b;
            if (auto st = parse_bind(arr[i], cc::json::join(path, i), b); !st) return st;
            s.bindMounts.push_back(std::move(b));
        }
        return ok();
    });
    r.optional("networkEnabled", s.networkEnabled);
    r.optional("egressAllowlist", s.egressAllowlist);
    r.optional("guestWorkdir", s.guestWorkdir);
    r.optional("mode", mode);
    r.optional("protectedPaths", s.protectedPaths);
    r.optional("runnerStateDirs", s.runnerStateDirs);
    r.optional("execGrantRoots", s.execGrantRoots);
    r.optional("allowNestedNamespaces", s.allowNestedNamespaces);
    r.optional("allowPtrace", s.allowPtrace);
    r.optional("envPass", s.envPass);
    r.accept("$schema");
    if (auto e = r.finish()) return *e;

    if (s.sessionId.empty()) return input_error("sessionId", "must not be empty");
    if (s.workspaceId.empty()) return input_error("workspaceId", "must not be empty");
    auto m = policy::parse_mode(mode);
    if (!m) return input_error("mode", "unknown mode '" + mode + "' (chat, plan, review or orchestrate)");
    s.mode = *m;
    if (s.guestWorkdir)
        if (auto st = check_absolute(*s.guestWorkdir, "guestWorkdir"); !st) return st.error();
    if (auto st = check_all_absolute(s.protectedPaths, "protectedPaths"); !st) return st.error();
    if (auto st = check_all_absolute(s.runnerStateDirs, "runnerStateDirs"); !st) return st.error();
    if (auto st = check_all_absolute(s.execGrantRoots, "execGrantRoots"); !st) return st.error();
    for (std::size_t i = 0; i < s.envPass.size(); ++i)
        if (s.envPass[i].empty() || s.envPass[i].find_first_of("=\0") != std::string::npos)
            return input_error(cc::json::join("envPass", i), "must be a variable name");
    for (std::size_t i = 0; i < s.egressAllowlist.size(); ++i)
        if (s.egressAllowlist[i].empty())
            return input_error(cc::json::join("egressAllowlist", i), "must not be empty");
    return s;
}

Result<SandboxSpec> parse_sandbox_spec(const std::string& text, const std::string& subject) {
    auto doc = cc::json::parse(text, subject);
    if (!doc) return doc.error();
    auto s = sandbox_spec_from_json(*doc);
    if (!s) {
        Error e = s.error();
        e.subject = subject + ": " + e.subject;
        return e;
    }
    return s;
}

Result<SandboxSpec> load_sandbox_spec(const std::string& path) {
    auto text = io::read_input(path);
    if (!text) return text.error();
    std::string subject = path == "-" ? "stdin" : "'" + path + "'";
    auto spec = parse_sandbox_spec(*text, subject);
    if (!spec) return spec;
    // A bind of a path that is not there is a mistake in the spec: said here,
    // naming the field, rather than by the backend mid-launch.
    for (std::size_t i = 0; i < spec->bindMounts.size(); ++i) {
        struct stat st {};
        const std::string& host = spec->bindMounts[i].hostPath;
        if (::stat(host.c_str(), &st) != 0)
            return Error{Errc::input, "'" + host + "' cannot be bound",
                         subject + ": bindMounts[" + std::to_string(i) + "].hostPath", errno};
    }
    return spec;
}

json to_json(const SandboxSpec& s) {
    json j;
    j["sessionId"] = s.sessionId;
    j["workspaceId"] = s.workspaceId;
    if (s.agentId) j["agentId"] = *s.agentId;
    if (s.conversationId) j["conversationId"] = *s.conversationId;
    j["bindMounts"] = json::array();
    for (const auto& b : s.bindMounts)
        {
            json bj = {{"hostPath", b.hostPath}, {"guestPath", b.guestPath}, {"readOnly", b.readOnly}};
            if (b.writableInProtected) bj["writableInProtected"] = true;
            j["bindMounts"].push_back(bj);
        }
    j["networkEnabled"] = s.networkEnabled;
    j["egressAllowlist"] = s.egressAllowlist;
    if (s.guestWorkdir) j["guestWorkdir"] = *s.guestWorkdir;
    j["mode"] = std::string(policy::to_string(s.mode));
    j["protectedPaths"] = s.protectedPaths;
    j["runnerStateDirs"] = s.runnerStateDirs;
    j["execGrantRoots"] = s.execGrantRoots;
    j["allowNestedNamespaces"] = s.allowNestedNamespaces;
    j["allowPtrace"] = s.allowPtrace;
    j["envPass"] = s.envPass;
    return j;
}

std::string_view to_string(Backend b) {
    switch (b) {
        case Backend::native: return "native";
        case Backend::none: return "none";
        case Backend::microvm: return "microvm";
    }
    return "none";
}

Backend parse_stored_backend(const std::optional<std::string>& stored) {
    if (!stored) return Backend::none;
    if (*stored == "native" || *stored == "docker") return Backend::native;
    if (*stored == "microvm") return Backend::microvm;
    return Backend::none;
}

std::optional<Backend> parse_backend_flag(std::string_view s) {
    if (s == "native") return Backend::native;
    if (s == "none") return Backend::none;
    if (s == "microvm") return Backend::microvm;
    return std::nullopt;
}

std::string_view to_string(State s) {
    switch (s) {
        case State::created: return "created";
        case State::warm: return "warm";
        case State::active: return "active";
        case State::suspended: return "suspended";
        case State::destroyed: return "destroyed";
        case State::error: return "error";
    }
    return "error";
}

json to_json(const Handle& h) {
    json j{{"sessionId", h.sessionId},
           {"backend", std::string(to_string(h.backend))},
           {"state", std::string(to_string(h.state))},
           {"details", h.details}};
    if (h.error) j["error"] = *h.error;
    return j;
}

json to_json(const Violation& v) {
    json j{{"action", v.action}, {"target", v.target}};
    if (v.raw) j["raw"] = *v.raw;
    return j;
}

}  // namespace cc::spec
