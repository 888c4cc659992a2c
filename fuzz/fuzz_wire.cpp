// libFuzzer target for what cc-egress reads from inside the sandbox before
// any policy is applied: SOCKS5 messages, HTTP request and response heads,
// chunked bodies, the TLS ClientHello's server name, and host names. Beyond
// "no crash, no hang", it checks the properties the proxy relies on:
//  - an incremental parser says "more" for every proper prefix of a message
//    it accepts (a message split across reads parses the same);
//  - a head cc-egress writes from a parsed one parses again to the same
//    method, target authority and header count (no header injection through
//    names or values it forwards);
//  - a chunked body fed in two pieces decodes exactly as in one;
//  - every name or field a parser accepts (SOCKS host, request target and
//    headers, TLS server name, canonical host) is written by the project's
//    JSON writer and read back to the same bytes: a connection line cannot
//    end the proxy.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cc/core/json_writer.hpp"
#include "cc/net/host.hpp"
#include "cc/net/tls.hpp"
#include "cc/net/wire.hpp"

using namespace cc::net;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

void writes_back(const std::string& field) {
    nlohmann::json j = {{"v", field}, {field, 1}};
    auto back = nlohmann::json::parse(cc::json::write(j), nullptr, false);
    check(!back.is_discarded());
    check(cc::json::bytes_of(back["v"]) == field);
}

void socks(std::string_view in) {
    socks5::Greeting g;
    if (socks5::parse_greeting(in, g) == Parse::ok) {
        check(g.consumed <= in.size() && g.consumed >= 2);
        socks5::Greeting p;
        check(socks5::parse_greeting(in.substr(0, g.consumed - 1), p) == Parse::more);
    }
    socks5::Request r;
    if (socks5::parse_request(in, r) == Parse::ok) {
        check(r.consumed <= in.size());
        writes_back(r.host);
        socks5::Request p;
        check(socks5::parse_request(in.substr(0, r.consumed - 1), p) == Parse::more);
    }
    socks5::UserPass u;
    if (socks5::parse_userpass(in, u) == Parse::ok) {
        check(u.consumed <= in.size());
        socks5::UserPass p;
        check(socks5::parse_userpass(in.substr(0, u.consumed - 1), p) == Parse::more);
    }
}

void http_request(std::string_view in) {
    std::size_t len = http::head_length(in);
    if (len == 0) return;
    check(len <= in.size());
    auto head = http::parse_request_head(in.substr(0, len));
    if (!head) return;
    writes_back(std::string(head->method));
    writes_back(std::string(head->target));
    for (const auto& h : head->headers) {
        writes_back(std::string(h.name));
        writes_back(std::string(h.value));
    }
    auto framing = http::request_framing(*head);
    if (!framing) return;
    (void)http::basic_password(head->headers, "Proxy-Authorization");
    auto uri = http::parse_absolute_uri(head->target);
    if (!uri) return;
    std::string out = http::upstream_request_head(*head, *uri, *framing);
    check(http::head_length(out) == out.size());
    auto again = http::parse_request_head(out);
    check(static_cast<bool>(again));
    check(again->method == head->method);
    check(again->target == uri->origin_form);
    const http::Header* host = http::find(again->headers, "Host");
    check(host && host->value == uri->authority);
}

void http_response(std::string_view in) {
    std::size_t len = http::head_length(in);
    if (len == 0) return;
    auto head = http::parse_response_head(in.substr(0, len));
    if (!head) return;
    auto framing = http::response_framing(*head, in.size() % 2 ? "GET" : "HEAD");
    std::string out = http::client_response_head(*head, framing, in.size() % 3 == 0);
    check(http::head_length(out) == out.size());
    auto again = http::parse_response_head(out);
    check(static_cast<bool>(again));
    check(again->status == head->status);
}

void chunked(std::string_view in) {
    http::ChunkedScanner whole;
    std::string a;
    std::size_t na = whole.feed(in, &a);
    check(na <= in.size());
    std::size_t cut = in.empty() ? 0 : static_cast<unsigned char>(in[0]) % (in.size() + 1);
    http::ChunkedScanner split;
    std::string b;
    std::size_t nb = split.feed(in.substr(0, cut), &b);
    if (!split.done() && !split.failed() && nb == cut) nb += split.feed(in.substr(cut), &b);
    check(whole.done() == split.done() && whole.failed() == split.failed());
    if (!whole.failed()) check(na == nb && a == b);
}

// The TLS follower: the client half of the input one way, the rest as the
// server's; fed whole or split, it clears the same bytes and refuses alike,
// and never clears more than it was given.
void tls_follow(std::string_view in) {
    std::size_t half = in.empty() ? 0 : static_cast<unsigned char>(in[0]) % (in.size() + 1);
    std::string_view cl = in.substr(0, half), sv = in.substr(half);
    tls::Follower whole, split;
    whole.client(cl);
    whole.server(sv);
    split.client(cl.substr(0, cl.size() / 2));
    split.client(cl.substr(cl.size() / 2));
    split.server(sv);
    check(whole.client_ready() <= cl.size());
    check(whole.refused() == split.refused() && whole.client_ready() == split.client_ready());
    for (const auto& h : whole.take_hellos()) check(!h.has_sni || !h.sni.empty());
}

void names(std::string_view in) {
    std::string sni;
    if (tls::peek_sni(in, sni) == tls::Sni::found) {
        check(!sni.empty());
        writes_back(sni);
    }
    std::string_view line = in.substr(0, in.find('\n'));
    if (auto a = parse_ip_literal(line)) check(parse_ip_literal(a->to_string()).has_value());
    writes_back(std::string(line));
    if (auto t = canonical_target(line)) {
        auto again = canonical_target(t->host);
        check(static_cast<bool>(again) && again->host == t->host);  // canonical is a fixed point
    }
    (void)parse_authority(line);
    (void)parse_pattern(line);
    (void)parse_cidr(line);
}

}  // namespace

// libFuzzer's entry point (declared here: the build warns on a definition
// with external linkage and no declaration).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    socks(in);
    http_request(in);
    http_response(in);
    chunked(in);
    tls_follow(in);
    names(in);
    return 0;
}
