#include "cc/sandbox/env.hpp"

#include <algorithm>
#include <array>
#include <string_view>

extern char** environ;

namespace cc::sandbox {

namespace {

// Whole families: every variable with one of these prefixes changes what a
// loader or interpreter runs before (or instead of) the command.
constexpr std::array<std::string_view, 6> stripped_prefixes = {
    "LD_",          // glibc loader: LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...
    "DYLD_",        // macOS loader
    "GIT_CONFIG",   // GIT_CONFIG, GIT_CONFIG_COUNT/KEY_n/VALUE_n, GIT_CONFIG_PARAMETERS: core.hooksPath, core.sshCommand
    "BASH_FUNC_",   // exported bash functions run on every bash start
    "PYTHONWARN",   // PYTHONWARNINGS can import arbitrary modules
    "MALLOC_",      // glibc malloc tunables / debug hooks
};

// Single variables: interpreter start-up hooks, shell start files and the
// ways git and ssh are told which program to run.
constexpr std::array<std::string_view, 40> stripped_names = {
    "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE",
    "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONINSPECT", "PYTHONBREAKPOINT", "PYTHONUSERBASE",
    "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB",
    "RUBYOPT", "RUBYLIB",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
    "BASH_ENV", "ENV", "ZDOTDIR", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "CDPATH",
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF",
    "SSH_ASKPASS", "SSH_AUTH_SOCK", "GCONV_PATH", "HOSTALIASES", "RESOLV_HOST_CONF", "LOCALDOMAIN",
    "GLIBC_TUNABLES",
};

// Set by the sandbox itself (F14); a host value must never leak in, and
// NO_PROXY would let a client bypass the proxy.
constexpr std::array<std::string_view, 10> proxy_names = {
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY",
    "http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy",
};

}  // namespace

bool is_stripped_variable(const std::string& name) {
    for (auto p : stripped_prefixes)
        if (name.rfind(p, 0) == 0) return true;
    for (auto n : stripped_names)
        if (name == n) return true;
    for (auto n : proxy_names)
        if (name == n) return true;
    return false;
}

SanitisedEnv sanitise_env(const Env& host) {
    SanitisedEnv s;
    for (const auto& [k, v] : host) {
        if (is_stripped_variable(k))
            s.removed.push_back(k);
        else
            s.env.emplace(k, v);
    }
    std::sort(s.removed.begin(), s.removed.end());
    return s;
}

Env current_env() {
    Env e;
    for (char** p = environ; p && *p; ++p) {
        std::string_view kv(*p);
        auto eq = kv.find('=');
        if (eq == std::string_view::npos || eq == 0) continue;
        e.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    }
    return e;
}

}  // namespace cc::sandbox
