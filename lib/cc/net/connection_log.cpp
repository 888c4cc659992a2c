#include "cc/net/session.hpp"
#include "cc/core/json_writer.hpp"

namespace cc::net::detail {

void EventSink::push(std::string line) {
    asio::post(home_.io, [self = shared_from_this(), l = std::move(line)]() mutable { self->enqueue(std::move(l)); });
}

void EventSink::open() {
    plugged_ = false;
    if (!writing_ && !queue_.empty()) write_next();
}

void EventSink::enqueue(std::string line) {
    if (broken_ || queued_ + line.size() > (1u << 20)) {
        ++dropped_;
        return;
    }
    queued_ += line.size();
    queue_.push_back(std::move(line));
    if (!writing_ && !plugged_) write_next();
}

void EventSink::write_next() {
    writing_ = true;
    asio::async_write(to_->client, asio::buffer(queue_.front()), [self = shared_from_this()](ErrorCode ec, std::size_t) {
        self->queued_ -= self->queue_.front().size();
        self->queue_.pop_front();
        if (ec) {
            self->broken_ = true;
            self->dropped_ += 1 + self->queue_.size();
            self->queue_.clear();
            self->queued_ = 0;
        }
        if (!self->queue_.empty()) self->write_next();
        else self->writing_ = false;
    });
}

EventSink::~EventSink() {
    if (dropped_ > 0) {
        home_.sh.metrics.error("inbox_line_dropped", dropped_);
        home_.log("fd inbox: " + std::to_string(dropped_) + " connection line(s) not delivered to the sender (" +
                  (broken_ ? "its connection failed" : "it did not read them") + ")");
    }
    // Closed on its own loop.
    if (to_) asio::post(home_.io, [c = std::move(to_)] { c->close(); });
}

Record::Record(Server& s, std::shared_ptr<Conn> c, const char* proto, const std::string& client)
    : srv(s), conn(std::move(c)) {
    // Set key by key: an initializer list of pairs is copied element by
    // element, several times the cost, on every connection.
    j["event"] = "connection";
    j["proto"] = proto;
    j["client"] = client;
    up0 = conn->up;
    down0 = conn->down;
}

void Record::decide(const Verdict& v) {
    j["decision"] = v.allow ? "allow" : "deny";
    if (v.would_deny) j["wouldDeny"] = true;
    j["rule"] = v.rule;
    j["reason"] = v.reason;
}

void Record::emit() noexcept {
    if (!armed) return;
    armed = false;
    try {
        write_line();
    } catch (const std::exception& e) {
        try {
            srv.sh.metrics.error("log_line");
            srv.log(std::string("a connection line could not be written: ") + e.what());
        } catch (...) {
        }
    } catch (...) {
    }
}

void Record::write_line() {
    if (conn->closed != Closed::none) {
        j["closed"] = to_string(conn->closed);
        j.erase("error");  // the aborted read or write the close caused
        if (conn->closed == Closed::header_timeout && !j.contains("decision")) {
            j["rule"] = "timeout";
            j["reason"] = "handshake not complete within " + std::to_string(srv.cfg.handshake_timeout_ms) + " ms";
        }
    }
    if (!j.contains("decision")) j["decision"] = "deny";
    if (!j.contains("rule")) j["rule"] = "malformed";
    if (j["decision"] == "deny") ++srv.stats.denied;
    j["bytesUp"] = conn->up - up0;
    j["bytesDown"] = conn->down - down0;
    j["durationMs"] = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (conn->closed == Closed::header_timeout || conn->closed == Closed::idle_timeout ||
        conn->closed == Closed::first_byte_timeout) {
        std::string what = j.value("host", std::string("?"));
        if (j.contains("port")) what += ":" + std::to_string(j["port"].get<int>());
        srv.log(std::string(to_string(conn->closed)) + ": closed " + j["proto"].get<std::string>() + " " + what +
                " from " + j["client"].get<std::string>());
    } else if (j["decision"] == "deny") {
        std::string what = j.value("host", std::string("?"));
        if (j.contains("port")) what += ":" + std::to_string(j["port"].get<int>());
        srv.log("deny " + j["proto"].get<std::string>() + " " + what + ": " + j.value("reason", std::string()));
    }
    srv.sh.metrics.connection_line(j);
    if (conn->sink) conn->sink->push(cc::json::write(j) + "\n");
    if (srv.cfg.on_connection) {
        // The line is handed over, not copied: the record is done with it.
        std::lock_guard<std::mutex> lock(srv.sh.out_mu);
        srv.cfg.on_connection(std::move(j));
    }
}


}  // namespace cc::net::detail
