// Loading the command data files (see knowledge.hpp).
//
// cc-classify reads these on every start, so they are read in one pass by a
// small strict JSON reader that fills the entries as it goes: no document
// tree, a handful of allocations per entry (building an nlohmann tree of the
// ~25 KB of data and copying out of it cost more than a millisecond, more
// than the rest of a run). Strict as cc::json::ObjectReader is: an unknown
// or repeated field, a wrong type, a trailing comma, bytes after the document
// are errors naming the file and the field.
#include "cc/classify/knowledge.hpp"

#include <dirent.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "cc/core/io.hpp"
#include "cc/policy/policy.hpp"

namespace cc::classify {

namespace detail {
int reader_index(std::string_view name);  // action_tables.cpp; -1 when unknown
}

namespace {

using sv = std::string_view;

struct Fail {
    Error error;
};

// Where a value is ("commands[3].names"), built as text only for an error:
// making the text for every value read was most of the loading time.
struct Path {
    const Path* up = nullptr;
    sv key;                         // a field name, or
    std::size_t index = sv::npos;   // an array index
    std::string str() const {
        std::string s = up ? up->str() : std::string();
        if (index != sv::npos) return s + "[" + std::to_string(index) + "]";
        if (key.empty()) return s;
        return s.empty() ? std::string(key) : s + "." + std::string(key);
    }
};
const Path root{};

// The reader throws Fail (caught in Knowledge::parse): every field reader
// would otherwise check and return at each step.
class Reader {
public:
    explicit Reader(sv text) : s_(text) {}

    [[noreturn]] void fail(const Path& at, const std::string& message) const { throw Fail{input_error(at.str(), message)}; }
    [[noreturn]] void syntax(const char* what) const {
        throw Fail{input_error("byte " + std::to_string(k_), std::string("malformed JSON: ") + what)};
    }

    void ws() {
        while (k_ < s_.size() && (s_[k_] == ' ' || s_[k_] == '\n' || s_[k_] == '\t' || s_[k_] == '\r')) ++k_;
    }
    char peek() {
        ws();
        return k_ < s_.size() ? s_[k_] : '\0';
    }
    void expect(char c) {
        if (peek() != c) syntax((std::string("expected '") + c + "'").c_str());
        ++k_;
    }
    void end() {
        if (peek() != '\0' || k_ != s_.size()) syntax("bytes after the document");
    }

    // The JSON type at this point, for messages.
    const char* type() {
        switch (peek()) {
            case '{': return "an object";
            case '[': return "an array";
            case '"': return "a string";
            case 't': case 'f': return "a boolean";
            case 'n': return "null";
            default: return "a number";
        }
    }

    std::string string(const Path& at) {
        if (peek() != '"') fail(at, std::string("must be a string, not ") + type());
        ++k_;
        std::string out;
        for (;;) {
            std::size_t run = k_;  // plain bytes are copied a run at a time
            while (run < s_.size() && s_[run] != '"' && s_[run] != '\\' && static_cast<unsigned char>(s_[run]) >= 0x20) ++run;
            out.append(s_.data() + k_, run - k_);
            k_ = run;
            if (k_ >= s_.size()) syntax("unterminated string");
            unsigned char c = static_cast<unsigned char>(s_[k_++]);
            if (c == '"') return out;
            if (c < 0x20) syntax("control character in a string");
            if (c != '\\') {
                out.push_back(static_cast<char>(c));
                continue;
            }
            if (k_ >= s_.size()) syntax("unterminated string");
            char e = s_[k_++];
            switch (e) {
                case '"': case '\\': case '/': out.push_back(e); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'n': out.push_back('\n'); break;
                case 'r': out.push_back('\r'); break;
                case 't': out.push_back('\t'); break;
                case 'u': utf8(out, code_point()); break;
                default: syntax("bad escape in a string");
            }
        }
    }

    bool boolean(const Path& at) {
        ws();
        if (s_.compare(k_, 4, "true") == 0) return k_ += 4, true;
        if (s_.compare(k_, 5, "false") == 0) return k_ += 5, false;
        fail(at, std::string("must be true or false, not ") + type());
    }

    long integer(const Path& at) {
        ws();
        std::size_t start = k_;
        if (k_ < s_.size() && s_[k_] == '-') ++k_;
        std::size_t digits = k_;
        while (k_ < s_.size() && s_[k_] >= '0' && s_[k_] <= '9' && k_ - start < 9) ++k_;
        if (k_ == digits || (k_ < s_.size() && (s_[k_] == '.' || s_[k_] == 'e' || s_[k_] == 'E' ||
                                               (s_[k_] >= '0' && s_[k_] <= '9'))))
            fail(at, std::string("must be a small whole number, not ") + (k_ == digits ? type() : "that"));
        return std::stol(std::string(s_.substr(start, k_ - start)));
    }

    // {"key": value, ...}: fn(key, path of the value) reads each value.
    // A key given twice is an error: the second would silently win.
    template <typename Fn>
    void object(const Path& at, Fn&& fn) {
        if (peek() != '{') fail(at, std::string("must be an object, not ") + type());
        ++k_;
        std::array<std::string, 10> seen;  // no object here has more fields
        std::size_t n = 0;
        if (peek() == '}') return void(++k_);
        for (;;) {
            std::string key = string(at);
            Path here{&at, key};
            if (std::find(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(n), key) != seen.begin() + static_cast<std::ptrdiff_t>(n))
                fail(here, "is given twice");
            if (n == seen.size()) fail(here, "unknown field");
            seen[n++] = key;
            expect(':');
            fn(key, here);
            if (peek() == ',') {
                ++k_;
                continue;
            }
            expect('}');
            return;
        }
    }

    // [value, ...]: fn(path of the element) reads each.
    template <typename Fn>
    void array(const Path& at, Fn&& fn) {
        if (peek() != '[') fail(at, std::string("must be an array, not ") + type());
        ++k_;
        if (peek() == ']') return void(++k_);
        for (std::size_t i = 0;; ++i) {
            fn(Path{&at, {}, i});
            if (peek() == ',') {
                ++k_;
                continue;
            }
            expect(']');
            return;
        }
    }

private:
    unsigned hex4() {
        if (k_ + 4 > s_.size()) syntax("short \\u escape");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            char c = s_[k_++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
            else syntax("bad \\u escape");
        }
        return v;
    }
    unsigned code_point() {
        unsigned v = hex4();
        if (v >= 0xDC00 && v <= 0xDFFF) syntax("lone low surrogate");
        if (v >= 0xD800 && v <= 0xDBFF) {
            if (s_.compare(k_, 2, "\\u") != 0) syntax("lone high surrogate");
            k_ += 2;
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) syntax("lone high surrogate");
            v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
        }
        return v;
    }
    static void utf8(std::string& out, unsigned v) {
        if (v < 0x80) {
            out.push_back(static_cast<char>(v));
        } else if (v < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (v >> 6)));
            out.push_back(static_cast<char>(0x80 | (v & 0x3F)));
        } else if (v < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (v >> 12)));
            out.push_back(static_cast<char>(0x80 | ((v >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (v & 0x3F)));
        } else {
            out.push_back(static_cast<char>(0xF0 | (v >> 18)));
            out.push_back(static_cast<char>(0x80 | ((v >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((v >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (v & 0x3F)));
        }
    }

    sv s_;
    std::size_t k_ = 0;
};

// ["a", "b"]: non-empty strings; classes must be known ones.
void strings(Reader& r, const Path& at, std::vector<std::string>& out, bool classes) {
    r.array(at, [&](const Path& here) {
        std::string s = r.string(here);
        if (s.empty()) r.fail(here, "must not be empty");
        if (classes && !policy::find_class(s)) r.fail(here, "unknown class '" + s + "' (cc-classify(1) lists them)");
        out.push_back(std::move(s));
    });
}

void sub_groups(Reader& r, const Path& at, CommandEntry& e) {
    e.has_subcommands = true;
    std::vector<std::size_t> group_of;  // per name in e.sub_names
    r.array(at, [&](const Path& here) {
        std::vector<std::string> classes;
        std::size_t names_before = e.sub_names.size();
        bool has_classes = false;
        r.object(here, [&](const std::string& key, const Path& p) {
            if (key == "names") strings(r, p, e.sub_names, false);
            else if (key == "classes") has_classes = true, strings(r, p, classes, true);
            else r.fail(p, "unknown field");
        });
        if (e.sub_names.size() == names_before) r.fail(Path{&here, "names"}, "is required (one or more names)");
        if (!has_classes) r.fail(Path{&here, "classes"}, "is required ([] for a subcommand that only reads)");
        group_of.resize(e.sub_names.size(), e.sub_classes.size());
        e.sub_classes.push_back(std::move(classes));
    });
    // Both storages are complete: the views into them stay valid from here on.
    e.subcommands.reserve(e.sub_names.size());
    for (std::size_t i = 0; i < e.sub_names.size(); ++i) e.subcommands.push_back({e.sub_names[i], &e.sub_classes[group_of[i]]});
    std::sort(e.subcommands.begin(), e.subcommands.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    for (std::size_t i = 1; i < e.subcommands.size(); ++i)
        if (e.subcommands[i].name == e.subcommands[i - 1].name)
            r.fail(at, "'" + std::string(e.subcommands[i].name) + "' is listed twice");
}

void value_options(Reader& r, const Path& at, CommandEntry& e) {
    r.object(at, [&](const std::string& key, const Path& p) {
        if (key == "short") {
            e.short_value_options = r.string(p);
        } else if (key == "long") {
            strings(r, p, e.long_value_options, false);
            for (const auto& l : e.long_value_options)
                if (l.size() < 3 || l.compare(0, 2, "--") != 0) r.fail(p, "'" + l + "' is not a long option");
        } else {
            r.fail(p, "unknown field");
        }
    });
}

}  // namespace

const CommandEntry::Sub* CommandEntry::subcommand(std::string_view s) const {
    auto it = std::lower_bound(subcommands.begin(), subcommands.end(), s,
                               [](const Sub& x, std::string_view k) { return x.name < k; });
    return it != subcommands.end() && it->name == s ? &*it : nullptr;
}

const CommandEntry* Knowledge::find(std::string_view name) const {
    auto it = names_.find(name);
    return it != names_.end() ? it->second : nullptr;
}

Status Knowledge::add(const std::string& text, const std::string& file) { return parse(text, file); }

Status Knowledge::parse(const std::string& text, const std::string& file) {
    Reader r(text);
    std::size_t before = entries_.size();
    try {
        bool has_version = false, has_commands = false;
        r.object(root, [&](const std::string& key, const Path& p) {
            if (key == "version") {
                has_version = true;
                if (r.integer(p) != 1) r.fail(p, "must be 1");
            } else if (key == "description") {
                r.string(p);
            } else if (key == "commands") {
                has_commands = true;
                r.array(p, [&](const Path& at) {
                    auto owned = std::make_unique<CommandEntry>();
                    CommandEntry& e = *owned;
                    e.file = file.substr(file.rfind('/') + 1);
                    e.path = file;
                    e.index = entries_.size() - before;
                    std::vector<std::string>& names = e.names;
                    std::vector<std::string> otherwise;
                    std::string reader;
                    bool has_reader = false, has_classes = false, has_bare = false, has_otherwise = false,
                         has_values = false;
                    r.object(at, [&](const std::string& k, const Path& q) {
                        if (k == "names") strings(r, q, names, false);
                        else if (k == "readOnly") e.read_only = r.boolean(q);
                        else if (k == "classes") has_classes = true, strings(r, q, e.classes, true);
                        else if (k == "reader") has_reader = true, reader = r.string(q);
                        else if (k == "subcommands") sub_groups(r, q, e);
                        else if (k == "bare") has_bare = true, strings(r, q, e.bare, true);
                        else if (k == "otherwise") has_otherwise = true, strings(r, q, otherwise, true);
                        else if (k == "valueOptions") has_values = true, value_options(r, q, e);
                        else r.fail(q, "unknown field");
                    });
                    if (names.empty()) r.fail(Path{&at, "names"}, "is required (one or more command names)");
                    for (const auto& n : names)
                        if (n.find('/') != std::string::npos)
                            r.fail(Path{&at, "names"}, "'" + n + "' has a '/' (commands are named without their directory)");
                    if (has_otherwise) e.otherwise = std::move(otherwise);
                    if (has_reader) {
                        e.reader = detail::reader_index(reader);
                        if (e.reader < 0) r.fail(Path{&at, "reader"}, "unknown reader '" + reader + "' (cc-classify(1) lists them)");
                    }
                    if (e.read_only + has_classes + (has_reader || e.has_subcommands) != 1)
                        r.fail(at, "needs exactly one of \"readOnly\": true, \"classes\", \"reader\" or \"subcommands\"");
                    if (e.has_subcommands && has_reader && reader != "git")
                        r.fail(Path{&at, "subcommands"}, "the reader '" + reader + "' does not read a subcommand list");
                    if ((has_bare || has_otherwise || has_values) && (!e.has_subcommands || has_reader))
                        r.fail(at, "\"bare\", \"otherwise\" and \"valueOptions\" go with \"subcommands\" and no reader");
                    e.name = names.front();
                    for (const auto& n : names)
                        if (auto [it, added] = names_.emplace(n, &e); !added)
                            r.fail(Path{&at, "names"}, "'" + n + "' is already listed in " + it->second->file + " (a name is listed once)");
                    entries_.push_back(std::move(owned));
                });
            } else {
                r.fail(p, "unknown field");
            }
        });
        r.end();
        if (!has_version) r.fail(Path{&root, "version"}, "is required (1)");
        if (!has_commands) r.fail(Path{&root, "commands"}, "is required (an array of entries)");
    } catch (Fail& f) {
        // Nothing of a file that failed is kept.
        for (std::size_t i = before; i < entries_.size(); ++i)
            for (const auto& n : entries_[i]->names) names_.erase(n);
        entries_.resize(before);
        f.error.subject = "'" + file + "': " + f.error.subject;
        return f.error;
    }
    return ok();
}

cc::Result<Knowledge> Knowledge::load(const std::string& dir) {
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d) return input_error("command data directory '" + dir + "'", "cannot be read (CC_DATA_DIR names its parent)");
    std::vector<std::string> files;
    while (const dirent* ent = ::readdir(d.get())) {
        std::size_t n = std::strlen(ent->d_name);
        if (n > 5 && ent->d_name[0] != '.' && std::strcmp(ent->d_name + n - 5, ".json") == 0) files.emplace_back(ent->d_name);
    }
    if (files.empty()) return input_error("command data directory '" + dir + "'", "holds no *.json file");
    std::sort(files.begin(), files.end());
    Knowledge k;
    k.names_.reserve(2048);
    for (const auto& f : files) {
        std::string path = dir + "/" + f;
        auto text = io::read_input(path);
        if (!text) return text.error();
        if (auto s = k.parse(*text, path); !s) return s.error();
    }
    return k;
}

std::string knowledge_dir() { return io::data_dir() + "/classify"; }

namespace {

std::unique_ptr<Knowledge>& installed() {
    static std::unique_ptr<Knowledge> k;
    return k;
}

}  // namespace

void install_knowledge(Knowledge k) { installed() = std::make_unique<Knowledge>(std::move(k)); }

Status install_knowledge(const std::string& dir) {
    auto k = Knowledge::load(dir);
    if (!k) return k.error();
    install_knowledge(std::move(*k));
    return ok();
}

const Knowledge& knowledge() {
    auto& k = installed();
    if (!k) {
        auto loaded = Knowledge::load(knowledge_dir());
        if (!loaded) throw std::runtime_error(loaded.error().one_line());
        k = std::make_unique<Knowledge>(std::move(*loaded));
    }
    return *k;
}

}  // namespace cc::classify
