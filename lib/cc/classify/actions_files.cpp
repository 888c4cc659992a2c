// Local file and system tools: what they write, delete, or run, read from
// their options the way each tool reads them.
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

void Analyzer::f_rm(Call& c) {
    std::size_t from = c.args_from();
    bool recursive = false, no_preserve = false;
    std::vector<const Arg*> targets;
    bool opts_done = false;
    for (std::size_t k = from; k < c.a.size(); ++k) {
        const Arg& x = c.a[k];
        if (!opts_done && x.text == "--") {
            opts_done = true;
        } else if (!opts_done && is_opt(x)) {
            if (x.text == "--recursive") recursive = true;
            else if (x.text == "--no-preserve-root") no_preserve = true;
            else if (x.text[1] != '-' && (x.text.find('r') != std::string::npos || x.text.find('R') != std::string::npos))
                recursive = true;
        } else {
            targets.push_back(&x);
        }
    }
    add(c.f, kWrite, std::string(c.name()) + " deletes files");
    if (no_preserve) return add(c.f, kDestroy, "rm --no-preserve-root");
    for (const Arg* t : targets) {
        if (recursive && is_precious(t->text))
            return add(c.f, kDestroy, "rm -r of '" + t->text + "'");
        if (is_block_device(t->text)) return add(c.f, kDestroy, "rm of the device '" + t->text + "'");
        if (recursive && is_worktree(t->text)) {
            add(c.f, kDestroyWork, "rm -r of '" + t->text + "' deletes the worktree");
        } else if (recursive && !t->dynamic && relative_tree(t->text) && !is_rebuildable(t->text)) {
            add(c.f, kDestroyWork, "rm -r of '" + t->text + "' deletes a tree of the agent's work (not a build output or cache)");
        }
        if (is_system_file(t->text)) add(c.f, kSystem, "rm of '" + t->text + "' removes a system or start-up file");
    }
}

// cp, mv, ln, install, rsync, shred, truncate, touch, mkdir...: any target that is a device or kernel knob.
void Analyzer::f_write(Call& c) {
    add(c.f, kWrite, std::string(c.name()) + " changes files");
    if (c.name() == "install")
        if (auto m = opt_value(c.a, c.args_from(), 'm', {"--mode"}, "gotS"); m && setuid_mode(*m))
            add(c.f, kPriv, "install -m " + *m + " sets the setuid or setgid bit");
    bool recursive = has_flag(c.a, c.args_from(), c.a.size(), 'R', {"--recursive"}) ||
                     (c.name() != "chmod" && c.name() != "chown" && c.name() != "chgrp" &&
                      has_flag(c.a, c.args_from(), c.a.size(), 'r', {}));
    // The files it changes: for cp, install and ln only the last operand
    // (the others are read); for the tools that change what they are given
    // (mv, chmod, touch, truncate, ...) every operand; for the rest
    // (compilers, archivers, formatters) none is judged as a system file.
    sv name = c.name();
    static constexpr auto changes_operands = sorted_names({"mv", "truncate", "touch", "chown", "chgrp", "chmod", "shred",
                                                           "rmdir", "setfacl", "chattr", "dos2unix", "unix2dos",
                                                           "rename", "fallocate", "mkdir", "mkfifo", "mknod", "sponge"});
    const bool last_only = name == "cp" || name == "install" || name == "ln" || name == "link";
    const bool judged = last_only || contains(changes_operands, name);
    std::size_t last = c.a.size();
    for (std::size_t k = c.a.size(); k-- > c.args_from();)
        if (!is_opt(c.a[k])) {
            last = k;
            break;
        }
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
        const Arg& x = c.a[k];
        if (is_opt(x)) continue;
        if (judged && (!last_only || k == last) && is_system_file(x.text))
            add(c.f, kSystem, std::string(name) + " changes the system or start-up file '" + x.text + "'");
        if (x.dynamic) continue;
        if (is_block_device(x.text)) add(c.f, kDestroy, std::string(c.name()) + " on the device '" + x.text + "'");
        else if (is_kernel_knob(x.text)) add(c.f, kEscape, std::string(c.name()) + " on '" + x.text + "'");
        else if (recursive && (c.name() == "chmod" || c.name() == "chown" || c.name() == "chgrp") && is_precious(x.text))
            add(c.f, kDestroy, std::string(c.name()) + " -R of '" + x.text + "'");
    }
    if (c.name() == "shred")
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k)
            if (!is_opt(c.a[k]) && starts_with(c.a[k].text, "/dev/"))
                add(c.f, kDestroy, "shred of '" + c.a[k].text + "'");
}

void Analyzer::f_chmod(Call& c) {
    f_write(c);
    auto pos = positionals(c.a, c.args_from(), "", {"--reference"});
    if (pos.empty()) return;
    const std::string& mode = c.a[pos[0]].text;
    bool setid = false;
    if (!mode.empty() && std::all_of(mode.begin(), mode.end(), [](char ch) { return ch >= '0' && ch <= '7'; })) {
        if (mode.size() >= 4) {
            int special = mode[mode.size() - 4] - '0';
            setid = (special & 6) != 0;
        }
    } else {
        for (std::size_t j = 0; j < mode.size(); ++j)
            if ((mode[j] == '+' || mode[j] == '=') && mode.find('s', j) != std::string::npos) setid = true;
    }
    if (setid) add(c.f, kPriv, "chmod '" + mode + "' sets the setuid or setgid bit");
}

void Analyzer::f_dd(Call& c) {
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k)
        if (starts_with(c.a[k].text, "of=")) write_target(c.f, c.a[k].text.substr(3), c.a[k].dynamic, "dd");
}

void Analyzer::f_tee(Call& c) {
    for (auto p : positionals(c.a, c.args_from(), "", {"--output-error"}))
        write_target(c.f, c.a[p].text, c.a[p].dynamic, "tee");
}

void Analyzer::f_sed(Call& c) {
    std::size_t from = c.args_from();
    std::vector<const Arg*> scripts;
    bool script_option = false;
    for (std::size_t k = from; k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        if (t == "--") break;
        if (starts_with(t, "--in-place") || (t.size() > 1 && t[0] == '-' && t[1] != '-' &&
                                             t.find('i') != std::string::npos &&
                                             t.find_first_of("ef") > t.find('i')))
            add(c.f, kWrite, "sed -i edits files in place");
        if ((t == "-e" || t == "--expression") && k + 1 < c.a.size()) {
            scripts.push_back(&c.a[++k]);
            script_option = true;
        } else if (starts_with(t, "--expression=") || (starts_with(t, "-e") && t.size() > 2)) {
            script_option = true;
            std::string body = t.substr(t[1] == '-' ? 13 : 2);
            if (c.a[k].dynamic) return add(c.f, kRun, "the sed script is only known at run time");
            sed_script(c, body);
        } else if (t == "-f" || t == "--file" || starts_with(t, "--file=") || (starts_with(t, "-f") && t.size() > 2)) {
            return add(c.f, kRun, "sed -f runs a script file, which may run commands or write files");
        }
    }
    if (!script_option) {
        auto pos = positionals(c.a, from, "l", {"--line-length"});
        if (!pos.empty()) scripts.push_back(&c.a[pos[0]]);
    }
    for (const Arg* x : scripts) {
        if (x->dynamic) return add(c.f, kRun, "the sed script is only known at run time");
        sed_script(c, x->text);
    }
}

// GNU sed's commands that reach outside: e (and the s///e flag) run a
// command, w and W (and s///w) write a file. Addresses, regular
// expressions, replacements and text arguments are skipped as sed reads
// them.
void Analyzer::sed_script(Call& c, const std::string& t) {
    std::size_t k = 0, n = t.size();
    auto blanks = [&] {
        while (k < n && (t[k] == ' ' || t[k] == '\t')) ++k;
    };
    auto to_eol = [&] {
        std::size_t start = k;
        while (k < n && t[k] != '\n') ++k;
        return t.substr(start, k - start);
    };
    auto delimited = [&](char d) {  // past the next unescaped d
        while (k < n && t[k] != d) {
            if (t[k] == '\\') ++k;
            ++k;
        }
        if (k < n) ++k;
    };
    auto write_file = [&](const std::string& how) {
        blanks();
        std::string file = to_eol();
        if (file != "/dev/stdout" && file != "/dev/stderr") write_target(c.f, file, false, how);
    };
    while (k < n) {
        char ch = t[k];
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == ';' || ch == '{' || ch == '}' || ch == '!') {
            ++k;
            continue;
        }
        // Addresses: numbers, $, first~step, /re/, \cREc, and ",addr".
        if ((ch >= '0' && ch <= '9') || ch == '$' || ch == ',' || ch == '~' || ch == '+') {
            ++k;
            continue;
        }
        if (ch == '/' || ch == '\\') {
            char d = ch == '/' ? '/' : (k + 1 < n ? t[k + 1] : '/');
            k += ch == '/' ? 1 : 2;
            delimited(d);
            while (k < n && (t[k] == 'I' || t[k] == 'M')) ++k;
            continue;
        }
        if (ch == '#') {
            to_eol();
            continue;
        }
        ++k;
        switch (ch) {
            case 'e': return add(c.f, kRun, "the sed script runs a command (e)");
            case 'w': case 'W': write_file("sed " + std::string(1, ch)); break;
            case 'r': case 'R': case 'a': case 'i': case 'c': case ':': case 'b': case 't': case 'T': case 'v':
                // a text, a file to read or a label: to the end of the line
                // (a label also ends at ';').
                while (k < n && t[k] != '\n' && !((ch == 'b' || ch == 't' || ch == 'T') && t[k] == ';')) {
                    if (t[k] == '\\') ++k;
                    ++k;
                }
                break;
            case 's': case 'y': {
                if (k >= n) break;
                char d = t[k++];
                delimited(d);
                delimited(d);
                if (ch == 'y') break;
                while (k < n && std::string_view("gpiImMe0123456789w").find(t[k]) != std::string_view::npos) {
                    if (t[k] == 'e') return add(c.f, kRun, "the sed script runs a command (s///e)");
                    if (t[k] == 'w') {
                        ++k;
                        write_file("sed s///w");
                        break;
                    }
                    ++k;
                }
                break;
            }
            case 'q': case 'Q': case 'l': case 'L':
                while (k < n && t[k] >= '0' && t[k] <= '9') ++k;
                break;
            default: break;  // p d D n N g G h H x = z F P
        }
    }
}

// man -P/--pager runs the given program; -H/--html a browser.
void Analyzer::f_man(Call& c) {
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        if (t == "--") break;
        if (t == "-P" || starts_with(t, "--pager") || (starts_with(t, "-P") && t.size() > 2) || starts_with(t, "-H") ||
            starts_with(t, "--html"))
            return add(c.f, kRun, "man " + t + " runs the program it names");
    }
}

// xxd [options] [infile [outfile]]: the second operand is written.
void Analyzer::f_xxd(Call& c) {
    auto pos = positionals(c.a, c.args_from(), "cglsoCn", {"-cols", "-groupsize", "-len", "-seek", "-name"});
    if (pos.size() >= 2) write_target(c.f, c.a[pos[1]].text, c.a[pos[1]].dynamic, "xxd");
}

void Analyzer::f_awk(Call& c) {
    std::size_t from = c.args_from();
    if (opt_value(c.a, from, 'f', {"--file"}, "vF")) return add(c.f, kRun, "awk -f runs a program file");
    if (auto i = opt_value(c.a, from, 'i', {"--include"}, "vFf"); i && *i == "inplace")
        return add(c.f, kWrite, "awk -i inplace edits files");
    auto pos = positionals(c.a, from, "vFf", {});
    if (pos.empty()) return;
    const std::string& prog = c.a[pos[0]].text;
    if (prog.find("system") != std::string::npos || prog.find("| getline") != std::string::npos ||
        prog.find("|&") != std::string::npos || prog.find("print |") != std::string::npos ||
        prog.find("printf |") != std::string::npos)
        return add(c.f, kRun, "the awk program runs commands");
    // Output redirection: a '>' at the top level of a print or printf
    // statement ("print $1 > \"f\""); a comparison in a pattern or in
    // parentheses ("$3 >= 1000", "print ($1 > 2)") writes nothing.
    for (std::size_t at = prog.find("print"); at != std::string::npos; at = prog.find("print", at + 5)) {
        int depth = 0;
        bool quoted = false;
        for (std::size_t k = at + 5; k < prog.size(); ++k) {
            char ch = prog[k];
            if (quoted) {
                if (ch == '\\') ++k;
                else if (ch == '"') quoted = false;
                continue;
            }
            if (ch == '"') quoted = true;
            else if (ch == '(') ++depth;
            else if (ch == ')') --depth;
            else if (ch == ';' || ch == '}' || ch == '\n') break;
            else if (ch == '>' && depth <= 0 && (k + 1 >= prog.size() || prog[k + 1] != '='))
                return add(c.f, kWrite, "the awk program writes files");
        }
    }
}

void Analyzer::f_sort(Call& c) {
    if (auto o = opt_value(c.a, c.args_from(), 'o', {"--output"}, "kStT")) write_target(c.f, *o, false, "sort -o");
}

void Analyzer::f_uniq(Call& c) {
    auto pos = positionals(c.a, c.args_from(), "fsw", {"--skip-fields", "--skip-chars", "--check-chars"});
    if (pos.size() >= 2) write_target(c.f, c.a[pos[1]].text, c.a[pos[1]].dynamic, "uniq");
}

void Analyzer::f_tar(Call& c) {
    std::size_t from = c.args_from();
    std::string first = from < c.a.size() ? c.a[from].text : "";
    bool listing = has_flag(c.a, from, c.a.size(), 't', {"--list"}) ||
                   (!first.empty() && first[0] != '-' && first.find('t') != std::string::npos);
    if (!listing) add(c.f, kWrite, "tar creates or extracts files");
    for (std::size_t k = from; k < c.a.size(); ++k) {
        sv t = c.a[k].text;
        if (starts_with(t, "--to-command") || starts_with(t, "--checkpoint-action") ||
            starts_with(t, "--use-compress-program") || starts_with(t, "--info-script") ||
            starts_with(t, "--new-volume-script") || t == "-I" || t == "-F")
            return add(c.f, kRun, "tar " + std::string(t) + " runs a program");
    }
}

void Analyzer::f_unzip(Call& c) {
    if (!has_flag(c.a, c.args_from(), c.a.size(), 'l', {}) && !has_flag(c.a, c.args_from(), c.a.size(), 't', {}) &&
        !has_flag(c.a, c.args_from(), c.a.size(), 'Z', {}) && !has_flag(c.a, c.args_from(), c.a.size(), 'p', {}))
        add(c.f, kWrite, "unzip extracts files");
}

void Analyzer::f_compress(Call& c) {
    std::size_t from = c.args_from();
    if (has_flag(c.a, from, c.a.size(), 'c', {"--stdout", "--to-stdout"}) ||
        has_flag(c.a, from, c.a.size(), 't', {"--test"}) || has_flag(c.a, from, c.a.size(), 'l', {"--list"}) ||
        c.name() == "zcat" || c.name() == "bzcat" || c.name() == "xzcat" || c.name() == "zstdcat")
        return;
    add(c.f, kWrite, std::string(c.name()) + " replaces files");
}

void Analyzer::f_mktemp(Call& c) {
    if (!has_flag(c.a, c.args_from(), c.a.size(), 'u', {"--dry-run"})) add(c.f, kWrite, "mktemp creates a file");
}

void Analyzer::f_yq(Call& c) {
    if (has_flag(c.a, c.args_from(), c.a.size(), 'i', {"--inplace"})) add(c.f, kWrite, "yq -i edits files");
}

void Analyzer::f_date(Call& c) {
    if (has_flag(c.a, c.args_from(), c.a.size(), 's', {"--set"})) add(c.f, kPriv, "date -s sets the system clock");
}

void Analyzer::f_crontab(Call& c) {
    if (has_flag(c.a, c.args_from(), c.a.size(), 'l', {})) return;
    add(c.f, kWrite, "crontab changes scheduled jobs");
}

void Analyzer::f_mount(Call& c) {
    if (c.a.size() == c.args_from() || (c.a.size() == c.args_from() + 1 && (c.a.back().text == "-l" || c.a.back().text == "--list")))
        return;  // lists mounts
    add(c.f, kEscape, std::string(c.name()) + " changes the mount table");
}

void Analyzer::f_sysctl(Call& c) {
    bool writes = has_flag(c.a, c.args_from(), c.a.size(), 'w', {"--write"}) ||
                  has_flag(c.a, c.args_from(), c.a.size(), 'p', {"--load", "--system"});
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k)
        if (!is_opt(c.a[k]) && c.a[k].text.find('=') != std::string::npos) writes = true;
    if (writes) add(c.f, kEscape, "sysctl writes kernel parameters");
}

void Analyzer::f_kill(Call& c) {
    std::size_t from = c.args_from();
    bool all = false;
    for (std::size_t k = from; k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        bool after_dashdash = k > from && c.a[k - 1].text == "--";
        bool after_signal = k > from && (is_opt(c.a[k - 1]) || c.a[k - 1].text == "KILL" || c.a[k - 1].text == "9");
        if (t == "-1" && (after_dashdash || (after_signal && k > from))) all = true;
    }
    if (all) return add(c.f, kDestroy, "kill -1 signals every process");
    add(c.f, kRun, std::string(c.name()) + " signals processes");
}

void Analyzer::f_power(Call& c) { add(c.f, kDestroy, std::string(c.name()) + " stops the machine"); }

void Analyzer::f_init(Call& c) {
    auto pos = positionals(c.a, c.args_from(), "", {});
    if (!pos.empty() && (c.a[pos[0]].text == "0" || c.a[pos[0]].text == "6"))
        return add(c.f, kDestroy, std::string(c.name()) + " " + c.a[pos[0]].text + " stops the machine");
    add(c.f, kRun, std::string(c.name()) + " changes the run level");
}

void Analyzer::f_systemctl(Call& c) {
    auto pos = positionals(c.a, c.args_from(), "HMnopst", {"--host", "--machine", "--type", "--state", "--property", "--signal", "--lines", "--output", "--root"});
    if (pos.empty()) return;
    sv sub = c.a[pos[0]].text;
    static constexpr auto stop = sorted_names({"poweroff", "reboot", "halt", "kexec", "rescue", "emergency",
                                                "suspend", "hibernate", "hybrid-sleep", "soft-reboot"});
    if (contains(stop, sub)) return add(c.f, kDestroy, "systemctl " + std::string(sub) + " stops the machine");
    if (starts_with(sub, "list-") || starts_with(sub, "is-") || sub == "status" || sub == "show" || sub == "cat" ||
        sub == "help" || sub == "get-default" || sub == "--version" || sub == "--help")
        return;
    bool user = has_flag(c.a, c.args_from(), c.a.size(), '\0', {"--user"});
    add(c.f, kSystem, "systemctl " + std::string(sub) + " changes " + (user ? "the user's services" : "the system's services"));
    add(c.f, kRun, "systemctl " + std::string(sub) + " runs the services' own commands");
}

// service NAME ACTION (SysV): status reads; the rest starts, stops or
// reconfigures a system service.
void Analyzer::f_service(Call& c) {
    auto pos = positionals(c.a, c.args_from(), "", {});
    if (pos.empty()) return;
    if (pos.size() == 1) {
        sv only = c.a[pos[0]].text;
        if (only == "--status-all" || only == "--version" || only == "--help") return;
    }
    sv action = pos.size() > 1 ? sv(c.a[pos[1]].text) : sv();
    if (action == "status" || action == "--status-all") return;
    add(c.f, kSystem, "service " + c.a[pos[0]].text + (action.empty() ? "" : " " + std::string(action)) +
                          " changes a system service");
    add(c.f, kRun, "service runs the service's own scripts");
}

void Analyzer::f_disk(Call& c) {
    if (has_flag(c.a, c.args_from(), c.a.size(), 'l', {"--list"}) && c.name() != "wipefs")
        return;
    add(c.f, kDestroy, std::string(c.name()) + " rewrites disks or partition tables");
}

}  // namespace cc::classify::detail
