// libFuzzer target for the shell parser and the classifier behind it: any
// byte string must parse (or fail with an error value) and be classified
// without crashing, hanging or recursing without bound, and what parses must
// print back to source that parses to the same tree. Inputs it finds go to
// tests/shell/fuzz-regressions/ and are replayed by tests/shell/test_shell.cpp.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cc/classify/classify.hpp"
#include "cc/shell/parser.hpp"
#include "cc/shell/printer.hpp"
#include "cc/core/json_writer.hpp"

// libFuzzer's entry point (declared here: the build warns on a definition
// with external linkage and no declaration).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view line(reinterpret_cast<const char*>(data), size);
    cc::shell::Script s = cc::shell::parse(line);
    if (!s.ok && s.error.message.empty()) __builtin_trap();  // every error names itself
    if (!s.ok && s.error.offset > size) __builtin_trap();    // and points inside the input
    // parse -> print -> parse is the same tree.
    if (s.ok) {
        cc::shell::Script back = cc::shell::parse(cc::shell::print(s.root, line));
        if (!back.ok || !cc::shell::same_tree(s.root, back.root)) __builtin_trap();
    }
    static const cc::policy::Policy policy = cc::policy::default_policy();
    auto r = cc::classify::classify(line, size % 2 ? cc::policy::Mode::chat : cc::policy::Mode::plan, policy);
    // A line that does not parse is never allowed.
    if (!s.ok && r.decision == cc::policy::Decision::allow) __builtin_trap();
    auto j = cc::json::write(cc::classify::to_json(r));
    return static_cast<int>(j.size() & 0);
}
