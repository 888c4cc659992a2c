// What the cc-egress tests share: a running cc-egress (its ready line and
// connection lines), the Python origin (origin.py), a DNS responder the test
// controls, curl with no proxy variables, raw loopback sockets.
#pragma once

#include "harness.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace egress_fixture {

namespace bp = boost::process;
using json = nlohmann::json;
using cc::test::bin;


// Binds fd to 127.0.0.1 on an ephemeral port; the port, or 0 if bind failed.
inline std::uint16_t bind_loopback(int fd) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 0;
    socklen_t l = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
    return ntohs(a.sin_port);
}

inline std::uint16_t free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    std::uint16_t port = bind_loopback(fd);
    ::close(fd);
    return port;
}

inline int connect_to(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

inline bool wait_listening(std::uint16_t port) {
    for (int i = 0; i < 100; ++i) {
        int fd = connect_to(port);
        if (fd >= 0) {
            ::close(fd);
            return true;
        }
        ::usleep(50000);
    }
    return false;
}

// Send bytes, optionally half-close, read until EOF (or timeout).
inline std::string talk(std::uint16_t port, const std::string& data, bool shut = false) {
    int fd = connect_to(port);
    if (fd < 0) return "CONNECT-FAILED";
    if (!data.empty()) (void)!::write(fd, data.data(), data.size());
    if (shut) ::shutdown(fd, SHUT_WR);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return out;
}

inline std::uint16_t port_of(const std::string& hostport) {
    return static_cast<std::uint16_t>(std::stoi(hostport.substr(hostport.rfind(':') + 1)));
}

// A running cc-egress; the ready line is read in the constructor.
struct Egress {
    bp::ipstream out;
    bp::opstream in;
    bp::child child;
    json ready;
    std::string err_path;
    std::vector<json> lines;
    std::thread reader;  // drains stdout all along, as a real parent would

    // `env`: added to cc-egress's environment; `launcher`: a command that
    // runs cc-egress (its argv then continues with cc-egress and `args`).
    explicit Egress(std::vector<std::string> args, const std::map<std::string, std::string>& env = {},
                    std::vector<std::string> launcher = {}) {
        static int n = 0;
        err_path = cc::test::scratch_dir() + "/egress-" + std::to_string(n++) + ".err";
        bp::environment e = boost::this_process::environment();
        for (const auto& [k, v] : env) e[k] = v;
        std::string exe = bin("cc-egress");
        if (!launcher.empty()) {
            args.insert(args.begin(), exe);
            args.insert(args.begin(), launcher.begin() + 1, launcher.end());
            exe = bp::search_path(launcher[0]).string();
        }
        child = bp::child(exe, args, e, bp::std_out > out, bp::std_err > err_path, bp::std_in < in);
        std::string line;
        if (std::getline(out, line)) ready = json::parse(line, nullptr, false);
        reader = std::thread([this] {
            std::string l;
            while (std::getline(out, l))
                if (!l.empty()) lines.push_back(json::parse(l));
        });
    }
    ~Egress() {
        if (child.running()) {
            ::kill(child.id(), SIGKILL);
            child.wait();
        }
        if (reader.joinable()) reader.join();
    }
    std::string http() const { return ready.value("http", std::string()); }
    std::string socks() const { return ready.value("socks", std::string()); }
    // SIGTERM, collect the connection lines, return the exit status.
    // A cc-egress still running 30 s after SIGTERM is a failure said as
    // such (then killed), not a test that hangs until its suite times out.
    int stop() {
        ::kill(child.id(), SIGTERM);
        for (int i = 0; i < 3000 && child.running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        bool hung = child.running();
        if (hung) {
            FAIL_CHECK("cc-egress did not exit within 30 s of SIGTERM; its stderr:\n" << stderr_text());
            ::kill(child.id(), SIGKILL);
        }
        child.wait();
        if (reader.joinable()) reader.join();
        return hung ? -1 : child.exit_code();
    }
    const json* find(const std::string& host, const std::string& proto = "") const {
        for (const auto& l : lines)
            if (l.value("host", std::string()) == host && (proto.empty() || l.value("proto", std::string()) == proto))
                return &l;
        return nullptr;
    }
    std::string stderr_text() const {
        std::ifstream f(err_path);
        return std::string(std::istreambuf_iterator<char>(f), {});
    }
};

// The Python origin (tests/net/origin.py): HTTP/1.1 keep-alive on 127.0.0.1.
struct Origin {
    bp::ipstream out;
    bp::child child;
    std::uint16_t port = 0;
    // `env`: ORIGIN_TLS_CERT and ORIGIN_TLS_KEY for HTTPS, ORIGIN_LOG (origin.py).
    explicit Origin(const std::string& idle_timeout = "0", const std::map<std::string, std::string>& env = {}) {
        std::vector<std::string> args{cc::test::source_dir() + "/tests/net/origin.py", "0"};
        if (idle_timeout != "0" || !env.empty()) args.push_back(idle_timeout);
        bp::environment e = boost::this_process::environment();
        for (const auto& [k, v] : env) e[k] = v;
        child = bp::child(bp::search_path("python3"), args, e, bp::std_out > out, bp::std_err > bp::null);
        std::string line;
        if (std::getline(out, line)) port = static_cast<std::uint16_t>(std::stoi(line));
    }
    ~Origin() {
        ::kill(child.id(), SIGKILL);
        child.wait();
    }
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
};

// A DNS responder on 127.0.0.1 (UDP) that this test controls: A records from
// `names`, NXDOMAIN for the rest, no AAAA records.
struct Dns {
    int fd = -1;
    std::uint16_t port = 0;
    std::map<std::string, std::string> names;
    std::atomic<bool> stop{false};
    std::thread thread;
    std::mutex mu;
    std::vector<std::string> asked;  // every question's name, in order

    std::vector<std::string> questions() {
        std::lock_guard<std::mutex> lock(mu);
        return asked;
    }

    explicit Dns(std::map<std::string, std::string> n) : names(std::move(n)) {
        fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        port = bind_loopback(fd);
        thread = std::thread([this] { serve(); });
    }
    ~Dns() {
        stop = true;
        thread.join();
        ::close(fd);
    }
    std::string server() const { return "127.0.0.1:" + std::to_string(port); }
    void serve() {
        while (!stop) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            unsigned char q[512];
            sockaddr_in from{};
            socklen_t fl = sizeof from;
            ssize_t n = ::recvfrom(fd, q, sizeof q, 0, reinterpret_cast<sockaddr*>(&from), &fl);
            if (n < 17) continue;
            std::string name;
            std::size_t i = 12;
            while (i < static_cast<std::size_t>(n) && q[i]) {
                if (!name.empty()) name += '.';
                name.append(reinterpret_cast<char*>(q + i + 1), q[i]);
                i += q[i] + 1u;
            }
            std::size_t qend = i + 5;  // NUL, QTYPE, QCLASS
            if (qend > static_cast<std::size_t>(n)) continue;
            int qtype = (q[i + 1] << 8) | q[i + 2];
            {
                std::lock_guard<std::mutex> lock(mu);
                asked.push_back(name);
            }
            std::string r(reinterpret_cast<char*>(q), qend);
            r[2] = static_cast<char>(0x81);
            auto it = names.find(name);
            bool answer = it != names.end() && qtype == 1;
            r[3] = static_cast<char>(it == names.end() ? 0x83 : 0x80);
            r[6] = 0;
            r[7] = answer ? 1 : 0;
            r[8] = r[9] = r[10] = r[11] = 0;
            if (answer) {
                in_addr addr{};
                ::inet_pton(AF_INET, it->second.c_str(), &addr);
                r += std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04", 12);
                r.append(reinterpret_cast<char*>(&addr), 4);
            }
            ::sendto(fd, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), fl);
        }
    }
};

inline cc::test::RunResult curl(std::vector<std::string> args) {
    args.insert(args.begin(), {"curl", "-sS", "--max-time", "20"});
    cc::test::RunOptions o;
    o.unset_env = {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy", "no_proxy", "NO_PROXY"};
    return cc::test::run(args, o);
}

inline std::string http_code(const cc::test::RunResult& r) { return r.out.substr(r.out.size() >= 3 ? r.out.size() - 3 : 0); }

inline int count_fds(pid_t pid) {
    int n = 0;
    DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
    if (!d) return -1;
    while (dirent* e = ::readdir(d))
        if (e->d_name[0] != '.') ++n;
    ::closedir(d);
    return n;
}


inline void openssl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"openssl"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = cc::test::run(argv);
    INFO(r.err);
    REQUIRE(r.status == 0);
}

// A test CA and an origin certificate for `names` signed by it, in `dir`:
// ca.pem, origin.pem, origin.key.
inline void make_origin_pki(const std::string& dir, const std::string& names) {
    openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
             dir + "/ca.key", "-out", dir + "/ca.pem", "-days", "2", "-subj", "/CN=test origin CA", "-addext",
             "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"});
    openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", dir + "/origin.key",
             "-out", dir + "/origin.csr", "-subj", "/CN=origin"});
    std::ofstream(dir + "/ext") << "subjectAltName=" + names + "\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";
    openssl({"x509", "-req", "-in", dir + "/origin.csr", "-CA", dir + "/ca.pem", "-CAkey", dir + "/ca.key",
             "-CAcreateserial", "-out", dir + "/origin.pem", "-days", "2", "-extfile", dir + "/ext"});
    REQUIRE(std::ifstream(dir + "/origin.pem").peek() != std::ifstream::traits_type::eof());
}

}  // namespace egress_fixture
