#include "cc/classify/hook_install.hpp"
#include "cc/classify/hook.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace cc::classify {

namespace {

using json = nlohmann::json;

std::string home() {
    const char* h = std::getenv("HOME");
    return h && *h ? h : "";
}

// The first word of a hook command (unquoted as a shell would, for the
// simple quoting hook_command writes).
std::string first_word(const std::string& cmd) {
    std::string w;
    bool in_single = false;
    for (char c : cmd) {
        if (in_single) {
            if (c == '\'') in_single = false;
            else w.push_back(c);
        } else if (c == '\'') {
            in_single = true;
        } else if (c == ' ' || c == '\t') {
            if (!w.empty()) break;
        } else {
            w.push_back(c);
        }
    }
    return w;
}

bool is_ours(const json& h) {
    if (!h.is_object() || !h.contains("command") || !h["command"].is_string()) return false;
    std::string p = first_word(h["command"].get<std::string>());
    auto slash = p.rfind('/');
    return (slash == std::string::npos ? p : p.substr(slash + 1)) == "cc-classify";
}

}  // namespace

cc::Result<std::string> settings_path(const std::string& cli, const std::string& scope) {
    if (!parse_hook_protocol(cli)) return input_error("--install-hook", "unknown agent CLI '" + cli + "' (claude, codex or gemini)");
    if (scope != "user" && scope != "project" && scope != "managed")
        return input_error("--scope", "unknown scope '" + scope + "' (user, project or managed)");
    const std::string dir = cli == "claude" ? ".claude" : cli == "codex" ? ".codex" : ".gemini";
    const std::string file = cli == "codex" ? "hooks.json" : "settings.json";
    if (scope == "project") return dir + "/" + file;
    if (scope == "managed") {
        if (cli == "claude") return std::string("/etc/claude-code/managed-settings.json");
        if (cli == "gemini") return std::string("/etc/gemini-cli/settings.json");
        return codex_requirements_path();
    }
    if (cli == "codex")
        if (const char* ch = std::getenv("CODEX_HOME"); ch && *ch) return std::string(ch) + "/" + file;
    if (home().empty()) return input_error("--scope user", "HOME is not set");
    return home() + "/" + dir + "/" + file;
}

std::string hook_command(const HookInstallSpec& spec) {
    std::string cmd = shell_word(spec.program) + " --hook " + spec.cli;
    for (const auto& a : spec.args) cmd += " " + shell_word(a);
    cmd += " --deadline " + std::to_string(spec.deadline_ms);
    return cmd;
}

cc::Result<json> install_hook(json settings, const HookInstallSpec& spec) {
    auto which = parse_hook_protocol(spec.cli);
    if (!which) return input_error("--install-hook", "unknown agent CLI '" + spec.cli + "' (claude, codex or gemini)");
    const Protocol* c = &protocol(*which);
    if (spec.program.empty() || spec.program[0] != '/')
        return input_error("--install-hook", "cc-classify's own path is not absolute ('" + spec.program + "')");
    if (settings.is_null()) settings = json::object();
    if (!settings.is_object()) return input_error("settings", "is not a JSON object");
    if (settings.contains("hooks") && !settings["hooks"].is_object())
        return input_error("settings", "'hooks' is not an object");
    json& hooks = settings["hooks"];
    if (hooks.is_null()) hooks = json::object();
    json& groups = hooks[c->event];
    if (groups.is_null()) groups = json::array();
    if (!groups.is_array()) return input_error("settings", std::string("'hooks.") + c->event + "' is not an array");
    // Earlier cc-classify entries go; other hooks stay as they are.
    json kept = json::array();
    for (auto g : groups) {
        if (g.is_object() && g.contains("hooks") && g["hooks"].is_array()) {
            json rest = json::array();
            for (const auto& h : g["hooks"])
                if (!is_ours(h)) rest.push_back(h);
            if (rest.empty()) continue;
            g["hooks"] = rest;
        }
        kept.push_back(g);
    }
    const int timeout = c->timeout_ms ? spec.deadline_ms : (spec.deadline_ms + 999) / 1000;
    kept.push_back({{"matcher", c->shell},
                    {"hooks", json::array({{{"type", "command"}, {"command", hook_command(spec)}, {"timeout", timeout}}})}});
    groups = kept;
    return settings;
}

std::vector<std::string> check_hook(const json& settings, const std::string& cli, const std::string& scope) {
    std::vector<std::string> why;
    auto which = parse_hook_protocol(cli);
    if (!which) return {"unknown agent CLI '" + cli + "'"};
    const Protocol* c = &protocol(*which);
    const json* found = nullptr;
    std::string matcher;
    if (settings.is_object() && settings.contains("hooks") && settings["hooks"].is_object() &&
        settings["hooks"].contains(c->event) && settings["hooks"][c->event].is_array())
        for (const auto& g : settings["hooks"][c->event]) {
            if (!g.is_object() || !g.contains("hooks") || !g["hooks"].is_array()) continue;
            for (const auto& h : g["hooks"])
                if (is_ours(h)) {
                    found = &h;
                    matcher = g.value("matcher", "");
                }
        }
    if (!found) return {std::string("no cc-classify hook under hooks.") + c->event};
    if (matcher != c->shell && matcher != "*" && !matcher.empty())
        why.push_back("the hook's matcher is '" + matcher + "', not the shell tool '" + c->shell + "'");
    const std::string cmd = (*found)["command"].get<std::string>();
    const std::string prog = first_word(cmd);
    if (prog.empty() || prog[0] != '/')
        why.push_back("the hook runs '" + prog + "' by name: a CLI that resets PATH (Codex's login shell) will not find it");
    else if (::access(prog.c_str(), X_OK) != 0)
        why.push_back(prog + " is not an executable file");
    if (cmd.find("--hook " + cli) == std::string::npos)
        why.push_back("the hook does not speak '--hook " + cli + "'");
    // The CLI's timeout against the deadline cc-classify answers within.
    long deadline = 30000;
    if (auto d = cmd.find("--deadline "); d != std::string::npos) deadline = std::atol(cmd.c_str() + d + 11);
    if (!found->contains("timeout") || !(*found)["timeout"].is_number())
        why.push_back("the hook has no timeout: the CLI's default may be shorter than --deadline " + std::to_string(deadline));
    else {
        double t = (*found)["timeout"].get<double>() * (c->timeout_ms ? 1 : 1000);
        if (t < static_cast<double>(deadline))
            why.push_back("the CLI gives the hook " + std::to_string(static_cast<long>(t)) +
                          " ms, less than its --deadline " + std::to_string(deadline) +
                          ": a timed-out hook is no opinion to the CLI, and the call runs");
    }
    if (cli == "codex" && scope != "managed")
        why.push_back("Codex runs a hook outside its managed layers only once a person trusted it (/hooks in the "
                      "CLI); this file cannot say whether that happened");
    return why;
}

}  // namespace cc::classify

#include "cc/core/io.hpp"
#include "cc/core/json_writer.hpp"

#include <filesystem>
#include <ostream>

namespace cc::classify {

cc::Result<int> install_or_check(bool install, const HookInstallSpec& spec, const std::string& scope,
                             const std::string& settings_file, std::ostream& out) {
    std::string path = settings_file;
    if (path.empty()) {
        auto p = settings_path(spec.cli, scope);
        if (!p) return p.error();
        path = *p;
    }
    // Codex's managed layer is TOML, the operator's: read as text, the
    // hook's block alone rewritten. Every other file is a JSON object.
    const bool toml = spec.cli == "codex" && scope == "managed";
    std::string text;
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
        auto t = io::read_input(path);
        if (!t) return t.error();
        text = std::move(*t);
    }
    nlohmann::json current;
    if (toml) {
        current = codex_managed_hooks(text);
    } else if (!text.empty() || std::filesystem::exists(path, ec)) {
        current = nlohmann::json::parse(text, nullptr, false);
        if (current.is_discarded() || !current.is_object())
            return input_error("'" + path + "'", "is not a JSON object; left as it is");
    }
    if (!install) {
        auto why = check_hook(current, spec.cli, scope);
        out << cc::json::write(nlohmann::json{{"event", "hook-check"}, {"cli", spec.cli}, {"settings", path},
                                          {"runs", why.empty()}, {"problems", why}})
            << '\n';
        return why.empty() ? 0 : 1;
    }
    std::string written;
    if (toml) {
        auto merged = install_codex_managed(text, spec);
        if (!merged) return Error{merged.error().code, merged.error().message, "'" + path + "'", 0};
        written = std::move(*merged);
    } else {
        auto merged = install_hook(current, spec);
        if (!merged) {
            Error e = merged.error();
            e.subject = "'" + path + "': " + e.subject;
            return e;
        }
        written = cc::json::write(*merged, 2) + "\n";
    }
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) return io_error("'" + parent.string() + "'", ec.message(), ec.value());
    if (auto w = io::write_file_atomic(path, written, 0644); !w) return w.error();
    out << cc::json::write(nlohmann::json{{"event", "hook-installed"}, {"cli", spec.cli}, {"settings", path},
                                      {"command", hook_command(spec)}})
        << '\n';
    return 0;
}

}  // namespace cc::classify

namespace cc::classify {

cc::Result<HookInstallSpec> hook_install_spec(const std::string& cli, const std::string& mode, const std::string& policy,
                                          const std::string& wrap_spec, bool emit_ask, const std::string& approver,
                                          int deadline_ms) {
    HookInstallSpec spec;
    spec.cli = cli;
    auto self = self_program();
    if (!self) return io_error("/proc/self/exe", "cannot read cc-classify's own path");
    spec.program = *self;
    if (deadline_ms < 0) return input_error("--deadline", "must be a positive number of milliseconds");
    spec.deadline_ms = deadline_ms > 0 ? deadline_ms : 30000;
    auto absolute = [](const std::string& p) {
        std::error_code ec;
        auto a = std::filesystem::absolute(p, ec);
        return ec ? p : a.lexically_normal().string();
    };
    if (!mode.empty() && mode != "chat") spec.args.insert(spec.args.end(), {"--mode", mode});
    if (!policy.empty()) {
        if (policy == "-") return input_error("--policy", "'-' (stdin) cannot be a hook's policy");
        spec.args.insert(spec.args.end(), {"--policy", absolute(policy)});
    }
    if (!wrap_spec.empty()) spec.args.insert(spec.args.end(), {"--wrap-with", absolute(wrap_spec)});
    if (emit_ask) spec.args.push_back("--emit-ask");
    if (!approver.empty()) spec.args.insert(spec.args.end(), {"--approver", approver});
    return spec;
}

}  // namespace cc::classify
