#include "cc/sandbox/env.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <string_view>

extern char** environ;

namespace cc::sandbox {

namespace {

// Whole families: every variable with one of these prefixes changes what a
// loader or interpreter runs before (or instead of) the command.
constexpr std::string_view stripped_prefixes[] = {
    "LD_",          // glibc loader: LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...
    "DYLD_",        // macOS loader
    "GIT_CONFIG",   // GIT_CONFIG, GIT_CONFIG_COUNT/KEY_n/VALUE_n, GIT_CONFIG_PARAMETERS: core.hooksPath, core.sshCommand
    "BASH_FUNC_",   // exported bash functions run on every bash start
    "PYTHONWARN",   // PYTHONWARNINGS can import arbitrary modules
    "MALLOC_",      // glibc malloc tunables / debug hooks
};

// Single variables: interpreter start-up hooks, shell start files and the
// ways git and ssh are told which program to run.
constexpr std::string_view stripped_names[] = {
    "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE",
    "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONINSPECT", "PYTHONBREAKPOINT", "PYTHONUSERBASE",
    "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB",
    "RUBYOPT", "RUBYLIB",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
    "BASH_ENV", "ENV", "ZDOTDIR", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "CDPATH",
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF",
    "SSH_ASKPASS", "SSH_AUTH_SOCK", "GCONV_PATH", "HOSTALIASES", "RESOLV_HOST_CONF", "LOCALDOMAIN",
    "GLIBC_TUNABLES",
    // Where git takes its repository, templates and programs from: a host
    // value would point git inside at a host repository or run a program.
    "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_TEMPLATE_DIR", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
    "GIT_PAGER", "GIT_DIFF_OPTS", "LESSOPEN", "LESSCLOSE",
};

// Set by the sandbox itself; a host value must never leak in, and
// NO_PROXY would let a client bypass the proxy.
constexpr std::string_view proxy_names[] = {
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY",
    "http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy",
};

// Credentials by exact name: the ones agent hosts and CI runners commonly
// hold, which a command inside has no business reading.
constexpr std::string_view credential_names[] = {
    "GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITLAB_TOKEN", "CI_JOB_TOKEN",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
    "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PASSWORD", "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_OAUTH_ACCESS_TOKEN", "NPM_TOKEN", "NODE_AUTH_TOKEN", "TWINE_PASSWORD", "CARGO_REGISTRY_TOKEN",
    "DOCKER_PASSWORD", "DOCKER_AUTH_CONFIG", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VAULT_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN", "DIGITALOCEAN_ACCESS_TOKEN", "HEROKU_API_KEY", "SENTRY_AUTH_TOKEN",
    "KUBECONFIG",
    // Databases, CI job identities, password managers, cloud storage.
    "PGPASSWORD", "PGPASSFILE", "MYSQL_PWD", "REDISCLI_AUTH", "CI_JOB_JWT", "CI_JOB_JWT_V2",
    "ACTIONS_ID_TOKEN_REQUEST_URL", "BW_SESSION", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
    "GOOGLE_CREDENTIALS", "GOOGLE_GHA_CREDS_PATH", "DATABRICKS_TOKEN", "SNOWFLAKE_PASSWORD",
};

// And families by prefix: per-host tokens and per-account sessions.
constexpr std::string_view credential_prefixes[] = {
    "OP_SESSION_",          // 1Password CLI
    "TF_TOKEN_",            // Terraform's per-host tokens
    "POETRY_PYPI_TOKEN_",   // Poetry's per-repository tokens
    "POETRY_HTTP_BASIC_",   // and their passwords
    "UV_INDEX_",            // uv's per-index credentials (UV_INDEX_<NAME>_PASSWORD and friends)
    "NPM_CONFIG_//",        // npm's per-registry _authToken settings
};

// And by the shape of the name: the suffixes secrets are given by convention.
constexpr std::string_view credential_suffixes[] = {
    "_API_KEY", "_APIKEY", "_TOKEN", "_SECRET", "_SECRET_KEY", "_PASSWORD", "_PASSWD", "_ACCESS_KEY",
    "_PRIVATE_KEY", "_CREDENTIALS",
    "_PAT",                 // personal access tokens (GITHUB_PAT, AZURE_DEVOPS_EXT_PAT)
    "_DSN",                 // data source names carry passwords (SENTRY_DSN, DATABASE_DSN)
    "_CONNECTION_STRING",   // cloud connection strings (AZURE_STORAGE_CONNECTION_STRING)
    "_CONN_STR", "_PWD", "_PASS", "_AUTH", "_AUTHTOKEN", "_AUTH_TOKEN", "_JWT", "_SAS",
};

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// scheme://user:password@host...: a password in a URL's userinfo.
bool url_with_password(std::string_view v) {
    auto sep = v.find("://");
    if (sep == std::string_view::npos || sep == 0) return false;
    for (char c : v.substr(0, sep))
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.')) return false;
    auto rest = v.substr(sep + 3);
    auto end = rest.find_first_of("/?#");
    auto authority = rest.substr(0, end);
    auto at = authority.rfind('@');
    if (at == std::string_view::npos) return false;
    return authority.substr(0, at).find(':') != std::string_view::npos;
}

bool is_proxy_variable(const std::string& name) {
    for (auto n : proxy_names)
        if (name == n) return true;
    return false;
}

}  // namespace

bool is_credential_variable(const std::string& name, const std::string& value) {
    for (auto n : credential_names)
        if (name == n) return true;
    std::string upper;
    for (char c : name) upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    for (auto pre : credential_prefixes)
        if (upper.rfind(pre, 0) == 0) return true;
    for (auto sfx : credential_suffixes)
        if (ends_with(upper, sfx)) return true;
    return url_with_password(value);
}

bool is_stripped_variable(const std::string& name) {
    for (auto p : stripped_prefixes)
        if (name.rfind(p, 0) == 0) return true;
    for (auto n : stripped_names)
        if (name == n) return true;
    for (auto n : proxy_names)
        if (name == n) return true;
    return false;
}

SanitisedEnv sanitise_env(const Env& host, const std::vector<std::string>& env_pass) {
    SanitisedEnv s;
    for (const auto& [k, v] : host) {
        if (is_stripped_variable(k)) {
            s.removed.push_back(k);
            s.why[k] = is_proxy_variable(k) ? "proxy" : "injection";
        } else if (is_credential_variable(k, v) &&
                   std::find(env_pass.begin(), env_pass.end(), k) == env_pass.end()) {
            s.removed.push_back(k);
            const std::string& name = k;  // clang 14 cannot capture a structured binding
            bool by_name = std::any_of(std::begin(credential_names), std::end(credential_names), [&](auto n) { return name == n; }) ||
                           is_credential_variable(k, "");
            s.why[k] = by_name ? "credential" : "credential-url";
        } else {
            if (is_credential_variable(k, v)) s.passed.push_back(k);
            s.env.emplace(k, v);
        }
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
