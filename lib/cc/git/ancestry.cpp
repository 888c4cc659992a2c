#include "cc/git/ancestry.hpp"
#include "cc/core/child.hpp"
#include "cc/fs/unique_fd.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process.hpp>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <set>
#include <functional>
#include <future>
#include <fstream>

#include "cc/git/pack_scan.hpp"
#include "cc/git/receive_pack.hpp"

namespace cc::git {

namespace bp = boost::process;
namespace fs = std::filesystem;

namespace {

// `git cat-file --batch` output, "<oid> <type> <size>\n<content>\n" for
// each object in the order asked: `each(oid, type, content)` for every whole
// one, until one is cut short.
void each_batch_object(const std::string& body,
                       const std::function<void(const std::string&, const std::string&, std::string)>& each) {
    for (std::size_t pos = 0; pos < body.size();) {
        auto end = body.find('\n', pos);
        if (end == std::string::npos) break;
        std::istringstream head(body.substr(pos, end - pos));
        std::string oid, type;
        std::size_t size = 0;
        if (!(head >> oid >> type >> size) || end + 1 + size > body.size()) break;
        each(oid, type, body.substr(end + 1, size));
        pos = end + 1 + size + 1;
    }
}

std::string base64(std::string_view in) {
    static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                     static_cast<unsigned char>(in[i + 2]);
        for (int s = 18; s >= 0; s -= 6) out.push_back(abc[(v >> s) & 63]);
    }
    if (i < in.size()) {
        unsigned v = static_cast<unsigned char>(in[i]) << 16;
        if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
        out.push_back(abc[(v >> 18) & 63]);
        out.push_back(abc[(v >> 12) & 63]);
        out.push_back(i + 1 < in.size() ? abc[(v >> 6) & 63] : '=');
        out.push_back('=');
    }
    return out;
}

// What of the gateway's own environment a git child gets: the locale, where
// programs and temporary files are, and how the upstream is reached (proxy,
// TLS roots). Nothing else: an inherited GIT_OBJECT_DIRECTORY, GIT_CONFIG_*,
// GIT_EXEC_PATH or GIT_SSH_COMMAND would point the mirror's git elsewhere.
bool passed_to_git(const std::string& name) {
    static const char* exact[] = {"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ", "http_proxy", "https_proxy",
                                  "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
                                  "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "CURL_CA_BUNDLE"};
    for (const char* e : exact)
        if (name == e) return true;
    return name.rfind("LC_", 0) == 0;
}

// A git child that has not finished by then is killed: a stalled fetch must
// not hold a repository's lock (and a push's thread) forever.
constexpr auto git_deadline = std::chrono::seconds(300);

using Env = std::map<std::string, std::string>;

Env git_env(const std::string& git_dir) {
    Env env = cc::child::environment_of(passed_to_git);
    env["GIT_DIR"] = git_dir;
    // History as the objects say it is: a replace ref or a graft planted in
    // the mirror cannot turn a rewrite into an "update".
    env["GIT_NO_REPLACE_OBJECTS"] = "1";
    env["GIT_GRAFT_FILE"] = "/dev/null";
    env["GIT_TERMINAL_PROMPT"] = "0";
    env["GIT_CONFIG_NOSYSTEM"] = "1";
    env["GIT_CONFIG_GLOBAL"] = "/dev/null";
    return env;
}

// Runs git with `input` on its stdin (through the one child helper: this
// environment only, none of the gateway's descriptors, the deadline); its
// stdout in `out` when asked, stderr's first line in `err`.
Result<int> run_git_io(const std::vector<std::string>& args, const Env& env, const std::string& input,
                       std::string* out, std::string* err, int fd3 = -1) {
    cc::child::Spec run;
    if (fd3 >= 0) run.pass_fds = {fd3};
    run.argv.push_back("git");
    run.argv.insert(run.argv.end(), args.begin(), args.end());
    run.env = env;
    run.input = input;
    run.deadline = git_deadline;
    run.capture_out = out != nullptr;
    run.output_cap = ~std::size_t{0};  // blobs for content rules, object lists: read whole
    auto done = cc::child::run(run);
    if (!done) return done.error();
    if (done->late) return io_error("git " + args.front(), "no answer within the deadline (killed)", 0);
    if (out) *out = std::move(done->out);
    if (err) *err = done->err.substr(0, done->err.find('\n'));
    return done->status;
}

Result<int> run_git_io(const std::vector<std::string>& args, const Env& env, const std::string& input,
                       std::string& out, std::string* err) {
    return run_git_io(args, env, input, &out, err);
}

// Runs git to completion; its exit status, with stderr's first line in `err`.
Result<int> run_git(const std::vector<std::string>& args, const Env& env, std::string* err, int fd3 = -1) {
    return run_git_io(args, env, "", nullptr, err, fd3);
}

std::string auth_header(const std::string& token);

// The upstream token for a git child, never in its argv or environment: a
// configuration file held in memory, given to the child as descriptor 3
// and named by GIT_CONFIG_GLOBAL=/dev/fd/3 (each git process it starts,
// git-remote-http included, opens it anew from the start).
struct TokenConfig {
    cc::fs::UniqueFd fd;
    static Result<TokenConfig> make(const std::string& token, Env& env) {
        TokenConfig t;
        std::string text = "[http]\n\textraHeader = " + auth_header(token) + "\n";
#ifdef __linux__
        t.fd.reset(static_cast<int>(::syscall(SYS_memfd_create, "cc-pushgate-upstream", 1U /* MFD_CLOEXEC */)));
        if (!t.fd) return io_error("upstream token for git", "memfd_create");
        if (::write(t.fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
            ::lseek(t.fd.get(), 0, SEEK_SET) != 0)
            return io_error("upstream token for git", "write");
        env["GIT_CONFIG_GLOBAL"] = "/dev/fd/3";
#else
        // Elsewhere /dev/fd/N shares the one offset: the environment, as before.
        env["GIT_CONFIG_COUNT"] = "1";
        env["GIT_CONFIG_KEY_0"] = "http.extraHeader";
        env["GIT_CONFIG_VALUE_0"] = auth_header(token);
#endif
        return t;
    }
};

std::string auth_header(const std::string& token) {
    return "Authorization: Basic " + base64("x-access-token:" + token);
}


}  // namespace

Result<Mirror> Mirror::open(const std::string& state_dir, const std::string& repo_key) {
    Mirror m;
    m.dir_ = state_dir + "/" + repo_key + ".git";
    std::error_code ec;
    if (fs::exists(m.dir_ + "/objects", ec)) return m;
    fs::create_directories(m.dir_, ec);
    if (ec) return io_error("mirror '" + m.dir_ + "'", ec.message(), ec.value());
    std::string err;
    auto rc = run_git({"init", "-q", "--bare", m.dir_}, git_env(m.dir_), &err);
    if (!rc) return rc.error();
    if (*rc != 0) return io_error("mirror '" + m.dir_ + "'", "git init failed: " + one_line(err, 200), 0);
    return m;
}

Status Mirror::ensure(const std::string& oid, const std::string& url, const std::string& ref,
                      const std::string& token) const {
    auto env = git_env(dir_);
    auto have = run_git({"cat-file", "-e", oid + "^{commit}"}, env, nullptr);
    if (!have) return have.error();
    if (*have == 0) return ok();
    auto tc = TokenConfig::make(token, env);
    if (!tc) return tc.error();
    std::string err;
    auto rc = run_git({"fetch", "-q", "--no-tags", "--no-write-fetch-head", url, "+" + ref + ":refs/cc-old/" + ref},
                      env, &err, tc->fd.get());
    if (!rc) return rc.error();
    if (*rc != 0) return io_error("mirror fetch of " + ref, "git fetch failed: " + one_line(err, 200), 0);
    auto again = run_git({"cat-file", "-e", oid + "^{commit}"}, git_env(dir_), nullptr);
    if (!again) return again.error();
    if (*again != 0) return io_error("mirror", "the upstream's " + ref + " is not " + oid.substr(0, 12), 0);
    return ok();
}

Result<std::string> Mirror::fetch_head(const std::string& url, const std::string& token) const {
    auto env = git_env(dir_);
    auto tc = TokenConfig::make(token, env);
    if (!tc) return tc.error();
    std::string out, err;
    // An empty upstream has no HEAD to fetch: no base, not an error.
    auto listed = run_git_io({"ls-remote", "--symref", url, "HEAD"}, env, "", &out, &err, tc->fd.get());
    if (!listed) return listed.error();
    if (*listed != 0) return io_error("mirror", "git ls-remote failed: " + one_line(err, 200), 0);
    // "ref: refs/heads/main\tHEAD" alone is an unborn HEAD: nothing to fetch.
    bool born = false;
    for (std::size_t pos = 0; pos < out.size();) {
        auto end = out.find('\n', pos);
        if (end == std::string::npos) end = out.size();
        std::string line = out.substr(pos, end - pos);
        if (line.rfind("ref: ", 0) != 0 && line.size() > 5 && line.substr(line.size() - 5) == "\tHEAD") born = true;
        pos = end + 1;
    }
    if (!born) return std::string();
    auto rc = run_git({"fetch", "-q", "--no-tags", "--no-write-fetch-head", url, "+HEAD:refs/cc-old/HEAD"}, env, &err,
                      tc->fd.get());
    if (!rc) return rc.error();
    if (*rc != 0) return io_error("mirror fetch of HEAD", "git fetch failed: " + one_line(err, 200), 0);
    auto parsed = run_git_io({"rev-parse", "--verify", "refs/cc-old/HEAD^{commit}"}, git_env(dir_), "", out, &err);
    if (!parsed) return parsed.error();
    if (*parsed != 0) return io_error("mirror", "no commit at the upstream's HEAD", 0);
    return out.substr(0, out.find('\n'));
}

Status Mirror::fetch_oids(const std::vector<std::string>& oids, const std::string& url,
                          const std::string& token) const {
    if (oids.empty()) return ok();
    auto env = git_env(dir_);
    auto tc = TokenConfig::make(token, env);
    if (!tc) return tc.error();
    // Each under a ref of its own, so the mirror keeps it (and what it reaches).
    std::vector<std::string> args = {"fetch", "-q", "--no-tags", "--no-write-fetch-head", url};
    for (const auto& o : oids) args.push_back(o + ":refs/cc-seen/" + o);
    std::string err;
    auto rc = run_git(args, env, &err, tc->fd.get());
    if (!rc) return rc.error();
    if (*rc != 0) return io_error("mirror fetch of " + std::to_string(oids.size()) + " commit(s)",
                                  "git fetch failed: " + one_line(err, 200), 0);
    return ok();
}

struct Quarantine::Impl {
    std::string mirror, dir, err_file;
    Mirror source_mirror;
    Source src;
    bool whole = false;
    bp::opstream in;  // index-pack's stdin (whole), written through its fd
    bp::child child;
    PackScanner scan;
    std::optional<Error> scan_error;
    bool finished = false;
    int lock_fd = -1;  // flock held for the quarantine's life (ends with the process, however it ends)

    Env env() const {
        auto e = git_env(mirror);
        e["GIT_OBJECT_DIRECTORY"] = dir;
        e["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = mirror + "/objects";
        return e;
    }
};

Quarantine::Quarantine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Quarantine::~Quarantine() {
    if (!impl_) return;
    if (impl_->child.valid() && impl_->child.running()) {
        impl_->in.pipe().close();
        std::error_code ec;
        impl_->child.terminate(ec);
    }
    std::error_code ec;
    fs::remove_all(impl_->dir, ec);
    if (impl_->lock_fd >= 0) ::close(impl_->lock_fd);
}

namespace {

// A quarantine left by a gateway that was killed: nobody holds its lock
// (flock ends with the process), or it has none and is older than a minute
// (the moment between mkdtemp and taking the lock).
bool stale_quarantine(const fs::path& dir) {
    int fd = ::open((dir / ".lock").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        struct stat st {};
        if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
        return st.st_mtime + 60 < ::time(nullptr);
    }
    bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return free;
}

}  // namespace

std::size_t sweep_quarantines(const std::string& objects_dir) {
    std::size_t removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(objects_dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (name.rfind("incoming-", 0) != 0 || !it->is_directory(ec) || it->is_symlink(ec)) continue;
        if (!stale_quarantine(it->path())) continue;
        std::error_code rm;
        fs::remove_all(it->path(), rm);
        if (!rm) ++removed;
    }
    return removed;
}

std::size_t sweep_all_quarantines(const std::string& mirror_dir) {
    std::size_t removed = 0;
    std::error_code ec;
    fs::recursive_directory_iterator it(mirror_dir, fs::directory_options::none, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        if (it.depth() > 4) {
            it.disable_recursion_pending();
            continue;
        }
        if (!it->is_directory(ec) || it->is_symlink(ec)) continue;
        if (it->path().filename() == "objects" && it->path().parent_path().extension() == ".git") {
            removed += sweep_quarantines(it->path().string());
            it.disable_recursion_pending();
        }
    }
    return removed;
}

Result<std::unique_ptr<Quarantine>> Quarantine::start(const Mirror& m, Source src, bool whole) {
    // Before each push: what a killed gateway left in this mirror goes.
    sweep_quarantines(m.dir() + "/objects");
    auto impl = std::make_unique<Impl>();
    impl->mirror = m.dir();
    impl->source_mirror = m;
    impl->src = std::move(src);
    impl->whole = whole;
    std::string tmpl = m.dir() + "/objects/incoming-XXXXXX";
    if (!::mkdtemp(tmpl.data())) return io_error("quarantine in '" + m.dir() + "'", "mkdtemp failed");
    impl->dir = tmpl;
    impl->lock_fd = ::open((impl->dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (impl->lock_fd < 0 || ::flock(impl->lock_fd, LOCK_EX) != 0) {
        int e = errno;
        if (impl->lock_fd >= 0) ::close(impl->lock_fd);
        std::error_code rm;
        fs::remove_all(impl->dir, rm);
        return io_error("quarantine lock in '" + impl->dir + "'", "cannot take", e);
    }
    impl->err_file = impl->dir + "/index-pack.err";
    fs::create_directories(impl->dir + "/pack");
    if (!whole) return std::unique_ptr<Quarantine>(new Quarantine(std::move(impl)));
    // The quarantine is thrown away when its push ends: flushing its pack to
    // disk (git's default since 2.36) would only add to every checked push.
    try {
        auto exe = bp::search_path("git");
        if (exe.empty()) return io_error("git", "not found on PATH", 0);
        bp::environment env;
        for (const auto& [k, v] : impl->env()) env.set(k, v);
        impl->child = bp::child(exe, bp::args({"-c", "core.fsync=none", "index-pack", "--stdin", "--fix-thin"}),
                                env, bp::std_in < impl->in, bp::std_out > bp::null,
                                bp::std_err > impl->err_file);
        // A deeper pipe lets index-pack fall behind for a moment without
        // stalling the stream upstream.
        ::fcntl(impl->in.pipe().native_sink(), F_SETPIPE_SZ, 1 << 20);
    } catch (const std::exception& e) {
        std::error_code ec;
        fs::remove_all(impl->dir, ec);
        return io_error("git index-pack", std::string("could not run: ") + e.what(), 0);
    }
    return std::unique_ptr<Quarantine>(new Quarantine(std::move(impl)));
}

std::optional<std::uint64_t> Quarantine::trailer_offset() const { return impl_->scan.trailer_offset(); }
bool Quarantine::scan_failed() const { return impl_->scan_error.has_value(); }

Status Quarantine::write(std::string_view bytes) {
    if (impl_->finished) return io_error("quarantine", "written after its end", 0);
    if (!impl_->scan_error)
        if (auto s = impl_->scan.feed(bytes); !s) impl_->scan_error = s.error();
    if (!impl_->whole) return ok();
    int fd = impl_->in.pipe().native_sink();
    while (!bytes.empty()) {
        ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return io_error("git index-pack", "stopped reading the pack", errno);
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return ok();
}

namespace {

// Commit ids a commit or tag names: its parents, a tag's commit.
void named_commits(const PackObject& o, std::vector<std::string>& out) {
    std::string_view d = o.data;
    bool tag_of_commit = false;
    std::string tag_object;
    for (std::size_t pos = 0; pos < d.size();) {
        auto end = d.find('\n', pos);
        if (end == std::string_view::npos) end = d.size();
        std::string_view line = d.substr(pos, end - pos);
        if (line.empty()) break;  // the headers end
        if (o.type == 1 && line.rfind("parent ", 0) == 0) out.emplace_back(line.substr(7));
        if (o.type == 4 && line.rfind("object ", 0) == 0) tag_object = std::string(line.substr(7));
        if (o.type == 4 && line == "type commit") tag_of_commit = true;
        pos = end + 1;
    }
    if (tag_of_commit && !tag_object.empty()) out.push_back(tag_object);
}

}  // namespace

Status Quarantine::finish(const std::vector<std::string>& tips) {
    if (impl_->finished) return ok();
    impl_->finished = true;
    if (!impl_->scan_error)
        if (auto s = impl_->scan.finish(); !s) impl_->scan_error = s.error();
    if (impl_->whole) {
        impl_->in.pipe().close();
        std::error_code ec;
        impl_->child.wait(ec);
        int code = impl_->child.exit_code();
        if (ec || code != 0) {
            std::ifstream in(impl_->err_file);
            std::string line;
            std::getline(in, line);
            return io_error("git index-pack",
                            "refused the pack (status " + std::to_string(code) + "): " + one_line(line, 200), 0);
        }
    }
    if (impl_->scan_error) return io_error("pack", impl_->scan_error->one_line(), 0);
    auto env = impl_->env();
    std::string out, err;
    // Deltas on objects outside the pack (a thin pack): their bases from the mirror.
    impl_->scan.resolve([&](const std::vector<std::string>& oids) {
        std::map<std::string, PackObject> found;
        std::string in, listed;
        for (const auto& o : oids) in += o + "\n";
        auto t = run_git_io({"cat-file", "--batch-check=%(objectname) %(objecttype)"}, env, in, listed, nullptr);
        if (!t || *t != 0) return found;
        std::string wanted;
        for (std::size_t pos = 0; pos < listed.size();) {
            auto end = listed.find('\n', pos);
            if (end == std::string::npos) end = listed.size();
            std::string line = listed.substr(pos, end - pos);
            pos = end + 1;
            auto sp = line.find(' ');
            if (sp == std::string::npos) continue;
            std::string oid = line.substr(0, sp), type = line.substr(sp + 1);
            if (type == "commit" || type == "tag") wanted += oid + "\n";
            else if (type != "missing") found[oid] = PackObject{2, {}};  // no commit: nothing to apply
        }
        if (wanted.empty()) return found;
        // "<oid> <type> <size>\n<content>\n" for each.
        std::string body;
        auto b = run_git_io({"cat-file", "--batch"}, env, wanted, body, nullptr);
        if (!b || *b != 0) return found;
        each_batch_object(body, [&](const std::string& oid, const std::string& type, std::string data) {
            found[oid] = PackObject{type == "commit" ? 1 : 4, std::move(data)};
        });
        return found;
    });
    if (!impl_->whole && !impl_->scan.objects().empty()) {
        // The commits and tags alone, hashed and indexed by git itself.
        auto rc = run_git_io({"-c", "core.fsync=none", "index-pack", "--stdin"}, env,
                             commit_pack(impl_->scan.objects()), out, &err);
        if (!rc) return rc.error();
        if (*rc != 0) return io_error("git index-pack", "refused the pack's commits: " + one_line(err, 200), 0);
    }
    // What the pushed commits name that neither the pack nor the mirror has.
    std::vector<std::string> named = tips;
    for (const auto& o : impl_->scan.objects()) named_commits(o, named);
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    auto missing = [&]() -> Result<std::vector<std::string>> {
        std::string in;
        for (const auto& n : named) in += n + "\n";
        std::string got;
        auto rc = run_git_io({"cat-file", "--batch-check=%(objectname) %(objecttype)"}, env, in, got, &err);
        if (!rc) return rc.error();
        if (*rc != 0) return io_error("git cat-file", one_line(err, 200), 0);
        std::vector<std::string> m;
        for (std::size_t pos = 0; pos < got.size();) {
            auto end = got.find('\n', pos);
            if (end == std::string::npos) end = got.size();
            std::string line = got.substr(pos, end - pos);
            if (line.size() > 8 && line.substr(line.size() - 8) == " missing") m.push_back(line.substr(0, line.find(' ')));
            pos = end + 1;
        }
        return m;
    };
    auto lacking = missing();
    if (!lacking) return lacking.error();
    if (lacking->empty()) return ok();
    // Valid ids only go on a command line.
    for (const auto& o : *lacking)
        if (o.size() != 40 || o.find_first_not_of("0123456789abcdef") != std::string::npos)
            return io_error("pack", "a commit names '" + one_line(o, 60) + "', which is no object id", 0);
    if (auto f = impl_->source_mirror.fetch_oids(*lacking, impl_->src.url, impl_->src.token); !f) return f;
    return ok();
}

Result<bool> Quarantine::is_ancestor(const std::string& old_oid, const std::string& new_oid) const {
    auto env = git_env(impl_->mirror);
    env["GIT_OBJECT_DIRECTORY"] = impl_->dir;
    env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = impl_->mirror + "/objects";
    std::string err;
    // merge-base reads a missing commit as a history that ends there ("not
    // an ancestor"): first make sure every commit between them is here.
    auto walk = run_git({"rev-list", "--quiet", new_oid, "--not", old_oid}, env, &err);
    if (!walk) return walk.error();
    if (*walk != 0)
        return io_error("git rev-list", "commits between " + old_oid.substr(0, 12) + " and " + new_oid.substr(0, 12) +
                                            " are missing: " + one_line(err, 200), 0);
    auto rc = run_git({"merge-base", "--is-ancestor", old_oid, new_oid}, env, &err);
    if (!rc) return rc.error();
    if (*rc == 0) return true;
    if (*rc == 1) return false;
    return io_error("git merge-base", "could not compare " + old_oid.substr(0, 12) + " and " + new_oid.substr(0, 12) +
                                          ": " + one_line(err, 200), 0);
}

namespace {

// A symbolic link's target as a path of the same tree (no "." or ".."
// left), or nullopt when it points outside it (absolute, or above the top).
std::optional<std::string> link_target(const std::string& link, const std::string& target) {
    if (target.empty() || target[0] == '/') return std::nullopt;
    std::vector<std::string> parts;
    auto slash = link.rfind('/');
    std::string whole = (slash == std::string::npos ? "" : link.substr(0, slash + 1)) + target;
    std::istringstream in(whole);
    for (std::string part; std::getline(in, part, '/');) {
        if (part.empty() || part == ".") continue;
        if (part == "..") {
            if (parts.empty()) return std::nullopt;
            parts.pop_back();
            continue;
        }
        parts.push_back(part);
    }
    if (parts.empty()) return std::nullopt;
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
    return out;
}

}  // namespace

Result<policy::PushContent> Quarantine::content(const std::string& base, const std::string& new_oid,
                                                bool from_merge_base) const {
    auto env = git_env(impl_->mirror);
    env["GIT_OBJECT_DIRECTORY"] = impl_->dir;
    env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = impl_->mirror + "/objects";
    std::string out, err;
    auto fail = [&](const std::string& what) {
        return io_error("git " + what, "could not read " + new_oid.substr(0, 12) + ": " + one_line(err, 200), 0);
    };
    policy::PushContent c;
    // A new branch off the upstream's default branch is read against their
    // merge base; without one, every file of the new tree counts.
    std::string from = base;
    if (!from.empty() && from_merge_base) {
        auto mb = run_git_io({"merge-base", from, new_oid}, env, "", out, &err);
        if (!mb) return mb.error();
        if (*mb > 1) return fail("merge-base");
        from = *mb == 0 ? out.substr(0, out.find('\n')) : std::string();
    }
    std::vector<std::string> paths_args = {"diff-tree", "-r", "-z", "--name-only", "--no-renames", from, new_oid};
    if (from.empty()) paths_args = {"ls-tree", "-r", "-z", "--name-only", "--full-tree", new_oid};
    auto rc = run_git_io(paths_args, env, "", out, &err);
    if (!rc) return rc.error();
    if (*rc != 0) return fail(paths_args[0]);
    std::set<std::string> changed;
    auto take_paths = [&] {
        for (std::size_t pos = 0; pos < out.size();) {
            auto end = out.find('\0', pos);
            if (end == std::string::npos) end = out.size();
            if (end > pos) changed.insert(out.substr(pos, end - pos));
            pos = end + 1;
        }
    };
    take_paths();
    // And every commit on the way: a file added in one commit and removed in
    // the next still lands in the upstream's history. Merges against each
    // parent.
    std::vector<std::string> log_args = {"log", "-z", "--format=", "--name-only", "--no-renames", "-m", new_oid};
    if (!from.empty()) log_args.insert(log_args.end(), {"--not", from});
    rc = run_git_io(log_args, env, "", out, &err);
    if (!rc) return rc.error();
    if (*rc != 0) return fail("log");
    take_paths();
    c.files = changed.size();
    // The new tree's symbolic links and submodules: a link makes what lies
    // at its target appear at its own path too (".github -> ci" puts
    // ci/workflows/x.yml at .github/workflows/x.yml), and a submodule the
    // update adds or moves brings files the push does not carry.
    rc = run_git_io({"ls-tree", "-r", "-z", "--full-tree", new_oid}, env, "", out, &err);
    if (!rc) return rc.error();
    if (*rc != 0) return fail("ls-tree");
    std::vector<std::pair<std::string, std::string>> links;  // path, blob
    for (std::size_t pos = 0; pos < out.size();) {
        auto end = out.find('\0', pos);
        if (end == std::string::npos) end = out.size();
        std::string entry = out.substr(pos, end - pos);
        pos = end + 1;
        auto tab = entry.find('\t');
        if (tab == std::string::npos || entry.size() < 7) continue;
        std::string mode = entry.substr(0, 6), path = entry.substr(tab + 1);
        if (mode == "160000" && changed.count(path)) c.opaque.push_back(path);
        if (mode == "120000") {
            auto sp = entry.rfind(' ', tab);
            if (sp != std::string::npos) links.emplace_back(path, entry.substr(sp + 1, tab - sp - 1));
        }
    }
    if (!links.empty()) {
        std::string in;
        for (const auto& l : links) in += l.second + "\n";
        std::string body;
        rc = run_git_io({"cat-file", "--batch"}, env, in, body, &err);
        if (!rc) return rc.error();
        if (*rc != 0) return fail("cat-file");
        std::vector<std::pair<std::string, std::string>> resolved;  // link path, target path in the tree
        std::size_t k = 0;
        each_batch_object(body, [&](const std::string&, const std::string&, std::string target) {
            if (k >= links.size()) return;
            const std::string& link = links[k++].first;
            if (auto t = link_target(link, target)) resolved.emplace_back(link, *t);
        });
        // Links to links: followed a few times over.
        for (int round = 0; round < 8; ++round) {
            std::vector<std::string> more;
            for (const auto& [link, target] : resolved)
                for (const auto& p : changed)
                    if (p.size() > target.size() && p.compare(0, target.size(), target) == 0 && p[target.size()] == '/') {
                        std::string alias = link + p.substr(target.size());
                        if (!changed.count(alias)) more.push_back(alias);
                    } else if (p == target && !changed.count(link)) {
                        more.push_back(link);
                    }
            if (more.empty()) break;
            changed.insert(more.begin(), more.end());
        }
    }
    c.paths.assign(changed.begin(), changed.end());
    std::vector<std::string> objects_args = {"rev-list", "--objects", "--no-object-names", new_oid};
    if (!from.empty()) objects_args.insert(objects_args.end(), {"--not", from});
    rc = run_git_io(objects_args, env, "", out, &err);
    if (!rc) return rc.error();
    if (*rc != 0) return fail("rev-list");
    std::string sizes;
    rc = run_git_io({"cat-file", "--batch-check=%(objecttype) %(objectsize)"}, env, out, sizes, &err);
    if (!rc) return rc.error();
    if (*rc != 0) return fail("cat-file");
    for (std::size_t pos = 0; pos < sizes.size();) {
        auto end = sizes.find('\n', pos);
        if (end == std::string::npos) end = sizes.size();
        std::string line = sizes.substr(pos, end - pos);
        if (line.rfind("blob ", 0) == 0) c.largest = std::max<std::uint64_t>(c.largest, std::stoull(line.substr(5)));
        else if (line.find(" missing") != std::string::npos) return fail("cat-file (an object is missing)");
        pos = end + 1;
    }
    return c;
}

}  // namespace cc::git
