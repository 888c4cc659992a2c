// Human output, shared by every tool: what --format, --log-format and
// NO_COLOR decide.
//
//   cc::tool::add_format_option(app, fmt);        // --format text|json (default: text on a terminal)
//   if (cc::tool::text_output(fmt)) std::cout << render_text(j);
//   std::cout << cc::tool::paint("deny", cc::tool::Colour::red);   // colour only on a terminal
#pragma once

#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace cc::tool {

// --format: auto is text when standard output is a terminal, JSON otherwise
// (a pipe, a file, another program).
enum class Format { auto_, text, json };
void add_format_option(CLI::App& app, Format& fmt);
bool text_output(Format fmt);

// Colour only when standard output is a terminal and NO_COLOR is unset or
// empty (no-color.org). paint() leaves the text as it is otherwise.
enum class Colour { red, green, yellow, bold, dim };
bool colour_on();
std::string paint(std::string_view text, Colour c);

// The colour of a decision word: allow green, deny red, ask yellow.
std::string paint_decision(std::string_view decision);
// Every line of `text` that starts with a decision word (or "line: " and
// one) gets that word coloured; the rest is left as it is.
std::string paint_decisions(const std::string& text);

}  // namespace cc::tool
