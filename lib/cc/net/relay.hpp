// Moving bytes for the proxy pair: reads that hold no buffer while idle,
// splice(2) relays, deadlines, and tunnels (with the TLS follower that checks
// every ClientHello before it is forwarded).
#pragma once

#include "cc/net/session.hpp"
#include "cc/net/wire.hpp"

namespace cc::net::detail {

// Closes the connection if the deadline passes before it is destroyed (with
// `only_if_silent`, only if no byte has moved either way by then). A deadline
// of 0 ms (or less) is no deadline. Kept in the loop's list of timeouts.
class Deadline {
public:
    Deadline(Server& srv, const std::shared_ptr<Conn>& c, int ms, Closed why = Closed::none, bool only_if_silent = false);
    ~Deadline();
    Deadline(const Deadline&) = delete;
    Deadline& operator=(const Deadline&) = delete;

private:
    Server& srv_;
    Timeouts::iterator at_;
    bool armed_ = false;
};

// Closes the connection once no byte has been relayed either way for
// `ms`. The loop looks at the byte counters a few times per period rather
// than being re-armed on every read, so busy tunnels pay nothing.
void watch_idle(Server& srv, const std::shared_ptr<Conn>& c, int ms);

// Append up to `max` bytes to `buf`; 0 at end of stream.
awaitable<std::size_t> read_more(Sock& s, std::string& buf, std::size_t max = read_chunk);
awaitable<void> write_all(Sock& s, std::string_view data);

// Copy bytes from `from` to `to` until EOF or `limit` bytes (`unlimited`);
// a body cut short throws. `half_close`: shut down `to`'s sending side at EOF.
awaitable<void> pump(Server& srv, Sock& from, Sock& to, std::uint64_t& count, std::uint64_t limit, bool half_close);

// A chunked body broke its framing (ChunkedScanner::error() says how). The
// bytes from the bad line on were not forwarded.
struct MalformedBody : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A chunked body, from what `buf` holds and then `read()` (appends to buf,
// 0 at the end), to `write(bytes)`: as it came, or with `dechunk` its
// payload only. `count` adds what was written.
template <class Read, class Write>
awaitable<void> relay_chunked(std::string& buf, std::uint64_t& count, bool dechunk, Read read, Write write) {
    http::ChunkedScanner scan;
    std::string data;
    while (true) {
        data.clear();
        std::size_t n = scan.feed(buf, dechunk ? &data : nullptr);
        if (scan.failed()) throw MalformedBody(scan.error());
        if (n) {
            std::string_view out = dechunk ? std::string_view(data) : std::string_view(buf).substr(0, n);
            if (!out.empty()) co_await write(out);
            count += out.size();
            buf.erase(0, n);
        }
        if (scan.done()) co_return;
        if (co_await read() == 0) throw std::runtime_error("chunked body cut short");
    }
}

// One head (bounded by http::max_head; too_big past it) from what `buf`
// holds and then `read()` (appends to buf, 0 at the end); "" on a clean end
// before any byte.
template <class Read>
awaitable<std::string> read_head_with(std::string& buf, bool& too_big, Read read) {
    too_big = false;
    while (true) {
        std::size_t n = http::head_length(buf);
        if (n > http::max_head || (n == 0 && buf.size() > http::max_head)) {
            too_big = true;
            co_return std::string();
        }
        if (n) {
            std::string head = buf.substr(0, n);
            buf.erase(0, n);
            co_return head;
        }
        if (co_await read() == 0) {
            if (!buf.empty()) throw std::runtime_error("connection closed inside a head");
            co_return std::string();
        }
    }
}

// Relay both ways until both ends are done; `pending` are client bytes read
// already. The server-name check and its decisions go on `rec`.
awaitable<void> tunnel(Server& srv, std::shared_ptr<Conn> c, const Target& t, std::string pending, Record& rec);

}  // namespace cc::net::detail
