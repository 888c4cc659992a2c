// The host side of the macOS backend (cc_sys): the per-session temporary
// directory, and the `log stream` child that reads the session's Seatbelt
// refusals (seatbelt_log.hpp parses its lines).
//
// The launcher, for a plan whose `seatbelt` is set, before it starts the command:
//   if (auto st = seatbelt_prepare(plan); !st) -> fail(st.error())
//   auto tap = start_seatbelt_tap(seatbelt_tag(plan.spec.sessionId, plan.runtimeDir));  // waits until attached
//   if (!tap) -> log("note: no Seatbelt violation events: " + tap.error().one_line()), report it, run on
//   SeatbeltLogReader reader(tag);  feed tap->pending's lines, then every line read from tap->fd
//   ... after the command has ended: stop_seatbelt_tap(*tap);
#pragma once

#include <sys/types.h>

#include <string>

#include "cc/core/result.hpp"
#include "cc/sandbox/plan.hpp"

namespace cc::sandbox {

// Creates <runtimeDir>/tmp (mode 0700), the command's TMPDIR.
Status seatbelt_prepare(const Plan& plan);

struct SeatbeltTap {
    pid_t pid = -1;
    int fd = -1;          // the read end of log's stdout (close-on-exec)
    std::string pending;  // bytes already read past the banner line
};

// Starts `log stream` (seatbelt_log_argv) and waits, up to wait_ms, for its
// first line: `log` prints "Filtering the log data using ..." once the stream
// is attached, and only refusals after that are seen. Its stderr goes to
// /dev/null; an error when it cannot start or says nothing in time (the child
// is then stopped).
Result<SeatbeltTap> start_seatbelt_tap(const std::string& tag, const std::string& log_exe = "/usr/bin/log",
                                       int wait_ms = 5000);

// Whether sandbox-exec can apply a profile here at all: it runs once with a
// trivial profile, `sandbox-exec -p "(version 1)(allow default)" /usr/bin/true`,
// before the session's run. macOS does not stack Seatbelt profiles, so
// inside another sandbox it fails with "sandbox-exec: sandbox_apply:
// Operation not permitted"; that becomes an error whose one line is the
// reason (seatbelt_apply_failure), for exit 125. Its stdin and stdout are
// /dev/null; its first stderr line is the reason for any other failure.
// Waits up to wait_ms, then stops it (an error too).
Status seatbelt_preflight(const std::string& sandbox_exec = "/usr/bin/sandbox-exec", int wait_ms = 5000);

// SIGTERM to the tap's own pid, reaped, fd closed. Safe on an empty tap.
void stop_seatbelt_tap(SeatbeltTap& tap);

}  // namespace cc::sandbox
