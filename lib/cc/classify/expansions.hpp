// Expansions bash performs on a word before it runs a command, as far as they
// can be done without running anything. cc-classify judges the words these
// produce as well as the words as written (the stricter reading wins).
//
//   std::vector<std::string> out;
//   cc::classify::brace_expand("{sudo,id}", out, 64);     // out == {"sudo", "id"}
//   cc::classify::split_on_ifs("rm$IFS-rf$IFS/", out);    // + {"rm", "-rf", "/"}
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace cc::classify {

// Brace expansion of one word ("{sudo,id}" -> sudo id, "a{1..3}" -> a1 a2 a3,
// nested braces and {x..y..step} sequences too); "${" is a parameter
// expansion, not a brace. At most `limit` results are appended (a word like
// {a,b}{c,d}... grows exponentially; what lies past the limit is not looked
// at). False, with nothing appended, when the word has nothing to expand.
bool brace_expand(const std::string& word, std::vector<std::string>& out, std::size_t limit);

// Word splitting on an unset or default IFS (blank, tab, newline): $IFS and
// ${IFS...} in the text (expansions kept as written) become splits, so
// "git${IFS}push" is git push. Appends the pieces; false when nothing split.
bool split_on_ifs(const std::string& word, std::vector<std::string>& out);

// The literal values the line gives a name (NAME=v, declare/export/local
// NAME=v, for NAME in v...), as far as it shows them.
using Values = std::unordered_map<std::string, std::vector<std::string>>;

// The texts a word with expansions may become, as far as the line shows
// them: each expansion read as empty, as a value `values` has for its name,
// as the word of a ${name:-word} (-, =, + and ? forms), and $(echo ...) or
// $(printf ...) of literal words as those words. At most `limit` distinct
// texts are appended. What a variable set elsewhere holds is not among them:
// these are the plausible readings, never all of them.
void plausible_readings(const std::string& word, const Values& values, std::vector<std::string>& out,
                        std::size_t limit);

}  // namespace cc::classify
