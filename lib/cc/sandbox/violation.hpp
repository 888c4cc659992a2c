// On Linux, a refused syscall shows up in the child's stderr as EPERM,
// EACCES or EROFS text. parse_violation() reads one stderr line and returns
// the violation it reports, with the path when one can be read off the line.
// The launcher calls it only while the native backend really wraps the child.
//
//   parse_violation("touch: cannot touch '/w/x': Read-only file system")
//     -> {action "write", target "/w/x", raw "..."}
#pragma once

#include <optional>
#include <string>

#include "cc/spec/spec.hpp"

namespace cc::sandbox {

std::optional<spec::Violation> parse_violation(const std::string& line);

// A request the session's cc-egress refused, read off one of its connection
// lines (egress-connection.schema.json): {action "network", target
// "host:port" (the address when no name was asked for), raw: the line}.
// Allowed connections, and lines that are not connection objects: nullopt.
std::optional<spec::Violation> network_violation(const std::string& egress_line);

// Splits a byte stream into lines for parse_violation, across chunk borders.
// Lines longer than `max_line` are cut (a violation message is short).
class LineSplitter {
public:
    explicit LineSplitter(std::size_t max_line = 4096) : max_(max_line) {}
    // Calls fn(line) for every complete line in data.
    template <typename Fn>
    void feed(const char* data, std::size_t n, Fn&& fn) {
        for (std::size_t i = 0; i < n; ++i) {
            char c = data[i];
            if (c == '\n') {
                fn(buf_);
                buf_.clear();
            } else if (buf_.size() < max_) {
                buf_.push_back(c);
            }
        }
    }
    template <typename Fn>
    void finish(Fn&& fn) {
        if (!buf_.empty()) fn(buf_);
        buf_.clear();
    }

private:
    std::size_t max_;
    std::string buf_;
};

}  // namespace cc::sandbox
