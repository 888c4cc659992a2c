// What cc-classify knows about commands, read from data files at start:
// share/cc/classify/*.json, one file per family of tools (cc-classify(1),
// COMMAND DATA). An operator adds a tool by adding an entry or a file; no
// rebuild. A file that does not parse, has an unknown field, names an
// unknown class or reader, or lists a name a second time is an input error
// naming the file and the field.
//
//   {"version": 1, "description": "...", "commands": [
//     {"names": ["ls", "cat"], "readOnly": true},
//     {"names": ["ping"], "classes": ["network_access"]},
//     {"names": ["sudo"], "reader": "sudo"},
//     {"names": ["apk"], "subcommands": [{"names": ["add", "del"], "classes": ["install_package"]},
//                                        {"names": ["info"], "classes": []}],
//      "bare": [], "otherwise": ["run_code"], "valueOptions": {"short": "X", "long": ["--root"]}}]}
//
// "reader" names built-in code that reads the command's arguments (which
// option takes a value, where the wrapped command starts); "subcommands"
// without a reader maps the first word after the options to its classes.
//
// cc-classify reads all of it on every start, so it is read in one pass with
// no document tree: the strings are views into the files' text, the names go
// into open-addressing hash tables (knowledge.cpp).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::classify {

using Names = std::vector<std::string_view>;

// Name -> index, open addressing over a dense array: small, so that a
// process that reads it once touches few pages (each first touch is a page
// fault, which costs more than the hashing).
class NameTable {
public:
    void reserve(std::size_t n);
    // False (and nothing stored) when the name is there already; `*had` is its value.
    bool insert(std::string_view name, std::uint32_t value, std::uint32_t* had = nullptr);
    const std::uint32_t* find(std::string_view name) const;
    std::size_t size() const { return names_.size(); }
    // Back to the first `n` names inserted (a file that failed is taken out).
    void truncate(std::size_t n);

private:
    std::vector<std::pair<std::string_view, std::uint32_t>> names_;
    std::vector<std::uint32_t> slots_;  // 0: empty; else 1 + index in names_
};

struct CommandEntry {
    std::string_view file;    // "git.json", for --explain
    std::string_view path;    // the file as it was read, for errors
    std::size_t index = 0;    // in the file's "commands"
    std::string_view name;    // the entry's first name, for --explain
    bool read_only = false;
    Names classes;            // given whatever the arguments
    int reader = -1;          // built-in reader, or -1
    bool has_subcommands = false;
    Names bare;                          // no subcommand given
    Names otherwise;                     // a subcommand not listed (unless given: run_code)
    bool has_otherwise = false;
    std::string_view short_value_options;  // "oc": -o and -c take a value
    std::vector<std::string> long_value_options;

    // The classes of a listed subcommand (empty: it only reads), or null.
    const Names* subcommand(std::string_view s) const;

    std::vector<Names> groups;  // one per "subcommands" group
    NameTable subcommands;      // -> index in groups
};

class Knowledge {
public:
    const CommandEntry* find(std::string_view name) const;
    std::size_t size() const { return names_.size(); }

    // Every *.json file of `dir`, in name order.
    static cc::Result<Knowledge> load(const std::string& dir);
    // One file's text, as if it were `file` in the directory (tests). Nothing
    // of a file that fails is kept (its entries are checked whole before any
    // of its names is added).
    Status add(std::string text, const std::string& file);

private:
    // Deques: what the views point into never moves as more is added.
    std::deque<std::string> texts_;    // the files, and their paths
    std::deque<std::string> decoded_;  // strings that had escapes
    std::vector<CommandEntry> entries_;
    NameTable names_;  // -> index in entries_
};

// The data directory cc-classify reads: $CC_DATA_DIR/classify, else the
// installed one (cc::io::data_dir()).
std::string knowledge_dir();

// The knowledge classify() uses. Loaded from knowledge_dir() on first use;
// a tool calls install_knowledge() at start to report a bad file as bad input
// (exit 2) before it reads anything. The first use without a successful
// install throws std::runtime_error on a bad file: never a classification
// with part of the knowledge missing.
const Knowledge& knowledge();
Status install_knowledge(const std::string& dir);
void install_knowledge(Knowledge k);

}  // namespace cc::classify
