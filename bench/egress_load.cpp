// Load generator for bench/30-egress.sh (loopback only, bounded counts).
//
//   egress_load rate MODE PROXY_PORT ORIGIN_PORT PATH COUNT CONCURRENCY
//       COUNT requests, each on a new connection (Connection: close), MODE is
//       direct | http (absolute-form) | connect | socks. Prints one JSON line.
//   egress_load tunnels MODE PROXY_PORT ORIGIN_PORT PATH COUNT PROXY_PID
//       open COUNT tunnels (connect | socks) at once, read the proxy's RSS
//       while they are all open, then send one request on each and count the
//       answers. Prints one JSON line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

int dial(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

bool send_all(int fd, const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
        ssize_t n = ::write(fd, s.data() + off, s.size() - off);
        if (n <= 0) return false;
        off += static_cast<std::size_t>(n);
    }
    return true;
}

bool read_n(int fd, std::size_t n, std::string& out) {
    out.resize(n);
    std::size_t got = 0;
    while (got < n) {
        ssize_t r = ::read(fd, out.data() + got, n - got);
        if (r <= 0) return false;
        got += static_cast<std::size_t>(r);
    }
    return true;
}

// Open a tunnel to the origin through the proxy (or connect directly).
int open_path(const std::string& mode, int proxy, int origin) {
    if (mode == "direct") return dial(origin);
    int fd = dial(proxy);
    if (fd < 0) return -1;
    if (mode == "connect") {
        std::string req = "CONNECT 127.0.0.1:" + std::to_string(origin) + " HTTP/1.1\r\n\r\n";
        if (!send_all(fd, req)) return ::close(fd), -1;
        std::string head;
        char c;
        while (head.size() < 4096 && ::read(fd, &c, 1) == 1) {
            head += c;
            if (head.size() >= 4 && head.compare(head.size() - 4, 4, "\r\n\r\n") == 0) break;
        }
        if (head.rfind("HTTP/1.", 0) != 0 || head.compare(8, 4, " 200") != 0) return ::close(fd), -1;  // tinyproxy answers 1.0
    } else if (mode == "socks") {
        // Greeting, then the request once the method is chosen (microsocks
        // drops a request pipelined behind the greeting).
        std::string req("\x05\x01\x00\x01\x7f\x00\x00\x01", 8);
        req += static_cast<char>(origin >> 8);
        req += static_cast<char>(origin & 0xff);
        std::string rep;
        if (!send_all(fd, std::string("\x05\x01\x00", 3)) || !read_n(fd, 2, rep) || rep[1] != 0x00)
            return ::close(fd), -1;
        if (!send_all(fd, req) || !read_n(fd, 10, rep) || rep[1] != 0x00) return ::close(fd), -1;
    }
    return fd;
}

bool request(const std::string& mode, int proxy, int origin, const std::string& path, bool close_after) {
    int fd = open_path(mode, proxy, origin);
    if (fd < 0) return false;
    std::string target = mode == "http" ? "http://127.0.0.1:" + std::to_string(origin) + path : path;
    std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                      (close_after ? "Connection: close\r\n" : "") + "\r\n";
    bool ok = send_all(fd, req);
    std::string resp;
    char buf[16384];
    ssize_t n;
    while (ok && (n = ::read(fd, buf, sizeof buf)) > 0) resp.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return ok && resp.rfind("HTTP/1.", 0) == 0 && resp.compare(8, 4, " 200") == 0;
}

long rss_kib(int pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 8) {
        std::fprintf(stderr, "usage: egress_load rate|tunnels MODE PROXY_PORT ORIGIN_PORT PATH COUNT N\n");
        return 2;
    }
    rlimit rl{};
    ::getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    std::string what = argv[1], mode = argv[2], path = argv[5];
    int proxy = std::atoi(argv[3]), origin = std::atoi(argv[4]), count = std::atoi(argv[6]), n = std::atoi(argv[7]);

    if (what == "rate") {
        std::atomic<int> next{0}, errors{0};
        auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> threads;
        for (int i = 0; i < n; ++i)
            threads.emplace_back([&] {
                while (next++ < count)
                    if (!request(mode, proxy, origin, path, true)) ++errors;
            });
        for (auto& t : threads) t.join();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("{\"mode\":\"%s\",\"requests\":%d,\"errors\":%d,\"seconds\":%.3f,\"perSecond\":%.0f}\n",
                    mode.c_str(), count, errors.load(), s, count / s);
        return errors ? 1 : 0;
    }
    // tunnels: all open at once, then one request each.
    std::vector<int> fds;
    int errors = 0;
    for (int i = 0; i < count; ++i) {
        int fd = open_path(mode, proxy, origin);
        if (fd < 0) ++errors;
        else fds.push_back(fd);
    }
    long rss = rss_kib(n);
    int answered = 0;
    for (int fd : fds) {
        std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        std::string head;
        if (send_all(fd, req) && read_n(fd, 12, head) && head.compare(8, 4, " 200") == 0) ++answered;
        else ++errors;
    }
    long rss_after = rss_kib(n);
    for (int fd : fds) ::close(fd);
    std::printf("{\"mode\":\"%s\",\"tunnels\":%d,\"open\":%zu,\"answered\":%d,\"errors\":%d,\"proxyRssKiB\":%ld,"
                "\"proxyRssAfterRequestsKiB\":%ld}\n",
                mode.c_str(), count, fds.size(), answered, errors, rss, rss_after);
    return errors ? 1 : 0;
}
