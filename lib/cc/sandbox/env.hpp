// F13: the environment a sandboxed child starts from. Injection vectors of the
// dynamic linker and of interpreters are stripped before the proxy variables
// are added, so nothing the host had set can run code inside the sandbox
// before the command itself does.
//
//   auto s = cc::sandbox::sanitise_env(host_env);
//   s.env  -> what the child gets;  s.removed -> names stripped (for the plan)
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cc::sandbox {

using Env = std::map<std::string, std::string>;

struct SanitisedEnv {
    Env env;
    std::vector<std::string> removed;  // sorted names
};

// Is this variable an injection vector (LD_*, DYLD_*, NODE_OPTIONS, BASH_ENV,
// GIT_CONFIG_*, ...) or a proxy setting that the sandbox sets itself?
bool is_stripped_variable(const std::string& name);

SanitisedEnv sanitise_env(const Env& host);

// The process environment as a map.
Env current_env();

}  // namespace cc::sandbox
