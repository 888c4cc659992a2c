// The parser's entry points and its grammar of lists, pipelines and
// commands; the rest of the grammar is in parser_*.cpp, one file per part
// (compound commands, redirections and here-documents, words, expansions).
#include "cc/shell/parser_impl.hpp"
#include "cc/shell/continuations.hpp"

namespace cc::shell::detail {

// The whole input as one list, recovering after top-level errors.
Node Parser::program() {
    Node root;
    root.kind = Kind::list;
    root.offset = off(i_);
    int recoveries = 0;
    while (true) {
        Node part = list(Stop::none);
        for (auto& c : part.children) {
            if (root.children.empty()) c.op.clear();
            else if (c.op.empty()) c.op = ";";
            root.children.push_back(std::move(c));
        }
        if (at_end()) break;
        if (!st_.aborting) {
            // list() stopped at something no command starts with.
            std::size_t k = i_;
            std::string what = peek_reserved();
            if (what.empty()) what = std::string(1, s_[k]);
            fail(k, "unexpected '" + what + "'");
        }
        st_.aborting = false;
        st_.pending.clear();
        if (++recoveries > 64) break;
        // Skip the offending word or character and read on.
        if (!is_meta(s_[i_])) {
            while (i_ < end_ && !is_meta(s_[i_])) ++i_;
        } else {
            ++i_;
        }
    }
    // Here-documents still pending when the input ends have empty bodies
    // that start there (a printer puts them after everything else, those
    // opened inside a substitution too).
    for (auto& p : st_.pending) p.redirect->body_offset = off(end_);
    return root;
}

// An unquoted here-document body or backquote text read for substitutions:
// everything up to end_ is data except $..., `...` and backslash escapes.
Word Parser::expansions_only() {
    Word w;
    w.offset = off(i_);
    while (!at_end() && !st_.aborting) {
        char c = s_[i_];
        if (c == '\\' && i_ + 1 < end_) {
            w.text.push_back(s_[i_ + 1]);
            i_ += 2;
        } else {
            quoted_char(w);
        }
    }
    return w;
}

void Parser::fail(std::size_t at, std::string message) {
    if (!st_.have_error) {
        st_.have_error = true;
        st_.error_offset = off(at);
        st_.error_message = std::move(message);
    }
    st_.aborting = true;
}

bool Parser::enter(Depth& d) {
    if (!d.ok) fail(i_, "nested deeper than " + std::to_string(st_.limits.max_depth) + " levels");
    if (d.ok && ++st_.steps > st_.budget) {
        st_.exhausted = true;
        fail(i_, "too complex to parse (more than " + std::to_string(st_.budget) + " steps)");
        return false;
    }
    return d.ok;
}

// Blanks, line continuations and comments; never a newline.
void Parser::skip_blanks() {
    while (!at_end()) {
        char c = s_[i_];
        if (is_blank(c)) {
            ++i_;
        } else if (c == '\\' && peek(1) == '\n') {
            i_ += 2;
        } else if (c == '#') {
            while (!at_end() && s_[i_] != '\n') ++i_;
        } else {
            break;
        }
    }
}

// A reserved word at i_ (unquoted, followed by a delimiter), or "".
std::string Parser::peek_reserved() const {
    std::size_t k = i_;
    while (k < end_ && !is_meta(s_[k]) && s_[k] != '"' && s_[k] != '\'' && s_[k] != '\\' && s_[k] != '$' &&
           s_[k] != '`')
        ++k;
    if (k == i_) return {};
    if (k < end_ && !is_meta(s_[k])) return {};  // quoting or expansion follows: not reserved
    std::string_view w = s_.substr(i_, k - i_);
    static const std::string_view reserved[] = {"if",    "then",  "elif", "else",     "fi", "do", "done",
                                                "case",  "esac",  "while", "until",   "for", "in", "select",
                                                "{",     "}",     "!",    "function", "[[", "]]", "time",
                                                "coproc"};
    for (auto r : reserved)
        if (w == r) return std::string(w);
    return {};
}

bool Parser::at_stop_word() const {
    std::string w = peek_reserved();
    if (w.empty()) return false;
    for (auto sw : stop_words_)
        if (w == sw) return true;
    return false;
}

bool Parser::take_reserved(std::string_view word) {
    if (peek_reserved() != word) return false;
    i_ += word.size();
    return true;
}

void Parser::expect_reserved(std::string_view word, std::string_view opener, std::size_t opener_at) {
    linebreak();
    if (st_.aborting) return;
    if (!take_reserved(word))
        fail(i_, "expected '" + std::string(word) + "' to close '" + std::string(opener) + "'");
    (void)opener_at;
}

// list := pipeline ((; | & | && | || | newline) pipeline)*
// Stops before `)`, `;;`-style case terminators, EOF, or one of the words
// in `stops` at a command position.
Node Parser::list(Stop stop, std::vector<std::string_view> stops) {
    Node n;
    n.kind = Kind::list;
    n.offset = off(i_);
    auto saved = std::move(stop_words_);
    stop_words_ = std::move(stops);
    std::string op;
    while (!st_.aborting) {
        linebreak();
        if (at_end() || st_.aborting) break;
        char c = s_[i_];
        if (c == ')' || (c == ';' && peek(1) == ';') || (c == ';' && peek(1) == '&')) break;
        if (at_stop_word()) break;
        if (c == ';' || (c == '&' && peek(1) != '>') || c == '|') {  // "&>f cmd" is a redirection
            fail(i_, std::string("unexpected '") + c + "'");
            break;
        }
        Node p = pipeline();
        p.op = op;
        n.children.push_back(std::move(p));
        if (st_.aborting) break;
        skip_blanks();
        if (at_end()) break;
        c = s_[i_];
        if (c == '&' && peek(1) == '&') {
            op = "&&";
            i_ += 2;
            if (!require_command_after(op)) break;
        } else if (c == '|' && peek(1) == '|') {
            op = "||";
            i_ += 2;
            if (!require_command_after(op)) break;
        } else if (c == ';' && peek(1) != ';' && peek(1) != '&') {
            op = ";";
            ++i_;
        } else if (c == '&' && peek(1) != '>') {
            op = "&";
            ++i_;
        } else if (c == '\n') {
            op = "\n";
            newline();
        } else {
            break;
        }
    }
    stop_words_ = std::move(saved);
    (void)stop;
    return n;
}

bool Parser::require_command_after(const std::string& op) {
    linebreak();
    if (at_end() || s_[i_] == ')' || s_[i_] == ';' || (s_[i_] == '&' && peek(1) != '>') || s_[i_] == '|' ||
        at_stop_word()) {
        fail(i_, "expected a command after '" + op + "'");
        return false;
    }
    return true;
}

Node Parser::pipeline() {
    Node n;
    n.kind = Kind::pipeline;
    n.offset = off(i_);
    skip_blanks();
    bool prefixed = false;
    while (true) {
        if (take_reserved("!")) {
            n.negated = !n.negated;
        } else if (take_reserved("time")) {
            skip_blanks();
            if (starts("-p") && (i_ + 2 >= end_ || is_meta(s_[i_ + 2]))) {
                i_ += 2;
                skip_blanks();
            }
            if (starts("--") && (i_ + 2 >= end_ || is_meta(s_[i_ + 2]))) i_ += 2;  // time [-p] -- cmd
        } else {
            break;
        }
        prefixed = true;
        skip_blanks();
    }
    // `time` and `!` with no command are complete pipelines (bash times
    // or negates nothing) when a list separator or the end follows.
    if (prefixed) {
        char c = peek();
        if (at_end() || c == '\n' || (c == ';' && peek(1) != ';' && peek(1) != '&') || at_stop_word())
            return n;
        if (c == '|' || (c == '&' && peek(1) != '>') || c == ';' || c == ')') {
            fail(i_, std::string("unexpected '") + c + "'");
            return n;
        }
    }
    std::string op;
    while (!st_.aborting) {
        Node c = command();
        c.op = op;
        n.children.push_back(std::move(c));
        if (st_.aborting) break;
        skip_blanks();
        if (peek() == '|' && peek(1) != '|') {
            op = peek(1) == '&' ? "|&" : "|";
            i_ += op.size();
            if (!require_command_after(op)) break;
        } else {
            break;
        }
    }
    return n;
}

Node Parser::command() {
    Depth d(st_);
    Node n;
    n.offset = off(i_);
    if (!enter(d)) return n;
    skip_blanks();
    if (at_end()) {
        fail(i_, "expected a command");
        return n;
    }
    std::size_t at = i_;
    if (s_[i_] == '(') {
        if (peek(1) == '(' && !st_.not_arith.count(s_.data() + i_)) {
            std::size_t save = i_;
            i_ += 2;
            Word w;
            w.offset = off(save);
            if (arith(w)) {
                w.text.assign(s_.substr(save + 2, i_ - save - 4));
                n.kind = Kind::arith;
                n.words.push_back(std::move(w));
                redirects(n);
                return n;
            }
            st_.not_arith.insert(s_.data() + save);
            i_ = save;
        }
        ++i_;
        n.kind = Kind::subshell;
        n.children.push_back(list(Stop::paren));
        if (st_.aborting) return n;
        if (peek() != ')') {
            fail(at, "unbalanced parenthesis: '(' is not closed");
            return n;
        }
        ++i_;
        redirects(n);
        return n;
    }
    std::string kw = peek_reserved();
    if (kw == "coproc") {
        coproc_clause(n);
        return n;
    }
    if (kw == "{") {
        i_ += 1;
        n.kind = Kind::group;
        n.children.push_back(list(Stop::words, {"}"}));
        expect_reserved("}", "{", at);
        redirects(n);
        return n;
    }
    if (kw == "if") {
        if_clause(n, at);
        return n;
    }
    if (kw == "while" || kw == "until") {
        i_ += kw.size();
        n.kind = Kind::loop;
        Word k;
        k.text = kw;
        k.offset = off(at);
        n.words.push_back(std::move(k));
        n.children.push_back(list(Stop::words, {"do"}));
        expect_reserved("do", kw, at);
        if (st_.aborting) return n;
        n.children.push_back(list(Stop::words, {"done"}));
        expect_reserved("done", kw, at);
        redirects(n);
        return n;
    }
    if (kw == "for" || kw == "select") {
        for_clause(n, kw, at);
        return n;
    }
    if (kw == "case") {
        case_clause(n, at);
        return n;
    }
    if (kw == "function") {
        i_ += kw.size();
        skip_blanks();
        Word name;
        if (!require_word(name, "expected a function name after 'function'")) return n;
        skip_blanks();
        if (peek() == '(') {
            ++i_;
            skip_blanks();
            if (peek() != ')') {
                fail(i_, "expected ')' after '(' in a function definition");
                return n;
            }
            ++i_;
        }
        function_body(n, std::move(name));
        return n;
    }
    if (kw == "[[") {
        i_ += 2;
        n.kind = Kind::cond;
        while (!st_.aborting) {
            linebreak();
            if (at_end()) {
                fail(at, "expected ']]' to close '[['");
                return n;
            }
            if (take_reserved("]]")) break;
            char c = s_[i_];
            // The operand after =~ is one word read as bash reads a regular
            // expression: '|' is text, and a parenthesised group is read
            // whole, blanks, ';', '&', '<' and ']]' inside it included.
            bool regex = !n.words.empty() && n.words.back().text == "=~" && !n.words.back().quoted;
            bool procsub = (c == '<' || c == '>') && peek(1) == '(';  // [[ -e <(cmd) ]] runs cmd
            if (!regex && !procsub &&
                (c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>' || c == ';')) {
                ++i_;
                continue;
            }
            Word w;
            regex_ = regex;
            bool got = word(w);
            regex_ = false;
            if (!got) {
                ++i_;
                continue;
            }
            n.words.push_back(std::move(w));
        }
        redirects(n);
        return n;
    }
    if (kw == "then" || kw == "elif" || kw == "else" || kw == "fi" || kw == "do" || kw == "done" ||
        kw == "esac" || kw == "}" || kw == "in" || kw == "]]") {
        fail(i_, "unexpected '" + kw + "'");
        return n;
    }
    simple(n);
    return n;
}

void Parser::simple(Node& n) {
    n.kind = Kind::simple;
    while (!st_.aborting) {
        skip_blanks();
        if (at_end()) break;
        char c = s_[i_];
        if (c == '\n' || c == ';' || c == '|' || c == ')') break;
        if (c == '&' && peek(1) != '>') break;
        if (at_redirect()) {
            n.redirects.push_back(redirect());
            continue;
        }
        if (c == '(') {
            // name () body: a function definition.
            // bash parses any word here, quoted or expanded too, and refuses
            // to define such a name only when it runs (see Kind::function).
            if (n.words.size() == 1 && n.assigns.empty() && n.redirects.empty()) {
                ++i_;
                skip_blanks();
                if (peek() != ')') {
                    fail(i_, "expected ')' after '(' in a function definition");
                    return;
                }
                ++i_;
                Word name = std::move(n.words[0]);
                n.words.clear();
                function_body(n, std::move(name));
                return;
            }
            fail(i_, "unexpected '('");
            return;
        }
        Word w;
        std::size_t start = i_;
        if (!word(w)) {
            fail(i_, std::string("unexpected '") + c + "'");
            return;
        }
        // NAME= must be unquoted in the source; the value may be quoted.
        std::string_view raw = s_.substr(start, i_ - start);
        std::string_view head = raw.substr(0, raw.find('='));
        bool plain_head = head.find_first_of("'\"\\$`") == std::string_view::npos;
        if (n.words.empty() && plain_head && is_assignment(std::string(raw.substr(0, std::min(raw.size(), head.size() + 1)))))
            n.assigns.push_back(std::move(w));
        else n.words.push_back(std::move(w));
    }
    register_heredocs(n);
    return;
}

// A nested command line (backquote text): one list to the end, errors
// reported, no top-level recovery.
Node Parser::nested() {
    Node n = list(Stop::none);
    if (!st_.aborting && !at_end()) fail(i_, std::string("unexpected '") + s_[i_] + "'");
    return n;
}

namespace {

void line_and_column(std::string_view src, std::size_t offset, ParseError& e) {
    offset = std::min(offset, src.size());
    std::size_t line = 1, line_start = 0;
    for (std::size_t k = 0; k < offset; ++k)
        if (src[k] == '\n') {
            ++line;
            line_start = k + 1;
        }
    e.offset = offset;
    e.line = line;
    e.column = offset - line_start + 1;
}

// Offsets in the joined text -> offsets in the source.
void remap_offsets(Node& n, const Joined& j) {
    n.offset = j.source_offset(n.offset);
    auto words = [&](std::vector<Word>& ws) {
        for (auto& w : ws) {
            w.offset = j.source_offset(w.offset);
            w.end = w.end > w.offset ? j.source_offset(w.end - 1) + 1 : j.source_offset(w.end);
            for (auto& s : w.subs) remap_offsets(s, j);
        }
    };
    words(n.assigns);
    words(n.words);
    for (auto& r : n.redirects) {
        r.target.offset = j.source_offset(r.target.offset);
        r.target.end = r.target.end > r.target.offset ? j.source_offset(r.target.end - 1) + 1 : j.source_offset(r.target.end);
        r.body_offset = j.source_offset(r.body_offset);
        for (auto& s : r.target.subs) remap_offsets(s, j);
        for (auto& s : r.body_subs) remap_offsets(s, j);
    }
    for (auto& c : n.children) remap_offsets(c, j);
}

}  // namespace

}  // namespace cc::shell::detail

namespace cc::shell {

using detail::Parser;
using detail::State;
using detail::line_and_column;
using detail::remap_offsets;

Script parse(std::string_view source, const Limits& limits) {
    Script script;
    script.root.kind = Kind::list;
    if (source.size() > limits.max_bytes) {
        script.ok = false;
        script.error.message = "command line is " + std::to_string(source.size()) + " bytes, longer than the " +
                               std::to_string(limits.max_bytes) + "-byte limit";
        return script;
    }
    Joined joined;
    std::string_view text = source;
    if (limits.join_continuations) {
        joined = join_continuations(source);
        if (!joined.removed.empty()) text = joined.text;
    }
    State st;
    st.limits = limits;
    st.budget = 16 * text.size() + 20000;
    Parser p(text, 0, text.size(), st);
    script.root = p.program();
    std::size_t error_offset = st.error_offset;
    if (!joined.removed.empty()) {
        remap_offsets(script.root, joined);
        error_offset = joined.source_offset(error_offset);
    }
    if (st.have_error) {
        script.ok = false;
        script.error.message = st.error_message;
        line_and_column(source, error_offset, script.error);
    }
    return script;
}

void walk(const Node& node, const std::function<void(const Node&)>& fn) {
    fn(node);
    auto words = [&](const std::vector<Word>& ws) {
        for (const auto& w : ws)
            for (const auto& s : w.subs) walk(s, fn);
    };
    words(node.assigns);
    words(node.words);
    for (const auto& r : node.redirects) {
        for (const auto& s : r.target.subs) walk(s, fn);
        for (const auto& s : r.body_subs) walk(s, fn);
    }
    for (const auto& c : node.children) walk(c, fn);
}

const char* to_string(Kind kind) {
    switch (kind) {
        case Kind::list: return "list";
        case Kind::pipeline: return "pipeline";
        case Kind::simple: return "simple";
        case Kind::subshell: return "subshell";
        case Kind::group: return "group";
        case Kind::if_: return "if";
        case Kind::loop: return "loop";
        case Kind::case_: return "case";
        case Kind::function: return "function";
        case Kind::arith: return "arith";
        case Kind::cond: return "cond";
        case Kind::coproc: return "coproc";
    }
    return "?";
}

}  // namespace cc::shell
