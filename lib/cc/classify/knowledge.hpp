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
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::classify {

struct CommandEntry {
    CommandEntry() = default;
    CommandEntry(const CommandEntry&) = delete;  // Sub holds views into the entry's own storage
    CommandEntry& operator=(const CommandEntry&) = delete;

    std::string file;   // "git.json", for --explain
    std::string path;   // the file as it was read, for errors
    std::size_t index = 0;  // in the file's "commands"
    std::string name;   // the entry's first name, for --explain
    bool read_only = false;
    std::vector<std::string> classes;  // given whatever the arguments
    int reader = -1;                   // built-in reader, or -1
    struct Sub {
        std::string_view name;  // in sub_names
        const std::vector<std::string>* classes;  // empty: only reads
    };
    std::vector<Sub> subcommands;  // sorted by name
    bool has_subcommands = false;
    std::vector<std::string> names;                  // as listed
    std::vector<std::string> sub_names;              // storage of Sub::name
    std::vector<std::vector<std::string>> sub_classes;  // storage of Sub::classes, one per group
    std::vector<std::string> bare;                     // no subcommand given
    std::vector<std::string> otherwise = {"run_code"};  // a subcommand not listed
    std::string short_value_options;                   // "oc": -o and -c take a value
    std::vector<std::string> long_value_options;

    const Sub* subcommand(std::string_view s) const;
};

class Knowledge {
public:
    const CommandEntry* find(std::string_view name) const;
    std::size_t size() const { return names_.size(); }

    Knowledge() = default;
    Knowledge(Knowledge&&) = default;
    Knowledge& operator=(Knowledge&&) = default;

    // Every *.json file of `dir`, in name order.
    static cc::Result<Knowledge> load(const std::string& dir);
    // One file's text, as if it were `file` in the directory (tests).
    Status add(const std::string& text, const std::string& file);

private:
    // Entries are held by pointer so that the names (string_views into
    // CommandEntry::names) stay put as entries are added.
    std::vector<std::unique_ptr<CommandEntry>> entries_;
    std::unordered_map<std::string_view, const CommandEntry*> names_;
    Status parse(const std::string& text, const std::string& file);
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
