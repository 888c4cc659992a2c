// Shell completions generated from a tool's own CLI11 definition, so they
// cannot drift from --help: `cc-<tool> --generate-completion bash|zsh|fish`
// (hidden; meson runs it at build time and installs the files).
//
//   if (auto rc = cc::tool::completion_request(app, argc, argv, "cc-probe")) return *rc;
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace cc::tool {

namespace completion_detail {

struct Opt {
    std::vector<std::string> longs, shorts;  // without dashes
    std::string desc;
    bool value = false;  // takes a value
    bool file = false;   // ... naming a file or directory
    std::vector<std::string> choices;  // ... one of these (the type name's "{a,b}")
};

// "TEXT:{plain,time}" or "{chat,plan}" (an IsMember check, or a type name
// set to list the values) -> plain, time.
inline std::vector<std::string> choices_of(const std::string& type) {
    std::vector<std::string> out;
    auto open = type.find('{'), close = type.rfind('}');
    if (open == std::string::npos || close == std::string::npos || close < open) return out;
    std::string cur;
    for (std::size_t i = open + 1; i < close; ++i) {
        if (type[i] == ',') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else if (type[i] != ' ') {
            cur += type[i];
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

struct Cmd {
    std::string name, desc;
    std::vector<Opt> opts;
    std::vector<Cmd> subs;
    bool positional = false;  // takes operands (files, a command line)
};

inline bool file_valued(const CLI::Option* o) {
    std::string n = o->get_name(false, true) + " " + o->get_description();
    for (const char* w : {"file", "dir", "path", "spec", "policy", "probe", "egress", "FILE", "DIR", "PATH", "socket"})
        if (n.find(w) != std::string::npos) return true;
    return false;
}

inline Cmd describe(const CLI::App& app) {
    Cmd c;
    c.name = app.get_name();
    c.desc = app.get_description();
    for (const CLI::Option* o : app.get_options([](const CLI::Option*) { return true; })) {
        if (o->get_positional()) {
            c.positional = true;
            continue;
        }
        Opt x;
        for (const auto& l : o->get_lnames()) x.longs.push_back(l);
        for (const auto& s : o->get_snames()) x.shorts.push_back(s);
        if (x.longs.empty() && x.shorts.empty()) continue;
        x.desc = o->get_description();
        x.value = o->get_expected_max() != 0;  // flags expect none
        x.choices = x.value ? choices_of(o->get_type_name()) : std::vector<std::string>{};
        x.file = x.value && x.choices.empty() && file_valued(o);
        c.opts.push_back(std::move(x));
    }
    for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) c.subs.push_back(describe(*s));
    return c;
}

// A word safe inside single quotes ('...'), and one without the characters
// zsh's _arguments gives meaning to in a description.
inline std::string squote(const std::string& s) {
    std::string o;
    for (char ch : s) o += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return o;
}
inline std::string plain(const std::string& s) {
    std::string o;
    for (char ch : s) {
        if (ch == '[' || ch == ']') o += ch == '[' ? '(' : ')';
        else if (ch == ':') o += " -";
        else if (ch == '\n') o += ' ';
        else o += ch;
    }
    return o;
}
inline std::string fn_name(const std::string& tool) {
    std::string f = "_";
    for (char ch : tool) f += ch == '-' ? '_' : ch;
    return f;
}

inline std::string words(const Cmd& c, bool with_subs) {
    std::string w;
    for (const auto& o : c.opts) {
        for (const auto& l : o.longs) w += (w.empty() ? "" : " ") + std::string("--") + l;
        for (const auto& s : o.shorts) w += (w.empty() ? "" : " ") + std::string("-") + s;
    }
    if (with_subs)
        for (const auto& s : c.subs) w += (w.empty() ? "" : " ") + s.name;
    return w;
}

inline void bash_choice_cases(const Cmd& c, std::set<std::string>& seen, std::string& out) {
    for (const auto& o : c.opts) {
        if (o.choices.empty()) continue;
        std::string names, list;
        for (const auto& l : o.longs)
            if (seen.insert("--" + l).second) names += (names.empty() ? "" : "|") + std::string("--") + l;
        for (const auto& sh : o.shorts)
            if (seen.insert("-" + sh).second) names += (names.empty() ? "" : "|") + std::string("-") + sh;
        for (const auto& v : o.choices) list += (list.empty() ? "" : " ") + v;
        if (!names.empty()) out += "        " + names + ") COMPREPLY=($(compgen -W '" + list + "' -- \"$cur\")); return 0 ;;\n";
    }
    for (const auto& sub : c.subs) bash_choice_cases(sub, seen, out);
}

inline void bash_value_cases(const Cmd& c, std::set<std::string>& files, std::set<std::string>& values) {
    for (const auto& o : c.opts) {
        if (!o.value || !o.choices.empty()) continue;
        for (const auto& l : o.longs) (o.file ? files : values).insert("--" + l);
        for (const auto& s : o.shorts) (o.file ? files : values).insert("-" + s);
    }
    for (const auto& s : c.subs) bash_value_cases(s, files, values);
}

inline std::string alternatives(const std::set<std::string>& words, const std::set<std::string>& except = {}) {
    std::string out;
    for (const auto& w : words)
        if (!except.count(w)) out += (out.empty() ? "" : "|") + w;
    return out;
}

inline std::string bash(const Cmd& c) {
    std::set<std::string> file_opts, value_opts;
    bash_value_cases(c, file_opts, value_opts);
    std::string f = fn_name(c.name), files = alternatives(file_opts), values = alternatives(value_opts, file_opts);
    std::string subs;
    for (const auto& s : c.subs) subs += (subs.empty() ? "" : "|") + s.name;
    std::string out = "# bash completion for " + c.name + " (generated by " + c.name + " --generate-completion bash)\n";
    out += f + "() {\n";
    out += "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} sub= i\n";
    out += "    for ((i = 1; i < COMP_CWORD; i++)); do\n";
    out += "        [ \"${COMP_WORDS[i]}\" = -- ] && return 0\n";
    if (!subs.empty()) out += "        case ${COMP_WORDS[i]} in " + subs + ") sub=${COMP_WORDS[i]}; break ;; esac\n";
    out += "    done\n";
    out += "    case $prev in\n";
    std::set<std::string> chosen;
    bash_choice_cases(c, chosen, out);
    if (!files.empty()) out += "        " + files + ") COMPREPLY=($(compgen -f -- \"$cur\")); return 0 ;;\n";
    if (!values.empty()) out += "        " + values + ") return 0 ;;\n";
    out += "    esac\n";
    out += "    case $sub in\n";
    for (const auto& s : c.subs)
        out += "        " + s.name + ") COMPREPLY=($(compgen -W '" + words(s, false) + "' -- \"$cur\")) ;;\n";
    out += "        *) COMPREPLY=($(compgen -W '" + words(c, true) + "' -- \"$cur\")) ;;\n";
    out += "    esac\n";
    out += "}\n";
    out += "complete -o default -F " + f + " " + c.name + "\n";
    return out;
}

inline std::string zsh_args(const Cmd& c, const std::string& indent) {
    std::string out;
    for (const auto& o : c.opts) {
        std::vector<std::string> names;
        for (const auto& l : o.longs) names.push_back("--" + l);
        for (const auto& s : o.shorts) names.push_back("-" + s);
        std::string act = o.value ? (o.file ? ":value:_files" : ":value: ") : "";
        if (!o.choices.empty()) {
            act = ":value:(";
            for (const auto& v : o.choices) act += " " + v;
            act += ")";
        }
        for (const auto& n : names) out += indent + "'" + n + "[" + squote(plain(o.desc)) + "]" + act + "' \\\n";
    }
    return out;
}

inline std::string zsh(const Cmd& c) {
    std::string f = fn_name(c.name);
    std::string out = "#compdef " + c.name + "\n# zsh completion for " + c.name + " (generated by " + c.name +
                      " --generate-completion zsh)\n";
    out += f + "() {\n    local curcontext=$curcontext state line\n    _arguments -C \\\n";
    out += zsh_args(c, "        ");
    if (!c.subs.empty()) {
        out += "        '1:subcommand:(";
        for (const auto& s : c.subs) out += " " + s.name;
        out += ")' \\\n        '*:: :->sub'\n";
        out += "    case $state in\n    sub)\n        case $line[1] in\n";
        for (const auto& s : c.subs) {
            out += "        " + s.name + ")\n            _arguments \\\n";
            out += zsh_args(s, "                ");
            out += "                '*:argument:_files' ;;\n";
        }
        out += "        esac ;;\n    esac\n}\n";
    } else {
        out += "        '*:argument:_files'\n}\n";
    }
    out += f + " \"$@\"\n";
    return out;
}

inline std::string fish_opts(const Cmd& c, const std::string& tool, const std::string& cond) {
    std::string out;
    for (const auto& o : c.opts) {
        out += "complete -c " + tool + cond;
        for (const auto& l : o.longs) out += " -l " + l;
        for (const auto& s : o.shorts) out += " -s " + s;
        if (o.value) out += o.file ? " -r -F" : " -r";
        if (!o.choices.empty()) {
            out += " -f -a '";
            for (std::size_t i = 0; i < o.choices.size(); ++i) out += (i ? " " : "") + o.choices[i];
            out += "'";
        }
        out += " -d '" + squote(plain(o.desc)) + "'\n";
    }
    return out;
}

inline std::string fish(const Cmd& c) {
    std::string out = "# fish completion for " + c.name + " (generated by " + c.name + " --generate-completion fish)\n";
    std::string top = c.subs.empty() ? "" : " -n __fish_use_subcommand";
    out += fish_opts(c, c.name, top);
    for (const auto& s : c.subs) {
        out += "complete -c " + c.name + " -f -n __fish_use_subcommand -a " + s.name + " -d '" + squote(plain(s.desc)) + "'\n";
        out += fish_opts(s, c.name, " -n '__fish_seen_subcommand_from " + s.name + "'");
    }
    return out;
}

}  // namespace completion_detail

// `--generate-completion SHELL` as the only arguments: prints the script and
// returns 0 (2 for an unknown shell). nullopt: not asked, carry on.
inline std::optional<int> completion_request(const CLI::App& app, int argc, char** argv, const char* name) {
    if (argc != 3 || std::string(argv[1]) != "--generate-completion") return std::nullopt;
    std::string shell = argv[2];
    auto c = completion_detail::describe(app);
    c.name = name;
    if (shell == "bash") std::cout << completion_detail::bash(c);
    else if (shell == "zsh") std::cout << completion_detail::zsh(c);
    else if (shell == "fish") std::cout << completion_detail::fish(c);
    else {
        std::cerr << name << ": --generate-completion: unknown shell '" << shell << "' (bash, zsh or fish)\n";
        return 2;
    }
    return 0;
}

}  // namespace cc::tool
