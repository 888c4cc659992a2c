// Codex's managed layer: the hook in /etc/codex/requirements.toml, which
// Codex runs without a person trusting it first (hook_install.hpp).
//
// The file is TOML and the operator's: what else it holds is left byte for
// byte. The hook is one block between two marker comments, written as the
// array-of-tables form Codex reads (hooks.PreToolUse, then its hooks), and
// replaced as a whole on the next install. A file that already gives
// PreToolUse hooks (or a `hooks` key) in a form another table could clash
// with is refused, never rewritten into TOML Codex would reject.

#include "cc/classify/hook_install.hpp"
#include "cc/classify/hook.hpp"

#include <regex>
#include <sstream>

namespace cc::classify {

namespace {

constexpr const char* k_begin = "# >>> cc-classify hook: written by cc-classify --install-hook codex --scope managed; replaced, never merged";
constexpr const char* k_end = "# <<< cc-classify hook";

// A TOML basic string.
std::string toml_string(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

// The text outside our block, and our block (empty when none).
struct Split {
    std::string outside, block;
    bool broken = false;  // a begin marker without its end
};
Split split_block(const std::string& text) {
    Split s;
    auto b = text.find(k_begin);
    if (b == std::string::npos) {
        s.outside = text;
        return s;
    }
    auto e = text.find(k_end, b);
    if (e == std::string::npos) {
        s.broken = true;
        return s;
    }
    auto after = text.find('\n', e);
    after = after == std::string::npos ? text.size() : after + 1;
    s.block = text.substr(b, after - b);
    s.outside = text.substr(0, b) + text.substr(after);
    return s;
}

}  // namespace

std::string codex_requirements_path() { return "/etc/codex/requirements.toml"; }

cc::Result<std::string> install_codex_managed(const std::string& text, const HookInstallSpec& spec) {
    if (spec.program.empty() || spec.program[0] != '/')
        return input_error("--install-hook", "cc-classify's own path is not absolute ('" + spec.program + "')");
    Split s = split_block(text);
    if (s.broken) return input_error("requirements.toml", "has the cc-classify begin marker without its end; left as it is");
    // What our tables could clash with: `hooks` given as a value at the top
    // level, PreToolUse given as a value in [hooks], a [hooks.PreToolUse]
    // standard table. Other [[hooks.PreToolUse]] entries stay and run too.
    std::istringstream in(s.outside);
    std::string table;  // the table the current line is in ("" top level)
    static const std::regex header(R"(^\[\[?\s*([^\]]*?)\s*\]\]?)");
    static const std::regex top_hooks(R"(^("hooks"|'hooks'|hooks)\s*[=.])");
    static const std::regex pre_tool(R"(^("PreToolUse"|'PreToolUse'|PreToolUse)\s*[=.])");
    for (std::string line; std::getline(in, line);) {
        auto first = line.find_first_not_of(" \t");
        if (first == std::string::npos || line[first] == '#') continue;
        const std::string l = line.substr(first);
        std::smatch m;
        bool clash = false;
        if (std::regex_search(l, m, header)) {
            table = m[1].str();
            clash = l.rfind("[[", 0) != 0 && table == "hooks.PreToolUse";
        } else {
            clash = (table.empty() && std::regex_search(l, top_hooks)) || (table == "hooks" && std::regex_search(l, pre_tool));
        }
        if (clash)
            return input_error("requirements.toml", "gives hooks in a form this installer cannot extend safely ('" + l +
                                                        "'): add the hook as [[hooks.PreToolUse]] tables by hand");
    }
    const Protocol& c = protocol(*parse_hook_protocol("codex"));
    const int timeout = c.timeout_ms ? spec.deadline_ms : (spec.deadline_ms + 999) / 1000;
    std::string block = std::string(k_begin) + "\n[[hooks.PreToolUse]]\nmatcher = " + toml_string(c.shell) +
                        "\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = " +
                        toml_string(hook_command(spec)) + "\ntimeout = " + std::to_string(timeout) + "\n" + k_end + "\n";
    std::string out = s.outside;
    if (!out.empty() && out.back() != '\n') out += '\n';
    if (!out.empty()) out += '\n';
    return out + block;
}

nlohmann::json codex_managed_hooks(const std::string& text) {
    Split s = split_block(text);
    nlohmann::json groups = nlohmann::json::array();
    if (s.block.empty()) return nlohmann::json::object();
    // Our own block, read back: matcher, command (a basic string, with the
    // escapes toml_string writes) and timeout.
    std::string matcher, command;
    double timeout = -1;
    std::istringstream in(s.block);
    auto unquote = [](const std::string& v) {
        std::string out;
        for (std::size_t i = 1; i + 1 < v.size(); ++i) {
            if (v[i] == '\\' && i + 2 < v.size()) {
                char n = v[++i];
                if (n == 'u' && i + 4 < v.size()) {
                    out += static_cast<char>(std::stoi(v.substr(i + 1, 4), nullptr, 16));
                    i += 4;
                } else {
                    out += n;
                }
            } else {
                out += v[i];
            }
        }
        return out;
    };
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("matcher = ", 0) == 0) matcher = unquote(line.substr(10));
        else if (line.rfind("command = ", 0) == 0) command = unquote(line.substr(10));
        else if (line.rfind("timeout = ", 0) == 0) timeout = std::atof(line.c_str() + 10);
    }
    nlohmann::json hook = {{"type", "command"}, {"command", command}};
    if (timeout >= 0) hook["timeout"] = timeout;
    groups.push_back({{"matcher", matcher}, {"hooks", nlohmann::json::array({hook})}});
    return {{"hooks", {{"PreToolUse", groups}}}};
}

}  // namespace cc::classify
