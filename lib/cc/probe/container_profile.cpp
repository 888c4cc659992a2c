#include "cc/probe/container_profile.hpp"

#include <algorithm>

namespace cc::probe {

const std::vector<std::string>& container_sandbox_calls() {
    static const std::vector<std::string> calls = {
        "clone",   "unshare",    "mount", "umount2", "pivot_root", "sethostname", "setns", "landlock_create_ruleset",
        "landlock_add_rule", "landlock_restrict_self"};
    return calls;
}

Result<nlohmann::json> container_seccomp_profile(const nlohmann::json& base) {
    const std::string what = "seccomp profile";
    if (!base.is_object()) return input_error(what, "not a JSON object");
    if (!base.contains("defaultAction") || !base["defaultAction"].is_string())
        return input_error(what, "no defaultAction: not a Docker or Podman seccomp profile");
    if (!base.contains("syscalls") || !base["syscalls"].is_array())
        return input_error(what, "no syscalls list: not a Docker or Podman seccomp profile");
    const auto& needed = container_sandbox_calls();
    auto is_needed = [&](const nlohmann::json& n) {
        return n.is_string() && std::find(needed.begin(), needed.end(), n.get<std::string>()) != needed.end();
    };
    nlohmann::json out = base;
    nlohmann::json rules = nlohmann::json::array();
    for (std::size_t i = 0; i < base["syscalls"].size(); ++i) {
        const auto& r = base["syscalls"][i];
        const std::string at = "syscalls[" + std::to_string(i) + "]";
        if (!r.is_object()) return input_error(what, at + " is not an object");
        nlohmann::json rule = r;
        // Both spellings: "names" (an array) and the older "name".
        if (rule.contains("names")) {
            if (!rule["names"].is_array()) return input_error(what, at + ".names is not an array");
            nlohmann::json kept = nlohmann::json::array();
            for (const auto& n : rule["names"]) {
                if (!n.is_string()) return input_error(what, at + ".names holds a value that is not a string");
                if (!is_needed(n)) kept.push_back(n);
            }
            if (kept.empty()) continue;
            rule["names"] = kept;
        } else if (rule.contains("name")) {
            if (!rule["name"].is_string()) return input_error(what, at + ".name is not a string");
            if (is_needed(rule["name"])) continue;
        } else {
            return input_error(what, at + " names no call");
        }
        rules.push_back(std::move(rule));
    }
    rules.push_back({{"names", needed},
                     {"action", "SCMP_ACT_ALLOW"},
                     {"comment",
                      "cc-wrap's sandbox (bubblewrap, a user namespace, Landlock): each call acts only inside "
                      "namespaces the caller made, as the kernel checks"}});
    out["syscalls"] = std::move(rules);
    return out;
}

}  // namespace cc::probe
