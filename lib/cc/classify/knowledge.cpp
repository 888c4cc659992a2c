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
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "cc/core/io.hpp"
#include "cc/policy/policy.hpp"

namespace cc::classify {

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
    Reader(sv text, std::deque<std::string>& decoded) : s_(text), decoded_(decoded) {}

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

    // A view into the text; a string with escapes is decoded into storage
    // that lives as long as the Knowledge.
    sv string(const Path& at) {
        if (peek() != '"') fail(at, std::string("must be a string, not ") + type());
        std::size_t start = ++k_, run = k_;
        while (run < s_.size() && plain(s_[run])) ++run;
        if (run < s_.size() && s_[run] == '"') {
            k_ = run + 1;
            return s_.substr(start, run - start);
        }
        std::string out(s_.substr(start, run - start));
        k_ = run;
        for (;;) {
            if (k_ >= s_.size()) syntax("unterminated string");
            unsigned char c = static_cast<unsigned char>(s_[k_++]);
            if (c == '"') return decoded_.emplace_back(std::move(out));
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
        std::array<sv, 10> seen;  // no object here has more fields
        std::size_t n = 0;
        if (peek() == '}') return void(++k_);
        for (;;) {
            sv key = string(at);
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

    static bool plain(char c) {  // a byte that stands for itself in a string
        static constexpr auto table = [] {
            std::array<bool, 256> t{};
            for (int i = 0x20; i < 256; ++i) t[static_cast<std::size_t>(i)] = i != '"' && i != '\\';
            return t;
        }();
        return table[static_cast<unsigned char>(c)];
    }

    sv s_;
    std::deque<std::string>& decoded_;
    std::size_t k_ = 0;
};

// ["a", "b"]: non-empty strings; classes must be known ones.
template <typename Out>
void strings(Reader& r, const Path& at, Out& out, bool classes) {
    r.array(at, [&](const Path& here) {
        sv s = r.string(here);
        if (s.empty()) r.fail(here, "must not be empty");
        if (classes && !policy::find_class(s)) r.fail(here, "unknown class '" + std::string(s) + "' (cc-classify(1) lists them)");
        out.emplace_back(s);
    });
}

void sub_groups(Reader& r, const Path& at, CommandEntry& e) {
    e.has_subcommands = true;
    std::vector<std::pair<sv, std::uint32_t>> subs;
    r.array(at, [&](const Path& here) {
        auto group = static_cast<std::uint32_t>(e.groups.size());
        Names& classes = e.groups.emplace_back();
        std::size_t before = subs.size();
        bool has_names = false, has_classes = false;
        r.object(here, [&](sv key, const Path& p) {
            if (key == "names") {
                has_names = true;
                r.array(p, [&](const Path& q) {
                    sv n = r.string(q);
                    if (n.empty()) r.fail(q, "must not be empty");
                    subs.emplace_back(n, group);
                });
            } else if (key == "classes") {
                has_classes = true;
                strings(r, p, classes, true);
            } else {
                r.fail(p, "unknown field");
            }
        });
        if (!has_names || subs.size() == before) r.fail(Path{&here, "names"}, "is required (one or more names)");
        if (!has_classes) r.fail(Path{&here, "classes"}, "is required ([] for a subcommand that only reads)");
    });
    e.subcommands.reserve(subs.size());
    for (const auto& [n, group] : subs)
        if (!e.subcommands.insert(n, group)) r.fail(at, "'" + std::string(n) + "' is listed twice");
}

void value_options(Reader& r, const Path& at, CommandEntry& e) {
    r.object(at, [&](sv key, const Path& p) {
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

// "optionClasses": {"-o": ["write_files"], "--pre": ["run_code"], "+": [...]}:
// a short option is one letter, a long one "--name", a single-dash long one
// ("-report") at least two letters; "+" is an argument starting with '+'.
void option_classes(Reader& r, const Path& at, CommandEntry& e) {
    r.object(at, [&](sv opt, const Path& q) {
        bool ok = opt == "+" || (opt.size() == 2 && opt[0] == '-' && opt[1] != '-') ||
                  (opt.size() >= 4 && opt.compare(0, 2, "--") == 0) ||
                  (opt.size() >= 3 && opt[0] == '-' && opt[1] != '-');
        if (!ok || opt.find('=') != sv::npos)
            r.fail(q, "'" + std::string(opt) + "' is not an option (-x, --name, -name or +)");
        CommandEntry::OptionClasses o{std::string(opt), {}};
        strings(r, q, o.classes, true);
        if (o.classes.empty()) r.fail(q, "must name at least one class");
        e.option_classes.push_back(std::move(o));
    });
}

// One entry of "commands" at `at`: fills e (but its file, path and index)
// and appends its names, pointing at `self`, to `names`.
void read_entry(Reader& r, const Path& at, CommandEntry& e, std::vector<std::pair<sv, std::uint32_t>>& names,
                std::uint32_t self, std::vector<std::pair<sv, std::uint32_t>>* prefixes = nullptr) {
    std::size_t first_name = names.size();
    Names otherwise;
    sv reader;
    bool has_reader = false, has_classes = false, has_bare = false, has_otherwise = false,
         has_values = false, has_option_classes = false;
    r.object(at, [&](sv k, const Path& q) {
        if (k == "names") {
            r.array(q, [&](const Path& x) {
                sv n = r.string(x);
                if (n.empty()) r.fail(x, "must not be empty");
                if (n.find('/') != sv::npos)
                    r.fail(x, "'" + std::string(n) + "' has a '/' (commands are named without their directory)");
                names.emplace_back(n, self);
            });
        }
        else if (k == "prefixes") {
            r.array(q, [&](const Path& x) {
                sv n = r.string(x);
                if (n.empty()) r.fail(x, "must not be empty");
                if (n.find('/') != sv::npos)
                    r.fail(x, "'" + std::string(n) + "' has a '/' (commands are named without their directory)");
                if (prefixes) prefixes->emplace_back(n, self);
            });
        }
        else if (k == "readOnly") e.read_only = r.boolean(q);
        else if (k == "classes") has_classes = true, strings(r, q, e.classes, true);
        else if (k == "reader") has_reader = true, reader = r.string(q);
        else if (k == "subcommands") sub_groups(r, q, e);
        else if (k == "bare") has_bare = true, strings(r, q, e.bare, true);
        else if (k == "otherwise") has_otherwise = true, strings(r, q, otherwise, true);
        else if (k == "valueOptions") has_values = true, value_options(r, q, e);
        else if (k == "optionClasses") has_option_classes = true, option_classes(r, q, e);
        else r.fail(q, "unknown field");
    });
    if (names.size() == first_name) r.fail(Path{&at, "names"}, "is required (one or more command names)");
    if (has_otherwise) e.otherwise = std::move(otherwise), e.has_otherwise = true;
    if (has_reader) {
        e.reader = detail::reader_index(reader);
        if (e.reader < 0) r.fail(Path{&at, "reader"}, "unknown reader '" + std::string(reader) + "' (cc-classify(1) lists them)");
    }
    if (e.read_only + has_classes + (has_reader || e.has_subcommands) != 1)
        r.fail(at, "needs exactly one of \"readOnly\": true, \"classes\", \"reader\" or \"subcommands\"");
    if (has_option_classes && !e.read_only)
        r.fail(Path{&at, "optionClasses"}, "goes with \"readOnly\": true (the options that make it do more than read)");
    // The readers that handle their tool's special cases, then its list.
    const bool list_reader = reader == "git" || reader == "cargo" || reader == "go" || reader == "conda" ||
                             reader == "npm" || reader == "yarn" || reader == "bun" || reader == "pip" || reader == "gh";
    if (e.has_subcommands && has_reader && !list_reader)
        r.fail(Path{&at, "subcommands"}, "the reader '" + std::string(reader) + "' does not read a subcommand list");
    if ((has_bare || has_otherwise || has_values) && (!e.has_subcommands || (has_reader && reader == "git")))
        r.fail(at, "\"bare\", \"otherwise\" and \"valueOptions\" go with \"subcommands\" and no reader (or a reader "
                   "that reads one: cargo, go, conda, npm, yarn, bun, pip, gh)");
    e.name = names[first_name].first;
}

std::uint64_t hash(sv s) {  // FNV-1a
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

}  // namespace

void NameTable::reserve(std::size_t n) {
    std::size_t want = 16;
    while (want < 2 * n) want *= 2;
    names_.reserve(n);
    if (want <= slots_.size()) return;
    slots_.assign(want, 0);
    std::size_t mask = want - 1;
    for (std::size_t k = 0; k < names_.size(); ++k) {
        std::size_t i = hash(names_[k].first) & mask;
        while (slots_[i]) i = (i + 1) & mask;
        slots_[i] = static_cast<std::uint32_t>(k + 1);
    }
}

bool NameTable::insert(sv name, std::uint32_t value, std::uint32_t* had) {
    if (2 * (names_.size() + 1) > slots_.size()) reserve(2 * (names_.size() + 1));
    std::size_t mask = slots_.size() - 1;
    std::size_t i = hash(name) & mask;
    for (; slots_[i]; i = (i + 1) & mask)
        if (names_[slots_[i] - 1].first == name) {
            if (had) *had = names_[slots_[i] - 1].second;
            return false;
        }
    names_.emplace_back(name, value);
    slots_[i] = static_cast<std::uint32_t>(names_.size());
    return true;
}

void NameTable::truncate(std::size_t n) {
    if (n >= names_.size()) return;
    names_.resize(n);
    std::fill(slots_.begin(), slots_.end(), 0);
    std::size_t mask = slots_.size() - 1;
    for (std::size_t k = 0; k < names_.size(); ++k) {
        std::size_t i = hash(names_[k].first) & mask;
        while (slots_[i]) i = (i + 1) & mask;
        slots_[i] = static_cast<std::uint32_t>(k + 1);
    }
}

const std::uint32_t* NameTable::find(sv name) const {
    if (slots_.empty()) return nullptr;
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash(name) & mask; slots_[i]; i = (i + 1) & mask)
        if (names_[slots_[i] - 1].first == name) return &names_[slots_[i] - 1].second;
    return nullptr;
}

const Names* CommandEntry::subcommand(sv s) const {
    const std::uint32_t* g = subcommands.find(s);
    return g ? &groups[*g] : nullptr;
}

const builtin::Entry* Knowledge::builtin_entry(sv name) const {
    std::size_t mask = builtin::name_slot_count - 1;
    for (std::size_t i = hash(name) & mask; builtin::name_slots[i]; i = (i + 1) & mask) {
        const builtin::Name& n = builtin::names[builtin::name_slots[i] - 1];
        if (n.name != name) continue;
        const builtin::Entry& e = builtin::entries[n.entry];
        return replaced_[e.file] ? nullptr : &e;
    }
    return nullptr;
}

const CommandEntry* Knowledge::parsed_builtin(std::uint32_t id) const {
    if (parsed_at_[id] >= 0) return &parsed_[static_cast<std::size_t>(parsed_at_[id])];
    const builtin::Entry& be = builtin::entries[id];
    const builtin::File& f = builtin::files[be.file];
    CommandEntry& e = parsed_.emplace_back();
    e.file = f.name;
    e.path = f.name;
    e.index = be.index;
    Reader r(f.text.substr(be.begin, be.end - be.begin), decoded_);
    std::vector<std::pair<sv, std::uint32_t>> names;
    const Path commands{&root, "commands"};
    try {
        read_entry(r, Path{&commands, {}, be.index}, e, names, id);
        r.end();
    } catch (Fail& fail) {
        parsed_.pop_back();
        throw std::runtime_error("built-in " + std::string(f.name) + ": " + fail.error.one_line());
    }
    parsed_at_[id] = static_cast<std::int32_t>(parsed_.size() - 1);
    return &e;
}

const CommandEntry* Knowledge::find(sv name) const {
    if (const std::uint32_t* e = names_.find(name)) return &entries_[*e];
    const builtin::Entry* b = builtin_entry(name);
    return b ? parsed_builtin(static_cast<std::uint32_t>(b - builtin::entries)) : nullptr;
}

const CommandEntry* Knowledge::find_prefix(sv name) const {
    for (const auto& [p, e] : prefixes_)
        if (name.substr(0, p.size()) == p) return &entries_[e];
    for (std::size_t j = 0; j < builtin::prefix_count; ++j) {
        const builtin::Name& p = builtin::prefixes[j];
        if (name.substr(0, p.name.size()) == p.name && !replaced_[builtin::entries[p.entry].file])
            return parsed_builtin(p.entry);
    }
    return nullptr;
}

Status Knowledge::check_builtin() {
    Knowledge k;
    k.replaced_.assign(builtin::file_count, true);  // each is checked as if it were an operator's
    for (std::size_t i = 0; i < builtin::file_count; ++i)
        if (auto s = k.add(std::string(builtin::files[i].text), "builtin/" + std::string(builtin::files[i].name)); !s)
            return s;
    // and every entry as start-up parses it, alone, found by each of its
    // names through the generated hash table
    Knowledge lazy;
    for (std::size_t i = 0; i < builtin::name_count; ++i)
        if (lazy.builtin_entry(builtin::names[i].name) != &builtin::entries[builtin::names[i].entry])
            return input_error("built-in command data", "the name table does not find '" +
                                                            std::string(builtin::names[i].name) + "'");
    for (std::uint32_t id = 0; id < builtin::entry_count; ++id) {
        try {
            lazy.parsed_builtin(id);
        } catch (const std::runtime_error& e) {
            return input_error("built-in command data", e.what());
        }
    }
    return ok();
}

Status Knowledge::add(std::string text, const std::string& file) {
    std::size_t before = entries_.size(), texts_before = texts_.size(), decoded_before = decoded_.size(),
                names_before = names_.size();
    sv body = texts_.emplace_back(std::move(text));
    sv path = texts_.emplace_back(file);
    sv base = path.substr(path.rfind('/') + 1);
    Reader r(body, decoded_);
    std::vector<std::pair<sv, std::uint32_t>> names;  // added only once the whole file is good
    std::vector<std::pair<sv, std::uint32_t>> prefixes;
    names.reserve(body.size() / 16);
    // One entry per "names" key at most: reserved once, never moved while read.
    std::size_t keys = 0;
    for (std::size_t at = body.find("\"names\""); at != sv::npos; at = body.find("\"names\"", at + 7)) ++keys;
    entries_.reserve(entries_.size() + keys);
    try {
        bool has_version = false, has_commands = false;
        r.object(root, [&](sv key, const Path& p) {
            if (key == "version") {
                has_version = true;
                if (r.integer(p) != 1) r.fail(p, "must be 1");
            } else if (key == "description") {
                r.string(p);
            } else if (key == "commands") {
                has_commands = true;
                r.array(p, [&](const Path& at) {
                    auto self = static_cast<std::uint32_t>(entries_.size());
                    CommandEntry& e = entries_.emplace_back();  // no reference to it outlives this entry
                    e.file = base;
                    e.path = path;
                    e.index = entries_.size() - 1 - before;
                    read_entry(r, at, e, names, self, &prefixes);
                });
            } else {
                r.fail(p, "unknown field");
            }
        });
        r.end();
        if (!has_version) r.fail(Path{&root, "version"}, "is required (1)");
        if (!has_commands) r.fail(Path{&root, "commands"}, "is required (an array of entries)");
        // A name listed twice (here or in an earlier file). Nothing of a file
        // that fails is kept: its names are taken out again below.
        names_.reserve(names_before + names.size());
        // A file named like a shipped one replaces it: its names are not
        // the shipped file's a second time.
        std::size_t replaces = builtin::file_count;
        for (std::size_t i = 0; i < builtin::file_count; ++i)
            if (builtin::files[i].name == base) replaces = i;
        for (const auto& [n, e] : names) {
            std::uint32_t had = 0;
            if (!names_.insert(n, e, &had))
                throw Fail{input_error("commands[" + std::to_string(entries_[e].index) + "].names",
                                       "'" + std::string(n) + "' is already listed in " + std::string(entries_[had].file) +
                                           " (a name is listed once)")};
            if (const builtin::Entry* b = builtin_entry(n); b && b->file != replaces)
                throw Fail{input_error("commands[" + std::to_string(entries_[e].index) + "].names",
                                       "'" + std::string(n) + "' is already listed in " +
                                           std::string(builtin::files[b->file].name) + " (a name is listed once)")};
        }
        // Prefixes never overlap: which entry a name goes to must not depend
        // on the order they are tried in.
        auto overlap = [](sv a, sv b) { return a.substr(0, b.size()) == b || b.substr(0, a.size()) == a; };
        for (std::size_t i = 0; i < prefixes.size(); ++i) {
            // Named, not a structured binding: clang 14 (the fuzz build)
            // cannot capture one in a lambda.
            const sv p = prefixes[i].first;
            const auto e = prefixes[i].second;
            auto refuse = [&](sv other, sv where) {
                throw Fail{input_error("commands[" + std::to_string(entries_[e].index) + "].prefixes",
                                       "'" + std::string(p) + "' overlaps the prefix '" + std::string(other) + "' of " +
                                           std::string(where) + " (prefixes never overlap)")};
            };
            for (std::size_t j = 0; j < i; ++j)
                if (overlap(p, prefixes[j].first)) refuse(prefixes[j].first, base);
            for (const auto& [q, f] : prefixes_)
                if (overlap(p, q)) refuse(q, entries_[f].file);
            for (std::size_t j = 0; j < builtin::prefix_count; ++j) {
                const builtin::Entry& b = builtin::entries[builtin::prefixes[j].entry];
                if (!replaced_[b.file] && b.file != replaces && overlap(p, builtin::prefixes[j].name))
                    refuse(builtin::prefixes[j].name, builtin::files[b.file].name);
            }
        }
        prefixes_.insert(prefixes_.end(), prefixes.begin(), prefixes.end());
        if (replaces < builtin::file_count) replaced_[replaces] = true;
    } catch (Fail& f) {
        names_.truncate(names_before);
        entries_.resize(before);
        decoded_.resize(decoded_before);
        f.error.subject = "'" + file + "': " + f.error.subject;
        texts_.resize(texts_before);
        return f.error;
    }
    return ok();
}

namespace {

// The file in one read of its size (io::read_input reads through a 64 KiB
// buffer on the stack: more pages touched at every start).
cc::Result<std::string> read_whole(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return io::read_input(path);  // its errors name the file
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 24)) {
        ::close(fd);
        return input_error("'" + path + "'", "is not a regular file of at most 16 MiB");
    }
    std::string out(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < out.size()) {
        ssize_t n = ::read(fd, out.data() + got, out.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (got != out.size()) return io_error("'" + path + "'", "changed while it was read", EIO);
    return out;
}

}  // namespace

cc::Result<Knowledge> Knowledge::load(const std::string& dir) {
    Knowledge k;
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d && errno == ENOENT) return k;  // no operator files: the shipped data alone
    if (!d) return input_error("command data directory '" + dir + "'", "cannot be read (CC_DATA_DIR names its parent)");
    std::vector<std::string> files;
    while (const dirent* ent = ::readdir(d.get())) {
        std::size_t n = std::strlen(ent->d_name);
        if (n > 5 && ent->d_name[0] != '.' && std::strcmp(ent->d_name + n - 5, ".json") == 0) files.emplace_back(ent->d_name);
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        std::string path = dir + "/" + f;
        auto text = read_whole(path);
        if (!text) return text.error();
        if (auto s = k.add(std::move(*text), path); !s) return s.error();
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
