// Compound commands: coproc, if, for/select, case and function bodies.
#include "cc/shell/parser_impl.hpp"

namespace cc::shell::detail {

// A compound command starts at i_ ({ ( (( [[ if while until for select case).
bool Parser::at_compound() const {
    if (peek() == '(') return true;
    std::string kw = peek_reserved();
    return kw == "{" || kw == "[[" || kw == "if" || kw == "while" || kw == "until" || kw == "for" ||
           kw == "select" || kw == "case";
}

// coproc [NAME] command: NAME only before a compound command; otherwise
// the first word is the simple command's name (bash's grammar).
void Parser::coproc_clause(Node& n) {
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

void Parser::if_clause(Node& n, std::size_t at) {
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

void Parser::for_clause(Node& n, const std::string& kw, std::size_t at) {
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

void Parser::case_clause(Node& n, std::size_t at) {
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

void Parser::function_body(Node& n, Word name) {
    n.kind = Kind::function;
    n.words.push_back(std::move(name));
    linebreak();
    if (at_end()) {
        fail(i_, "expected a function body");
        return;
    }
    n.children.push_back(command());
    const Node& body = n.children.back();
    if (!st_.aborting && body.kind == Kind::simple && body.words.empty() && body.assigns.empty() &&
        body.redirects.empty())
        fail(i_, "expected a function body");  // f() & or f() ;
}

}  // namespace cc::shell::detail
