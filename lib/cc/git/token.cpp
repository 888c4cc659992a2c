#include "cc/git/token.hpp"
#include "cc/core/child.hpp"

#include <curl/curl.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <iostream>
#include <mutex>

#include "cc/core/io.hpp"
#include "cc/core/tool.hpp"
#include "cc/core/json_writer.hpp"

namespace cc::git {

namespace bp = boost::process;

std::string base64url(std::string_view data) {
    static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::size_t i = 0;
    auto byte = [&](std::size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(data[k])); };
    for (; i + 2 < data.size(); i += 3) {
        unsigned v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
        out += tbl[v >> 18 & 63];
        out += tbl[v >> 12 & 63];
        out += tbl[v >> 6 & 63];
        out += tbl[v & 63];
    }
    if (data.size() - i == 1) {
        unsigned v = byte(i) << 16;
        out += tbl[v >> 18 & 63];
        out += tbl[v >> 12 & 63];
    } else if (data.size() - i == 2) {
        unsigned v = byte(i) << 16 | byte(i + 1) << 8;
        out += tbl[v >> 18 & 63];
        out += tbl[v >> 12 & 63];
        out += tbl[v >> 6 & 63];
    }
    return out;
}

Status check_token(const std::string& token, const std::string& subject) {
    if (token.empty()) return io_error(subject, "gave an empty token", 0);
    if (token.size() > 4096) return io_error(subject, "gave a token longer than 4096 bytes", 0);
    if (std::any_of(token.begin(), token.end(), [](unsigned char c) { return c < 0x21 || c == 0x7f; }))
        return io_error(subject, "gave a token with blanks or control characters", 0);
    return ok();
}

namespace {

std::string first_line(const std::string& s) {
    std::string line = s.substr(0, s.find('\n'));
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    std::size_t b = line.find_first_not_of(" \t");
    return b == std::string::npos ? std::string() : line.substr(b);
}

class CommandSource final : public TokenSource {
public:
    CommandSource(std::vector<std::string> argv, std::chrono::milliseconds timeout)
        : argv_(std::move(argv)), timeout_(timeout) {}
    std::string kind() const override { return "command"; }

    Result<std::string> token(const std::string& owner, const std::string& name) override {
        std::string subject = "token command '" + argv_[0] + "'";
        cc::child::Spec run;
        run.argv = argv_;
        // The gateway's environment without git's variables, and the repository asked about.
        run.env = cc::child::environment_of(cc::child::not_git);
        run.env["CC_PUSHGATE_REPO"] = owner + "/" + name;
        run.deadline = timeout_;
        run.output_cap = 64 * 1024;
        auto done = cc::child::run(run);
        if (!done) return io_error(subject, "could not run: " + done.error().message, 0);
        if (done->late) return io_error(subject, "gave no token within " + std::to_string(timeout_.count()) + " ms", 0);
        int code = done->status;
        const std::string& out_text = done->out;
        const std::string& err_text = done->err;
        if (code != 0) {
            // Its stderr goes to the operator's log only: a failing secret
            // helper may print what it holds, and this message reaches the agent.
            std::string why = first_line(err_text);
            if (!why.empty()) std::cerr << cc::tool::log_prefix("cc-pushgate") << subject << " stderr: " << why.substr(0, 200) << '\n';
            return io_error(subject, "exited with status " + std::to_string(code) + " (its stderr is in the gateway's log)", 0);
        }
        std::string tok = first_line(out_text);
        if (auto s = check_token(tok, subject); !s) return s.error();
        return tok;
    }

private:
    std::vector<std::string> argv_;
    std::chrono::milliseconds timeout_;
};

class FileSource final : public TokenSource {
public:
    explicit FileSource(std::string path) : path_(std::move(path)) {}
    std::string kind() const override { return "file"; }
    Result<std::string> token(const std::string&, const std::string&) override {
        auto text = io::read_input(path_);
        if (!text) return text.error();
        std::string tok = first_line(*text);
        if (auto s = check_token(tok, "token file '" + path_ + "'"); !s) return s.error();
        return tok;
    }

private:
    std::string path_;
};

size_t collect(char* p, size_t size, size_t n, void* ud) {
    auto* s = static_cast<std::string*>(ud);
    if (s->size() + size * n > (1u << 20)) return 0;  // an API answer is small
    s->append(p, size * n);
    return size * n;
}

struct HttpAnswer {
    long status = 0;
    std::string body;
};

Result<HttpAnswer> api_call(const std::string& method, const std::string& url, const std::string& auth,
                            const std::string& body, std::chrono::milliseconds timeout) {
    CURL* c = curl_easy_init();
    if (!c) return io_error(url, "curl_easy_init failed", 0);
    HttpAnswer a;
    curl_slist* h = nullptr;
    h = curl_slist_append(h, ("Authorization: " + auth).c_str());
    h = curl_slist_append(h, "Accept: application/vnd.github+json");
    h = curl_slist_append(h, "X-GitHub-Api-Version: 2022-11-28");
    h = curl_slist_append(h, "User-Agent: cc-pushgate/" CC_VERSION);
    if (!body.empty()) h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
    if (method == "POST") {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &a.body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) return io_error(url, curl_easy_strerror(rc), 0);
    return a;
}

class AppSource final : public TokenSource {
public:
    explicit AppSource(AppConfig cfg) : cfg_(std::move(cfg)) {
        while (!cfg_.api_url.empty() && cfg_.api_url.back() == '/') cfg_.api_url.pop_back();
    }
    std::string kind() const override { return "github-app"; }

    Result<std::string> token(const std::string&, const std::string& name) override {
        auto jwt = make_app_jwt(cfg_.key_pem, cfg_.app_id, std::time(nullptr));
        if (!jwt) return jwt.error();
        std::string url = cfg_.api_url + "/app/installations/" + cfg_.installation_id + "/access_tokens";
        nlohmann::json req = {{"repositories", {name}}, {"permissions", {{"contents", "write"}}}};
        auto a = api_call("POST", url, "Bearer " + *jwt, cc::json::write(req), cfg_.timeout);
        if (!a) return io_error("GitHub App token minting", a.error().message, 0);
        if (a->status != 201 && a->status != 200)
            return io_error("GitHub App token minting", "API answered HTTP " + std::to_string(a->status), 0);
        auto j = nlohmann::json::parse(a->body, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("token") || !j["token"].is_string())
            return io_error("GitHub App token minting", "API answer has no token", 0);
        std::string tok = j["token"].get<std::string>();
        if (auto s = check_token(tok, "GitHub App token minting"); !s) return s.error();
        std::lock_guard<std::mutex> lock(mu_);
        minted_.push_back(tok);
        tell_watch("a:" + tok + "\n");
        return tok;
    }

    Status watch_for_exit() override {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) return io_error("revocation watch", "cannot make a pipe", errno);
        pid_t pid = ::fork();
        if (pid < 0) {
            ::close(fds[0]);
            ::close(fds[1]);
            return io_error("revocation watch", "cannot fork", errno);
        }
        if (pid == 0) {
            ::close(fds[1]);
            watch_loop(fds[0]);  // never returns
        }
        ::close(fds[0]);
        watch_fd_ = fds[1];
        watch_pid_ = pid;
        return ok();
    }

    nlohmann::json revoke_all() override {
        std::vector<std::string> toks;
        {
            std::lock_guard<std::mutex> lock(mu_);
            toks.swap(minted_);
        }
        nlohmann::json out = revoke(toks);
        // Revoked here: the watch forgets exactly these (one minted since,
        // by a push still in flight, stays its to revoke), and goes.
        {
            std::lock_guard<std::mutex> lock(mu_);
            for (const auto& t : toks) tell_watch("r:" + t + "\n");
            if (watch_fd_ >= 0) ::close(watch_fd_), watch_fd_ = -1;
        }
        if (watch_pid_ > 0) {
            int st = 0;
            while (::waitpid(watch_pid_, &st, 0) < 0 && errno == EINTR) {
            }
            watch_pid_ = -1;
        }
        return out;
    }

    ~AppSource() override {
        if (watch_fd_ >= 0) ::close(watch_fd_);  // the watch revokes what is left
    }

private:
    nlohmann::json revoke(const std::vector<std::string>& toks) {
        int revoked = 0;
        nlohmann::json failures = nlohmann::json::array();
        for (std::size_t i = 0; i < toks.size(); ++i) {
            auto a = api_call("DELETE", cfg_.api_url + "/installation/token", "Bearer " + toks[i], "", cfg_.timeout);
            if (a && a->status == 204)
                ++revoked;
            else
                failures.push_back({{"index", i}, {"error", a ? "API answered HTTP " + std::to_string(a->status)
                                                              : a.error().message}});
        }
        return {{"minted", toks.size()}, {"revoked", revoked}, {"failures", failures}};
    }

    // Under mu_. A watch that is gone (it could not be started, or died)
    // leaves revocation to revoke_all(), as before.
    void tell_watch(const std::string& line) {
        if (watch_fd_ < 0) return;
        if (io::write_all(watch_fd_, line) != 0) {
            ::close(watch_fd_);
            watch_fd_ = -1;
        }
    }

    // The forked watch: reads "a:TOKEN\n" per minted token and "r:TOKEN\n"
    // for each the gateway revoked itself (a token holds no newline). At end of file (the gateway's
    // process ended, however it ended) it revokes what it holds and exits.
    [[noreturn]] void watch_loop(int fd) {
        ::signal(SIGINT, SIG_IGN);  // a ^C to the process group is for the gateway, which tells us
        ::signal(SIGTERM, SIG_IGN);
        ::signal(SIGPIPE, SIG_IGN);
        for (int other = 3; other < 1024; ++other)
            if (other != fd) ::close(other);  // not the listener, not a client: only the pipe
        ::close(0);
        ::close(1);  // stdout is the gateway's JSON stream: the watch never writes there
        std::vector<std::string> held;
        std::string buf;
        char chunk[4096];
        for (;;) {
            ssize_t n = ::read(fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            buf.append(chunk, static_cast<std::size_t>(n));
            for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n')) {
                std::string line = buf.substr(0, nl);
                buf.erase(0, nl + 1);
                if (line.rfind("r:", 0) == 0)
                    held.erase(std::remove(held.begin(), held.end(), line.substr(2)), held.end());
                else if (line.rfind("a:", 0) == 0)
                    held.push_back(line.substr(2));
            }
        }
        if (!held.empty()) {
            auto r = revoke(held);
            tool::log("cc-pushgate", "the gateway ended without revoking its tokens: the revocation watch revoked " +
                                         std::to_string(r["revoked"].get<int>()) + " of " +
                                         std::to_string(held.size()) + " minted");
        }
        ::_exit(0);
    }

    int watch_fd_ = -1;
    pid_t watch_pid_ = -1;
    AppConfig cfg_;
    std::mutex mu_;
    std::vector<std::string> minted_;
};

}  // namespace

std::unique_ptr<TokenSource> command_token_source(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
    return std::make_unique<CommandSource>(std::move(argv), timeout);
}

std::unique_ptr<TokenSource> file_token_source(std::string path) {
    return std::make_unique<FileSource>(std::move(path));
}

namespace {
struct PkeyDeleter {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

Result<Pkey> load_key(const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    if (!bio) return io_error("app key", "out of memory", 0);
    EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (!k) return input_error("--app-key", "is not a PEM private key");
    if (EVP_PKEY_base_id(k) != EVP_PKEY_RSA) {
        EVP_PKEY_free(k);
        return input_error("--app-key", "is not an RSA key (GitHub Apps sign with RS256)");
    }
    return Pkey(k);
}
}  // namespace

Result<std::string> make_app_jwt(const std::string& key_pem, const std::string& app_id, std::time_t now) {
    auto key = load_key(key_pem);
    if (!key) return key.error();
    nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
    nlohmann::json claims = {{"iat", static_cast<long long>(now) - 60},
                             {"exp", static_cast<long long>(now) + 540},
                             {"iss", app_id}};
    std::string signing_input = base64url(cc::json::write(header)) + "." + base64url(cc::json::write(claims));
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (!ctx) return io_error("jwt", "out of memory", 0);
    std::size_t len = 0;
    std::string sig;
    bool good = EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key->get()) == 1 &&
                EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(signing_input.data()),
                               signing_input.size()) == 1;
    if (good) {
        sig.resize(len);
        good = EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                              reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size()) == 1;
        sig.resize(len);
    }
    EVP_MD_CTX_free(ctx);
    if (!good) return io_error("jwt", "RS256 signing failed", 0);
    return signing_input + "." + base64url(sig);
}

Result<std::unique_ptr<TokenSource>> app_token_source(AppConfig config) {
    if (auto k = load_key(config.key_pem); !k) return k.error();
    if (config.app_id.empty() || !std::all_of(config.app_id.begin(), config.app_id.end(), ::isdigit))
        return input_error("--app-id", "must be a number");
    if (config.installation_id.empty() ||
        !std::all_of(config.installation_id.begin(), config.installation_id.end(), ::isdigit))
        return input_error("--installation-id", "must be a number");
    return std::unique_ptr<TokenSource>(std::make_unique<AppSource>(std::move(config)));
}

}  // namespace cc::git
