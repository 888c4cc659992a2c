#include "cc/core/output.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdlib>

namespace cc::tool {

void add_format_option(CLI::App& app, Format& fmt) {
    app.add_option_function<std::string>(
           "--format",
           [&fmt](const std::string& v) { fmt = v == "text" ? Format::text : v == "json" ? Format::json : Format::auto_; },
           "text or json (default: text on a terminal, JSON otherwise)")
        ->check(CLI::IsMember({"text", "json"}));
}

bool text_output(Format fmt) {
    if (fmt == Format::auto_) return ::isatty(1) == 1;
    return fmt == Format::text;
}

bool colour_on() {
    const char* no = std::getenv("NO_COLOR");
    if (no && *no) return false;
    return ::isatty(1) == 1;
}

std::string paint(std::string_view text, Colour c) {
    if (!colour_on()) return std::string(text);
    const char* code = c == Colour::red      ? "31"
                       : c == Colour::green  ? "32"
                       : c == Colour::yellow ? "33"
                       : c == Colour::bold   ? "1"
                                             : "2";
    return std::string("\033[") + code + "m" + std::string(text) + "\033[0m";
}

std::string paint_decision(std::string_view d) {
    if (d == "allow") return paint(d, Colour::green);
    if (d == "deny") return paint(d, Colour::red);
    if (d == "ask") return paint(d, Colour::yellow);
    return std::string(d);
}

}  // namespace cc::tool
