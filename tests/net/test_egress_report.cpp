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
    auto learnt = cc::test::run({bin("cc-egress"), "learn"}, eg.ready.dump() + "\n" + lines_text);
    CHECK(learnt.status == 0);
    CHECK(learnt.out == "listed.test:" + port + "\nunlisted.test:" + port + "\n");
    auto bad = cc::test::run({bin("cc-egress"), "learn"}, std::string("{\"event\":\"ready\"}\nnot json\n"));
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains("line 2"));
}
