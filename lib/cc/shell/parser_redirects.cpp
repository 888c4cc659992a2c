// Redirections and here-documents: a here-document's body follows the next
// newline token, so bodies are registered when read and filled in there.
#include "cc/shell/parser_impl.hpp"

namespace cc::shell::detail {

// One newline token: the bodies of pending here-documents follow it.
void Parser::newline() {
    ++i_;
    auto pending = std::move(st_.pending);
    st_.pending.clear();
    for (auto& p : pending) read_heredoc(p);
}

void Parser::linebreak() {
    while (true) {
        skip_blanks();
        if (!at_end() && s_[i_] == '\n') newline();
        else break;
    }
}

void Parser::read_heredoc(Pending& p) {
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
    r.body_offset = off(body_start);
    if (!r.body_quoted) {
        Parser sub(s_, body_start, body_end, st_, base_, remap_);
        Word w = sub.expansions_only();
        r.body_subs = std::move(w.subs);
    }
}

// Trailing redirections of a compound command.
void Parser::redirects(Node& n) {
    while (!st_.aborting) {
        skip_blanks();
        if (!at_redirect()) break;
        n.redirects.push_back(redirect());
    }
    register_heredocs(n);
}

void Parser::register_heredocs(Node& n) {
    for (auto& r : n.redirects)
        if ((r.op == "<<" || r.op == "<<-") && r.body.empty() && !st_.aborting)
            st_.pending.push_back({&r, r.target.text, r.op == "<<-"});
}

bool Parser::at_redirect() const {
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

Redirect Parser::redirect() {
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

}  // namespace cc::shell::detail
