#include "cc/shell/parser.hpp"

#include "cc/shell/continuations.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <unordered_set>
#include <utility>

namespace cc::shell {

namespace {

struct Pending {
    Redirect* redirect;  // stable: a finished command's redirects never grow again
    std::string delimiter;
    bool strip_tabs;
};

// What every parser of one line shares: nested parsers (backquotes) report
// errors into the same place and count depth against the same bound.
struct State {
    Limits limits;
    int depth = 0;
    bool aborting = false;    // unwind to the top level
    bool have_error = false;
    std::size_t error_offset = 0;
    std::string error_message;
    std::vector<Pending> pending;  // here-documents whose bodies follow the next newline
    // "$((" is read as arithmetic first and, when that fails, again as a
    // command substitution; nested, that retry is exponential. Failed starts
    // are remembered, and a work budget bounds whatever is left.
    std::unordered_set<const char*> not_arith;
    std::size_t steps = 0;
    std::size_t budget = 0;
    bool exhausted = false;
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_meta(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' ||
           c == '<' || c == '>';
}
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_assignment(const std::string& t) {
    if (t.empty() || !is_name_start(t[0])) return false;
    std::size_t k = 1;
    while (k < t.size() && is_name_char(t[k])) ++k;
    if (k < t.size() && t[k] == '[') {  // a[i]=v
        auto close = t.find(']', k);
        if (close == std::string::npos) return false;
        k = close + 1;
    }
    if (k < t.size() && t[k] == '+') ++k;
    return k < t.size() && t[k] == '=';
}

class Parser {
public:
    // Parses s[begin, end). `base` is added to offsets when `s` is not the
    // original source (unescaped backquote text), so errors still point near
    // the right place.
    Parser(std::string_view s, std::size_t begin, std::size_t end, State& st, std::size_t base = 0,
           bool remap = false)
        : s_(s), i_(begin), end_(end), st_(st), base_(base), remap_(remap) {}

    // The whole input as one list, recovering after top-level errors.
    Node program() {
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
        return root;
    }

    // An unquoted here-document body or backquote text read for substitutions:
    // everything up to end_ is data except $..., `...` and backslash escapes.
    Word expansions_only() {
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

private:
    enum class Stop { none, paren, words };

    std::string_view s_;
    std::size_t i_;
    std::size_t end_;
    State& st_;
    std::size_t base_;
    bool remap_;
    std::vector<std::string_view> stop_words_;
    bool regex_ = false;  // word(): reading the operand of [[ =~ ]]

    std::size_t off(std::size_t k) const { return remap_ ? base_ : base_ + k; }
    bool at_end() const { return i_ >= end_; }
    char peek(std::size_t k = 0) const { return i_ + k < end_ ? s_[i_ + k] : '\0'; }
    bool starts(std::string_view t) const { return s_.substr(i_, std::min(t.size(), end_ - i_)) == t; }

    void fail(std::size_t at, std::string message) {
        if (!st_.have_error) {
            st_.have_error = true;
            st_.error_offset = off(at);
            st_.error_message = std::move(message);
        }
        st_.aborting = true;
    }

    struct Depth {
        State& st;
        bool ok;
        Depth(State& s) : st(s), ok(++s.depth <= s.limits.max_depth) {}
        ~Depth() { --st.depth; }
    };
    bool enter(Depth& d) {
        if (!d.ok) fail(i_, "nested deeper than " + std::to_string(st_.limits.max_depth) + " levels");
        if (d.ok && ++st_.steps > st_.budget) {
            st_.exhausted = true;
            fail(i_, "too complex to parse (more than " + std::to_string(st_.budget) + " steps)");
            return false;
        }
        return d.ok;
    }

    // Blanks, line continuations and comments; never a newline.
    void skip_blanks() {
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

    // One newline token: the bodies of pending here-documents follow it.
    void newline() {
        ++i_;
        auto pending = std::move(st_.pending);
        st_.pending.clear();
        for (auto& p : pending) read_heredoc(p);
    }

    void linebreak() {
        while (true) {
            skip_blanks();
            if (!at_end() && s_[i_] == '\n') newline();
            else break;
        }
    }

    void read_heredoc(Pending& p) {
        Redirect& r = *p.redirect;
        std::size_t body_start = i_;
        std::size_t body_end = end_;
        bool joins = !p.redirect->body_quoted;
        while (i_ < end_) {
            // One logical line: in an unquoted body a backslash-newline joins
            // lines before the delimiter is looked for, as in bash ("E\<nl>OF"
            // ends the body; "x \<nl>EOF" does not).
            std::size_t line_start = i_;
            std::string logical;
            std::size_t eol;
            while (true) {
                eol = s_.find('\n', i_);
                if (eol == std::string_view::npos || eol > end_) eol = end_;
                std::string_view part = s_.substr(i_, eol - i_);
                if (p.strip_tabs)
                    while (!part.empty() && part.front() == '\t') part.remove_prefix(1);
                std::size_t slashes = 0;
                while (slashes < part.size() && part[part.size() - 1 - slashes] == '\\') ++slashes;
                if (joins && eol < end_ && slashes % 2 == 1) {
                    logical.append(part.substr(0, part.size() - 1));
                    i_ = eol + 1;
                    continue;
                }
                logical.append(part);
                break;
            }
            if (logical == p.delimiter) {
                body_end = line_start;
                i_ = eol < end_ ? eol + 1 : eol;
                break;
            }
            i_ = eol < end_ ? eol + 1 : eol;
        }
        // A body cut off by the end of input is what bash runs too (it warns).
        r.body.assign(s_.substr(body_start, body_end - body_start));
        if (!r.body_quoted) {
            Parser sub(s_, body_start, body_end, st_, base_, remap_);
            Word w = sub.expansions_only();
            r.body_subs = std::move(w.subs);
        }
    }

    // A reserved word at i_ (unquoted, followed by a delimiter), or "".
    std::string peek_reserved() const {
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

    bool at_stop_word() const {
        std::string w = peek_reserved();
        if (w.empty()) return false;
        for (auto sw : stop_words_)
            if (w == sw) return true;
        return false;
    }

    bool take_reserved(std::string_view word) {
        if (peek_reserved() != word) return false;
        i_ += word.size();
        return true;
    }

    void expect_reserved(std::string_view word, std::string_view opener, std::size_t opener_at) {
        linebreak();
        if (st_.aborting) return;
        if (!take_reserved(word))
            fail(i_, "expected '" + std::string(word) + "' to close '" + std::string(opener) + "'");
        (void)opener_at;
    }

    // list := pipeline ((; | & | && | || | newline) pipeline)*
    // Stops before `)`, `;;`-style case terminators, EOF, or one of the words
    // in `stops` at a command position.
    Node list(Stop stop, std::vector<std::string_view> stops = {}) {
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

    bool require_command_after(const std::string& op) {
        linebreak();
        if (at_end() || s_[i_] == ')' || s_[i_] == ';' || (s_[i_] == '&' && peek(1) != '>') || s_[i_] == '|' ||
            at_stop_word()) {
            fail(i_, "expected a command after '" + op + "'");
            return false;
        }
        return true;
    }

    Node pipeline() {
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

    Node command() {
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
                if (!regex && (c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>' || c == ';')) {
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

    // A compound command starts at i_ ({ ( (( [[ if while until for select case).
    bool at_compound() const {
        if (peek() == '(') return true;
        std::string kw = peek_reserved();
        return kw == "{" || kw == "[[" || kw == "if" || kw == "while" || kw == "until" || kw == "for" ||
               kw == "select" || kw == "case";
    }

    // coproc [NAME] command: NAME only before a compound command; otherwise
    // the first word is the simple command's name (bash's grammar).
    void coproc_clause(Node& n) {
        n.kind = Kind::coproc;
        i_ += 6;
        skip_blanks();
        if (at_end() || peek() == '\n' || peek() == ';' || (peek() == '&' && peek(1) != '>') || peek() == '|' ||
            peek() == ')') {
            fail(i_, "expected a command after 'coproc'");
            return;
        }
        if (!at_compound() && peek_reserved().empty()) {
            std::size_t save = i_;
            std::size_t pending = st_.pending.size();
            Word name;
            if (word(name) && !st_.aborting) {
                skip_blanks();
                if (at_compound()) {
                    n.words.push_back(std::move(name));
                } else {
                    i_ = save;
                    st_.pending.resize(std::min(st_.pending.size(), pending));
                }
            }
            if (st_.aborting) return;
        }
        n.children.push_back(command());
    }

    void if_clause(Node& n, std::size_t at) {
        n.kind = Kind::if_;
        i_ += 2;
        n.children.push_back(list(Stop::words, {"then"}));
        expect_reserved("then", "if", at);
        while (!st_.aborting) {
            n.children.push_back(list(Stop::words, {"elif", "else", "fi"}));
            linebreak();
            if (st_.aborting) break;
            if (take_reserved("elif")) {
                n.children.push_back(list(Stop::words, {"then"}));
                expect_reserved("then", "elif", at);
                continue;
            }
            if (take_reserved("else")) {
                n.children.push_back(list(Stop::words, {"fi"}));
                expect_reserved("fi", "if", at);
                break;
            }
            expect_reserved("fi", "if", at);
            break;
        }
        redirects(n);
        return;
    }

    void for_clause(Node& n, const std::string& kw, std::size_t at) {
        n.kind = Kind::loop;
        i_ += kw.size();
        Word k;
        k.text = kw;
        k.offset = off(at);
        n.words.push_back(std::move(k));
        skip_blanks();
        if (starts("((")) {
            i_ += 2;
            Word w;
            w.offset = off(i_);
            std::size_t from = i_;
            if (!arith(w)) {
                fail(at, "expected '))' to close 'for (('");
                return;
            }
            w.text.assign(s_.substr(from, i_ - from - 2));
            w.expanded = true;  // an arithmetic expression, not a name
            n.words.push_back(std::move(w));
        } else {
            Word var;
            if (!require_word(var, "expected a variable name after '" + kw + "'")) return;
            n.words.push_back(std::move(var));
            linebreak();
            if (take_reserved("in")) {
                while (!st_.aborting) {
                    skip_blanks();
                    if (at_end() || s_[i_] == ';' || s_[i_] == '\n') break;
                    Word w;
                    if (!word(w)) {
                        fail(i_, std::string("unexpected '") + s_[i_] + "' in a '" + kw + "' word list");
                        return;
                    }
                    n.words.push_back(std::move(w));
                }
            }
        }
        skip_blanks();
        if (peek() == ';') ++i_;
        linebreak();
        if (take_reserved("{")) {  // bash also takes `for x in y; { ...; }`
            n.children.push_back(list(Stop::words, {"}"}));
            expect_reserved("}", "{", at);
        } else {
            expect_reserved("do", kw, at);
            if (st_.aborting) return;
            n.children.push_back(list(Stop::words, {"done"}));
            expect_reserved("done", kw, at);
        }
        redirects(n);
        return;
    }

    void case_clause(Node& n, std::size_t at) {
        n.kind = Kind::case_;
        i_ += 4;
        skip_blanks();
        Word subject;
        if (!require_word(subject, "expected a word after 'case'")) return;
        n.words.push_back(std::move(subject));
        linebreak();
        if (!take_reserved("in")) {
            fail(i_, "expected 'in' after 'case WORD'");
            return;
        }
        while (!st_.aborting) {
            linebreak();
            if (at_end()) {
                fail(at, "expected 'esac' to close 'case'");
                return;
            }
            if (take_reserved("esac")) break;
            if (peek() == '(') ++i_;
            while (!st_.aborting) {  // pattern (| pattern)* )
                skip_blanks();
                Word pat;
                if (!require_word(pat, "expected a pattern in 'case'")) return;
                n.words.push_back(std::move(pat));
                skip_blanks();
                if (peek() == '|') {
                    ++i_;
                    continue;
                }
                if (peek() == ')') {
                    ++i_;
                    break;
                }
                fail(i_, "expected ')' after a 'case' pattern");
                return;
            }
            if (st_.aborting) break;
            n.children.push_back(list(Stop::words, {"esac"}));
            if (st_.aborting) break;
            skip_blanks();
            if (starts(";;&")) i_ += 3;
            else if (starts(";;") || starts(";&")) i_ += 2;
        }
        redirects(n);
        return;
    }

    void function_body(Node& n, Word name) {
        n.kind = Kind::function;
        n.words.push_back(std::move(name));
        linebreak();
        if (at_end()) {
            fail(i_, "expected a function body");
            return;
        }
        n.children.push_back(command());
        return;
    }

    // Trailing redirections of a compound command.
    void redirects(Node& n) {
        while (!st_.aborting) {
            skip_blanks();
            if (!at_redirect()) break;
            n.redirects.push_back(redirect());
        }
        register_heredocs(n);
    }

    void register_heredocs(Node& n) {
        for (auto& r : n.redirects)
            if ((r.op == "<<" || r.op == "<<-") && r.body.empty() && !st_.aborting)
                st_.pending.push_back({&r, r.target.text, r.op == "<<-"});
    }

    void simple(Node& n) {
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

    bool at_redirect() const {
        std::size_t k = i_;
        if (k < end_ && s_[k] == '&' && k + 1 < end_ && s_[k + 1] == '>') return true;
        while (k < end_ && is_digit(s_[k])) ++k;
        if (k == i_ && k < end_ && s_[k] == '{') {  // {varname}>
            std::size_t j = k + 1;
            while (j < end_ && is_name_char(s_[j])) ++j;
            if (j > k + 1 && j < end_ && s_[j] == '}') k = j + 1;
        }
        if (k >= end_) return false;
        if (s_[k] != '<' && s_[k] != '>') return false;
        if (k + 1 < end_ && s_[k + 1] == '(') return false;  // process substitution
        return true;
    }

    Redirect redirect() {
        Redirect r;
        std::size_t at = i_;
        if (is_digit(peek())) {
            int fd = 0;
            while (is_digit(peek())) {
                fd = std::min(fd * 10 + (s_[i_] - '0'), 1 << 20);
                ++i_;
            }
            r.fd = fd;
        } else if (peek() == '{') {
            i_ = s_.find('}', i_) + 1;
        }
        static const std::string_view ops[] = {"&>>", "<<<", "<<-", "&>", "<<", "<&", "<>", ">>",
                                               ">|",  ">&",  "<",   ">"};
        for (auto o : ops)
            if (starts(o)) {
                r.op = std::string(o);
                break;
            }
        i_ += r.op.size();
        skip_blanks();
        if (at_end() || (is_meta(s_[i_]) && !((s_[i_] == '<' || s_[i_] == '>') && peek(1) == '('))) {
            fail(at, "expected a word after '" + r.op + "'");
            return r;
        }
        word(r.target);
        if (r.op == "<<" || r.op == "<<-") r.body_quoted = r.target.quoted;
        return r;
    }

    // Inside double quotes and unquoted here-document bodies: an expansion or
    // a literal character.
    void quoted_char(Word& w) {
        char c = s_[i_];
        if (c == '$') {
            dollar(w, true);
        } else if (c == '`') {
            backquote(w);
        } else {
            w.text.push_back(c);
            ++i_;
        }
    }

    bool require_word(Word& w, const std::string& message) {
        if (word(w)) return true;
        fail(i_, message);
        return false;
    }

    // Reads one word at i_; false when no word starts here.
    bool word(Word& w) {
        w.offset = off(i_);
        std::size_t start = i_;
        while (!at_end() && !st_.aborting) {
            char c = s_[i_];
            if (regex_ && c == '(') {
                paren_group(w);
                continue;
            }
            if (regex_ && c == '|') {
                w.text.push_back(c);
                ++i_;
                continue;
            }
            if ((c == '<' || c == '>') && peek(1) == '(' && i_ == start) {
                process_substitution(w);
                continue;
            }
            if (c == '(' && i_ > start && !w.text.empty()) {
                char prev = w.text.back();
                if (prev == '=' && is_assignment(w.text)) {  // a=(1 2 3)
                    array_literal(w);
                    continue;
                }
                if (prev == '?' || prev == '*' || prev == '+' || prev == '@' || prev == '!') {  // extglob
                    extglob(w);
                    continue;
                }
            }
            if (is_meta(c)) break;
            switch (c) {
                case '\\':
                    if (peek(1) == '\n') {
                        i_ += 2;
                    } else if (i_ + 1 < end_) {
                        w.text.push_back(s_[i_ + 1]);
                        w.quoted = true;
                        i_ += 2;
                    } else {  // a backslash that ends the input stands for itself, a quoting character all the same
                        w.text.push_back('\\');
                        w.quoted = true;
                        ++i_;
                    }
                    break;
                case '\'': single_quote(w); break;
                case '"': double_quote(w); break;
                case '$':
                    if (peek(1) == '\'') ansi_c_quote(w);
                    else if (peek(1) == '"') {
                        ++i_;
                        double_quote(w);
                    } else dollar(w, false);
                    break;
                case '`': backquote(w); break;
                default:
                    w.text.push_back(c);
                    ++i_;
            }
        }
        w.end = off(i_);
        return i_ > start;
    }

    void single_quote(Word& w) {
        std::size_t at = i_++;
        w.quoted = true;
        std::size_t close = s_.find('\'', i_);
        if (close == std::string_view::npos || close >= end_) {
            w.text.append(s_.substr(i_, end_ - i_));
            i_ = end_;
            fail(at, "unterminated single quote");
            return;
        }
        w.text.append(s_.substr(i_, close - i_));
        i_ = close + 1;
    }

    void ansi_c_quote(Word& w) {
        std::size_t at = i_;
        std::size_t from = w.text.size();
        i_ += 2;
        w.quoted = true;
        while (!at_end()) {
            char c = s_[i_];
            if (c == '\'') {
                ++i_;
                // bash ends the string at a NUL byte ($'sudo\0x' is "sudo").
                if (auto nul = w.text.find('\0', from); nul != std::string::npos) w.text.resize(nul);
                return;
            }
            if (c == '\\' && i_ + 1 < end_) {
                char e = s_[i_ + 1];
                i_ += 2;
                switch (e) {
                    case 'n': w.text.push_back('\n'); break;
                    case 't': w.text.push_back('\t'); break;
                    case 'r': w.text.push_back('\r'); break;
                    case 'a': w.text.push_back('\a'); break;
                    case 'b': w.text.push_back('\b'); break;
                    case 'e': case 'E': w.text.push_back('\x1b'); break;
                    case 'f': w.text.push_back('\f'); break;
                    case 'v': w.text.push_back('\v'); break;
                    case 'x': {
                        int v = 0, n = 0;
                        while (n < 2 && i_ < end_ && std::isxdigit(static_cast<unsigned char>(s_[i_]))) {
                            char h = s_[i_++];
                            v = v * 16 + (is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
                            ++n;
                        }
                        w.text.push_back(static_cast<char>(v));
                        break;
                    }
                    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
                        int v = e - '0', n = 1;
                        while (n < 3 && i_ < end_ && s_[i_] >= '0' && s_[i_] <= '7') {
                            v = v * 8 + (s_[i_++] - '0');
                            ++n;
                        }
                        w.text.push_back(static_cast<char>(v & 0xff));
                        break;
                    }
                    case 'u': case 'U': {  // \uHHHH, \UHHHHHHHH: the code point in UTF-8
                        unsigned long v = 0;
                        int n = 0;
                        while (n < (e == 'u' ? 4 : 8) && i_ < end_ && std::isxdigit(static_cast<unsigned char>(s_[i_]))) {
                            char h = s_[i_++];
                            v = v * 16 + static_cast<unsigned long>(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
                            ++n;
                        }
                        if (n == 0) {
                            w.text.push_back('\\');
                            w.text.push_back(e);
                        } else {
                            utf8(w.text, v);
                        }
                        break;
                    }
                    case 'c':  // \cX: control-X
                        if (i_ < end_) w.text.push_back(static_cast<char>(s_[i_++] & 0x1f));
                        else w.text.push_back('\\');
                        break;
                    default: w.text.push_back(e);  // \\ \' \" and the rest
                }
                continue;
            }
            w.text.push_back(c);
            ++i_;
        }
        fail(at, "unterminated $' quote");
    }

    static void utf8(std::string& out, unsigned long v) {
        if (v < 0x80) {
            out.push_back(static_cast<char>(v));
        } else if (v < 0x800) {
            out.push_back(static_cast<char>(0xc0 | (v >> 6)));
            out.push_back(static_cast<char>(0x80 | (v & 0x3f)));
        } else if (v < 0x10000) {
            out.push_back(static_cast<char>(0xe0 | (v >> 12)));
            out.push_back(static_cast<char>(0x80 | ((v >> 6) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | (v & 0x3f)));
        } else {
            v = std::min(v, 0x10fffful);
            out.push_back(static_cast<char>(0xf0 | (v >> 18)));
            out.push_back(static_cast<char>(0x80 | ((v >> 12) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | ((v >> 6) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | (v & 0x3f)));
        }
    }

    void double_quote(Word& w) {
        Depth d(st_);
        if (!enter(d)) return;
        std::size_t at = i_++;
        w.quoted = true;
        while (!at_end() && !st_.aborting) {
            char c = s_[i_];
            if (c == '"') {
                ++i_;
                return;
            }
            if (c == '\\') {
                char e = peek(1);
                if (e == '\n') {
                    i_ += 2;
                } else if (e == '$' || e == '`' || e == '"' || e == '\\') {
                    w.text.push_back(e);
                    i_ += 2;
                } else {
                    w.text.push_back('\\');
                    ++i_;
                }
            } else {
                quoted_char(w);
            }
        }
        if (!st_.aborting) fail(at, "unterminated double quote");
    }

    // $name, ${...}, $(...), $((...)); anything else is a literal '$'.
    void dollar(Word& w, bool in_dquote) {
        std::size_t at = i_;
        char n = peek(1);
        if (n == '(') {
            if (peek(2) == '(' && !st_.not_arith.count(s_.data() + i_)) {
                std::size_t save = i_;
                i_ += 3;
                if (arith(w)) {
                    w.text.append(s_.substr(at, i_ - at));
                    w.expanded = true;
                    return;
                }
                st_.not_arith.insert(s_.data() + save);
                i_ = save;
            }
            command_substitution(w, at, 2);
            return;
        }
        if (n == '{') {
            // bash reads ${...} as a matched pair closed by the first '}' not
            // inside a quote or a nested construct: quotes ('...', $'...' with
            // its escapes, "...") and nested $-constructs and backquotes are
            // read whole, a backslash escapes one character, and a '{' counts
            // only after a '$' (a lone '{' in a default or a pattern opens
            // nothing). Single quotes are read as quotes inside a double-quoted
            // ${...} too (bash outside POSIX mode).
            Depth d(st_);
            if (!enter(d)) return;
            i_ += 2;
            bool closed = false;
            Word inner;  // collects substitutions inside ${...}
            while (!at_end() && !st_.aborting) {
                char c = s_[i_];
                if (c == '}') {
                    ++i_;
                    closed = true;
                    break;
                }
                if (c == '\\') {
                    i_ = std::min(i_ + 2, end_);
                } else if (c == '\'') {
                    single_quote(inner);
                } else if (c == '"') {
                    double_quote(inner);
                } else if (c == '$' && peek(1) == '\'') {
                    ansi_c_quote(inner);
                } else if (c == '$' && peek(1) == '"') {
                    ++i_;
                    double_quote(inner);
                } else if (c == '$') {
                    dollar(inner, in_dquote);
                } else if (c == '`') {
                    backquote(inner);
                } else {
                    ++i_;
                }
            }
            if (i_ > end_) i_ = end_;
            if (!closed && !st_.aborting) fail(at, "unterminated parameter expansion '${'");
            w.text.append(s_.substr(at, i_ - at));
            w.expanded = true;
            for (auto& sub : inner.subs) w.subs.push_back(std::move(sub));
            return;
        }
        if (is_name_start(n)) {
            std::size_t k = i_ + 1;
            while (k < end_ && is_name_char(s_[k])) ++k;
            w.text.append(s_.substr(at, k - at));
            w.expanded = true;
            i_ = k;
            return;
        }
        if (is_digit(n) || n == '@' || n == '*' || n == '#' || n == '?' || n == '-' || n == '$' || n == '!') {
            w.text.append(s_.substr(at, 2));
            w.expanded = true;
            i_ += 2;
            return;
        }
        if (n == '[') {  // $[ expr ]: obsolete arithmetic
            std::size_t close = s_.find(']', i_);
            std::size_t stop = (close == std::string_view::npos || close >= end_) ? end_ : close + 1;
            w.text.append(s_.substr(at, stop - at));
            w.expanded = true;
            i_ = stop;
            if (stop == end_ && (close == std::string_view::npos || close >= end_))
                fail(at, "unterminated arithmetic '$['");  // as bash: it would swallow the rest
            return;
        }
        w.text.push_back('$');
        ++i_;
    }

    void command_substitution(Word& w, std::size_t at, std::size_t open_len) {
        Depth d(st_);
        if (!enter(d)) return;
        i_ = at + open_len;
        bool regex = regex_;
        regex_ = false;  // a new command line
        Node body = list(Stop::paren);
        regex_ = regex;
        if (!st_.aborting) {
            if (peek() != ')') {
                fail(at, "unterminated command substitution '" + std::string(s_.substr(at, open_len)) + "'");
            } else {
                ++i_;
            }
        }
        w.text.append(s_.substr(at, std::min(i_, end_) - at));
        w.expanded = true;
        w.subs.push_back(std::move(body));
    }

    void process_substitution(Word& w) { command_substitution(w, i_, 2); }

    // After "((" or "$((": up to the matching "))". Substitutions inside are
    // parsed into w.subs; w.text is left to the caller. False when this is not
    // arithmetic (the caller rewinds and reads it as nested parentheses).
    bool arith(Word& w) {
        Depth d(st_);
        if (!enter(d)) return false;
        std::size_t pending_before = st_.pending.size();
        Word scratch;
        int depth = 0;
        bool had_error = st_.have_error;
        while (!at_end() && !st_.aborting) {
            if (++st_.steps > st_.budget) {
                st_.exhausted = true;
                fail(i_, "too complex to parse (more than " + std::to_string(st_.budget) + " steps)");
                break;
            }
            char c = s_[i_];
            if (c == '(') {
                ++depth;
                ++i_;
            } else if (c == ')') {
                if (depth == 0) {
                    if (peek(1) == ')') {
                        i_ += 2;
                        for (auto& sub : scratch.subs) w.subs.push_back(std::move(sub));
                        return true;
                    }
                    st_.pending.resize(std::min(st_.pending.size(), pending_before));
                    return false;
                }
                --depth;
                ++i_;
            } else if (c == '$') {
                dollar(scratch, true);
            } else if (c == '`') {
                backquote(scratch);
            } else if (c == '\\') {
                i_ += 2;
            } else {
                ++i_;
            }
        }
        st_.pending.resize(std::min(st_.pending.size(), pending_before));
        if (st_.aborting && !had_error && !st_.exhausted) {
            // An error inside what turned out not to be arithmetic is retried
            // as the other reading by the caller.
            st_.aborting = false;
            st_.have_error = false;
        }
        if (i_ > end_) i_ = end_;
        return false;
    }

    void backquote(Word& w) {
        Depth d(st_);
        if (!enter(d)) return;
        std::size_t at = i_++;
        std::string inner;
        bool closed = false;
        while (!at_end()) {
            char c = s_[i_];
            if (c == '`') {
                closed = true;
                ++i_;
                break;
            }
            if (c == '\\' && i_ + 1 < end_ && (s_[i_ + 1] == '`' || s_[i_ + 1] == '\\' || s_[i_ + 1] == '$')) {
                inner.push_back(s_[i_ + 1]);
                i_ += 2;
                continue;
            }
            inner.push_back(c);
            ++i_;
        }
        w.text.append(s_.substr(at, i_ - at));
        w.expanded = true;
        // The unescaped text is its own command line.
        // A here-document opened inside backquotes ends with the backquoted
        // text (bash reads that text as a string of its own): the lines after
        // the closing backquote are commands, never its body.
        std::size_t pending = st_.pending.size();
        Parser sub(inner, 0, inner.size(), st_, off(at), true);
        Node body = sub.nested();
        st_.pending.resize(std::min(st_.pending.size(), pending));
        w.subs.push_back(std::move(body));
        if (!closed && !st_.aborting) fail(at, "unterminated backquote");
    }

public:
    // A nested command line (backquote text): one list to the end, errors
    // reported, no top-level recovery.
    Node nested() {
        Node n = list(Stop::none);
        if (!st_.aborting && !at_end()) fail(i_, std::string("unexpected '") + s_[i_] + "'");
        return n;
    }

private:
    void array_literal(Word& w) {
        std::size_t at = i_++;
        while (!st_.aborting) {
            linebreak();
            if (at_end()) {
                fail(at, "unbalanced parenthesis: '(' is not closed");
                return;
            }
            if (s_[i_] == ')') {
                ++i_;
                break;
            }
            Word el;
            if (!word(el)) {
                fail(i_, std::string("unexpected '") + s_[i_] + "' in an array");
                return;
            }
            for (auto& sub : el.subs) w.subs.push_back(std::move(sub));
            if (el.expanded) w.expanded = true;
        }
        w.text.append(s_.substr(at, i_ - at));
    }

    // A parenthesised group read as bash's matched-pair reader does (extglob
    // patterns, the groups of a [[ =~ ]] regular expression): blanks and
    // operators inside are text, quotes and $-constructs are read whole, a
    // backslash escapes one character. The raw text goes to w.text.
    void paren_group(Word& w) {
        Depth d(st_);
        if (!enter(d)) return;
        std::size_t at = i_;
        int depth = 0;
        Word inner;
        while (!at_end() && !st_.aborting) {
            char c = s_[i_];
            if (c == '(') {
                ++depth;
                ++i_;
            } else if (c == ')') {
                ++i_;
                if (--depth == 0) break;
            } else if (c == '\\') {
                i_ = std::min(i_ + 2, end_);
            } else if (c == '\'') {
                single_quote(inner);
            } else if (c == '"') {
                double_quote(inner);
            } else if (c == '$' && peek(1) == '\'') {
                ansi_c_quote(inner);
            } else if (c == '$' && peek(1) == '"') {
                ++i_;
                double_quote(inner);
            } else if (c == '$') {
                dollar(inner, false);
            } else if (c == '`') {
                backquote(inner);
            } else {
                ++i_;
            }
        }
        w.text.append(s_.substr(at, i_ - at));
        if (!inner.subs.empty() || inner.expanded) w.expanded = true;
        for (auto& sub : inner.subs) w.subs.push_back(std::move(sub));
        if (depth != 0 && !st_.aborting) fail(at, "unbalanced parenthesis: '(' is not closed");
    }

    void extglob(Word& w) { paren_group(w); }
};

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
        for (auto& s : r.target.subs) remap_offsets(s, j);
        for (auto& s : r.body_subs) remap_offsets(s, j);
    }
    for (auto& c : n.children) remap_offsets(c, j);
}

}  // namespace

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
