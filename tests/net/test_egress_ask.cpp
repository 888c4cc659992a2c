// Network asks: with the policy's network rule at ask, each new host:port is
// put to --approver (one JSON question on its stdin, one answer), the answer
// is kept for the session, and the proxy keeps serving other clients while
// an approver thinks. Without an approver an ask is deny. And the metrics
// page (--metrics-socket), read with curl --unix-socket.
#include "egress_fixture.hpp"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <set>
#include <sstream>

using namespace egress_fixture;

namespace {

std::string write_policy(const std::string& dir) {
    std::string p = dir + "/ask-policy.json";
    std::ofstream(p) << R"({"version":1,"rules":[{"action":"network_access","decision":"ask","reason":"a person approves each host"}]})";
    return p;
}

// Answers by host: slow.test after 2 s, hang.test never (sleeps), no.test deny, the rest allow.
// Every question is appended to `log`.
std::string write_approver(const std::string& dir, const std::string& log) {
    std::string p = dir + "/approver.sh";
    std::ofstream(p) << "#!/bin/sh\nq=$(cat)\nprintf '%s\\n' \"$q\" >> " << log << "\n"
                     << "case \"$q\" in\n"
                     << "  *'\"host\":\"slow.test\"'*) sleep 2; echo allow;;\n"
                     << "  *'\"host\":\"hang.test\"'*) sleep 10; echo allow;;\n"
                     << "  *'\"host\":\"no.test\"'*) echo '{\"decision\":\"deny\"}';;\n"
                     << "  *) echo allow;;\n"
                     << "esac\n";
    ::chmod(p.c_str(), 0755);
    return p;
}

std::vector<json> read_lines(const std::string& path) {
    std::vector<json> out;
    std::ifstream f(path);
    for (std::string l; std::getline(f, l);)
        if (!l.empty()) out.push_back(json::parse(l));
    return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("egress ask: without an approver, ask is deny (reason 'ask without approver')") {
    Origin origin;
    Dns dns(std::map<std::string, std::string>{{"one.test", "127.0.0.1"}});
    std::string dir = cc::test::scratch_dir();
    Egress eg({"--policy", write_policy(dir), "--allow", "*.test:*", "--allow", "127.0.0.1:*", "--no-baseline",
               "--dns-server", dns.server()});
    CHECK(eg.ready["ask"] == true);
    CHECK(eg.ready["approver"] == false);
    CHECK(eg.ready["networkRule"]["decision"] == "ask");
    auto r = curl({"-x", "http://" + eg.http(), "-o", "/dev/null", "-w", "%{http_code}",
                   "http://one.test:" + std::to_string(origin.port) + "/hello"});
    CHECK(http_code(r) == "403");
    r = curl({"--socks5-hostname", eg.socks(), "http://one.test:" + std::to_string(origin.port) + "/hello"});
    CHECK(r.status != 0);
    CHECK(eg.stop() == 0);
    int n = 0;
    for (const auto& l : eg.lines) {
        if (l.value("host", "") != "one.test") continue;
        ++n;
        CHECK(l["decision"] == "deny");
        CHECK(l["rule"] == "ask");
        CHECK(l["reason"] == "ask without approver");
        CHECK(l["ask"] == "deny");
    }
    CHECK(n == 2);
    CHECK(dns.questions().empty());  // a refused host is never looked up
}

TEST_CASE("egress ask: one question per host:port, answers kept, other clients served while the approver thinks") {
    Origin origin;
    Dns dns({{"slow.test", "127.0.0.1"}, {"fast.test", "127.0.0.1"}, {"no.test", "127.0.0.1"},
             {"hang.test", "127.0.0.1"}});
    std::string dir = cc::test::scratch_dir();
    std::string log = dir + "/approver-questions.jsonl";
    std::string port = std::to_string(origin.port);
    // One event loop: if the approver ran on it, nothing else would be served.
    Egress eg({"--policy", write_policy(dir), "--approver", write_approver(dir, log), "--approver-timeout", "3000",
               "--threads", "1", "--allow", "*.test:*", "--allow", "127.0.0.1:*", "--no-baseline", "--dns-server",
               dns.server()});
    REQUIRE(eg.ready["approver"] == true);
    std::string proxy = "http://" + eg.http();
    // hang.test's approver never answers: it is cut at 3 s, and meanwhile
    // the one event loop serves others (were it blocked, they would wait ~3 s).
    auto t0 = std::chrono::steady_clock::now();
    auto hang = std::async(std::launch::async, [&] {
        return curl({"-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://hang.test:" + port + "/hello"});
    });
    ::usleep(300000);
    // While hang.test's question is out, another client is served at once.
    auto t1 = std::chrono::steady_clock::now();
    auto r = curl({"-x", proxy, "http://fast.test:" + port + "/hello"});
    double fast = seconds_since(t1);
    CHECK(r.out == "hello\n");
    CHECK(fast < 1.5);
    auto h = hang.get();
    CHECK(http_code(h) == "403");
    double hung = seconds_since(t0);
    CHECK(hung >= 2.9);
    CHECK(hung < 6.0);
    // Denied by the approver, and the second time from the session's cache.
    for (int i = 0; i < 2; ++i) {
        r = curl({"-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://no.test:" + port + "/hello"});
        CHECK(http_code(r) == "403");
    }
    // fast.test again, over SOCKS5 too: no new question.
    r = curl({"--socks5-hostname", eg.socks(), "http://fast.test:" + port + "/hello"});
    CHECK(r.out == "hello\n");
    CHECK(eg.stop() == 0);

    auto questions = read_lines(log);
    std::map<std::string, int> asked;
    for (const auto& q : questions) {
        ++asked[q.value("host", "")];
        CHECK(q["action"] == "network_access");
        CHECK(q["port"] == origin.port);
        CHECK(q["mode"] == "chat");
        CHECK(q["reason"] == "a person approves each host");
    }
    CHECK(asked["fast.test"] == 1);
    CHECK(asked["no.test"] == 1);
    CHECK(asked["hang.test"] == 1);
    CHECK(questions.size() == 3);
    int no = 0, fast_lines = 0;
    for (const auto& l : eg.lines) {
        std::string host = l.value("host", "");
        if (host == "hang.test") {
            CHECK(l["decision"] == "deny");
            CHECK(l["rule"] == "ask");
            CHECK_THAT(l["reason"].get<std::string>(), Catch::Contains("no answer within 3000 ms"));
        } else if (host == "no.test") {
            CHECK(l["decision"] == "deny");
            CHECK(l["rule"] == "ask");
            CHECK(l["reason"] == "refused by the approver");
            CHECK(l.value("askCached", false) == (no++ == 1));
        } else if (host == "fast.test") {
            CHECK(l["decision"] == "allow");
            CHECK(l["ask"] == "allow");
            CHECK(l.value("askCached", false) == (fast_lines++ == 1));
        }
    }
    CHECK(no == 2);
    CHECK(fast_lines == 2);
    CHECK_THAT(eg.stderr_text(), Catch::Contains("ask no.test:" + port + ": deny (refused by the approver)"));
}

TEST_CASE("egress ask: clients asking for the same host:port wait for one question") {
    Origin origin;
    Dns dns(std::map<std::string, std::string>{{"slow.test", "127.0.0.1"}});
    std::string dir = cc::test::scratch_dir();
    std::string log = dir + "/approver-slow.jsonl";
    std::string port = std::to_string(origin.port);
    Egress eg({"--policy", write_policy(dir), "--approver", write_approver(dir, log), "--threads", "1", "--allow",
               "*.test:*", "--allow", "127.0.0.1:*", "--no-baseline", "--dns-server", dns.server()});
    std::string proxy = "http://" + eg.http();
    std::vector<std::future<cc::test::RunResult>> all;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i)
        all.push_back(std::async(std::launch::async, [&] { return curl({"-x", proxy, "http://slow.test:" + port + "/hello"}); }));
    for (auto& f : all) CHECK(f.get().out == "hello\n");
    double took = seconds_since(t0);
    CHECK(took >= 1.9);
    CHECK(took < 8.0);
    CHECK(eg.stop() == 0);
    CHECK(read_lines(log).size() == 1);
    int cached = 0;
    for (const auto& l : eg.lines)
        if (l.value("host", "") == "slow.test" && l.value("askCached", false)) ++cached;
    CHECK(cached == 2);
}

TEST_CASE("egress ask: --check says ask for a target the rules admit, and whether an approver would be asked") {
    std::string dir = cc::test::scratch_dir();
    auto check = [&](std::vector<std::string> extra) {
        std::vector<std::string> argv = {cc::test::bin("cc-egress"), "--no-baseline", "--allow", "one.test:443",
                                         "--check", "one.test:443", "two.test:443"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        auto r = cc::test::run(argv);
        std::vector<json> lines;
        std::istringstream in(r.out);
        for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
        return std::make_pair(r.status, lines);
    };
    // The default policy: the admitted target is allowed.
    auto [plain_status, plain] = check({});
    REQUIRE(plain.size() == 2);
    CHECK(plain[0]["decision"] == "allow");
    CHECK(plain_status == 1);  // two.test is not in the allowlist
    // The ask policy: the admitted target is ask, the other still deny.
    auto [ask_status, asked] = check({"--policy", write_policy(dir)});
    REQUIRE(asked.size() == 2);
    CHECK(ask_status == 1);
    CHECK(asked[0]["decision"] == "ask");
    CHECK(asked[0]["rule"] == "allow one.test:443 (--allow)");
    CHECK(asked[0]["ask"] == json{{"source", "rules[0]"}, {"reason", "a person approves each host"}, {"approver", false}});
    CHECK(asked[0]["reason"] ==
          "the rules allow it; the policy's network_access rule asks and there is no approver: refused (ask without approver)");
    CHECK(asked[1]["decision"] == "deny");
    auto [with_status, with] = check({"--policy", write_policy(dir), "--approver", "/bin/true"});
    REQUIRE(with.size() == 2);
    CHECK(with_status == 1);
    CHECK(with[0]["ask"]["approver"] == true);
    CHECK(with[0]["reason"] == "the rules allow it; the policy's network_access rule asks: put to the approver");
    // Only ask targets: still 1 (nothing is allowed yet).
    auto only = cc::test::run({cc::test::bin("cc-egress"), "--no-baseline", "--allow", "one.test:443", "--policy",
                               write_policy(dir), "--check", "one.test:443"});
    CHECK(only.status == 1);
}

TEST_CASE("egress metrics: an OpenMetrics page on a Unix socket, read with curl --unix-socket") {
    Origin origin;
    Dns dns(std::map<std::string, std::string>{{"listed.test", "127.0.0.1"}});
    std::string sock = cc::test::scratch_dir() + "/metrics.sock";
    Egress eg({"--metrics-socket", sock, "--allow", "listed.test:*", "--allow", "127.0.0.1:*", "--no-baseline",
               "--dns-server", dns.server()});
    REQUIRE(eg.ready["metricsSocket"] == sock);
    struct stat st {};
    REQUIRE(::stat(sock.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    std::string port = std::to_string(origin.port);
    std::string proxy = "http://" + eg.http();
    CHECK(curl({"-x", proxy, "http://listed.test:" + port + "/hello"}).out == "hello\n");
    CHECK(http_code(curl({"-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://unlisted.test:" + port + "/"})) == "403");
    CHECK(http_code(curl({"-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://listed.test:1/"})) == "502");
    // The connection lines are counted when written: wait for the third.
    for (int i = 0; i < 100; ++i) {
        auto page = curl({"--unix-socket", sock, "http://localhost/metrics"});
        if (page.out.find("reason=\"no_allow_entry\"} 1") != std::string::npos &&
            page.out.find("kind=\"connect_refused\"} 1") != std::string::npos)
            break;
        ::usleep(50000);
    }
    auto page = curl({"--unix-socket", sock, "-D", "-", "http://localhost/metrics"});
    CHECK(page.status == 0);
    const std::string& m = page.out;
    CHECK_THAT(m, Catch::Contains("HTTP/1.1 200 OK"));
    CHECK_THAT(m, Catch::Contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"));
    CHECK_THAT(m, Catch::Contains("# TYPE cc_egress_connections counter\n"));
    CHECK_THAT(m, Catch::Contains("cc_egress_connections_total{proto=\"http\"} 3\n"));
    CHECK_THAT(m, Catch::Contains("cc_egress_connections_total{proto=\"socks5\"} 0\n"));
    CHECK_THAT(m, Catch::Contains("cc_egress_decisions_total{decision=\"allow\",reason=\"allowed\"} 2\n"));
    CHECK_THAT(m, Catch::Contains("cc_egress_decisions_total{decision=\"deny\",reason=\"no_allow_entry\"} 1\n"));
    CHECK_THAT(m, Catch::Contains("cc_egress_errors_total{kind=\"connect_refused\"} 1\n"));
    CHECK_THAT(m, Catch::Contains("cc_egress_bytes_total{direction=\"down\"} "));
    CHECK_THAT(m, Catch::Contains("cc_egress_resolver_lookup_seconds_count 2\n"));
    CHECK_THAT(m, Catch::Contains("cc_egress_resolver_lookup_seconds_bucket{le=\"+Inf\"} 2\n"));
    CHECK_THAT(m, Catch::EndsWith("# EOF\n"));
    // Bytes down: at least the 6-byte body of the one answered request.
    auto at = m.find("cc_egress_bytes_total{direction=\"down\"} ");
    REQUIRE(at != std::string::npos);
    CHECK(std::stoull(m.substr(at + 41)) >= 6);
    auto nf = curl({"--unix-socket", sock, "-o", "/dev/null", "-w", "%{http_code}", "http://localhost/other"});
    CHECK(http_code(nf) == "404");
    CHECK(eg.stop() == 0);
    CHECK(::access(sock.c_str(), F_OK) != 0);  // removed at exit
}

namespace {

// openssl s_server on 127.0.0.1 with a throw-away certificate.
struct TlsOrigin {
    std::string dir = cc::test::scratch_dir();
    std::uint16_t port = 0;
    bp::child child;
    bool start() {
        // The certificate is the test's own set-up: openssl failing here is a
        // failure, shown with what it said.
        auto cert = cc::test::run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                                   "-days", "1", "-keyout", dir + "/k.pem", "-out", dir + "/c.pem"});
        INFO(cert.err);
        REQUIRE(cert.status == 0);
        REQUIRE(std::filesystem::file_size(dir + "/c.pem") > 0);
        port = free_port();
        child = bp::child(bp::search_path("openssl"), "s_server", "-accept", "127.0.0.1:" + std::to_string(port), "-cert",
                          dir + "/c.pem", "-key", dir + "/k.pem", "-www", "-quiet", bp::std_out > bp::null,
                          bp::std_err > bp::null, bp::std_in < bp::null);
        return wait_listening(port);
    }
    ~TlsOrigin() {
        if (child.valid() && child.running()) {
            ::kill(child.id(), SIGTERM);
            child.wait();
        }
    }
};

}  // namespace

// The approver is asked last: a name whose address the checks refuse is
// refused without a question (the approver never approves what would be
// refused anyway). And a tunnel the approver allowed for one name carries no
// TLS server name it refused or was never asked about.
TEST_CASE("egress ask: addresses are checked before the approver is asked; a tunnel carries only approved server names") {
    if (!cc::test::have_program("openssl")) CC_SKIP("openssl missing");
    TlsOrigin tls;
    REQUIRE(tls.start());
    Origin origin;
    Dns dns({{"fast.test", "127.0.0.1"}, {"other.test", "127.0.0.1"}, {"no.test", "127.0.0.1"},
             {"meta.test", "169.254.169.254"}});
    std::string dir = cc::test::scratch_dir();
    std::string log = dir + "/approver-order.jsonl";
    const std::string p = std::to_string(tls.port);
    std::vector<std::string> args = {"--policy", write_policy(dir), "--approver", write_approver(dir, log), "--allow",
                                     "*.test:*", "--allow", "127.0.0.1:*", "--no-baseline", "--dns-server", dns.server()};
    auto https = [&](const Egress& e, const std::string& sni) {
        // CONNECT fast.test, the TLS server name `sni` (curl names the URL's host).
        return curl({"-k", "-sS", "-x", "http://" + e.http(), "--connect-to", sni + ":" + p + ":fast.test:" + p,
                     "https://" + sni + ":" + p + "/"});
    };
    {
        // Without the SNI check the tunnel for fast.test carries other.test.
        auto off = args;
        off.push_back("--no-sni-check");
        Egress eg(off);
        REQUIRE(https(eg, "fast.test").status == 0);
        auto carried = https(eg, "other.test");
        CHECK(carried.status == 0);
        CHECK_THAT(carried.out, Catch::Contains("s_server"));
        CHECK(eg.stop() == 0);
    }
    ::unlink(log.c_str());
    Egress eg(args);
    // meta.test resolves to the metadata address: refused, never asked.
    auto meta = curl({"-x", "http://" + eg.http(), "-o", "/dev/null", "-w", "%{http_code}",
                      "http://meta.test:" + std::to_string(origin.port) + "/hello"});
    CHECK(http_code(meta) == "403");
    // fast.test is asked and approved; its tunnel works.
    auto fast = https(eg, "fast.test");
    CHECK(fast.status == 0);
    CHECK_THAT(fast.out, Catch::Contains("s_server"));
    // The same tunnel with other.test inside: never asked, refused.
    auto other = https(eg, "other.test");
    CHECK(other.status == 35);
    CHECK(other.out.find("s_server") == std::string::npos);
    // no.test is refused by the approver: a tunnel for fast.test does not carry it either.
    auto no = curl({"-x", "http://" + eg.http(), "-o", "/dev/null", "-w", "%{http_code}",
                    "http://no.test:" + p + "/"});
    CHECK(http_code(no) == "403");
    CHECK(https(eg, "no.test").status == 35);
    // Once other.test is asked about and approved, the tunnel may carry it.
    auto ask_other = curl({"-k", "-sS", "-x", "http://" + eg.http(), "https://other.test:" + p + "/"});
    CHECK(ask_other.status == 0);
    auto now_other = https(eg, "other.test");
    CHECK(now_other.status == 0);
    CHECK_THAT(now_other.out, Catch::Contains("s_server"));
    CHECK(eg.stop() == 0);

    std::set<std::string> asked;
    for (const auto& q : read_lines(log)) asked.insert(q.value("host", ""));
    CHECK(asked == std::set<std::string>{"fast.test", "no.test", "other.test"});
    int meta_lines = 0, unapproved = 0;
    for (const auto& l : eg.lines) {
        if (l.value("host", "") == "meta.test") {
            ++meta_lines;
            CHECK(l["decision"] == "deny");
            CHECK(l["rule"] != "ask");
            CHECK_FALSE(l.contains("ask"));
        }
        if (l.value("sni", "") == "other.test" && l["decision"] == "deny") {
            ++unapproved;
            CHECK(l["rule"] == "ask");
            CHECK(l["reason"] == "TLS server name other.test was not approved (the approver was asked about fast.test)");
        }
    }
    CHECK(meta_lines == 1);
    CHECK(unapproved == 1);
}
