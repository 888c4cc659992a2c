#include "cc/shell/continuations.hpp"

#include <algorithm>

namespace cc::shell {

namespace {

// A small lexer that knows only what decides where bash keeps a
// backslash-newline: quotes, nesting of $( ${ ` and double quotes, comments
// and here-documents. Where it guesses wrong, cc-classify still has the
// unjoined reading (it judges both).
class Joiner {
public:
    explicit Joiner(std::string_view s) : s_(s) { out_.text.reserve(s.size()); }

    Joined run() {
        while (k_ < s_.size()) step();
        return std::move(out_);
    }

private:
    enum class Ctx { top, dquote, brace, paren, backquote };
    struct Heredoc {
        std::string delimiter;
        bool quoted;
        bool strip_tabs;
    };

    std::string_view s_;
    std::size_t k_ = 0;
    Joined out_;
    std::vector<Ctx> stack_{Ctx::top};
    std::vector<Heredoc> pending_;

    Ctx ctx() const { return stack_.back(); }
    char at(std::size_t k) const { return k < s_.size() ? s_[k] : '\0'; }
    void copy(std::size_t n = 1) {
        n = std::min(n, s_.size() - k_);
        out_.text.append(s_.substr(k_, n));
        k_ += n;
    }
    bool continuation() const { return at(k_) == '\\' && at(k_ + 1) == '\n'; }
    void remove_pair() {
        out_.removed.push_back(out_.text.size());
        k_ += 2;
    }
    bool word_start() const {
        if (out_.text.empty()) return true;
        char p = out_.text.back();
        return p == ' ' || p == '\t' || p == '\n' || p == ';' || p == '&' || p == '|' || p == '(' || p == ')';
    }
    void pop() {
        if (stack_.size() > 1) stack_.pop_back();
    }

    void step() {
        char c = s_[k_];
        if (continuation()) return remove_pair();
        if (c == '\\') return copy(2);
        Ctx x = ctx();
        if (x == Ctx::dquote) {
            if (c == '"') {
                pop();
                return copy();
            }
            if (c == '$' && at(k_ + 1) == '(') {
                stack_.push_back(Ctx::paren);
                return copy(2);
            }
            if (c == '$' && at(k_ + 1) == '{') {
                stack_.push_back(Ctx::brace);
                return copy(2);
            }
            if (c == '`') {
                stack_.push_back(Ctx::backquote);
                return copy();
            }
            return copy();
        }
        // Unquoted contexts: top, $( ), ${ }, backquotes.
        if (c == '\'') return single_quoted(false);
        if (c == '$' && at(k_ + 1) == '\'') {
            copy();
            return single_quoted(true);
        }
        if (c == '"') {
            stack_.push_back(Ctx::dquote);
            return copy();
        }
        if (c == '`') {
            if (x == Ctx::backquote) pop();
            else stack_.push_back(Ctx::backquote);
            return copy();
        }
        if (c == '$' && at(k_ + 1) == '{') {
            stack_.push_back(Ctx::brace);
            return copy(2);
        }
        if (c == '(') {
            stack_.push_back(Ctx::paren);
            return copy();
        }
        if (c == ')') {
            if (x == Ctx::paren) pop();
            return copy();
        }
        if (c == '}' && x == Ctx::brace) {
            pop();
            return copy();
        }
        if (c == '#' && x != Ctx::brace && word_start()) {
            while (k_ < s_.size() && s_[k_] != '\n') copy();
            return;
        }
        if (c == '<') {
            // '<<' and '<<<', also when split by backslash-newline ("<\<nl><E"
            // is a here-document operator once joined).
            copy();
            while (continuation()) remove_pair();
            if (at(k_) != '<') return;
            std::size_t j = k_ + 1;
            while (at(j) == '\\' && at(j + 1) == '\n') j += 2;
            if (at(j) == '<') {  // a here-string: its second '<' opens nothing
                copy();
                while (continuation()) remove_pair();
                return copy();
            }
            if (x == Ctx::brace) return copy();
            return heredoc_operator();
        }
        if (c == '\n') {
            copy();
            auto pending = std::move(pending_);
            pending_.clear();
            for (const auto& h : pending) body(h);
            return;
        }
        copy();
    }

    void single_quoted(bool escapes) {
        copy();  // the opening quote
        while (k_ < s_.size()) {
            char c = s_[k_];
            if (escapes && c == '\\') {
                copy(2);
                continue;
            }
            copy();
            if (c == '\'') return;
        }
    }

    // At the operator's second '<' (the first is copied).
    void heredoc_operator() {
        copy();
        while (continuation()) remove_pair();
        bool strip = at(k_) == '-';
        if (strip) copy();
        while (continuation()) remove_pair();
        while (at(k_) == ' ' || at(k_) == '\t') copy();
        Heredoc h{{}, false, strip};
        while (k_ < s_.size()) {
            char c = s_[k_];
            if (continuation()) {
                remove_pair();
                continue;
            }
            if (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' ||
                c == '(' || c == ')')
                break;
            if (c == '\'' || c == '"') {
                h.quoted = true;
                copy();
                while (k_ < s_.size() && s_[k_] != c) {
                    h.delimiter.push_back(s_[k_]);
                    copy();
                }
                copy();
                continue;
            }
            if (c == '\\') {
                h.quoted = true;
                if (k_ + 1 < s_.size()) h.delimiter.push_back(s_[k_ + 1]);
                copy(2);
                continue;
            }
            h.delimiter.push_back(c);
            copy();
        }
        pending_.push_back(std::move(h));
    }

    // Lines up to and including the delimiter line; in an unquoted body the
    // pairs are removed first, as bash does before it compares.
    void body(const Heredoc& h) {
        while (k_ < s_.size()) {
            std::string logical;
            while (k_ < s_.size() && s_[k_] != '\n') {
                if (!h.quoted && continuation()) {
                    remove_pair();
                    continue;
                }
                if (!h.quoted && s_[k_] == '\\') {
                    logical.append(s_.substr(k_, 2));
                    copy(2);
                    continue;
                }
                logical.push_back(s_[k_]);
                copy();
            }
            if (k_ < s_.size()) copy();  // the newline
            std::string_view line = logical;
            if (h.strip_tabs)
                while (!line.empty() && line.front() == '\t') line.remove_prefix(1);
            if (line == h.delimiter) return;
        }
    }
};

}  // namespace

std::size_t Joined::source_offset(std::size_t joined) const {
    auto n = std::upper_bound(removed.begin(), removed.end(), joined) - removed.begin();
    return joined + 2 * static_cast<std::size_t>(n);
}

Joined join_continuations(std::string_view source) {
    if (source.find("\\\n") == std::string_view::npos) return {};
    Joined j = Joiner(source).run();
    if (j.removed.empty()) return {};
    return j;
}

}  // namespace cc::shell
