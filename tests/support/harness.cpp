#include "harness.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <future>

extern char** environ;

namespace cc::test {

namespace bp = boost::process;
namespace fs = std::filesystem;

std::string bin(const std::string& tool) {
    const char* dir = std::getenv("CC_BIN_DIR");
    std::string base = dir ? dir : "build";
    for (const auto& cand : {base + "/cmd/" + tool + "/" + tool, base + "/" + tool, base + "/tests/sandbox/" + tool,
                            base + "/tests/probe/" + tool, base + "/cmd/cc-wrap/" + tool})
        if (::access(cand.c_str(), X_OK) == 0) return cand;
    return base + "/cmd/" + tool + "/" + tool;
}

std::string source_dir() {
    const char* dir = std::getenv("CC_SOURCE_DIR");
    return dir ? dir : ".";
}

namespace {
struct Scratch {
    std::string path;
    ~Scratch() {
        if (!path.empty() && !std::getenv("CC_KEEP_SCRATCH")) {
            std::error_code ec;
            // Tests may leave read-only trees; make them writable first.
            for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
                 !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
                if (!it->is_symlink()) ::chmod(it->path().c_str(), 0700);
            }
            fs::remove_all(path, ec);
        }
    }
} scratch;
}  // namespace

std::string scratch_dir() {
    if (scratch.path.empty()) {
        std::string tmpl = (fs::temp_directory_path() / "cc-test-XXXXXX").string();
        char* p = ::mkdtemp(tmpl.data());
        if (!p) throw std::runtime_error("mkdtemp failed");
        scratch.path = p;
        ::chmod(p, 0755);
    }
    return scratch.path;
}

RunResult run(const std::vector<std::string>& argv, const RunOptions& opts) {
    RunResult r;
    boost::asio::io_context ios;
    std::future<std::string> out, err;
    bp::environment env = opts.clear_env ? bp::environment() : bp::environment(boost::this_process::environment());
    for (const auto& name : opts.unset_env) env.erase(name);
    // set(), not operator[]: Boost.Process's find() (behind operator[]) compares
    // past the end of a shorter entry, a heap over-read that ASan reports.
    for (const auto& [k, v] : opts.env) env.set(k, v);
    std::vector<std::string> args(argv.begin() + 1, argv.end());
    std::string exe = argv[0];
    if (exe.find('/') == std::string::npos) {
        auto found = bp::search_path(exe);
        if (!found.empty()) exe = found.string();
    }
    std::string cwd = opts.cwd.value_or(fs::current_path().string());
    bp::child c(exe, bp::args(args), env, bp::start_dir(cwd), bp::std_in < bp::buffer(opts.input),
                bp::std_out > out, bp::std_err > err, ios);
    ios.run_for(std::chrono::milliseconds(opts.timeout_ms));
    if (!ios.stopped()) {
        ::kill(c.id(), SIGKILL);
        ios.run();
    }
    c.wait();
    int native = c.native_exit_code();
    if (WIFEXITED(native))
        r.status = WEXITSTATUS(native);
    else if (WIFSIGNALED(native))
        r.status = 128 + WTERMSIG(native);
    r.out = out.get();
    r.err = err.get();
    return r;
}

std::string ptrace_attach_from(pid_t pid, const std::vector<std::string>& as) {
    const char* py =
        "import ctypes, os, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.ptrace(16, int(sys.argv[1]), 0, 0)\n"  // PTRACE_ATTACH
        "print('attached' if r == 0 else os.strerror(ctypes.get_errno()))\n";
    std::vector<std::string> argv = as;
    argv.insert(argv.end(), {"/usr/bin/python3", "-c", py, std::to_string(pid)});
    return run(argv).out;
}

RunResult run(const std::vector<std::string>& argv, const std::string& input) {
    RunOptions o;
    o.input = input;
    return run(argv, o);
}

bool is_root() { return ::geteuid() == 0; }

bool have_program(const std::string& name) { return !bp::search_path(name).empty(); }

bool bwrap_works() {
    static const bool ok = run({"bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"}).status == 0;
    return ok;
}

void check_golden(const std::string& path, const std::string& text) {
    std::string full = source_dir() + "/" + path;
    if (std::getenv("CC_UPDATE_GOLDEN")) {
        std::ofstream(full) << text;
        mark_skipped("CC_UPDATE_GOLDEN: rewrote " + path);
        return;
    }
    std::ifstream f(full);
    REQUIRE(f.good());
    std::string want((std::istreambuf_iterator<char>(f)), {});
    CHECK(text == want);
}

pid_t hold_flock(const std::string& path) {
    int fds[2];
    if (::pipe(fds) != 0) return -1;
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
        if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
        char c = 'y';
        if (::write(fds[1], &c, 1) != 1) ::_exit(1);
        ::pause();
        ::_exit(0);
    }
    ::close(fds[1]);
    char c = 0;
    bool held = ::read(fds[0], &c, 1) == 1;
    ::close(fds[0]);
    if (!held) {
        ::waitpid(pid, nullptr, 0);
        return -1;
    }
    return pid;
}

}  // namespace cc::test
