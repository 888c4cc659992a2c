#include "cc/net/rules.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <sstream>

#include "cc/core/io.hpp"

namespace cc::net {

namespace {

std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

Verdict deny(std::string rule, std::string reason, std::string err = "http_request_denied") {
    return Verdict{false, std::move(rule), std::move(reason), std::move(err)};
}

// Deny rules and non-public ranges see every IPv4 address an IPv6 address
// carries; an allow entry for an address matches its exact spellings only.
std::vector<Address> spellings(const Address& a) {
    std::vector<Address> out{a};
    for (const auto& v4 : a.embedded_v4_all()) out.push_back(v4);
    return out;
}

std::vector<Address> exact_spellings(const Address& a) {
    std::vector<Address> out{a};
    if (auto v4 = a.exact_v4()) out.push_back(*v4);
    return out;
}

// An allow entry's host and ports: "host", "host:PORTS", "[v6]:PORTS", or
// a bare IPv6 address (its colons are not a port).
struct Entry {
    std::string host;
    PortSet ports = default_ports();
};

Result<Entry> split_entry(const std::string& entry, const std::string& what) {
    Entry e{entry};
    std::string_view rest;
    if (!entry.empty() && entry.front() == '[') {
        auto close = entry.find(']');
        if (close == std::string::npos) return input_error(what, "'[' without ']'");
        e.host = entry.substr(1, close - 1);
        if (e.host.find(':') == std::string::npos || !parse_ip_literal(e.host))
            return input_error(what, "brackets hold an IPv6 address");
        rest = std::string_view(entry).substr(close + 1);
        if (rest.empty()) return e;
        if (rest.front() != ':') return input_error(what, "expected ':' and ports after ']'");
        rest.remove_prefix(1);
    } else {
        auto colon = entry.find(':');
        if (colon == std::string::npos || entry.find(':', colon + 1) != std::string::npos) return e;
        e.host = entry.substr(0, colon);
        rest = std::string_view(entry).substr(colon + 1);
    }
    auto p = parse_ports(rest, what);
    if (!p) return p.error();
    e.ports = std::move(*p);
    return e;
}

// An allow entry is a name pattern, or an IP literal naming one exact
// address; either with the ports it admits.
Status add_allow(RuleSet& r, const std::string& entry, const std::string& source) {
    std::string what = "allow entry " + in_quotes(entry) + " (" + source + ")";
    if (entry.find('/') != std::string::npos) return input_error(what, "address blocks cannot be allowed; name each address");
    auto e = split_entry(entry, what);
    if (!e) return e.error();
    if (auto a = parse_ip_literal(e->host)) {
        r.allow_addresses.push_back({Cidr{*a, a->is_v4 ? 32 : 128}, source, e->ports});
        return ok();
    }
    auto p = parse_pattern(e->host);
    if (!p) return Error{p.error().code, p.error().message, p.error().subject + " (" + source + ")", 0};
    r.allow_names.push_back({*p, source, e->ports});
    return ok();
}

// A deny entry is a name pattern, an address or an address block, denied
// on every port.
Status add_deny(RuleSet& r, const std::string& entry, const std::string& source) {
    if (auto colon = entry.find(':'); colon != std::string::npos && entry.find(':', colon + 1) == std::string::npos)
        return input_error("deny entry " + in_quotes(entry) + " (" + source + ")",
                           "deny entries take no port: a denied host is denied on every port");
    bool addressish = entry.find(':') != std::string::npos || entry.find('/') != std::string::npos ||
                      parse_ip_literal(entry).has_value();
    if (addressish) {
        auto c = parse_cidr(entry);
        if (!c) return Error{Errc::input, c.error().message, c.error().subject + " (" + source + ")", 0};
        r.deny_addresses.push_back({*c, source});
        return ok();
    }
    auto p = parse_pattern(entry);
    if (!p) return Error{p.error().code, p.error().message, p.error().subject + " (" + source + ")", 0};
    r.deny_names.push_back({*p, source});
    return ok();
}

Status add_address_file(std::vector<AddressRule>& list, const std::string& path) {
    auto lines = read_list_file(path);
    if (!lines) return lines.error();
    for (auto& [entry, source] : *lines) {
        auto c = parse_cidr(entry);
        if (!c) return Error{Errc::input, c.error().message, c.error().subject + " (" + source + ")", 0};
        list.push_back({*c, source});
    }
    return ok();
}

std::string with_ports(std::string text, const PortSet& ports) {
    if (ports == default_ports()) return text;
    return text + ":" + ports.to_string();
}

// An IPv6 address is bracketed when a port list follows it.
std::string address_text(const Address& a, const PortSet& ports) {
    if (a.v4() || ports == default_ports()) return a.to_string();
    return "[" + a.to_string() + "]";
}

Verdict port_denied(const Target& t, const PortSet& listed) {
    return deny("port not allowed", "port " + std::to_string(t.port) + " not allowed for host " + t.host +
                                        " (its allow entries admit " + listed.to_string() + ")");
}

}  // namespace

bool PortSet::contains(std::uint16_t port) const {
    return any || std::binary_search(ports.begin(), ports.end(), port);
}

void PortSet::add(const PortSet& other) {
    any = any || other.any;
    ports.insert(ports.end(), other.ports.begin(), other.ports.end());
    std::sort(ports.begin(), ports.end());
    ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
}

std::string PortSet::to_string() const {
    if (any) return "*";
    std::string out;
    for (auto p : ports) out += (out.empty() ? "" : ",") + std::to_string(p);
    return out;
}

nlohmann::json PortSet::to_json() const {
    if (any) return "*";
    return ports;
}

PortSet default_ports() { return PortSet{false, {80, 443}}; }

Result<PortSet> parse_ports(std::string_view text, const std::string& what) {
    PortSet out;
    if (text == "*") {
        out.any = true;
        return out;
    }
    auto bad = [&] { return input_error(what, "ports must be 1-65535, comma-separated, or *"); };
    while (true) {
        auto comma = text.find(',');
        std::string_view p = text.substr(0, comma);
        if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string_view::npos) return bad();
        unsigned v = static_cast<unsigned>(std::stoul(std::string(p)));
        if (v == 0 || v > 65535) return bad();
        out.ports.push_back(static_cast<std::uint16_t>(v));
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    std::sort(out.ports.begin(), out.ports.end());
    out.ports.erase(std::unique(out.ports.begin(), out.ports.end()), out.ports.end());
    return out;
}

std::string NameRule::text() const { return with_ports(pattern.text, ports); }

Result<std::vector<std::pair<std::string, std::string>>> read_list_file(const std::string& path) {
    auto text = io::read_input(path);
    if (!text) return text.error();
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream in(*text);
    std::string line;
    std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    for (int n = 1; std::getline(in, line); ++n) {
        if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        auto b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos) continue;
        auto e = line.find_last_not_of(" \t\r");
        std::string entry = line.substr(b, e - b + 1);
        if (entry.find_first_of(" \t") != std::string::npos)
            return input_error(in_quotes(path) + " line " + std::to_string(n), "one entry a line");
        out.emplace_back(entry, base + ":" + std::to_string(n));
    }
    return out;
}

Result<RuleSet> build_rules(const RuleOptions& o) {
    RuleSet r;
    r.network = o.network;
    std::string dir = o.data_dir.empty() ? io::data_dir() + "/egress" : o.data_dir;

    // The always-deny lists load even with the network off: --check reports them.
    auto names = read_list_file(dir + "/always-deny-names.txt");
    if (!names) return names.error();
    for (auto& [entry, source] : *names)
        if (auto s = add_deny(r, entry, "always-deny " + source); !s) return s.error();
    if (auto s = add_address_file(r.deny_addresses, dir + "/always-deny-addresses.txt"); !s) return s.error();
    for (auto& rule : r.deny_addresses) rule.source = "always-deny " + rule.source;
    if (auto s = add_address_file(r.non_public, dir + "/non-public-addresses.txt"); !s) return s.error();

    for (const auto& d : o.deny)
        if (auto s = add_deny(r, d, "--deny"); !s) return s.error();

    // Parse every allow source even when the network is off, so a bad pattern
    // is refused at start-up either way; then drop them.
    if (o.baseline) {
        for (const char* f : {"baseline-allow.txt", "github.txt"}) {
            auto lines = read_list_file(dir + "/" + f);
            if (!lines) return lines.error();
            for (auto& [entry, source] : *lines)
                if (auto s = add_allow(r, entry, source); !s) return s.error();
        }
    }
    for (std::size_t i = 0; i < o.spec_allow.size(); ++i)
        if (auto s = add_allow(r, o.spec_allow[i], "egressAllowlist[" + std::to_string(i) + "]"); !s)
            return s.error();
    for (const auto& f : o.allow_files) {
        auto lines = read_list_file(f);
        if (!lines) {
            // A list the operator named that cannot be read is bad input (exit 2).
            Error e = lines.error();
            e.code = Errc::input;
            return e;
        }
        for (auto& [entry, source] : *lines)
            if (auto s = add_allow(r, entry, source); !s) return s.error();
    }
    for (const auto& a : o.allow)
        if (auto s = add_allow(r, a, "--allow"); !s) return s.error();
    if (!o.network) {
        r.allow_names.clear();
        r.allow_addresses.clear();
    }
    return r;
}

const AddressRule* RuleSet::find_address(const std::vector<AddressRule>& list, const Address& a) const {
    for (const auto& sp : spellings(a))
        for (const auto& rule : list)
            if (rule.cidr.contains(sp)) return &rule;
    return nullptr;
}

bool RuleSet::allowed_exactly(const Address& a, std::uint16_t port) const {
    return find_allow_address(a, port) != nullptr;
}

const AddressRule* RuleSet::find_allow_address(const Address& a, std::uint16_t port) const {
    for (const auto& sp : exact_spellings(a))
        for (const auto& rule : allow_addresses)
            if (rule.cidr.contains(sp) && (port == 0 || rule.ports.contains(port))) return &rule;
    return nullptr;
}

std::optional<PortSet> RuleSet::allowed_ports(const Target& t) const {
    std::optional<PortSet> out;
    auto take = [&](const PortSet& p) {
        if (!out) out = p;
        else out->add(p);
    };
    if (t.address) {
        for (const auto& sp : exact_spellings(*t.address))
            for (const auto& rule : allow_addresses)
                if (rule.cidr.contains(sp)) take(rule.ports);
        return out;
    }
    for (const auto& a : allow_names)
        if (a.pattern.matches(t.host)) take(a.ports);
    return out;
}

Verdict RuleSet::check_target(const Target& t) const {
    if (!network) return deny("network off", "network access is off for this session");
    if (t.address) {
        if (auto* d = find_address(deny_addresses, *t.address))
            return deny(d->source + " " + d->cidr.to_string(), "address " + t.host + " is always denied",
                        "destination_ip_prohibited");
        if (auto* a = find_allow_address(*t.address, t.port))
            return check_address(t, *t.address).allow
                       ? Verdict{true, "allow " + with_ports(address_text(a->cidr.base, a->ports), a->ports) + " (" + a->source + ")",
                                 "allowed", ""}
                       : check_address(t, *t.address);
        if (auto listed = allowed_ports(t)) return port_denied(t, *listed);
        return deny("no allow entry", "address " + t.host + " is not in the allowlist", "destination_ip_prohibited");
    }
    for (const auto& d : deny_names)
        if (d.pattern.matches(t.host))
            return deny(d.source + " " + d.pattern.text, "host " + t.host + " is always denied");
    for (const auto& a : allow_names)
        if (a.pattern.matches(t.host) && (t.port == 0 || a.ports.contains(t.port)))
            return Verdict{true, "allow " + a.text() + " (" + a.source + ")", "allowed", ""};
    if (auto listed = allowed_ports(t)) return port_denied(t, *listed);
    return deny("no allow entry", "host " + t.host + " is not in the allowlist");
}

Verdict RuleSet::check_address(const Target& t, const Address& a) const {
    if (auto* d = find_address(deny_addresses, a))
        return deny(d->source + " " + d->cidr.to_string(),
                    "host " + t.host + " resolves to " + a.to_string() + ", which is denied",
                    "destination_ip_prohibited");
    if (auto* n = find_address(non_public, a); n && !allowed_exactly(a, t.port)) {
        // Named exactly, but for other ports: the port is what is refused.
        if (t.port != 0 && allowed_exactly(a, 0)) {
            PortSet listed;
            for (const auto& sp : exact_spellings(a))
                for (const auto& rule : allow_addresses)
                    if (rule.cidr.contains(sp)) listed.add(rule.ports);
            return deny("port not allowed", "host " + t.host + " resolves to " + a.to_string() + ", allowed on " +
                                                listed.to_string() + " only, not on port " + std::to_string(t.port));
        }
        return deny("non-public " + n->cidr.to_string(),
                    "host " + t.host + " resolves to non-public address " + a.to_string(),
                    "destination_ip_prohibited");
    }
    if (auto* h = find_address(host_own, a); h && !allowed_exactly(a, t.port))
        return deny(h->source, "host " + t.host + " resolves to " + a.to_string() + ", an address of the proxy's own host",
                    "destination_ip_prohibited");
    return Verdict{true, "address " + a.to_string(), "allowed", ""};
}

Verdict report_only(Verdict v) {
    if (v.allow) return v;
    if (v.rule == "no allow entry" || v.rule == "port not allowed" || v.rule.rfind("tls sni ", 0) == 0) {
        v.allow = true;
        v.would_deny = true;
        v.proxy_error.clear();
    }
    return v;
}

Verdict RuleSet::check_sni(const Target& t, const std::string& sni) const {
    auto n = canonical_target(sni);
    if (!n) return deny("tls sni", "TLS server name " + in_quotes(sni) + " is malformed");
    if (n->host == t.host) return Verdict{true, "sni matches", "allowed", ""};
    n->port = t.port;  // another name is allowed only for the tunnel's port
    Verdict v = check_target(*n);
    if (v.allow) return v;
    // A server name the deny lists refuse is refused as such, so report
    // mode (which lets only a missing allow entry through) refuses it too.
    if (v.rule != "no allow entry" && v.rule != "port not allowed") return v;
    if (n->address)
        if (Verdict a = check_address(*n, *n->address); !a.allow) return a;
    return deny("tls sni " + n->host,
                "TLS server name " + n->host + " does not match tunnel host " + t.host + " and is not allowed");
}

nlohmann::json RuleSet::to_json() const {
    auto names = [](const std::vector<NameRule>& v) {
        nlohmann::json a = nlohmann::json::array();
        for (const auto& r : v) a.push_back({{"pattern", r.pattern.text}, {"source", r.source}});
        return a;
    };
    auto addrs = [](const std::vector<AddressRule>& v) {
        nlohmann::json a = nlohmann::json::array();
        for (const auto& r : v) a.push_back({{"address", r.cidr.to_string()}, {"source", r.source}});
        return a;
    };
    // Allow entries with the ports each admits.
    nlohmann::json allow_n = names(allow_names), allow_a = addrs(allow_addresses);
    for (std::size_t i = 0; i < allow_names.size(); ++i) allow_n[i]["ports"] = allow_names[i].ports.to_json();
    for (std::size_t i = 0; i < allow_addresses.size(); ++i) allow_a[i]["ports"] = allow_addresses[i].ports.to_json();
    return {{"network", network ? "on" : "off"},
            {"allowNames", allow_n},
            {"allowAddresses", allow_a},
            {"denyNames", names(deny_names)},
            {"denyAddresses", addrs(deny_addresses)},
            {"nonPublicAddresses", addrs(non_public)}};
}

}  // namespace cc::net

namespace cc::net {

std::vector<AddressRule> host_addresses() {
    std::vector<AddressRule> out;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return out;
    for (ifaddrs* i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
        char text[INET6_ADDRSTRLEN] = "";
        const void* raw = i->ifa_addr->sa_family == AF_INET
                              ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr)
                              : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr);
        if (!::inet_ntop(i->ifa_addr->sa_family, raw, text, sizeof text)) continue;
        auto c = parse_cidr(text);
        if (!c) continue;
        AddressRule r;
        r.cidr = *c;
        r.source = std::string("this host's address (") + i->ifa_name + ")";
        out.push_back(std::move(r));
    }
    ::freeifaddrs(list);
    return out;
}

}  // namespace cc::net
