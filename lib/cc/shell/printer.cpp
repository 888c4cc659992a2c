#include "cc/shell/printer.hpp"

#include "cc/shell/parser.hpp"

#include <string>
#include <vector>

namespace cc::shell {

namespace {

class Printer {
public:
    explicit Printer(std::string_view source) : src_(source) {}

    std::string finish(const Node& n) {
        node(n);
        flush_bodies(true);
        return std::move(out_);
    }

private:
    struct Body {
        const std::string* text;
        std::string delimiter;
    };
    std::string_view src_;
    std::string out_;
    std::vector<Body> bodies_;

    void raw(const Word& w) {
        if (w.end > w.offset && w.end <= src_.size()) {
            std::string_view r = src_.substr(w.offset, w.end - w.offset);
            out_.append(r);
            // A backslash that ended the input stood for itself; here more
            // text follows, so it is escaped.
            std::size_t slashes = 0;
            while (slashes < r.size() && r[r.size() - 1 - slashes] == '\\') ++slashes;
            if (slashes % 2 == 1 && w.end == src_.size()) out_ += '\\';
        } else {
            out_ += w.text;
        }
        for (const auto& sub : w.subs) bodies_after(sub, w.end);
    }

    static bool heredoc(const Redirect& r) { return r.op == "<<" || r.op == "<<-"; }

    // A here-document opened inside $( ) reads its body from the lines after
    // the one that closed the substitution (bash 5.2 does), outside the word
    // printed as written: it is due at the next newline like any other. The
    // order is the parser's: a command's substitutions register their bodies
    // before the command's own.
    void bodies_after(const Node& n, std::size_t word_end) {
        auto words = [&](const std::vector<Word>& ws) {
            for (const auto& w : ws)
                for (const auto& sub : w.subs) bodies_after(sub, word_end);
        };
        words(n.assigns);
        words(n.words);
        for (const auto& r : n.redirects)
            for (const auto& sub : r.target.subs) bodies_after(sub, word_end);
        for (const auto& c : n.children) bodies_after(c, word_end);
        for (const auto& r : n.redirects)
            if (heredoc(r) && r.body_offset >= word_end) bodies_.push_back({&r.body, r.target.text});
    }

    // A body cut off by the end of the input (no newline before it ended)
    // has to stay last: nothing may follow it.
    static bool cut_off(const Body& b) {
        // No newline at its end, or a delimiter no line can match (one with a
        // newline in it): the body ran to the end of the input.
        return (!b.text->empty() && b.text->back() != '\n') || b.delimiter.find('\n') != std::string::npos;
    }
    bool cut_off_pending() const {
        for (const auto& b : bodies_)
            if (cut_off(b)) return true;
        return false;
    }

    // Here-document bodies follow the next newline.
    void flush_bodies(bool at_end) {
        if (bodies_.empty() || (!at_end && cut_off_pending())) return;
        out_ += '\n';
        for (const auto& b : bodies_) {
            out_ += *b.text;
            if (cut_off(b)) break;  // the end of the input ends it
            out_ += b.delimiter;
            out_ += '\n';
        }
        bodies_.clear();
    }

    // A separator before more text: ";" (or "&", "&&", ...), then a newline
    // when bodies are due, else a blank.
    void sep(const std::string& op) {
        if (op == "\n") {
            if (bodies_.empty() || cut_off_pending()) out_ += '\n';
            else flush_bodies(false);
            return;
        }
        out_ += op;
        if (bodies_.empty() || cut_off_pending()) out_ += ' ';
        else flush_bodies(false);
    }

    void list(const Node& n) {
        for (std::size_t k = 0; k < n.children.size(); ++k) {
            const Node& c = n.children[k];
            if (k > 0) sep(c.op.empty() ? ";" : c.op);
            node(c);
        }
    }

    // A list followed by a reserved word needs a separator after it.
    void body(const Node& n) {
        if (n.children.empty()) return;  // "{ }", read as an empty list (bash refuses it)
        list(n);
        sep(";");
    }

    // A command's own here-documents are registered when it ends, after those
    // of substitutions in its words (the parser's order): `own` collects them.
    void redirects(const Node& n, std::vector<Body>* own = nullptr) {
        for (const auto& r : n.redirects) {
            out_ += ' ';
            if (r.fd >= 0) out_ += std::to_string(r.fd);
            out_ += r.op;
            out_ += ' ';  // "< <(x)" is not "<<(x)"
            raw(r.target);
            if (heredoc(r)) (own ? *own : bodies_).push_back({&r.body, r.target.text});
        }
    }

    void words(const std::vector<Word>& ws, std::size_t from = 0) {
        for (std::size_t k = from; k < ws.size(); ++k) {
            // Always a blank: the last byte printed may belong to a word ("\ ").
            if (!out_.empty()) out_ += ' ';
            raw(ws[k]);
        }
    }

    void node(const Node& n) {
        switch (n.kind) {
            case Kind::list: list(n); return;
            case Kind::pipeline:
                if (n.negated) out_ += "! ";
                if (n.children.empty()) {
                    out_ += n.negated ? "" : "time";
                    return;
                }
                for (std::size_t k = 0; k < n.children.size(); ++k) {
                    if (k > 0) sep(n.children[k].op.empty() ? "|" : n.children[k].op);
                    node(n.children[k]);
                }
                return;
            case Kind::simple:
                // Redirections first: a word that followed one in the source
                // ("3>x {") must not come out at the start, where it would be
                // a reserved word.
            {
                std::vector<Body> own;
                redirects(n, &own);
                words(n.assigns);
                words(n.words);
                bodies_.insert(bodies_.end(), own.begin(), own.end());
                return;
            }
            case Kind::subshell:
                out_ += "( ";
                if (!n.children.empty()) list(n.children[0]);
                out_ += " )";
                redirects(n);
                return;
            case Kind::group:
                out_ += "{ ";
                if (!n.children.empty()) body(n.children[0]);
                out_ += "}";
                redirects(n);
                return;
            case Kind::if_: {
                std::size_t k = 0;
                out_ += "if ";
                while (k + 1 < n.children.size()) {
                    if (k > 0) out_ += "elif ";
                    body(n.children[k]);
                    out_ += "then ";
                    body(n.children[k + 1]);
                    k += 2;
                }
                if (k < n.children.size()) {
                    out_ += "else ";
                    body(n.children[k]);
                }
                out_ += "fi";
                redirects(n);
                return;
            }
            case Kind::loop: {
                const std::string& kw = n.words.empty() ? std::string() : n.words[0].text;
                out_ += kw + ' ';
                if (kw == "while" || kw == "until") {
                    if (!n.children.empty()) body(n.children[0]);
                } else if (n.words.size() == 2 && n.words[1].expanded) {
                    out_ += "((" + n.words[1].text + ")); ";
                } else {
                    if (n.words.size() > 1) raw(n.words[1]);
                    if (n.words.size() > 2) {
                        out_ += " in";
                        words(n.words, 2);
                    }
                    sep(";");
                }
                out_ += "do ";
                if (!n.children.empty()) body(n.children.back());
                out_ += "done";
                redirects(n);
                return;
            }
            case Kind::case_: {
                // Patterns are kept flat: one per arm and the rest with the
                // last arm reads back to the same tree.
                out_ += "case ";
                if (!n.words.empty()) raw(n.words[0]);
                out_ += " in ";
                std::size_t p = 1;
                for (std::size_t a = 0; a < n.children.size(); ++a) {
                    std::size_t last = a + 1 == n.children.size() ? n.words.size() : p + 1;
                    for (std::size_t q = p; q < last && q < n.words.size(); ++q) {
                        if (q > p) out_ += " | ";
                        raw(n.words[q]);
                    }
                    p = last;
                    out_ += ") ";
                    list(n.children[a]);
                    sep(";;");
                }
                out_ += "esac";
                redirects(n);
                return;
            }
            case Kind::function:
                out_ += "function ";
                if (!n.words.empty()) raw(n.words[0]);
                out_ += " () ";
                if (!n.children.empty()) node(n.children[0]);
                return;
            case Kind::arith:
                out_ += "((";
                if (!n.words.empty()) {
                    out_ += n.words[0].text;
                    for (const auto& sub : n.words[0].subs) bodies_after(sub, n.words[0].end);
                }
                out_ += "))";
                redirects(n);
                return;
            case Kind::cond:
                out_ += "[[";
                for (const auto& w : n.words) {
                    out_ += ' ';
                    raw(w);
                }
                out_ += " ]]";
                redirects(n);
                return;
            case Kind::coproc:
                out_ += "coproc ";
                if (!n.words.empty()) {
                    raw(n.words[0]);
                    out_ += ' ';
                }
                if (!n.children.empty()) node(n.children[0]);
                return;
        }
    }
};

bool fail(std::string* why, std::string what) {
    if (why && why->empty()) *why = std::move(what);
    return false;
}

bool same_words(const std::vector<Word>& a, const std::vector<Word>& b, std::string* why) {
    if (a.size() != b.size())
        return fail(why, "word count " + std::to_string(a.size()) + " != " + std::to_string(b.size()));
    for (std::size_t k = 0; k < a.size(); ++k) {
        if (a[k].text != b[k].text) return fail(why, "word '" + a[k].text + "' != '" + b[k].text + "'");
        if (a[k].expanded != b[k].expanded) return fail(why, "word '" + a[k].text + "': expanded differs");
        if (a[k].subs.size() != b[k].subs.size()) return fail(why, "word '" + a[k].text + "': substitutions differ");
        for (std::size_t s = 0; s < a[k].subs.size(); ++s)
            if (!same_tree(a[k].subs[s], b[k].subs[s], why)) return false;
    }
    return true;
}

}  // namespace

std::string print(const Node& node, std::string_view source) { return Printer(source).finish(node); }

bool same_tree(const Node& a, const Node& b, std::string* why) {
    if (a.kind != b.kind) return fail(why, std::string("kind ") + to_string(a.kind) + " != " + to_string(b.kind));
    if (a.op != b.op) return fail(why, "separator '" + a.op + "' != '" + b.op + "'");
    if (a.negated != b.negated) return fail(why, "negation differs");
    if (!same_words(a.assigns, b.assigns, why) || !same_words(a.words, b.words, why)) return false;
    if (a.redirects.size() != b.redirects.size()) return fail(why, "redirection count differs");
    for (std::size_t k = 0; k < a.redirects.size(); ++k) {
        const auto &x = a.redirects[k], &y = b.redirects[k];
        if (x.fd != y.fd || x.op != y.op || x.body != y.body || x.body_quoted != y.body_quoted)
            return fail(why, "redirection '" + x.op + x.target.text + "' differs");
        if (!same_words({x.target}, {y.target}, why)) return false;
        if (x.body_subs.size() != y.body_subs.size()) return fail(why, "here-document substitutions differ");
        for (std::size_t s = 0; s < x.body_subs.size(); ++s)
            if (!same_tree(x.body_subs[s], y.body_subs[s], why)) return false;
    }
    if (a.children.size() != b.children.size())
        return fail(why, std::string(to_string(a.kind)) + ": " + std::to_string(a.children.size()) + " children != " +
                             std::to_string(b.children.size()));
    for (std::size_t k = 0; k < a.children.size(); ++k)
        if (!same_tree(a.children[k], b.children[k], why)) return false;
    return true;
}

}  // namespace cc::shell
