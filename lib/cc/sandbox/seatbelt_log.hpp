// Seatbelt violations from the macOS system log. Every deny rule in the
// session's profile carries the session tag as its message (seatbelt.hpp);
// the kernel's Sandbox extension logs each refusal as
//
//   Sandbox: touch(4242) deny(1) file-write-create /private/tmp/x
//   CCWRAP_0123456789ABCDEF
//
// (the rule's message on the line after). `log stream --style ndjson` with
// a predicate on that tag prints one JSON object per event; this file turns
// those lines into the same violation events as on Linux, de-duplicated and
// rate-limited. Only kernel events (processID 0) count: a process inside may
// write anything to the log through os_log, the tag included, but it cannot
// log as the kernel. The profile is inherited by every child, so a tagged
// refusal is always from the command's process tree.
//
//   auto argv = seatbelt_log_argv(tag);            // start before the command
//   SeatbeltLogReader r(tag);
//   for each stdout line: if (auto v = r.feed(line, steady_clock::now())) emit(*v);
//   r.stats() -> counts for the exit event
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cc/spec/spec.hpp"

namespace cc::sandbox {

// /usr/bin/log stream --style ndjson --level default --predicate
//   'processID == 0 AND eventMessage ENDSWITH "<tag>"'
std::vector<std::string> seatbelt_log_argv(const std::string& tag, const std::string& log_exe = "/usr/bin/log");

// One refusal, as the kernel worded it.
struct SeatbeltDenial {
    std::string process;    // "touch"
    long pid = 0;
    std::string operation;  // "file-write-create", "mach-lookup", "network-outbound", ...
    std::string target;     // a path, a service name, an address; may be empty
    std::string message;    // "Sandbox: touch(4242) deny(1) file-write-create /private/tmp/x"
};

// One line of `log stream --style ndjson` output -> the refusal it reports,
// when it is a kernel Sandbox event carrying this tag. Other lines (the
// "Filtering the log data" banner, events without the tag, events from user
// processes, malformed JSON): nullopt.
std::optional<SeatbeltDenial> parse_seatbelt_log_line(const std::string& line, const std::string& tag);

// The violation event: action read, write, exec, network or unknown (Mach,
// signal, sysctl, ...); target the path, or "<operation> <target>" for
// non-file operations so the event says what was asked; raw the message.
spec::Violation seatbelt_violation(const SeatbeltDenial& d);

// Is this a line in which `log` says it dropped events (it prints a notice
// line when its buffer overflows)?
bool seatbelt_log_drop_notice(const std::string& line);

// Parses, de-duplicates (same operation on the same target, whatever the
// pid: a retry loop is one event) and rate-limits (a burst of `burst` events,
// then `per_second` more each second; the rest are counted, not emitted).
class SeatbeltLogReader {
public:
    using Clock = std::chrono::steady_clock;
    explicit SeatbeltLogReader(std::string tag, std::size_t burst = 64, double per_second = 16,
                               std::size_t max_remembered = 4096);

    std::optional<spec::Violation> feed(const std::string& line, Clock::time_point now);

    struct Stats {
        std::size_t emitted = 0;
        std::size_t duplicates = 0;    // same operation and target as an earlier one
        std::size_t rate_limited = 0;  // over the rate: counted, not emitted
        std::size_t log_dropped = 0;   // notices from `log` itself that it lost events
    };
    const Stats& stats() const { return stats_; }

private:
    std::string tag_;
    double burst_, per_second_, tokens_;
    std::optional<Clock::time_point> last_;
    std::size_t max_remembered_;
    std::set<std::string> seen_;
    std::deque<std::string> order_;
    Stats stats_;
};

}  // namespace cc::sandbox
