// The fd-handover proxy transport, done from outside the sandbox.
//
// bubblewrap reports the sandbox's PID 1 on its status fd and then waits on
// its block fd before running anything. Meanwhile cc-wrap forks a helper that
// joins the sandbox's user and network namespaces (setns; the caller owns
// them, so no privilege is needed), makes the two loopback listeners there and
// passes them back over a socketpair; cc-wrap hands them to cc-egress's fd
// inbox and keeps that connection open for the sandbox's lifetime (cc-egress
// closes the listeners when it closes). Nothing inside the sandbox ever sees
// the inbox, and there is no userspace copy hop between sandbox and proxy.
//
//   auto fds = listeners_in_netns(pid1, net_ino, 3128, 1080);   // {http, socks}
//   auto conn = hand_over(inbox_path, *fds);                      // hold this fd
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::sandbox {

// The most ports one sandbox's connections are captured on.
constexpr std::size_t k_max_capture_ports = 64;

// The sockets made inside the sandbox's network namespace; the caller owns
// every descriptor (-1: none).
struct Listeners {
    int http = -1, socks = -1;
    // --capture: one listener on the wildcard address of each port (IPv6
    // with IPv4 mapped, or IPv4 alone where the namespace has no IPv6), and
    // the resolver's UDP sockets on port 53 (IPv4, IPv6).
    std::vector<int> captured;
    int dns4 = -1, dns6 = -1;
    // Raw sockets that see a copy of every UDP datagram and every TCP SYN
    // the command sends, so cc-egress reports UDP other than DNS (which goes
    // nowhere) and connections to ports nothing captures (which the kernel
    // refuses): udp4, udp6, tcp4, tcp6.
    int report[4] = {-1, -1, -1, -1};
    bool ipv6 = false;  // the local route for ::/0 and the IPv6 sockets are in place
};

// Every destination of the sandbox local, and the sockets that receive what
// the command sends there: `local` routes for 0.0.0.0/0 and ::/0 on
// loopback (the kernel then delivers any connection to a listener of this
// namespace), a listener on each port, and the resolver's sockets.
struct CaptureSetup {
    std::vector<std::uint16_t> ports;  // at most k_max_capture_ports
};

// Listening TCP sockets on 127.0.0.1:http_port and :socks_port inside the
// network namespace of `pid` (checked against `expect_net_ino` when given,
// so a recycled PID is refused), and with `capture` what it asks for. `as`:
// the sandbox's uid and gid when cc-wrap is root and started it as them;
// the helper becomes them first.
Result<Listeners> listeners_in_netns(pid_t pid, std::optional<unsigned long> expect_net_ino, int http_port,
                                     int socks_port, std::optional<std::pair<unsigned, unsigned>> as = std::nullopt,
                                     const CaptureSetup* capture = nullptr);

// Can this host capture (cc-wrap --capture)? A child process makes a
// network namespace of its own (and a user namespace, unprivileged), brings
// its loopback up, adds the local route for 0.0.0.0/0, listens on the
// wildcard address and connects to 198.18.0.1 there: ok() when the listener
// sees that address as the connection's own, else which step failed and why.
Status capture_self_test();

// Closes every descriptor `l` holds.
void close_listeners(Listeners& l);

// One SCM_RIGHTS message {"http":[0],"socks":[1],"hold":true} to the inbox
// (with "captured" and "dns" when `l` has them); returns the connected
// socket. The listeners live as long as that socket stays open. cc-egress
// answers one line on it, read by await_handover_ack. With `events`,
// cc-egress then also writes there one JSON line per connection made on
// those listeners (its connection lines), and closes the socket after the
// sender shuts down its side and the last of them ended.
Result<int> hand_over(const std::string& inbox, const Listeners& l, bool events = false);
// Waits (bounded) for cc-egress's answer: ok() for {"ok":true}, else why not.
// Bytes read past the answer line (connection lines) are left in `rest`.
Status await_handover_ack(int conn, const std::string& inbox, int timeout_ms, std::string* rest = nullptr);

}  // namespace cc::sandbox
