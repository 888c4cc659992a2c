// Words: quoting (single, double, ANSI-C) and escapes.
#include "cc/shell/parser_impl.hpp"

namespace cc::shell::detail {

// Inside double quotes and unquoted here-document bodies: an expansion or
// a literal character.
void Parser::quoted_char(Word& w) {
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

bool Parser::require_word(Word& w, const std::string& message) {
    if (word(w)) return true;
    fail(i_, message);
    return false;
}

// Reads one word at i_; false when no word starts here.
bool Parser::word(Word& w) {
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

void Parser::single_quote(Word& w) {
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

void Parser::ansi_c_quote(Word& w) {
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

void Parser::utf8(std::string& out, unsigned long v) {
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

void Parser::double_quote(Word& w) {
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

}  // namespace cc::shell::detail
