// The environment a sandboxed child starts from. Injection vectors of the
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
    // Why each was removed: "injection" (runs code before the command),
    // "proxy" (the sandbox sets its own), "credential" (a well-known secret
    // by name), "credential-url" (a URL carrying a password).
    std::map<std::string, std::string> why;
    std::vector<std::string> passed;   // credentials kept because envPass named them
};

// Is this variable an injection vector (LD_*, DYLD_*, NODE_OPTIONS, BASH_ENV,
// GIT_CONFIG_*, ...) or a proxy setting that the sandbox sets itself?
bool is_stripped_variable(const std::string& name);
// Is it a credential: a well-known token or key name (GITHUB_TOKEN,
// AWS_SECRET_ACCESS_KEY, *_API_KEY, *_TOKEN, *_PASSWORD, ...), or a value
// that is a URL with a password in it?
bool is_credential_variable(const std::string& name, const std::string& value);

// envPass: credential variables the operator wants inside after all (exact
// names). Injection vectors and proxy settings cannot be passed.
SanitisedEnv sanitise_env(const Env& host, const std::vector<std::string>& env_pass = {});

// The process environment as a map.
Env current_env();

}  // namespace cc::sandbox
