// Path confinement: the table of confine_cases.hpp against check() and both
// confined-open methods, the CLI's output and exit statuses, and the race
// where a directory is swapped for a symlink while confined opens run.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cc/fs/confine.hpp"
#include "confine_cases.hpp"
#include "harness.hpp"
#include "cc/core/io.hpp"

namespace {

namespace sfs = std::filesystem;

// share/cc/schema as the tests see it ($CC_DATA_DIR is staged for as_user runs).
std::string schema_dir() { return cc::io::data_dir() + "/schema"; }
using cc::test::bin;
using cc::test::run;

struct Fixture {
    std::string base, W, R, O, deep;
};

void write(const std::string& path, const std::string& data) {
    std::ofstream f(path, std::ios::binary);
    f << data;
    REQUIRE(f.good());
}

void link(const std::string& target, const std::string& at) { REQUIRE(::symlink(target.c_str(), at.c_str()) == 0); }

const Fixture& fixture() {
    static Fixture fx = [] {
        Fixture f;
        f.base = cc::test::scratch_dir() + "/conf";
        f.W = f.base + "/work";
        f.R = f.base + "/root";
        f.O = f.base + "/out";
        for (const auto& d : {f.W, f.R, f.O, f.W + "/sub/deep", f.W + "/ünïcødé"}) sfs::create_directories(d);
        write(f.W + "/file.txt", "inside");
        write(f.W + "/sub/inner.txt", "inner");
        write(f.W + "/sub/deep/leaf.txt", "leaf");
        write(f.W + "/ünïcødé/ファイル.txt", "unicode");
        write(f.W + "/odd\x01\x7fname", "odd");
        write(f.W + "/new\nline", "newline");
        write(f.W + "/sp ace", "space");
        write(f.W + "/-dash", "dash");
        write(f.R + "/repo.txt", "repo");
        write(f.O + "/secret.txt", "SECRET");
        const std::string W = f.W;
        link("file.txt", W + "/link_file");
        link("sub", W + "/link_sub");
        link(W + "/file.txt", W + "/link_abs_in");
        link(f.O, W + "/link_out_abs");
        link("../out", W + "/link_out_rel");
        link("../out/secret.txt", W + "/link_out_file");
        link("chain2", W + "/chain1");
        link("chain3", W + "/chain2");
        link("file.txt", W + "/chain3");
        link("chain_out2", W + "/chain_out1");
        link("link_out_rel", W + "/chain_out2");
        link("../out/../work/file.txt", W + "/chain_back");
        link("missing-target", W + "/dangling");
        link("../out/not-there", W + "/dangling_out");
        link("/nonexistent-cc-dir/x", W + "/dangling_abs_out");
        link("loop_b", W + "/loop_a");
        link("loop_a", W + "/loop_b");
        link(".", W + "/self");
        link("..", W + "/up");
        link("../..", W + "/sub/up2");
        link("../file.txt", W + "/sub/back");
        link("../root", W + "/to_root");
        link("/proc/self/root", W + "/proc_root");
        link("/proc/self/cwd", W + "/proc_cwd");
        link("/proc/self/fd", W + "/proc_fd");
        // 20 levels of 250-byte names, made with *at() calls because the
        // whole path is longer than PATH_MAX.
        std::string name(250, 'D');
        int fd = ::open(W.c_str(), O_RDONLY | O_DIRECTORY);
        REQUIRE(::mkdirat(fd, "deep", 0755) == 0);
        int cur = ::openat(fd, "deep", O_RDONLY | O_DIRECTORY);
        ::close(fd);
        f.deep = "deep";
        for (int i = 0; i < 20; ++i) {
            REQUIRE(::mkdirat(cur, name.c_str(), 0755) == 0);
            int next = ::openat(cur, name.c_str(), O_RDONLY | O_DIRECTORY);
            ::close(cur);
            cur = next;
            f.deep += "/" + name;
        }
        ::close(cur);
        return f;
    }();
    return fx;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (std::size_t i = s.find(from); i != std::string::npos; i = s.find(from, i + to.size())) s.replace(i, from.size(), to);
    return s;
}

std::string expand(const std::string& p, const Fixture& f) {
    std::string s = replace_all(replace_all(replace_all(p, "$W", f.W), "$R", f.R), "$O", f.O);
    std::string dots;
    for (int i = 0; i < 1500; ++i) dots += (i ? "/" : "") + std::string("x/..");
    s = replace_all(s, "{N255}", std::string(255, 'n'));
    s = replace_all(s, "{N256}", std::string(256, 'n'));
    s = replace_all(s, "{DOTS}", dots);
    s = replace_all(s, "{DEEP}", f.deep + "/leaf");
    return s;
}

std::string printable(const std::string& s) {
    std::string out;
    for (unsigned char c : s.substr(0, 120)) {
        if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    return s.size() > 120 ? out + "..." : out;
}

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace

TEST_CASE("the confinement table has at least 60 cases", "[confine]") {
    REQUIRE(std::size(confine_cases) >= 60);
}

TEST_CASE("check answers every case of the table", "[confine]") {
    const Fixture& f = fixture();
    auto conf = cc::fs::Confinement::make(f.W, {f.R});
    REQUIRE(conf);
    for (const auto& c : confine_cases) {
        std::string path = expand(c.path, f);
        INFO("path: " << printable(path));
        cc::fs::Verdict v = conf->check(path);
        CHECK(v.path == path);
        CHECK(v.allowed == c.allowed);
        CHECK(v.reason == c.reason);
        if (v.allowed) {
            CHECK(v.resolved.size() > 0);
            CHECK(cc::fs::is_within(v.resolved, v.root));
            CHECK(v.resolved.find("/out/") == std::string::npos);
        }
    }
}

TEST_CASE("confined open agrees with the table, with openat2 and with the walk", "[confine]") {
    const Fixture& f = fixture();
    auto conf = cc::fs::Confinement::make(f.W, {f.R});
    REQUIRE(conf);
    for (bool use_openat2 : {true, false}) {
        cc::fs::OpenOptions opts;
        opts.use_openat2 = use_openat2;
        for (const auto& c : confine_cases) {
            std::string path = expand(c.path, f);
            INFO("path: " << printable(path) << " openat2: " << use_openat2);
            auto r = conf->open(path, cc::fs::Access::read, opts);
            if (!c.allowed) {
                REQUIRE_FALSE(r);
                CHECK(r.error().code == cc::Errc::denied);
                CHECK(r.error().message == std::string("refused: ") + c.reason);
                continue;
            }
            cc::fs::Verdict v = conf->check(path);
            struct stat st {};
            bool regular = ::stat(v.resolved.c_str(), &st) == 0 && S_ISREG(st.st_mode);
            if (!regular) {
                CHECK_FALSE(r);  // missing write targets, directories
                continue;
            }
            REQUIRE(r);
            CHECK(r->method == (use_openat2 ? cc::fs::OpenMethod::openat2 : cc::fs::OpenMethod::walk));
            auto data = cc::fs::read_all(r->fd.get());
            REQUIRE(data);
            CHECK(*data == slurp(v.resolved));
            CHECK(*data != "SECRET");
        }
    }
}

TEST_CASE("a workdir named through a symlink resolves to its real path", "[confine]") {
    const Fixture& f = fixture();
    std::string alias = f.base + "/alias";
    ::symlink("work", alias.c_str());
    auto conf = cc::fs::Confinement::make(alias, {});
    REQUIRE(conf);
    CHECK(conf->workdir() == f.W);
    auto v = conf->check(alias + "/file.txt");
    CHECK(v.allowed);
    CHECK(v.resolved == f.W + "/file.txt");
    CHECK_FALSE(conf->check("to_root/repo.txt").allowed);  // no --root given this time
    CHECK(conf->check("to_root/repo.txt").reason == std::string("symlink-escape"));
}

TEST_CASE("a missing or non-directory workdir or root is an input error", "[confine]") {
    const Fixture& f = fixture();
    auto a = cc::fs::Confinement::make(f.base + "/nope", {});
    REQUIRE_FALSE(a);
    CHECK(a.error().code == cc::Errc::input);
    auto b = cc::fs::Confinement::make(f.W, {f.W + "/file.txt"});
    REQUIRE_FALSE(b);
    CHECK(b.error().code == cc::Errc::input);
    auto c = cc::fs::Confinement::make("", {});
    REQUIRE_FALSE(c);
}

TEST_CASE("confined write creates, truncates, and refuses what it must", "[confine]") {
    const Fixture& f = fixture();
    std::string W = f.base + "/write";
    sfs::create_directories(W + "/d");
    auto conf = cc::fs::Confinement::make(W, {});
    REQUIRE(conf);
    for (bool use_openat2 : {true, false}) {
        cc::fs::OpenOptions opts;
        opts.use_openat2 = use_openat2;
        INFO("openat2: " << use_openat2);
        auto a = conf->open("d/new.txt", cc::fs::Access::write, opts);
        REQUIRE(a);
        CHECK(a->created);
        REQUIRE(cc::fs::write_all(a->fd.get(), "longer first text"));
        a->fd.reset();
        auto b = conf->open("d/new.txt", cc::fs::Access::write, opts);
        REQUIRE(b);
        CHECK_FALSE(b->created);
        REQUIRE(cc::fs::write_all(b->fd.get(), "short"));
        b->fd.reset();
        CHECK(slurp(W + "/d/new.txt") == "short");
        ::unlink((W + "/d/new.txt").c_str());
        // a missing parent directory is not created
        auto c = conf->open("nodir/x.txt", cc::fs::Access::write, opts);
        REQUIRE_FALSE(c);
        CHECK(c.error().code == cc::Errc::io);
    }
    // a hard link inside may name a file outside: writing through it is refused
    std::string outside = f.base + "/write-outside.txt";
    write(outside, "KEEP");
    REQUIRE(::link(outside.c_str(), (W + "/hard").c_str()) == 0);
    auto h = conf->open("hard", cc::fs::Access::write);
    REQUIRE_FALSE(h);
    CHECK(h.error().message == "refused: hardlinked");
    CHECK(slurp(outside) == "KEEP");
    // a FIFO would block a reader: refused, without hanging
    REQUIRE(::mkfifo((W + "/fifo").c_str(), 0644) == 0);
    auto p = conf->open("fifo", cc::fs::Access::read);
    REQUIRE_FALSE(p);
    CHECK(p.error().message == "refused: not-a-regular-file");
    auto d = conf->open("d", cc::fs::Access::read);
    REQUIRE_FALSE(d);
    // a dangling symlink inside pointing outside must not create the target
    ::symlink((f.base + "/created-outside").c_str(), (W + "/dangle").c_str());
    auto e = conf->open("dangle", cc::fs::Access::write);
    REQUIRE_FALSE(e);
    CHECK_FALSE(sfs::exists(f.base + "/created-outside"));
}

// The race: one thread swaps race/d (a real directory) with race/swap (a
// symlink pointing out) as fast as it can with RENAME_EXCHANGE, while the
// confined opens run. Every open must either fail or give the inside file.
TEST_CASE("a directory swapped for a symlink during confined opens never leads outside", "[confine][race]") {
    const Fixture& f = fixture();
    for (std::string target : {std::string("ABS"), std::string("../../out")}) {
        for (bool use_openat2 : {true, false}) {
            std::string W = f.base + "/race-" + std::to_string(use_openat2) + (target == "ABS" ? "abs" : "rel");
            std::string race = W + "/race";
            sfs::create_directories(race + "/d");
            std::string out = f.O;
            write(race + "/d/f", "inside");
            write(out + "/f", "SECRET");
            link(target == "ABS" ? out : target, race + "/swap");
            auto conf = cc::fs::Confinement::make(W, {});
            REQUIRE(conf);
            cc::fs::OpenOptions opts;
            opts.use_openat2 = use_openat2;

            std::atomic<bool> stop{false};
            std::atomic<long> swaps{0};
            std::thread swapper([&] {
                int dfd = ::open(race.c_str(), O_RDONLY | O_DIRECTORY);
                while (!stop.load(std::memory_order_relaxed)) {
                    if (::renameat2(dfd, "d", dfd, "swap", RENAME_EXCHANGE) == 0) swaps.fetch_add(1);
                }
                ::close(dfd);
            });
            int opened = 0, refused = 0, escapes = 0, naive_escapes = 0;
            for (int i = 0; i < 3000; ++i) {
                auto r = conf->open("race/d/f", cc::fs::Access::read, opts);
                if (r) {
                    auto data = cc::fs::read_all(r->fd.get());
                    REQUIRE(data);
                    if (*data == "SECRET") ++escapes;
                    else CHECK(*data == "inside");
                    ++opened;
                } else {
                    REQUIRE(r.error().code != cc::Errc::internal);
                    ++refused;
                }
                auto w = conf->open("race/d/w" + std::to_string(i % 8), cc::fs::Access::write, opts);
                REQUIRE_FALSE(sfs::exists(out + "/w" + std::to_string(i % 8)));
                // What a check-then-use tool would do: check, then open the name.
                auto v = conf->check("race/d/f");
                if (v.allowed && slurp(v.resolved) == "SECRET") ++naive_escapes;
            }
            stop = true;
            swapper.join();
            for (int i = 0; i < 8; ++i) REQUIRE_FALSE(sfs::exists(out + "/w" + std::to_string(i)));
            REQUIRE(slurp(out + "/f") == "SECRET");
            // The race must really have run: without swaps nothing was tested.
            CHECK(swaps.load() >= 100);
            CHECK(escapes == 0);
            WARN("target " << target << " openat2 " << use_openat2 << ": " << swaps.load() << " swaps, " << opened
                           << " opened inside, " << refused << " refused, " << escapes << " escapes; check-then-open escaped "
                           << naive_escapes << " times");
        }
    }
}

TEST_CASE("cc-confine prints one JSON line per path, in order, and exits 0 or 1", "[confine][cli]") {
    const Fixture& f = fixture();
    auto all = run({bin("cc-confine"), "--workdir", f.W, "--root", f.R, "--", "file.txt", "$W", f.R + "/repo.txt"});
    CHECK(all.status == 0);
    auto some = run({bin("cc-confine"), "--workdir", f.W, "--", "file.txt", "link_out_file", "../out/secret.txt", "-dash"});
    CHECK(some.status == 1);
    std::istringstream lines(some.out);
    std::string line;
    std::vector<nlohmann::json> got;
    while (std::getline(lines, line)) got.push_back(nlohmann::json::parse(line));
    REQUIRE(got.size() == 4);
    CHECK(got[0]["path"] == "file.txt");
    CHECK(got[0]["allowed"] == true);
    CHECK(got[0]["resolved"] == f.W + "/file.txt");
    CHECK(got[1]["path"] == "link_out_file");
    CHECK(got[1]["allowed"] == false);
    CHECK(got[1]["reason"] == "symlink-escape");
    CHECK(got[1]["resolved"] == f.O + "/secret.txt");
    CHECK(got[2]["reason"] == "outside");
    CHECK(got[3]["path"] == "-dash");
    CHECK(got[3]["allowed"] == true);
    // every line matches the published schema
    auto schema = run({"python3", cc::test::source_dir() + "/tests/fs/check_schema.py",
                       schema_dir() + "/confine-verdict.schema.json"},
                      all.out + some.out);
    INFO(schema.err);
    CHECK(schema.status == 0);
    // not UTF-8: shown with U+FFFD, given exactly in hex
    auto odd = run({bin("cc-confine"), "--workdir", f.W, "bad\xff"});
    CHECK(odd.status == 0);
    auto j = nlohmann::json::parse(odd.out);
    CHECK(j["pathHex"] == "626164ff");
}

TEST_CASE("cc-confine input errors exit 2 and print one line", "[confine][cli]") {
    const Fixture& f = fixture();
    struct {
        std::vector<std::string> args;
        const char* says;
    } cases[] = {
        {{"--workdir", f.base + "/nope", "x"}, "workdir cannot be resolved"},
        {{"--workdir", f.W, "--root", f.base + "/nope", "x"}, "root cannot be resolved"},
        {{"--workdir", f.W + "/file.txt", "x"}, "workdir cannot be opened"},
        {{"--workdir", f.W}, "no path given"},
        {{"--workdir", f.W, "--open-read", "file.txt", "other"}, "not taken with"},
        {{"x"}, "workdir"},
        {{"--workdir", f.W, "--bogus", "x"}, "bogus"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> argv{bin("cc-confine")};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        auto r = run(argv);
        INFO(r.err << " expected: " << c.says);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find(c.says) != std::string::npos);
    }
}

TEST_CASE("cc-confine --open-read and --open-write", "[confine][cli]") {
    const Fixture& f = fixture();
    for (std::string method : {"", "--no-openat2"}) {
        std::vector<std::string> base{bin("cc-confine"), "--workdir", f.W, "--root", f.R};
        if (!method.empty()) base.push_back(method);
        auto with = [&](std::vector<std::string> extra) {
            auto a = base;
            a.insert(a.end(), extra.begin(), extra.end());
            return a;
        };
        auto rd = run(with({"--open-read", "link_sub/inner.txt"}));
        CHECK(rd.status == 0);
        CHECK(rd.out == "inner");
        auto rr = run(with({"--open-read", "link_out_file"}));
        CHECK(rr.status == 1);
        CHECK(rr.out.empty());
        CHECK(rr.err.find("refused: symlink-escape") != std::string::npos);
        auto wr = run(with({"--open-write", "to_root/written.txt"}), "from stdin\n");
        CHECK(wr.status == 0);
        auto j = nlohmann::json::parse(wr.out);
        CHECK(j["bytes"] == 11);
        CHECK(j["method"] == (method.empty() ? "openat2" : "walk"));
        CHECK(j["reason"] == "inside-root");
        CHECK(slurp(f.R + "/written.txt") == "from stdin\n");
        ::unlink((f.R + "/written.txt").c_str());
        auto wo = run(with({"--open-write", "link_out_rel/planted"}), "x");
        CHECK(wo.status == 1);
        CHECK(nlohmann::json::parse(wo.out)["allowed"] == false);
        CHECK_FALSE(sfs::exists(f.O + "/planted"));
    }
}
