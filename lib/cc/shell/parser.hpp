// Shell command line -> syntax tree (see ast.hpp). A hand-written recursive
// descent parser for what agents write in bash and POSIX sh: quoting, escapes
// and continuations, comments, assignments, every redirection form with
// here-documents, pipelines, lists, subshells, groups, substitutions ($( ),
// backquotes, <( ), >( )), arithmetic, if/for/while/until/select/case,
// [[ ]] and functions.
//
// It never throws and never recurses without bound: a line that does not parse
// still yields the tree of what was read (the strictest plausible reading), with
// the first error and its line and column. After an error at the top level the
// parser skips the offending character and reads on, so a command hidden behind
// a stray parenthesis is still seen.
//
//   cc::shell::Script s = cc::shell::parse("cat <<EOF\n$(id)\nEOF\n");
//   if (!s.ok) std::cerr << s.error.column << ": " << s.error.message << '\n';
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "cc/shell/ast.hpp"

namespace cc::shell {

struct Limits {
    std::size_t max_bytes = 4u << 20;  // longer input is not parsed at all
    int max_depth = 100;               // nesting of commands, substitutions and quotes
    // Remove backslash-newline pairs first, where bash does (continuations.hpp).
    bool join_continuations = true;
};

Script parse(std::string_view source, const Limits& limits = {});

// Calls fn for every node of the tree, including the lists parsed out of
// command and process substitutions and here-document bodies.
void walk(const Node& node, const std::function<void(const Node&)>& fn);

// "simple", "subshell", ... for messages and tests.
const char* to_string(Kind kind);

}  // namespace cc::shell
