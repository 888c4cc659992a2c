// What every tool promises on its command line, checked against the built
// binaries: --version, --quiet, one line and exit 2 for bad input files and
// unknown options, and what once failed for a newcomer.
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.hpp"

using cc::test::bin;
using cc::test::run;

namespace {

const std::vector<std::string> k_tools = {"cc-probe",    "cc-wrap",     "cc-egress", "cc-pushgate",
                                          "cc-classify", "cc-worktree", "cc-confine"};

std::string scratch(const std::string& name) {
    std::string d = cc::test::scratch_dir() + "/contract-" + name;
    ::mkdir(d.c_str(), 0755);
    return d;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string read(const std::string& path) {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

// A spec whose only bind is `dir` (which must exist).
std::string spec_file(const std::string& dir, const std::string& bind) {
    std::string path = dir + "/spec.json";
    write(path, nlohmann::json{{"sessionId", "s1"},
                               {"workspaceId", "w1"},
                               {"bindMounts", {{{"hostPath", bind}, {"readOnly", false}}}},
                               {"guestWorkdir", bind}}
                    .dump());
    return path;
}

}  // namespace

TEST_CASE("newcomer: --version prints '<tool> <version>' in every tool, the internal helper too") {
    std::vector<std::string> all = k_tools;
    all.push_back("cc-wrap-init");
    for (const auto& t : all) {
        auto r = run({bin(t), "--version"});
        INFO(t);
        CHECK(r.status == 0);
        CHECK(r.out == t + " " + CC_VERSION + "\n");
        CHECK(r.err.empty());
    }
}

TEST_CASE("newcomer: a missing or unreadable input file is exit 2 and one line naming it, in every tool") {
    std::string dir = scratch("missing");
    std::string spec = spec_file(dir, dir);
    std::string missing = dir + "/no-such.json";
    struct Case {
        std::vector<std::string> argv;
        std::string err;
    };
    const std::string enoent = "': cannot open: No such file or directory\n";
    std::vector<Case> cases = {
        {{bin("cc-wrap"), "--spec", missing, "--", "true"}, "cc-wrap: '" + missing + enoent},
        {{bin("cc-wrap"), "--spec", spec, "--probe", missing, "--print", "--", "true"}, "cc-wrap: '" + missing + enoent},
        {{bin("cc-wrap"), "--spec", dir, "--", "true"}, "cc-wrap: '" + dir + "': is a directory\n"},
        {{bin("cc-egress"), "--spec", missing, "--dry-run"}, "cc-egress: '" + missing + enoent},
        {{bin("cc-egress"), "--allow-file", missing, "--check", "example.org"}, "cc-egress: '" + missing + enoent},
        {{bin("cc-classify"), "--policy", missing, "ls"}, "cc-classify: '" + missing + enoent},
        {{bin("cc-pushgate"), "--upstream", "http://127.0.0.1:9", "--repo", "a/b", "--policy", missing},
         "cc-pushgate: '" + missing + enoent},
        {{bin("cc-worktree"), "list", "--data-dir", missing}, ""},
        {{bin("cc-confine"), "--workdir", missing, "x"}, ""},
    };
    for (const auto& c : cases) {
        auto r = run(c.argv);
        INFO(c.argv[0] << " " << c.argv[1] << " " << c.argv[2]);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        if (!c.err.empty()) CHECK(r.err == c.err);
        else CHECK_THAT(r.err, Catch::Contains(missing));
    }
}

TEST_CASE("newcomer: a bind whose hostPath does not exist is a spec error at load, naming the field") {
    std::string dir = scratch("bind");
    std::string spec = spec_file(dir, dir + "/gone");
    auto r = run({bin("cc-wrap"), "--spec", spec, "--print", "--", "true"});
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "cc-wrap: '" + spec + "': bindMounts[0].hostPath: '" + dir +
                       "/gone' cannot be bound: No such file or directory\n");
}

TEST_CASE("newcomer: unknown options and subcommands are named first, with '--' suggested before a command") {
    struct Case {
        std::vector<std::string> args;
        std::string err;
    };
    std::vector<Case> cases = {
        {{"cc-wrap", "--spec", "s.json", "ls", "-la"},
         "cc-wrap: unknown option '-la'; the command's own options go after '--': cc-wrap --spec s.json -- ls -la\n"},
        // Named before the missing --spec that follows from it.
        {{"cc-wrap", "ls", "-la"},
         "cc-wrap: unknown option '-la'; the command's own options go after '--': cc-wrap -- ls -la\n"},
        {{"cc-classify", "--mode", "plan", "git", "log", "--oneline"},
         "cc-classify: unknown option '--oneline'; the command's own options go after '--': "
         "cc-classify --mode plan -- git log --oneline\n"},
        {{"cc-probe", "--jsn"}, "cc-probe: unknown option '--jsn'\n"},
        {{"cc-probe", "json"}, "cc-probe: unexpected argument 'json'\n"},
        {{"cc-worktree", "creat", "--data-dir", "d"},
         "cc-worktree: unknown subcommand 'creat' (subcommands: create, list, status or destroy)\n"},
        {{"cc-worktree"}, "cc-worktree: missing subcommand (create, list, status or destroy)\n"},
        {{"cc-worktree", "list", "--data-dir", "d", "--colour"}, "cc-worktree: list: unknown option '--colour'\n"},
        {{"cc-egress", "lern"}, "cc-egress: unexpected argument 'lern' (subcommands: learn)\n"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> argv = c.args;
        argv[0] = bin(argv[0]);
        auto r = run(argv);
        INFO(c.args[0] << " " << (c.args.size() > 1 ? c.args[1] : ""));
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.err == c.err);
    }
}

TEST_CASE("newcomer: --quiet leaves out the log lines of a successful run") {
    std::string dir = scratch("quiet");
    std::string spec = spec_file(dir, dir);
    // --backend none is said on stderr: running without a sandbox is never silent by default.
    auto loud = run({bin("cc-wrap"), "--spec", spec, "--backend", "none", "--print", "--", "true"});
    CHECK(loud.status == 0);
    CHECK_THAT(loud.err, Catch::StartsWith("cc-wrap: "));
    auto quiet = run({bin("cc-wrap"), "--quiet", "--spec", spec, "--backend", "none", "--print", "--", "true"});
    CHECK(quiet.status == 0);
    CHECK(quiet.err.empty());
    // The same plan, but for the runtime directory's name (a fresh one per
    // run) and, run by root over a root-owned directory, the session's own
    // uid (a fresh one per run, named in the identity's reason).
    auto plan_of = [](std::string s) {
        auto j = nlohmann::json::parse(s, nullptr, false);
        if (j.is_object() && j.contains("identity") && j["identity"]["hostUid"].get<unsigned>() >= 0x70000000u) {
            std::string uid = std::to_string(j["identity"]["hostUid"].get<unsigned>());
            for (auto at = s.find(uid); at != std::string::npos; at = s.find(uid, at)) s.replace(at, uid.size(), "1");
            j = nlohmann::json::parse(s, nullptr, false);
        }
        if (j.is_object()) j.erase("runtimeDir");
        return j;
    };
    CHECK(plan_of(quiet.out) == plan_of(loud.out));
    // Errors are still said.
    auto bad = run({bin("cc-wrap"), "--quiet", "--spec", dir + "/none.json", "--", "true"});
    CHECK(bad.status == 2);
    CHECK_FALSE(bad.err.empty());

    if (!cc::test::have_program("git")) CC_SKIP("git is not installed");
    std::string repo = dir + "/repo", data = dir + "/data";
    ::mkdir(data.c_str(), 0755);
    REQUIRE(run({"git", "init", "-q", repo}).status == 0);
    REQUIRE(run({"git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m",
                 "x"})
                .status == 0);
    // --quiet after the subcommand's name too.
    auto wt = run({bin("cc-worktree"), "create", "--quiet", "--data-dir", data, "--conversation", "c1", "--repo", repo,
                   "--backend", "git-worktree"});
    CHECK(wt.status == 0);
    CHECK(wt.err.empty());
    auto wt2 = run({bin("cc-worktree"), "create", "--data-dir", data, "--conversation", "c2", "--repo", repo,
                    "--backend", "git-worktree"});
    CHECK(wt2.status == 0);
    CHECK(wt2.err == "cc-worktree: backend git-worktree (chosen): checks out HEAD only, no copy-on-write\n");
    for (const auto& t : k_tools) {
        INFO(t);
        CHECK(run({bin(t), "--quiet", "--version"}).status == 0);
    }
}

TEST_CASE("newcomer: cc-probe --backend with an unknown name says so, exit 2") {
    auto r = run({bin("cc-probe"), "--backend", "foo"});
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "cc-probe: --backend: unknown backend name 'foo' (native, none or microvm; docker is read as native)\n");
    auto docker = run({bin("cc-probe"), "--backend", "docker", "--json"});
    CHECK(nlohmann::json::parse(docker.out)["backendChoice"]["parsed"] == "native");
}

TEST_CASE("newcomer: cc-classify --jsonl names a bad line once") {
    auto r = run({bin("cc-classify"), "--jsonl"}, "{\"cmd\":\"ls\"}\nnot json\n");
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::StartsWith("cc-classify: stdin line 2: "));
    CHECK_THAT(r.err, !Catch::Contains("stdin line 2: stdin line 2"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("newcomer: cc-confine: a trailing slash on a file is ENOTDIR; the file is neither read nor written") {
    std::string w = scratch("slash");
    write(w + "/notes.md", "keep\n");
    auto rd = run({bin("cc-confine"), "--workdir", w, "--open-read", "notes.md/"});
    CHECK(rd.status == 1);
    CHECK(rd.out.empty());
    CHECK(rd.err == "cc-confine: 'notes.md/': cannot open: Not a directory\n");
    for (bool openat2 : {true, false}) {
        std::vector<std::string> argv = {bin("cc-confine"), "--workdir", w, "--open-write", "notes.md/"};
        if (!openat2) argv.push_back("--no-openat2");
        auto wr = run(argv, "overwritten\n");
        CHECK(wr.status == 1);
        CHECK_THAT(wr.err, Catch::EndsWith("cc-confine: 'notes.md/': cannot open: Not a directory\n"));
        CHECK(read(w + "/notes.md") == "keep\n");
    }
    auto create = run({bin("cc-confine"), "--workdir", w, "--open-write", "new.md/"}, "x\n");
    CHECK(create.status == 1);
    CHECK_THAT(create.err, Catch::EndsWith("cc-confine: 'new.md/': cannot open: Is a directory\n"));
    struct stat st {};
    CHECK(::stat((w + "/new.md").c_str(), &st) != 0);
    // Without the slash, the same file opens.
    auto ok = run({bin("cc-confine"), "--workdir", w, "--open-read", "notes.md"});
    CHECK(ok.status == 0);
    CHECK(ok.out == "keep\n");
}

TEST_CASE("newcomer: cc-worktree: a missing --data-dir is one line that says what to do") {
    std::string missing = scratch("wt") + "/absent";
    auto r = run({bin("cc-worktree"), "list", "--data-dir", missing});
    CHECK(r.status == 2);
    CHECK(r.err == "cc-worktree: '" + missing +
                       "': data dir does not exist: create it on a reflink filesystem (XFS with reflink=1, btrfs) on "
                       "the repos' device; see cc-worktree(1)\n");
}
