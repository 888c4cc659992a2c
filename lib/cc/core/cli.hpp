// Argument parsing shared by every tool's main(): one place decides the flags
// every tool has and what a CLI11 parse error looks like and which status it gets.
//
//   CLI::App app{"..."};
//   cc::tool::standard_flags(app, "cc-probe");     // --version, --quiet
//   ... options ...
//   if (auto rc = cc::tool::parse(app, argc, argv, "cc-probe")) return *rc;
#pragma once

#include <CLI/CLI.hpp>

#include <cctype>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cc/core/completion.hpp"
#include "cc/core/tool.hpp"

#ifndef CC_VERSION
#define CC_VERSION "0"
#endif

namespace cc::tool {

// --version ("cc-probe 0.1.0", the same format in every tool), --quiet and
// --log-format.
// Call before adding subcommands: they inherit fallthrough, so --quiet is also
// taken after a subcommand's name.
inline void standard_flags(CLI::App& app, const char* name) {
    app.set_version_flag("--version", std::string(name) + " " + CC_VERSION, "print the tool's name and version, then exit");
    app.add_flag_callback("--quiet", [] { set_quiet(true); }, "no log lines on stderr when all goes well (errors still)");
    app.add_option_function<std::string>(
           "--log-format", [](const std::string& v) { set_log_format(v == "time" ? LogFormat::time : LogFormat::plain); },
           "plain, or time: every stderr line starts with its UTC time")
        ->check(CLI::IsMember({"plain", "time"}));
    app.fallthrough();
}

namespace detail {

inline std::string shell_word(const std::string& w) {
    bool plain = !w.empty();
    for (unsigned char c : w)
        if (!std::isalnum(c) && std::string("_./=:,@%+-").find(static_cast<char>(c)) == std::string::npos) plain = false;
    if (plain) return w;
    std::string q = "'";
    for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

inline std::string join_names(const std::vector<std::string>& names) {
    std::string s;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) s += i + 1 == names.size() ? " or " : ", ";
        s += names[i];
    }
    return s;
}

// The subcommand the user named, deepest first (or the app itself).
inline CLI::App* named_subcommand(CLI::App& app) {
    CLI::App* a = &app;
    for (auto subs = a->get_subcommands(); !subs.empty(); subs = a->get_subcommands()) a = subs.front();
    return a;
}

// Does `word` (argv[i - 1]) take the next argv word as its value?
inline bool takes_value(CLI::App& app, const std::string& word) {
    if (word.size() < 2 || word[0] != '-' || word.find('=') != std::string::npos) return false;
    for (CLI::App* a = &app; a != nullptr; a = a->get_parent()) {
        for (const CLI::Option* o : a->get_options())
            if (!o->get_positional() && o->check_name(word)) return o->get_expected_max() != 0;
    }
    return false;
}

// For a tool that runs or judges a command (a positional taking many words):
// the command line again with "--" before the command's first word.
inline std::optional<std::string> with_separator(CLI::App& sub, int argc, char** argv, const char* name) {
    for (const CLI::Option* o : sub.get_options()) {
        if (!o->get_positional() || o->get_items_expected_max() < 2 || o->results().empty()) continue;
        const std::string& first = o->results().front();
        for (int i = 1; i < argc; ++i) {
            if (argv[i] != first || (i > 1 && takes_value(sub, argv[i - 1]))) continue;
            std::string line = name;
            for (int j = 1; j < argc; ++j) {
                if (j == i) line += " --";
                line += " " + shell_word(argv[j]);
            }
            return line;
        }
    }
    return std::nullopt;
}

// The one line for what CLI11 could not place, or nullopt when it placed all.
inline std::optional<std::string> leftover_message(CLI::App& app, int argc, char** argv, const char* name) {
    CLI::App* sub = named_subcommand(app);
    auto left = app.remaining(true);
    std::vector<std::string> subs;
    for (const CLI::App* s : sub->get_subcommands([](CLI::App*) { return true; })) subs.push_back(s->get_name());
    std::string where = sub == &app ? "" : sub->get_name() + ": ";
    if (left.empty()) {
        if (sub->get_require_subcommand_min() > 0 && sub->get_subcommands().empty())
            return where + "missing subcommand (" + join_names(subs) + ")";
        return std::nullopt;
    }
    const std::string& word = left.front();
    if (word.empty() || word[0] != '-') {
        if (!subs.empty() && sub->get_subcommands().empty())
            return where + (sub->get_require_subcommand_min() > 0 ? "unknown subcommand '" : "unexpected argument '") +
                   word + "' (subcommands: " + join_names(subs) + ")";
        return where + "unexpected argument '" + word + "'";
    }
    std::string msg = where + "unknown option '" + word + "'";
    if (auto line = with_separator(*sub, argc, argv, name))
        msg += "; the command's own options go after '--': " + *line;
    return msg;
}

}  // namespace detail

// nullopt: carry on. Otherwise the status to return now: 0 after --help or
// --version (printed by CLI11), 2 after one lower-case line on stderr naming
// the bad argument. Unknown options and subcommands are named first (a missing
// required option is often their consequence), with a suggestion to put a
// command after "--" where the tool takes one. `--generate-completion SHELL`
// (hidden) prints the shell completion generated from `app` (completion.hpp).
inline std::optional<int> parse(CLI::App& app, int argc, char** argv, const char* name) {
    if (auto rc = completion_request(app, argc, argv, name)) return rc;
    try {
        app.parse(argc, argv);
        return std::nullopt;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);
        std::string what = e.what();
        if (auto left = detail::leftover_message(app, argc, argv, name)) what = *left;
        if (!what.empty()) what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
        std::cerr << name << ": " << what << '\n';
        return exit_usage;
    }
}

}  // namespace cc::tool
