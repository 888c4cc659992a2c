// libFuzzer target for the shell parser: any byte string must parse (or fail
// with an error value) without crashing, hanging or recursing without bound.
// Crashes found here become regression cases in tests/shell/test_shell.cpp.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cc/shell/parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view line(reinterpret_cast<const char*>(data), size);
    cc::shell::Script s = cc::shell::parse(line);
    std::size_t words = 0;
    cc::shell::walk(s.root, [&](const cc::shell::Node& n) { words += n.words.size(); });
    if (!s.ok && s.error.message.empty()) __builtin_trap();  // every error names itself
    if (!s.ok && s.error.offset > size) __builtin_trap();    // and points inside the input
    return static_cast<int>(words & 0);
}
