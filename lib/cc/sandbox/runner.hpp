// The Runner: one asio loop over a launched sandbox's pipes, bubblewrap's
// status fd, the session's cc-egress, signals and the timeout
// (launch_parts.hpp: run_plan). Internal to the sandbox library; its parts:
//   runner.cpp         spawning the plan, signals, the timeout, the exit event
//   runner_egress.cpp  the fd-handover and the session's cc-egress (its lines,
//                      its death, its restart)
//   runner_streams.cpp the command's output as events, the pty, bubblewrap's
//                      status line, the Seatbelt log
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/json_reader.hpp"
#include "cc/fs/unique_fd.hpp"
#include "cc/sandbox/events.hpp"
#include "cc/sandbox/launch_parts.hpp"
#include "cc/sandbox/plan.hpp"
#include "cc/sandbox/seatbelt_log.hpp"
#include "cc/sandbox/seatbelt_tap.hpp"
#include "cc/sandbox/supervisor.hpp"
#include "cc/sandbox/violation.hpp"

namespace cc::sandbox::detail {

class Runner {
public:
    Runner(const Plan& plan, const WrapRequest& rq, Egress* eg, SeatbeltTap* tap);
    ~Runner();
    Runner(const Runner&) = delete;
    Runner& operator=(const Runner&) = delete;

    // Spawns the plan's argv, serves it to the end; the exit status.
    int run();

private:
    using json = nlohmann::json;
    using Stream_descriptor = boost::asio::posix::stream_descriptor;

    // runner.cpp
    void start_supervisor(int sock);
    void read_each(std::unique_ptr<Stream_descriptor>& sd, std::function<void()>& loop, int fd,
                   std::function<void(std::string_view)> feed, std::function<void()> ended = {});
    static std::optional<std::string> read_line(int fd, std::string& buf, int ms);
    void emit(const std::string& line);
    void kill_all();
    void forward(int sig);
    void wait_signal();
    void reap();
    void finish_if_done();

    // runner_egress.cpp
    Status hand_over_listeners(int status_fd);
    void watch_inbox(int fd);
    void handed_egress_gone();
    void last_inbox_lines();
    Error egress_gone(const std::string& why);
    void watch_egress(int fd);
    void egress_lines(std::string_view data);
    void watch_egress_log(int fd);
    void egress_died();
    Status restart_egress();
    void egress_failed(const std::string& why);
    static constexpr int k_egress_restarts = 3;  // then the run ends (125, endedBy "egress")

    // runner_streams.cpp
    // Bigger pipes, bigger reads: fewer wake-ups and event lines per MB.
    static constexpr std::size_t k_chunk = 256 * 1024;
    struct Stream {
        std::unique_ptr<Stream_descriptor> sd;
        std::vector<char> buf = std::vector<char>(k_chunk);
        std::string scratch, line;
        Utf8Carry carry;
        LineSplitter lines;
        std::string kind;
        bool violations = false;
    };
    void watch_seatbelt_log();
    void seatbelt_line(const std::string& line);
    void emit_chunk(Stream& s, std::string_view data);
    void read_stream(int fd, const char* kind, bool violations);
    void on_line(const std::string& line);
    void emit_violation(const spec::Violation& v);
    void pump(std::shared_ptr<Stream> s);
    void relay_stdin(int master);
    void read_status(int fd);
    void status_loop();
    json adopt_status_line(const std::string& line);
    static pid_t parent_of(pid_t p);

    const Plan& plan_;
    const WrapRequest& rq_;
    Egress* eg_;
    SeatbeltTap* tap_;
    std::optional<SeatbeltLogReader> reader_;
    std::unique_ptr<WriteSupervisor> supervisor_;
    LineSplitter tap_lines_{65536};
    EventWriter ev_;
    boost::asio::io_context io_;
    boost::asio::signal_set sigs_;
    boost::asio::steady_timer timeout_, grace_, drain_;
    std::unique_ptr<Stream_descriptor> status_sd_, egress_sd_, egress_log_sd_, stdin_sd_, inbox_sd_, tap_sd_;
    std::function<void()> egress_loop_, egress_log_loop_, stdin_loop_, inbox_loop_, tap_loop_;  // each read's next read
    std::array<char, 512> status_buf_{};
    std::string status_text_;
    pid_t pid_ = -1, pid1_ = -1;
    // The sandbox's PID 1 (pidfd_open): readable once it and, through it,
    // every process of the sandbox's PID namespace are gone.
    cc::fs::UniqueFd pid1_fd_;
    int status_ = exit_own_failure;
    std::optional<int> failure_;
    int inbox_conn_ = -1;  // held open while the sandbox runs (fd-handover)
    cc::fs::UniqueFd spare_http_, spare_socks_;  // the listeners again, for a restarted cc-egress
    int egress_restarts_ = 0;
    bool egress_lost_ = false;
    bool inbox_events_ = false;  // a handed-in cc-egress sends connection lines on it
    std::string inbox_rest_;     // lines read along with its answer
    LineSplitter egress_split_{65536};
    int open_streams_ = 0;
    bool exited_ = false, killed_ = false, forwarded_ = false, stdout_gone_ = false;
    // Set by finish_if_done: the watchers (read_each) read no more. A read
    // that had already completed when they were cancelled must not start
    // another, or io_.run() waits on it for good (what follows is read
    // after the loop: last_inbox_lines, read_to_eof).
    bool watchers_done_ = false;
};

}  // namespace cc::sandbox::detail
