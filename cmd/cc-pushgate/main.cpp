// cc-pushgate: the loopback push gateway. Options -> configure() ->
// serve(), JSON Lines on stdout. See cc-pushgate(1).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cc/core/cli.hpp"
#include "cc/core/tool.hpp"
#include "cc/git/gateway.hpp"
#include "cc/git/receive_pack.hpp"
#include "cc/core/json_writer.hpp"

int main(int argc, char** argv) {
    return cc::tool::run("cc-pushgate", [&] {
        // Before any secret is read: no process of this uid (the sandbox's,
        // run by root) may trace this one or read its memory.
        if (!cc::tool::keep_memory_private()) {
            std::cerr << cc::tool::log_prefix("cc-pushgate") << "cannot make the process undumpable (prctl)\n";
            return cc::tool::exit_failure;
        }
        CLI::App app{"Push gateway: every git push goes through the policy, with a write token the agent never sees"};
        cc::tool::standard_flags(app, "cc-pushgate");
        cc::git::GatewayOptions o;
        app.add_option("--upstream", o.upstream, "Base URL; repo OWNER/NAME is BASE_URL/OWNER/NAME.git");
        app.add_option("--repo", o.repos, "A linked repository OWNER/NAME (repeat; the worktree's own repo too)");
        app.add_option("--worktree", o.worktree, "The agent's worktree: its origin repository is linked too");
        app.add_option("--policy", o.policy_file, "Policy file (JSON, '-' for stdin)");
        app.add_option("--mode", o.mode, "Session mode: chat (default), plan, review or orchestrate (read-only modes deny every push)")
            ->type_name("{chat,plan,review,orchestrate}");
        app.add_option("--spec", o.spec_file, "SandboxSpec of the session: agentId, conversationId, sessionId and mode fill the flags of those names");
        app.add_option("--approver", o.approver, "Command that answers 'ask' rules (allow or deny); none: ask is deny");
        app.add_option("--listen", o.listen, "Loopback address to listen on (port 0 picks one)");
        app.add_option("--token-command", o.token_command, "Command run per push that prints a write token");
        app.add_option("--token-file", o.token_file, "File holding a write token, read per push");
        app.add_option("--app-id", o.app_id, "GitHub App id (App mode)");
        app.add_option("--app-key", o.app_key_file, "GitHub App private key, PEM file (App mode)");
        app.add_option("--installation-id", o.installation_id, "GitHub App installation id (App mode)");
        app.add_option("--api-url", o.api_url, "GitHub API base URL (App mode)");
        app.add_option("--drain-limit", o.drain_limit, "Bytes of a rejected push read and discarded before answering");
        app.add_option("--drain-timeout", o.drain_timeout_s, "Seconds spent draining a rejected push at most");
        app.add_option("--agent", o.agent, "The agent's name: fills ${agent} in the policy's refs");
        app.add_option("--conversation", o.conversation, "The conversation id: fills ${conversation} in the policy's refs");
        app.add_option("--session", o.session, "The session id: fills ${session} in the policy's refs");
        app.add_option("--mirror-dir", o.mirror_dir, "Where the per-repository mirrors for the force-push check live");
        app.add_option("--head-timeout", o.head_timeout_s, "Seconds a client has to send a whole request head");
        app.add_option("--max-connections", o.max_connections, "Connections served at once (past the session secret)");
        app.add_option("--max-client-connections", o.max_client_connections, "Connections at once from one client address");
        app.add_option("--reject-label", o.reject_label,
                       "Label of a refusal in git's reject line: (LABEL policy: reason); default 'Control Center'");
        std::string url;
        auto* gc = app.add_subcommand("git-config", "Print the agent-side git configuration for a gateway URL");
        gc->add_option("--url", url, "The gateway URL from the ready event")->required();
        if (auto rc = cc::tool::parse(app, argc, argv, "cc-pushgate")) return *rc;
        if (*gc) {
            if (url.rfind("http://", 0) != 0)
                return cc::tool::report("cc-pushgate", cc::input_error("--url", "'" + url + "' is not an http URL"));
            std::cout << cc::git::git_config_text(url);
            return cc::tool::exit_ok;
        }
        auto cfg = cc::git::configure(o);
        if (!cfg) return cc::tool::report("cc-pushgate", cfg.error());
        auto s = cc::git::serve(*cfg, [](const nlohmann::json& ev) { cc::tool::emit_line(cc::json::write(ev)); });
        if (!s) return cc::tool::report("cc-pushgate", s.error());
        return cc::tool::exit_ok;
    });
}
