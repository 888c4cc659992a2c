// The run's event stream, JSON Lines on stdout. Every line carries the
// sessionId and a sequence number, so a reader can spot a gap. Output chunks
// are text when valid UTF-8, else base64 "bytes" (as ripgrep's JSON printer).
//
//   cc::sandbox::EventWriter w("s1");
//   std::string line = w.line("exit", {{"exitCode", 0}});   // {"event":"exit","sessionId":"s1","seq":3,...}
//   std::string out = w.chunk("stdout", data, n);
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "cc/core/json_writer.hpp"
#include "cc/core/result.hpp"

namespace cc::sandbox {

// The UTF-8 check, base64 and string writer live in the project's one JSON
// writer; named here for the event code and its tests.
using cc::json::append_string;
using cc::json::base64;
using cc::json::utf8_valid_prefix;

class EventWriter {
public:
    explicit EventWriter(std::string sessionId) : session_(std::move(sessionId)) {}
    std::string line(std::string_view kind, nlohmann::json fields = nlohmann::json::object());
    // A stdout/stderr chunk: {"event":kind,...,"text":...} or {...,"bytes":base64}.
    std::string chunk(std::string_view kind, std::string_view data);
    // The same into a buffer the caller reuses (no allocation per chunk).
    void chunk_into(std::string& out, std::string_view kind, std::string_view data);
    std::uint64_t seq() const { return seq_; }

private:
    std::string session_;
    std::uint64_t seq_ = 0;
};

// The exit event's fields when cc-wrap's own setup failed before the command
// could start (sandbox-exec refusing its profile): status 125, endedBy
// "setup", and the reason, the same one line cc-wrap prints on stderr.
//   {"exitCode":125,"endedBy":"setup","reason":"sandbox-exec could not apply the profile: ..."}
nlohmann::json setup_failure_exit(const Error& e);

// Carries an unfinished UTF-8 sequence from one read to the next so a
// multi-byte character split by the pipe stays text.
class Utf8Carry {
public:
    // Returns the bytes to emit now (data prefixed with the carried bytes);
    // keeps up to 3 trailing bytes of an unfinished sequence.
    std::string take(std::string_view data);
    // Allocation-free form: the bytes to emit now, as a view into data or
    // into scratch (when carried bytes had to be joined).
    std::string_view take(std::string_view data, std::string& scratch);
    std::string flush() { return std::exchange(carry_, {}); }

private:
    std::string carry_;
};

}  // namespace cc::sandbox
