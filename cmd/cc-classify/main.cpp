// cc-classify: judge a shell command line before it runs.
//   cc-classify [--mode M] [--policy FILE] [--approver CMD] [--] LINE...
//   cc-classify --jsonl < lines.jsonl
//   cc-classify --hook claude|codex|gemini [--emit-ask] [--wrap-with SPEC] < pretooluse.json
#include <CLI/CLI.hpp>
#include <ext/stdio_filebuf.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <iostream>

#include "cc/classify/cli.hpp"
#include "cc/classify/hook.hpp"
#include "cc/classify/knowledge.hpp"
#include "cc/core/cli.hpp"
#include "cc/core/output.hpp"
#include "cc/core/tool.hpp"
#include "cc/policy/approver.hpp"
#include "cc/classify/hook_install.hpp"

int main(int argc, char** argv) {
    return cc::tool::run("cc-classify", [&]() -> int {
        CLI::App app{"Classify a shell command line into action classes and decide allow, ask or deny."};
        std::string mode_name = "chat", policy_path, hook, approver_cmd, wrap_spec;
        int approver_timeout_ms = 0, hook_timeout_ms = 0, deadline_ms = 0;
        bool jsonl = false, explain = false, emit_ask = false;
        std::vector<std::string> words;
        cc::tool::standard_flags(app, "cc-classify");
        cc::tool::Format format = cc::tool::Format::auto_;
        cc::tool::add_format_option(app, format);
        app.add_option("--mode", mode_name, "chat, plan, review or orchestrate (default chat)")
            ->type_name("{chat,plan,review,orchestrate}");
        app.add_option("--policy", policy_path, "policy file (JSON, version 1); '-' is stdin");
        app.add_flag("--jsonl", jsonl, "read {\"cmd\",\"mode\"} lines on stdin, write one result line each");
        app.add_flag("--explain", explain, "print which rule or default decided each sub-command, and why, as text");
        app.add_option("--hook", hook, "speak an agent CLI's pre-tool hook protocol on stdin/stdout (claude, codex or gemini)")
            ->type_name("{claude,codex,gemini}");
        app.add_flag("--emit-ask", emit_ask, "--hook claude: answer an ask with \"ask\", so the CLI asks its user");
        app.add_option("--wrap-with", wrap_spec, "--hook: rewrite an allowed command to run under cc-wrap --spec SPEC");
        app.add_option("--hook-timeout", hook_timeout_ms,
                       "--hook: deny (exit 2) when no answer is ready after this many milliseconds (default 5000, "
                       "or the approver's timeout plus 1000; always a second before --deadline)");
        app.add_option("--deadline", deadline_ms,
                       "--hook: the milliseconds the agent CLI gives the hook (its timeout setting; default 30000)");
        app.add_option("--approver", approver_cmd, "program that answers allow or deny to an ask (argv split on blanks)");
        app.add_option("--approver-timeout", approver_timeout_ms,
                       "milliseconds to wait for the approver (default 30000; with --hook, half a second before the "
                       "hook's deadline)");
        std::string install_cli, check_cli, scope = "user", settings_file;
        app.add_option("--install-hook", install_cli, "write cc-classify into an agent CLI's settings as its pre-tool hook")
            ->type_name("{claude,codex,gemini}");
        app.add_option("--check-hook", check_cli, "say whether the cc-classify hook in a CLI's settings would run (exit 1: no)")
            ->type_name("{claude,codex,gemini}");
        app.add_option("--scope", scope, "--install-hook/--check-hook: user (default), project or managed")
            ->type_name("{user,project,managed}");
        app.add_option("--settings", settings_file, "--install-hook/--check-hook: this settings file instead of the scope's");
        app.add_option("line", words, "the command line (several words are joined with spaces)");
        if (auto rc = cc::tool::parse(app, argc, argv, "cc-classify")) return *rc;
        auto usage = [](const std::string& msg) {
            std::cerr << "cc-classify: " << msg << '\n';
            return cc::tool::exit_usage;
        };
        if (!install_cli.empty() || !check_cli.empty()) {
            if (!install_cli.empty() && !check_cli.empty()) return usage("give one of --install-hook and --check-hook");
            if (!hook.empty() || jsonl || !words.empty())
                return usage("--install-hook and --check-hook take no command line, --jsonl or --hook");
            auto spec = cc::classify::hook_install_spec(install_cli.empty() ? check_cli : install_cli, mode_name,
                                                        policy_path, wrap_spec, emit_ask, approver_cmd, deadline_ms);
            if (!spec) return cc::tool::report("cc-classify", spec.error(), cc::tool::exit_usage);
            auto rc = cc::classify::install_or_check(!install_cli.empty(), *spec, scope, settings_file, std::cout);
            if (!rc) return cc::tool::report("cc-classify", rc.error(), cc::tool::exit_usage);
            return *rc;
        }
        cc::classify::HookFlags flags;
        flags.protocol = hook;
        flags.emit_ask = emit_ask;
        flags.wrap_spec = wrap_spec;
        flags.hook_timeout_ms = hook_timeout_ms;
        flags.deadline_ms = deadline_ms;
        flags.approver_timeout_ms = approver_timeout_ms;
        flags.approver = !approver_cmd.empty();
        auto setup = cc::classify::resolve_hook_flags(flags);
        if (!setup) return cc::tool::report("cc-classify", setup.error(), cc::tool::exit_usage);
        // A hook never fails open: from here a crash or a hang is exit 2 (a block).
        if (!hook.empty()) cc::classify::arm_hook_failsafe(setup->hook_ms);
        const cc::classify::HookOptions& hook_opts = setup->options;
        approver_timeout_ms = setup->approver_ms;
        int forms = (jsonl ? 1 : 0) + (!hook.empty() ? 1 : 0) + (!words.empty() ? 1 : 0);
        auto made = cc::classify::make_options(mode_name, policy_path);
        if (!made) return cc::tool::report("cc-classify", made.error(), cc::tool::exit_usage);
        cc::classify::Options& opts = *made;
        if (forms != 1) return usage("give exactly one of a command line, '--jsonl' or '--hook PROTOCOL'");
        if (explain && words.empty()) return usage("--explain: only with a command line");
        if (explain && format == cc::tool::Format::json) return usage("--explain is the text form: not with --format json");
        if (!approver_cmd.empty() || !hook.empty()) {
            auto approver = cc::policy::approver_from_command(approver_cmd, std::chrono::milliseconds(approver_timeout_ms));
            if (!approver_cmd.empty() && approver.argv.empty()) return usage("--approver: empty command");
            opts.resolver = [approver](const cc::policy::Verdict& v, const nlohmann::json& q) {
                return cc::policy::resolve_ask(v, q, approver);
            };
        }
        if (jsonl) {
            // stdin in 64 KiB blocks: std::cin, synced with stdio, hands
            // run_jsonl one character at a time.
            __gnu_cxx::stdio_filebuf<char> stdin_buf(0, std::ios::in, 64 * 1024);
            std::istream in(&stdin_buf);
            return cc::classify::run_jsonl(in, opts, std::cout, std::cerr);
        }
        if (!hook.empty()) return cc::classify::run_hook(std::cin, opts, hook_opts, std::cout, std::cerr);
        // The words byte for byte (CLI11 would have rewritten "[a,b]").
        // The options that take a value, from the definitions themselves (a
        // list kept by hand misses the next option added, and its value
        // would be read as part of the command line).
        std::vector<std::string> value_options;
        for (const CLI::Option* o : app.get_options())
            if (!o->get_positional() && o->get_expected_max() != 0) {
                for (const auto& n : o->get_lnames()) value_options.push_back("--" + n);
                for (const auto& n : o->get_snames()) value_options.push_back("-" + n);
            }
        words = cc::classify::line_words(argc, argv, value_options);
        std::string line;
        for (const auto& w : words) line += (line.empty() ? "" : " ") + w;
        // A person on a terminal reads the explanation (--format text, or
        // --explain); a program gets the JSON.
        const bool text = explain || cc::tool::text_output(format);
        std::string json;
        int status = text ? cc::classify::run_explain(line, opts, json) : cc::classify::run_line(line, opts, json);
        if (text) json = cc::tool::paint_decisions(json);
        if (text && !json.empty()) json.pop_back();  // emit_line adds the last newline
        // A reader that stopped reading is not an error (as in cc::tool::run).
        return cc::tool::emit_line(json) ? status : cc::tool::exit_ok;
    });
}
