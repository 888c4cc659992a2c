#include "cc/core/io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#ifndef CC_DATADIR
#define CC_DATADIR "/usr/share/cc"
#endif
#ifndef CC_SOURCE_SHARE
#define CC_SOURCE_SHARE ""
#endif

namespace cc::io {

int write_all(int fd, std::string_view data) {
    std::size_t off = 0;
    while (off < data.size()) {
        ssize_t n = ::write(fd, data.data() + off, data.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return EIO;
        off += static_cast<std::size_t>(n);
    }
    return 0;
}

Result<std::string> read_all(int fd, const std::string& name) {
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            return io_error(name, "cannot read");
        }
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

Result<std::string> read_input(const std::string& path) {
    if (path == "-") return read_all(0, "stdin");
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    // A file named on the command line that is missing, unreadable or a
    // directory is bad input (exit 2 in every tool), not a failure of the tool.
    if (fd < 0) return Error{Errc::input, "cannot open", "'" + path + "'", errno};
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        ::close(fd);
        return input_error("'" + path + "'", "is a directory");
    }
    auto r = read_all(fd, "'" + path + "'");
    ::close(fd);
    return r;
}

Status write_file_atomic(const std::string& path, const std::string& data, unsigned mode) {
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) return io_error("'" + tmp + "'", "cannot create");
    if (int e = write_all(fd, data); e != 0) {
        ::close(fd);
        ::unlink(tmp.c_str());
        return io_error("'" + tmp + "'", "cannot write", e);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        return io_error("'" + tmp + "'", "cannot flush", e);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        return io_error("'" + path + "'", "cannot rename into place", e);
    }
    return ok();
}

std::string data_dir() {
    if (const char* env = std::getenv("CC_DATA_DIR"); env && *env) return env;
    struct stat st {};
    if (::stat(CC_DATADIR, &st) == 0 && S_ISDIR(st.st_mode)) return CC_DATADIR;
    return CC_SOURCE_SHARE;
}

}  // namespace cc::io
