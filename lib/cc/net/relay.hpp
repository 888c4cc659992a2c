// Moving bytes for the proxy pair: reads that hold no buffer while idle,
// splice(2) relays, deadlines, and tunnels (with the TLS follower that checks
// every ClientHello before it is forwarded).
#pragma once

#include "cc/net/session.hpp"

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

// Relay both ways until both ends are done; `pending` are client bytes read
// already. The server-name check and its decisions go on `rec`.
awaitable<void> tunnel(Server& srv, std::shared_ptr<Conn> c, const Target& t, std::string pending, Record& rec);

}  // namespace cc::net::detail
