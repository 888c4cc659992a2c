// Private to lib/cc/shell: the recursive-descent parser behind parse()
// (parser.hpp), one class whose grammar is split over parser_*.cpp. Not
// installed; nothing outside lib/cc/shell includes it.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <unordered_set>
#include <utility>

#include "cc/shell/parser.hpp"

namespace cc::shell::detail {

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

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }
inline bool is_meta(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' ||
           c == '<' || c == '>';
}
inline bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

inline bool is_assignment(const std::string& t) {
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

    Node program();
    Word expansions_only();

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

    void fail(std::size_t at, std::string message);

    struct Depth {
        State& st;
        bool ok;
        Depth(State& s) : st(s), ok(++s.depth <= s.limits.max_depth) {}
        ~Depth() { --st.depth; }
    };
    bool enter(Depth& d);
    void skip_blanks();
    void newline();
    void linebreak();
    void read_heredoc(Pending& p);
    std::string peek_reserved() const;
    bool at_stop_word() const;
    bool take_reserved(std::string_view word);
    void expect_reserved(std::string_view word, std::string_view opener, std::size_t opener_at);
    Node list(Stop stop, std::vector<std::string_view> stops = {});
    bool require_command_after(const std::string& op);
    Node pipeline();
    Node command();
    bool at_compound() const;
    void coproc_clause(Node& n);
    void if_clause(Node& n, std::size_t at);
    void for_clause(Node& n, const std::string& kw, std::size_t at);
    void case_clause(Node& n, std::size_t at);
    void function_body(Node& n, Word name);
    void redirects(Node& n);
    void register_heredocs(Node& n);
    void simple(Node& n);
    bool at_redirect() const;
    Redirect redirect();
    void quoted_char(Word& w);
    bool require_word(Word& w, const std::string& message);
    bool word(Word& w);
    void single_quote(Word& w);
    void ansi_c_quote(Word& w);
    static void utf8(std::string& out, unsigned long v);
    void double_quote(Word& w);
    void dollar(Word& w, bool in_dquote);
    void command_substitution(Word& w, std::size_t at, std::size_t open_len);

    void process_substitution(Word& w) { command_substitution(w, i_, 2); }

    bool arith(Word& w);
    void backquote(Word& w);

public:
    Node nested();

private:
    void array_literal(Word& w);
    void paren_group(Word& w);

    void extglob(Word& w) { paren_group(w); }
};

}  // namespace cc::shell::detail
