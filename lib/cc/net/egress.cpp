#include "cc/net/egress.hpp"

#include "cc/core/json_writer.hpp"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "cc/core/io.hpp"
#include "cc/core/json_reader.hpp"
#include "cc/net/proxy.hpp"
#include "cc/net/resolver.hpp"
#include "cc/policy/policy.hpp"
#include "cc/spec/spec.hpp"

namespace cc::net {

using json = nlohmann::json;

json Plan::to_json() const {
    return {{"sessionId", session_id}, {"network", network ? "on" : "off"}, {"networkRule", network_rule},
            {"policy", policy_source}, {"rules", rules.to_json()}};
}

Result<Plan> make_plan(const EgressOptions& o) {
    Plan plan;
    RuleOptions ro;
    policy::Mode mode = policy::Mode::chat;
    bool network = true;
    std::string set_by = "default";
    if (o.spec_path) {
        auto spec = spec::load_sandbox_spec(*o.spec_path);
        if (!spec) return spec.error();
        plan.session_id = spec->sessionId;
        ro.spec_allow = spec->egressAllowlist;
        mode = spec->mode;
        network = spec->networkEnabled;
        set_by = "spec.networkEnabled";
    }
    if (o.network) {
        if (*o.network != "on" && *o.network != "off")
            return input_error("--network '" + *o.network + "'", "must be on or off");
        network = *o.network == "on";
        set_by = "--network";
    }
    // --policy, else the operator's file (/etc/cc/policy.json), else the built-in one.
    auto loaded = policy::load_effective(o.policy_path.value_or(""), policy::default_policy(), &plan.policy_source);
    if (!loaded) return loaded.error();
    policy::Policy pol = std::move(*loaded);
    // The network rule is read once, here. deny -> off; allow -> on; ask ->
    // on, with each new host:port the rules allow put to the approver.
    policy::Verdict v = policy::decide(pol, {"network_access", mode, std::nullopt});
    plan.network_verdict = v;
    plan.network_rule = {{"decision", policy::to_string(v.decision)}, {"source", v.source}, {"reason", v.reason},
                         {"mode", policy::to_string(mode)}};
    if (v.decision == policy::Decision::deny && network) {
        network = false;
        set_by = "policy " + v.source;
    }
    plan.network_rule["networkSetBy"] = set_by;
    plan.network = network;
    plan.ask = network && v.decision == policy::Decision::ask;
    ro.network = network;
    ro.baseline = !o.no_baseline;
    ro.allow = o.allow;
    ro.allow_files = o.allow_files;
    ro.deny = o.deny;
    auto rules = build_rules(ro);
    if (!rules) return rules.error();
    plan.rules = std::move(*rules);
    plan.rules.host_own = host_addresses();
    plan.policy = std::move(pol);
    plan.mode = mode;
    return plan;
}

Result<std::string> read_auth_token(const std::string& path) {
    std::string what = "--auth-token-file '" + path + "'";
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return input_error(what, "cannot read");
    if (!S_ISREG(st.st_mode)) return input_error(what, "is not a regular file");
    if (st.st_mode & (S_IRWXG | S_IRWXO)) return input_error(what, "is readable by other users (chmod 600 it)");
    auto text = io::read_input(path);
    if (!text) return text.error();
    std::string token = text->substr(0, text->find('\n'));
    if (!token.empty() && token.back() == '\r') token.pop_back();
    if (token.empty() || token.size() > 255) return input_error(what, "the token (first line) must be 1 to 255 bytes");
    for (unsigned char ch : token)
        if (ch < 0x21 || ch > 0x7e) return input_error(what, "the token must be printable ASCII without spaces");
    return token;
}

namespace {

// The Unix sockets a start would make (--unix-dir's two, --fd-inbox,
// --metrics-socket): each in a directory that exists and can be written,
// each path short enough for a socket address.
Status check_socket_paths(const EgressOptions& o) {
    std::vector<std::pair<std::string, std::string>> paths;  // option, socket path
    if (o.unix_dir) {
        struct stat st {};
        if (::stat(o.unix_dir->c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
            return input_error("--unix-dir '" + *o.unix_dir + "'", "is not a directory");
        paths.push_back({"--unix-dir", *o.unix_dir + "/http.sock"});
        paths.push_back({"--unix-dir", *o.unix_dir + "/socks.sock"});
    }
    if (o.fd_inbox) paths.push_back({"--fd-inbox", *o.fd_inbox});
    if (o.metrics_socket) paths.push_back({"--metrics-socket", *o.metrics_socket});
    for (const auto& [opt, path] : paths) {
        if (path.size() >= sizeof(sockaddr_un{}.sun_path))
            return input_error(opt + " '" + path + "'", "is too long for a Unix socket (at most 107 bytes)");
        auto slash = path.rfind('/');
        std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
            return input_error(opt + " '" + path + "'", "its directory does not exist");
        if (::access(dir.c_str(), W_OK | X_OK) != 0)
            return input_error(opt + " '" + path + "'", "its directory cannot be written");
    }
    return ok();
}

}  // namespace

Result<RuleSet> learn_refusals(const EgressOptions& o) {
    RuleOptions ro;
    ro.network = true;
    ro.baseline = false;
    ro.deny = o.deny;
    // The operator's own entries: a non-public address they name exactly
    // (--allow 10.0.0.5) is one enforcement lets through.
    ro.allow = o.allow;
    ro.allow_files = o.allow_files;
    return build_rules(ro);
}

Result<std::vector<std::string>> learn_allowlist(std::string_view jsonl, const RuleSet& refusals) {
    // Each host with the ports it was reached on.
    std::map<std::string, std::set<int>> hosts;
    std::size_t n = 0;
    // What enforcement refuses whatever the allowlist says is never learnt:
    // an always-deny or --deny name or address, a non-public address (a
    // literal, or the address a name was resolved to), whichever field the
    // name came from.
    // (A missing allow entry, or port, is what learn is for.)
    auto bad = [](const Verdict& v) { return !v.allow && v.rule != "no allow entry" && v.rule != "port not allowed"; };
    auto refused = [&](const Target& t, const json& line) {
        if (bad(refusals.check_target(t))) return true;
        if (t.address && bad(refusals.check_address(t, *t.address))) return true;
        if (line.contains("address") && line["address"].is_string())
            if (auto a = parse_ip_literal(line["address"].get<std::string>()))
                if (bad(refusals.check_address(t, *a))) return true;
        return false;
    };
    while (!jsonl.empty()) {
        ++n;
        auto nl = jsonl.find('\n');
        std::string_view line = jsonl.substr(0, nl);
        jsonl.remove_prefix(nl == std::string_view::npos ? jsonl.size() : nl + 1);
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        json j = json::parse(line, nullptr, false);
        if (!j.is_object()) return input_error("line " + std::to_string(n), "is not a JSON object");
        if (cc::json::string_at(j, "event") != "connection") continue;
        // A captured sandbox's DNS answers: the connection that follows says the port.
        if (cc::json::string_at(j, "proto") == "dns") continue;
        // A name written as {"bytes":...} (not UTF-8) is never learnt: no
        // allowlist entry can name it.
        std::string rule = cc::json::string_at(j, "rule"), host = cc::json::string_at(j, "host");
        int port = j.contains("port") && j["port"].is_number_integer() ? j["port"].get<int>() : 0;
        std::vector<std::string> want;
        if (rule.rfind("tls sni ", 0) == 0) {
            want = {rule.substr(8), host};  // the server name to allow, and the tunnel's target
        } else if (cc::json::string_at(j, "decision") == "allow" || rule == "no allow entry" || rule == "port not allowed") {
            want = {host};
        }
        for (const auto& w : want) {
            auto t = canonical_target(w);
            if (w.empty() || !t) continue;
            if (port > 0 && port <= 65535) t->port = static_cast<std::uint16_t>(port);
            if (refused(*t, j)) continue;
            std::string key = t->address && !t->address->v4() ? "[" + t->host + "]" : t->host;
            auto& ports = hosts[key];
            if (port > 0 && port <= 65535) ports.insert(port);
        }
    }
    // A host reached on 80 and 443 only needs no port: that is what a bare
    // entry admits. Otherwise every port it was reached on is written.
    std::vector<std::string> out;
    for (const auto& [host, ports] : hosts) {
        bool defaults = std::all_of(ports.begin(), ports.end(), [](int p) { return p == 80 || p == 443; });
        std::string entry = host;
        if (!defaults) {
            entry += ":";
            for (auto it = ports.begin(); it != ports.end(); ++it) entry += (it == ports.begin() ? "" : ",") + std::to_string(*it);
        } else if (entry.front() == '[') {
            entry = entry.substr(1, entry.size() - 2);  // a bare IPv6 address takes no brackets
        }
        out.push_back(entry);
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool check_targets(const EgressOptions& o, const Plan& plan, const std::function<void(const json&)>& out) {
    std::unique_ptr<Resolver> resolver;
    bool all = true;
    for (const auto& text : o.check) {
        json line = {{"host", text}};
        // HOST or HOST:PORT ([v6]:PORT); a bare IPv6 address has no port.
        Result<Target> t = input_error("", "");
        bool has_port = !text.empty() &&
                         ((text.front() == '[' && text.find("]:") != std::string::npos) ||
                          (text.front() != '[' && std::count(text.begin(), text.end(), ':') == 1));
        t = has_port ? parse_authority(text) : canonical_target(text);
        if (!t) {
            line["decision"] = "deny";
            line["rule"] = "malformed";
            line["reason"] = t.error().one_line();
            all = false;
            out(line);
            continue;
        }
        line["canonical"] = t->host;
        if (t->port) line["port"] = t->port;
        Verdict v = plan.rules.check_target(*t);
        if (auto ports = plan.rules.allowed_ports(*t)) line["ports"] = ports->to_json();
        if (v.allow && o.resolve) {
            std::vector<Address> addrs;
            if (t->address) {
                addrs.push_back(*t->address);
            } else {
                if (!resolver) {
                    auto r = Resolver::create({o.dns_server, 5000, 2});
                    if (r) resolver = std::move(*r);
                }
                Resolution res = resolver ? resolver->resolve_blocking(t->host) : Resolution{false, "no resolver", {}};
                if (!res.ok) v = Verdict{false, "dns", "cannot resolve " + t->host + ": " + res.error, "dns_error"};
                addrs = res.addresses;
            }
            json list = json::array();
            for (const auto& a : addrs) list.push_back(a.to_string());
            line["addresses"] = list;
            for (const auto& a : addrs) {
                Verdict av = plan.rules.check_address(*t, a);
                if (!av.allow) {
                    v = av;
                    break;
                }
            }
        }
        line["decision"] = v.allow ? "allow" : "deny";
        line["rule"] = v.rule;
        line["reason"] = v.reason;
        if (v.allow && plan.ask) {
            // What the proxy would do: the rules admit it, the policy asks.
            // The approver's answer is not known here, and with none an ask
            // is a refusal, so the target does not count as allowed.
            const bool approver = !o.approver.empty();
            line["decision"] = "ask";
            line["ask"] = {{"source", plan.network_verdict.source},
                           {"reason", plan.network_verdict.reason},
                           {"approver", approver}};
            line["reason"] = approver ? "the rules allow it; the policy's network_access rule asks: put to the approver"
                                      : "the rules allow it; the policy's network_access rule asks and there is no "
                                        "approver: refused (ask without approver)";
            v.allow = false;
        }
        all = all && v.allow;
        out(line);
    }
    return all;
}

namespace {

// Connection lines leave through a writer thread and a bounded queue, so a
// parent that reads stdout slowly never stalls the proxy's event loop. When
// the queue is full lines are dropped and counted (and the count is logged).
class LineWriter {
public:
    LineWriter(std::function<void(const json&)> out, std::function<void(std::string_view)> text)
        : out_(std::move(out)), text_(std::move(text)) {
        thread_ = std::thread([this] { loop(); });
    }
    ~LineWriter() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            done_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }
    void push(json j) {
        std::lock_guard<std::mutex> lock(mu_);
        if (queue_.size() >= max_queued) {
            ++dropped_;
            return;
        }
        queue_.push_back(std::move(j));
        if (queue_.size() == 1) cv_.notify_one();  // only on empty -> non-empty
    }
    std::uint64_t dropped() const {
        std::lock_guard<std::mutex> lock(mu_);
        return dropped_;
    }

private:
    static constexpr std::size_t max_queued = 100000;
    void loop() {
        std::unique_lock<std::mutex> lock(mu_);
        while (true) {
            cv_.wait(lock, [this] { return done_ || !queue_.empty(); });
            if (queue_.empty() && done_) return;
            if (!done_) {
                // Let a busy proxy batch up lines: one wake-up per 5 ms at most.
                lock.unlock();
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                lock.lock();
            }
            std::deque<json> batch;
            batch.swap(queue_);
            lock.unlock();
            if (text_) {
                std::string lines;
                for (const auto& j : batch) {
                    lines += cc::json::write(j);
                    lines += '\n';
                }
                text_(lines);
            } else {
                for (const auto& j : batch) out_(j);
            }
            lock.lock();
        }
    }
    std::function<void(const json&)> out_;
    std::function<void(std::string_view)> text_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<json> queue_;
    bool done_ = false;
    std::uint64_t dropped_ = 0;
    std::thread thread_;
};

// --tls-ports: "443,8443", or "none".
Result<std::vector<std::uint16_t>> parse_tls_ports(const std::string& text) {
    std::vector<std::uint16_t> out;
    if (text == "none") return out;
    std::size_t start = 0;
    while (start <= text.size()) {
        auto comma = text.find(',', start);
        std::string p = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        unsigned v = 0;
        bool good = !p.empty() && p.size() <= 5;
        for (char c : p) {
            if (c < '0' || c > '9') good = false;
            else v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if (!good || v == 0 || v > 65535)
            return input_error("--tls-ports '" + text + "'", "is not a comma-separated list of ports 1-65535, or none");
        out.push_back(static_cast<std::uint16_t>(v));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

}  // namespace

Result<int> run_egress(const EgressOptions& o, const std::function<void(const json&)>& out,
                       const std::function<void(const std::string&)>& log,
                       const std::function<void(std::string_view)>& out_text) {
    // The spec on stdin is read to its end, which would look like a parent dying.
    if (o.exit_with_stdin && o.spec_path && *o.spec_path == "-")
        return input_error("--exit-with-stdin", "cannot be used with --spec -");
    for (auto [name, v] : {std::pair{"--header-timeout", o.header_timeout}, std::pair{"--idle-timeout", o.idle_timeout}})
        if (!(v >= 0 && v <= 86400 * 7)) {
            std::ostringstream text;
            text << name << " " << v;
            return input_error(text.str(), "must be 0 (off) to 604800 seconds");
        }
    if (o.threads < 0 || o.threads > 64) return input_error("--threads " + std::to_string(o.threads), "must be 0 (one per CPU) to 64");
    // Everything a start checks, --dry-run checks too (it stops short of
    // listening): the token file and its mode, the TLS ports, the approver's
    // timeout, where the sockets would be made.
    std::optional<std::string> token;
    if (o.auth_token_file && o.check.empty()) {
        auto t = read_auth_token(*o.auth_token_file);
        if (!t) return t.error();
        token = std::move(*t);
    }
    auto plan = make_plan(o);
    if (!plan) return plan.error();
    if (!o.check.empty()) return check_targets(o, *plan, out) ? 0 : 1;
    // Interception: exact host names; credentials read now (a start with a
    // credential that cannot be read starts nothing).
    std::vector<std::string> intercept;
    for (const auto& h : o.intercept) {
        auto t = canonical_target(h);
        if (h.empty() || !t || h.find_first_of("*?[:/") != std::string::npos)
            return input_error("--intercept '" + h + "'", "takes an exact host name (no port or pattern)");
        if (std::find(intercept.begin(), intercept.end(), t->host) == intercept.end()) intercept.push_back(t->host);
    }
    std::vector<Credential> credentials;
    for (const auto& spec : o.credentials) {
        auto c = parse_credential(spec);
        if (!c) return c.error();
        for (const auto& prev : credentials)
            if (prev.name == c->name) return input_error("--credential " + c->name, "is given twice");
        credentials.push_back(std::move(*c));
    }
    if (o.upstream_ca && intercept.empty() && credentials.empty())
        return input_error("--upstream-ca", "only with --intercept or --credential");
    if (o.ca_cert_out && intercept.empty() && credentials.empty())
        return input_error("--ca-cert-out", "only with --intercept or --credential");
    std::shared_ptr<RequestRules> request_rules;
    if (!intercept.empty() || !credentials.empty()) {
        auto rr = load_request_rules();
        if (!rr) return rr.error();
        request_rules = std::make_shared<RequestRules>(std::move(*rr));
        if (o.upstream_ca) {
            auto pem = io::read_input(*o.upstream_ca);
            if (!pem) return pem.error();
            if (pem->find("-----BEGIN CERTIFICATE-----") == std::string::npos)
                return input_error("--upstream-ca '" + *o.upstream_ca + "'", "cannot be read as PEM certificates");
        }
    }
    auto tls_ports = parse_tls_ports(o.tls_ports);
    if (!tls_ports) return tls_ports.error();
    if (o.approver_timeout_ms <= 0)
        return input_error("--approver-timeout " + std::to_string(o.approver_timeout_ms), "must be a positive number of milliseconds");
    if (auto s = check_socket_paths(o); !s) return s.error();
    if (o.dry_run) {
        json j = plan->to_json();
        j["event"] = "plan";
        out(j);
        return 0;
    }

    auto rules = std::make_shared<RuleSet>(std::move(plan->rules));
    ProxyConfig cfg;
    cfg.rules = rules;
    cfg.dns.server = o.dns_server;
    cfg.listen_host = o.listen;
    cfg.http_port = o.http_port;
    cfg.socks_port = o.socks_port;
    cfg.unix_dir = o.unix_dir;
    cfg.fd_inbox = o.fd_inbox;
    cfg.fd_inbox_once = o.fd_inbox_once;
    cfg.exit_with_stdin = o.exit_with_stdin;
    cfg.sni_check = o.sni_check;
    cfg.report = o.report;
    cfg.tls_ports = *tls_ports;
    cfg.handshake_timeout_ms = static_cast<int>(o.header_timeout * 1000);
    cfg.idle_timeout_ms = static_cast<int>(o.idle_timeout * 1000);
    cfg.threads = o.threads;
    cfg.first_byte_timeout_ms = static_cast<int>(o.first_byte_timeout * 1000);
    cfg.max_connections = o.max_connections;
    cfg.max_client_connections = o.max_client_connections;
    cfg.auth_token = token;
    cfg.ask = plan->ask;
    if (!o.approver.empty() && !plan->ask)
        log(plan->network ? "--approver: the network rule is " +
                                std::string(policy::to_string(plan->network_verdict.decision)) + ", not ask: no host will be asked"
                          : std::string("--approver: the network is off: no host will be asked"));
    cfg.approver = policy::approver_from_command(o.approver, std::chrono::milliseconds(o.approver_timeout_ms));
    cfg.network_rule = plan->network_verdict;
    cfg.ask_question = {{"action", "network_access"},
                        {"mode", plan->network_rule["mode"]},
                        {"sessionId", plan->session_id},
                        {"reason", plan->network_verdict.reason},
                        {"source", plan->network_verdict.source}};
    cfg.metrics_socket = o.metrics_socket;
    cfg.intercept = std::move(intercept);
    cfg.credentials = std::move(credentials);
    cfg.upstream_ca = o.upstream_ca;
    cfg.ca_cert_out = o.ca_cert_out;
    cfg.mode = plan->mode;
    cfg.policy = std::make_shared<policy::Policy>(plan->policy);
    cfg.request_rules = std::move(request_rules);
    cfg.ready = {{"sessionId", plan->session_id},
                 {"network", plan->network ? "on" : "off"},
                 {"networkRule", plan->network_rule},
                 {"policy", plan->policy_source},
                 {"allowNames", rules->allow_names.size()},
                 {"allowAddresses", rules->allow_addresses.size()},
                 {"pid", static_cast<long>(::getpid())},
                 {"headerTimeoutMs", cfg.handshake_timeout_ms},
                 {"idleTimeoutMs", cfg.idle_timeout_ms},
                 {"tlsPorts", o.sni_check ? json(cfg.tls_ports) : json::array()},
                 {"auth", token.has_value()},
                 {"report", o.report},
                 {"ask", plan->ask},
                 {"approver", !cfg.approver.argv.empty()}};
    std::uint64_t dropped = 0;
    Result<ProxyStats> stats = ProxyStats{};
    {
        LineWriter writer(out, out_text);
        cfg.on_ready = out;  // the first line, written before anything else
        cfg.on_connection = [&writer](json j) { writer.push(std::move(j)); };
        cfg.on_log = log;
        stats = run_proxy(cfg);
        dropped = writer.dropped();
    }  // the writer flushes every queued line here
    if (dropped) log("stdout too slow: " + std::to_string(dropped) + " connection lines dropped");
    if (!stats) return stats.error();
    log("stopped: " + std::to_string(stats->connections) + " connections, " + std::to_string(stats->denied) +
        " denied");
    return 0;
}

}  // namespace cc::net
