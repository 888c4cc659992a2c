// The ceiling for any user-space relay on this host: a CONNECT-only proxy
// with no policy, no event loop and no accounting, one blocking thread per
// direction moving bytes with splice(2) through a 1 MiB pipe. bench/30-egress.sh
// runs the same 1 GiB transfer through it, so cc-egress's bulk figure can be
// read against what the second TCP hop itself costs here.
//
// With --sockmap (root: CAP_BPF and CAP_NET_ADMIN) the tunnel is not relayed
// by this process at all: both sockets go into a BPF sockhash whose SK_SKB
// verdict program redirects every byte received on one straight to the
// other's send path, in the kernel. With no user space in the path at all,
// what is left is the cost of the second TCP connection itself (on the
// 2-vCPU machine this was measured on, it was no faster than splice).
// cc-egress does not use it: it needs root, and the kernel queues
// redirected bytes without back-pressure on the sender.
//
// Prints "127.0.0.1:PORT" on stdout when listening; serves until killed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace {

// ---- the in-kernel relay (--sockmap)
int sockhash = -1;

long bpf(int cmd, bpf_attr& a) { return ::syscall(__NR_bpf, cmd, &a, sizeof a); }

constexpr bpf_insn insn(std::uint8_t code, std::uint8_t dst, std::uint8_t src, std::int16_t off, std::int32_t imm) {
    bpf_insn i{};
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}

// key = bpf_get_socket_cookie(skb); return bpf_sk_redirect_hash(skb, &sockhash, &key, 0);
// The socket relaying for socket S sits in the sockhash under S's cookie.
bool load_redirect(std::string& why) {
    bpf_attr a{};
    a.map_type = BPF_MAP_TYPE_SOCKHASH;
    a.key_size = 8;
    a.value_size = 4;
    a.max_entries = 4096;
    sockhash = static_cast<int>(bpf(BPF_MAP_CREATE, a));
    if (sockhash < 0) return why = std::string("sockhash: ") + std::strerror(errno), false;
    const bpf_insn prog[] = {
        insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0),
        insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_socket_cookie),
        insn(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_0, -8, 0),
        insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0),
        insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_2, BPF_PSEUDO_MAP_FD, 0, sockhash),
        insn(0, 0, 0, 0, 0),
        insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_10, 0, 0),
        insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, -8),
        insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, 0),
        insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_sk_redirect_hash),
        insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
    };
    a = bpf_attr{};
    a.prog_type = BPF_PROG_TYPE_SK_SKB;
    a.insns = reinterpret_cast<std::uintptr_t>(prog);
    a.insn_cnt = sizeof prog / sizeof prog[0];
    a.license = reinterpret_cast<std::uintptr_t>("GPL");
    int fd = static_cast<int>(bpf(BPF_PROG_LOAD, a));
    if (fd < 0) return why = std::string("SK_SKB program: ") + std::strerror(errno), false;
    a = bpf_attr{};
    a.target_fd = static_cast<std::uint32_t>(sockhash);
    a.attach_bpf_fd = static_cast<std::uint32_t>(fd);
    a.attach_type = BPF_SK_SKB_VERDICT;
    if (bpf(BPF_PROG_ATTACH, a) != 0) {
        a.attach_type = BPF_SK_SKB_STREAM_VERDICT;  // before Linux 5.13: verdict-only under the old name
        if (bpf(BPF_PROG_ATTACH, a) != 0) return why = std::string("attach: ") + std::strerror(errno), false;
    }
    return true;
}

std::uint64_t cookie(int fd) {
    std::uint64_t c = 0;
    socklen_t l = sizeof c;
    ::getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &l);
    return c;
}

bool put(std::uint64_t key, int fd) {
    bpf_attr a{};
    std::uint32_t v = static_cast<std::uint32_t>(fd);
    a.map_fd = static_cast<std::uint32_t>(sockhash);
    a.key = reinterpret_cast<std::uintptr_t>(&key);
    a.value = reinterpret_cast<std::uintptr_t>(&v);
    a.flags = BPF_ANY;
    return bpf(BPF_MAP_UPDATE_ELEM, a) == 0;
}

// Both sockets in before the client hears "200" (it sends nothing before),
// so every byte of the tunnel goes through the redirect. Closing a socket
// takes it out of the sockhash. The benchmark's downloads end on the
// response's Content-Length, so no drain before a half-close is needed here.
void kernel_relay(int client, int up) {
    if (!put(cookie(client), up) || !put(cookie(up), client)) {
        std::perror("sockhash update");
        return;
    }
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (::write(client, ok, sizeof ok - 1) < 0) return;
    pollfd p[2] = {{client, POLLRDHUP, 0}, {up, POLLRDHUP, 0}};
    while (::poll(p, 2, -1) >= 0 || errno == EINTR)
        if ((p[0].revents | p[1].revents) & (POLLRDHUP | POLLHUP | POLLERR)) break;
}

// ---- the user-space relay (default)
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
    if (sockhash >= 0) {
        kernel_relay(client, up);
    } else {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        if (::write(client, ok, sizeof ok - 1) < 0) return;
        std::thread back(relay, up, client);
        relay(client, up);
        back.join();
    }
    ::close(up);
    ::close(client);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--sockmap") == 0) {
        std::string why;
        if (!load_redirect(why)) {
            std::fprintf(stderr, "splice_ceiling --sockmap: %s\n", why.c_str());
            return 1;
        }
    }
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
