// cc-egress: one session's HTTP + SOCKS5 proxy pair enforcing its allowlist.
// Options -> cc::net::run_egress -> JSON Lines on stdout. See cc-egress(1).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cc/core/cli.hpp"
#include "cc/core/io.hpp"
#include "cc/core/tool.hpp"
#include "cc/core/output.hpp"
#include "cc/net/egress.hpp"
#include "cc/net/egress_text.hpp"
#include "cc/core/json_writer.hpp"

int main(int argc, char** argv) {
    return cc::tool::run("cc-egress", [&] {
        // Before any secret is read: no process of this uid (the sandbox's,
        // run by root) may trace this one or read its memory.
        if (!cc::tool::keep_memory_private()) {
            std::cerr << cc::tool::log_prefix("cc-egress") << "cannot make the process undumpable (prctl)\n";
            return cc::tool::exit_failure;
        }
        cc::net::EgressOptions o;
        std::string spec, policy, network, unix_dir, fd_inbox;
        CLI::App app{"cc-egress: a session's HTTP and SOCKS5 egress proxies with an allowlist"};
        cc::tool::standard_flags(app, "cc-egress");
        cc::tool::Format format = cc::tool::Format::auto_;
        cc::tool::add_format_option(app, format);
        app.add_option("--spec", spec, "SandboxSpec JSON file ('-' is stdin)");
        app.add_option("--policy", policy, "policy file deciding the network_access rule");
        app.add_option("--allow", o.allow, "allow a host pattern or an exact IP address, with :PORTS (default 80,443; * = any) (repeatable)")->allow_extra_args(false);
        app.add_option("--allow-file", o.allow_files, "allow every entry of a list file (repeatable)")->allow_extra_args(false);
        app.add_option("--deny", o.deny, "deny a host pattern, address or CIDR block (repeatable)")->allow_extra_args(false);
        app.add_flag("--no-baseline", o.no_baseline, "leave out the curated baseline and GitHub lists");
        app.add_option("--network", network, "on or off; overrides the spec's networkEnabled");
        app.add_option("--check", o.check, "decide HOST[:PORT] targets without listening")->expected(1, -1);
        app.add_flag("--resolve", o.resolve, "with --check: resolve allowed names and vet their addresses");
        app.add_flag("--dry-run", o.dry_run, "print the plan (rules, network decision) and exit");
        app.add_option("--dns-server", o.dns_server, "resolve with this server (IP[:PORT]) instead of resolv.conf");
        app.add_option("--listen", o.listen, "TCP listen address (default 127.0.0.1)");
        app.add_option("--http-port", o.http_port, "HTTP proxy port (default: ephemeral)");
        app.add_option("--socks-port", o.socks_port, "SOCKS5 proxy port (default: ephemeral)");
        app.add_option("--unix-dir", unix_dir, "also listen on DIR/http.sock and DIR/socks.sock");
        app.add_option("--fd-inbox", fd_inbox, "Unix socket accepting listening sockets over SCM_RIGHTS");
        app.add_flag("--fd-inbox-once", o.fd_inbox_once,
                     "the fd inbox takes one handover, then is closed and removed");
        app.add_flag("--exit-with-stdin", o.exit_with_stdin, "exit when stdin (a pipe) reaches end of file");
        app.add_option("--header-timeout", o.header_timeout,
                       "seconds for a request head, SOCKS5 handshake or TLS ClientHello (default 10; 0 = off)")
            ->check(CLI::Range(0.0, 604800.0));
        app.add_option("--idle-timeout", o.idle_timeout,
                       "close a tunnel, request or kept-alive connection idle this many seconds (default 300; 0 = off)")
            ->check(CLI::Range(0.0, 604800.0));
        app.add_option("--first-byte-timeout", o.first_byte_timeout,
                       "close a tunnel on which no byte moved this many seconds (default 30; 0 = off)")
            ->check(CLI::Range(0.0, 604800.0));
        app.add_option("--max-connections", o.max_connections,
                       "connections served at once (default: from the descriptor limit)")
            ->check(CLI::Range(1, 1000000));
        app.add_option("--max-client-connections", o.max_client_connections,
                       "connections one client (listener and peer address) may hold (default: half, at most 1024)")
            ->check(CLI::Range(1, 1000000));
        app.add_option("--threads", o.threads, "event loops (default 0: one per CPU, at most 8)")->check(CLI::Range(0, 64));
        std::string token_file;
        app.add_option("--auth-token-file", token_file,
                       "require proxy authentication: HTTP Basic / SOCKS5 password = the file's token");
        app.add_flag("--report", o.report,
                     "allow what only the allowlist would deny, logging it with \"wouldDeny\":true");
        bool no_sni = false;
        app.add_flag("--no-sni-check", no_sni, "do not compare a tunnel's TLS server name with its target");
        app.add_option("--tls-ports", o.tls_ports,
                       "tunnels to these ports must start with a TLS ClientHello (default 443; 'none')");
        app.add_option("--approver", o.approver,
                       "program answering allow or deny per new host:port when the network rule is ask (argv split on blanks)");
        app.add_option("--approver-timeout", o.approver_timeout_ms, "milliseconds to wait for the approver (default 30000)")
            ->check(CLI::Range(1, 86400000));
        std::string metrics_socket;
        app.add_option("--metrics-socket", metrics_socket, "serve an OpenMetrics page on this Unix socket path");
        app.add_option("--intercept", o.intercept,
                       "terminate TLS for this exact host with the session CA (repeatable)")->allow_extra_args(false);
        app.add_option("--credential", o.credentials,
                       "NAME@HOST[,HOST...]=file:PATH|fd:N: inject this secret where the sandbox sends its placeholder (repeatable)")
            ->allow_extra_args(false);
        std::string upstream_ca, ca_cert_out;
        app.add_option("--upstream-ca", upstream_ca, "PEM file of more CAs trusted for intercepted upstreams");
        app.add_option("--ca-cert-out", ca_cert_out, "write the session CA's certificate (PEM) to this file");
        auto* learn = app.add_subcommand("learn", "print the allowlist that would have allowed the connection lines on stdin");
        if (auto rc = cc::tool::parse(app, argc, argv, "cc-egress")) return *rc;
        if (learn->parsed()) {
            auto in = cc::io::read_input("-");
            if (!in) return cc::tool::report("cc-egress", in.error());
            auto refusals = cc::net::learn_refusals(o);
            if (!refusals) return cc::tool::report("cc-egress", refusals.error());
            auto hosts = cc::net::learn_allowlist(*in, *refusals);
            if (!hosts) return cc::tool::report("cc-egress", hosts.error());
            for (const auto& h : *hosts) std::cout << h << '\n';
            return 0;
        }
        if (!spec.empty()) o.spec_path = spec;
        if (!policy.empty()) o.policy_path = policy;
        if (!network.empty()) o.network = network;
        if (!unix_dir.empty()) o.unix_dir = unix_dir;
        if (!fd_inbox.empty()) o.fd_inbox = fd_inbox;
        if (!token_file.empty()) o.auth_token_file = token_file;
        if (!metrics_socket.empty()) o.metrics_socket = metrics_socket;
        if (!upstream_ca.empty()) o.upstream_ca = upstream_ca;
        if (!ca_cert_out.empty()) o.ca_cert_out = ca_cert_out;
        o.sni_check = !no_sni;
        if (o.fd_inbox_once && !o.fd_inbox) {
            std::cerr << cc::tool::log_prefix("cc-egress") << "--fd-inbox-once: only with --fd-inbox\n";
            return cc::tool::exit_usage;
        }
        if (o.resolve && o.check.empty()) {
            std::cerr << cc::tool::log_prefix("cc-egress") << "--resolve: only with --check\n";
            return cc::tool::exit_usage;
        }
        // --check and --dry-run answer a person on a terminal in text; the
        // proxies' ready and connection lines are always JSON (a protocol).
        const bool text = (o.dry_run || !o.check.empty()) && cc::tool::text_output(format);
        auto rc = cc::net::run_egress(
            o,
            [text](const nlohmann::json& j) {
                if (!text) {
                    cc::tool::emit_line(cc::json::write(j));
                    return;
                }
                std::cout << (j.value("event", "") == "plan" ? cc::net::plan_text(j) : cc::net::check_text(j)) << std::flush;
            },
            [](const std::string& line) { cc::tool::log("cc-egress", line); },
            [](std::string_view lines) { cc::io::write_all(1, lines); });
        if (!rc) return cc::tool::report("cc-egress", rc.error());
        return *rc;
    });
}
