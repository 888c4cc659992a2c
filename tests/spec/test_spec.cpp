#include "harness.hpp"

#include <fstream>
#include <sstream>

#include "cc/core/io.hpp"
#include "cc/spec/spec.hpp"

using namespace cc::spec;

TEST_CASE("SandboxSpec: defaults for a minimal spec") {
    auto s = parse_sandbox_spec(R"({"sessionId":"s","workspaceId":"w"})", "t");
    REQUIRE(s);
    CHECK(s->networkEnabled);
    CHECK(s->mode == cc::policy::Mode::chat);
    CHECK(s->bindMounts.empty());
    CHECK_FALSE(s->agentId);
}

TEST_CASE("SandboxSpec: errors name the field path") {
    auto check = [](const std::string& body, const std::string& expect) {
        auto s = parse_sandbox_spec(body, "spec.json");
        INFO(body);
        REQUIRE_FALSE(s);
        CHECK(s.error().code == cc::Errc::input);
        CHECK(s.error().one_line() == expect);
    };
    const std::string head = R"("sessionId":"s","workspaceId":"w")";
    check("{" + head + R"(,"bindMounts":[{"hostPath":"/a"},{"hostPath":"/b"},{"hostPath":"rel"}]})",
          "spec.json: bindMounts[2].hostPath: must be absolute");
    check("{" + head + R"(,"bindMounts":[{"hostPath":"/a","guestPath":"x"}]})",
          "spec.json: bindMounts[0].guestPath: must be absolute");
    check("{" + head + R"(,"bindMounts":[{"hostPath":"/a","writable":true}]})",
          "spec.json: bindMounts[0].writable: unknown field");
    check("{" + head + R"(,"bindMounts":[{"hostPath":"/a","readOnly":"yes"}]})",
          "spec.json: bindMounts[0].readOnly: must be a boolean, not a string");
    check("{" + head + R"(,"networkEnabled":1})", "spec.json: networkEnabled: must be a boolean, not a number");
    check("{" + head + R"(,"mode":"yolo"})", "spec.json: mode: unknown mode 'yolo' (chat, plan, review or orchestrate)");
    check("{" + head + R"(,"protectedPaths":["/ok","rel"]})", "spec.json: protectedPaths[1]: must be absolute");
    check("{" + head + R"(,"egressAllowlist":["a.com",3]})", "spec.json: egressAllowlist[1]: must be a string, not a number");
    check("{" + head + R"(,"colour":"red"})", "spec.json: colour: unknown field");
    check(R"({"workspaceId":"w"})", "spec.json: sessionId: is required");
    check(R"({"sessionId":"","workspaceId":"w"})", "spec.json: sessionId: must not be empty");
    check(R"({"sessionId":"s","workspaceId":"w")", "spec.json: malformed JSON at byte 35");
    check(R"(["not","an","object"])", "spec.json: document: must be an object, not an array");
}

TEST_CASE("SandboxSpec: guestPath defaults to hostPath, and to_json round-trips") {
    auto s = parse_sandbox_spec(R"({"sessionId":"s","workspaceId":"w","agentId":"a",
        "bindMounts":[{"hostPath":"/h","readOnly":true}],"mode":"review","guestWorkdir":"/h"})", "t");
    REQUIRE(s);
    CHECK(s->bindMounts[0].guestPath == "/h");
    CHECK(s->mode == cc::policy::Mode::review);
    auto again = sandbox_spec_from_json(to_json(*s));
    REQUIRE(again);
    CHECK(to_json(*again) == to_json(*s));
}

TEST_CASE("every example in sandbox-spec.schema.json parses") {
    std::ifstream f(cc::io::data_dir() + "/schema/sandbox-spec.schema.json");
    REQUIRE(f);
    auto schema = nlohmann::json::parse(f);
    REQUIRE(schema["examples"].size() >= 2);
    for (const auto& ex : schema["examples"]) {
        auto s = sandbox_spec_from_json(ex);
        INFO(ex.dump());
        CHECK(s);
    }
    // The schema and the parser know the same fields.
    for (auto& [key, _] : schema["properties"].items()) {
        if (key == "$schema") continue;
        auto j = to_json(*sandbox_spec_from_json(schema["examples"][1]));
        INFO(key);
        CHECK(j.contains(key));
    }
}

TEST_CASE("Handle and Violation JSON") {
    Handle h{"s", Backend::native, State::active, std::nullopt, {{"mechanism", "bubblewrap"}}};
    auto j = to_json(h);
    CHECK(j["backend"] == "native");
    CHECK(j["state"] == "active");
    CHECK_FALSE(j.contains("error"));
    h.error = "boom";
    CHECK(to_json(h)["error"] == "boom");
    Violation v{"write", "/x", std::string("touch: /x: Read-only file system")};
    CHECK(to_json(v)["raw"] == "touch: /x: Read-only file system");
}

TEST_CASE("io::read_input names the file it cannot read") {
    auto r = cc::io::read_input("/nonexistent/spec.json");
    REQUIRE_FALSE(r);
    CHECK(r.error().one_line() == "'/nonexistent/spec.json': cannot open: No such file or directory");
    CHECK(r.error().code == cc::Errc::input);  // bad input: exit 2 in every tool
    auto d = cc::io::read_input("/tmp");
    REQUIRE_FALSE(d);
    CHECK_THAT(d.error().one_line(), Catch::Contains("is a directory"));
    std::string path = cc::test::scratch_dir() + "/atomic.txt";
    REQUIRE(cc::io::write_file_atomic(path, "hello"));
    CHECK(*cc::io::read_input(path) == "hello");
}
