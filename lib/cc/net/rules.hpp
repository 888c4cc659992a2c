// The egress rule set of one session, and the decision for one target.
// A library user (cc-wrap printing its plan, cc-egress --check)
// builds it exactly as the proxy does:
//
//   cc::net::RuleOptions o;  o.spec_allow = spec.egressAllowlist;  o.allow = {"*.example.com"};
//   auto rules = cc::net::build_rules(o);            // input error names a bad pattern / file
//   auto t = cc::net::canonical_target("api.github.com");
//   cc::net::Verdict v = rules->check_target(*t);    // name rules, no DNS
//   for (auto& a : resolved) v = rules->check_resolved(*t, a);   // DNS rebinding checks
//   nlohmann::json plan = rules->to_json();
//
// Order: normalise; network off denies all; always-deny
// names and addresses beat every allow; then the allowlist (names by
// pattern, IP literals only by an entry for that exact address, each entry
// for its ports: "port not allowed" when a host is listed but not with the
// target's port); then, for
// names, every resolved address is vetted: always-deny, operator deny, and
// non-public ranges (loopback, private, link-local, ...) unless an allow entry
// names that exact address. The dialled address is one that was vetted.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/net/host.hpp"

namespace cc::net {

struct Verdict {
    bool allow = false;
    std::string rule;    // what decided: "allow *.github.com (github)", "always-deny 169.254.0.0/16"
    std::string reason;  // a short sentence for logs and the 403 body
    // RFC 9209 Proxy-Status error type: http_request_denied, destination_ip_prohibited.
    std::string proxy_error = "http_request_denied";
    // Report mode: allowed although the allowlist would deny it (rule and
    // reason say what would have denied it).
    bool would_deny = false;
};

// Report mode (--report): what the allowlist alone would deny ("no allow
// entry", a TLS server name that is not allowed) is allowed and marked
// would_deny. Always-deny, --deny, non-public addresses, network off and
// malformed input stay denied.
Verdict report_only(Verdict v);

// The ports an allow entry admits: `host:443`, `host:443,8443`, `host:*`.
// An entry written without a port admits 80 and 443 only (Squid's CONNECT
// port list and the sandbox runtimes agree: a name is not every service
// on that host).
struct PortSet {
    bool any = false;
    std::vector<std::uint16_t> ports;  // sorted, each once; unused when `any`
    bool contains(std::uint16_t port) const;
    void add(const PortSet& other);
    bool operator==(const PortSet& o) const { return any == o.any && (any || ports == o.ports); }
    std::string to_string() const;  // "80,443" or "*"
    nlohmann::json to_json() const; // [80,443] or "*"
};
PortSet default_ports();  // 80 and 443
// "443", "443,8443", "*"; an input error naming `what` otherwise.
Result<PortSet> parse_ports(std::string_view text, const std::string& what);

struct NameRule {
    HostPattern pattern;
    std::string source;  // "baseline", "github", "spec", "--allow", "FILE:LINE", "always-deny"
    PortSet ports = default_ports();  // allow entries only; deny entries hold every port
    std::string text() const;          // as written back: "*.example.com", "host:8443"
};
struct AddressRule {
    Cidr cidr;
    std::string source;
    PortSet ports = default_ports();  // allow entries only
};

struct RuleOptions {
    bool network = true;                  // false: both proxies run, everything is refused
    bool baseline = true;                 // share/cc/egress/baseline-allow.txt and github.txt
    std::vector<std::string> spec_allow;  // SandboxSpec.egressAllowlist
    std::vector<std::string> allow;       // --allow
    std::vector<std::string> allow_files; // --allow-file
    std::vector<std::string> deny;        // --deny: name patterns or addresses/CIDR blocks
    std::string data_dir;                 // empty: cc::io::data_dir() + "/egress"
};

class RuleSet {
public:
    bool network = true;
    std::vector<NameRule> allow_names;
    std::vector<AddressRule> allow_addresses;  // exact addresses only
    std::vector<NameRule> deny_names;          // always-deny first, then --deny
    std::vector<AddressRule> deny_addresses;   // always-deny first, then --deny
    std::vector<AddressRule> non_public;       // refused unless allowed exactly
    // The proxy's own host's interface addresses (public ones included: a
    // service there bound to every address answers on them): refused
    // unless allowed exactly. host_addresses() fills them at start.
    std::vector<AddressRule> host_own;

    // Name and IP-literal rules; no resolution.
    Verdict check_target(const Target& t) const;
    // One address a name resolved to (or the literal itself): always-deny,
    // --deny, and non-public ranges unless allowed exactly.
    Verdict check_address(const Target& t, const Address& a) const;
    // Is this SNI acceptable on a tunnel opened for `t`? Equal after
    // normalisation, or itself allowed by the name rules (on t's port).
    Verdict check_sni(const Target& t, const std::string& sni) const;
    // The ports the allow entries matching t's host (or address) admit,
    // together; nullopt when none matches. What --check shows.
    std::optional<PortSet> allowed_ports(const Target& t) const;

    nlohmann::json to_json() const;

private:
    const AddressRule* find_address(const std::vector<AddressRule>& list, const Address& a) const;
    // An allow entry for this exact address admitting `port` (0: any port).
    const AddressRule* find_allow_address(const Address& a, std::uint16_t port) const;
    bool allowed_exactly(const Address& a, std::uint16_t port) const;
};

Result<RuleSet> build_rules(const RuleOptions& o);

// This host's interface addresses (getifaddrs), each as an exact rule whose
// source names the interface.
std::vector<AddressRule> host_addresses();

// One list file: one entry a line, '#' starts a comment, blank lines ignored.
// Entries are returned with their "FILE:LINE" source.
Result<std::vector<std::pair<std::string, std::string>>> read_list_file(const std::string& path);

}  // namespace cc::net
