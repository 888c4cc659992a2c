// Step 1 of classification: simple commands -> action classes. Static
// analysis sees the usual spelling of an action, through wrappers, nested
// shell strings and tool options; it cannot see what a script file, a variable
// or a remote API does, and says so (`run_code`) rather than guessing "safe".
// This file walks the tree and resolves a simple command to its entry in the
// command data (share/cc/classify, knowledge.hpp); the readers an entry can
// name live in one file per family of tools (actions_*.cpp).
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

void Analyzer::node(const Node& n, int depth) {
    switch (n.kind) {
        case Kind::simple: simple(n, depth); return;
        case Kind::pipeline: pipeline(n, depth); return;
        case Kind::function: function(n, depth); break;
        default: break;
    }
    if (n.kind != Kind::simple) {
        Finding f;
        f.offset = n.offset;
        f.argv.push_back(std::string(shell::to_string(n.kind)));
        for (const auto& r : n.redirects) redirect(r, f);
        deferred_subscripts(n, f);
        if (!f.classes.empty()) push(std::move(f));
    }
    words(n.words, depth);
    for (const auto& r : n.redirects) subs_of_redirect(r, depth);
    if (n.kind != Kind::function)
        for (const auto& c : n.children) node(c, depth);
}

void Analyzer::push(Finding f) {
    std::sort(f.classes.begin(), f.classes.end());
    f.classes.erase(std::unique(f.classes.begin(), f.classes.end()), f.classes.end());
    out.push_back(std::move(f));
}

void Analyzer::add(Finding& f, sv cls, std::string note) {
    f.classes.emplace_back(cls);
    f.notes.push_back(std::move(note));
}

void Analyzer::words(const std::vector<Word>& ws, int depth) {
    for (const auto& w : ws)
        for (const auto& s : w.subs) node(s, depth);
}

void Analyzer::subs_of_redirect(const shell::Redirect& r, int depth) {
    for (const auto& s : r.target.subs) node(s, depth);
    for (const auto& s : r.body_subs) node(s, depth);
}

// A write to `path` by redirection, tee, cp, dd of=...
void Analyzer::write_target(Finding& f, const std::string& path, bool dynamic, sv via) {
    if (!dynamic && is_harmless_sink(path)) return;
    // bash's /dev/tcp and /dev/udp open a connection, not a file (a reverse
    // shell's way out).
    if (starts_with(path, "/dev/tcp/") || starts_with(path, "/dev/udp/")) {
        add(f, kNet, std::string(via) + " to '" + path + "' opens a network connection");
        add(f, kNetWrite, std::string(via) + " to '" + path + "' sends data over it");
        return;
    }
    if (is_system_file(path)) add(f, kSystem, std::string(via) + " changes the system or start-up file '" + path + "'");
    if (!dynamic && is_block_device(path)) {
        add(f, kDestroy, std::string(via) + " writes to the device '" + path + "'");
    } else if (!dynamic && is_kernel_knob(path)) {
        add(f, kEscape, std::string(via) + " writes to the kernel interface '" + path + "'");
    } else if (!dynamic && path == "/proc/sysrq-trigger") {
        add(f, kDestroy, std::string(via) + " writes to '/proc/sysrq-trigger'");
    } else {
        add(f, kWrite, std::string(via) + " writes to '" + path + "'");
    }
}

void Analyzer::redirect(const shell::Redirect& r, Finding& f) {
    const std::string& op = r.op;
    bool out = op == ">" || op == ">>" || op == ">|" || op == "<>" || op == "&>" || op == "&>>";
    if (op == ">&" || op == "<&") {
        // >&2, 2>&1, >&- duplicate descriptors; `>& file` writes a file.
        const std::string& t = r.target.text;
        bool fd = !t.empty() && (t == "-" || std::all_of(t.begin(), t.end(), [](char c) {
                      return (c >= '0' && c <= '9') || c == '-';
                  }));
        out = op == ">&" && !fd && !r.target.expanded;
    }
    if (!out && (starts_with(r.target.text, "/dev/tcp/") || starts_with(r.target.text, "/dev/udp/"))) {
        // < /dev/tcp/HOST/PORT, 0<&... reads from a connection.
        add(f, kNet, "redirection from '" + r.target.text + "' opens a network connection");
        return;
    }
    if (!out) return;
    write_target(f, r.target.text, r.target.expanded, "redirection");
}

// `echo 'git push' | sh`, `cat <<EOF | bash`: a shell reading a literal
// script from the previous command in the pipeline runs that script.
void Analyzer::pipeline(const Node& n, int depth) {
    for (std::size_t i = 0; i < n.children.size(); ++i) {
        if (i > 0) piped_script_ = literal_output(n.children[i - 1]);
        node(n.children[i], depth);
        piped_script_.reset();
    }
}

std::optional<std::string> Analyzer::literal_output(const Node& n) {
    if (n.kind != Kind::simple || n.words.empty()) return std::nullopt;
    sv name = basename(n.words[0].text);
    if (name == "cat" && n.words.size() == 1) {
        for (const auto& r : n.redirects) {
            if (r.op == "<<" || r.op == "<<-") return r.body;
            if (r.op == "<<<" && !r.target.expanded) return r.target.text;
        }
        return std::nullopt;
    }
    if (name == "echo" || name == "printf") {
        std::string s;
        for (std::size_t k = 1; k < n.words.size(); ++k) {
            if (n.words[k].expanded) return std::nullopt;
            if (k == 1 && name == "echo" && n.words[k].text.size() > 1 && n.words[k].text[0] == '-') continue;
            if (!s.empty()) s += ' ';
            s += n.words[k].text;
        }
        return s;
    }
    return std::nullopt;
}

void Analyzer::function(const Node& n, int depth) {
    // A function that calls itself in a pipeline or more than once: a fork bomb.
    if (n.words.empty() || n.children.empty()) return;
    const std::string& name = n.words[0].text;
    int calls = 0;
    bool piped = false;
    shell::walk(n.children[0], [&](const Node& x) {
        if (x.kind == Kind::pipeline && x.children.size() > 1)
            for (const auto& c : x.children)
                if (c.kind == Kind::simple && !c.words.empty() && c.words[0].text == name) piped = true;
        if (x.kind == Kind::simple && !x.words.empty() && x.words[0].text == name) ++calls;
    });
    if (piped || calls > 1) {
        Finding f;
        f.offset = n.offset;
        f.argv = {name + "()"};
        add(f, kDestroy, "fork bomb: '" + name + "' calls itself in a pipeline or more than once");
        push(std::move(f));
    }
    for (const auto& c : n.children) node(c, depth);
}

void Analyzer::simple(const Node& n, int depth) {
    Finding f;
    f.offset = n.offset;
    Args a;
    for (const auto& w : n.words) {
        a.push_back({w.text, w.expanded});
        f.argv.push_back(w.text);
    }
    Ctx ctx;
    ctx.stdin_script = std::move(piped_script_);
    piped_script_.reset();
    for (const auto& w : n.assigns)
        if (runs_code_variable(w.text) && (f.context_classes = true))
            add(f, kRun, "'" + w.text.substr(0, w.text.find('=')) + "' set here makes commands run other code");
    for (const auto& r : n.redirects) {
        std::size_t before = f.classes.size();
        redirect(r, f);
        if (f.classes.size() != before) f.context_classes = true;
        if ((r.op == "<<" || r.op == "<<-")) ctx.stdin_script = r.body;
        else if (r.op == "<<<" && !r.target.expanded) ctx.stdin_script = r.target.text;
    }
    deferred_subscripts(n, f);
    code_expansions(n, f);
    if (!a.empty()) command(a, 0, f, ctx, depth);
    // The words bash produces from these by brace expansion and word
    // splitting on $IFS are judged too (the stricter reading wins: a
    // word with quoted braces is not expanded by bash, which the text
    // alone cannot tell).
    if (Args b; expanded_reading(n.words, b)) {
        std::string shown;
        for (const auto& x : b) shown += (shown.empty() ? "" : " ") + x.text;
        std::size_t before = f.notes.size();
        command(b, 0, f, ctx, depth);
        for (std::size_t k = before; k < f.notes.size(); ++k) f.notes[k] += " (as bash expands it: '" + shown + "')";
    }
    if (!a.empty() || !f.classes.empty()) push(std::move(f));
    words(n.assigns, depth);
    words(n.words, depth);
    for (const auto& r : n.redirects) subs_of_redirect(r, depth);
}

// bash expands an array subscript when it evaluates a name, not when it
// reads the line: `let 'a[$(cmd)]=1'`, `test -v`, `[[ -v ]]`, `printf -v`,
// `read`, `declare`, and arithmetic on a variable that holds such a text
// (`x='a[$(cmd)]'; echo $((x))`) all run cmd. Any text that holds a
// subscript with a command substitution in it is judged as running code.
void Analyzer::deferred_subscripts(const Node& n, Finding& f) {
    auto deferred = [](const std::string& t) {
        std::size_t open = t.find('[');
        if (open == std::string::npos) return false;
        return t.find("$(", open) != std::string::npos || t.find('`', open) != std::string::npos;
    };
    auto judge = [&](const std::string& t) {
        if (!deferred(t)) return false;
        add(f, kRun, "'" + t + "' holds an array subscript with a command substitution, which bash runs when it "
                     "evaluates the name (let, test -v, printf -v, read, declare, arithmetic)");
        return true;
    };
    for (const auto& w : n.assigns)
        if (judge(w.text)) return;
    // In a simple command, the builtins that evaluate names (other programs
    // get the text as data: awk's '$(NF)' is awk's); what read takes in.
    static constexpr auto evaluators = sorted_names({"[", "builtin", "command", "declare", "export", "let", "local", "mapfile", "printf",
                                                     "read", "readarray", "readonly", "test", "typeset", "unset"});
    sv name = n.words.empty() ? sv() : sv(n.words[0].text);
    if (n.kind == Kind::simple && !contains(evaluators, name)) return;
    for (const auto& w : n.words)
        if (judge(w.text)) return;
    if (name == "read" || name == "mapfile" || name == "readarray")
        for (const auto& r : n.redirects)
            if ((r.op == "<<<" && judge(r.target.text)) || ((r.op == "<<" || r.op == "<<-") && judge(r.body))) return;
}

// Expansions that run code held in a variable's value: ${x@P} expands the
// value as a prompt (with its command substitutions), and ${!x} reads the
// variable the value names, whose subscript bash evaluates (x='a[$(cmd)]').
// The value is not known here, so either is run_code wherever it stands.
void Analyzer::code_expansions(const Node& n, Finding& f) {
    auto scan = [&](const std::string& t) {
        for (std::size_t at = t.find("${"); at != std::string::npos; at = t.find("${", at + 2)) {
            std::size_t j = at + 2, depth = 1;
            while (j < t.size() && depth) {
                if (t[j] == '{') ++depth;
                else if (t[j] == '}') --depth;
                ++j;
            }
            std::string inner = t.substr(at + 2, j - at - 3 + (depth ? 1 : 0));
            if (inner.size() >= 3 && inner.compare(inner.size() - 2, 2, "@P") == 0) {
                add(f, kRun, "'${" + inner + "}' expands the value as a prompt, running the command substitutions in it");
                return true;
            }
            if (inner.size() >= 2 && inner[0] == '!' && (std::isalpha(static_cast<unsigned char>(inner[1])) || inner[1] == '_')) {
                // ${!prefix*}, ${!prefix@} and ${!name[@]} list names or keys: no value is evaluated.
                sv rest(inner);
                rest.remove_prefix(1);
                std::size_t e = 0;
                while (e < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[e])) || rest[e] == '_')) ++e;
                sv tail = rest.substr(e);
                if (tail == "*" || tail == "@" || tail == "[@]" || tail == "[*]") continue;
                add(f, kRun, "'${" + inner + "}' reads the variable its value names, whose subscript bash evaluates");
                return true;
            }
        }
        return false;
    };
    for (const auto& w : n.assigns)
        if (scan(w.text)) return;
    for (const auto& w : n.words)
        if (scan(w.text)) return;
    for (const auto& r : n.redirects)
        if (scan(r.target.text) || ((r.op == "<<" || r.op == "<<-") && !r.body_quoted && scan(r.body))) return;
}

bool Analyzer::expanded_reading(const std::vector<Word>& ws, Args& out) {
    constexpr std::size_t limit = 64;
    // Most commands have nothing to expand: look before building anything.
    bool any = false;
    for (const auto& w : ws)
        if ((w.text.find('{') != std::string::npos && w.text.find_first_of(",.") != std::string::npos) ||
            (w.expanded && w.text.find("IFS") != std::string::npos))
            any = true;
    if (!any) return false;
    bool changed = false;
    for (const auto& w : ws) {
        std::vector<std::string> parts;
        bool braces = w.text.find('{') != std::string::npos && brace_expand(w.text, parts, limit);
        if (!braces) parts = {w.text};
        std::vector<std::string> split;
        bool ifs = false;
        if (w.expanded) {
            for (const auto& p : parts) ifs = split_on_ifs(p, split) || ifs;
            if (ifs) parts = std::move(split);
        }
        changed = changed || braces || ifs;
        for (auto& p : parts) {
            if (p.empty() && braces) continue;  // {,sudo} id is "sudo id": an empty result is no word
            bool dynamic = w.expanded && (p.find('$') != std::string::npos || p.find('`') != std::string::npos);
            out.push_back({std::move(p), dynamic});
        }
    }
    return changed;
}

// Parse and judge a shell string that a command runs (bash -c, eval, ...).
void Analyzer::reparse(const std::string& text, Finding& f, sv via, int depth) {
    if (depth >= max_reparse_depth) {
        add(f, kUnparsable, std::string(via) + " nests shell strings deeper than " +
                                std::to_string(max_reparse_depth) + " levels");
        return;
    }
    shell::Script s = shell::parse(text);
    if (!s.ok) add(f, kUnparsable, std::string(via) + " string does not parse: " + s.error.message);
    Analyzer inner;
    inner.resolve = resolve;
    std::unordered_set<std::string> names = function_names(s.root);
    if (functions) names.insert(functions->begin(), functions->end());
    inner.functions = &names;
    inner.values_root = &s.root;
    inner.outer_values = values_root || outer_values ? &line_values() : nullptr;
    inner.node(s.root, depth + 1);
    for (auto& g : inner.out) {
        g.offset = f.offset;
        out.push_back(std::move(g));
    }
}

const Values& Analyzer::line_values() {
    if (!values_) {
        values_.emplace();
        if (values_root) collect_values(*values_root, *values_);
        if (outer_values)
            for (const auto& [name, vs] : *outer_values) {
                auto& mine = (*values_)[name];
                mine.insert(mine.end(), vs.begin(), vs.end());
            }
    }
    return *values_;
}

// A command name known only at run time: what the line shows it may be
// (empty, so the next word is the command; a default; a value the line
// assigns; echo's output) is judged as the command, and kept apart
// (Finding::readings) for classify() to ask on.
void Analyzer::dynamic_readings(const Args& a, std::size_t k, Finding& f, const Ctx& ctx, int depth) {
    if (in_reading_) return;
    const Values& vals = line_values();
    std::vector<std::string> texts;
    plausible_readings(a[k].text, vals, texts, 16);
    // Nothing in the line says what it is ($RM, ${TOOL}, $SHELL): the
    // arguments are read as a few commands that could take them, so that
    // `${RM} -rf /` or `$SHELL -c 'sudo x'` is asked in chat in every
    // spelling. A guess that does not parse says nothing.
    const bool unknown = std::all_of(texts.begin(), texts.end(), [](const std::string& t) { return t.empty(); });
    const std::size_t shown_readings = texts.size();
    if (unknown && k + 1 < a.size())
        for (const char* g : {"rm", "sh", "chmod", "dd"}) texts.push_back(g);
    // Split as bash splits an unquoted expansion: on blanks, and on what
    // the line sets IFS to (IFS=,; x=sudo,id; $x).
    std::string ifs = " \t\n";
    if (auto it = vals.find("IFS"); it != vals.end())
        for (const auto& v : it->second) ifs += v;
    for (std::size_t ti = 0; ti < texts.size(); ++ti) {
        const std::string& t = texts[ti];
        const bool guessed = ti >= shown_readings;
        Args b;
        for (std::size_t p = 0; p < t.size();) {
            std::size_t q = t.find_first_of(ifs, p);
            if (q == std::string::npos) q = t.size();
            if (q > p) b.push_back({t.substr(p, q - p), false});
            p = q + 1;
        }
        for (std::size_t j = k + 1; j < a.size(); ++j) b.push_back(a[j]);
        if (b.empty()) continue;
        Finding g;
        g.offset = f.offset;
        std::size_t before = out.size();
        in_reading_ = true;
        command(b, 0, g, ctx, depth);
        in_reading_ = false;
        for (std::size_t j = before; j < out.size(); ++j)
            g.classes.insert(g.classes.end(), out[j].classes.begin(), out[j].classes.end());
        out.resize(before);
        std::sort(g.classes.begin(), g.classes.end());
        g.classes.erase(std::unique(g.classes.begin(), g.classes.end()), g.classes.end());
        if (guessed) {
            if (std::find(g.classes.begin(), g.classes.end(), std::string(kUnparsable)) != g.classes.end()) continue;
            // Only a guess that would be refused or asked counts.
            static constexpr sv weighty[] = {kDestroy, kPriv, kEscape, kDestroyWork, kSystem, kPush, kPublish};
            if (std::none_of(std::begin(weighty), std::end(weighty), [&](sv w) {
                    return std::find(g.classes.begin(), g.classes.end(), std::string(w)) != g.classes.end();
                }))
                continue;
        }
        if (g.classes.empty() || g.classes == std::vector<std::string>{std::string(kRun)}) continue;
        std::string shown;
        for (const auto& x : b) shown += (shown.empty() ? "" : " ") + x.text;
        std::string list;
        for (const auto& c : g.classes) list += (list.empty() ? "" : ", ") + c;
        f.notes.push_back("read as '" + shown + "' it would be " + list);
        f.readings.push_back({a[k].text, std::move(shown), std::move(g.classes)});
    }
}

// `TOOL --help` or `TOOL --version` alone: every tool prints and exits. For
// the command-line suites whose subcommands take --help the same way
// (`git push --help`, `kubectl delete --help`), the subcommand words may come
// first. Not for interpreters or wrappers, whose next word is code.
bool Analyzer::asks_for_help(const Args& a, std::size_t k) {
    if (k + 1 >= a.size()) return false;
    const Arg& last = a.back();
    if (last.dynamic || (last.text != "--help" && last.text != "--version")) return false;
    if (k + 2 == a.size()) return true;
    static constexpr auto suites = sorted_names({"git", "gh", "glab", "docker", "podman", "kubectl", "helm", "npm",
                                                 "pnpm", "yarn", "cargo", "go", "pip", "pip3", "apt", "apt-get",
                                                 "brew", "systemctl", "terraform", "aws", "gcloud", "az", "uv",
                                                 "poetry", "rustup", "dotnet", "conda", "gem", "bundle", "composer"});
    if (!contains(suites, basename(a[k].text))) return false;
    for (std::size_t j = k + 1; j + 1 < a.size(); ++j) {
        const std::string& t = a[j].text;
        if (a[j].dynamic || t.empty() || !std::all_of(t.begin(), t.end(), [](char ch) {
                return (ch >= 'a' && ch <= 'z') || ch == '-' || (ch >= '0' && ch <= '9');
            }) || t[0] == '-')
            return false;
    }
    return true;
}

void Analyzer::command(const Args& a, std::size_t k, Finding& f, const Ctx& ctx, int depth) {
    struct Count {
        int& n;
        ~Count() { --n; }
    } count{++wrappers_};
    if (wrappers_ > max_wrappers)
        return add(f, kUnparsable, "wrappers nested deeper than " + std::to_string(max_wrappers) + " levels");
    for (; k < a.size() && is_assignment_text(a[k].text); ++k)  // env-style NAME=v
        if (runs_code_variable(a[k].text) && (f.context_classes = true))
            add(f, kRun, "'" + a[k].text.substr(0, a[k].text.find('=')) + "' in the environment makes the command run other code");
    if (k >= a.size()) return;
    if (a[k].dynamic) {
        add(f, kRun, "the command name '" + a[k].text + "' is only known at run time");
        dynamic_readings(a, k, f, ctx, depth);
        return;
    }
    // A call of a function defined in the line runs its body, judged where
    // it is defined. Whether the definition runs before the call is not
    // known statically (order, branches, subshells), so a name that is a
    // known command is judged as that command too.
    bool function = functions && functions->count(a[k].text);
    Call c{a, k, f, ctx, depth};
    sv name = c.name();
    // A command name that is a path runs whatever file is there: only the
    // system's own directories hold the tool it is named after.
    if (a[k].text.find('/') != std::string::npos && !system_program(a[k].text))
        add(f, kRun, "'" + a[k].text + "' runs the file at that path, not the tool it is named after");
    if (resolve) {
        f.resolved.assign(1, std::string(name));
        for (std::size_t j = k + 1; j < a.size(); ++j) f.resolved.push_back(a[j].text);
    }
    if (asks_for_help(a, k) && !function && (a[k].text.find('/') == std::string::npos || system_program(a[k].text)))
        return;  // prints its usage or version and exits
    fetch_and_run(c);
    // git-push, git-send-email, ... run by name or by path are git push, ...
    if (starts_with(name, "git-") && name.size() > 4) {
        if (resolve) {
            f.resolved[0] = std::string(name.substr(4));
            f.resolved.insert(f.resolved.begin(), "git");
        }
        return git_sub(c, k, std::string(name.substr(4)));
    }
    // By name, else by a data entry's name prefix (python3.12, pip3, mkfs.ext4).
    const CommandEntry* e = known_.find(name);
    if (!e) e = known_.find_prefix(name);
    if (e && resolve) f.data.push_back(std::string(e->file) + " (" + std::string(e->name) + ")");
    if (e && e->reader >= 0) return (this->*reader(e->reader))(c);
    if (e && e->has_subcommands) return subcommand_tool(c, *e);
    if (name == "export" || name == "declare" || name == "typeset" || name == "local" || name == "readonly")
        for (std::size_t j = k + 1; j < a.size(); ++j)
            if (is_assignment_text(a[j].text) && runs_code_variable(a[j].text))
                add(f, kRun, std::string(name) + " " + a[j].text.substr(0, a[j].text.find('=')) +
                                 " makes later commands run other code");
    if (name == "alias")
        for (std::size_t j = k + 1; j < a.size(); ++j)
            if (auto eq = a[j].text.find('='); eq != std::string::npos && eq > 0) {
                // What the name will run later in the line is judged here (a
                // shell with expand_aliases runs the value in its place).
                if (a[j].dynamic) add(f, kRun, "alias " + a[j].text.substr(0, eq) + " is only known at run time");
                else reparse(a[j].text.substr(eq + 1), f, "alias", depth);
            }
    if (e && e->read_only) return read_only_options(c, *e);
    if (e) {
        for (sv cls : e->classes) add(f, cls, std::string(name) + " is " + std::string(cls));
        return;
    }
    if (function) return;
    if (a[k].text.find('/') != std::string::npos)
        return add(f, kRun, "runs the program '" + a[k].text + "'");
    add(f, kRun, "'" + std::string(name) + "' is not a command known to only read");
}

namespace {

// Whether `arg` is (or, for a cluster of short options, holds) `opt` of
// "optionClasses". GNU getopt accepts a long option's unambiguous
// abbreviation: any "--na" of at least two letters that starts "--name"
// counts (a word that means another option is judged strictly, never less).
bool option_matches(sv opt, sv arg) {
    if (opt == "+") return !arg.empty() && arg[0] == '+';
    if (arg.size() < 2 || arg[0] != '-') return false;
    sv name = arg.substr(0, arg.find('='));
    if (opt.size() == 2) return arg[1] != '-' && arg.find(opt[1], 1) != sv::npos;
    if (opt[1] == '-') return name == opt || (name.size() >= 4 && starts_with(opt, name));
    return name == opt || (name.size() > 2 && name[1] == '-' && name.substr(1) == opt);
}

}  // namespace

// A read-only command with options that make it write or run other code:
// less -o FILE, rg --pre CMD, fd -x CMD, tree -o FILE, ... A word that
// starts with an expansion could be any of them once expanded ($HOME and
// $PWD are paths: setting either in the line is judged where it is set).
void Analyzer::read_only_options(Call& c, const CommandEntry& e) {
    if (e.option_classes.empty()) return;
    std::vector<bool> done(e.option_classes.size());
    for (std::size_t j = c.k + 1; j < c.a.size(); ++j) {
        const Arg& w = c.a[j];
        for (std::size_t o = 0; o < e.option_classes.size(); ++o) {
            if (done[o]) continue;
            const auto& oc = e.option_classes[o];
            bool unknown = w.dynamic && starts_with(w.text, "$") && !starts_with(w.text, "$HOME") &&
                           !starts_with(w.text, "${HOME}") && !starts_with(w.text, "$PWD") &&
                           !starts_with(w.text, "${PWD}");
            if (!unknown && !option_matches(oc.option, w.text)) continue;
            done[o] = true;
            for (sv cls : oc.classes)
                add(c.f, cls,
                    unknown ? "'" + w.text + "' is only known at run time: it could be " + std::string(c.name()) +
                                  "'s " + oc.option + ", which is " + std::string(cls)
                            : std::string(c.name()) + " " + w.text + ": " + oc.option + " is " + std::string(cls));
        }
    }
}

void Analyzer::p_pip(Call& c) { pip(c, c.args_from()); }

void Analyzer::f_mkfs(Call& c) { add(c.f, kDestroy, std::string(c.name()) + " formats a filesystem"); }

void Analyzer::rest(Call& c, std::size_t from) { command(c.a, from, c.f, c.ctx, c.depth); }

// Fetch-and-run: the tool installs a package from a registry and runs it
// (npx, bunx, uvx, pnpm dlx, yarn dlx, npm exec, bun x, pipx run, uv tool
// run, go run pkg@version).
void Analyzer::fetch_and_run(Call& c) {
    sv name = c.name();
    static constexpr auto tools = sorted_names(
        {"npx", "bunx", "uvx", "pnpx", "npm", "pnpm", "yarn", "yarnpkg", "bun", "pipx", "uv", "go"});
    if (!contains(tools, name)) return;
    auto p = positionals(c.a, c.args_from(), "", {});
    auto word = [&](std::size_t j) { return j < p.size() ? sv(c.a[p[j]].text) : sv(); };
    bool fetch = false;
    if (name == "npx" || name == "bunx" || name == "uvx" || name == "pnpx")
        fetch = !p.empty();
    else if (name == "npm") fetch = word(0) == "exec" || word(0) == "x";
    else if (name == "pnpm") fetch = word(0) == "dlx";
    else if (name == "yarn" || name == "yarnpkg") fetch = word(0) == "dlx";
    else if (name == "bun") fetch = word(0) == "x";
    else if (name == "pipx") fetch = word(0) == "run";
    else if (name == "uv") fetch = word(0) == "tool" && word(1) == "run";
    else if (name == "go" && word(0) == "run")
        for (std::size_t j = 1; j < p.size(); ++j)
            if (c.a[p[j]].text.find('@') != std::string::npos) fetch = true;
    if (!fetch) return;
    add(c.f, kInstall, std::string(name) + " fetches a package from a registry");
    add(c.f, kRun, std::string(name) + " runs the package it fetched");
}

}  // namespace cc::classify::detail

namespace cc::classify {

using detail::Analyzer;
using detail::function_names;
using detail::is_assignment_text;
using detail::sv;
using shell::Kind;
using shell::Node;
using shell::Word;

std::vector<Finding> find_actions_lexically(std::string_view line) {
    // Every byte that could end a command in some reading ends a fragment,
    // quoted or not: a misreading can hide a command behind a quote the parser
    // saw open, never from this split.
    auto is_cut = [](char c) {
        return c == ';' || c == '&' || c == '|' || c == '\n' || c == '(' || c == ')' || c == '`' || c == '{' ||
               c == '}' || c == '\r';
    };
    static constexpr sv keywords[] = {"!",    "[[",    "]]",     "case", "coproc", "do",   "done",  "elif",
                                      "else", "esac",  "fi",     "for",  "function", "if", "in",   "select",
                                      "then", "time",  "until",  "while"};
    Analyzer a;
    std::size_t k = 0;
    while (k < line.size()) {
        std::size_t start = k;
        while (k < line.size() && !is_cut(line[k])) ++k;
        sv fragment = line.substr(start, k - start);
        ++k;
        Node n;
        n.kind = Kind::simple;
        n.offset = start;
        std::size_t j = 0;
        while (j < fragment.size()) {
            while (j < fragment.size() && (fragment[j] == ' ' || fragment[j] == '\t')) ++j;
            Word w;
            w.offset = start + j;
            for (; j < fragment.size() && fragment[j] != ' ' && fragment[j] != '\t'; ++j) {
                char c = fragment[j];
                if (c == '\'' || c == '"' || c == '\\') continue;
                if (c == '$') w.expanded = true;
                w.text.push_back(c);
            }
            if (w.text.empty()) continue;
            if (n.words.empty() && std::find(std::begin(keywords), std::end(keywords), sv(w.text)) != std::end(keywords))
                continue;
            if (n.words.empty() && w.text.find('=') != std::string::npos && is_assignment_text(w.text)) continue;
            n.words.push_back(std::move(w));
        }
        if (!n.words.empty()) a.node(n, 0);
    }
    for (auto& f : a.out)
        f.notes.emplace_back("the line does not parse: this command was read by cutting the line at every operator, "
                             "quoted or not");
    return std::move(a.out);
}

std::vector<Finding> find_actions(const shell::Script& script, bool resolve) {
    Analyzer a;
    a.resolve = resolve;
    std::unordered_set<std::string> names = function_names(script.root);
    a.functions = &names;
    a.values_root = &script.root;
    a.node(script.root, 0);
    return std::move(a.out);
}

}  // namespace cc::classify
