#include "rig.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace cc::test::rig {

// An ordinary user's PATH has no /usr/sbin, where Debian puts lighttpd.
static std::string lighttpd_path() {
    if (have_program("lighttpd")) return "lighttpd";
    for (const char* p : {"/usr/sbin/lighttpd", "/usr/local/sbin/lighttpd"})
        if (::access(p, X_OK) == 0) return p;
    return "";
}

namespace bp = boost::process;
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, const std::string& text, unsigned mode) {
    std::ofstream(path, std::ios::binary) << text;
    ::chmod(path.c_str(), mode);
}

int bound_loopback_socket(int* port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    *port = ntohs(a.sin_port);
    return fd;
}

int free_port() {
    int port = 0;
    ::close(bound_loopback_socket(&port));
    return port;
}

namespace {

bool port_open(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    bool okc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return okc;
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
    std::vector<std::string> args(argv.begin() + 1, argv.end());
    auto exe = argv[0].find('/') == std::string::npos ? bp::search_path(argv[0]) : boost::filesystem::path(argv[0]);
    bp::child c(exe, bp::args(args), bp::std_in < bp::null, bp::std_out > out, bp::std_err > err);
    pid_t pid = c.id();
    c.detach();
    return pid;
}

int reap(pid_t pid, int sig) {
    if (pid <= 0) return -1;
    ::kill(pid, sig);
    int st = 0;
    for (int i = 0; i < 200; ++i) {
        pid_t r = ::waitpid(pid, &st, WNOHANG);
        if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0) return -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
    return 128 + SIGKILL;
}

// refs/heads/x -> oid in a bare repository, "" when absent.
std::string ref_in(const std::string& bare, const std::string& ref) {
    auto r = git({"rev-parse", "--verify", "-q", ref}, bare);
    std::string oid = r.status == 0 ? r.out : "";
    while (!oid.empty() && oid.back() == '\n') oid.pop_back();
    return oid;
}

}  // namespace

RunResult git(const std::vector<std::string>& args, const std::string& cwd,
              const std::map<std::string, std::string>& extra_env) {
    std::vector<std::string> argv{"git"};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    o.cwd = cwd;
    o.timeout_ms = 120000;
    o.env = {{"GIT_CONFIG_NOSYSTEM", "1"},
             {"GIT_CONFIG_GLOBAL", "/dev/null"},
             {"HOME", scratch_dir()},
             {"GIT_TERMINAL_PROMPT", "0"},
             {"GIT_AUTHOR_NAME", "cc test"},
             {"GIT_AUTHOR_EMAIL", "cc@test.invalid"},
             {"GIT_COMMITTER_NAME", "cc test"},
             {"GIT_COMMITTER_EMAIL", "cc@test.invalid"},
             {"LC_ALL", "C"}};
    o.unset_env = {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};
    for (const auto& [k, v] : extra_env) o.env[k] = v;
    return run(argv, o);
}

std::string work_repo(const std::string& name) {
    std::string dir = scratch_dir() + "/work-" + name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    git({"init", "-q", "-b", "main"}, dir);
    commit(dir, "README", "hello\n");
    return dir;
}

std::string commit(const std::string& repo, const std::string& file, const std::string& text) {
    write_file(repo + "/" + file, text);
    git({"add", file}, repo);
    git({"commit", "-q", "-m", "change " + file}, repo);
    auto r = git({"rev-parse", "HEAD"}, repo);
    std::string oid = r.out;
    while (!oid.empty() && oid.back() == '\n') oid.pop_back();
    return oid;
}

Upstream::Upstream(bool streaming) {
    static int serial = 0;
    dir_ = scratch_dir() + "/upstream-" + std::to_string(::getpid()) + (serial++ ? "-" + std::to_string(serial) : "");
    fs::create_directories(dir_ + "/repos");
    fs::create_directories(dir_ + "/uploads");
    write_file(dir_ + "/users", "x-access-token:" + write_token + "\nreader:" + read_token + "\n", 0600);
    std::string backend = "/usr/lib/git-core/git-http-backend";
    for (int attempt = 0; attempt < 3; ++attempt) {
        port_ = free_port();
        std::string auth = R"(("method" => "basic", "realm" => "git", "require" => )";
        std::string conf;
        conf += "server.document-root = \"" + dir_ + "\"\n";
        conf += "server.bind = \"127.0.0.1\"\nserver.port = " + std::to_string(port_) + "\n";
        conf += "server.errorlog = \"" + dir_ + "/error.log\"\n";
        conf += "server.upload-dirs = (\"" + dir_ + "/uploads\")\n";
        if (streaming) conf += "server.stream-request-body = 2\n";
        conf += "server.modules = (\"mod_auth\", \"mod_authn_file\", \"mod_alias\", \"mod_setenv\", \"mod_cgi\")\n";
        conf += "auth.backend = \"plain\"\nauth.backend.plain.userfile = \"" + dir_ + "/users\"\n";
        conf += "alias.url = (\"/git/\" => \"" + backend + "/\")\n";
        conf += "$HTTP[\"url\"] =~ \"^/git/\" {\n  cgi.assign = (\"\" => \"\")\n";
        conf += "  setenv.add-environment = (\"GIT_PROJECT_ROOT\" => \"" + dir_ +
                "/repos\", \"GIT_HTTP_EXPORT_ALL\" => \"1\", \"GIT_CONFIG_NOSYSTEM\" => \"1\", \"HOME\" => \"" + dir_ +
                "\")\n";
        conf += "  auth.require = (\"\" => " + auth + "\"valid-user\"))\n}\n";
        // Pushing needs the write user, for the advertisement and the POST alike.
        conf += "$HTTP[\"querystring\"] =~ \"service=git-receive-pack\" {\n  auth.require = (\"\" => " + auth +
                "\"user=x-access-token\"))\n}\n";
        conf += "$HTTP[\"url\"] =~ \"/git-receive-pack$\" {\n  auth.require = (\"\" => " + auth +
                "\"user=x-access-token\"))\n}\n";
        write_file(dir_ + "/lighttpd.conf", conf);
        pid_ = spawn({lighttpd_path(), "-D", "-f", dir_ + "/lighttpd.conf"}, dir_ + "/stdout.log", dir_ + "/stderr.log");
        for (int i = 0; i < 100 && !port_open(port_); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (port_open(port_)) return;
        reap(pid_, SIGTERM);
        pid_ = -1;
    }
    throw std::runtime_error("lighttpd did not start: " + read_file(dir_ + "/stderr.log") + read_file(dir_ + "/error.log"));
}

Upstream::~Upstream() { reap(pid_, SIGTERM); }

StreamUpstream::StreamUpstream() {
    static int serial = 0;
    dir_ = scratch_dir() + "/stream-upstream-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
    fs::create_directories(dir_ + "/repos");
    const std::string script = cc::test::source_dir() + "/tests/git/stream_upstream.py";
    pid_ = spawn({"python3", script, dir_ + "/port", dir_ + "/repos"}, dir_ + "/stdout.log", dir_ + "/stderr.log");
    for (int i = 0; i < 250 && !fs::exists(dir_ + "/port"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!fs::exists(dir_ + "/port")) {
        reap(pid_, SIGTERM);
        throw std::runtime_error("stream_upstream.py did not start: " + read_file(dir_ + "/stderr.log"));
    }
    port_ = std::stoi(read_file(dir_ + "/port"));
}

StreamUpstream::~StreamUpstream() { reap(pid_, SIGTERM); }

std::string StreamUpstream::base() const { return "http://127.0.0.1:" + std::to_string(port_) + "/git"; }

std::string StreamUpstream::create_repo(const std::string& on) {
    std::string p = dir_ + "/repos/" + on + ".git";
    fs::create_directories(p);
    git({"init", "-q", "--bare", "-b", "main"}, p);
    git({"config", "http.receivepack", "true"}, p);
    return p;
}

std::string StreamUpstream::ref(const std::string& on, const std::string& ref) const {
    return ref_in(dir_ + "/repos/" + on + ".git", ref);
}

std::string Upstream::base() const { return "http://127.0.0.1:" + std::to_string(port_) + "/git"; }
std::string Upstream::repo_path(const std::string& on) const { return dir_ + "/repos/" + on + ".git"; }

std::string Upstream::create_repo(const std::string& on) {
    std::string p = repo_path(on);
    fs::remove_all(p);
    fs::create_directories(p);
    git({"init", "-q", "--bare", "-b", "main"}, p);
    git({"config", "receive.advertisePushOptions", "true"}, p);
    git({"config", "http.receivepack", "true"}, p);
    // Keep pushed packs as they are (as GitHub does) instead of exploding
    // them into zlib-compressed loose objects, which dominates big pushes.
    git({"config", "receive.unpackLimit", "1"}, p);
    return p;
}

std::string Upstream::read_url(const std::string& on) const {
    return "http://reader:" + read_token + "@127.0.0.1:" + std::to_string(port_) + "/git/" + on + ".git";
}
std::string Upstream::write_url(const std::string& on) const {
    return "http://x-access-token:" + write_token + "@127.0.0.1:" + std::to_string(port_) + "/git/" + on + ".git";
}

std::string Upstream::ref(const std::string& on, const std::string& ref) const { return ref_in(repo_path(on), ref); }

Gateway::Gateway(const std::vector<std::string>& args) {
    static int n = 0;
    std::string base = scratch_dir() + "/gateway-" + std::to_string(++n);
    out_ = base + ".out";
    err_ = base + ".err";
    std::vector<std::string> argv{bin("cc-pushgate")};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = spawn(argv, out_, err_);
    for (int i = 0; i < 250; ++i) {
        std::string text = read_file(out_);
        auto nl = text.find('\n');
        if (nl != std::string::npos) {
            auto j = nlohmann::json::parse(text.substr(0, nl), nullptr, false);
            if (j.is_object() && j.value("event", "") == "ready") url_ = j.value("url", "");
            break;
        }
        int st;
        if (::waitpid(pid_, &st, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("cc-pushgate exited: " + read_file(err_));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (url_.empty()) throw std::runtime_error("cc-pushgate gave no ready line: " + read_file(err_));
}

Gateway::~Gateway() { reap(pid_, SIGTERM); }

int Gateway::stop() {
    int st = reap(pid_, SIGTERM);
    pid_ = -1;
    return st;
}

bool have_rig() {
    return !lighttpd_path().empty() && have_program("git") && fs::exists("/usr/lib/git-core/git-http-backend");
}

std::string agent_repo(const std::string& name, const Gateway& g, const std::string& repo) {
    std::string dir = work_repo(name);
    git({"remote", "add", "origin", "https://github.com/" + repo + ".git"}, dir);
    auto cfg = run({bin("cc-pushgate"), "git-config", "--url", g.url()});
    if (cfg.status != 0) throw std::runtime_error("cc-pushgate git-config failed: " + cfg.err);
    std::string inc = dir + "/.git/cc-pushgate.config";
    write_file(inc, cfg.out);
    git({"config", "--add", "include.path", inc}, dir);
    return dir;
}

std::string head(const std::string& repo) { return git({"rev-parse", "HEAD"}, repo).out.substr(0, 40); }

std::vector<nlohmann::json> events(const Gateway& g, const std::string& kind) {
    std::vector<nlohmann::json> out;
    std::string text = g.stdout_text();
    for (int i = 0; i < 50; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::string again = g.stdout_text();
        bool stable = again == text;
        text = std::move(again);
        if (stable && text.find("\"event\":\"" + kind + "\"") != std::string::npos) break;
    }
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string::npos) break;
        auto j = nlohmann::json::parse(text.substr(pos, nl - pos), nullptr, false);
        if (j.is_object() && j.value("event", "") == kind) out.push_back(j);
        pos = nl + 1;
    }
    return out;
}

std::string http_raw(int port, const std::string& request) { return http_raw_in_parts(port, request, {}, 0); }

std::string http_raw_in_parts(int port, const std::string& request, const std::vector<std::size_t>& cuts, int pause_ms) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    timeval tv{20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return "";
    }
    std::size_t off = 0;
    std::vector<std::size_t> ends = cuts;
    ends.push_back(request.size());
    for (std::size_t end : ends) {
        while (off < std::min(end, request.size())) {
            ssize_t n = ::send(fd, request.data() + off, std::min(end, request.size()) - off, MSG_NOSIGNAL);
            if (n <= 0) break;
            off += static_cast<std::size_t>(n);
        }
        if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    }
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

DyingFront::DyingFront(int upstream_port, std::size_t cut_after, int upload_delay_ms)
    : upstream_port_(upstream_port), cut_after_(cut_after), upload_delay_ms_(upload_delay_ms) {
    listener_ = bound_loopback_socket(&port_);
    ::listen(listener_, 16);
    loop_ = std::thread([this] {
        while (!stop_) {
            pollfd p{listener_, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            int fd = ::accept(listener_, nullptr, nullptr);
            if (fd >= 0) std::thread([this, fd] { serve(fd); }).detach();
        }
    });
}

DyingFront::~DyingFront() {
    stop_ = true;
    loop_.join();
    ::close(listener_);
}

void DyingFront::serve(int fd) {
    // What this thread needs of the front, read now: it may outlive it.
    const int upstream_port = upstream_port_, upload_delay_ms = upload_delay_ms_;
    const std::size_t cut_after = cut_after_;
    std::string head;
    char buf[65536];
    while (head.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            ::close(fd);
            return;
        }
        head.append(buf, static_cast<std::size_t>(n));
    }
    std::size_t body_at = head.find("\r\n\r\n") + 4;
    if (cut_after != ~std::size_t{0} && head.rfind("POST ", 0) == 0 &&
        head.substr(0, head.find('\r')).find("/git-receive-pack ") != std::string::npos) {
        std::size_t got = head.size() - body_at;
        while (got < cut_after) {
            ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        ++cuts_;
        linger l{1, 0};  // a reset, as a crashed host's kernel sends
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        ::close(fd);
        return;
    }
    if (upload_delay_ms > 0 && head.substr(0, head.find('\r')).find("git-upload-pack") != std::string::npos)
        std::this_thread::sleep_for(std::chrono::milliseconds(upload_delay_ms));
    head.insert(head.find("\r\n") + 2, "Connection: close\r\n");
    int up = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(upstream_port));
    if (::connect(up, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::send(up, head.data(), head.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(head.size())) {
        ::close(up);
        ::close(fd);
        return;
    }
    pollfd p[2] = {{fd, POLLIN, 0}, {up, POLLIN, 0}};
    for (;;) {
        if (::poll(p, 2, 30000) <= 0) break;
        bool done = false;
        for (int i = 0; i < 2 && !done; ++i) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = ::recv(p[i].fd, buf, sizeof buf, 0);
            if (n <= 0 || ::send(p[1 - i].fd, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) done = true;
        }
        if (done) break;
    }
    ::close(up);
    ::close(fd);
}

int Gateway::port() const { return std::stoi(url_.substr(url_.rfind(':') + 1)); }
std::string Gateway::stdout_text() const { return read_file(out_); }
std::string Gateway::stderr_text() const { return read_file(err_); }

}  // namespace cc::test::rig
