// Syntax tree -> shell source that parses back to the same tree (same kinds,
// separators, words, redirections, here-document bodies; offsets aside). Words
// are printed as they were written (their bytes in `source`), the structure
// around them in one canonical layout. It is the other half of the parser's
// round-trip property (fuzz/fuzz_shell.cpp, tests/shell/test_shell.cpp):
//
//   Script s = parse(line);
//   if (s.ok) assert(same_tree(s.root, parse(print(s.root, line)).root));
#pragma once

#include <string>
#include <string_view>

#include "cc/shell/ast.hpp"

namespace cc::shell {

// `node` must come from parse(source) with no error.
std::string print(const Node& node, std::string_view source);

// Structural equality, offsets ignored; on a difference `why` names the first.
bool same_tree(const Node& a, const Node& b, std::string* why = nullptr);

}  // namespace cc::shell
