// The ceiling for any user-space relay on this host: a CONNECT-only proxy
// with no policy, no event loop and no accounting, one blocking thread per
// direction moving bytes with splice(2) through a 1 MiB pipe. bench/30-egress.sh
// runs the same 1 GiB transfer through it, so cc-egress's bulk figure can be
// read against what the second TCP hop itself costs here.
//
// Prints "127.0.0.1:PORT" on stdout when listening; serves until killed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace {

void relay(int from, int to) {
    int p[2];
    if (::pipe(p) != 0) return;
    ::fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    while (true) {
        ssize_t n = ::splice(from, nullptr, p[1], nullptr, 1 << 20, SPLICE_F_MOVE);
        if (n <= 0) break;
        while (n > 0) {
            ssize_t m = ::splice(p[0], nullptr, to, nullptr, static_cast<size_t>(n), SPLICE_F_MOVE);
            if (m <= 0) goto done;
            n -= m;
        }
    }
done:
    ::shutdown(to, SHUT_WR);
    ::close(p[0]);
    ::close(p[1]);
}

void serve(int client) {
    std::string head;
    char c;
    while (head.find("\r\n\r\n") == std::string::npos && ::read(client, &c, 1) == 1) head += c;
    unsigned a, b, cc, d, port;
    if (std::sscanf(head.c_str(), "CONNECT %u.%u.%u.%u:%u ", &a, &b, &cc, &d, &port) != 5) {
        ::close(client);
        return;
    }
    int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(a << 24 | b << 16 | cc << 8 | d);
    if (::connect(up, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        ::close(up);
        ::close(client);
        return;
    }
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (::write(client, ok, sizeof ok - 1) < 0) return;
    std::thread back(relay, up, client);
    relay(client, up);
    back.join();
    ::close(up);
    ::close(client);
}

}  // namespace

int main() {
    int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (::bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(ls, 64) != 0 ||
        ::getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
        std::perror("splice_ceiling");
        return 1;
    }
    std::printf("127.0.0.1:%u\n", ntohs(sa.sin_port));
    std::fflush(stdout);
    while (true) {
        int c = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) std::thread(serve, c).detach();
    }
}
