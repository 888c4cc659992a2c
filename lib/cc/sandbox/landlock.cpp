#include "cc/sandbox/landlock.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace cc::sandbox {

namespace {

// The write rights by the ABI that introduced them (1: the base set, 2: REFER,
// 3: TRUNCATE). Spelled out: the C library's headers may be older than the kernel.
constexpr std::uint64_t k_write_v1 = (1ULL << 1)     // WRITE_FILE
                                     | (1ULL << 4)   // REMOVE_DIR
                                     | (1ULL << 5)   // REMOVE_FILE
                                     | (1ULL << 6)   // MAKE_CHAR
                                     | (1ULL << 7)   // MAKE_DIR
                                     | (1ULL << 8)   // MAKE_REG
                                     | (1ULL << 9)   // MAKE_SOCK
                                     | (1ULL << 10)  // MAKE_FIFO
                                     | (1ULL << 11)  // MAKE_BLOCK
                                     | (1ULL << 12);  // MAKE_SYM
constexpr std::uint64_t k_refer = 1ULL << 13;
constexpr std::uint64_t k_truncate = 1ULL << 14;

std::uint64_t write_rights(int abi) {
    std::uint64_t r = k_write_v1;
    if (abi >= 2) r |= k_refer;
    if (abi >= 3) r |= k_truncate;
    return r;
}

}  // namespace

int landlock_abi_version() {
    long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v > 0 ? static_cast<int>(v) : 0;
}

bool apply_landlock(int abi, const std::vector<std::string>& writable, std::string& err) {
    if (abi <= 0) {
        err = "no Landlock ABI";
        return false;
    }
    landlock_ruleset_attr attr{};
    attr.handled_access_fs = write_rights(abi);
    int rs = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr.handled_access_fs, 0));
    if (rs < 0) {
        err = std::string("landlock_create_ruleset: ") + std::strerror(errno);
        return false;
    }
    for (const auto& path : writable) {
        int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
        if (fd < 0) continue;  // not there inside: nothing to allow
        landlock_path_beneath_attr pb{};
        pb.allowed_access = write_rights(abi);
        pb.parent_fd = fd;
        long r = ::syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
        if (r < 0 && errno == EINVAL) {
            // A file, not a directory: only the rights that apply to a file.
            pb.allowed_access = write_rights(abi) & ((1ULL << 1) | k_truncate);
            r = ::syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
        }
        int e = errno;
        ::close(fd);
        if (r < 0) {
            err = "landlock_add_rule '" + path + "': " + std::strerror(e);
            ::close(rs);
            return false;
        }
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
        err = std::string("landlock_restrict_self: ") + std::strerror(errno);
        ::close(rs);
        return false;
    }
    ::close(rs);
    return true;
}

}  // namespace cc::sandbox
