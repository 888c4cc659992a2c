#include "harness.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cc/shell/parser.hpp"
#include "cc/shell/printer.hpp"

using namespace cc::shell;

namespace {

// Every simple command as "argv joined by |", in tree order.
std::vector<std::string> commands(const Script& s) {
    std::vector<std::string> out;
    walk(s.root, [&](const Node& n) {
        if (n.kind != Kind::simple) return;
        std::string line;
        for (const auto& w : n.words) line += (line.empty() ? "" : "|") + w.text;
        out.push_back(line);
    });
    return out;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("quoting and escapes are removed; expansions stay as written") {
    auto s = parse(R"(echo 'a b' "c $HOME d" e\ f $'g\th' "x\"y" ${z:-w})");
    REQUIRE(s.ok);
    CHECK(commands(s) == V{"echo|a b|c $HOME d|e f|g\th|x\"y|${z:-w}"});
    const Node* simple = nullptr;
    walk(s.root, [&](const Node& n) { if (n.kind == Kind::simple) simple = &n; });
    REQUIRE(simple);
    CHECK_FALSE(simple->words[1].expanded);
    CHECK(simple->words[1].quoted);
    CHECK(simple->words[2].expanded);
}

TEST_CASE("comments start only at the start of a word") {
    CHECK(commands(parse("echo a#b # c; git push")) == V{"echo|a#b"});
    CHECK(commands(parse("echo hi #\ngit status")) == V{"echo|hi", "git|status"});
}

TEST_CASE("line continuations join words and lines") {
    CHECK(commands(parse("git \\\n  push \\\n origin")) == V{"git|push|origin"});
    CHECK(commands(parse("gi\\\nt push")) == V{"git|push"});
}

TEST_CASE("assignments before the command are kept apart") {
    auto s = parse("A=1 B=\"x y\" C=$(id) env");
    REQUIRE(s.ok);
    const Node& n = s.root.children[0].children[0];
    CHECK(n.assigns.size() == 3);
    CHECK(n.words.size() == 1);
    CHECK(commands(s) == V{"env", "id"});
}

TEST_CASE("every redirection form") {
    auto s = parse("cmd <in >out 2>>err &>all &>>all2 >|clob 3<>rw 2>&1 >&- <&3 {fd}>f <<<str");
    REQUIRE(s.ok);
    const Node& n = s.root.children[0].children[0];
    std::vector<std::string> ops;
    for (const auto& r : n.redirects) ops.push_back(std::to_string(r.fd) + r.op + r.target.text);
    CHECK(ops == V{"-1<in", "-1>out", "2>>err", "-1&>all", "-1&>>all2", "-1>|clob", "3<>rw", "2>&1", "-1>&-",
                   "-1<&3", "-1>f", "-1<<<str"});
}

TEST_CASE("here-documents: bodies follow the line, quoted delimiters make data") {
    auto s = parse("cat <<EOF; cat <<'Q' ; cat <<-T\n$(id)\nEOF\n$(data)\nQ\n\t`whoami`\n\tT\necho after");
    REQUIRE(s.ok);
    CHECK(commands(s) == V{"cat", "id", "cat", "cat", "whoami", "echo|after"});
    std::vector<const Redirect*> docs;
    walk(s.root, [&](const Node& n) { for (const auto& r : n.redirects) docs.push_back(&r); });
    REQUIRE(docs.size() == 3);
    CHECK(docs[0]->body == "$(id)\n");
    CHECK_FALSE(docs[0]->body_quoted);
    CHECK(docs[1]->body == "$(data)\n");
    CHECK(docs[1]->body_quoted);
    CHECK(docs[1]->body_subs.empty());
    CHECK(docs[2]->body == "\t`whoami`\n");
}

TEST_CASE("a here-document cut off by the end of input is what bash runs") {
    auto s = parse("cat <<EOF\n$(id)\n");
    CHECK(s.ok);
    CHECK(commands(s) == V{"cat", "id"});
}

TEST_CASE("pipelines, lists and negation") {
    auto s = parse("! a | b |& c && d || e; f & g\nh");
    REQUIRE(s.ok);
    CHECK(commands(s) == V{"a", "b", "c", "d", "e", "f", "g", "h"});
    const Node& root = s.root;
    REQUIRE(root.children.size() == 6);
    CHECK(root.children[0].negated);
    CHECK(root.children[0].children[2].op == "|&");
    CHECK(root.children[1].op == "&&");
    CHECK(root.children[2].op == "||");
    CHECK(root.children[4].op == "&");
    CHECK(root.children[5].op == "\n");
}

TEST_CASE("compound commands: bodies are parsed, never evaluated") {
    CHECK(commands(parse("if a; then b; elif c; then d; else e; fi")) == V{"a", "b", "c", "d", "e"});
    CHECK(commands(parse("for x in 1 2; do b $x; done")) == V{"b|$x"});
    CHECK(commands(parse("for ((i=0; i<2; i++)); do b; done")) == V{"b"});
    CHECK(commands(parse("while a; do b; done; until c; do d; done")) == V{"a", "b", "c", "d"});
    CHECK(commands(parse("case $1 in (a|b) x;; c) y;& *) z;;& esac")) == V{"x", "y", "z"});
    CHECK(commands(parse("f() { a; }; function g { b; }; function h() ( c )")) == V{"a", "b", "c"});
    CHECK(commands(parse("( a; (b) ); { c; }")) == V{"a", "b", "c"});
    CHECK(commands(parse("[[ -n $(a) && x < y ]]")) == V{"a"});
    CHECK(commands(parse("(( x = $(a) + 1 ))")) == V{"a"});
    CHECK(commands(parse("select x in a b; do c; done")) == V{"c"});
}

TEST_CASE("substitutions nest; arithmetic is not a command") {
    CHECK(commands(parse("echo $(a $(b) `c \\`d\\``)")) == V{"echo|$(a $(b) `c \\`d\\``)", "a|$(b)|`c \\`d\\``", "b", "c|`d`", "d"});
    CHECK(commands(parse("echo $((1 + 2)) $(( $(a) * 2 ))")) == V{"echo|$((1 + 2))|$(( $(a) * 2 ))", "a"});
    CHECK(commands(parse("echo $( (a) )")).back() == "a");
    CHECK(commands(parse("diff <(a) >(b)")) == V{"diff|<(a)|>(b)", "a", "b"});
    CHECK(commands(parse("x=(one $(two) three)")) == V{"", "two"});  // an assignment-only command
    CHECK(commands(parse("echo \"${x:-$(a)}\"")) == V{"echo|${x:-$(a)}", "a"});
}

TEST_CASE("errors carry line and column, and what was read is kept") {
    struct C {
        const char* line;
        const char* message;
        std::size_t line_no, column;
    };
    for (const C& c : {C{"echo 'x", "unterminated single quote", 1, 6}, C{"echo \"x", "unterminated double quote", 1, 6},
                       C{"ls\n(echo", "unbalanced parenthesis: '(' is not closed", 2, 1},
                       C{"echo $(ls", "unterminated command substitution '$('", 1, 6},
                       C{"echo `ls", "unterminated backquote", 1, 6},
                       C{"if a; then b", "expected 'fi' to close 'if'", 1, 13}, C{"a &&", "expected a command after '&&'", 1, 5},
                       C{"a )", "unexpected ')'", 1, 3}, C{"; a", "unexpected ';'", 1, 1},
                       C{"cat <", "expected a word after '<'", 1, 5}, C{"echo ${x", "unterminated parameter expansion '${'", 1, 6},
                       C{"fi", "unexpected 'fi'", 1, 1}}) {
        INFO(c.line);
        auto s = parse(c.line);
        CHECK_FALSE(s.ok);
        CHECK(s.error.message == c.message);
        CHECK(s.error.line == c.line_no);
        CHECK(s.error.column == c.column);
    }
    // Reading goes on after a stray token at the top level.
    CHECK(commands(parse("a ) ; b")) == V{"a", "b"});
    CHECK(commands(parse("if a; then b")) == V{"a", "b"});
}

TEST_CASE("limits: length and depth are errors, not crashes") {
    std::string deep;
    for (int i = 0; i < 5000; ++i) deep += "( ";
    auto d = parse(deep);
    CHECK_FALSE(d.ok);
    CHECK_THAT(d.error.message, Catch::Contains("nested deeper than 100 levels"));
    std::string subs;
    for (int i = 0; i < 5000; ++i) subs += "$(";
    CHECK_FALSE(parse(subs).ok);
    std::string quotes;
    for (int i = 0; i < 5000; ++i) quotes += "\"$(";
    CHECK_FALSE(parse(quotes).ok);
    std::string parens(10000, '(');  // "((" is tried as arithmetic first: bounded by the work budget
    auto p = parse(parens);
    CHECK_FALSE(p.ok);
    CHECK_FALSE(p.error.message.empty());
    auto big = parse(std::string(100, 'a'), Limits{50, 100});
    CHECK_FALSE(big.ok);
    CHECK_THAT(big.error.message, Catch::Contains("longer than the 50-byte limit"));
}

// Inputs the fuzzer found (fuzz/fuzz_shell.cpp); each must parse quickly.
TEST_CASE("fuzz regressions (tests/shell/fuzz-regressions)") {
    namespace fs = std::filesystem;
    int n = 0;
    for (const auto& e : fs::directory_iterator(cc::test::source_dir() + "/tests/shell/fuzz-regressions")) {
        std::ifstream in(e.path(), std::ios::binary);
        std::stringstream buf;
        buf << in.rdbuf();
        INFO(e.path().filename().string());
        auto s = parse(buf.str());
        CHECK((s.ok || !s.error.message.empty()));
        if (s.ok) {  // and the round-trip property holds on them
            std::string why;
            CHECK(same_tree(s.root, parse(print(s.root, buf.str())).root, &why));
            CHECK(why == "");
        }
        ++n;
    }
    CHECK(n >= 1);
    // The exponential retry of "$((" found as a timeout: many nested openers.
    std::string arith;
    for (int i = 0; i < 40; ++i) arith += "$((";
    auto s = parse(arith + "x");
    CHECK_FALSE(s.ok);
}

// the extent of ${...} follows bash's matched-pair reader. Each line
// was checked against bash 5.2 (tests/shell/bash-corpus.txt holds them too).
TEST_CASE("${...} ends where bash ends it") {
    // A lone '{' in a default opens nothing: the first '}' closes.
    CHECK(commands(parse("echo ${x:-{}; sudo rm -rf /; echo }")) ==
          V{"echo|${x:-{}", "sudo|rm|-rf|/", "echo|}"});
    CHECK(commands(parse("echo ${x#{}; id")) == V{"echo|${x#{}", "id"});
    // $'...' inside ${...} has its escapes: \' does not end it.
    CHECK(commands(parse("echo ${x:-$'\\''}; sudo rm -rf /; echo '}'")) ==
          V{"echo|${x:-$'\\''}", "sudo|rm|-rf|/", "echo|}"});
    // Single quotes are quotes inside a double-quoted ${...} too.
    CHECK(commands(parse("echo \"${x:-'}'}\"; id")) == V{"echo|${x:-'}'}", "id"});
    // Nested ${...} and escapes still count.
    CHECK(commands(parse("echo ${a:-${b:-\\}}}; id")) == V{"echo|${a:-${b:-\\}}}", "id"});
    CHECK(commands(parse("echo ${x:-\"}\"}; id")) == V{"echo|${x:-\"}\"}", "id"});
    CHECK(commands(parse("echo ${x:-$(sudo id)}")) == V{"echo|${x:-$(sudo id)}", "sudo|id"});
    CHECK_FALSE(parse("echo ${x:-{").ok);
    // A process substitution in a ${...} word runs (bash), and a '}' in it
    // closes nothing.
    CHECK(commands(parse("echo ${x:-<(sudo id)}")) == V{"echo|${x:-<(sudo id)}", "sudo|id"});
    CHECK(commands(parse("echo ${x:->(echo }; sudo id)}; id")) ==
          V{"echo|${x:->(echo }; sudo id)}", "echo|}", "sudo|id", "id"});
    CHECK_FALSE(parse("echo ${x:-<(}").ok);
}

TEST_CASE("coproc in all its forms") {
    for (const char* line : {"coproc sudo id", "coproc { sudo id; }", "coproc X { sudo id; }", "coproc (sudo id)",
                             "coproc X (sudo id)", "coproc X [[ $(sudo id) ]]", "coproc >/dev/null sudo id"}) {
        INFO(line);
        auto s = parse(line);
        CHECK(s.ok);
        CHECK(commands(s) == V{"sudo|id"});
        CHECK(s.root.children[0].children[0].kind == Kind::coproc);
    }
    CHECK(commands(parse("coproc if sudo id; then :; fi")) == V{"sudo|id", ":"});
    auto named = parse("coproc X { id; }");
    CHECK(named.root.children[0].children[0].words.at(0).text == "X");
    // NAME only before a compound command: here X is the command.
    CHECK(commands(parse("coproc X echo hi")) == V{"X|echo|hi"});
    CHECK(parse("coproc X echo hi").root.children[0].children[0].words.empty());
    CHECK_FALSE(parse("coproc").ok);
    CHECK(commands(parse("echo coproc")) == V{"echo|coproc"});
}

TEST_CASE("time and ! with no command") {
    for (const char* line : {"time", "!", "time -p", "! !", "time; id", "!\nid", "{ time; }", "time -- id", "time -p -- id"}) {
        INFO(line);
        CHECK(parse(line).ok);
    }
    CHECK(commands(parse("time; id")) == V{"id"});
    CHECK(commands(parse("time -p -- sudo id")) == V{"sudo|id"});
    // bash: syntax errors.
    CHECK_FALSE(parse("time | id").ok);
    CHECK_FALSE(parse("! && id").ok);
    CHECK_FALSE(parse("(time)").ok);
}

TEST_CASE("function names bash would refuse still parse") {
    for (const char* line : {"\"sudo\"() { id; }", "$x() { id; }", "function \"sudo\" { id; }", "function $'sudo' { id; }"}) {
        INFO(line);
        auto s = parse(line);
        CHECK(s.ok);
        CHECK(commands(s) == V{"id"});
    }
    auto q = parse("\"sudo\"() { id; }");
    REQUIRE(q.root.children[0].children[0].kind == Kind::function);
    CHECK(q.root.children[0].children[0].words[0].quoted);
}

TEST_CASE("a backslash-newline joins here-document lines before the delimiter is matched") {
    // bash ends this body at "E\<nl>OF" and runs the next line as a command.
    auto s = parse("cat <<EOF\nE\\\nOF\nsudo id\nEOF\n");
    CHECK(commands(s) == V{"cat", "sudo|id", "EOF"});
    // ... and does not end it at "x \<nl>EOF".
    CHECK(commands(parse("cat <<EOF\nx \\\nEOF\nsudo id\nEOF\n")) == V{"cat"});
    // A quoted delimiter: no joining.
    CHECK(commands(parse("cat <<'EOF'\nE\\\nOF\nsudo id\nEOF\n")) == V{"cat"});
    // An escaped backslash at the end of a line is no continuation.
    CHECK(commands(parse("cat <<EOF\nx \\\\\nEOF\nsudo id\n")) == V{"cat", "sudo|id"});
}

TEST_CASE("extglob groups and [[ =~ ]] groups are read whole") {
    // A quoted ')' inside an extglob group does not end it.
    CHECK(commands(parse("ls @(a|')'|b) ; sudo id ; echo ')'")) == V{"ls|@(a|')'|b)", "sudo|id", "echo|)"});
    CHECK(commands(parse("ls !(x) +(a|b) *(c) ?(d)")) == V{"ls|!(x)|+(a|b)|*(c)|?(d)"});
    CHECK(commands(parse("ls @(a|$(sudo id))")) == V{"ls|@(a|$(sudo id))", "sudo|id"});
    // After =~, blanks, ';' and ']]' inside a group are part of the regex.
    auto s = parse("[[ x =~ ( ]] ; a ) ]]; sudo id");
    CHECK(s.ok);
    CHECK(commands(s) == V{"sudo|id"});
    REQUIRE(s.root.children[0].children[0].kind == Kind::cond);
    CHECK(s.root.children[0].children[0].words.back().text == "( ]] ; a )");
    CHECK(commands(parse("[[ $x =~ ^(a|b)$ ]] && sudo id")) == V{"sudo|id"});
    CHECK(parse("[[ $x =~ a|b ]]").root.children[0].children[0].words.back().text == "a|b");
    CHECK(commands(parse("[[ $x =~ ($(sudo id)) ]]")) == V{"sudo|id"});
    // Process substitutions inside groups and as [[ ]] operands run.
    CHECK(commands(parse("ls @(a|<(sudo id))")) == V{"ls|@(a|<(sudo id))", "sudo|id"});
    CHECK(commands(parse("[[ a =~ (<(sudo id)) ]]")) == V{"sudo|id"});
    CHECK(commands(parse("[[ -e <(sudo id) && a < b ]]")) == V{"sudo|id"});
}

TEST_CASE("backslash-newline is removed where bash removes it, before tokens are read") {
    CHECK(commands(parse("true &\\\n& sudo id")) == V{"true", "sudo|id"});
    CHECK(parse("true &\\\n& sudo id").root.children.at(1).op == "&&");
    CHECK(commands(parse("i\\\nf true; then sudo id; fi")) == V{"true", "sudo|id"});
    CHECK(parse("i\\\nf true; then sudo id; fi").root.children[0].children[0].kind == Kind::if_);
    CHECK(commands(parse("echo $\\\n(sudo id)")) == V{"echo|$(sudo id)", "sudo|id"});
    CHECK(commands(parse("ti\\\nme sudo id")) == V{"sudo|id"});
    CHECK(commands(parse("cat <\\\n<EOF\n$(sudo id)\nEOF\n")) == V{"cat", "sudo|id"});
    // Not inside single quotes, $'...', comments or quoted here-document bodies.
    CHECK(commands(parse("echo 'a\\\nb'")) == V{"echo|a\\\nb"});
    CHECK(commands(parse("echo $'a\\\nb'")) == V{"echo|a\nb"});
    CHECK(commands(parse("# a \\\nsudo id")) == V{"sudo|id"});
    CHECK(commands(parse("cat <<'E'\nx\\\nE\nsudo id\n")) == V{"cat", "sudo|id"});
    // Offsets and error positions are the source's.
    auto s = parse("a \\\n\\\nb; sudo id");
    CHECK(commands(s) == V{"a|b", "sudo|id"});
    CHECK(s.root.children[1].offset == 9);
    auto bad = parse("e\\\ncho 'x");
    CHECK_FALSE(bad.ok);
    CHECK(bad.error.line == 2);
    CHECK(bad.error.column == 5);
    // The unjoined reading stays available.
    Limits raw;
    raw.join_continuations = false;
    CHECK_FALSE(parse("true &\\\n& sudo id", raw).ok);
}

// parse -> print -> parse gives the same tree, on every line the
// tests know (the fuzzer checks the same property on what it finds).
TEST_CASE("the printer's output parses back to the same tree") {
    std::vector<std::string> lines = {
        "a && b || c; d & e\nf",
        "! a | b |& c",
        "time",
        "!",
        "if a; then b; elif c; then d; else e; fi > out",
        "while a; do b; done; until c; do d & done",
        "for x in a \"b c\" $d; do e; done; for y; do :; done; for ((i=0; i<3; i++)); do f; done",
        "select x in a b; do break; done",
        "case $x in a|b) c;; (d) e;& *) f;;& esac",
        "f() { id; } 2>/dev/null; function g { who; }",
        "( a; b ) | { c; d & }",
        "(( x = 1 + 2 )) && [[ -n $x && ( $y == z ) ]] && [[ $a =~ ^(b|c)$ ]]",
        "coproc X { a; }; coproc b c",
        "cat <<EOF | cat <<-'E2' && echo $(cat <<E3\nin\nE3\n)\nbody $(id)\nEOF\n\tquoted\n\tE2\n",
        "cat <<EOF\ncut off",
        "a=1 b=(1 2) c >f 2>&1 <g 3<>h {fd}>i &>>j <<<k",
        "echo `id` $(who) <(a) >(b) ${x:-{} \"$(c)\" '$(d)' $'e\\'f'",
        "x\\\n y; e\\\ncho z",
    };
    auto add_file = [&](const std::string& path, int skip_columns) {
        std::ifstream in(cc::test::source_dir() + path);
        for (std::string row; std::getline(in, row);) {
            if (row.empty() || row[0] == '#') continue;
            for (int k = 0; k < skip_columns; ++k) row = row.substr(row.find('\t') + 1);
            if (row.rfind("lenient\t", 0) == 0) row = row.substr(8);
            if (row.rfind("strict\t", 0) == 0) row = row.substr(7);
            for (std::size_t k; (k = row.find("\u21b5")) != std::string::npos;) row.replace(k, 3, "\n");
            lines.push_back(row);
        }
    };
    add_file("/tests/shell/bash-corpus.txt", 0);
    add_file("/tests/classify/cases.tsv", 3);
    int checked = 0;
    for (const auto& line : lines) {
        Script s = parse(line);
        if (!s.ok) continue;
        std::string printed = print(s.root, line);
        INFO("line: " << line << "\nprinted: " << printed);
        Script back = parse(printed);
        CHECK(back.ok);
        std::string why;
        CHECK(same_tree(s.root, back.root, &why));
        CHECK(why == "");
        ++checked;
    }
    CHECK(checked > 700);
    // same_tree notices a difference.
    std::string why;
    CHECK_FALSE(same_tree(parse("a | b").root, parse("a || b").root, &why));
    CHECK(why == "list: 1 children != 2");
}

TEST_CASE("$'...' as bash decodes it: \\u, \\U, \\c, and a NUL ends the string") {
    CHECK(commands(parse("$'\\u0073udo' $'\\U00000073' $'\\u00e9' $'\\cA' $'\\u'")) ==
          V{"sudo|s|\xc3\xa9|\x01|\\u"});
    CHECK(commands(parse("$'sudo\\0junk'x $'\\x00'")) == V{"sudox|"});
}

TEST_CASE("a here-document inside backquotes ends with them (found by the round-trip fuzzer)") {
    // bash runs the next line as a command; it is not the body.
    CHECK(commands(parse("echo `cat <<EOF`\nsudo id\nEOF\n")) == V{"echo|`cat <<EOF`", "cat", "sudo|id", "EOF"});
    // In $( ) the body is read after the line, as bash 5.2 does.
    CHECK(commands(parse("echo $(cat <<EOF)\nsudo id\nEOF\n")) == V{"echo|$(cat <<EOF)", "cat"});
}

namespace {

// The body of the first here-document anywhere in the tree.
std::string first_heredoc_body(const Script& s) {
    std::string body;
    bool found = false;
    walk(s.root, [&](const Node& n) {
        for (const auto& r : n.redirects)
            if (!found && (r.op == "<<" || r.op == "<<-")) {
                body = r.body;
                found = true;
            }
    });
    return found ? body : "<none>";
}

}  // namespace

// bash 5.2 reads the body of a here-document opened inside $( ) from
// the lines after the one that closed the substitution (`echo "[$(cat <<EOF)]"`
// then `hello`, `EOF` prints "[hello]"). The printer printed the word as
// written and dropped that body, which lies outside the word.
TEST_CASE("a here-document opened in $( ) keeps its body through print") {
    for (std::string line : {std::string("echo \"[$(cat <<EOF)]\"\nhello\nEOF\necho after\n"),
                             std::string("x=$(bash <<A) y\nsudo id\nA\n"),
                             std::string("cat <<A $(cat <<B)\none\nA\ntwo\nB\n"),
                             std::string("echo $(echo $(cat <<EOF))\ndeep\nEOF\n"),
                             std::string("echo $(cat <<EOF)\ncut off")}) {
        Script s = parse(line);
        INFO("line: " << line);
        REQUIRE(s.ok);
        std::string printed = print(s.root, line);
        INFO("printed: " << printed);
        Script back = parse(printed);
        REQUIRE(back.ok);
        std::string why;
        CHECK(same_tree(s.root, back.root, &why));
        CHECK(why == "");
        CHECK(first_heredoc_body(back) == first_heredoc_body(s));
    }
    CHECK(first_heredoc_body(parse("echo \"[$(cat <<EOF)]\"\nhello\nEOF\n")) == "hello\n");
    // A body written inside the substitution stays there, printed once.
    std::string inside = "echo $(cat <<EOF\nin\nEOF\n)\necho next\n";
    Script s = parse(inside);
    REQUIRE(s.ok);
    std::string printed = print(s.root, inside);
    CHECK(printed.find("in\nEOF\n)") != std::string::npos);
    CHECK(printed.find("in\nEOF") == printed.rfind("in\nEOF"));
}
