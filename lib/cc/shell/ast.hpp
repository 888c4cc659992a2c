// The syntax tree of a shell command line (bash / POSIX sh), as cc::shell::parse
// builds it. It keeps what a classifier needs: every simple command anywhere in
// the line (inside substitutions, here-doc bodies and control structures
// included), its words after quote removal, and its redirections. Control flow
// is recorded, never evaluated.
//
//   auto script = cc::shell::parse("git -C repo push origin main && echo ok");
//   cc::shell::for_each_command(script.root, [](const Node& simple) { ... });
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cc::shell {

struct Node;

// One shell word. `text` is the word after quote removal; expansions the parser
// cannot evaluate ($VAR, ${...}, $(...), `...`, $((...)), <(...)) stay in it as
// written, and `expanded` says so. Command and process substitutions inside the
// word are parsed into `subs` (each a list node).
struct Word {
    std::string text;
    std::size_t offset = 0;  // byte offset of the word in the source
    std::size_t end = 0;     // and of the byte after it (words in backquotes: both the backquote's)
    bool quoted = false;     // some part was quoted or escaped
    bool expanded = false;   // the run-time value is not known statically
    std::vector<Node> subs;
};

struct Redirect {
    int fd = -1;          // explicit descriptor ("2>"), -1 when absent
    std::string op;       // < > >> >| <> << <<- <<< <& >& &> &>>
    Word target;          // file, descriptor, here-doc delimiter or here-string
    // Here-documents: the body, whether its delimiter was quoted (then the body
    // is data), and the substitutions parsed out of an unquoted body.
    std::string body;
    std::size_t body_offset = 0;  // byte offset of the body in the source
    bool body_quoted = false;
    std::vector<Node> body_subs;
};

enum class Kind {
    list,       // children joined by `op` (";", "&", "&&", "||", "\n"); op of child 0 is ""
    pipeline,   // children joined by "|" or "|&"; `negated` for a leading "!"
    simple,     // assigns, words, redirects
    subshell,   // ( list )
    group,      // { list; }
    if_,        // children: condition, body, [condition, body]..., [else body]
    loop,       // while / until / for / select: `words[0]` is the keyword, then for/select the variable
                // and the words after `in` (for ((...)): one expanded word, the expression); children:
                // [condition,] body
    case_,      // words[0] subject; words[1..] patterns; children: one list per arm
    function,   // words[0] name (bash defines none whose name was quoted or expanded); children[0] body
    arith,      // (( ... )) or for (( ... )): words hold the expression text
    cond,       // [[ ... ]]: words are the operands
    coproc,     // coproc [NAME] command: words[0] the NAME when given; children[0] the command
};

struct Node {
    Kind kind = Kind::list;
    std::size_t offset = 0;
    std::string op;           // separator before this node within its parent list/pipeline
    bool negated = false;     // pipeline: leading "!"
    std::vector<Word> assigns;  // simple: NAME=value words before the command name
    std::vector<Word> words;
    std::vector<Redirect> redirects;
    std::vector<Node> children;
};

struct ParseError {
    std::string message;      // lower case, no full stop
    std::size_t offset = 0;   // byte offset
    std::size_t line = 1;     // 1-based
    std::size_t column = 1;   // 1-based byte column within the line
};

struct Script {
    Node root;                // a list
    bool ok = true;
    ParseError error;         // the first error, when !ok
};

}  // namespace cc::shell
