// Deny rules in both spellings. The kernel matches the resolved path, the
// operator writes the literal one; a rule is enforced on each. Plans ask the
// host filesystem only through HostPaths, so tests hand in a fake tree.
//
//   auto host = cc::sandbox::real_paths();
//   cc::sandbox::spellings("~/.ssh", "/home/u", *host)  -> {"/home/u/.ssh", "/data/u/.ssh"}
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cc::sandbox {

enum class Kind { missing, file, dir, other };

class HostPaths {
public:
    virtual ~HostPaths() = default;
    // realpath(3): every symlink resolved; nullopt when a component is missing.
    virtual std::optional<std::string> resolve(const std::string& path) const = 0;
    // What the path is, following symlinks.
    virtual Kind kind(const std::string& path) const = 0;
    // The target of a symlink (not followed further), nullopt when not one.
    virtual std::optional<std::string> read_link(const std::string& path) const = 0;
    // Names in a directory (not recursive), empty when unreadable.
    virtual std::vector<std::string> list(const std::string& dir) const = 0;
    // Could a process of this user without any capability execute the file
    // (a regular file, an x bit that applies to it, a mount without noexec)?
    // And is it an ELF binary, or a script naming an interpreter?
    struct Exec {
        bool ok = false;
        bool elf = false;
        std::string interpreter;  // from "#!", empty otherwise
    };
    virtual Exec executable(const std::string& path) const = 0;
    // Owner and permission bits, following symlinks; nullopt when unknown.
    struct Owner {
        unsigned uid = 0, gid = 0, mode = 0;
    };
    virtual std::optional<Owner> owner(const std::string&) const { return std::nullopt; }
    // A number no account, group, subordinate id range (/etc/subuid,
    // /etc/subgid) or running process has as a uid or gid: the command's own
    // when root runs it and no one else is named. nullopt when none was found.
    virtual std::optional<unsigned> unused_id() const { return std::nullopt; }
};

// The ids a passwd-format (uid and gid) or group-format (gid) file names.
std::vector<unsigned> ids_in_account_file(const std::string& path, bool passwd);

// The block session ids are drawn from: 0x70000000-0x7ffffffe, left unused
// by systemd (its dynamic users and containers stay below) and by the
// subordinate ranges useradd hands out.
constexpr unsigned k_session_id_first = 0x70000000u, k_session_id_last = 0x7ffffffeu;

// The real filesystem, its execute checks made for uid/gid (the identity
// the command will have; by default this process's own).
std::unique_ptr<HostPaths> real_paths();
std::unique_ptr<HostPaths> real_paths(unsigned uid, unsigned gid);

// "*" or "?" anywhere: a glob, left as written.
bool is_glob(const std::string& path);
// Lexical normal form: "~/" expanded against home, "." and ".." folded,
// duplicate and trailing slashes dropped. Relative paths stay relative.
std::string normalise(const std::string& path, const std::string& home);
// The literal spelling first, then the resolved one when it differs. Globs and
// paths that do not resolve are kept as written (one spelling).
std::vector<std::string> spellings(const std::string& path, const std::string& home, const HostPaths& host);

// Is `path` equal to or below `dir` (both normalised)?
bool is_within(const std::string& path, const std::string& dir);
// Number of components: "/" 0, "/a" 1, "/a/b" 2.
std::size_t depth(const std::string& path);
std::string parent_of(const std::string& path);

}  // namespace cc::sandbox
