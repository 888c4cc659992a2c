#include "cc/net/rules.hpp"

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

// An allow entry is a name pattern, or an IP literal naming one exact address.
Status add_allow(RuleSet& r, const std::string& entry, const std::string& source) {
    if (entry.find('/') != std::string::npos) {
        return input_error("allow entry " + in_quotes(entry) + " (" + source + ")",
                           "address blocks cannot be allowed; name each address");
    }
    if (auto a = parse_ip_literal(entry)) {
        r.allow_addresses.push_back({Cidr{*a, a->is_v4 ? 32 : 128}, source});
        return ok();
    }
    auto p = parse_pattern(entry);
    if (!p) return Error{p.error().code, p.error().message, p.error().subject + " (" + source + ")", 0};
    r.allow_names.push_back({*p, source});
    return ok();
}

// A deny entry is a name pattern, an address or an address block.
Status add_deny(RuleSet& r, const std::string& entry, const std::string& source) {
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

}  // namespace

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

bool RuleSet::allowed_exactly(const Address& a) const { return find_allow_address(a) != nullptr; }

const AddressRule* RuleSet::find_allow_address(const Address& a) const {
    for (const auto& sp : exact_spellings(a))
        for (const auto& rule : allow_addresses)
            if (rule.cidr.contains(sp)) return &rule;
    return nullptr;
}

Verdict RuleSet::check_target(const Target& t) const {
    if (!network) return deny("network off", "network access is off for this session");
    if (t.address) {
        if (auto* d = find_address(deny_addresses, *t.address))
            return deny(d->source + " " + d->cidr.to_string(), "address " + t.host + " is always denied",
                        "destination_ip_prohibited");
        if (auto* a = find_allow_address(*t.address))
            return check_address(t, *t.address).allow
                       ? Verdict{true, "allow " + a->cidr.base.to_string() + " (" + a->source + ")", "allowed", ""}
                       : check_address(t, *t.address);
        return deny("no allow entry", "address " + t.host + " is not in the allowlist", "destination_ip_prohibited");
    }
    for (const auto& d : deny_names)
        if (d.pattern.matches(t.host))
            return deny(d.source + " " + d.pattern.text, "host " + t.host + " is always denied");
    for (const auto& a : allow_names)
        if (a.pattern.matches(t.host))
            return Verdict{true, "allow " + a.pattern.text + " (" + a.source + ")", "allowed", ""};
    return deny("no allow entry", "host " + t.host + " is not in the allowlist");
}

Verdict RuleSet::check_address(const Target& t, const Address& a) const {
    if (auto* d = find_address(deny_addresses, a))
        return deny(d->source + " " + d->cidr.to_string(),
                    "host " + t.host + " resolves to " + a.to_string() + ", which is denied",
                    "destination_ip_prohibited");
    if (auto* n = find_address(non_public, a); n && !allowed_exactly(a))
        return deny("non-public " + n->cidr.to_string(),
                    "host " + t.host + " resolves to non-public address " + a.to_string(),
                    "destination_ip_prohibited");
    return Verdict{true, "address " + a.to_string(), "allowed", ""};
}

Verdict report_only(Verdict v) {
    if (v.allow) return v;
    if (v.rule == "no allow entry" || v.rule.rfind("tls sni ", 0) == 0) {
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
    Verdict v = check_target(*n);
    if (v.allow) return v;
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
    return {{"network", network ? "on" : "off"},
            {"allowNames", names(allow_names)},
            {"allowAddresses", addrs(allow_addresses)},
            {"denyNames", names(deny_names)},
            {"denyAddresses", addrs(deny_addresses)},
            {"nonPublicAddresses", addrs(non_public)}};
}

}  // namespace cc::net
