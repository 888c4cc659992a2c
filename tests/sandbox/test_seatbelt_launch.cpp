// The macOS launch's host side without a Mac: the session's own cc-egress
// (a real one, started as the macOS launch starts it: no fd inbox) names
// its kernel-chosen loopback ports in its ready line, and the plan made from
// that line allows exactly those ports; sandbox-exec refusing to apply a
// profile (here a stand-in program, as the log tap's test uses one for
// /usr/bin/log) is a setup failure with its reason.
// CC_UPDATE_GOLDEN=1 rewrites the snapshot.
#include "harness.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "cc/sandbox/events.hpp"
#include "cc/sandbox/launch_parts.hpp"
#include "cc/sandbox/plan.hpp"
#include "cc/sandbox/seatbelt.hpp"
#include "cc/sandbox/seatbelt_tap.hpp"
#include "sbpl_eval.hpp"
#include "seatbelt_fixture.hpp"

using namespace cc::sandbox;
using namespace seatbelt_fixture;
using nlohmann::json;

namespace {

bool connects(const std::string& profile, const std::string& remote) {
    sbpl::Profile p(profile);
    sbpl::Query q;
    q.op = "network-outbound";
    q.remote = remote;
    return p.decide(q).allow;
}

// The profile's network section, from its heading to the next blank line.
std::string network_section(const std::string& profile) {
    auto a = profile.find("\n;; network:");
    if (a == std::string::npos) return {};
    auto b = profile.find("\n\n", a + 1);
    return profile.substr(a + 1, b == std::string::npos ? std::string::npos : b - a);
}

PlanInput own_egress_input() {
    auto in = mac_input();
    in.egress = {};
    in.egress.source = EgressWiring::Source::own;
    return in;
}

std::string stand_in(const std::string& dir, const std::string& name, const std::string& body) {
    std::string path = dir + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    REQUIRE(::chmod(path.c_str(), 0755) == 0);
    return path;
}

}  // namespace

TEST_CASE("seatbelt launch: own cc-egress's reported ports are the profile's only network", "[seatbelt][egress]") {
    MacHost h;
    // Before cc-egress is ready (and what --print shows): no port, no network.
    auto before = build_plan(own_egress_input(), h);
    REQUIRE(before);
    CHECK(before->proxy.httpPort == 0);
    CHECK(before->proxy.socksPort == 0);
    CHECK_FALSE(connects(before->seatbelt, "127.0.0.1:50123"));
    CHECK(before->proxy.why.find("ports the kernel chooses") != std::string::npos);
    // Its ready line names the ports; the plan made again allows exactly them.
    auto in = own_egress_input();
    json ready = {{"event", "ready"}, {"http", "127.0.0.1:50123"}, {"socks", "127.0.0.1:50124"}};
    REQUIRE(seatbelt_wiring_from_ready(ready, in.egress, "ready"));
    auto plan = build_plan(in, h);
    REQUIRE(plan);
    CHECK(plan->proxy.transport == Transport::loopback);
    CHECK(plan->proxy.egress == "own");
    CHECK(plan->proxy.httpPort == 50123);
    CHECK(plan->proxy.socksPort == 50124);
    CHECK(plan->env.at("HTTPS_PROXY") == "http://127.0.0.1:50123");
    CHECK(plan->env.at("http_proxy") == "http://127.0.0.1:50123");
    CHECK(plan->env.at("ALL_PROXY") == "socks5h://127.0.0.1:50124");
    CHECK(plan->env.at("GIT_SSH_COMMAND") == "ssh -o ProxyCommand='nc -X 5 -x 127.0.0.1:50124 %h %p'");
    CHECK(connects(plan->seatbelt, "127.0.0.1:50123"));
    CHECK(connects(plan->seatbelt, "127.0.0.1:50124"));
    CHECK_FALSE(connects(plan->seatbelt, "127.0.0.1:50125"));
    CHECK_FALSE(connects(plan->seatbelt, "127.0.0.1:41001"));
    CHECK_FALSE(connects(plan->seatbelt, "10.0.0.1:50123"));
    cc::test::check_golden("tests/sandbox/golden/seatbelt-own-egress-network.sb", network_section(plan->seatbelt));
}

TEST_CASE("seatbelt launch: a ready line without loopback TCP ports is refused", "[seatbelt][egress]") {
    auto refuse = [](const json& ready) {
        EgressWiring w;
        auto s = seatbelt_wiring_from_ready(ready, w, "egress.json");
        REQUIRE_FALSE(s);
        CHECK(s.error().code == cc::Errc::input);
        CHECK(w.http.empty());
        return s.error().one_line();
    };
    const std::string tail =
        "' is not a loopback TCP listener 127.0.0.1:PORT; under Seatbelt the sandbox reaches "
        "the proxies on loopback only";
    CHECK(refuse(json{{"event", "connection"}}) == "egress.json: not a cc-egress ready object");
    CHECK(refuse(json{{"event", "ready"}, {"fdInbox", "/x/inbox.sock"}}) == "egress.json.http: '" + tail);
    CHECK(refuse(json{{"event", "ready"}, {"http", "0.0.0.0:3128"}, {"socks", "127.0.0.1:1080"}}) ==
          "egress.json.http: '0.0.0.0:3128" + tail);
    CHECK(refuse(json{{"event", "ready"}, {"http", "127.0.0.1:3128"}, {"socks", "127.0.0.1:0"}}) ==
          "egress.json.socks: '127.0.0.1:0" + tail);
    CHECK(refuse(json{{"event", "ready"}, {"http", "127.0.0.1:70000"}, {"socks", "127.0.0.1:1080"}}) ==
          "egress.json.http: '127.0.0.1:70000" + tail);
}

// The real cc-egress, started as the macOS launch starts it: no fd inbox,
// so it takes loopback ports of the kernel's choosing and names them.
TEST_CASE("seatbelt launch: own cc-egress without an inbox reports its loopback ports", "[seatbelt][egress]") {
    std::string exe = cc::test::bin("cc-egress");
    if (::access(exe.c_str(), X_OK) != 0) CC_SKIP("cc-egress not built");
    std::string dir = cc::test::scratch_dir() + "/own-egress";
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    std::string spec = dir + "/spec.json";
    std::ofstream(spec) << json{{"sessionId", "s1"}, {"workspaceId", "ws"}}.dump();
    detail::Egress eg;
    REQUIRE(detail::start_egress(eg, exe, spec, ""));
    auto ready = detail::read_egress_ready(eg, 10000);
    REQUIRE(ready);
    INFO(ready->dump());
    CHECK(eg.ready_seen);
    CHECK_FALSE(ready->contains("fdInbox"));
    auto in = own_egress_input();
    REQUIRE(seatbelt_wiring_from_ready(*ready, in.egress, "ready"));
    MacHost h;
    auto plan = build_plan(in, h);
    REQUIRE(plan);
    CHECK(plan->proxy.httpPort > 0);
    CHECK(plan->proxy.socksPort > 0);
    CHECK(plan->proxy.httpPort != plan->proxy.socksPort);
    CHECK(connects(plan->seatbelt, ready->at("http").get<std::string>()));
    CHECK(connects(plan->seatbelt, ready->at("socks").get<std::string>()));
    auto st = eg.stop();  // --exit-with-stdin: closing its stdin ends it
    REQUIRE(st);
    CHECK(WIFEXITED(*st));
    CHECK(WEXITSTATUS(*st) == 0);
    // A cc-egress refusing its input never gets to a ready line: exit 2, its reason shown.
    std::ofstream(spec) << "{";
    detail::Egress bad;
    REQUIRE(detail::start_egress(bad, exe, spec, ""));
    auto none = detail::read_egress_ready(bad, 10000);
    REQUIRE_FALSE(none);
    CHECK(none.error().code == cc::Errc::input);
    CHECK(none.error().one_line() == "cc-egress: exited before it was ready (it refused its input)");
}

TEST_CASE("seatbelt launch: sandbox-exec refusing to stack a profile is a setup failure with the reason",
          "[seatbelt][setup]") {
    std::string dir = cc::test::scratch_dir() + "/preflight";
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    std::string args = dir + "/args";
    auto nested = stand_in(dir, "nested",
                           "printf '%s\\n' \"$@\" > '" + args +
                               "'\necho 'sandbox-exec: sandbox_apply: Operation not permitted' >&2\nexit 71\n");
    auto s = seatbelt_preflight(nested);
    REQUIRE_FALSE(s);
    CHECK(s.error().code == cc::Errc::unavailable);
    const std::string reason =
        "sandbox-exec could not apply the profile: this process is already inside a Seatbelt sandbox, and macOS "
        "does not stack a second one (run cc-wrap outside the other sandbox)";
    CHECK(s.error().one_line() == reason);
    std::ifstream a(args);
    std::string got((std::istreambuf_iterator<char>(a)), {});
    CHECK(got == "-p\n(version 1)(allow default)\n/usr/bin/true\n");
    // The exit event carries the same reason, status 125, ended by setup.
    json exit_fields = setup_failure_exit(s.error());
    CHECK(exit_fields == json{{"exitCode", 125}, {"endedBy", "setup"}, {"reason", reason}});
    CHECK(exit_fields["exitCode"] == exit_own_failure);
    // Any other failure: the program, how it ended, and its first line.
    auto other = stand_in(dir, "other", "echo 'sandbox-exec: something else' >&2\necho more >&2\nexit 1\n");
    auto o = seatbelt_preflight(other);
    REQUIRE_FALSE(o);
    CHECK(o.error().one_line() ==
          other + ": cannot apply even a trivial profile here (it exited 1): sandbox-exec: something else");
    auto killed = stand_in(dir, "killed", "kill -9 $$\n");
    auto k = seatbelt_preflight(killed);
    REQUIRE_FALSE(k);
    CHECK(k.error().one_line() == killed + ": cannot apply even a trivial profile here (it was killed by signal 9)");
    auto hang = stand_in(dir, "hang", "exec sleep 600\n");
    auto hg = seatbelt_preflight(hang, 200);
    REQUIRE_FALSE(hg);
    CHECK(hg.error().one_line() == hang + ": did not finish a trivial profile within 200 ms");
    auto missing = seatbelt_preflight(dir + "/nosuch");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().one_line() == dir + "/nosuch: cannot start: No such file or directory");
    // Outside any sandbox it succeeds and says nothing.
    auto fine = stand_in(dir, "fine", "exit 0\n");
    CHECK(seatbelt_preflight(fine));
}
