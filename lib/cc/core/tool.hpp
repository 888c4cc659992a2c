// The shared shell of every cc-<tool> main(): it owns signals, stdio, uncaught
// errors and EPIPE, so each main.cpp is options + one library call.
//
//   int main(int argc, char** argv) {
//       return cc::tool::run("cc-probe", [&] {
//           CLI::App app{"..."};  ... CLI11_PARSE-like via cc::tool::parse(app, argc, argv)
//           return exit_code;
//       });
//   }
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "cc/core/result.hpp"

namespace cc::tool {

// Exit statuses shared by all tools (ARCHITECTURE.md).
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;
inline constexpr int exit_usage = 2;

// Runs body(). Ignores SIGPIPE so a closed stdout surfaces as EPIPE, which is
// answered with exit 0 (a reader that stopped reading is not an error).
// Uncaught exceptions become "<name>: error: ..." and exit 2 for CLI11 parse
// errors / exit 1 otherwise.
// `on_exception` is the status then (cc-wrap's is 125, its own failure).
int run(const char* name, const std::function<int()>& body, int on_exception = exit_failure);

// Print "<name>: <error.one_line()>" on stderr; return 2 for input errors and
// `otherwise` for the rest.
int report(const char* name, const Error& e, int otherwise = exit_failure);

// Write a line to stdout and flush; returns false when stdout is gone (EPIPE).
bool emit_line(const std::string& line);

// For a tool that holds a secret (cc-egress: credentials, the session CA's
// key, the proxy token; cc-pushgate: the push token). Linux: not dumpable,
// so no other process of the same uid may trace it or read its memory,
// environment or descriptors through /proc, and no core file is written
// (root still may). Returns false when the kernel refused.
bool keep_memory_private();

// --quiet (every tool): no log lines on stderr when all goes well. Errors are
// printed regardless; log() checks the switch so a tool's notes need not.
void set_quiet(bool on);
bool quiet();
// A line as it may reach a terminal or a log: control bytes and bytes that
// are not UTF-8 become \xNN (a tab stays), so a hostile name can neither
// split the line nor drive the terminal.
std::string printable(std::string_view text);
// "<name>: <printable(line)>" on stderr unless --quiet.
void log(const char* name, const std::string& line);

// --log-format (every tool): plain, or time, which starts every line the
// tool writes on stderr with its UTC time (2026-12-04T06:20:01.123Z).
enum class LogFormat { plain, time };
void set_log_format(LogFormat f);
// What starts a stderr line: "[time ]<name>: ".
std::string log_prefix(const char* name);

}  // namespace cc::tool
