// Test helpers shared by every test binary.
//
//   CC_SKIP("needs root to mount a loop device");   // inside a TEST_CASE body
//   auto r = cc::test::run({bin("cc-probe"), "--json"}, "stdin text");
//   REQUIRE(r.status == 0);
//
// Skips are counted as skipped, never as passed: the closing line of
// `make test` says `N passed, N failed, N skipped`.
#pragma once

#include <catch2/catch.hpp>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cc::test {

void mark_skipped(const std::string& reason);

// Path of a built tool: $CC_BIN_DIR/<name>/<name> layout-agnostic lookup.
std::string bin(const std::string& tool);
// The source tree (for share/cc, fixtures) and a scratch dir unique to this run.
std::string source_dir();
std::string scratch_dir();  // created on first use, removed at exit

struct RunResult {
    int status = -1;       // exit status, or 128+N when killed by signal N
    std::string out;
    std::string err;
};

struct RunOptions {
    std::string input;
    std::map<std::string, std::string> env;   // added to (or replacing) the environment
    std::vector<std::string> unset_env;
    bool clear_env = false;                    // start from an empty environment
    std::optional<std::string> cwd;
    int timeout_ms = 60000;                    // killed after this (status 128+9)
};

RunResult run(const std::vector<std::string>& argv, const RunOptions& opts = {});
RunResult run(const std::vector<std::string>& argv, const std::string& input);

bool is_root();
// PTRACE_ATTACH on `pid` from a process of its own (Python's ctypes), run
// through `as` (for example setpriv to another uid; empty: this uid):
// "attached\n" or the errno's text ("Operation not permitted\n").
std::string ptrace_attach_from(pid_t pid, const std::vector<std::string>& as = {});
bool have_program(const std::string& name);
// bubblewrap can make its namespaces here (asked once per test binary).
bool bwrap_works();

// A process of its own holding flock(LOCK_EX) on `path` (created if need
// be), as a live gateway or create holds its lock; its PID once it holds it,
// -1 when it could not. Kill it (SIGKILL) to stand for one that was killed.
pid_t hold_flock(const std::string& path);

// Compare `text` with the golden file `path` (relative to the source tree).
// With CC_UPDATE_GOLDEN set the file is rewritten instead and the test
// counts as skipped: an update run proves nothing, so it never passes.
void check_golden(const std::string& path, const std::string& text);

}  // namespace cc::test

#define CC_SKIP(reason)                     \
    do {                                    \
        ::cc::test::mark_skipped(reason);   \
        return;                             \
    } while (0)
