#include "cc/core/result.hpp"

#include <cstring>

namespace cc {

std::string Error::one_line() const {
    std::string line;
    if (!subject.empty()) line += subject + ": ";
    line += message;
    if (sys_errno != 0) line += std::string(": ") + std::strerror(sys_errno);
    // One line, always: a newline in a subject (a hostile file name) must not
    // split the message.
    for (char& c : line)
        if (c == '\n' || c == '\r') c = ' ';
    return line;
}

Error input_error(std::string subject, std::string message) {
    return Error{Errc::input, std::move(message), std::move(subject), 0};
}

Error io_error(std::string subject, std::string message, int err) {
    return Error{Errc::io, std::move(message), std::move(subject), err};
}

Error unavailable_error(std::string subject, std::string message) {
    return Error{Errc::unavailable, std::move(message), std::move(subject), 0};
}

}  // namespace cc
