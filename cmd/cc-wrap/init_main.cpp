// cc-wrap-init: the init step cc-wrap runs first inside the sandbox
// (lib/cc/sandbox/sandbox_init.hpp). Not meant to be run by hand.
#include <cstring>
#include <string>
#include <vector>

#include "cc/sandbox/sandbox_init.hpp"

int main(int argc, char** argv) {
    int first = argc > 1 && std::strcmp(argv[1], "--internal-sandbox-init") == 0 ? 2 : 1;
    return cc::sandbox::sandbox_init_main(std::vector<std::string>(argv + first, argv + argc));
}
