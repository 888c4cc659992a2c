// Wrappers: commands that run another command (env, sudo, timeout, xargs,
// shells with -c, eval, find -exec ...). The wrapped command is classified
// as if it stood alone, and the wrapper adds what it adds (privilege).
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

void Analyzer::w_env(Call& c) {
    std::size_t k = c.args_from();
    while (k < c.a.size()) {
        const std::string& t = c.a[k].text;
        if (t == "--") {
            ++k;
            break;
        }
        if (t == "-S" || t == "--split-string" || starts_with(t, "--split-string=") ||
            (starts_with(t, "-S") && t.size() > 2) || (is_opt(c.a[k]) && !starts_with(t, "--") && t.back() == 'S')) {
            std::string s;
            std::size_t next = k + 1;
            if (starts_with(t, "--split-string=")) s = t.substr(15);
            else if (starts_with(t, "-S") && t.size() > 2) s = t.substr(2);
            else if (k + 1 < c.a.size()) {
                s = c.a[k + 1].text;
                next = k + 2;
            }
            for (std::size_t j = next; j < c.a.size(); ++j) s += " " + c.a[j].text;
            return reparse(s, c.f, "env -S", c.depth);
        }
        if (!is_opt(c.a[k])) break;
        if (t == "-u" || t == "-C" || t == "--unset" || t == "--chdir") k += 2;
        else ++k;
    }
    rest(c, k);
}

void Analyzer::w_simple(Call& c) { rest(c, c.args_from()); }  // nohup, builtin, nocorrect, noglob

void Analyzer::w_command(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "", {});
    if (has_flag(c.a, c.args_from(), k, 'v', {}) || has_flag(c.a, c.args_from(), k, 'V', {})) return;
    rest(c, k);
}

void Analyzer::w_exec(Call& c) { rest(c, skip_opts(c.a, c.args_from(), "a", {})); }

void Analyzer::w_time(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "fo", {"--format", "--output"});
    if (auto o = opt_value(c.a, c.args_from(), 'o', {"--output"}, "f")) write_target(c.f, *o, false, "time -o");
    rest(c, k);
}

void Analyzer::w_timeout(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "sk", {"--signal", "--kill-after"});
    rest(c, k + 1);  // the duration
}

void Analyzer::w_nice(Call& c) { rest(c, skip_opts(c.a, c.args_from(), "n", {"--adjustment"})); }

void Analyzer::w_ionice(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "cnpPu", {"--class", "--classdata", "--pid", "--pgid", "--uid"});
    if (has_flag(c.a, c.args_from(), k, 'p', {"--pid"}) || has_flag(c.a, c.args_from(), k, 'P', {"--pgid"}) ||
        has_flag(c.a, c.args_from(), k, 'u', {"--uid"}))
        return;
    rest(c, k);
}

void Analyzer::w_stdbuf(Call& c) { rest(c, skip_opts(c.a, c.args_from(), "ioe", {"--input", "--output", "--error"})); }

void Analyzer::w_setsid(Call& c) { rest(c, skip_opts(c.a, c.args_from(), "", {})); }

void Analyzer::w_taskset(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "", {});
    if (has_flag(c.a, c.args_from(), k, 'p', {"--pid"})) return;
    rest(c, k + 1);  // the mask or cpu list
}

void Analyzer::w_chrt(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "T", {"--sched-runtime", "--sched-deadline", "--sched-period"});
    if (has_flag(c.a, c.args_from(), k, 'p', {"--pid"})) return;
    rest(c, k + 1);  // the priority
}

void Analyzer::w_flock(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "wEc", {"--timeout", "--wait", "--conflict-exit-code", "--command"});
    if (auto s = opt_value(c.a, c.args_from(), 'c', {"--command"}, "wE")) return shell_string_text(c, *s, "flock -c");
    if (k + 1 < c.a.size() && (c.a[k + 1].text == "-c" || c.a[k + 1].text == "--command") && k + 2 < c.a.size())
        return shell_string(c, c.a[k + 2], "flock -c");
    rest(c, k + 1);  // the lock file or descriptor
}

void Analyzer::w_watch(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "nq", {"--interval", "--equexit"});
    if (has_flag(c.a, c.args_from(), k, 'x', {"--exec"})) return rest(c, k);
    join_and_reparse(c, k, "watch");
}

void Analyzer::w_xargs(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "dEIaLnPs",
                              {"--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs",
                               "--max-chars", "--arg-file", "--process-slot-var"});
    if (k >= c.a.size()) return;  // echo
    rest(c, k);
}

void Analyzer::w_sudo(Call& c) {
    add(c.f, kPriv, std::string(c.name()) + " runs a command as another user");
    std::size_t from = c.args_from();
    std::size_t k = skip_opts(c.a, from, "ugpCDhrtTUR",
                              {"--user", "--group", "--prompt", "--close-from", "--chdir", "--host", "--role",
                               "--type", "--command-timeout", "--other-user", "--chroot"});
    if (c.name() == "sudoedit" || has_flag(c.a, from, k, 'e', {"--edit"}))
        return add(c.f, kWrite, "sudo -e edits files");
    if (has_flag(c.a, from, k, 'l', {"--list"}) || has_flag(c.a, from, k, 'v', {"--validate"})) return;
    rest(c, k);
}

void Analyzer::w_doas(Call& c) {
    add(c.f, kPriv, "doas runs a command as another user");
    rest(c, skip_opts(c.a, c.args_from(), "uC", {}));
}

void Analyzer::w_su(Call& c) {
    add(c.f, kPriv, std::string(c.name()) + " switches user");
    std::size_t from = c.args_from();
    if (auto s = opt_value(c.a, from, 'c', {"--command", "--session-command"}, "sgGwu"))
        return shell_string_text(c, *s, std::string(c.name()) + " -c");
    if (c.name() == "runuser") {
        std::size_t k = skip_opts(c.a, from, "ugGsw", {"--user", "--group", "--supp-group", "--shell"});
        if (has_flag(c.a, from, k, 'u', {"--user"})) rest(c, k);
    }
}

void Analyzer::w_pkexec(Call& c) {
    add(c.f, kPriv, "pkexec runs a command as another user");
    rest(c, skip_opts(c.a, c.args_from(), "", {"--user"}));
}

void Analyzer::w_shell(Call& c) {
    std::size_t k = c.args_from();
    // Multi-call binaries: `busybox rm -rf /` is rm (and `busybox sh -c` sh).
    if (c.name() == "busybox" || c.name() == "toybox") {
        if (k < c.a.size() && (c.a[k].text == "--list" || c.a[k].text == "--help" || c.a[k].text == "--version")) return;
        if (k >= c.a.size()) return add(c.f, kRun, std::string(c.name()) + " runs its shell");
        return rest(c, k);
    }
    bool command_string = false;
    while (k < c.a.size()) {
        const std::string& t = c.a[k].text;
        if (t == "--" || t == "-") {
            ++k;
            break;
        }
        if (t.size() < 2 || (t[0] != '-' && t[0] != '+')) break;
        if (t == "-o" || t == "+o" || t == "-O" || t == "+O" || t == "--rcfile" || t == "--init-file") {
            k += 2;
            continue;
        }
        if (t[1] != '-' && t.find('c') != std::string::npos) command_string = true;
        ++k;
    }
    std::string via = std::string(c.name()) + " -c";
    if (command_string) {
        if (k >= c.a.size()) return add(c.f, kUnparsable, via + " has no command string");
        return shell_string(c, c.a[k], via);
    }
    if (k < c.a.size()) return add(c.f, kRun, std::string(c.name()) + " runs the script '" + c.a[k].text + "'");
    if (c.ctx.stdin_script)
        return reparse(*c.ctx.stdin_script, c.f, std::string(c.name()) + " reading a literal script", c.depth);
    add(c.f, kRun, std::string(c.name()) + " runs commands read from its input");
}

void Analyzer::shell_string(Call& c, const Arg& arg, const std::string& via) {
    if (arg.dynamic) {
        add(c.f, kRun, via + " runs a string only known at run time ('" + arg.text + "')");
        return string_readings(arg.text, c.f, via, c.depth);
    }
    reparse(arg.text, c.f, via, c.depth);
}

// A shell string known only at run time: its plausible readings (as for a
// command name) parsed and judged, kept as Finding::readings.
void Analyzer::string_readings(const std::string& text, Finding& f, sv via, int depth) {
    if (in_reading_) return;
    std::vector<std::string> texts;
    plausible_readings(text, line_values(), texts, 8);
    for (const auto& t : texts) {
        Finding g;
        std::size_t before = out.size();
        in_reading_ = true;
        reparse(t, g, via, depth);
        in_reading_ = false;
        std::vector<std::string> classes = g.classes;
        for (std::size_t j = before; j < out.size(); ++j) {
            classes.insert(classes.end(), out[j].classes.begin(), out[j].classes.end());
            for (const auto& rd : out[j].readings) classes.insert(classes.end(), rd.classes.begin(), rd.classes.end());
        }
        out.resize(before);
        std::sort(classes.begin(), classes.end());
        classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
        if (classes.empty() || classes == std::vector<std::string>{std::string(kRun)}) continue;
        std::string list;
        for (const auto& x : classes) list += (list.empty() ? "" : ", ") + x;
        f.notes.push_back("read as " + std::string(via) + " '" + t + "' it would be " + list);
        f.readings.push_back({text, t, std::move(classes)});
    }
}

void Analyzer::shell_string_text(Call& c, const std::string& text, const std::string& via) {
    if (text.find('$') != std::string::npos || text.find('`') != std::string::npos) {
        // Taken from an option cluster: expansions cannot be told apart from
        // literal text here, so judge the literal reading and note the doubt.
        add(c.f, kRun, via + " string may depend on run-time values");
    }
    reparse(text, c.f, via, c.depth);
}

void Analyzer::join_and_reparse(Call& c, std::size_t from, sv via) {
    std::string s;
    bool dynamic = false;
    for (std::size_t j = from; j < c.a.size(); ++j) {
        if (c.a[j].dynamic && !dynamic) {
            dynamic = true;
            add(c.f, kRun, std::string(via) + " runs '" + c.a[j].text + "', only known at run time");
        }
        if (!s.empty()) s += ' ';
        s += c.a[j].text;
    }
    if (dynamic) string_readings(s, c.f, via, c.depth);
    else if (!s.empty()) reparse(s, c.f, via, c.depth);
}

void Analyzer::w_eval(Call& c) { join_and_reparse(c, c.args_from(), "eval"); }

void Analyzer::w_trap(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "", {});
    if (has_flag(c.a, c.args_from(), k, 'p', {}) || has_flag(c.a, c.args_from(), k, 'l', {})) return;
    if (k + 1 < c.a.size()) shell_string(c, c.a[k], "trap");
}

void Analyzer::w_source(Call& c) {
    std::string what = c.a.size() > c.args_from() ? c.a[c.args_from()].text : "";
    add(c.f, kRun, std::string(c.name()) + " runs the script '" + what + "'");
}

void Analyzer::w_find(Call& c) {
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        if (t == "-exec" || t == "-execdir" || t == "-ok" || t == "-okdir") {
            std::size_t end = k + 1;
            while (end < c.a.size() && c.a[end].text != ";" && c.a[end].text != "+") ++end;
            Args inner(c.a.begin() + static_cast<std::ptrdiff_t>(k + 1), c.a.begin() + static_cast<std::ptrdiff_t>(end));
            if (!inner.empty()) {
                // {} stands for every file under the start points.
                if (auto root = precious_find_root(c))
                    for (auto& x : inner)
                        if (x.text == "{}") x.text = *root;
                command(inner, 0, c.f, Ctx{}, c.depth);
            }
            k = end;
        } else if (t == "-delete") {
            add(c.f, kWrite, "find -delete removes files");
            if (auto root = precious_find_root(c)) add(c.f, kDestroy, "find " + *root + " -delete");
        } else if ((t == "-fprint" || t == "-fprint0" || t == "-fls" || t == "-fprintf") && k + 1 < c.a.size()) {
            write_target(c.f, c.a[k + 1].text, c.a[k + 1].dynamic, "find " + t);
        }
    }
}

// A start point of find that takes the system or the home with it.
std::optional<std::string> Analyzer::precious_find_root(const Call& c) {
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        if (t == "-H" || t == "-L" || t == "-P" || starts_with(t, "-O") || starts_with(t, "-D")) continue;
        if (t.empty() || t[0] == '-' || t == "(" || t == "!") break;
        if (!c.a[k].dynamic && is_precious(t)) return t;
    }
    return std::nullopt;
}

}  // namespace cc::classify::detail

namespace cc::classify::detail {

// script [-c CMD] [FILE]: runs CMD (or an interactive shell) with its output
// logged to FILE.
void Analyzer::w_script(Call& c) {
    if (auto s = opt_value(c.a, c.args_from(), 'c', {"--command"}, "ETIOBm")) {
        shell_string_text(c, *s, "script -c");
    } else {
        add(c.f, kRun, "script runs a shell");
    }
    auto pos = positionals(c.a, c.args_from(), "cETIOBm", {"--command", "--echo", "--log-timing", "--log-in", "--log-out",
                                                            "--log-io", "--logging-format", "--output-limit"});
    if (!pos.empty()) write_target(c.f, c.a[pos.back()].text, c.a[pos.back()].dynamic, "script's log");
    else if (!has_flag(c.a, c.args_from(), c.a.size(), 'q', {})) add(c.f, kWrite, "script logs to ./typescript");
}

// parallel CMD ::: ARGS: CMD run with each argument (up to eight are judged
// as the command they make); without a command, the lines of its input run.
void Analyzer::w_parallel(Call& c) {
    std::size_t k = skip_opts(c.a, c.args_from(), "jSPIadEC",
                              {"--jobs", "--sshlogin", "--replace", "--arg-file", "--delimiter", "--colsep",
                               "--results", "--joblog", "--workdir", "--tmpdir", "--timeout", "--retries"});
    Args cmd;
    std::size_t j = k;
    for (; j < c.a.size() && c.a[j].text != ":::" && c.a[j].text != "::::" && c.a[j].text != ":::+"; ++j)
        cmd.push_back(c.a[j]);
    if (cmd.empty()) return add(c.f, kRun, "parallel runs the commands it reads");
    std::vector<Arg> args;
    for (; j < c.a.size() && args.size() < 8; ++j)
        if (c.a[j].text != ":::" && c.a[j].text != "::::" && c.a[j].text != ":::+") args.push_back(c.a[j]);
    if (args.empty()) return command(cmd, 0, c.f, c.ctx, c.depth);
    for (const Arg& x : args) {
        Args b = cmd;
        bool placed = false;
        for (auto& w : b)
            if (w.text.find("{}") != std::string::npos) {
                w.text.replace(w.text.find("{}"), 2, x.text);
                w.dynamic = w.dynamic || x.dynamic;
                placed = true;
            }
        if (!placed) b.push_back(x);
        // One word with blanks in it is a command line: parallel runs it
        // through a shell.
        if (cmd.size() == 1 && !b[0].dynamic && b[0].text.find_first_of(" \t;|&") != std::string::npos) {
            std::string line = b[0].text;
            for (std::size_t w = 1; w < b.size(); ++w) line += " " + b[w].text;
            shell_string_text(c, line, "parallel");
            continue;
        }
        command(b, 0, c.f, c.ctx, c.depth);
    }
}

}  // namespace cc::classify::detail
