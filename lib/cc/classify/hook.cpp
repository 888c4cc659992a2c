// The agent CLIs' pre-tool hooks (hook.hpp; cc-classify(1), HOOKS).
#include "cc/classify/hook.hpp"

#include <cstdlib>

#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <istream>
#include <iterator>
#include <ostream>

#include "cc/core/json_reader.hpp"
#include "cc/core/json_writer.hpp"

namespace cc::classify {

using policy::Decision;

const Protocol& protocol(HookProtocol p) {
    static const Protocol table[] = {
        {"claude", "PreToolUse", "Bash", false},
        {"codex", "PreToolUse", "Bash", false},
        {"gemini", "BeforeTool", "run_shell_command", true},
    };
    return table[static_cast<int>(p)];
}

namespace {

std::string quoted(std::string_view s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') out += "'\\''";
        else out.push_back(c);
    }
    return out + "'";
}

// The answer is read by the agent CLI's own strict parser, which expects a
// string where a string stands: never the {"bytes":...} form. (The payload
// came through nlohmann's parser, so it is UTF-8 already.)
template <typename J>
std::string dump(const J& j) {
    return cc::json::write_replacing(j);
}

}  // namespace

std::optional<HookProtocol> parse_hook_protocol(std::string_view name) {
    for (auto p : {HookProtocol::claude, HookProtocol::codex, HookProtocol::gemini})
        if (name == protocol(p).name) return p;
    return std::nullopt;
}

const char* const pager_guard =
    "export LESSSECURE=1 PAGER=cat GIT_PAGER=cat MANPAGER=cat SYSTEMD_PAGER=cat BAT_PAGER=cat DELTA_PAGER=cat\n";

std::string shell_word(std::string_view s) {
    if (!s.empty() &&
        s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,@%+") == std::string_view::npos)
        return std::string(s);
    return quoted(s);
}

std::string wrap_command(std::string_view exe, std::string_view spec, std::string_view command) {
    return quoted(exe) + " --spec " + quoted(spec) + " -- bash -c " + quoted(command);
}

std::optional<std::string> self_program() {
    char self[4096];
    ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return std::nullopt;
    return std::string(self, static_cast<std::size_t>(n));
}

std::optional<std::string> sibling_program(std::string_view name) {
    auto self = self_program();
    if (!self) return std::nullopt;
    std::string dir = *self;
    dir.resize(dir.rfind('/'));
    std::string parent = dir.substr(0, dir.rfind('/'));
    for (const std::string& c : {dir + "/" + std::string(name), parent + "/" + std::string(name) + "/" + std::string(name)})
        if (::access(c.c_str(), X_OK) == 0) return c;
    return std::nullopt;
}

cc::Result<HookTimes> hook_times(int deadline_ms, bool approver, int hook_ms, int approver_ms) {
    const int deadline = deadline_ms > 0 ? deadline_ms : 30000;
    const int margin = std::min(1000, deadline / 4);
    const int latest = deadline - margin;  // the hook's answer is out by then
    if (latest < 100) return input_error("--deadline", "too short for a hook to answer (at least 134 ms)");
    HookTimes t;
    if (hook_ms > latest)
        return input_error("--hook-timeout", std::to_string(hook_ms) + " ms is not below the CLI's deadline (" +
                                                 std::to_string(deadline) + " ms) by a second: the CLI would give up first "
                                                 "and run the call");
    if (!approver) {
        t.hook_ms = hook_ms > 0 ? hook_ms : std::min(5000, latest);
        t.approver_ms = approver_ms > 0 ? approver_ms : 30000;
        return t;
    }
    t.hook_ms = hook_ms > 0 ? hook_ms : std::min((approver_ms > 0 ? approver_ms : 30000) + 1000, latest);
    const int approver_latest = t.hook_ms - 500;
    if (approver_latest < 50) return input_error("--hook-timeout", "leaves the approver no time");
    if (approver_ms > approver_latest)
        return input_error("--approver-timeout", std::to_string(approver_ms) + " ms does not end half a second before the "
                                                     "hook's own deadline (" + std::to_string(t.hook_ms) + " ms)");
    t.approver_ms = approver_ms > 0 ? approver_ms : approver_latest;
    return t;
}

cc::Result<HookSetup> resolve_hook_flags(const HookFlags& f) {
    HookSetup out;
    if (!f.protocol.empty()) {
        auto proto = parse_hook_protocol(f.protocol);
        if (!proto) return input_error("--hook", "unknown protocol '" + f.protocol + "' (claude, codex or gemini)");
        out.options.protocol = *proto;
        out.options.emit_ask = f.emit_ask;
        if (f.hook_timeout_ms < 0 || f.deadline_ms < 0 || f.approver_timeout_ms < 0)
            return input_error("--hook-timeout, --deadline and --approver-timeout",
                               "must be positive numbers of milliseconds");
        auto times = hook_times(f.deadline_ms, f.approver, f.hook_timeout_ms, f.approver_timeout_ms);
        if (!times) return times.error();
        out.hook_ms = times->hook_ms;
        out.approver_ms = times->approver_ms;
    } else if (f.emit_ask || !f.wrap_spec.empty() || f.hook_timeout_ms != 0 || f.deadline_ms != 0) {
        return input_error("", "--emit-ask, --wrap-with, --hook-timeout and --deadline go with --hook");
    } else if (f.approver_timeout_ms != 0) {
        if (f.approver_timeout_ms < 0)
            return input_error("--approver-timeout", "must be a positive number of milliseconds");
        out.approver_ms = f.approver_timeout_ms;
    }
    if (f.emit_ask && (out.options.protocol != HookProtocol::claude || f.approver))
        return input_error("--emit-ask", "only with --hook claude and no --approver (the CLI asks its user)");
    if (!f.wrap_spec.empty()) {
        // Absolute, and there now: the CLI runs the command from its own directory.
        char* real = ::realpath(f.wrap_spec.c_str(), nullptr);
        std::string path = real ? real : "";
        std::free(real);
        if (path.empty() || ::access(path.c_str(), R_OK) != 0)
            return input_error("--wrap-with", "cannot read the SandboxSpec '" + f.wrap_spec + "'");
        out.options.wrap_spec = path;
        // The cc-wrap installed beside this program, by its absolute path.
        auto exe = sibling_program("cc-wrap");
        if (!exe) return input_error("--wrap-with", "no cc-wrap installed beside cc-classify");
        out.options.wrap_exe = *exe;
    }
    return out;
}

namespace {

int hook_once(std::istream& in, const Options& opts, const HookOptions& hook, std::ostream& out, std::ostream& err) {
    const Protocol& proto = protocol(hook.protocol);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto bad = [&](const std::string& msg) {
        err << "cc-classify: hook input: " << msg << '\n';
        return 2;
    };
    auto doc = json::parse(text, "stdin");
    if (!doc) return bad(doc.error().one_line());
    // The payload belongs to the agent CLI and grows new fields; only the
    // fields read here are checked.
    const auto& j = *doc;
    if (!j.is_object()) return bad("must be a JSON object");
    if (j.contains("hook_event_name") &&
        (!j["hook_event_name"].is_string() || j["hook_event_name"].get<std::string>() != proto.event))
        return bad(std::string("hook_event_name: only ") + proto.event + " is supported");
    if (!j.contains("tool_name") || !j["tool_name"].is_string()) return bad("tool_name: must be a string");
    if (j["tool_name"].get<std::string>() != proto.shell) {  // not a shell command: no opinion
        if (hook.protocol == HookProtocol::gemini) out << "{}\n" << std::flush;
        return 0;
    }
    if (!j.contains("tool_input") || !j["tool_input"].is_object()) return bad("tool_input: must be an object");
    const auto& ti = j["tool_input"];
    if (!ti.contains("command") || !ti["command"].is_string()) return bad("tool_input.command: must be a string");
    std::string cmd = ti["command"].get<std::string>();
    policy::Mode mode = opts.mode;
    // The CLI's own plan mode is read-only too: never looser than it.
    if (j.contains("permission_mode") && j["permission_mode"] == "plan" && mode == policy::Mode::chat)
        mode = policy::Mode::plan;
    Result r = classify(cmd, mode, opts.policy);
    if (r.decision == Decision::ask && !hook.emit_ask) {
        if (opts.resolver) {
            resolve(r, cmd, opts.resolver);
        } else {
            r.decision = Decision::deny;
            r.reason += "; no approver is connected, so ask is deny";
        }
    }
    std::string reason = "cc-classify (" + std::string(policy::to_string(mode)) + " mode): " + r.reason;
    // In the read-only modes a call that may run gets its pagers' escapes
    // turned off first: a CLI that lets the model type into a running
    // program (Codex's write_stdin) would otherwise have a shell in any
    // pager (less's `!`, man, git log) that no hook sees.
    std::string run_cmd = cmd;
    bool guarded = false;
    if (policy::is_read_only(mode) && r.decision != Decision::deny) {
        run_cmd = std::string(pager_guard) + cmd;
        guarded = true;
    }
    // The sandbox rewrite: only for a call that may run. A NUL cannot reach
    // bash -c (the argument would end there, not the line judged): deny.
    std::optional<std::string> wrapped;
    if (!hook.wrap_spec.empty() && r.decision != Decision::deny) {
        if (cmd.find('\0') != std::string::npos) {
            r.decision = Decision::deny;
            reason += "; a NUL byte cannot be passed to the sandbox";
        } else {
            wrapped = wrap_command(hook.wrap_exe, hook.wrap_spec, run_cmd);
        }
    } else if (guarded && r.decision != Decision::deny) {
        if (cmd.find('\0') != std::string::npos) {  // as above: the line run would not be the line judged
            r.decision = Decision::deny;
            reason += "; a NUL byte cannot be passed on";
        } else {
            wrapped = run_cmd;
        }
    }
    nlohmann::ordered_json o;
    switch (hook.protocol) {
        case HookProtocol::claude:
        case HookProtocol::codex: {
            // Codex honours deny, and allow only with updatedInput: a plain
            // allow is no output, leaving the call to Codex's own approval.
            if (hook.protocol == HookProtocol::codex && r.decision == Decision::allow && !wrapped) return 0;
            auto& h = o["hookSpecificOutput"];
            h["hookEventName"] = proto.event;
            h["permissionDecision"] = policy::to_string(r.decision);
            if (hook.protocol == HookProtocol::claude || r.decision == Decision::deny) h["permissionDecisionReason"] = reason;
            if (wrapped) {
                nlohmann::json input = ti;  // the call as sent (description, timeout, ...), the command wrapped
                input["command"] = *wrapped;
                h["updatedInput"] = input;
            }
            break;
        }
        case HookProtocol::gemini:
            o["decision"] = r.decision == Decision::allow ? "allow" : "deny";
            o["reason"] = reason;
            if (wrapped) {
                // Gemini replaces the call's arguments with tool_input (it
                // does not merge): all of them, the command wrapped.
                o["hookSpecificOutput"]["hookEventName"] = proto.event;
                o["hookSpecificOutput"]["tool_input"] = ti;
                o["hookSpecificOutput"]["tool_input"]["command"] = *wrapped;
            }
            break;
    }
    out << dump(o) << '\n';
    out.flush();
    return 0;
}

}  // namespace

int run_hook(std::istream& in, const Options& opts, const HookOptions& hook, std::ostream& out, std::ostream& err) {
    // Every CLI runs the call when a hook exits with anything but 0 or 2, so
    // no failure here may end in another status: fail closed.
    try {
        return hook_once(in, opts, hook, out, err);
    } catch (const std::exception& e) {
        err << "cc-classify: hook: " << e.what() << "; the call is denied\n";
        return 2;
    }
}

namespace {

char timeout_line[128];
std::size_t timeout_len = 0;

void say_and_exit(const char* s, std::size_t n) {
    while (n > 0) {
        ssize_t w = ::write(2, s, n);
        if (w <= 0) break;
        s += w;
        n -= static_cast<std::size_t>(w);
    }
    ::_exit(2);
}

extern "C" void on_timeout(int) { say_and_exit(timeout_line, timeout_len); }

extern "C" void on_fatal(int sig) {
    // Async-signal-safe: no allocation, no stdio.
    char line[96] = "cc-classify: hook: ended by signal ";
    std::size_t n = std::strlen(line);
    char digits[4];
    int d = 0;
    for (int v = sig; v > 0 && d < 3; v /= 10) digits[d++] = static_cast<char>('0' + v % 10);
    while (d > 0) line[n++] = digits[--d];
    const char tail[] = "; the call is denied\n";
    std::memcpy(line + n, tail, sizeof tail - 1);
    say_and_exit(line, n + sizeof tail - 1);
}

}  // namespace

void arm_hook_failsafe(int timeout_ms) {
    std::string t = "cc-classify: hook: no answer within " + std::to_string(timeout_ms) +
                    " ms (--hook-timeout); the call is denied\n";
    timeout_len = std::min(t.size(), sizeof timeout_line);
    std::memcpy(timeout_line, t.data(), timeout_len);
    // Its own stack, so a stack overflow still reaches the handler.
    static char alt[64 * 1024];
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    ::sigaltstack(&ss, nullptr);
    struct sigaction sa {};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK;
    sa.sa_handler = on_fatal;
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGHUP, SIGINT}) ::sigaction(sig, &sa, nullptr);
    sa.sa_handler = on_timeout;
    ::sigaction(SIGALRM, &sa, nullptr);
    itimerval it{};
    it.it_value.tv_sec = timeout_ms / 1000;
    it.it_value.tv_usec = (timeout_ms % 1000) * 1000;
    ::setitimer(ITIMER_REAL, &it, nullptr);
}

}  // namespace cc::classify
