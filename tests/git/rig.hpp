// Test fixtures for cc-pushgate: a real smart-HTTP upstream (lighttpd running
// git http-backend as CGI, Basic auth where the read token can fetch and only
// the write token can push) and the gateway binary itself, both on 127.0.0.1,
// each started per test binary on a free port and stopped by PID.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <map>
#include <thread>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.hpp"

namespace cc::test::rig {

inline const std::string write_token = "w-7f3a9c1e5b";
inline const std::string read_token = "r-2d8e4b6a0c";

// lighttpd + git http-backend. Users: "x-access-token" (the write token as
// password; GitHub's username for installation tokens) and "reader" (the read
// token). receive-pack (advertisement and POST) requires x-access-token.
class Upstream {
public:
    // Starts it; CC_SKIP-worthy failures throw. `streaming`: request bodies go
    // to git-http-backend (so to git receive-pack) as they arrive, as large
    // hosts do, rather than once whole.
    explicit Upstream(bool streaming = false);
    ~Upstream();
    Upstream(const Upstream&) = delete;
    Upstream& operator=(const Upstream&) = delete;

    std::string base() const;                       // http://127.0.0.1:P/git
    int port() const { return port_; }
    std::string create_repo(const std::string& owner_name);  // bare repo path
    std::string read_url(const std::string& owner_name) const;   // with reader:READ
    std::string write_url(const std::string& owner_name) const;  // with x-access-token:WRITE
    std::string repo_path(const std::string& owner_name) const;
    // refs/heads/x -> oid in the bare repo, "" when absent.
    std::string ref(const std::string& owner_name, const std::string& ref) const;
    pid_t pid() const { return pid_; }

private:
    std::string dir_;
    int port_ = 0;
    pid_t pid_ = -1;
};

// A second kind of upstream (tests/git/stream_upstream.py): every request
// body, chunked and gzip-encoded ones included, goes to git-http-backend as
// it arrives. No authentication. CC_SKIP-worthy failures throw.
class StreamUpstream {
public:
    StreamUpstream();
    ~StreamUpstream();
    StreamUpstream(const StreamUpstream&) = delete;
    StreamUpstream& operator=(const StreamUpstream&) = delete;
    std::string base() const;  // http://127.0.0.1:P/git
    int port() const { return port_; }
    std::string create_repo(const std::string& owner_name);  // bare repo path
    std::string ref(const std::string& owner_name, const std::string& ref) const;

private:
    std::string dir_;
    int port_ = 0;
    pid_t pid_ = -1;
};

// A front for an upstream that dies mid-push: every request but a
// git-receive-pack POST is relayed to `upstream_port` (one request per
// connection: "Connection: close" is added); a receive-pack POST is read for
// `cut_after` bytes of its body and then the connection is closed with no
// answer, as a host that crashes or restarts under a push does. With
// `upload_delay_ms`, each fetch request (git-upload-pack) waits that long
// before it is relayed: a slow upstream, so that a test can look at the
// processes a fetch runs while they run.
class DyingFront {
public:
    DyingFront(int upstream_port, std::size_t cut_after, int upload_delay_ms = 0);
    ~DyingFront();
    DyingFront(const DyingFront&) = delete;
    DyingFront& operator=(const DyingFront&) = delete;
    std::string base() const { return "http://127.0.0.1:" + std::to_string(port_) + "/git"; }
    int cuts() const { return cuts_.load(); }

private:
    void serve(int fd);
    int upstream_port_, port_ = 0, listener_ = -1;
    std::size_t cut_after_;
    int upload_delay_ms_ = 0;
    std::atomic<int> cuts_{0};
    std::atomic<bool> stop_{false};
    std::thread loop_;
};

// The cc-pushgate binary, stdout and stderr to files in the scratch dir.
class Gateway {
public:
    explicit Gateway(const std::vector<std::string>& args);
    ~Gateway();
    Gateway(const Gateway&) = delete;
    Gateway& operator=(const Gateway&) = delete;

    const std::string& url() const { return url_; }  // http://127.0.0.1:P/
    std::string push_url(const std::string& owner_name) const { return url_ + "github.com/" + owner_name + ".git"; }
    int port() const;
    // A request target on this gateway: "/<secret>/" + p without its leading '/'.
    std::string path(const std::string& p) const { return url_.substr(url_.find('/', 7)) + p.substr(1); }
    // The Host header value git would send.
    std::string host() const { return "127.0.0.1:" + std::to_string(port()); }
    std::string stdout_text() const;
    std::string stderr_text() const;
    // SIGTERM, wait; returns the exit status.
    int stop();
    pid_t pid() const { return pid_; }

private:
    std::string out_, err_, url_;
    pid_t pid_ = -1;
};

// git with a clean environment: no global/system config, no prompts.
RunResult git(const std::vector<std::string>& args, const std::string& cwd,
              const std::map<std::string, std::string>& extra_env = {});
// A fresh work repo with one commit on `main`; returns its path.
std::string work_repo(const std::string& name);
// Commit a new file in `repo`; returns the new HEAD.
std::string commit(const std::string& repo, const std::string& file, const std::string& text);
// A TCP socket bound to 127.0.0.1 on a free port (not listening yet).
int bound_loopback_socket(int* port);
// A free TCP port on 127.0.0.1 (bound, read, closed).
int free_port();
std::string read_file(const std::string& path);
// lighttpd, git and git-http-backend are all there.
bool have_rig();
// A work repo whose origin is https://github.com/<repo>.git, with the gateway's
// git configuration (from `cc-pushgate git-config`) included as the man page says.
std::string agent_repo(const std::string& name, const Gateway& g, const std::string& repo = "acme/demo");
// HEAD of a work repo.
std::string head(const std::string& repo);
// The gateway's event lines of `kind`, once its log has stopped growing (at most 5 s).
std::vector<nlohmann::json> events(const Gateway& g, const std::string& kind);
// One raw HTTP exchange: send, then read until the peer closes.
std::string http_raw(int port, const std::string& request);
// The same, sent in parts ending at `cuts` (then the rest), `pause_ms` apart:
// a slow client.
std::string http_raw_in_parts(int port, const std::string& request, const std::vector<std::size_t>& cuts, int pause_ms);
void write_file(const std::string& path, const std::string& text, unsigned mode = 0644);

}  // namespace cc::test::rig
