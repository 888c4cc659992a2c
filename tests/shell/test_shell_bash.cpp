// The differential tier: the parser against bash itself. For every line of the
// corpus (tests/shell/bash-corpus.txt and the lines of tests/classify/cases.tsv)
// bash is asked to parse the line as the body of a function and print it back
// (`declare -f`). Then:
//  - the verdicts agree: bash accepts the line exactly when the parser does;
//  - where both accept, the simple commands agree: the parser reads the same
//    list of commands (words, in tree order) from the line as from bash's
//    reprint of it, which has bash's own reading of quotes, continuations,
//    substitutions and here-documents spelled out plainly.
// Lines where the parser knowingly differs are marked in bash-corpus.txt (a
// mark there holds for the same line in cases.tsv too): "lenient", bash
// refuses and the parser reads (extglob patterns without `shopt -s extglob`:
// the commands are judged although bash runs none); "strict", bash accepts and
// the parser refuses (an error bash only meets when it runs the line, such as
// an unterminated backquote in a here-document body: unparsable, never
// weaker). Both are the safe side for a classifier.
// `make shell-diff` runs this tier alone and prints the counts.
#include "harness.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cc/shell/parser.hpp"

using namespace cc::shell;

namespace {

std::string unescape(std::string s) {
    for (std::size_t k; (k = s.find("\u21b5")) != std::string::npos;) s.replace(k, 3, "\n");
    return s;
}

// One entry per simple command: its words, an expanded word as "<$>" (bash
// reprints the inside of substitutions in its own layout; their commands are
// entries of their own).
void signature(const Node& root, std::vector<std::string>& out) {
    walk(root, [&](const Node& n) {
        if (n.kind != Kind::simple) return;
        std::string line;
        for (const auto& w : n.words) {
            // bash reprints an array's elements in its own layout.
            std::string text = w.expanded ? std::string("<$>") : w.text;
            if (auto open = text.find("=("); open != std::string::npos && text.back() == ')') text = text.substr(0, open) + "=(...)";
            line += (line.empty() ? "" : " | ") + text;
        }
        out.push_back(line);
    });
}

struct Entry {
    std::string line;
    bool lenient = false;  // bash refuses, the parser reads it
    bool strict = false;   // bash accepts, the parser refuses it
    std::string where;
};

std::vector<Entry> corpus() {
    std::vector<Entry> out;
    std::string root = cc::test::source_dir();
    std::ifstream own(root + "/tests/shell/bash-corpus.txt");
    int n = 0;
    for (std::string row; std::getline(own, row);) {
        ++n;
        if (row.empty() || row[0] == '#') continue;
        Entry e;
        e.where = "bash-corpus.txt:" + std::to_string(n);
        if (row.rfind("lenient\t", 0) == 0) {
            e.lenient = true;
            row = row.substr(8);
        } else if (row.rfind("strict\t", 0) == 0) {
            e.strict = true;
            row = row.substr(7);
        }
        e.line = unescape(row);
        out.push_back(std::move(e));
    }
    std::vector<Entry> marked = out;
    // More scripts, one entry per file (make shell-diff CORPUS=dir).
    if (const char* dir = std::getenv("CC_BASH_CORPUS"); dir && *dir) {
        std::vector<std::filesystem::path> files;
        for (const auto& f : std::filesystem::recursive_directory_iterator(dir))
            if (f.is_regular_file()) files.push_back(f.path());
        std::sort(files.begin(), files.end());
        for (const auto& f : files) {
            std::ifstream in(f, std::ios::binary);
            std::stringstream text;
            text << in.rdbuf();
            out.push_back({text.str(), false, false, f.string()});
        }
    }
    std::ifstream cases(root + "/tests/classify/cases.tsv");
    n = 0;
    for (std::string row; std::getline(cases, row);) {
        ++n;
        if (row.empty() || row[0] == '#') continue;
        std::string line = row;
        for (int tab = 0; tab < 3; ++tab) line = line.substr(line.find('\t') + 1);
        Entry e{unescape(line), false, false, "cases.tsv:" + std::to_string(n)};
        for (const auto& m : marked)
            if (m.line == e.line) {
                e.lenient = m.lenient;
                e.strict = m.strict;
            }
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace

TEST_CASE("differential: the parser reads what bash reads (bash-corpus.txt, cases.tsv)") {
    if (!cc::test::have_program("bash")) CC_SKIP("no bash");
    auto entries = corpus();
    REQUIRE(entries.size() >= 500);
    std::vector<std::string> differing;
    int both_accept = 0, both_refuse = 0, lenient = 0, strict = 0, same_commands = 0, compared = 0;
    for (const auto& e : entries) {
        INFO(e.where << ": " << e.line);
        // A here-document left open by the line would swallow the closing
        // brace; bash reads to the end then (and warns), and so does the
        // parser: those lines are compared unwrapped, on the verdict only.
        Script mine = parse(e.line);
        // A line that turns extglob on has it on for the lines after (bash
        // reads a -c string a line at a time); wrapped in a function, the
        // body is read before the shopt runs, so bash gets it from the start.
        std::string extglob = e.line.find("shopt -s extglob") != std::string::npos ? "-O" : "+O";
        auto r = cc::test::run(
            {"bash", "--norc", "--noprofile", extglob, "extglob", "-c", "f() {\n" + e.line + "\n}\ndeclare -f f"});
        bool bash_ok = r.status == 0 && r.out.rfind("f () ", 0) == 0;
        if (!bash_ok) {
            auto n = cc::test::run({"bash", "--norc", "--noprofile", extglob, "extglob", "-n", "-c", e.line});
            bash_ok = n.status == 0;
            if (bash_ok) {  // parses alone, not as a body (an open here-document)
                CHECK(mine.ok != e.strict);
                if (e.strict) ++strict;
                else if (mine.ok) ++both_accept;
                continue;
            }
        }
        if (!bash_ok) {
            if (e.lenient) {
                CHECK(mine.ok);
                ++lenient;
            } else {
                CHECK_FALSE(mine.ok);
                if (!mine.ok) ++both_refuse;
            }
            continue;
        }
        CHECK_FALSE(e.lenient);
        if (e.strict) {
            CHECK_FALSE(mine.ok);
            ++strict;
            continue;
        }
        CHECK(mine.ok);
        if (!mine.ok) continue;
        ++both_accept;
        // bash prints an unnamed coproc of a simple command with its default
        // name, which it would itself read back as the command: drop it.
        std::string printed = r.out;
        for (std::size_t k; (k = printed.find("coproc COPROC ")) != std::string::npos;) printed.erase(k + 7, 7);
        Script back = parse(printed);
        REQUIRE(back.ok);
        const Node* body = nullptr;
        walk(back.root, [&](const Node& n) {
            if (!body && n.kind == Kind::function && !n.children.empty()) body = &n.children[0];
        });
        REQUIRE(body);
        std::vector<std::string> want, got;
        signature(*body, want);
        signature(mine.root, got);
        ++compared;
        std::size_t first = 0;
        while (first < got.size() && first < want.size() && got[first] == want[first]) ++first;
        INFO("first difference, command " << first << ": parser '" << (first < got.size() ? got[first] : "(none)")
                                          << "', bash '" << (first < want.size() ? want[first] : "(none)") << "'");
        CHECK(got == want);
        if (got == want) ++same_commands;
        else differing.push_back(e.where);
    }
    std::string version = cc::test::run({"bash", "-c", "printf %s \"$BASH_VERSION\""}).out;
    std::cout << "differential against bash " << version
              << ": " << entries.size() << " lines; verdicts: " << both_accept << " both accept, " << both_refuse
              << " both refuse, " << lenient << " lenient and " << strict
              << " strict by design; simple commands identical on " << same_commands
              << " of " << compared << "\n";
}
