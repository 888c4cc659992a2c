// --metrics-socket: one HTTP/1.1 GET per connection on a Unix stream
// socket, answered with the OpenMetrics text page and closed. The head is
// read with the proxy's own reader (wire.hpp), bounded in size and time.
#include "cc/net/relay.hpp"
#include "cc/net/wire.hpp"

namespace cc::net::detail {

namespace {

constexpr std::size_t max_metrics_head = 8 * 1024;

std::string answer(int status, const std::string& type, const std::string& body, bool head_only) {
    std::string reason = status == 200 ? "OK" : status == 404 ? "Not Found" : status == 405 ? "Method Not Allowed"
                                                                                              : "Bad Request";
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: " + type +
                      "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    if (!head_only) out += body;
    return out;
}

awaitable<void> serve_metrics(Server& srv, Sock sock) {
    auto c = std::make_shared<Conn>(std::move(sock));
    std::uint64_t id = srv.next_id++;
    srv.live[id] = c;  // closed on shutdown like any connection
    try {
        Deadline deadline(srv, c, 5000);
        std::string buf;
        std::size_t n = 0;
        while ((n = http::head_length(buf)) == 0 && buf.size() <= max_metrics_head)
            if (co_await read_more(c->client, buf, 4096) == 0) co_return;
        std::string reply;
        auto h = n ? http::parse_request_head(std::string_view(buf).substr(0, n)) : Result<http::RequestHead>(
                                                                                        input_error("request", "head too large"));
        if (!h) {
            reply = answer(400, "text/plain; charset=utf-8", "malformed request\n", false);
        } else if (h->method != "GET" && h->method != "HEAD") {
            reply = answer(405, "text/plain; charset=utf-8", "GET /metrics\n", false);
        } else if (std::string path = h->target.substr(0, h->target.find('?')); path != "/metrics" && path != "/") {
            reply = answer(404, "text/plain; charset=utf-8", "GET /metrics\n", h->method == "HEAD");
        } else {
            reply = answer(200, "application/openmetrics-text; version=1.0.0; charset=utf-8", srv.sh.metrics.render(),
                           h->method == "HEAD");
        }
        co_await write_all(c->client, reply);
        ErrorCode ec;
        c->client.shutdown(Sock::shutdown_send, ec);
    } catch (const std::exception& e) {
        note_error(srv, "metrics", e);
    }
    c->close();
    srv.live.erase(id);
}

}  // namespace

awaitable<void> metrics_loop(Server& srv, Acceptor& acc) {
    while (!srv.stopping) {
        ErrorCode ec;
        Sock s = co_await acc.async_accept(asio::redirect_error(use_awaitable, ec));
        if (ec) {
            if (srv.stopping || ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) co_return;
            srv.sh.metrics.error("accept");
            srv.log("accept on the metrics socket: " + ec.message());
            asio::steady_timer t(srv.io, std::chrono::milliseconds(100));
            co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
            continue;
        }
        asio::co_spawn(srv.io, serve_metrics(srv, std::move(s)), srv.on_done("the metrics page"));
    }
}

}  // namespace cc::net::detail
