// Inline interpreter code (python -c, node -e, ruby -e, perl -e and their
// here-document forms): the calls in it that shell out or delete, with the
// literal argument each was given, judged as the shell command they amount
// to. Code is not run or parsed as its language: the scan looks for the
// call's name, an opening parenthesis (or, in Ruby and Perl, a blank) and a
// string literal or a list of them. A call whose argument is not a literal
// stays what interpreter code is: run_code.
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

namespace {

enum class Does { shell, argv, remove, remove_tree };

struct CallName {
    sv name;
    Does does;
};

// By language; "." in a name matches itself (os.system), so that
// `myos.system` or `system_info(` are not taken for one.
constexpr CallName python_calls[] = {
    {"os.system", Does::shell},          {"os.popen", Does::shell},
    {"subprocess.run", Does::argv},      {"subprocess.call", Does::argv},
    {"subprocess.check_call", Does::argv}, {"subprocess.check_output", Does::argv},
    {"subprocess.Popen", Does::argv},    {"subprocess.getoutput", Does::shell},
    {"subprocess.getstatusoutput", Does::shell},
    {"os.remove", Does::remove},         {"os.unlink", Does::remove},
    {"os.rmdir", Does::remove},          {"shutil.rmtree", Does::remove_tree},
    {"os.removedirs", Does::remove_tree},
};
constexpr CallName node_calls[] = {
    {"execSync", Does::shell},      {"exec", Does::shell},         {"spawnSync", Does::argv},
    {"spawn", Does::argv},          {"execFileSync", Does::argv},  {"execFile", Does::argv},
    {"rmSync", Does::remove_tree},  {"rm", Does::remove_tree},     {"rmdirSync", Does::remove_tree},
    {"unlinkSync", Does::remove},   {"unlink", Does::remove},
};
constexpr CallName ruby_calls[] = {
    {"system", Does::shell},             {"exec", Does::shell},               {"spawn", Does::shell},
    {"Open3.capture2", Does::shell},     {"Open3.capture3", Does::shell},     {"Open3.popen3", Does::shell},
    {"IO.popen", Does::shell},           {"FileUtils.rm_rf", Does::remove_tree}, {"FileUtils.rm_r", Does::remove_tree},
    {"FileUtils.remove_dir", Does::remove_tree}, {"FileUtils.rm", Does::remove}, {"FileUtils.rm_f", Does::remove},
    {"File.delete", Does::remove},       {"File.unlink", Does::remove},       {"Dir.rmdir", Does::remove},
};
constexpr CallName perl_calls[] = {
    {"system", Does::shell},        {"exec", Does::shell},        {"qx", Does::shell},
    {"unlink", Does::remove},       {"rmdir", Does::remove},      {"rmtree", Does::remove_tree},
    {"remove_tree", Does::remove_tree},
};

bool ident(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '$'; }

// A string literal at `i` ('...', "...", `...` or Python's r/b/f prefixes):
// its text, with the usual escapes taken; `i` moves past it.
std::optional<std::string> literal(sv code, std::size_t& i) {
    while (i < code.size() && (code[i] == ' ' || code[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < code.size() && (code[j] == 'r' || code[j] == 'b' || code[j] == 'u' || code[j] == 'R' || code[j] == 'B'))
        ++j;
    if (j >= code.size() || (code[j] != '\'' && code[j] != '"' && code[j] != '`')) return std::nullopt;
    char q = code[j];
    // Python's triple quotes.
    bool triple = j + 2 < code.size() && code[j + 1] == q && code[j + 2] == q;
    std::size_t k = j + (triple ? 3 : 1);
    std::string out;
    while (k < code.size()) {
        if (triple ? code.compare(k, 3, std::string(3, q)) == 0 : code[k] == q) {
            i = k + (triple ? 3 : 1);
            return out;
        }
        if (code[k] == '\\' && k + 1 < code.size()) {
            char e = code[k + 1];
            out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
            k += 2;
            continue;
        }
        if (q != '\'' && code[k] == '$' && k + 1 < code.size() && code[k + 1] == '{') return std::nullopt;  // a template
        if (q == '"' && code[k] == '#' && k + 1 < code.size() && code[k + 1] == '{') return std::nullopt;  // Ruby interpolation
        out.push_back(code[k++]);
    }
    return std::nullopt;
}

// A shell word for one argv element (single-quoted unless plain).
std::string shell_word(const std::string& w) {
    if (!w.empty() && std::all_of(w.begin(), w.end(), [](char ch) {
            return std::isalnum(static_cast<unsigned char>(ch)) || std::string_view("-_./=:,+@%^").find(ch) != sv::npos;
        }))
        return w;
    std::string out = "'";
    for (char ch : w) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
}

// The call's first argument: a literal, or a list of literals ([...]), or a
// run of literals separated by commas (Node's spawn("rm", ["-rf", "x"]) and
// Perl's system("rm", "-rf", "x")) for argv calls.
std::optional<std::string> first_argument(sv code, std::size_t i, Does does, bool* recursive) {
    if (i < code.size() && code[i] == '(') ++i;
    while (i < code.size() && (code[i] == ' ' || code[i] == '\t')) ++i;
    std::string joined;
    auto add_list = [&](std::size_t& at, char close) -> bool {
        ++at;
        for (;;) {
            while (at < code.size() && (code[at] == ' ' || code[at] == ',' || code[at] == '\t')) ++at;
            if (at < code.size() && code[at] == close) {
                ++at;
                return true;
            }
            auto w = literal(code, at);
            if (!w) return false;
            joined += (joined.empty() ? "" : " ") + shell_word(*w);
        }
    };
    if (i < code.size() && (code[i] == '[' || code[i] == '(')) {
        if (!add_list(i, code[i] == '[' ? ']' : ')')) return std::nullopt;
    } else {
        auto w = literal(code, i);
        if (!w) return std::nullopt;
        if (does == Does::shell) {
            joined = *w;
        } else {
            // One string alone is a command line (shell=True, or a
            // program name that holds blanks: the worse reading).
            joined = *w;
            bool more_args = false;
            // More literals, or a list, after a comma: the rest of argv.
            for (;;) {
                std::size_t at = i;
                while (at < code.size() && (code[at] == ' ' || code[at] == '\t')) ++at;
                if (at >= code.size() || code[at] != ',') break;
                ++at;
                while (at < code.size() && (code[at] == ' ' || code[at] == '\t')) ++at;
                if (!more_args) {
                    if (!(at < code.size() && (code[at] == '[' || code[at] == '\'' || code[at] == '"'))) break;
                    joined = shell_word(joined);
                    more_args = true;
                }
                if (at < code.size() && code[at] == '[') {
                    if (!add_list(at, ']')) break;
                    i = at;
                    break;
                }
                auto more = literal(code, at);
                if (!more) break;
                joined += " " + shell_word(*more);
                i = at;
            }
        }
    }
    if (recursive) {
        // rmSync(p, {recursive: true}), rm -r's spelling in Node.
        std::size_t end = code.find(')', i);
        sv rest = code.substr(i, end == sv::npos ? sv::npos : end - i);
        *recursive = rest.find("recursive") != sv::npos;
    }
    return joined;
}

}  // namespace

// Judges the calls in `code` (of the interpreter `lang`: python, node, ruby,
// perl) that shell out or delete, as the command line each amounts to.
void Analyzer::inline_code(Call& c, sv lang, const std::string& code) {
    const CallName* table = nullptr;
    std::size_t n = 0;
    if (lang == "python") table = python_calls, n = std::size(python_calls);
    else if (lang == "node") table = node_calls, n = std::size(node_calls);
    else if (lang == "ruby") table = ruby_calls, n = std::size(ruby_calls);
    else if (lang == "perl") table = perl_calls, n = std::size(perl_calls);
    if (!table) return;
    std::string via = std::string(c.name()) + " inline code";
    sv text(code);
    std::size_t found = 0;
    for (std::size_t t = 0; t < n && found < 32; ++t) {
        sv name = table[t].name;
        for (std::size_t at = text.find(name); at != sv::npos && found < 32; at = text.find(name, at + 1)) {
            if (at > 0 && (ident(text[at - 1]) || (text[at - 1] == '.' && name.find('.') != sv::npos))) continue;
            std::size_t after = at + name.size();
            if (after < text.size() && ident(text[after])) continue;
            std::size_t p = after;
            while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
            // Python and Node call with "("; Ruby and Perl may leave it out.
            bool paren = p < text.size() && text[p] == '(';
            if (!paren && lang != "ruby" && lang != "perl") continue;
            if (!paren && p == after) continue;  // "system'x'" is not a call
            ++found;
            Does does = table[t].does;
            bool recursive = false;
            auto arg = first_argument(text, p, does, &recursive);
            if (!arg) {
                if (does == Does::shell || does == Does::argv)
                    add(c.f, kRun, via + " calls " + std::string(name) + " with an argument only known at run time");
                continue;
            }
            if (does == Does::shell || does == Does::argv) {
                reparse(*arg, c.f, via + " " + std::string(name) + "()", c.depth);
                continue;
            }
            if (does == Does::remove_tree && lang == "node" && !recursive) does = Does::remove;
            Args rm_args = {Arg{"rm", false}};
            if (does == Does::remove_tree) rm_args.push_back({"-rf", false});
            rm_args.push_back({*arg, false});
            command(rm_args, 0, c.f, c.ctx, c.depth);
        }
        // Ruby and Perl backquotes and %x(): a shell string.
    }
    if (lang == "ruby" || lang == "perl") {
        for (std::size_t at = text.find('`'); at != sv::npos && found < 32; at = text.find('`', at + 1)) {
            std::size_t end = text.find('`', at + 1);
            if (end == sv::npos) break;
            ++found;
            std::string inner(text.substr(at + 1, end - at - 1));
            if (inner.find("#{") != std::string::npos || inner.find('$') != std::string::npos)
                add(c.f, kRun, via + " runs a backquoted command only known at run time");
            else
                reparse(inner, c.f, via + " backquotes", c.depth);
            at = end;
        }
    }
}

}  // namespace cc::classify::detail
