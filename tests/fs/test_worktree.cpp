// cc-worktree against real filesystems: a loop-mounted XFS image with
// reflink=1 (root), a tmpfs or the ext4 scratch dir for the refusals, and the
// real git for the git-worktree backend. Every image is unmounted and its loop
// device detached by a destructor, so a failed REQUIRE cleans up too.
#include <signal.h>
#include <sys/wait.h>
#include <sys/file.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cc/fs/reflink.hpp"
#include "harness.hpp"
#include "cc/core/io.hpp"

namespace {

namespace sfs = std::filesystem;

// share/cc/schema as the tests see it ($CC_DATA_DIR is staged for as_user runs).
std::string schema_dir() { return cc::io::data_dir() + "/schema"; }
using cc::test::bin;
using cc::test::run;
using nlohmann::json;

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// A mounted filesystem the test owns: XFS with reflink on a loop device, or a tmpfs.
struct Mounted {
    std::string img, mnt, dev, why;
    bool mounted = false;

    static Mounted xfs(const std::string& name) {
        Mounted m;
        if (!cc::test::is_root()) {
            m.why = "needs root to attach a loop device and mount an XFS image";
            return m;
        }
        if (!cc::test::have_program("mkfs.xfs")) {
            m.why = "mkfs.xfs is not installed (xfsprogs)";
            return m;
        }
        m.img = cc::test::scratch_dir() + "/" + name + ".img";
        m.mnt = cc::test::scratch_dir() + "/" + name;
        sfs::create_directories(m.mnt);
        { std::ofstream(m.img).close(); }
        if (::truncate(m.img.c_str(), 512L << 20) != 0) {
            m.why = "cannot size the image file";
            return m;
        }
        auto mk = run({"mkfs.xfs", "-q", "-m", "reflink=1", m.img});
        if (mk.status != 0) {
            m.why = "mkfs.xfs -m reflink=1 failed: " + trim(mk.err);
            return m;
        }
        auto lo = run({"losetup", "-f", "--show", m.img});
        if (lo.status != 0) {
            m.why = "no loop device available (losetup -f): " + trim(lo.err);
            return m;
        }
        m.dev = trim(lo.out);
        auto mt = run({"mount", "-t", "xfs", m.dev, m.mnt});
        if (mt.status != 0) {
            m.why = "cannot mount the XFS image: " + trim(mt.err);
            return m;
        }
        m.mounted = true;
        return m;
    }

    static Mounted tmpfs(const std::string& dir) {
        Mounted m;
        m.mnt = dir;
        sfs::create_directories(dir);
        auto mt = run({"mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir});
        if (mt.status != 0) {
            m.why = "cannot mount a tmpfs: " + trim(mt.err);
            return m;
        }
        m.mounted = true;
        return m;
    }

    Mounted() = default;
    Mounted(Mounted&& o) noexcept
        : img(std::move(o.img)), mnt(std::move(o.mnt)), dev(std::move(o.dev)), why(std::move(o.why)),
          mounted(std::exchange(o.mounted, false)) {
        o.dev.clear();
    }
    Mounted& operator=(Mounted&&) = delete;

    ~Mounted() {
        if (mounted && run({"umount", mnt}).status != 0) run({"umount", "-l", mnt});
        if (!dev.empty()) run({"losetup", "-d", dev});
        if (!img.empty()) ::unlink(img.c_str());
    }
};

void write(const std::string& path, const std::string& data) {
    std::ofstream f(path, std::ios::binary);
    f << data;
    REQUIRE(f.good());
}

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void set_mtime(const std::string& path, long seconds) {
    struct timespec t[2] = {{seconds, 0}, {seconds, 0}};
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), t, AT_SYMLINK_NOFOLLOW) == 0);
}

void git(const std::string& repo, std::vector<std::string> args) {
    std::vector<std::string> argv{"git", "-c", "user.name=cc test", "-c", "user.email=cc@test.invalid",
                                  "-c", "init.defaultBranch=main", "-C", repo};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(argv);
    INFO(r.err);
    REQUIRE(r.status == 0);
}

// A registered repo with the shapes a clone must keep.
void make_repo(const std::string& repo, int extra_files = 0, std::size_t big_bytes = 0) {
    sfs::create_directories(repo + "/src/nested");
    git(repo, {"init", "-q"});
    write(repo + "/README.md", "# app\n");
    write(repo + "/src/main.c", "int main(void) { return 0; }\n");
    write(repo + "/src/nested/data.txt", "data\n");
    write(repo + "/run.sh", "#!/bin/sh\necho run\n");
    ::chmod((repo + "/run.sh").c_str(), 0755);
    write(repo + "/private.key", "k");
    ::chmod((repo + "/private.key").c_str(), 0600);
    write(repo + "/empty", "");
    write(repo + "/ünïcødé.txt", "u");
    REQUIRE(::symlink("src/main.c", (repo + "/link_rel").c_str()) == 0);
    REQUIRE(::symlink("does-not-exist", (repo + "/link_dangling").c_str()) == 0);
    REQUIRE(::symlink((repo + "/README.md").c_str(), (repo + "/link_abs").c_str()) == 0);
    REQUIRE(::link((repo + "/src/main.c").c_str(), (repo + "/hardlink.c").c_str()) == 0);
    REQUIRE(::mkfifo((repo + "/fifo").c_str(), 0640) == 0);
    sfs::create_directories(repo + "/many");
    for (int i = 0; i < extra_files; ++i) write(repo + "/many/f" + std::to_string(i), "file " + std::to_string(i) + "\n");
    if (big_bytes) {
        std::string block(1 << 20, '\0');
        for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>((i * 2654435761u) >> 13);
        std::ofstream f(repo + "/big.bin", std::ios::binary);
        for (std::size_t n = 0; n < big_bytes; n += block.size()) f << block;
    }
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", "initial"});
    // read-only directory, old times: set after git so git leaves them be
    sfs::create_directories(repo + "/ro");
    write(repo + "/ro/frozen.txt", "frozen");
    ::chmod((repo + "/ro/frozen.txt").c_str(), 0444);
    set_mtime(repo + "/ro/frozen.txt", 1000000000);
    set_mtime(repo + "/README.md", 1100000000);
    set_mtime(repo + "/link_rel", 1200000000);
    set_mtime(repo + "/src/nested", 1300000000);
    set_mtime(repo + "/ro", 1400000000);
    ::chmod((repo + "/ro").c_str(), 0555);
}

// path -> "type mode mtime size content-or-target[ atime]" for every entry.
std::map<std::string, std::string> snapshot(const std::string& root, bool with_atime) {
    std::map<std::string, std::string> out;
    for (auto it = sfs::recursive_directory_iterator(root); it != sfs::recursive_directory_iterator(); ++it) {
        std::string p = it->path().string();
        struct stat st {};
        REQUIRE(::lstat(p.c_str(), &st) == 0);
        std::ostringstream d;
        d << (st.st_mode & S_IFMT) << ' ' << std::oct << (st.st_mode & 07777) << std::dec << ' ' << st.st_mtim.tv_sec
          << '.' << st.st_mtim.tv_nsec << ' ';
        if (S_ISREG(st.st_mode)) {
            d << st.st_size << ' ';
            int fd = ::open(p.c_str(), O_RDONLY | O_NOATIME);
            REQUIRE(fd >= 0);
            std::string data(static_cast<std::size_t>(st.st_size), '\0');
            REQUIRE(::read(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
            ::close(fd);
            d << std::hash<std::string>{}(data);
            if (with_atime) d << ' ' << st.st_atim.tv_sec << '.' << st.st_atim.tv_nsec;
        } else if (S_ISLNK(st.st_mode)) {
            d << sfs::read_symlink(p).string();
        }
        out[p.substr(root.size())] = d.str();
    }
    return out;
}

bool shares_extents(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return false;
    alignas(struct fiemap) char buf[sizeof(struct fiemap) + 16 * sizeof(struct fiemap_extent)] = {};
    auto* fm = reinterpret_cast<struct fiemap*>(buf);
    fm->fm_length = ~0ULL;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = 16;
    bool shared = ::ioctl(fd, FS_IOC_FIEMAP, fm) == 0 && fm->fm_mapped_extents > 0;
    for (unsigned i = 0; shared && i < fm->fm_mapped_extents; ++i)
        shared = (fm->fm_extents[i].fe_flags & FIEMAP_EXTENT_SHARED) != 0;
    ::close(fd);
    return shared;
}

std::uint64_t free_bytes(const std::string& path) {
    struct statvfs s {};
    REQUIRE(::statvfs(path.c_str(), &s) == 0);
    return static_cast<std::uint64_t>(s.f_bavail) * s.f_frsize;
}

cc::test::RunResult create(const std::string& data, const std::string& id, std::vector<std::string> extra) {
    std::vector<std::string> argv{bin("cc-worktree"), "create", "--data-dir", data, "--conversation", id};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv);
}

// Exit status of tests/fs/check_schema.py over `json_lines` (0: all valid).
int schema_check(const std::string& schema, const std::string& json_lines) {
    auto r = run({"python3", cc::test::source_dir() + "/tests/fs/check_schema.py",
                  schema_dir() + "/" + schema},
                 json_lines);
    if (r.status != 0) WARN(r.err);
    return r.status;
}

bool empty_dir(const std::string& p) { return sfs::is_directory(p) && sfs::is_empty(p); }

}  // namespace

TEST_CASE("create clones by reflink: whole tree kept, blocks shared, source untouched", "[worktree][xfs]") {
    auto x = Mounted::xfs("xfs-clone");
    if (!x.mounted) CC_SKIP(x.why);
    std::string repo = x.mnt + "/app", data = x.mnt + "/data";
    make_repo(repo, 50, 16 << 20);
    sfs::create_directories(data);
    ::sync();
    auto before = snapshot(repo, true);
    std::uint64_t free_before = free_bytes(x.mnt);

    auto r = create(data, "c1", {"--repo", repo, "--agent", "a1", "--agent", "a2"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    auto j = json::parse(r.out);
    CHECK(schema_check("worktree-conversation.schema.json", r.out) == 0);
    std::string conv = data + "/conversations/c1", clone = conv + "/repos/app";
    CHECK(j["backend"] == "reflink");
    CHECK(j["conversation"] == "c1");
    CHECK(j["path"] == conv);
    CHECK(j["repos"][0]["path"] == clone);
    CHECK(j["repos"][0]["source"] == repo);
    CHECK(j["repos"][0]["bytes"].get<std::uint64_t>() >= (16u << 20));
    CHECK(j["repos"][0]["hardlinksSplit"] == 2);
    CHECK(j["repos"][0]["absoluteSymlinksIntoSource"] == 1);
    std::vector<std::string> created = j["created"];
    for (const auto& p : {conv, conv + "/repos", clone, conv + "/agents", conv + "/agents/a1", conv + "/agents/a2",
                          conv + "/conversation.json"}) {
        CHECK(std::find(created.begin(), created.end(), p) != created.end());
        CHECK(sfs::exists(p));
    }
    REQUIRE(j["agents"].size() == 2);
    CHECK(j["agents"][1]["workdir"] == conv + "/agents/a2");
    CHECK(j["agents"][1]["roots"] == json::array({conv + "/repos"}));
    struct stat ast {};
    REQUIRE(::stat((conv + "/agents/a1").c_str(), &ast) == 0);
    CHECK((ast.st_mode & 0777) == 0700);

    // the source is exactly as it was, access times included
    CHECK(snapshot(repo, true) == before);
    // the clone has every entry with the same type, mode, mtime, content, target
    auto cloned = snapshot(clone, false);
    auto source = snapshot(repo, false);
    CHECK(cloned == source);
    CHECK(sfs::read_symlink(clone + "/link_abs") == repo + "/README.md");  // verbatim
    // hard links split: two inodes sharing blocks, not one inode
    struct stat h1 {}, h2 {};
    REQUIRE(::stat((clone + "/hardlink.c").c_str(), &h1) == 0);
    REQUIRE(::stat((clone + "/src/main.c").c_str(), &h2) == 0);
    CHECK(h1.st_ino != h2.st_ino);
    CHECK(h1.st_nlink == 1);
    // copy-on-write, not a byte copy: extents shared, and the disk barely moved
    CHECK(shares_extents(clone + "/big.bin"));
    CHECK(shares_extents(repo + "/big.bin"));
    ::sync();
    std::uint64_t free_after = free_bytes(x.mnt);
    std::uint64_t used = free_before > free_after ? free_before - free_after : 0;
    INFO("disk used by the clone: " << used << " bytes for " << (16 << 20) << " bytes of big.bin");
    CHECK(used < (4u << 20));

    // an edit in the clone is invisible in the source
    write(clone + "/README.md", "changed in c1\n");
    CHECK(slurp(repo + "/README.md") == "# app\n");
    auto st = run({"git", "-C", clone, "status", "--porcelain"});
    CHECK(st.status == 0);
    CHECK(st.out.find("README.md") != std::string::npos);
    CHECK(run({"git", "-C", repo, "status", "--porcelain"}).out.find("README.md") == std::string::npos);
}

TEST_CASE("two concurrent creates on one repo both succeed and stay isolated", "[worktree][xfs]") {
    auto x = Mounted::xfs("xfs-concurrent");
    if (!x.mounted) CC_SKIP(x.why);
    std::string repo = x.mnt + "/app", data = x.mnt + "/data";
    make_repo(repo, 2000);
    sfs::create_directories(data);
    // two real processes started together
    auto a = std::async(std::launch::async, [&] { return create(data, "one", {"--repo", repo}); });
    auto b = std::async(std::launch::async, [&] { return create(data, "two", {"--repo", repo}); });
    auto ra = a.get(), rb = b.get();
    INFO(ra.err << rb.err);
    REQUIRE(ra.status == 0);
    REQUIRE(rb.status == 0);
    std::string one = data + "/conversations/one/repos/app", two = data + "/conversations/two/repos/app";
    CHECK(snapshot(one, false) == snapshot(repo, false));
    CHECK(snapshot(two, false) == snapshot(repo, false));
    write(one + "/many/f7", "edited in one\n");
    write(two + "/added-in-two", "x");
    CHECK(slurp(two + "/many/f7") == "file 7\n");
    CHECK(slurp(repo + "/many/f7") == "file 7\n");
    CHECK_FALSE(sfs::exists(one + "/added-in-two"));
    CHECK_FALSE(sfs::exists(repo + "/added-in-two"));
    // the same id twice: the second fails and the first is left alone
    auto again = create(data, "one", {"--repo", repo});
    CHECK(again.status == 1);
    CHECK(again.err.find("already exists") != std::string::npos);
    CHECK(slurp(one + "/many/f7") == "edited in one\n");
}

TEST_CASE("a filesystem without reflink refuses the allocation and leaves nothing", "[worktree]") {
    std::string dir = cc::test::scratch_dir() + "/noreflink";
    std::optional<Mounted> t;
    if (cc::test::is_root()) {
        t.emplace(Mounted::tmpfs(dir));
        if (!t->mounted) CC_SKIP(t->why);
    } else {
        sfs::create_directories(dir);
        if (cc::fs::probe_reflink(dir)) CC_SKIP("the scratch dir supports reflink and there is no root to mount a tmpfs");
    }
    std::string repo = dir + "/app", data = dir + "/data";
    make_repo(repo);
    sfs::create_directories(data);
    auto r = create(data, "c1", {"--repo", repo, "--agent", "a"});
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("does not support reflink") != std::string::npos);
    CHECK(r.err.find("no fallback") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(empty_dir(data));
}

TEST_CASE("a data dir on another device than the repo refuses and leaves nothing", "[worktree][xfs]") {
    auto x = Mounted::xfs("xfs-otherdev");
    if (!x.mounted) CC_SKIP(x.why);
    std::string repo = cc::test::scratch_dir() + "/elsewhere/app", data = x.mnt + "/data";
    make_repo(repo);
    sfs::create_directories(data);
    auto r = create(data, "c1", {"--repo", repo});
    CHECK(r.status == 1);
    CHECK(r.err.find("another device") != std::string::npos);
    CHECK(empty_dir(data));
}

TEST_CASE("a failure half-way through the clone removes the partial conversation", "[worktree][xfs]") {
    auto x = Mounted::xfs("xfs-partial");
    if (!x.mounted) CC_SKIP(x.why);
    std::string good = x.mnt + "/good", bad = x.mnt + "/bad", data = x.mnt + "/data";
    make_repo(good, 200);
    make_repo(bad, 200);
    sfs::create_directories(data);
    // a mount point inside the second repo: the clone cannot cross it
    auto inner = Mounted::tmpfs(bad + "/zz-mounted");
    if (!inner.mounted) CC_SKIP(inner.why);
    write(bad + "/zz-mounted/file", "x");
    auto r = create(data, "c1", {"--repo", good, "--repo", bad, "--agent", "a"});
    CHECK(r.status == 1);
    CHECK(r.err.find("mount point") != std::string::npos);
    CHECK_FALSE(sfs::exists(data + "/conversations/c1"));
    CHECK(empty_dir(data + "/conversations"));
}

TEST_CASE("destroy removes read-only trees, and only under the data dir", "[worktree][xfs]") {
    auto x = Mounted::xfs("xfs-destroy");
    if (!x.mounted) CC_SKIP(x.why);
    std::string repo = x.mnt + "/app", data = x.mnt + "/data", outside = x.mnt + "/outside";
    make_repo(repo);
    sfs::create_directories(data);
    sfs::create_directories(outside);
    write(outside + "/keep", "keep");
    REQUIRE(create(data, "c1", {"--repo", repo, "--agent", "a"}).status == 0);
    std::string ro = data + "/conversations/c1/repos/app/ro";
    struct stat st {};
    REQUIRE(::stat(ro.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0555);
    auto d = run({bin("cc-worktree"), "destroy", "--data-dir", data, "--conversation", "c1"});
    INFO(d.err);
    CHECK(d.status == 0);
    CHECK(json::parse(d.out)["removed"] == data + "/conversations/c1");
    CHECK(schema_check("worktree-destroy.schema.json", d.out) == 0);
    CHECK_FALSE(sfs::exists(data + "/conversations/c1"));
    CHECK(sfs::exists(repo + "/ro/frozen.txt"));

    // a symlink planted as a conversation is refused, its target kept
    REQUIRE(::symlink(outside.c_str(), (data + "/conversations/evil").c_str()) == 0);
    auto e = run({bin("cc-worktree"), "destroy", "--data-dir", data, "--conversation", "evil"});
    CHECK(e.status == 1);
    CHECK(slurp(outside + "/keep") == "keep");
    for (std::string id : {"../outside", "..", "/etc", "c1/../../outside", ".hidden", ""}) {
        auto b = run({bin("cc-worktree"), "destroy", "--data-dir", data, "--conversation", id});
        INFO(id);
        CHECK(b.status == 2);
    }
    CHECK(slurp(outside + "/keep") == "keep");
    CHECK(run({bin("cc-worktree"), "destroy", "--data-dir", data, "--conversation", "nope"}).status == 1);
}

TEST_CASE("the git-worktree backend is explicit, reported, and pruned on destroy", "[worktree]") {
    std::string base = cc::test::scratch_dir() + "/gitwt";
    std::string repo = base + "/app", data = base + "/data";
    make_repo(repo);
    sfs::create_directories(data);
    auto r = create(data, "g1", {"--repo", repo, "--backend", "git-worktree", "--agent", "a"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    auto j = json::parse(r.out);
    CHECK(j["backend"] == "git-worktree");
    CHECK(r.err.find("git-worktree") != std::string::npos);
    std::string wt = data + "/conversations/g1/repos/app";
    CHECK(slurp(wt + "/README.md") == "# app\n");
    CHECK(run({"git", "-C", repo, "worktree", "list"}).out.find(wt) != std::string::npos);
    write(wt + "/README.md", "edited\n");
    CHECK(slurp(repo + "/README.md") == "# app\n");
    auto s = run({bin("cc-worktree"), "status", "--data-dir", data, "--conversation", "g1"});
    CHECK(s.status == 0);
    CHECK(json::parse(s.out)["backend"] == "git-worktree");
    CHECK(schema_check("worktree-conversation.schema.json", r.out + s.out) == 0);
    CHECK(run({bin("cc-worktree"), "destroy", "--data-dir", data, "--conversation", "g1"}).status == 0);
    CHECK(run({"git", "-C", repo, "worktree", "list"}).out.find(wt) == std::string::npos);
    CHECK(create(data, "g2", {"--repo", repo, "--backend", "copy"}).status == 2);
}

TEST_CASE("list and status describe conversations, incomplete ones included", "[worktree]") {
    std::string base = cc::test::scratch_dir() + "/listing";
    std::string repo = base + "/app", data = base + "/data";
    make_repo(repo);
    sfs::create_directories(data);
    auto empty = run({bin("cc-worktree"), "list", "--data-dir", data});
    CHECK(empty.status == 0);
    CHECK(json::parse(empty.out)["conversations"].empty());
    REQUIRE(create(data, "a1", {"--repo", repo, "--backend", "git-worktree"}).status == 0);
    sfs::create_directories(data + "/conversations/half");  // as a crash mid-create leaves it
    auto l = run({bin("cc-worktree"), "list", "--data-dir", data});
    REQUIRE(l.status == 0);
    CHECK(schema_check("worktree-list.schema.json", l.out) == 0);
    auto convs = json::parse(l.out)["conversations"];
    REQUIRE(convs.size() == 2);
    CHECK(convs[0]["conversation"] == "a1");
    CHECK(convs[0]["complete"] == true);
    CHECK(convs[0]["repos"][0]["name"] == "app");
    CHECK(convs[1]["conversation"] == "half");
    CHECK(convs[1]["complete"] == false);
    auto s = run({bin("cc-worktree"), "status", "--data-dir", data, "--conversation", "nope"});
    CHECK(s.status == 1);
    CHECK(run({bin("cc-worktree"), "destroy", "--data-dir", data, "--conversation", "half"}).status == 0);
    CHECK_FALSE(sfs::exists(data + "/conversations/half"));
}

// A create killed part-way leaves a conversation without metadata. Before,
// every later create of that id failed until someone destroyed it; now the
// next create removes it when no create holds its lock, and says so.
TEST_CASE("a create killed part-way does not block the next create of that id", "[worktree]") {
    std::string base = cc::test::scratch_dir() + "/killed-create";
    std::string repo = base + "/app", data = base + "/data";
    make_repo(repo);
    sfs::create_directories(data);
    // What a killed create leaves: its directory, part of the tree, a lock nobody holds.
    std::string half = data + "/conversations/k1";
    sfs::create_directories(half + "/repos/app/partial");
    write(half + "/.create.lock", "");
    // A create that is running holds the lock: the same id is refused, nothing removed.
    pid_t holder = cc::test::hold_flock(half + "/.create.lock");
    REQUIRE(holder > 0);
    auto busy = create(data, "k1", {"--repo", repo, "--backend", "git-worktree", "--agent", "a"});
    CHECK(busy.status == 1);
    const std::string note = "cc-worktree: backend git-worktree (chosen): checks out HEAD only, no copy-on-write\n";
    CHECK(busy.err == note + "cc-worktree: '" + half + "': conversation is being created by another process\n");
    CHECK(sfs::exists(half + "/repos/app/partial"));
    // That create is killed: the next one takes the id.
    REQUIRE(::kill(holder, SIGKILL) == 0);
    REQUIRE(::waitpid(holder, nullptr, 0) == holder);
    auto r = create(data, "k1", {"--repo", repo, "--backend", "git-worktree", "--agent", "a"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    auto j = json::parse(r.out);
    CHECK(j["replacedIncomplete"] == true);
    CHECK(j["complete"] == true);
    CHECK_FALSE(sfs::exists(half + "/repos/app/partial"));
    CHECK_FALSE(sfs::exists(half + "/.create.lock"));  // complete: the lock goes with the metadata written
    CHECK(slurp(half + "/repos/app/README.md") == "# app\n");
    CHECK(schema_check("worktree-conversation.schema.json", r.out) == 0);
    // A complete conversation is never replaced.
    auto again = create(data, "k1", {"--repo", repo, "--backend", "git-worktree"});
    CHECK(again.status == 1);
    CHECK(again.err == note + "cc-worktree: '" + half + "': conversation already exists\n");
}

TEST_CASE("cc-worktree input errors exit 2 and create nothing", "[worktree][cli]") {
    std::string base = cc::test::scratch_dir() + "/inputs";
    std::string repo = base + "/app", data = base + "/data";
    make_repo(repo);
    sfs::create_directories(base + "/other/app");
    sfs::create_directories(data);
    struct {
        std::vector<std::string> args;
        const char* says;
    } cases[] = {
        {{"create", "--data-dir", data, "--conversation", "../x", "--repo", repo}, "refusing a path outside"},
        {{"create", "--data-dir", data, "--conversation", "a/b", "--repo", repo}, "refusing a path outside"},
        {{"create", "--data-dir", data, "--conversation", "c", "--repo", base + "/missing"}, "cannot be resolved"},
        {{"create", "--data-dir", data, "--conversation", "c", "--repo", repo, "--repo", base + "/other/app"}, "another repo has the name"},
        {{"create", "--data-dir", data, "--conversation", "c", "--repo", repo, "--agent", "a", "--agent", "a"}, "named twice"},
        {{"create", "--data-dir", data, "--conversation", "c", "--repo", repo, "--agent", "../a"}, "agent"},
        {{"create", "--data-dir", base + "/nodata", "--conversation", "c", "--repo", repo}, "data dir does not exist: create it"},
        {{"create", "--data-dir", data, "--conversation", "c"}, "--repo"},
        {{"create", "--data-dir", repo, "--conversation", "c", "--repo", repo}, "must not contain each other"},
        {{"create", "--data-dir", data, "--conversation", "c", "--repo", base + "/other/app", "--backend", "git-worktree"}, "not a git checkout"},
        {{"status", "--data-dir", data, "--conversation", "../../etc"}, "refusing a path outside"},
        {{"frobnicate"}, "subcommand"},
        {{}, "subcommand"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> argv{bin("cc-worktree")};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        auto r = run(argv);
        INFO(r.err << " expected: " << c.says);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find(c.says) != std::string::npos);
    }
    CHECK(empty_dir(data));
}
