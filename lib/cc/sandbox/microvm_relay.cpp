// The relay between a guest's connection to a proxy address and the proxy
// (microvm_guest.hpp): the VM monitor's user-mode network starts one per
// guest connection, with the connection on stdin and stdout. At most
// vm_relay_slots run at once per VM: a connection past them is answered at
// once as cc-egress answers past its caps (503 on the HTTP port, "no
// acceptable method" on the SOCKS port) and the process ends, so a guest
// that opens connections without end makes the host run no more than that.
#include "cc/sandbox/microvm_guest.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cc::sandbox {

namespace {

// A free slot's lock, held until the process ends; -1 when all are taken.
int take_slot() {
    for (int i = 0; i < vm_relay_slots; ++i) {
        std::string path = std::string(vm_relay_dir) + "/" + std::to_string(i);
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
        ::close(fd);
    }
    return -1;
}

void refuse(bool socks) {
    if (socks) {
        // The greeting, then "no acceptable methods": the client gives up.
        char greet[258];
        struct pollfd p = {0, POLLIN, 0};
        if (::poll(&p, 1, 2000) > 0) (void)::read(0, greet, sizeof greet);
        vm_write_all(1, "\x05\xff", 2);
        return;
    }
    static const char r[] =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 57\r\n\r\n"
        "cc-wrap: microvm: too many connections to the proxy now\n";
    vm_write_all(1, r, sizeof r - 1);
}

}  // namespace

int vm_relay_setup() {
    if (::mkdir(vm_relay_dir, 0700) != 0 && errno != EEXIST) return errno;
    for (int i = 0; i < vm_relay_slots; ++i) {
        std::string path = std::string(vm_relay_dir) + "/" + std::to_string(i);
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) return errno;
        ::close(fd);
    }
    return 0;
}

int vm_relay_main(const std::vector<std::string>& args) {
    if (args.size() != 2 || (args[1] != "http" && args[1] != "socks")) return 2;
    const int port = std::atoi(args[0].c_str());
    if (port <= 0 || port > 65535) return 2;
    const bool socks = args[1] == "socks";
    int slot = take_slot();
    if (slot < 0) {
        refuse(socks);
        return 0;
    }
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 1;
    // Both ways until both ends are done; an end closing its side closes
    // that side on the other.
    bool from_guest = true, to_guest = true;
    char buf[65536];
    while (from_guest || to_guest) {
        struct pollfd p[2] = {{from_guest ? 0 : -1, POLLIN, 0}, {to_guest ? s : -1, POLLIN, 0}};
        if (::poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (p[0].revents) {
            ssize_t n = ::read(0, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0 || !vm_write_all(s, buf, static_cast<std::size_t>(n))) {
                from_guest = false;
                ::shutdown(s, SHUT_WR);
            }
        }
        if (p[1].revents) {
            ssize_t n = ::read(s, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0 || !vm_write_all(1, buf, static_cast<std::size_t>(n))) {
                to_guest = false;
                ::shutdown(1, SHUT_WR);
                ::close(1);
            }
        }
    }
    ::close(s);
    ::close(slot);
    return 0;
}

}  // namespace cc::sandbox
