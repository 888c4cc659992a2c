#include "cc/sandbox/paths.hpp"

#include <filesystem>

namespace cc::sandbox {


bool is_glob(const std::string& path) { return path.find_first_of("*?") != std::string::npos; }

std::string normalise(const std::string& path, const std::string& home) {
    std::string p = path;
    if (p == "~")
        p = home;
    else if (p.rfind("~/", 0) == 0)
        p = home + p.substr(1);
    if (p.empty()) return p;
    std::string out = std::filesystem::path(p).lexically_normal().string();
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
}

std::vector<std::string> spellings(const std::string& path, const std::string& home, const HostPaths& host) {
    std::string lit = normalise(path, home);
    if (is_glob(lit)) return {lit};
    auto res = host.resolve(lit);
    if (!res || *res == lit) return {lit};
    return {lit, *res};
}

bool is_within(const std::string& path, const std::string& dir) {
    if (dir == "/") return !path.empty() && path[0] == '/';
    if (path.size() < dir.size() || path.compare(0, dir.size(), dir) != 0) return false;
    return path.size() == dir.size() || path[dir.size()] == '/';
}

std::size_t depth(const std::string& path) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < path.size(); ++i)
        if (path[i] == '/' && i + 1 < path.size()) ++n;
    return n;
}

std::string parent_of(const std::string& path) {
    auto pos = path.rfind('/');
    if (pos == std::string::npos || pos == 0) return "/";
    return path.substr(0, pos);
}

}  // namespace cc::sandbox
