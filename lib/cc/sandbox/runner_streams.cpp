// The Runner's streams (runner.hpp): the command's output as events or
// through the pty, stdin to the pty, bubblewrap's status line, and the
// Seatbelt log's refusals.

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "cc/core/io.hpp"
#include "cc/sandbox/runner.hpp"

namespace cc::sandbox::detail {

namespace asio = boost::asio;
using nlohmann::json;

// macOS: the session's Seatbelt refusals, read off `log stream` (its
// lines parsed, de-duplicated and rate-limited by SeatbeltLogReader).
void Runner::watch_seatbelt_log() {
    tap_lines_.feed(tap_->pending.data(), tap_->pending.size(), [this](const std::string& l) { seatbelt_line(l); });
    tap_->pending.clear();
    read_each(tap_sd_, tap_loop_, ::dup(tap_->fd), [this](std::string_view d) {
        tap_lines_.feed(d.data(), d.size(), [this](const std::string& l) { seatbelt_line(l); });
    });
}

void Runner::seatbelt_line(const std::string& line) {
    auto v = reader_->feed(line, std::chrono::steady_clock::now());
    if (!v) return;
    if (rq_.events) emit_violation(*v);
    else log("Seatbelt refused " + v->action + " " + v->target);
}

// Writes the event line in the stream's reused buffer plus a newline.
void Runner::emit_chunk(Stream& s, std::string_view data) {
    ev_.chunk_into(s.line, s.kind, data);
    s.line.push_back('\n');
    if (io::write_all(1, s.line) != 0) stdout_gone_ = true;
}

void Runner::read_stream(int fd, const char* kind, bool violations) {
    ::fcntl(fd, F_SETPIPE_SZ, static_cast<int>(k_chunk));
    auto s = std::make_shared<Stream>();
    s->sd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    s->kind = kind;
    s->violations = violations;
    ++open_streams_;
    pump(s);
}

void Runner::on_line(const std::string& line) {
    if (auto v = parse_violation(line)) {
        // With the write supervisor, its refusals (EACCES) are reported
        // by it, with the call, path and rule; the message a program
        // prints about them is not a second violation.
        if (supervisor_ && v->raw && v->raw->find("Permission denied") != std::string::npos) return;
        emit_violation(*v);
    }
}

// One violation event: what was refused, and the line it was read from.
void Runner::emit_violation(const spec::Violation& v) {
    json j = {{"action", v.action}, {"target", v.target}};
    if (v.raw) j["raw"] = *v.raw;
    emit(ev_.line("violation", j));
}

void Runner::pump(std::shared_ptr<Stream> s) {
    s->sd->async_read_some(asio::buffer(s->buf), [this, s](auto ec, std::size_t n) {
        if (ec || n == 0) {
            std::string rest = s->carry.flush();
            if (rq_.events) {
                if (!rest.empty()) emit_chunk(*s, rest);
                if (s->violations) s->lines.finish([this](const std::string& l) { on_line(l); });
            }
            --open_streams_;
            finish_if_done();
            return;
        }
        if (rq_.events) {
            std::string_view data = s->carry.take(std::string_view(s->buf.data(), n), s->scratch);
            if (!data.empty()) emit_chunk(*s, data);
            if (s->violations) s->lines.feed(s->buf.data(), n, [this](const std::string& l) { on_line(l); });
        } else {  // --pty without --events: the terminal's bytes as they are
            if (io::write_all(1, std::string_view(s->buf.data(), n)) != 0) stdout_gone_ = true;
        }
        pump(s);
    });
}

void Runner::relay_stdin(int master) {
    stdin_sd_ = std::make_unique<asio::posix::stream_descriptor>(io_, ::dup(0));
    auto buf = std::make_shared<std::array<char, 4096>>();
    auto* loop = &stdin_loop_;  // a member: a self-owning closure would never be freed
    *loop = [this, buf, master, loop] {
        stdin_sd_->async_read_some(asio::buffer(*buf), [buf, master, loop](auto ec, std::size_t n) {
            if (ec == asio::error::operation_aborted) return;
            if (ec || n == 0) {
                // End of input: the terminal's EOF character, as script(1) does.
                ssize_t w = ::write(master, "\x04", 1);
                (void)w;
                return;
            }
            ssize_t w = ::write(master, buf->data(), n);
            (void)w;
            (*loop)();
        });
    };
    (*loop)();
}

// bwrap's --json-status-fd: {"child-pid": N} once the sandbox is set up.
// The pid is trusted only if it is bwrap's own child.
void Runner::read_status(int fd) {
    status_sd_ = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    status_loop();
}

void Runner::status_loop() {
    status_sd_->async_read_some(asio::buffer(status_buf_), [this](auto ec, std::size_t n) {
        if (ec || n == 0) return;
        status_text_.append(status_buf_.data(), n);
        auto nl = status_text_.find('\n');
        if (pid1_ < 0 && nl != std::string::npos) adopt_status_line(status_text_.substr(0, nl));
        if (pid1_ < 0 && status_text_.size() < 4096) status_loop();
    });
}

// bwrap's first status line: {"child-pid": N, "net-namespace": ...}. The
// pid becomes the sandbox's PID 1 (and "ready" is emitted) only if it is
// bwrap's own child. Returns the parsed line (discarded if not JSON).
json Runner::adopt_status_line(const std::string& line) {
    json j = json::parse(line, nullptr, false);
    pid_t p = j.is_object() ? j.value("child-pid", -1) : -1;
    // A pidfd first, then the parent checked: the descriptor names the
    // process that was checked, not a later holder of its number.
#ifdef SYS_pidfd_open
    cc::fs::UniqueFd pfd{p > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, p, 0)) : -1};
#else
    cc::fs::UniqueFd pfd;  // (no pidfd: nothing is awaited before the supervisor stops)
#endif
    if (p > 0 && parent_of(p) == pid_) {
        pid1_ = p;
        pid1_fd_ = std::move(pfd);
        if (rq_.events) emit(ev_.line("ready", {{"pid", pid_}}));
    }
    return j;
}

pid_t Runner::parent_of(pid_t p) {
    std::ifstream f("/proc/" + std::to_string(p) + "/stat");
    std::string all((std::istreambuf_iterator<char>(f)), {});
    auto rp = all.rfind(')');
    if (rp == std::string::npos) return -1;
    std::istringstream rest(all.substr(rp + 2));
    std::string state;
    pid_t pp = -1;
    rest >> state >> pp;
    return pp;
}

}  // namespace cc::sandbox::detail
