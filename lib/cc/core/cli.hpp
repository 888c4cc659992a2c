// Argument parsing shared by every tool's main(): one place decides what a
// CLI11 parse error looks like and which status it gets.
//
//   if (auto rc = cc::tool::parse(app, argc, argv, "cc-probe")) return *rc;
#pragma once

#include <CLI/CLI.hpp>

#include <cctype>
#include <iostream>
#include <optional>
#include <string>

#include "cc/core/tool.hpp"

namespace cc::tool {

// nullopt: carry on. Otherwise the status to return now: 0 after --help or
// --version (printed by CLI11), 2 after one lower-case line on stderr naming
// the bad argument.
inline std::optional<int> parse(CLI::App& app, int argc, char** argv, const char* name) {
    try {
        app.parse(argc, argv);
        return std::nullopt;
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);
        std::string what = e.what();
        if (!what.empty()) what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
        std::cerr << name << ": " << what << '\n';
        return exit_usage;
    }
}

}  // namespace cc::tool
