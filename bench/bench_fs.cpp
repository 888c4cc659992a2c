// What confinement costs an in-process file tool per call: check() alone, a
// confined open by openat2 and by the O_NOFOLLOW walk, against a plain
// open(2) of the same file (no confinement) as the floor.
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cc/fs/confine.hpp"

namespace {

struct Tree {
    std::string root, file;
    std::string rel = "a/b/c/d/e/f/file.txt";
    Tree() {
        char tmpl[] = "/tmp/cc-bench-fs-XXXXXX";
        root = ::mkdtemp(tmpl);
        std::filesystem::create_directories(root + "/a/b/c/d/e/f");
        file = root + "/" + rel;
        std::ofstream(file) << "content";
        std::filesystem::create_symlink("a/b/c", root + "/link");
    }
    ~Tree() { std::filesystem::remove_all(root); }
};

Tree& tree() {
    static Tree t;
    return t;
}

void BM_plain_open(benchmark::State& state) {
    for (auto _ : state) {
        int fd = ::open(tree().file.c_str(), O_RDONLY | O_CLOEXEC);
        benchmark::DoNotOptimize(fd);
        ::close(fd);
    }
}
BENCHMARK(BM_plain_open);

void BM_check(benchmark::State& state) {
    auto conf = cc::fs::Confinement::make(tree().root, {});
    for (auto _ : state) benchmark::DoNotOptimize(conf->check(tree().rel));
}
BENCHMARK(BM_check);

void BM_check_through_symlink(benchmark::State& state) {
    auto conf = cc::fs::Confinement::make(tree().root, {});
    for (auto _ : state) benchmark::DoNotOptimize(conf->check("link/d/e/f/file.txt"));
}
BENCHMARK(BM_check_through_symlink);

void BM_open(benchmark::State& state) {
    auto conf = cc::fs::Confinement::make(tree().root, {});
    cc::fs::OpenOptions opts;
    opts.use_openat2 = state.range(0) != 0;
    for (auto _ : state) {
        auto r = conf->open(tree().rel, cc::fs::Access::read, opts);
        if (!r) state.SkipWithError("open failed");
    }
    state.SetLabel(opts.use_openat2 ? "openat2" : "walk");
}
BENCHMARK(BM_open)->Arg(1)->Arg(0);

}  // namespace

BENCHMARK_MAIN();
