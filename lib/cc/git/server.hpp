// cc-pushgate's connection layer: one accepted socket read with poll(2)
// timeouts (Conn), a request body as it arrives (Body: Content-Length or
// chunked, then gzip), whole and chunked responses, and the listener's
// helpers. The gateway (gateway.cpp) answers requests with these.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <zlib.h>

#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "cc/core/result.hpp"
#include "cc/git/http.hpp"

namespace cc::git {

inline constexpr std::size_t io_chunk = 64 * 1024;
using Clock = std::chrono::steady_clock;

// "cc-pushgate: <line>" on stderr, one line at a time across threads.
void log_line(const std::string& s);

// ---------------------------------------------------------------- client side

// One accepted connection: buffered reads and whole writes, each bounded by
// poll(2) timeouts so a silent peer cannot pin a thread.
class Conn {
public:
    Conn(int fd, std::chrono::milliseconds timeout) : fd_(fd), timeout_(timeout) {}
    std::string in;  // received, not yet consumed

    // Appends what is readable to `in`. false: the peer closed.
    Result<bool> fill(std::chrono::milliseconds timeout) {
        pollfd p{fd_, POLLIN, 0};
        int r;
        do r = ::poll(&p, 1, static_cast<int>(timeout.count()));
        while (r < 0 && errno == EINTR);
        if (r == 0) return io_error("client", "timed out", ETIMEDOUT);
        if (r < 0) return io_error("client", "poll failed");
        char buf[io_chunk];
        ssize_t n;
        do n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
            if (errno == EAGAIN) return true;
            return io_error("client", "read failed");
        }
        if (n == 0) return false;
        in.append(buf, static_cast<std::size_t>(n));
        return true;
    }
    Result<bool> fill() { return fill(timeout_); }

    Status write_all(std::string_view data) {
        std::size_t off = 0;
        while (off < data.size()) {
            ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0) {
                off += static_cast<std::size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno != EAGAIN) return io_error("client", "write failed");
            pollfd p{fd_, POLLOUT, 0};
            int r = ::poll(&p, 1, static_cast<int>(timeout_.count()));
            if (r == 0) return io_error("client", "write timed out", ETIMEDOUT);
            if (r < 0 && errno != EINTR) return io_error("client", "poll failed");
        }
        return ok();
    }

private:
    int fd_;
    std::chrono::milliseconds timeout_;
};

// A request body as it arrives: Content-Length or chunked framing, then gzip
// when the client says Content-Encoding: gzip (git never does for pushes, but
// http-backend accepts it, so the gateway does too).
class Body {
public:
    Body(Conn& c, const http::RequestHead& h) : c_(c) {
        if (h.chunked()) {
            mode_ = Mode::chunked;
        } else if (auto cl = h.header("content-length")) {
            auto n = http::parse_content_length(*cl);
            if (!n) {
                init_error_ = n.error();
            } else {
                mode_ = Mode::length;
                remaining_ = declared_ = *n;
            }
        }
        if (auto ce = h.header("content-encoding")) {
            std::string v = *ce;
            for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            if (v == "gzip" || v == "x-gzip") {
                gzip_ = true;
                std::memset(&z_, 0, sizeof z_);
                if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) init_error_ = io_error("gzip", "inflateInit2 failed", 0);
            } else if (v != "identity") {
                init_error_ = input_error("Content-Encoding", "'" + v + "' is not supported (gzip or identity)");
            }
        }
    }
    ~Body() {
        if (gzip_) inflateEnd(&z_);
    }
    Body(const Body&) = delete;
    Body& operator=(const Body&) = delete;

    std::optional<Error> init_error() const { return init_error_; }
    // The decoded length when the client declared it (Content-Length, no gzip).
    std::optional<std::uint64_t> declared_length() const {
        if (mode_ != Mode::length || gzip_) return std::nullopt;
        return declared_;
    }
    bool complete() const { return raw_done_ && (!gzip_ || z_done_); }
    std::uint64_t wire_bytes() const { return wire_; }

    // Appends up to `cap` decoded bytes to `out`; 0 means the body ended.
    Result<std::size_t> read(std::string& out, std::size_t cap) {
        if (!gzip_) return read_raw(out, cap);
        while (!z_done_) {
            if (zin_.size() == zoff_ && !raw_done_) {
                zin_.clear();
                zoff_ = 0;
                auto n = read_raw(zin_, io_chunk);
                if (!n) return n.error();
            }
            if (zin_.size() == zoff_ && raw_done_) return input_error("gzip body", "ends early");
            std::size_t before = out.size();
            out.resize(before + cap);
            z_.next_in = reinterpret_cast<Bytef*>(zin_.data() + zoff_);
            z_.avail_in = static_cast<uInt>(zin_.size() - zoff_);
            z_.next_out = reinterpret_cast<Bytef*>(out.data() + before);
            z_.avail_out = static_cast<uInt>(cap);
            int r = inflate(&z_, Z_NO_FLUSH);
            zoff_ = zin_.size() - z_.avail_in;
            std::size_t produced = cap - z_.avail_out;
            out.resize(before + produced);
            if (r == Z_STREAM_END) {
                // Another gzip member may follow (RFC 1952 section 2.2).
                if (zoff_ < zin_.size() || !raw_done_) {
                    std::string peek;
                    if (zoff_ == zin_.size()) {
                        zin_.clear();
                        zoff_ = 0;
                        auto n = read_raw(zin_, io_chunk);
                        if (!n) return n.error();
                    }
                    if (zoff_ < zin_.size()) {
                        inflateReset(&z_);
                    } else {
                        z_done_ = true;
                    }
                } else {
                    z_done_ = true;
                }
            } else if (r != Z_OK && r != Z_BUF_ERROR) {
                return input_error("gzip body", z_.msg ? z_.msg : "corrupt data");
            }
            // A gzip bomb: a few kilobytes that inflate to gigabytes, each
            // byte of which would go upstream. A pack is already compressed.
            inflated_ += produced;
            if (inflated_ > max_inflate_ratio * wire_ + (1u << 20))
                return input_error("gzip body", "inflates to more than " + std::to_string(max_inflate_ratio) +
                                                    " times its size");
            if (produced) return produced;
        }
        return std::size_t{0};
    }

    // Reads and discards the rest, within a byte and a time cap. false: a cap
    // was hit (the caller answers and closes the connection).
    bool drain(std::uint64_t limit, std::chrono::seconds time_cap) {
        auto deadline = Clock::now() + time_cap;
        std::string sink;
        std::uint64_t start = wire_;
        while (!raw_done_) {
            if (wire_ - start > limit || Clock::now() > deadline) return false;
            sink.clear();
            auto n = read_raw(sink, io_chunk);
            if (!n) return false;
        }
        return true;
    }

private:
    Result<std::size_t> read_raw(std::string& out, std::size_t cap) {
        if (init_error_) return *init_error_;
        if (raw_done_) return std::size_t{0};
        if (mode_ == Mode::none) {
            raw_done_ = true;
            return std::size_t{0};
        }
        for (;;) {
            // Check for the end before waiting for bytes that will never come.
            if ((mode_ == Mode::length && remaining_ == 0) || (mode_ == Mode::chunked && dec_.done())) {
                raw_done_ = true;
                return std::size_t{0};
            }
            if (c_.in.empty()) {
                auto f = c_.fill();
                if (!f) return f.error();
                if (!*f) return input_error("request body", "ends early (the client closed the connection)");
            }
            if (mode_ == Mode::length) {
                std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>({remaining_, c_.in.size(), cap}));
                out.append(c_.in, 0, n);
                c_.in.erase(0, n);
                remaining_ -= n;
                wire_ += n;
                return n;
            }
            std::size_t before = out.size();
            auto used = dec_.decode(c_.in, out, cap);
            if (!used) return used.error();
            c_.in.erase(0, *used);
            wire_ += *used;
            if (out.size() > before) return out.size() - before;
            if (dec_.done()) {
                raw_done_ = true;
                return std::size_t{0};
            }
        }
    }

    enum class Mode { none, length, chunked };
    Conn& c_;
    Mode mode_ = Mode::none;
    std::uint64_t remaining_ = 0, wire_ = 0, declared_ = 0, inflated_ = 0;
    static constexpr std::uint64_t max_inflate_ratio = 100;
    http::ChunkedDecoder dec_;
    bool raw_done_ = false;
    std::optional<Error> init_error_;
    bool gzip_ = false, z_done_ = false;
    z_stream z_{};
    std::string zin_;
    std::size_t zoff_ = 0;
};

std::string response_head(int status, const std::string& type, std::optional<std::size_t> length, bool close);

// true when the whole response was written.
bool send_whole(Conn& c, int status, const std::string& type, const std::string& body, bool close);

// A response relayed as it arrives, in chunked coding.
class ChunkedWriter {
public:
    explicit ChunkedWriter(Conn& c) : c_(c) {}
    bool started() const { return started_; }
    Status begin(int status, const std::string& type, bool close) {
        started_ = true;
        return c_.write_all(response_head(status, type, std::nullopt, close));
    }
    Status chunk(std::string_view data) {
        if (data.empty()) return ok();
        char size[24];
        int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
        std::string frame(size, static_cast<std::size_t>(n));
        frame.append(data);
        frame += "\r\n";
        return c_.write_all(frame);
    }
    Status end() { return c_.write_all("0\r\n\r\n"); }

private:
    Conn& c_;
    bool started_ = false;
};

// 128 random bits, hex ("" when the kernel gives none).
std::string session_secret();
// A loopback HOST:PORT; anything else is an input error naming --listen.
Result<boost::asio::ip::tcp::endpoint> parse_listen(const std::string& listen);

}  // namespace cc::git
