// The macOS system-log side of the Seatbelt backend: the kernel's tagged
// refusals, as `log stream --style ndjson` prints them, become violation
// events (de-duplicated, rate-limited), and the tap that runs `log stream`
// (here a stand-in program, since this host has no /usr/bin/log).
#include "harness.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cc/sandbox/seatbelt_log.hpp"
#include "cc/sandbox/seatbelt_tap.hpp"

using namespace cc::sandbox;

namespace {
const std::string k_tag = "CCWRAP_0123456789ABCDEF";
std::string event(const std::string& message, long pid = 0, const std::string& type = "logEvent") {
    nlohmann::json j = {{"traceID", 1234}, {"eventMessage", message}, {"eventType", type},
                        {"processImagePath", pid == 0 ? "/kernel" : "/usr/bin/logger"}, {"processID", pid},
                        {"subsystem", ""}, {"category", ""}, {"timestamp", "2026-12-03 17:00:00.000000+0000"}};
    return j.dump();
}
}  // namespace

TEST_CASE("seatbelt log: the kernel's refusals become violation events", "[seatbelt][log]") {
    struct Row {
        std::string message;
        const char* action;
        const char* target;
        const char* process;
        long pid;
    };
    const Row rows[] = {
        {"Sandbox: touch(4242) deny(1) file-write-create /private/tmp/x\n" + k_tag, "write", "/private/tmp/x", "touch", 4242},
        {"Sandbox: cat(7) deny(1) file-read-data /Users/u/.ssh/id ed25519\n" + k_tag, "read", "/Users/u/.ssh/id ed25519", "cat", 7},
        {"Sandbox: node(99) deny(3) network-outbound 1.1.1.1:443\n" + k_tag, "network", "network-outbound 1.1.1.1:443", "node", 99},
        {"Sandbox: open(12) deny(1) mach-lookup com.apple.coreservices.launchservicesd\n" + k_tag, "unknown",
         "mach-lookup com.apple.coreservices.launchservicesd", "open", 12},
        {"Sandbox: Foo Helper (Plugin)(31) deny(1) process-exec* /usr/bin/osascript\n" + k_tag, "exec", "/usr/bin/osascript",
         "Foo Helper (Plugin)", 31},
        {"Sandbox: sh(5) deny(1) file-write-unlink /Users/u/cc\n" + k_tag, "write", "/Users/u/cc", "sh", 5},
        {"Sandbox: bash(8) System Policy: deny(1) file-write-data /x\n" + k_tag, "write", "/x", "bash", 8},
        {"Sandbox: kill(6) deny(1) signal\n" + k_tag, "unknown", "signal", "kill", 6},
    };
    for (const auto& r : rows) {
        INFO(r.message);
        auto d = parse_seatbelt_log_line(event(r.message), k_tag);
        REQUIRE(d);
        CHECK(d->process == r.process);
        CHECK(d->pid == r.pid);
        auto v = seatbelt_violation(*d);
        CHECK(v.action == r.action);
        CHECK(v.target == r.target);
        CHECK(v.raw == r.message.substr(0, r.message.size() - k_tag.size() - 1));
    }
    // Not ours, or not the kernel's: nothing.
    CHECK_FALSE(parse_seatbelt_log_line(event("Sandbox: touch(1) deny(1) file-write-create /x\nCCWRAP_FFFFFFFFFFFFFFFF"), k_tag));
    CHECK_FALSE(parse_seatbelt_log_line(event("Sandbox: touch(1) deny(1) file-write-create /x\n" + k_tag, 4321), k_tag));
    CHECK_FALSE(parse_seatbelt_log_line(event("Sandbox: touch(1) deny(1) file-write-create /x\n" + k_tag, 0, "lossEvent"), k_tag));
    CHECK_FALSE(parse_seatbelt_log_line(event("kernel: something else\n" + k_tag), k_tag));
    CHECK_FALSE(parse_seatbelt_log_line(event("Sandbox: touch(x) deny(1) file-write-create /x\n" + k_tag), k_tag));
    CHECK_FALSE(parse_seatbelt_log_line(event("Sandbox: touch(1) deny(1) file-write-create /x\nSandbox: y(2) deny(1) file-read-data /y\n" + k_tag), k_tag));
    CHECK_FALSE(parse_seatbelt_log_line("Filtering the log data using \"processID == 0\"", k_tag));
    CHECK_FALSE(parse_seatbelt_log_line("{\"eventMessage\": 3, \"processID\": 0}", k_tag));
    CHECK_FALSE(parse_seatbelt_log_line("{not json", k_tag));
    CHECK_FALSE(parse_seatbelt_log_line(event("Sandbox: touch(1) deny(1) file-write-create /x\n" + k_tag), ""));
    auto argv = seatbelt_log_argv(k_tag);
    CHECK(argv == std::vector<std::string>{"/usr/bin/log", "stream", "--style", "ndjson", "--level", "default", "--predicate",
                                           "processID == 0 AND eventMessage ENDSWITH \"" + k_tag + "\""});
}

TEST_CASE("seatbelt log: de-duplicated, rate-limited, drops counted", "[seatbelt][log]") {
    using Clock = SeatbeltLogReader::Clock;
    SeatbeltLogReader r(k_tag, 3, 1.0);
    Clock::time_point t0{};
    auto line = [](const std::string& path, int pid) {
        return event("Sandbox: sh(" + std::to_string(pid) + ") deny(1) file-write-create " + path + "\n" + k_tag);
    };
    CHECK(r.feed(line("/a", 1), t0));
    CHECK_FALSE(r.feed(line("/a", 2), t0));  // the same refusal from another pid: one event
    CHECK(r.feed(line("/b", 1), t0));
    CHECK(r.feed(line("/c", 1), t0));
    CHECK_FALSE(r.feed(line("/d", 1), t0));  // the burst is spent
    CHECK_FALSE(r.feed(line("/e", 1), t0 + std::chrono::milliseconds(500)));
    auto later = r.feed(line("/f", 1), t0 + std::chrono::seconds(2));  // refilled
    REQUIRE(later);
    CHECK(later->target == "/f");
    CHECK(r.feed(line("/d", 1), t0 + std::chrono::seconds(3)));  // rate-limited before, not a duplicate
    CHECK_FALSE(r.feed(event("", 0, "lossEvent"), t0));
    CHECK_FALSE(r.feed("--- log: 12 messages dropped", t0));
    CHECK_FALSE(r.feed("Filtering the log data using \"x\"", t0));
    CHECK(r.stats().emitted == 5);
    CHECK(r.stats().duplicates == 1);
    CHECK(r.stats().rate_limited == 2);
    CHECK(r.stats().log_dropped == 2);
    // The memory of seen refusals is bounded: the oldest is forgotten first.
    SeatbeltLogReader small(k_tag, 100, 100, 2);
    CHECK(small.feed(line("/1", 1), t0));
    CHECK(small.feed(line("/2", 1), t0));
    CHECK(small.feed(line("/3", 1), t0));
    CHECK(small.feed(line("/1", 1), t0));
    CHECK_FALSE(small.feed(line("/3", 1), t0));
}

// The tap is a real child process; here a stand-in for /usr/bin/log that
// records its argv, prints the banner and one refusal, then waits.
TEST_CASE("seatbelt log: the tap starts log stream, waits for its banner, and stops it", "[seatbelt][log]") {
    std::string dir = cc::test::scratch_dir() + "/tap";
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    std::string fake = dir + "/log", args = dir + "/args";
    std::string ev = event("Sandbox: touch(42) deny(1) file-write-create /private/tmp/x\n" + k_tag);
    {
        std::ofstream f(fake);
        f << "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" << args << "'\n"
          << "echo 'Filtering the log data using \"processID == 0\"'\n"
          << "cat <<'EOF'\n" << ev << "\nEOF\n"
          << "exec sleep 600\n";
    }
    REQUIRE(::chmod(fake.c_str(), 0755) == 0);
    auto tap = start_seatbelt_tap(k_tag, fake);
    REQUIRE(tap);
    REQUIRE(tap->pid > 0);
    // Everything after the banner reaches the reader, in the pending bytes or the pipe.
    std::string data = tap->pending;
    while (data.find('\n') == std::string::npos) {
        char buf[4096];
        ssize_t n = ::read(tap->fd, buf, sizeof buf);
        REQUIRE(n > 0);
        data.append(buf, static_cast<std::size_t>(n));
    }
    SeatbeltLogReader reader(k_tag);
    auto v = reader.feed(data.substr(0, data.find('\n')), SeatbeltLogReader::Clock::now());
    REQUIRE(v);
    CHECK(v->action == "write");
    CHECK(v->target == "/private/tmp/x");
    std::ifstream a(args);
    std::string got((std::istreambuf_iterator<char>(a)), {});
    CHECK(got == "stream\n--style\nndjson\n--level\ndefault\n--predicate\nprocessID == 0 AND eventMessage ENDSWITH \"" + k_tag + "\"\n");
    pid_t pid = tap->pid;
    stop_seatbelt_tap(*tap);
    CHECK(tap->pid == -1);
    CHECK(tap->fd == -1);
    CHECK(::kill(pid, 0) == -1);  // reaped: the pid is gone
    // A log that never attaches is an error, not a silent gap.
    std::string mute = dir + "/mute";
    std::ofstream(mute) << "#!/bin/sh\nexit 3\n";
    REQUIRE(::chmod(mute.c_str(), 0755) == 0);
    auto none = start_seatbelt_tap(k_tag, mute);
    REQUIRE_FALSE(none);
    CHECK(none.error().one_line() == mute + ": ended before it attached; Seatbelt refusals of this run are not reported");
    auto missing = start_seatbelt_tap(k_tag, dir + "/nosuch");
    REQUIRE_FALSE(missing);
}

