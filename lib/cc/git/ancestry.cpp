#include "cc/git/ancestry.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>

#include <filesystem>
#include <future>
#include <fstream>

#include "cc/git/receive_pack.hpp"

namespace cc::git {

namespace bp = boost::process;
namespace fs = std::filesystem;

namespace {

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

bp::environment git_env(const std::string& git_dir) {
    bp::environment env = boost::this_process::environment();
    // set(), not operator[] (see token.cpp).
    env.set("GIT_DIR", git_dir);
    env.set("GIT_TERMINAL_PROMPT", "0");
    env.set("GIT_CONFIG_NOSYSTEM", "1");
    env.set("GIT_CONFIG_GLOBAL", "/dev/null");
    return env;
}

// Runs git to completion; its exit status, with stderr's first line in `err`.
Result<int> run_git(const std::vector<std::string>& args, const bp::environment& env, std::string* err) {
    try {
        auto exe = bp::search_path("git");
        if (exe.empty()) return io_error("git", "not found on PATH", 0);
        boost::asio::io_context ios;
        std::future<std::string> err_text;
        bp::child c(exe, bp::args(args), env, bp::std_in < bp::null, bp::std_out > bp::null, bp::std_err > err_text,
                    ios);
        ios.run();
        c.wait();
        if (err) {
            std::string e = err_text.get();
            *err = e.substr(0, e.find('\n'));
        }
        return c.exit_code();
    } catch (const std::exception& e) {
        return io_error("git", std::string("could not run: ") + e.what(), 0);
    }
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
    // The token travels as an http.extraHeader set through the environment
    // (GIT_CONFIG_COUNT), so no process listing shows it.
    env.set("GIT_CONFIG_COUNT", "1");
    env.set("GIT_CONFIG_KEY_0", "http.extraHeader");
    env.set("GIT_CONFIG_VALUE_0", "Authorization: Basic " + base64("x-access-token:" + token));
    std::string err;
    auto rc = run_git({"fetch", "-q", "--no-tags", "--no-write-fetch-head", url, "+" + ref + ":refs/cc-old/" + ref},
                      env, &err);
    if (!rc) return rc.error();
    if (*rc != 0) return io_error("mirror fetch of " + ref, "git fetch failed: " + one_line(err, 200), 0);
    auto again = run_git({"cat-file", "-e", oid + "^{commit}"}, git_env(dir_), nullptr);
    if (!again) return again.error();
    if (*again != 0) return io_error("mirror", "the upstream's " + ref + " is not " + oid.substr(0, 12), 0);
    return ok();
}

struct Quarantine::Impl {
    std::string mirror, dir, err_file;
    bp::opstream in;
    bp::child child;
    bool finished = false;
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
}

Result<std::unique_ptr<Quarantine>> Quarantine::start(const Mirror& m) {
    auto impl = std::make_unique<Impl>();
    impl->mirror = m.dir();
    std::string tmpl = m.dir() + "/objects/incoming-XXXXXX";
    if (!::mkdtemp(tmpl.data())) return io_error("quarantine in '" + m.dir() + "'", "mkdtemp failed");
    impl->dir = tmpl;
    impl->err_file = impl->dir + "/index-pack.err";
    fs::create_directories(impl->dir + "/pack");
    auto env = git_env(m.dir());
    env.set("GIT_OBJECT_DIRECTORY", impl->dir);
    env.set("GIT_ALTERNATE_OBJECT_DIRECTORIES", m.dir() + "/objects");
    try {
        auto exe = bp::search_path("git");
        if (exe.empty()) return io_error("git", "not found on PATH", 0);
        impl->child = bp::child(exe, bp::args({"index-pack", "--stdin", "--fix-thin"}), env, bp::std_in < impl->in,
                                bp::std_out > bp::null, bp::std_err > impl->err_file);
    } catch (const std::exception& e) {
        std::error_code ec;
        fs::remove_all(impl->dir, ec);
        return io_error("git index-pack", std::string("could not run: ") + e.what(), 0);
    }
    return std::unique_ptr<Quarantine>(new Quarantine(std::move(impl)));
}

Status Quarantine::write(std::string_view bytes) {
    if (impl_->finished) return io_error("quarantine", "written after its end", 0);
    impl_->in.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!impl_->in) return io_error("git index-pack", "stopped reading the pack", 0);
    return ok();
}

Status Quarantine::finish() {
    if (impl_->finished) return ok();
    impl_->finished = true;
    impl_->in.flush();
    impl_->in.pipe().close();
    std::error_code ec;
    impl_->child.wait(ec);
    int code = impl_->child.exit_code();
    if (ec || code != 0) {
        std::ifstream in(impl_->err_file);
        std::string line;
        std::getline(in, line);
        return io_error("git index-pack", "refused the pack (status " + std::to_string(code) + "): " + one_line(line, 200), 0);
    }
    return ok();
}

Result<bool> Quarantine::is_ancestor(const std::string& old_oid, const std::string& new_oid) const {
    auto env = git_env(impl_->mirror);
    env.set("GIT_OBJECT_DIRECTORY", impl_->dir);
    env.set("GIT_ALTERNATE_OBJECT_DIRECTORIES", impl_->mirror + "/objects");
    std::string err;
    auto rc = run_git({"merge-base", "--is-ancestor", old_oid, new_oid}, env, &err);
    if (!rc) return rc.error();
    if (*rc == 0) return true;
    if (*rc == 1) return false;
    return io_error("git merge-base", "could not compare " + old_oid.substr(0, 12) + " and " + new_oid.substr(0, 12) +
                                          ": " + one_line(err, 200), 0);
}

}  // namespace cc::git
