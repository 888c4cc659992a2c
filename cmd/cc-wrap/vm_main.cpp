// cc-wrap-vm: the microvm backend's host step and guest init
// (lib/cc/sandbox/microvm_guest.hpp). Not meant to be run by hand.
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cc/sandbox/microvm_guest.hpp"

int main(int argc, char** argv) {
    if (::getpid() == 1) cc::sandbox::vm_guest_main();
    if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
        std::cout << "cc-wrap-vm " << CC_VERSION << '\n';
        return 0;
    }
    if (argc > 1 && std::strcmp(argv[1], "--internal-vm-host") == 0)
        return cc::sandbox::vm_host_main(std::vector<std::string>(argv + 2, argv + argc));
    if (argc > 1 && std::strcmp(argv[1], "--internal-vm-relay") == 0)
        return cc::sandbox::vm_relay_main(std::vector<std::string>(argv + 2, argv + argc));
    std::cout << "Usage: cc-wrap-vm --internal-vm-host -- MONITOR ARGS...\n"
                 "The microvm backend's host step (inside cc-wrap's sandbox) and, as PID 1 of\n"
                 "the guest, its init. cc-wrap runs it; it is not meant to be run by hand.\n";
    return argc > 1 && std::strcmp(argv[1], "--help") == 0 ? 0 : 2;
}
