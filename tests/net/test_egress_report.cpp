// cc-egress --report: what only the allowlist would deny is allowed and
// logged with "wouldDeny":true, so an operator can roll out an allowlist;
// `cc-egress learn` turns those lines into the allowlist.
#include "egress_fixture.hpp"

using namespace egress_fixture;

TEST_CASE("egress report: allowlist denials are logged wouldDeny and let through; the rest stays denied") {
    Origin origin;
    Dns dns({{"unlisted.test", "127.0.0.1"}, {"listed.test", "127.0.0.1"}});
    std::string port = std::to_string(origin.port);
    std::vector<std::string> base{"--allow", "listed.test:*", "--allow", "127.0.0.1:*", "--no-baseline", "--dns-server",
                                  dns.server()};
    {
        // Enforcing: a name the allowlist does not list is refused.
        Egress eg(base);
        CHECK(eg.ready["report"] == false);
        auto r = curl({"-x", "http://" + eg.http(), "-o", "/dev/null", "-w", "%{http_code}",
                       "http://unlisted.test:" + port + "/hello"});
        CHECK(http_code(r) == "403");
        CHECK(eg.stop() == 0);
    }
    auto args = base;
    args.push_back("--report");
    Egress eg(args);
    CHECK(eg.ready["report"] == true);
    std::string proxy = "http://" + eg.http();
    auto r = curl({"-x", proxy, "http://unlisted.test:" + port + "/hello"});
    CHECK(r.out == "hello\n");
    r = curl({"--socks5-hostname", eg.socks(), "http://unlisted.test:" + port + "/hello"});
    CHECK(r.out == "hello\n");
    r = curl({"-x", proxy, "http://listed.test:" + port + "/hello"});
    CHECK(r.out == "hello\n");
    // Not an allowlist matter: the metadata address and a private address stay refused.
    r = curl({"-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://169.254.169.254/latest/"});
    CHECK(http_code(r) == "403");
    r = curl({"-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://10.1.2.3:" + port + "/"});
    CHECK(http_code(r) == "403");
    CHECK(eg.stop() == 0);

    int would = 0;
    std::string lines_text;
    for (const auto& l : eg.lines) {
        lines_text += l.dump() + "\n";
        if (l.value("host", "") == "unlisted.test") {
            ++would;
            CHECK(l["decision"] == "allow");
            CHECK(l["wouldDeny"] == true);
            CHECK(l["rule"] == "no allow entry");
            CHECK(l["reason"] == "host unlisted.test is not in the allowlist");
        }
        if (l.value("host", "") == "listed.test") CHECK_FALSE(l.contains("wouldDeny"));
        if (l.value("host", "") == "169.254.169.254" || l.value("host", "") == "10.1.2.3") {
            CHECK(l["decision"] == "deny");
            CHECK_FALSE(l.contains("wouldDeny"));
        }
    }
    CHECK(would == 2);

    // learn: the allowlist that would have allowed this traffic.
    // With the operator's own flags: its 127.0.0.1 entry lets names that
    // resolved there be learnt; without it they are not (non-public).
    auto learnt = cc::test::run({bin("cc-egress"), "--allow", "127.0.0.1:*", "learn"}, eg.ready.dump() + "\n" + lines_text);
    CHECK(learnt.status == 0);
    CHECK(learnt.out == "listed.test:" + port + "\nunlisted.test:" + port + "\n");
    CHECK(cc::test::run({bin("cc-egress"), "learn"}, eg.ready.dump() + "\n" + lines_text).out.empty());
    auto bad = cc::test::run({bin("cc-egress"), "learn"}, std::string("{\"event\":\"ready\"}\nnot json\n"));
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains("line 2"));
}

// learn must never widen what enforcement allows: a list it prints, used to
// enforce, allows nothing the always-deny lists or --deny refuse, and no
// non-public address, whichever field a name came from (CONNECT target,
// absolute-form URL, TLS server name) and whichever mode logged the line.
TEST_CASE("egress learn: what enforcement refuses is never learnt, from any field or mode") {
    auto line = [](const std::string& host, const std::string& rule, const std::string& decision,
                   const std::string& extra = "") {
        return "{\"event\":\"connection\",\"proto\":\"http-connect\",\"client\":\"127.0.0.1:1\",\"host\":\"" + host +
               "\",\"port\":443,\"decision\":\"" + decision + "\",\"rule\":\"" + rule + "\"" + extra + "}\n";
    };
    std::string lines = line("good.example", "no allow entry", "deny") +
                        line("also-good.example", "no allow entry", "allow", ",\"wouldDeny\":true") +
                        line("10.1.2.3", "no allow entry", "allow", ",\"wouldDeny\":true") +
                        line("169.254.169.254", "no allow entry", "allow", ",\"wouldDeny\":true") +
                        line("metadata.google.internal", "no allow entry", "allow", ",\"wouldDeny\":true") +
                        line("resolves-private.example", "no allow entry", "allow",
                             ",\"wouldDeny\":true,\"address\":\"127.0.0.1\"") +
                        line("evil.example", "no allow entry", "deny") +
                        line("tunnel.example", "tls sni metadata.google.internal", "allow", ",\"wouldDeny\":true") +
                        line("tunnel2.example", "tls sni 169.254.169.254", "deny") +
                        "{\"event\":\"connection\",\"proto\":\"socks5\",\"client\":\"127.0.0.1:1\",\"host\":"
                        "{\"bytes\":\"ZXj/\"},\"decision\":\"deny\",\"rule\":\"malformed\"}\n";
    // Before, every name here but the last (bytes that are not UTF-8) was learnt.
    auto r = cc::test::run({bin("cc-egress"), "--deny", "evil.example", "learn"}, lines);
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out == "also-good.example\ngood.example\ntunnel.example\ntunnel2.example\n");
    // Used to enforce, that list refuses the metadata name as ever.
    std::string allow_file = cc::test::scratch_dir() + "/learnt.txt";
    {
        std::ofstream(allow_file) << r.out;
    }
    auto check = cc::test::run({bin("cc-egress"), "--no-baseline", "--allow-file", allow_file, "--check",
                                "metadata.google.internal:443", "--check", "good.example:443", "--format", "json"});
    INFO(check.out << check.err);
    CHECK(check.status == 1);
    CHECK(check.out.find("\"metadata.google.internal\"") != std::string::npos);
}
