// Errors are values. Library code returns cc::Result<T>; only the edges (a
// tool's main, CLI11, nlohmann parsing) deal in exceptions.
//
//   cc::Result<Spec> r = cc::spec::parse(text);
//   if (!r) { std::cerr << r.error().one_line() << '\n'; return 2; }
//   use(*r);
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace cc {

// What kind of failure, so a tool can map it to an exit status without
// parsing text. `input` is the caller's fault (exit 2); the rest are not.
enum class Errc {
    input,        // malformed JSON, unknown field, bad pattern, bad flag value
    io,           // a file or socket operation failed (see sys_errno)
    unavailable,  // the host lacks what was asked for (no bwrap, no KVM, ...)
    denied,       // a policy said no
    internal,     // a bug or an impossible state
};

struct Error {
    Errc code = Errc::internal;
    std::string message;  // lower case, no full stop: "must be absolute"
    std::string subject;  // what it is about: a field path, a file, a host
    int sys_errno = 0;

    // "subject: message[: strerror]" -- the one line a tool prints on stderr.
    std::string one_line() const;
};

Error input_error(std::string subject, std::string message);
Error io_error(std::string subject, std::string message, int err = errno);
Error unavailable_error(std::string subject, std::string message);

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error e) : v_(std::move(e)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Error& error() const { return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

// Result<void>: success carries nothing.
struct Ok {};
using Status = Result<Ok>;
inline Status ok() { return Ok{}; }

}  // namespace cc
