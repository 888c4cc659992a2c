#include "cc/net/metrics.hpp"

#include <cstdio>

namespace cc::net {

void Metrics::connection_opened(const std::string& proto, std::size_t loop) {
    std::lock_guard<std::mutex> lock(mu_);
    ++connections_[proto];
    if (loop < by_loop_.size()) ++by_loop_[loop];
    ++active_;
}

void Metrics::set_loops(std::size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    by_loop_.resize(n);
}

void Metrics::connection_closed() {
    std::lock_guard<std::mutex> lock(mu_);
    --active_;
}

std::string Metrics::reason_class(const nlohmann::json& line) {
    std::string decision = line.value("decision", "deny");
    if (decision == "allow") return line.value("wouldDeny", false) ? "report" : "allowed";
    std::string rule = line.value("rule", "");
    auto starts = [&](const char* p) { return rule.rfind(p, 0) == 0; };
    if (rule == "no allow entry") return "no_allow_entry";
    if (rule == "port not allowed") return "port_not_allowed";
    if (rule == "network off") return "network_off";
    if (starts("always-deny")) return "always_deny";
    if (starts("--deny")) return "operator_deny";
    if (starts("non-public")) return "non_public";
    if (rule == "dns") return "dns_error";
    if (starts("tls")) return "tls";
    if (rule == "auth") return "auth";
    if (rule == "limit") return "limit";
    if (rule == "timeout") return "timeout";
    if (rule == "malformed") return "malformed";
    if (rule == "ask") return "ask";
    return "other";
}

void Metrics::connection_line(const nlohmann::json& line) {
    std::string decision = line.value("decision", "deny");
    std::string reason = reason_class(line);
    auto up = line.value("bytesUp", std::uint64_t{0}), down = line.value("bytesDown", std::uint64_t{0});
    std::lock_guard<std::mutex> lock(mu_);
    ++decisions_[{decision, reason}];
    up_ += up;
    down_ += down;
}

void Metrics::resolved(double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = 0; i < buckets.size(); ++i)
        if (seconds <= buckets[i]) ++lookup_buckets_[i];
    ++lookups_;
    lookup_sum_ += seconds;
}

void Metrics::error(const std::string& kind, std::uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    errors_[kind] += n;
}

std::uint64_t Metrics::errors(const std::string& kind) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = errors_.find(kind);
    return it == errors_.end() ? 0 : it->second;
}

void Metrics::ask(const std::string& answer) {
    std::lock_guard<std::mutex> lock(mu_);
    ++asks_[answer];
}

namespace {
std::string number(double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.9g", v);
    return b;
}
}  // namespace

std::string Metrics::render() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string o;
    auto family = [&](const char* name, const char* type, const char* unit, const char* help) {
        o += std::string("# TYPE ") + name + " " + type + "\n";
        if (*unit) o += std::string("# UNIT ") + name + " " + unit + "\n";
        o += std::string("# HELP ") + name + " " + help + "\n";
    };
    family("cc_egress_connections", "counter", "", "Client connections accepted, by listener protocol.");
    for (const char* p : {"http", "socks5"}) {
        auto it = connections_.find(p);
        o += std::string("cc_egress_connections_total{proto=\"") + p + "\"} " +
             std::to_string(it == connections_.end() ? 0 : it->second) + "\n";
    }
    family("cc_egress_loop_connections", "counter", "",
           "Client connections accepted, by event loop (the loops after the first accept only while it is busy).");
    for (std::size_t i = 0; i < by_loop_.size(); ++i)
        o += "cc_egress_loop_connections_total{loop=\"" + std::to_string(i) + "\"} " + std::to_string(by_loop_[i]) + "\n";
    family("cc_egress_connections_active", "gauge", "", "Client connections open now.");
    o += "cc_egress_connections_active " + std::to_string(active_) + "\n";
    family("cc_egress_decisions", "counter", "",
           "Connection lines (one per tunnel or absolute-form request), by decision and reason class.");
    if (decisions_.empty()) o += "cc_egress_decisions_total{decision=\"allow\",reason=\"allowed\"} 0\n";
    for (const auto& [k, n] : decisions_)
        o += "cc_egress_decisions_total{decision=\"" + k.first + "\",reason=\"" + k.second + "\"} " + std::to_string(n) + "\n";
    family("cc_egress_bytes", "counter", "bytes",
           "Bytes relayed, up (client to origin) and down, counted when each connection line is written.");
    o += "cc_egress_bytes_total{direction=\"up\"} " + std::to_string(up_) + "\n";
    o += "cc_egress_bytes_total{direction=\"down\"} " + std::to_string(down_) + "\n";
    family("cc_egress_resolver_lookup_seconds", "histogram", "seconds", "Time to resolve a vetted name (c-ares).");
    for (std::size_t i = 0; i < buckets.size(); ++i)
        o += "cc_egress_resolver_lookup_seconds_bucket{le=\"" + number(buckets[i]) + "\"} " +
             std::to_string(lookup_buckets_[i]) + "\n";
    o += "cc_egress_resolver_lookup_seconds_bucket{le=\"+Inf\"} " + std::to_string(lookups_) + "\n";
    o += "cc_egress_resolver_lookup_seconds_sum " + number(lookup_sum_) + "\n";
    o += "cc_egress_resolver_lookup_seconds_count " + std::to_string(lookups_) + "\n";
    family("cc_egress_errors", "counter", "", "Errors by kind (I/O on either leg, failed dials, dropped lines).");
    if (errors_.empty()) o += "cc_egress_errors_total{kind=\"none\"} 0\n";
    for (const auto& [k, n] : errors_) o += "cc_egress_errors_total{kind=\"" + k + "\"} " + std::to_string(n) + "\n";
    family("cc_egress_asks", "counter", "", "Network asks, by answer (cached: answered from the session's cache).");
    for (const char* a : {"allow", "deny", "cached"}) {
        auto it = asks_.find(a);
        o += std::string("cc_egress_asks_total{answer=\"") + a + "\"} " +
             std::to_string(it == asks_.end() ? 0 : it->second) + "\n";
    }
    o += "# EOF\n";
    return o;
}

}  // namespace cc::net
