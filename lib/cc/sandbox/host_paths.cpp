// The real filesystem behind HostPaths (OS-touching, so it lives in cc_sys).
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "cc/sandbox/paths.hpp"

namespace cc::sandbox {

namespace {

class RealPaths final : public HostPaths {
public:
    std::optional<std::string> resolve(const std::string& path) const override {
        char buf[PATH_MAX];
        if (!::realpath(path.c_str(), buf)) return std::nullopt;
        return std::string(buf);
    }
    Kind kind(const std::string& path) const override {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return Kind::missing;
        if (S_ISDIR(st.st_mode)) return Kind::dir;
        if (S_ISREG(st.st_mode)) return Kind::file;
        return Kind::other;
    }
    std::optional<std::string> read_link(const std::string& path) const override {
        char buf[PATH_MAX];
        ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
        if (n < 0) return std::nullopt;
        return std::string(buf, static_cast<std::size_t>(n));
    }
    std::vector<std::string> list(const std::string& dir) const override {
        std::vector<std::string> out;
        DIR* d = ::opendir(dir.c_str());
        if (!d) return out;
        while (auto* e = ::readdir(d)) {
            std::string n = e->d_name;
            if (n != "." && n != "..") out.push_back(n);
        }
        ::closedir(d);
        return out;
    }
};

}  // namespace

std::unique_ptr<HostPaths> real_paths() { return std::make_unique<RealPaths>(); }

}  // namespace cc::sandbox
