// libFuzzer target: any byte string as a path must get a verdict whose
// invariants hold, and a confined open must never yield a file outside.
//   allowed => resolved lies in the root it names, has no "." or ".." parts
//   open ok => the path was allowed (open is never looser than check)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cc/fs/confine.hpp"

namespace {
const cc::fs::Confinement& confinement() {
    static cc::fs::Confinement* conf = [] {
        char tmpl[] = "/tmp/cc-fuzz-fs-XXXXXX";
        static std::string base = ::mkdtemp(tmpl);
        // The tree goes when the process ends normally (a replay, the end
        // of a fuzzing run); a crash leaves it for the artifact's reader,
        // and so does an atexit table that is full.
        (void)std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(base, ec);
        });
        std::filesystem::create_directories(base + "/w/sub");
        std::filesystem::create_directories(base + "/out");
        std::ofstream(base + "/w/sub/f") << "in";
        std::ofstream(base + "/out/f") << "out";
        std::filesystem::create_symlink("../out", base + "/w/lo");
        std::filesystem::create_symlink("sub", base + "/w/ls");
        std::filesystem::create_symlink("/proc/self/root", base + "/w/pr");
        std::filesystem::create_symlink("la", base + "/w/la");
        return new cc::fs::Confinement(cc::fs::Confinement::make(base + "/w", {}).value());
    }();
    return *conf;
}
}  // namespace

// libFuzzer's entry point (declared here: the build warns on a definition
// with external linkage and no declaration).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string path(reinterpret_cast<const char*>(data), size);
    if (path.find('\0') != std::string::npos) return 0;
    const auto& conf = confinement();
    cc::fs::Verdict v = conf.check(path);
    if (v.allowed) {
        if (!cc::fs::is_within(v.resolved, v.root)) std::abort();
        if (cc::fs::lexically_normal(v.resolved) != v.resolved) std::abort();
    }
    auto r = conf.open(path, cc::fs::Access::read);
    if (r && !v.allowed) std::abort();
    return 0;
}
