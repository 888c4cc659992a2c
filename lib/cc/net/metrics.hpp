// cc-egress's counters, shared by every event loop, and their page in the
// OpenMetrics text format (served on --metrics-socket, a Unix socket only).
// Names follow the Prometheus conventions; the man page maps them to the
// counters smokescreen and Squid operators know (cn.atpt.total,
// acl.allow/acl.deny, resolver.lookup_time, client_http.kbytes_in/out).
//
//   cc_egress_connections_total{proto}        accepted client connections
//   cc_egress_connections_active              open client connections
//   cc_egress_decisions_total{decision,reason} one per connection line
//   cc_egress_bytes_total{direction}          relayed bytes, up (to origins) / down
//   cc_egress_resolver_lookup_seconds         histogram of name resolutions
//   cc_egress_errors_total{kind}              I/O and internal errors by kind
//   cc_egress_asks_total{answer}              network asks put to the approver
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace cc::net {

class Metrics {
public:
    void connection_opened(const std::string& proto, std::size_t loop);
    void set_loops(std::size_t n);  // the event loops counted by connection_opened
    void connection_closed();
    // From a finished connection line: its decision (reason class) and bytes.
    void connection_line(const nlohmann::json& line);
    void resolved(double seconds);
    void error(const std::string& kind, std::uint64_t n = 1);
    void ask(const std::string& answer);  // "allow", "deny", "cached"
    std::uint64_t errors(const std::string& kind) const;
    // The whole page, ending in "# EOF".
    std::string render() const;

    // The bounded reason class of a connection line's rule ("no_allow_entry",
    // "port_not_allowed", "always_deny", "non_public", "dns_error", ...).
    static std::string reason_class(const nlohmann::json& line);

    static constexpr std::array<double, 11> buckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                       0.1,   0.25,   0.5,   1.0,  2.5};

private:
    mutable std::mutex mu_;
    std::map<std::string, std::uint64_t> connections_;  // by proto
    std::vector<std::uint64_t> by_loop_;                // by event loop
    std::int64_t active_ = 0;
    std::map<std::pair<std::string, std::string>, std::uint64_t> decisions_;
    std::uint64_t up_ = 0, down_ = 0;
    std::array<std::uint64_t, buckets.size()> lookup_buckets_{};
    std::uint64_t lookups_ = 0;
    double lookup_sum_ = 0;
    std::map<std::string, std::uint64_t> errors_;
    std::map<std::string, std::uint64_t> asks_;
};

}  // namespace cc::net
