// The real HostPaths' resolve() remembers each resolved prefix instead of
// calling realpath(3) for every path; it must answer exactly as realpath
// does, since every deny rule's second spelling comes from it. Checked
// against realpath itself over a tree of relative, absolute, chained,
// dangling and looping links, `..` through links, files used as directories
// and trailing slashes, asked in an order that fills the cache first.
#include "harness.hpp"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cc/sandbox/paths.hpp"

namespace fs = std::filesystem;

namespace {

std::optional<std::string> libc_realpath(const std::string& p) {
    char buf[PATH_MAX];
    if (::realpath(p.c_str(), buf)) return std::string(buf);
    return std::nullopt;
}

}  // namespace

TEST_CASE("host paths: resolve() answers as realpath(3) does", "[paths]") {
    char tmpl[] = "/tmp/cc-test-resolve.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    const std::string d = tmpl;
    fs::create_directories(d + "/real/sub/deep");
    { std::ofstream(d + "/real/sub/file") << "x"; }
    fs::create_directory_symlink("real", d + "/rel");                 // relative
    fs::create_directory_symlink(d + "/real/sub", d + "/abs");        // absolute
    fs::create_symlink("rel", d + "/chain");                          // a link to a link
    fs::create_symlink("../real/sub/deep/..", d + "/real/up");        // `..` inside a target
    fs::create_symlink("nowhere", d + "/dangling");
    fs::create_symlink("loop2", d + "/loop1");
    fs::create_symlink("loop1", d + "/loop2");
    fs::create_symlink("sub/file", d + "/real/tofile");
    fs::create_symlink(".", d + "/dot");

    const std::vector<std::string> rels = {
        "", "/", "/real", "/real/", "/real/sub/file", "/real/sub/file/", "/real/sub/file/x", "/rel", "/rel/sub",
        "/rel/sub/deep", "/rel/sub/..", "/rel/sub/../sub/file", "/abs", "/abs/..", "/abs/../..", "/abs/deep/../file",
        "/chain/sub", "/chain/sub/", "/real/up", "/real/up/file", "/real/up/..", "/dangling", "/dangling/x",
        "/loop1", "/loop1/x", "/real/tofile", "/real/tofile/", "/dot/dot/rel//sub", "/./rel/./sub", "/missing",
        "/missing/..", "/rel/missing", "/real/sub/deep/../../sub/deep"};
    // Twice, so the second pass answers from the cache of the first.
    auto host = cc::sandbox::real_paths();
    int compared = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (const auto& r : rels) {
            std::string p = d + r;
            INFO(p << " (pass " << pass << ")");
            CHECK(host->resolve(p) == libc_realpath(p));
            ++compared;
        }
    // A fresh object asked deepest first fills the cache in another order.
    auto other = cc::sandbox::real_paths();
    for (auto it = rels.rbegin(); it != rels.rend(); ++it) {
        std::string p = d + *it;
        INFO(p << " (reverse)");
        CHECK(other->resolve(p) == libc_realpath(p));
    }
    // Some of those resolve and some do not: the comparison saw both.
    CHECK(libc_realpath(d + "/chain/sub").has_value());
    CHECK_FALSE(libc_realpath(d + "/loop1").has_value());
    CHECK(compared == 2 * static_cast<int>(rels.size()));
    // A relative path is resolved against the working directory, as realpath does.
    CHECK(host->resolve("real") == libc_realpath("real"));
    fs::remove_all(d);
}

// The session id root's sandboxes run as: in its block, different from call
// to call, and held by no running process and no account of this host.
TEST_CASE("host paths: unused_id is in its block and nobody's, not even this process's", "[plan][identity]") {
    auto host = cc::sandbox::real_paths();
    auto a = host->unused_id(), b = host->unused_id();
    REQUIRE(a);
    REQUIRE(b);
    CHECK(*a >= cc::sandbox::k_session_id_first);
    CHECK(*a <= cc::sandbox::k_session_id_last);
    CHECK(*a != *b);  // 1 in 268 million to fail by chance
    std::ifstream passwd("/etc/passwd");
    for (std::string line; std::getline(passwd, line);) CHECK(line.find(":" + std::to_string(*a) + ":") == std::string::npos);
    // Every id of the account files counts, a group without members too
    // ("name:x:GID:" splits into three fields).
    const std::string dir = cc::test::scratch_dir() + "/accounts";
    fs::create_directories(dir);
    std::ofstream(dir + "/group") << "lonely:x:1879048200:\nbusy:x:5:a,b\n#comment\n";
    std::ofstream(dir + "/passwd") << "u:x:10:20:gecos:/home/u:/bin/sh\nshort:x\n";
    CHECK(cc::sandbox::ids_in_account_file(dir + "/group", false) == std::vector<unsigned>{1879048200u, 5u});
    CHECK(cc::sandbox::ids_in_account_file(dir + "/passwd", true) == std::vector<unsigned>{10u, 20u});
    // A process that takes an id out of the block makes it taken: the picker
    // reads every process's ids, so it never hands out one in use.
    for (const auto& e : fs::directory_iterator("/proc")) {
        std::ifstream st(e.path() / "status");
        for (std::string line; std::getline(st, line);)
            if (line.rfind("Uid:", 0) == 0 || line.rfind("Gid:", 0) == 0)
                CHECK(line.find("\t" + std::to_string(*a)) == std::string::npos);
    }
}
