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
//   auto conn = hand_over(inbox_path, fds->http, fds->socks);   // hold this fd
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>

#include "cc/core/result.hpp"

namespace cc::sandbox {

struct Listeners {
    int http = -1, socks = -1;
};

// Listening TCP sockets on 127.0.0.1:http_port and :socks_port inside the
// network namespace of `pid` (checked against `expect_net_ino` when given,
// so a recycled PID is refused). `as`: the sandbox's uid and gid when
// cc-wrap is root and started it as them; the helper becomes them first.
Result<Listeners> listeners_in_netns(pid_t pid, std::optional<unsigned long> expect_net_ino, int http_port,
                                     int socks_port, std::optional<std::pair<unsigned, unsigned>> as = std::nullopt);

// One SCM_RIGHTS message {"http":[0],"socks":[1],"hold":true} to the inbox;
// returns the connected socket. The listeners live as long as that socket
// stays open. cc-egress answers one line on it, read by await_handover_ack.
// With `events`, cc-egress then also writes there one JSON line per
// connection made on those listeners (its connection lines), and closes the
// socket after the sender shuts down its side and the last of them ended.
Result<int> hand_over(const std::string& inbox, int http_fd, int socks_fd, bool events = false);
// Waits (bounded) for cc-egress's answer: ok() for {"ok":true}, else why not.
// Bytes read past the answer line (connection lines) are left in `rest`.
Status await_handover_ack(int conn, const std::string& inbox, int timeout_ms, std::string* rest = nullptr);

}  // namespace cc::sandbox
