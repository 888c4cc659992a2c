// C++ face of the init step; the step itself is C (init_step.c), so
// cc-wrap-init can be a static musl binary.
#include "cc/sandbox/sandbox_init.hpp"

#include "cc/sandbox/init_step.h"

namespace cc::sandbox {

int sandbox_init_main(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    return cc_init_step_main(static_cast<int>(args.size()), argv.data());
}

bool install_write_filter(int filter_fd, int sock_fd, std::string& err) {
    char buf[512] = "";
    if (cc_init_install_write_filter(filter_fd, sock_fd, buf, sizeof buf) != 0) return true;
    err = buf;
    return false;
}

}  // namespace cc::sandbox
