#include "cc/core/tool.hpp"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>

namespace cc::tool {

namespace {
bool quiet_ = false;
}

void set_quiet(bool on) { quiet_ = on; }
bool quiet() { return quiet_; }

void log(const char* name, const std::string& line) {
    if (!quiet_) std::cerr << name << ": " << line << '\n';
}

int report(const char* name, const Error& e, int otherwise) {
    std::cerr << name << ": " << e.one_line() << '\n';
    return e.code == Errc::input ? exit_usage : otherwise;
}

bool emit_line(const std::string& line) {
    std::string buf = line;
    buf.push_back('\n');
    std::size_t off = 0;
    while (off < buf.size()) {
        ssize_t n = ::write(1, buf.data() + off, buf.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        off += static_cast<std::size_t>(n);
    }
    return true;
}

int run(const char* name, const std::function<int()>& body) {
    std::signal(SIGPIPE, SIG_IGN);
    std::ios::sync_with_stdio(true);
    try {
        int rc = body();
        std::cout.flush();
        if (!std::cout && errno == EPIPE) return exit_ok;
        return rc;
    } catch (const std::exception& e) {
        std::cerr << name << ": error: " << e.what() << '\n';
        return exit_failure;
    }
}

}  // namespace cc::tool
