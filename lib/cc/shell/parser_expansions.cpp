// Expansions inside words: $name and ${...}, $( ), $(( )), backquotes,
// array literals and the matched-pair groups of extglob and [[ =~ ]].
#include "cc/shell/parser_impl.hpp"

namespace cc::shell::detail {

// $name, ${...}, $(...), $((...)); anything else is a literal '$'.
void Parser::dollar(Word& w, bool in_dquote) {
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
            } else if ((c == '<' || c == '>') && peek(1) == '(') {
                // A process substitution is read whole (a '}' inside it
                // closes nothing) and bash runs it in an unquoted ${...}'s
                // word ("${x:-<(cmd)}" leaves it as text, but the $( ) in
                // it still runs: keeping its commands is never weaker).
                command_substitution(inner, i_, 2);
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

void Parser::command_substitution(Word& w, std::size_t at, std::size_t open_len) {
    Depth d(st_);
    if (!enter(d)) return;
    i_ = at + open_len;
    bool regex = regex_;
    regex_ = false;  // a new command line
    // Here-documents opened before the substitution take their bodies
    // after it, not at a newline inside it (bash: `cat <<x; echo $(a<nl>b)`
    // then `x` has an empty body); those opened inside and still open when
    // it closes follow them.
    std::vector<Pending> outer = std::move(st_.pending);
    st_.pending.clear();
    Node body = list(Stop::paren);
    outer.insert(outer.end(), st_.pending.begin(), st_.pending.end());
    st_.pending = std::move(outer);
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

// After "((" or "$((": up to the matching "))". Substitutions inside are
// parsed into w.subs; w.text is left to the caller. False when this is not
// arithmetic (the caller rewinds and reads it as nested parentheses).
bool Parser::arith(Word& w) {
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

void Parser::backquote(Word& w) {
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
    // Nor does one opened before the backquotes read its body inside them.
    std::vector<Pending> outer = std::move(st_.pending);
    st_.pending.clear();
    Parser sub(inner, 0, inner.size(), st_, off(at), true);
    Node body = sub.nested();
    st_.pending = std::move(outer);
    w.subs.push_back(std::move(body));
    if (!closed && !st_.aborting) fail(at, "unterminated backquote");
}

void Parser::array_literal(Word& w) {
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
void Parser::paren_group(Word& w) {
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
        } else if ((c == '<' || c == '>') && peek(1) == '(') {
            command_substitution(inner, i_, 2);  // bash runs it: @(<(cmd)), [[ a =~ (<(cmd)) ]]
        } else {
            ++i_;
        }
    }
    w.text.append(s_.substr(at, i_ - at));
    if (!inner.subs.empty() || inner.expanded) w.expanded = true;
    for (auto& sub : inner.subs) w.subs.push_back(std::move(sub));
    if (depth != 0 && !st_.aborting) fail(at, "unbalanced parenthesis: '(' is not closed");
}

}  // namespace cc::shell::detail
