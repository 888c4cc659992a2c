// Unit tests for lib/cc/net: canonical names, IP literals, patterns, the rule
// order, and the wire parsers (SOCKS5, HTTP heads, chunked, TLS SNI).
#include "harness.hpp"

#include <arpa/inet.h>

#include "cc/net/credentials.hpp"
#include "cc/net/fake_dns.hpp"
#include "cc/net/host.hpp"
#include "cc/net/request_rules.hpp"
#include "cc/net/session_ca.hpp"
#include "cc/net/rules.hpp"
#include "cc/net/wire.hpp"

using namespace cc::net;

namespace {

std::string canon(const std::string& h) {
    auto t = canonical_target(h);
    return t ? t->host : "ERR";
}

RuleSet rules(std::vector<std::string> allow, std::vector<std::string> deny = {}, bool network = true) {
    RuleOptions o;
    o.allow = std::move(allow);
    o.deny = std::move(deny);
    o.network = network;
    o.baseline = false;
    o.data_dir = cc::test::source_dir() + "/share/cc/egress";
    auto r = build_rules(o);
    REQUIRE(r);
    return *r;
}

bool allowed(const RuleSet& r, const std::string& host) {
    auto t = canonical_target(host);
    return t && r.check_target(*t).allow;
}

}  // namespace

TEST_CASE("names: case, one trailing dot and IDN compare in one form") {
    CHECK(canon("METADATA.GOOGLE.INTERNAL.") == "metadata.google.internal");
    CHECK(canon("Api.GitHub.com") == "api.github.com");
    CHECK(canon("evil.test\xE3\x80\x82" "example.com") == "evil.test.example.com");  // U+3002
    CHECK(canon("b\xC3\xBC" "cher.example") == "xn--bcher-kva.example");
    CHECK(canon("a..b") == "ERR");
    CHECK(canon("a b.com") == "ERR");
    // A NUL or other control byte is refused, never cut off (fuzz_wire found
    // "example.com\0\0\0\x94" read as example.com through libidn2).
    CHECK(canon(std::string("example.com\0\0\0\x94", 15)) == "ERR");
    CHECK(canon(std::string("example.com\0evil.test", 21)) == "ERR");
    CHECK(canon("example.com\x7f") == "ERR");
    CHECK_FALSE(parse_ip_literal(std::string("::1\0evil", 8)));
    CHECK_FALSE(parse_ip_literal(std::string("127.0.0.1\0", 10)));
    CHECK_FALSE(canonical_target(std::string("[::1\0x]", 8)));
    CHECK(canon(std::string(64, 'a') + ".com") == "ERR");
}

TEST_CASE("IP literals are read the way the C library reads them") {
    for (const char* s : {"127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "0x7f000001"})
        CHECK(canon(s) == "127.0.0.1");
    for (const char* s : {"2852039166", "0xa9fea9fe", "0xa9.0xfe.0xa9.0xfe", "0251.0376.0251.0376", "169.254.43518",
                          "169\xE3\x80\x82" "254\xE3\x80\x82" "169\xE3\x80\x82" "254"})
        CHECK(canon(s) == "169.254.169.254");
    CHECK(canon("[::1]") == "::1");
    CHECK(canon("1.2.3.999") == "ERR");  // numeric, but not an address: refused, not looked up
    CHECK(canon("fe80::1%eth0") == "ERR");
    auto mapped = parse_ip_literal("::ffff:a9fe:a9fe");
    REQUIRE(mapped);
    REQUIRE(mapped->embedded_v4());
    CHECK(mapped->embedded_v4()->to_string() == "169.254.169.254");
    for (const char* s : {"::a9fe:a9fe", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1"}) {
        auto a = parse_ip_literal(s);
        REQUIRE(a);
        REQUIRE(a->embedded_v4());
        CHECK(a->embedded_v4()->to_string() == "169.254.169.254");
    }
}

TEST_CASE("addresses: dotted quads read as inet_ntop writes them") {
    // The IPv4 form is written without the C library (it formats through
    // sprintf); it must agree with inet_ntop on every value tried.
    std::vector<std::uint32_t> values = {0, 1, 0x7f000001, 0x0a006407, 0xa9fea9fe, 0xffffffff, 0x01020304, 0x64646464};
    std::uint32_t x = 2463534242u;  // xorshift32: a spread of the rest
    for (int i = 0; i < 100000; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        values.push_back(x);
    }
    for (std::uint32_t v : values) {
        in_addr in{htonl(v)};
        char want[INET_ADDRSTRLEN];
        REQUIRE(inet_ntop(AF_INET, &in, want, sizeof want));
        if (Address::v4(v).to_string() != want) FAIL("v4 " << v << ": " << Address::v4(v).to_string() << " != " << want);
    }
    CHECK(Address::v4(0xffffffff).to_string() == "255.255.255.255");
    CHECK(Address::v4(0).to_string() == "0.0.0.0");
    CHECK(parse_ip_literal("2001:db8::1")->to_string() == "2001:db8::1");
}

TEST_CASE("patterns: exactly one whole-label star, leading or middle") {
    auto lead = parse_pattern("*.Example.COM.");
    REQUIRE(lead);
    CHECK(lead->matches("a.example.com"));
    CHECK(lead->matches("a.b.example.com"));
    CHECK_FALSE(lead->matches("example.com"));
    CHECK_FALSE(lead->matches("badexample.com"));
    auto mid = parse_pattern("bedrock.*.amazonaws.com");
    REQUIRE(mid);
    CHECK(mid->matches("bedrock.us-east-1.amazonaws.com"));
    CHECK_FALSE(mid->matches("bedrock.x.y.amazonaws.com"));
    CHECK_FALSE(mid->matches("bedrock..amazonaws.com"));
    CHECK_FALSE(mid->matches("bedrock-runtime.us-east-1.amazonaws.com"));
    for (const char* bad : {"*", "*.*.com", "foo*.com", "a.*", "a..com", "a_b!.com", "*x.com", "10.0.0.1"}) {
        INFO(bad);
        auto p = parse_pattern(bad);
        REQUIRE_FALSE(p);
        CHECK_THAT(p.error().one_line(), Catch::Contains(bad));
    }
}

TEST_CASE("rules: always-deny beats allow; literals need an exact entry; rebinding is caught") {
    RuleSet r = rules({"metadata.google.internal", "*.example.com", "127.0.0.1", "169.254.169.254"});
    CHECK_FALSE(allowed(r, "METADATA.GOOGLE.INTERNAL."));
    CHECK_FALSE(allowed(r, "169.254.169.254"));
    CHECK_FALSE(allowed(r, "[::ffff:169.254.169.254]"));
    CHECK_FALSE(allowed(r, "fd00:ec2::254"));
    CHECK_FALSE(allowed(r, "100.100.100.200"));
    CHECK(allowed(r, "a.example.com"));
    CHECK_FALSE(allowed(r, "example.com"));
    CHECK(allowed(r, "0x7f.1"));
    CHECK(allowed(r, "2130706433"));
    CHECK_FALSE(allowed(r, "127.0.0.2"));
    CHECK_FALSE(allowed(r, "8.8.8.8"));  // literals only by an exact entry

    Target t = *canonical_target("a.example.com");
    CHECK_FALSE(r.check_address(t, *parse_ip_literal("169.254.169.254")).allow);
    CHECK_FALSE(r.check_address(t, *parse_ip_literal("10.1.2.3")).allow);
    CHECK_FALSE(r.check_address(t, *parse_ip_literal("::1")).allow);
    CHECK(r.check_address(t, *parse_ip_literal("127.0.0.1")).allow);  // named exactly
    CHECK(r.check_address(t, *parse_ip_literal("93.184.216.34")).allow);
    CHECK(r.check_address(t, *parse_ip_literal("93.184.216.34")).allow);

    RuleSet d = rules({"*.example.com"}, {"bad.example.com", "93.184.0.0/16"});
    CHECK_FALSE(allowed(d, "bad.example.com"));
    CHECK(allowed(d, "good.example.com"));
    CHECK_FALSE(d.check_address(t, *parse_ip_literal("93.184.216.34")).allow);

    RuleSet off = rules({"*.example.com", "127.0.0.1"}, {}, false);
    CHECK_FALSE(allowed(off, "a.example.com"));
    CHECK_FALSE(allowed(off, "127.0.0.1"));
    CHECK(off.allow_names.empty());
}

TEST_CASE("rules: SNI must equal the tunnel host or be allowed itself") {
    RuleSet r = rules({"*.example.com", "127.0.0.1"});
    Target t = *canonical_target("127.0.0.1");
    CHECK_FALSE(r.check_sni(t, "evil.test").allow);
    CHECK(r.check_sni(t, "www.example.com").allow);
    Target n = *canonical_target("a.example.com");
    CHECK(r.check_sni(n, "A.EXAMPLE.COM.").allow);
    // A server name the deny lists refuse is refused as such, so report mode
    // (which lets only a missing allow entry through) refuses it too.
    RuleSet d = rules({"*.example.com"}, {"bad.example.com"});
    Verdict v = d.check_sni(n, "bad.example.com");
    CHECK_FALSE(v.allow);
    CHECK(v.rule == "--deny bad.example.com");
    CHECK(v.reason == "host bad.example.com is always denied");
    CHECK_FALSE(report_only(v).allow);
    // One only missing from the allowlist is what report mode logs and allows.
    CHECK(report_only(d.check_sni(n, "other.test")).allow);
}

TEST_CASE("rules: the shipped lists parse and carry the baseline") {
    RuleOptions o;
    o.data_dir = cc::test::source_dir() + "/share/cc/egress";
    auto r = build_rules(o);
    REQUIRE(r);
    CHECK(allowed(*r, "api.github.com"));
    CHECK(allowed(*r, "api.anthropic.com"));
    CHECK(allowed(*r, "bedrock-runtime.us-west-2.amazonaws.com"));
    CHECK_FALSE(allowed(*r, "metadata.azure.com"));
    o.baseline = false;
    r = build_rules(o);
    REQUIRE(r);
    CHECK_FALSE(allowed(*r, "api.github.com"));
    o.allow_files = {"/nonexistent/list.txt"};
    auto bad = build_rules(o);
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().one_line(), Catch::Contains("/nonexistent/list.txt"));
}

TEST_CASE("socks5: greeting and request parsing") {
    socks5::Greeting g;
    CHECK(socks5::parse_greeting(std::string("\x05", 1), g) == Parse::more);
    CHECK(socks5::parse_greeting(std::string("\x05\x02\x00", 3), g) == Parse::more);
    CHECK(socks5::parse_greeting(std::string("\x05\x02\x00\x02", 4), g) == Parse::ok);
    CHECK(g.methods.size() == 2);
    CHECK(socks5::parse_greeting(std::string("\x04\x01\x00", 3), g) == Parse::bad);
    CHECK(socks5::parse_greeting(std::string("\x05\x00", 2), g) == Parse::bad);

    socks5::Request req;
    std::string dom = std::string("\x05\x01\x00\x03\x0b", 5) + "example.com" + std::string("\x01\xbb", 2);
    CHECK(socks5::parse_request(dom.substr(0, 10), req) == Parse::more);
    REQUIRE(socks5::parse_request(dom, req) == Parse::ok);
    CHECK(req.host == "example.com");
    CHECK(req.port == 443);
    std::string v4("\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50", 10);
    REQUIRE(socks5::parse_request(v4, req) == Parse::ok);
    CHECK(req.host == "127.0.0.1");
    std::string badatyp("\x05\x01\x00\x09\x00\x00", 6);
    CHECK(socks5::parse_request(badatyp, req) == Parse::bad);
    CHECK(req.error_reply == socks5::rep_address_type_not_supported);
    std::string latin1 = std::string("\x05\x01\x00\x03\x03", 5) + "a\xe9z" + std::string("\x00\x50", 2);
    CHECK(socks5::parse_request(latin1, req) == Parse::bad);
    CHECK(socks5::reply(socks5::rep_not_allowed) == std::string("\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00", 10));
}

TEST_CASE("http: heads, absolute-form, framing and hop-by-hop headers") {
    std::string raw = "GET http://Example.COM:8080/a?b HTTP/1.1\r\nHost: evil.test\r\nConnection: keep-alive, X-Drop\r\n"
                      "X-Drop: 1\r\nProxy-Authorization: Basic eA==\r\nAccept: */*\r\n\r\nBODY";
    REQUIRE(http::head_length(raw) == raw.size() - 4);
    auto h = http::parse_request_head(raw.substr(0, http::head_length(raw)));
    REQUIRE(h);
    auto uri = http::parse_absolute_uri(h->target);
    REQUIRE(uri);
    CHECK(uri->target.host == "example.com");
    CHECK(uri->target.port == 8080);
    CHECK(uri->origin_form == "/a?b");
    std::string up = http::upstream_request_head(*h, *uri, {http::BodyKind::none, 0});
    CHECK(up.rfind("GET /a?b HTTP/1.1\r\nHost: Example.COM:8080\r\n", 0) == 0);
    CHECK(up.find("evil.test") == std::string::npos);
    CHECK(up.find("X-Drop") == std::string::npos);
    CHECK(up.find("Proxy-Authorization") == std::string::npos);
    CHECK(up.find("Accept: */*") != std::string::npos);

    CHECK_FALSE(http::parse_absolute_uri("https://example.com/"));
    CHECK_FALSE(http::parse_absolute_uri("http://user@example.com/"));
    CHECK(http::parse_absolute_uri("http://[::1]/")->target.port == 80);
    CHECK_FALSE(http::parse_request_head("GARBAGE\r\n\r\n"));
    CHECK_FALSE(http::parse_request_head("GET / HTTP/2.0\r\n\r\n"));
    CHECK_FALSE(http::parse_request_head(std::string("GET http://example.com\0\0\0\x94" "0/a HTTP/1.1\r\n\r\n", 42)));
    CHECK_FALSE(http::parse_request_head("GET http://example.com/\x01 HTTP/1.1\r\n\r\n"));
    CHECK_FALSE(parse_authority(std::string("example.com\0x:443", 17)));

    auto smuggle = http::parse_request_head(
        "POST http://a.b/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
    REQUIRE(smuggle);
    CHECK_FALSE(http::request_framing(*smuggle));
    auto two = http::parse_request_head("POST http://a.b/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n");
    CHECK_FALSE(http::request_framing(*two));

    // Found by fuzz_wire: "080" was read as 80 and written back as "80".
    CHECK_FALSE(http::parse_response_head("HTTP/1.1 080 OK\r\n\r\n"));
    CHECK_FALSE(http::parse_response_head("HTTP/1.1 600 OK\r\n\r\n"));
    CHECK_FALSE(http::parse_response_head("HTTP/1.1 200X OK\r\n\r\n"));
    CHECK(http::parse_response_head("HTTP/1.1 200\r\n\r\n"));
    auto resp = http::parse_response_head("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n");
    REQUIRE(resp);
    CHECK(http::response_framing(*resp, "GET").kind == http::BodyKind::none);
}

TEST_CASE("http: chunked scanner finds the end of a body, refuses junk") {
    http::ChunkedScanner s;
    std::string body = "5;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nTrailer: x\r\n\r\nNEXT";
    std::size_t used = 0;
    for (std::size_t i = 0; i < body.size() && !s.done(); ++i) used += s.feed(body.substr(i, 1));
    CHECK(s.done());
    CHECK(used == body.size() - 4);
    // De-chunking: only the payload comes out, whole or one byte at a time.
    std::string whole, bytewise;
    http::ChunkedScanner a, b;
    CHECK(a.feed(body, &whole) == body.size() - 4);
    for (std::size_t i = 0; i < body.size() && !b.done(); ++i) b.feed(body.substr(i, 1), &bytewise);
    CHECK(whole == "helloabc");
    CHECK(bytewise == "helloabc");
    http::ChunkedScanner bad;
    bad.feed("zz\r\n");
    CHECK(bad.failed());
}

TEST_CASE("proxy auth: Basic credentials and RFC 1929 username/password are read") {
    http::Headers h{{"Proxy-Authorization", "Basic Y2M6czNjcmV0"}};  // cc:s3cret
    CHECK(http::basic_password(h, "proxy-authorization") == "s3cret");
    http::Headers pad{{"proxy-authorization", "basic YTpiYw=="}};  // a:bc
    CHECK(http::basic_password(pad, "proxy-authorization") == "bc");
    CHECK_FALSE(http::basic_password({{"Proxy-Authorization", "Bearer x"}}, "proxy-authorization"));
    CHECK_FALSE(http::basic_password({{"Proxy-Authorization", "Basic bm9jb2xvbg=="}}, "proxy-authorization"));  // no colon
    CHECK_FALSE(http::basic_password({{"Proxy-Authorization", "Basic !!!"}}, "proxy-authorization"));
    CHECK_FALSE(http::basic_password({}, "proxy-authorization"));
    socks5::UserPass up;
    std::string msg = std::string("\x01\x02", 2) + "cc" + "\x03" + "abc" + "REST";
    CHECK(socks5::parse_userpass(msg.substr(0, 5), up) == Parse::more);
    REQUIRE(socks5::parse_userpass(msg, up) == Parse::ok);
    CHECK(up.user == "cc");
    CHECK(up.password == "abc");
    CHECK(up.consumed == 8);
    CHECK(socks5::parse_userpass(std::string("\x05\x00", 2), up) == Parse::bad);
    CHECK(http::error_response(407, "", "x", "y").find("Proxy-Authenticate: Basic") != std::string::npos);
}

TEST_CASE("tls: the server name is read from a ClientHello, even across records") {
    auto u16 = [](std::size_t v) { return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; };
    std::string name = "evil.test";
    std::string sni = u16(0) + u16(name.size() + 5) + u16(name.size() + 3) + std::string(1, '\0') + u16(name.size()) + name;
    std::string body = std::string("\x03\x03", 2) + std::string(32, 'r') + std::string(1, '\0') + u16(2) +
                       std::string("\x13\x01", 2) + std::string("\x01\x00", 2) + u16(sni.size()) + sni;
    std::string hs = std::string("\x01", 1) + std::string(1, '\0') + u16(body.size()) + body;
    std::string rec = std::string("\x16\x03\x01", 3) + u16(hs.size()) + hs;
    std::string out;
    CHECK(tls::peek_sni(rec.substr(0, 20), out) == tls::Sni::more);
    REQUIRE(tls::peek_sni(rec, out) == tls::Sni::found);
    CHECK(out == "evil.test");
    // The same hello split over two records.
    std::string a = hs.substr(0, 10), b = hs.substr(10);
    std::string split = std::string("\x16\x03\x01", 3) + u16(a.size()) + a + std::string("\x16\x03\x01", 3) + u16(b.size()) + b;
    out.clear();
    REQUIRE(tls::peek_sni(split, out) == tls::Sni::found);
    CHECK(out == "evil.test");
    CHECK(tls::peek_sni("SSH-2.0-OpenSSH_9.2\r\n", out) == tls::Sni::not_tls);
    CHECK(tls::peek_sni(std::string("\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00", 10), out) == tls::Sni::bad);
}

TEST_CASE("addresses: the IPv6 special-purpose blocks are non-public; Teredo and NAT64 local-use unwrap") {
    RuleSet r = rules({"*.example.com", "127.0.0.1", "93.184.216.34"});
    Target t = *canonical_target("a.example.com");
    auto vetted = [&](const char* a) { return r.check_address(t, *parse_ip_literal(a)).allow; };
    // Globally reachable IPv6 and its NAT64 spelling pass.
    CHECK(vetted("2606:2800:220:1:248:1893:25c8:1946"));
    CHECK(vetted("64:ff9b::93.184.216.34"));
    for (const char* a : {"2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:2::1", "64:ff9b:1::5db8:d823",
                          "64:ff9b:1:ffff::1", "100::1", "100:0:0:1::1", "3fff::1", "5f00::1", "fec0::1", "192.88.99.1"}) {
        INFO(a);
        Verdict v = r.check_address(t, *parse_ip_literal(a));
        CHECK_FALSE(v.allow);
        CHECK_THAT(v.rule, Catch::StartsWith("non-public "));
    }
    // Teredo carries the server and, inverted, the client: either one being
    // the metadata address is the always-deny rule, not only "non-public".
    auto teredo = *parse_ip_literal("2001:0:a9fe:a9fe::");  // server 169.254.169.254
    auto all = teredo.embedded_v4_all();
    REQUIRE(all.size() == 2);
    CHECK(all[0].to_string() == "169.254.169.254");
    CHECK(all[1].to_string() == "255.255.255.255");
    auto client = *parse_ip_literal("2001:0:0101:0101::5601:5601");  // client ~0x56015601 = 169.254.169.254
    CHECK(client.embedded_v4_all()[1].to_string() == "169.254.169.254");
    CHECK_THAT(r.check_address(t, client).rule, Catch::Contains("always-deny"));
    // The local-use NAT64 /96 unwraps like the well-known one.
    auto local = *parse_ip_literal("64:ff9b:1::a9fe:a9fe");
    REQUIRE(local.embedded_v4());
    CHECK(local.embedded_v4()->to_string() == "169.254.169.254");
    CHECK_THAT(r.check_address(t, local).rule, Catch::Contains("always-deny"));
}

TEST_CASE("addresses: an allowed IPv4 address admits its exact 6to4 spelling, not the whole /48") {
    RuleSet r = rules({"127.0.0.1"});
    CHECK(allowed(r, "[2002:7f00:1::]"));             // exactly 127.0.0.1
    CHECK(allowed(r, "[::ffff:127.0.0.1]"));
    CHECK_FALSE(allowed(r, "[2002:7f00:1:abcd::1]"));  // inside 2002:7f00:1::/48
    CHECK_FALSE(allowed(r, "[2002:7f00:1::1]"));
    Target t = *canonical_target("[2002:7f00:1:abcd::1]");
    Verdict v = r.check_target(t);
    CHECK(v.rule == "no allow entry");
    // Resolved to such an address, a name meets the non-public rule (it
    // carries 127.0.0.1), which the allow entry no longer lifts.
    Target n = *canonical_target("a.example.com");
    CHECK_THAT(r.check_address(n, *parse_ip_literal("2002:7f00:1:abcd::1")).rule, Catch::StartsWith("non-public"));
    CHECK(r.check_address(n, *parse_ip_literal("2002:7f00:1::")).allow);
}

TEST_CASE("patterns: a wildcard pattern must be ASCII (punycode), and says so naming it") {
    for (const char* bad : {"*.bücher.example", "bücher.*.example", "*.example\xef\xbc\x8e" "com"}) {
        INFO(bad);
        auto p = parse_pattern(bad);
        REQUIRE_FALSE(p);
        CHECK_THAT(p.error().one_line(), Catch::Contains(std::string("'") + bad + "'"));
        CHECK_THAT(p.error().one_line(), Catch::Contains("punycode"));
    }
    auto puny = parse_pattern("*.xn--bcher-kva.example");
    REQUIRE(puny);
    CHECK(puny->matches("a.xn--bcher-kva.example"));
    auto exact = parse_pattern("bücher.example");  // an exact name is still mapped as a whole
    REQUIRE(exact);
    CHECK(exact->text == "xn--bcher-kva.example");
}

TEST_CASE("http: chunked framing takes CRLF only; a bare LF anywhere in it is refused and named") {
    // The lenient reading (tests/net/origin.py, many origins): a bare LF ends
    // the line. Where this scanner used to read on, the two disagreed on where
    // the body ends.
    struct Case {
        std::string body;
        const char* error;
    };
    for (const auto& c : {Case{"5;ext\nhello\r\n0\r\n\r\n", "bare LF in a chunk size line"},
                          Case{"5\nhello\r\n0\r\n\r\n", "bare LF in a chunk size line"},
                          Case{"5\r\nhello\n0\r\n\r\n", "bare LF after chunk data"},
                          Case{"0\r\nX: y\n\r\n", "bare LF in the trailer section"},
                          Case{"0\r\n\n", "bare LF in the trailer section"},
                          Case{std::string("5;a") + '\0' + "b\r\nhello\r\n0\r\n\r\n", "control byte in a chunk extension"}}) {
        INFO(c.body);
        http::ChunkedScanner s;
        s.feed(c.body);
        CHECK(s.failed());
        CHECK(std::string(s.error()) == c.error);
        // Byte by byte, the same.
        http::ChunkedScanner b;
        for (std::size_t i = 0; i < c.body.size() && !b.failed(); ++i) b.feed(c.body.substr(i, 1));
        CHECK(std::string(b.error()) == c.error);
    }
    http::ChunkedScanner good;
    good.feed("5;a=\"b c\"\t\r\nhello\r\n0\r\nX: y\r\n\r\n");
    CHECK(good.done());
    CHECK(std::string(good.error()).empty());
}

TEST_CASE("addresses of the proxy's own host are refused unless named exactly") {
    RuleSet r = rules({"*.example.com", "198.51.100.0"});
    Target t = *canonical_target("svc.example.com");
    // A public address, allowed like any other ...
    CHECK(r.check_address(t, *parse_ip_literal("93.184.216.34")).allow);
    // ... until it is one of this host's own: a service bound to every
    // address answers there.
    AddressRule own;
    own.cidr = *parse_cidr("93.184.216.34");
    own.source = "this host's address (eth0)";
    r.host_own.push_back(own);
    Verdict v = r.check_address(t, *parse_ip_literal("93.184.216.34"));
    CHECK_FALSE(v.allow);
    CHECK(v.rule == "this host's address (eth0)");
    CHECK(v.reason == "host svc.example.com resolves to 93.184.216.34, an address of the proxy's own host");
    // Named exactly, it is allowed.
    RuleSet named = rules({"*.example.com", "93.184.216.34:443"});
    named.host_own.push_back(own);
    t.port = 443;
    CHECK(named.check_address(t, *parse_ip_literal("93.184.216.34")).allow);
    // The host's real addresses are found (loopback at least).
    auto mine = host_addresses();
    CHECK(std::any_of(mine.begin(), mine.end(), [](const AddressRule& a) { return a.cidr.to_string() == "127.0.0.1/32"; }));
}

TEST_CASE("credentials: only Authorization on the credential's own hosts, through TLS this proxy ends") {
    Credential c{"GH_TOKEN", {"api.github.com", "github.com"}, make_placeholder(), "s3cret"};
    Credential d{"NPM_TOKEN", {"registry.npmjs.org"}, make_placeholder(), "npm-value"};
    CHECK(c.placeholder != d.placeholder);
    std::vector<Credential> creds{c, d};
    auto headers = [](std::string name, std::string value) { return cc::http::Headers{{"Accept", "*/*"}, {name, value}}; };
    // Bearer, replaced in place; the other header untouched.
    auto h = headers("Authorization", "Bearer " + c.placeholder);
    auto r = inject_credentials(creds, "api.github.com", h, "/user", true);
    CHECK_FALSE(r.refused);
    CHECK(h[1].value == "Bearer s3cret");
    CHECK(r.injected == std::vector<std::string>{"GH_TOKEN"});
    // Basic user:placeholder (git), re-encoded: base64("x-access-token:s3cret").
    h = headers("authorization", "Basic " + std::string("eC1hY2Nlc3MtdG9rZW46") + "");
    r = inject_credentials(creds, "github.com", h, "/", true);
    CHECK_FALSE(r.refused);  // no placeholder: nothing done
    CHECK(r.injected.empty());
    // Nothing else is touched when no placeholder is present.
    h = headers("Authorization", "Bearer someone-elses");
    r = inject_credentials(creds, "github.com", h, "/", true);
    CHECK(h[1].value == "Bearer someone-elses");
    // Refusals, each naming the credential and never its value.
    h = headers("Authorization", "Bearer " + c.placeholder);
    r = inject_credentials(creds, "registry.npmjs.org", h, "/", true);
    CHECK(r.refused);
    CHECK(r.reason == "the placeholder of credential GH_TOKEN sent to registry.npmjs.org, a host it is not for");
    CHECK(h[1].value == "Bearer " + c.placeholder);
    h = headers("Authorization", "Bearer " + c.placeholder);
    r = inject_credentials(creds, "api.github.com", h, "/", false);
    CHECK(r.refused);
    CHECK(r.reason.find("in plain HTTP") != std::string::npos);
    h = headers("Cookie", "t=" + d.placeholder);
    r = inject_credentials(creds, "registry.npmjs.org", h, "/", true);
    CHECK(r.reason == "the placeholder of credential NPM_TOKEN in header Cookie (only Authorization carries it)");
    h = headers("Accept", "*/*");
    r = inject_credentials(creds, "api.github.com", h, "/x?token=" + c.placeholder, true);
    CHECK(r.reason == "the placeholder of credential GH_TOKEN in the request target (send it in a header)");
    for (const auto& x : {r.reason}) CHECK(x.find("s3cret") == std::string::npos);
}

TEST_CASE("session CA: mints only for the hosts it was made for, each leaf once") {
    auto ca = SessionCa::create({"api.github.com", "10.0.0.5"});
    REQUIRE(ca);
    CHECK((*ca)->cert_pem().rfind("-----BEGIN CERTIFICATE-----", 0) == 0);
    auto a = (*ca)->leaf_pem("api.github.com");
    auto b = (*ca)->leaf_pem("api.github.com");
    REQUIRE(a);
    REQUIRE(b);
    CHECK(*a == *b);  // cached
    CHECK((*ca)->leaf_pem("10.0.0.5"));
    auto other = (*ca)->leaf_pem("github.com");
    REQUIRE_FALSE(other);
    CHECK(other.error().one_line() == "github.com: is not a host this session intercepts");
    CHECK_FALSE(SessionCa::create({}));
}

TEST_CASE("request rules: paths read as a server would, one way only, and examples checked at load") {
    CHECK(normal_path("/a/./b//c/../d?x=1") == "/a/b/d");
    CHECK(normal_path("/repos/%6F/r") == "/repos/o/r");
    CHECK(normal_path("/@scope%2fpkg") == "/@scope%2Fpkg");
    CHECK(normal_path("/a%40b") == "/a%40b");
    CHECK(normal_path("*") == "*");
    CHECK_FALSE(normal_path("/.."));       // above the root
    CHECK_FALSE(normal_path("/a%00b"));    // an encoded NUL
    CHECK_FALSE(normal_path("/a%2"));      // a broken escape
    CHECK_FALSE(normal_path("/a%25"));     // an encoded '%': decoded twice, it could be anything
    CHECK_FALSE(normal_path("relative"));
    CHECK(query_of("/x?service=git%2Dreceive-pack#f") == "service=git-receive-pack");

    const std::string ok = R"({"version": 1, "rules": [{"hosts": ["api.github.com"], "methods": ["PUT"],
        "path": "/repos/*/*/pulls/*/merge", "action": "publish_review_or_merge", "why": "merge",
        "examples": {"match": ["PUT api.github.com/repos/o/r/pulls/1/merge"], "notMatch": ["PUT api.github.com/repos/o/r/pulls/1"]}}]})";
    auto rr = parse_request_rules(ok, "t.json");
    REQUIRE(rr);
    auto c = classify_request(*rr, "api.github.com", "PUT", "/repos/o/r/pulls/9/merge/");
    REQUIRE(c);
    CHECK(c->action == "publish_review_or_merge");
    CHECK(c->rule == "t.json rules[0]");
    CHECK_FALSE(classify_request(*rr, "github.com", "PUT", "/repos/o/r/pulls/9/merge"));
    CHECK(classify_request(*rr, "api.github.com", "PUT", "/repos/o/r/pulls/9%2Fmerge"));  // read with '/' too

    auto bad = parse_request_rules(std::string(ok).replace(ok.find("pulls/1/merge"), 13, "pulls/1/close"), "t.json");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().one_line() ==
          "t.json: rules[0]: example 'PUT api.github.com/repos/o/r/pulls/1/close' does not match the rule");
    auto unknown = parse_request_rules(std::string(ok).replace(ok.find("publish_review_or_merge"), 23, "merge_things"), "t.json");
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().one_line() == "t.json: rules[0]: unknown action 'merge_things'");
    // The shipped file loads (its examples hold).
    auto shipped = load_request_rules();
    INFO((shipped ? std::string() : shipped.error().one_line()));
    REQUIRE(shipped);
    CHECK(shipped->rules.size() >= 20);
}

namespace {

// A stub resolver's query for `name` of `qtype`: id 0x1234, RD set.
std::string dns_query(const std::string& name, std::uint16_t qtype, std::uint16_t qclass = 1) {
    std::string q("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12);
    std::size_t at = 0;
    while (at <= name.size()) {
        std::size_t dot = name.find('.', at);
        if (dot == std::string::npos) dot = name.size();
        q += static_cast<char>(dot - at);
        q += name.substr(at, dot - at);
        at = dot + 1;
    }
    q += '\0';
    q += static_cast<char>(qtype >> 8);
    q += static_cast<char>(qtype & 0xff);
    q += static_cast<char>(qclass >> 8);
    q += static_cast<char>(qclass & 0xff);
    return q;
}

}  // namespace

TEST_CASE("fake DNS: queries parsed, answers built as RFC 1035 lays them out, malformed ones named") {
    using namespace cc::net;
    std::string why;
    std::string q = dns_query("api.example.com", 1);
    auto parsed = parse_dns_query(q, why);
    REQUIRE(parsed);
    CHECK(parsed->id == 0x1234);
    CHECK(parsed->name == "api.example.com");
    CHECK(parsed->qtype == 1);
    CHECK(parsed->question_end == q.size());
    // An EDNS OPT record after the question is allowed (and ignored).
    std::string edns = q;
    edns[11] = 1;
    edns += std::string("\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00", 11);
    CHECK(parse_dns_query(edns, why));
    auto a = Address::v4((198u << 24) | (18u << 16) | 7);
    std::string r = dns_reply(q, *parsed, DnsRcode::noerror, a, 60);
    // Header: same id, QR RD RA, NOERROR, 1 question, 1 answer.
    CHECK(r.substr(0, 12) == std::string("\x12\x34\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00", 12));
    CHECK(r.substr(12, q.size() - 12) == q.substr(12));
    CHECK(r.substr(q.size()) == std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\xc6\x12\x00\x07", 16));
    // AAAA of the same name: NODATA (no record), never the IPv4 address.
    std::string q6 = dns_query("api.example.com", 28);
    auto p6 = parse_dns_query(q6, why);
    REQUIRE(p6);
    std::string r6 = dns_reply(q6, *p6, DnsRcode::noerror, a);
    CHECK(r6.size() == q6.size());
    CHECK(r6[7] == 0);
    CHECK(static_cast<unsigned char>(r6[3]) == 0x80);
    std::string nx = dns_reply(q, *parsed, DnsRcode::nxdomain);
    CHECK(static_cast<unsigned char>(nx[3]) == 0x83);
    CHECK(nx[7] == 0);
    CHECK(std::string(dns_type_name(65)) == "HTTPS");
    CHECK(dns_type_name(999) == nullptr);

    auto refused = [&](std::string msg, const std::string& want) {
        std::string w;
        std::uint16_t id = 0;
        CHECK_FALSE(parse_dns_query(msg, w, &id));
        CHECK(w == want);
    };
    refused(q.substr(0, 11), "shorter than a DNS header");
    std::string resp = q;
    resp[2] = static_cast<char>(0x81);
    refused(resp, "a response, not a query");
    std::string notify = q;
    notify[2] = static_cast<char>(4 << 3);
    refused(notify, "opcode 4 (only QUERY is answered)");
    std::string two = q;
    two[5] = 2;
    refused(two, "2 questions (exactly one is answered)");
    std::string ptr = q.substr(0, 12) + std::string("\xc0\x0c\x00\x01\x00\x01", 6);
    refused(ptr, "compressed or extended label in the question");
    refused(q.substr(0, q.size() - 2), "question cut short");
    std::string cut = q.substr(0, 14);
    refused(cut, "question cut short");
    std::string longname;
    for (int i = 0; i < 5; ++i) longname += std::string(60, 'a') + ".";
    longname += "com";
    refused(dns_query(longname, 1), "name longer than 255 bytes");
    std::string err = dns_error_reply(0x1234, DnsRcode::formerr);
    CHECK(err == std::string("\x12\x34\x80\x81\x00\x00\x00\x00\x00\x00\x00\x00", 12));
}

TEST_CASE("fake DNS pool: one address a name, kept; never two names an address; only 198.18.0.0/15") {
    using namespace cc::net;
    FakePool pool;
    auto a = pool.address_for("api.example.com");
    auto b = pool.address_for("other.example.com");
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->to_string() == "198.18.0.1");
    CHECK(b->to_string() == "198.18.0.2");
    CHECK(pool.address_for("api.example.com")->to_string() == "198.18.0.1");
    CHECK(pool.name_for(*a) == std::optional<std::string>("api.example.com"));
    CHECK(pool.name_for(*parse_ip_literal("198.18.0.3")) == std::nullopt);  // never given out
    // A dual-stack listener reports the IPv4-mapped form.
    CHECK(pool.name_for(*parse_ip_literal("::ffff:198.18.0.2")) == std::optional<std::string>("other.example.com"));
    CHECK(FakePool::in_pool(*parse_ip_literal("198.19.255.254")));
    CHECK_FALSE(FakePool::in_pool(*parse_ip_literal("198.20.0.1")));
    CHECK_FALSE(FakePool::in_pool(*parse_ip_literal("198.17.255.255")));
    // NAT64 and 6to4 spellings of a pool address are not the pool (they are
    // literals, vetted as such).
    CHECK_FALSE(FakePool::in_pool(*parse_ip_literal("64:ff9b::198.18.0.1")));
    CHECK(pool.size() == 2);
}
