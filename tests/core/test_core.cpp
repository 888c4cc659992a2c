// lib/cc/core: errors as values, the strict JSON reader, the file helpers and
// the CLI parse wrapper every tool's main() goes through.
#include <catch2/catch.hpp>

#include "harness.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cc/core/cli.hpp"
#include "cc/core/io.hpp"
#include "cc/core/json_reader.hpp"
#include "cc/core/result.hpp"

namespace fs = std::filesystem;

TEST_CASE("core: an error is one line: subject, message, strerror", "[core][unit]") {
    CHECK(cc::input_error("bindMounts[2].hostPath", "must be absolute").one_line() ==
          "bindMounts[2].hostPath: must be absolute");
    CHECK(cc::io_error("'/x'", "cannot open", ENOENT).one_line() == "'/x': cannot open: No such file or directory");
    CHECK(cc::unavailable_error("", "no bubblewrap").one_line() == "no bubblewrap");
    // A hostile subject cannot split the line.
    CHECK(cc::input_error("a\nb\rc", "bad").one_line() == "a b c: bad");
    CHECK(cc::input_error("s", "m").code == cc::Errc::input);
    CHECK(cc::io_error("s", "m", EIO).code == cc::Errc::io);
    CHECK(cc::unavailable_error("s", "m").code == cc::Errc::unavailable);
}

TEST_CASE("core: Result holds a value or an error, never both", "[core][unit]") {
    cc::Result<int> good = 7;
    REQUIRE(good);
    CHECK(*good == 7);
    cc::Result<int> bad = cc::input_error("x", "y");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().one_line() == "x: y");
    cc::Status s = cc::ok();
    CHECK(s.ok());
    cc::Status f = cc::io_error("f", "g", 0);
    CHECK_FALSE(f.ok());
}

TEST_CASE("core: JSON parse errors name the subject and the place", "[core][unit]") {
    auto ok = cc::json::parse(R"({"a": 1})", "spec.json");
    REQUIRE(ok);
    CHECK((*ok)["a"] == 1);
    auto bad = cc::json::parse(R"({"a": 1,})", "spec.json");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == cc::Errc::input);
    CHECK(bad.error().one_line().rfind("spec.json", 0) == 0);
    CHECK(cc::json::join("", "c") == "c");
    CHECK(cc::json::join("a.b", "c") == "a.b.c");
    CHECK(cc::json::join("a", 2) == "a[2]");
}

TEST_CASE("core: the object reader refuses unknown fields, wrong types and missing required fields", "[core][unit]") {
    using nlohmann::json;
    {
        json j = {{"name", "x"}, {"count", 3}, {"on", true}};
        cc::json::ObjectReader r(j, "");
        std::string name;
        int count = 0;
        bool on = false;
        r.required("name", name);
        r.optional("count", count);
        r.optional("on", on);
        CHECK_FALSE(r.finish().has_value());
        CHECK(name == "x");
        CHECK(count == 3);
        CHECK(on);
    }
    {
        json j = {{"name", "x"}, {"colour", "red"}};
        cc::json::ObjectReader r(j, "bindMounts[1]");
        std::string name;
        r.required("name", name);
        auto e = r.finish();
        REQUIRE(e.has_value());
        CHECK(e->code == cc::Errc::input);
        CHECK(e->one_line().find("bindMounts[1].colour") != std::string::npos);
    }
    {
        json j = {{"count", "three"}};
        cc::json::ObjectReader r(j, "");
        int count = 5;
        r.optional("count", count);
        auto e = r.finish();
        REQUIRE(e.has_value());
        CHECK(count == 5);  // unchanged on a type mismatch
        CHECK(e->one_line().find("count") != std::string::npos);
    }
    {
        json j = json::object();
        cc::json::ObjectReader r(j, "");
        std::string id;
        r.required("sessionId", id);
        auto e = r.finish();
        REQUIRE(e.has_value());
        CHECK(e->one_line().find("sessionId") != std::string::npos);
    }
}

TEST_CASE("core: read_input names the file; a missing or unreadable one is an input error", "[core][unit]") {
    std::string dir = cc::test::scratch_dir() + "/core-io";
    fs::create_directories(dir);
    std::string f = dir + "/in.json";
    REQUIRE(cc::io::write_file_atomic(f, "{}\n", 0600));
    auto r = cc::io::read_input(f);
    REQUIRE(r);
    CHECK(*r == "{}\n");
    struct stat st {};
    REQUIRE(::stat(f.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    auto missing = cc::io::read_input(dir + "/nope.json");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == cc::Errc::input);
    CHECK(missing.error().one_line().find("nope.json") != std::string::npos);
    auto directory = cc::io::read_input(dir);
    REQUIRE_FALSE(directory);
    CHECK(directory.error().code == cc::Errc::input);
    // A failed atomic write leaves nothing behind.
    auto w = cc::io::write_file_atomic(dir + "/no/such/dir/out", "x");
    CHECK_FALSE(w.ok());
    CHECK_FALSE(fs::exists(dir + "/no"));
    std::size_t left = 0;
    for (const auto& e : fs::directory_iterator(dir)) left += e.path().filename() != "in.json";
    CHECK(left == 0);
}

TEST_CASE("core: the data directory follows CC_DATA_DIR", "[core][unit]") {
    const char* old = std::getenv("CC_DATA_DIR");
    std::string keep = old ? old : "";
    ::setenv("CC_DATA_DIR", "/srv/elsewhere", 1);
    CHECK(cc::io::data_dir() == "/srv/elsewhere");
    if (old) ::setenv("CC_DATA_DIR", keep.c_str(), 1);
    else ::unsetenv("CC_DATA_DIR");
}

namespace {
struct Parsed {
    std::optional<int> rc;
    std::string err, out;
};
Parsed parse_args(std::vector<std::string> words) {
    CLI::App app{"test tool", "cc-test"};
    cc::tool::standard_flags(app, "cc-test");
    std::string spec;
    std::vector<std::string> command;
    app.add_option("--spec", spec, "SandboxSpec file");
    app.add_option("command", command, "the command")->expected(0, -1);
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    std::ostringstream err, out;
    auto* old_err = std::cerr.rdbuf(err.rdbuf());
    auto* old_out = std::cout.rdbuf(out.rdbuf());
    Parsed p;
    p.rc = cc::tool::parse(app, static_cast<int>(argv.size()), argv.data(), "cc-test");
    std::cerr.rdbuf(old_err);
    std::cout.rdbuf(old_out);
    p.err = err.str();
    p.out = out.str();
    return p;
}
}  // namespace

TEST_CASE("core: the CLI wrapper: exit 2 and one line for bad arguments, 0 for --version", "[core][unit]") {
    auto ok = parse_args({"cc-test", "--spec", "s.json", "--", "ls", "-la"});
    CHECK_FALSE(ok.rc.has_value());
    auto unknown = parse_args({"cc-test", "--spec", "s.json", "--bogus"});
    REQUIRE(unknown.rc.has_value());
    CHECK(*unknown.rc == 2);
    CHECK(unknown.err == "cc-test: unknown option '--bogus'\n");
    // A command's own option before "--": named, with the line to use instead.
    auto cmd = parse_args({"cc-test", "--spec", "s.json", "ls", "-la"});
    REQUIRE(cmd.rc.has_value());
    CHECK(*cmd.rc == 2);
    CHECK(cmd.err == "cc-test: unknown option '-la'; the command's own options go after '--': cc-test --spec s.json -- ls -la\n");
    // A flag never takes the next word as its value.
    auto quiet = parse_args({"cc-test", "--quiet", "ls", "-la"});
    REQUIRE(quiet.rc.has_value());
    CHECK(quiet.err == "cc-test: unknown option '-la'; the command's own options go after '--': cc-test --quiet -- ls -la\n");
    auto version = parse_args({"cc-test", "--version"});
    REQUIRE(version.rc.has_value());
    CHECK(*version.rc == 0);
    CHECK(version.out.rfind("cc-test ", 0) == 0);
    auto completion = parse_args({"cc-test", "--generate-completion", "bash"});
    REQUIRE(completion.rc.has_value());
    CHECK(*completion.rc == 0);
    CHECK(completion.out.find("complete -o default -F _cc_test cc-test") != std::string::npos);
    CHECK(completion.out.find("--spec) COMPREPLY=($(compgen -f") != std::string::npos);
}

TEST_CASE("io: write_all and read_all round-trip through a pipe; a closed reader is EPIPE", "[core]") {
    int p[2];
    REQUIRE(::pipe(p) == 0);
    std::string big(200000, 'x');  // more than a pipe holds: the writer loops while the reader drains
    big[12345] = '\n';
    std::string got;
    std::thread reader([&] {
        auto r = cc::io::read_all(p[0], "the pipe");
        REQUIRE(r);
        got = *r;
    });
    CHECK(cc::io::write_all(p[1], big) == 0);
    ::close(p[1]);
    reader.join();
    ::close(p[0]);
    CHECK(got == big);
    // Nothing to write: nothing written, no error.
    REQUIRE(::pipe(p) == 0);
    CHECK(cc::io::write_all(p[1], "") == 0);
    ::close(p[0]);
    std::signal(SIGPIPE, SIG_IGN);
    CHECK(cc::io::write_all(p[1], "gone") == EPIPE);
    ::close(p[1]);
    auto bad = cc::io::read_all(-1, "fd -1");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().one_line().rfind("fd -1: cannot read", 0) == 0);
}
