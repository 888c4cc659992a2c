#include "cc/core/tool.hpp"

#include "cc/core/io.hpp"
#include "cc/core/json_writer.hpp"

#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <exception>
#include <iostream>

namespace cc::tool {

namespace {
bool quiet_ = false;
LogFormat log_format_ = LogFormat::plain;
}

void set_quiet(bool on) { quiet_ = on; }

bool keep_memory_private() {
#ifdef __linux__
    return ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
#else
    return true;  // macOS: a process of the same user is not open to task_for_pid without an entitlement
#endif
}
bool quiet() { return quiet_; }
void set_log_format(LogFormat f) { log_format_ = f; }

std::string log_prefix(const char* name) {
    std::string p;
    if (log_format_ == LogFormat::time) {
        timespec ts{};
        ::clock_gettime(CLOCK_REALTIME, &ts);
        tm utc{};
        ::gmtime_r(&ts.tv_sec, &utc);
        char buf[40];
        std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
        std::snprintf(buf + n, sizeof buf - n, ".%03ldZ ", ts.tv_nsec / 1000000);
        p = buf;
    }
    return p + name + ": ";
}

// One write(2) a line: std::cerr is unbuffered, and a line written in
// pieces interleaves with what other threads, or the sandboxed command on
// the same stderr, write meanwhile.
namespace {
void write_line_2(const std::string& line) {
    std::cerr.flush();
    (void)io::write_all(2, line);
}
}  // namespace

std::string printable(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7f) {
            out.push_back(static_cast<char>(c));
            ++i;
            continue;
        }
        if (c >= 0x80) {  // a whole UTF-8 character stays as it is
            bool tail = false;
            std::size_t ok = json::utf8_valid_prefix(text.substr(i, 4), tail);
            std::size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
            if (ok >= len) {
                out.append(text.substr(i, len));
                i += len;
                continue;
            }
        }
        if (c == '\t') out.push_back('\t');
        else out += std::string{'\\', 'x', hex[c >> 4], hex[c & 15]};
        ++i;
    }
    return out;
}

void log(const char* name, const std::string& line) {
    if (!quiet_) write_line_2(log_prefix(name) + printable(line) + '\n');
}

int report(const char* name, const Error& e, int otherwise) {
    write_line_2(log_prefix(name) + printable(e.one_line()) + '\n');
    return e.code == Errc::input ? exit_usage : otherwise;
}

bool emit_line(const std::string& line) {
    std::string buf = line;
    buf.push_back('\n');
    return io::write_all(1, buf) == 0;
}

int run(const char* name, const std::function<int()>& body, int on_exception) {
    std::signal(SIGPIPE, SIG_IGN);
    std::ios::sync_with_stdio(true);
    try {
        int rc = body();
        std::cout.flush();
        if (!std::cout && errno == EPIPE) return exit_ok;
        return rc;
    } catch (const std::exception& e) {
        write_line_2(log_prefix(name) + "error: " + printable(e.what()) + '\n');
        return on_exception;
    } catch (...) {
        write_line_2(log_prefix(name) + "error: an unknown exception\n");
        return on_exception;
    }
}

}  // namespace cc::tool
