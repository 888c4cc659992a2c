// C++ face of the Landlock layer; the calls are C (init_step.c), shared with
// the static musl cc-wrap-init.
#include "cc/sandbox/landlock.hpp"

#include "cc/sandbox/init_step.h"

namespace cc::sandbox {

int landlock_abi_version() { return cc_init_landlock_abi(); }

bool apply_landlock(int abi, const std::vector<std::string>& writable, std::string& err) {
    std::vector<const char*> paths;
    paths.reserve(writable.size());
    for (const auto& p : writable) paths.push_back(p.c_str());
    char buf[512] = "";
    if (cc_init_apply_landlock(abi, paths.data(), paths.size(), buf, sizeof buf) != 0) return true;
    err = buf;
    return false;
}

}  // namespace cc::sandbox
