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

std::string paint_decisions(const std::string& text) {
    if (!colour_on()) return text;
    std::string out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
        std::size_t lead = line.rfind("line: ", 0) == 0 ? 6 : 0;
        std::string_view rest = line.substr(lead);
        std::size_t word = rest.find(' ');
        std::string_view w = rest.substr(0, word);
        if (w == "allow" || w == "ask" || w == "deny")
            out.append(line.substr(0, lead)).append(paint_decision(w)).append(rest.substr(w.size()));
        else
            out.append(line);
        if (nl == std::string::npos) break;
        out.push_back('\n');
        pos = nl + 1;
    }
    return out;
}

}  // namespace cc::tool
