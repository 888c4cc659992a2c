// cc-pushgate's options: checked, loaded and turned into a GatewayConfig;
// and the ready event that tells the agent's side where the gateway is.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <future>
#include <tuple>

#include "cc/core/child.hpp"
#include "cc/git/gateway.hpp"
#include "cc/spec/spec.hpp"
#include "cc/git/receive_pack.hpp"
#include "cc/git/server.hpp"

namespace cc::git {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// The worktree's own repository: its origin remote (git config, no shell).
Result<std::string> worktree_origin(const std::string& dir) {
    // The agent's own repository, read by git with none of the gateway's
    // git variables and no system or global configuration; a deadline, as
    // for every child.
    cc::child::Spec run;
    run.argv = {"git", "-C", dir, "config", "--get", "remote.origin.url"};
    run.env = cc::child::environment_of(cc::child::not_git);
    run.env["GIT_CONFIG_NOSYSTEM"] = "1";
    run.env["GIT_CONFIG_GLOBAL"] = "/dev/null";
    run.env["GIT_TERMINAL_PROMPT"] = "0";
    run.deadline = std::chrono::seconds(10);
    run.output_cap = 64 * 1024;
    run.capture_err = false;
    auto done = cc::child::run(run);
    if (!done) return input_error("--worktree", "could not run git: " + done.error().one_line());
    if (done->late) return input_error("--worktree", "git gave no answer about '" + dir + "' within 10 s");
    int code = done->status;
    std::string url = std::move(done->out);
    while (!url.empty() && (url.back() == '\n' || url.back() == '\r')) url.pop_back();
    if (code != 0 || url.empty()) return input_error("--worktree", "'" + dir + "' has no origin remote");
    if (auto k = normalise_repo(url); !k)
        return input_error("--worktree", "origin of '" + dir + "' ('" + url + "') is not a GitHub repository");
    return url;
}

}  // namespace

Status validate(const GatewayConfig& cfg) {
    if (auto e = parse_listen(cfg.listen); !e) return e.error();
    if (cfg.upstream.rfind("http://", 0) != 0 && cfg.upstream.rfind("https://", 0) != 0)
        return input_error("--upstream", "'" + cfg.upstream + "' is not an http(s) URL");
    if (cfg.repos.empty()) return input_error("--repo", "at least one repository must be linked");
    for (const auto& r : cfg.repos)
        if (auto k = normalise_repo(r); !k) return input_error("--repo", k.error().subject + " " + k.error().message);
    if (!cfg.tokens) return input_error("token source", "one of --token-command, --token-file or --app-id is required");
    return ok();
}

Result<GatewayConfig> configure(const GatewayOptions& o) {
    GatewayConfig cfg;
    cfg.listen = o.listen;
    cfg.upstream = o.upstream;
    cfg.repos = o.repos;
    cfg.drain_limit = o.drain_limit;
    cfg.drain_timeout = std::chrono::seconds(o.drain_timeout_s);
    if (o.head_timeout_s == 0 || o.head_timeout_s > 600)
        return input_error("--head-timeout", "must be 1 to 600 seconds");
    cfg.head_timeout = std::chrono::seconds(o.head_timeout_s);
    if (o.max_connections == 0 || o.max_connections > 1024)
        return input_error("--max-connections", "must be 1 to 1024");
    if (o.max_client_connections == 0 || o.max_client_connections > o.max_connections)
        return input_error("--max-client-connections", "must be 1 to --max-connections (" +
                                                           std::to_string(o.max_connections) + ")");
    cfg.max_connections = o.max_connections;
    cfg.max_client_connections = o.max_client_connections;
    std::string mode_name = o.mode;
    // Values a SandboxSpec gives that cannot fill a ref pattern: an error only
    // when the policy uses that variable (below).
    std::map<std::string, std::string> spec_unusable;
    std::optional<spec::SandboxSpec> sandbox;
    if (!o.spec_file.empty()) {
        auto sp = spec::load_sandbox_spec(o.spec_file);
        if (!sp) {
            Error e = sp.error();
            e.code = Errc::input;
            e.subject = "--spec '" + o.spec_file + "': " + e.subject;
            return e;
        }
        sandbox = std::move(*sp);
        std::string spec_mode(policy::to_string(sandbox->mode));
        if (mode_name.empty()) mode_name = spec_mode;
        else if (mode_name != spec_mode)
            return input_error("--mode", "'" + mode_name + "' differs from the spec's mode '" + spec_mode + "'");
    }
    if (mode_name.empty()) mode_name = "chat";
    for (const auto& [flag, name, value, field] :
         {std::tuple<const char*, const char*, const std::string*, const char*>{"--agent", "agent", &o.agent, "agentId"},
          {"--conversation", "conversation", &o.conversation, "conversationId"},
          {"--session", "session", &o.session, "sessionId"}}) {
        std::optional<std::string> from_spec;
        if (sandbox) {
            std::string n = name;
            from_spec = n == "agent" ? sandbox->agentId : n == "conversation" ? sandbox->conversationId
                                                                               : std::optional<std::string>(sandbox->sessionId);
        }
        if (!value->empty() && from_spec && *from_spec != *value)
            return input_error(flag, "'" + one_line(*value, 80) + "' differs from the spec's " + field + " '" +
                                         one_line(*from_spec, 80) + "'");
        if (!value->empty()) {
            if (auto why = policy::bad_ref_variable(*value))
                return input_error(flag, "'" + one_line(*value, 80) + "' " + *why);
            cfg.ref_vars[name] = *value;
        } else if (from_spec && !from_spec->empty()) {
            if (auto why = policy::bad_ref_variable(*from_spec))
                spec_unusable[name] = std::string(field) + " '" + one_line(*from_spec, 80) + "' " + *why;
            else
                cfg.ref_vars[name] = *from_spec;
        }
    }
    // The label git shows refusals under: one short line of printable text.
    if (o.reject_label.empty() || o.reject_label.size() > 64 ||
        std::any_of(o.reject_label.begin(), o.reject_label.end(),
                    [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f || ch == '(' || ch == ')'; }))
        return input_error("--reject-label", "must be 1 to 64 printable characters, no parentheses");
    cfg.reject_label = o.reject_label;
    cfg.mirror_dir = o.mirror_dir;
    if (cfg.mirror_dir.empty()) {
        const char* xdg = std::getenv("XDG_CACHE_HOME");
        const char* home = std::getenv("HOME");
        if (xdg && *xdg == '/')
            cfg.mirror_dir = std::string(xdg) + "/cc-pushgate/mirrors";
        else if (home && *home == '/')
            cfg.mirror_dir = std::string(home) + "/.cache/cc-pushgate/mirrors";
        else
            cfg.mirror_dir = "/var/tmp/cc-pushgate-" + std::to_string(::getuid()) + "/mirrors";
    }
    if (!o.worktree.empty()) {
        // The origin is in a file the agent can rewrite: it may only confirm a
        // repository the operator named, never add one.
        auto origin = worktree_origin(o.worktree);
        if (!origin) return origin.error();
        auto key = normalise_repo(*origin);
        bool named = std::any_of(o.repos.begin(), o.repos.end(), [&](const std::string& r) {
            auto k = normalise_repo(r);
            return k && key && *k == *key;
        });
        if (!named)
            return input_error("--worktree", "origin of '" + o.worktree + "' is " + (key ? *key : *origin) +
                                                 ", which no --repo names");
    }
    if (o.upstream.empty()) return input_error("--upstream", "is required");
    auto mode = policy::parse_mode(mode_name);
    if (!mode) return input_error("--mode", "unknown mode '" + mode_name + "' (chat, plan, review or orchestrate)");
    cfg.mode = *mode;
    // --policy, else the operator's file (/etc/cc/policy.json), else the built-in one.
    auto pol = policy::load_effective(o.policy_file, policy::default_policy(), &cfg.policy_source);
    if (!pol) {
        Error e = pol.error();
        e.code = Errc::input;  // an unreadable policy is bad input: exit 2, nothing started
        return e;
    }
    cfg.policy = std::move(*pol);
    // A rule naming a variable the session did not give matches nothing. For
    // an allow rule that only allows less; for a deny or ask rule it would
    // restrict less than written, so the gateway refuses to start instead.
    for (const auto& rule : cfg.policy.rules) {
        if (rule.decision == policy::Decision::allow) continue;
        for (const auto& name : policy::variables_used(policy::Policy{1, {rule}}))
            if (!cfg.ref_vars.count(name) && spec_unusable.count(name))
                return input_error("--spec", spec_unusable[name] + ", so it cannot fill ${" + name + "}");
            else if (!cfg.ref_vars.count(name))
                return input_error("--" + name, "is required: the policy's refs use ${" + name + "} in a " +
                                                    std::string(policy::to_string(rule.decision)) + " rule");
    }
    if (!o.approver.empty()) {
        cfg.approver = policy::approver_from_command(o.approver, std::chrono::seconds(30));
        if (cfg.approver.argv.empty()) return input_error("--approver", "is empty");
    }
    bool app = !o.app_id.empty() || !o.app_key_file.empty() || !o.installation_id.empty();
    int sources = (o.token_command.empty() ? 0 : 1) + (o.token_file.empty() ? 0 : 1) + (app ? 1 : 0);
    if (sources != 1)
        return input_error("token source", "give exactly one of --token-command, --token-file or "
                                           "--app-id/--app-key/--installation-id");
    if (!o.token_command.empty()) {
        auto a = policy::approver_from_command(o.token_command, std::chrono::seconds(30));
        if (a.argv.empty()) return input_error("--token-command", "is empty");
        cfg.tokens = command_token_source(a.argv, a.timeout);
    } else if (!o.token_file.empty()) {
        if (::access(o.token_file.c_str(), R_OK) != 0)
            return input_error("--token-file", "'" + o.token_file + "' is not readable");
        struct stat st {};
        if (::stat(o.token_file.c_str(), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)))
            log_line("warning: --token-file '" + o.token_file + "' is readable by group or others (chmod 600 it)");
        cfg.tokens = file_token_source(o.token_file);
    } else {
        if (o.app_id.empty() || o.app_key_file.empty() || o.installation_id.empty())
            return input_error("GitHub App mode", "needs --app-id, --app-key and --installation-id");
        if (o.api_url.rfind("http://", 0) != 0 && o.api_url.rfind("https://", 0) != 0)
            return input_error("--api-url", "'" + o.api_url + "' is not an http(s) URL");
        std::ifstream in(o.app_key_file);
        if (!in) return input_error("--app-key", "'" + o.app_key_file + "' is not readable");
        // The App's private key mints every token: the same warning as a token file's.
        struct stat st {};
        if (::stat(o.app_key_file.c_str(), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)))
            log_line("warning: --app-key '" + o.app_key_file + "' is readable by group or others (chmod 600 it)");
        std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto src = app_token_source({o.app_id, pem, o.installation_id, o.api_url});
        if (!src) return src.error();
        cfg.tokens = std::move(*src);
    }
    if (auto s = validate(cfg); !s) return s.error();
    return cfg;
}

namespace {

// What git_config_text writes, as keys and values.
json git_config_keys(const std::string& url) {
    GatewayUrl g = split_gateway_url(url);
    json keys = {{"url." + g.base + "github.com/.pushInsteadOf", github_push_prefixes()}, {"http." + g.base + ".proxy", ""}};
    if (!g.secret.empty()) keys["http." + g.base + ".extraHeader"] = "X-CC-Pushgate-Session: " + g.secret;
    return keys;
}

}  // namespace

json ready_event(const std::string& url, const GatewayConfig& cfg) {
    json repos = json::array();
    for (const auto& r : cfg.repos) repos.push_back(*normalise_repo(r));
    std::string base = url;
    if (base.back() != '/') base.push_back('/');
    return {{"event", "ready"},
            {"url", base},
            {"pid", ::getpid()},
            {"mode", policy::to_string(cfg.mode)},
            {"policy", cfg.policy_source},
            {"repos", repos},
            {"tokenSource", cfg.tokens ? cfg.tokens->kind() : ""},
            {"gitConfig", git_config_keys(base)},
            {"gitConfigText", git_config_text(base)},
            {"env", {{"no_proxy", "127.0.0.1,localhost,::1"}, {"NO_PROXY", "127.0.0.1,localhost,::1"}}}};
}

}  // namespace cc::git
