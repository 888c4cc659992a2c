// Path confinement for in-process file tools (read, write, edit, apply_patch,
// search, find, search_files): every path an agent names resolves against the
// run's workdir plus a few shared roots (the conversation's repos/, an
// attachments directory), and anything that ends outside them is refused.
//
// How a file tool uses it:
//
//   auto conf = cc::fs::Confinement::make("/data/conversations/c1/agents/a1",
//                                         {"/data/conversations/c1/repos"});
//   if (!conf) return conf.error();            // workdir or a root is missing: input error
//
//   // A question: where does this path lead, and may the tool go there?
//   cc::fs::Verdict v = conf->check("src/../../repos/app/main.cpp");
//   // v.allowed, v.resolved (absolute, symlinks resolved), v.reason, v.root
//
//   // The real thing: open for reading or writing, confined atomically. The
//   // walk to the file happens beneath an fd of the matching root with
//   // openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS),
//   // or, where openat2 is missing, one O_NOFOLLOW openat per component. A
//   // symlink swapped in between the check and the open makes the open fail;
//   // it never leads outside.
//   auto f = conf->open("notes.md", cc::fs::Access::write);
//   if (!f) return f.error();                 // Errc::denied when refused
//   ::write(f->fd.get(), data, len);           // f->method says openat2 or walk
//
// Resolution rules (check):
//   - relative paths resolve against the workdir; absolute paths are taken as
//     they are and must end inside the workdir or a root;
//   - "..", "." and every symlink, at any depth, in chains, are resolved the
//     way the kernel would (physical "..": "link/.." is the link target's
//     parent); the end point decides;
//   - a path that does not exist yet (a write target) resolves its deepest
//     existing ancestor and appends the rest;
//   - symlinks on procfs (/proc/self, /proc/<pid>/root, /proc/self/cwd, fd
//     links) are never followed: refused as "magic-link";
//   - more than 40 symlinks (a loop), a component over NAME_MAX or a resolved
//     path over PATH_MAX, an unsearchable directory on the way: refused.
//
// open() is stricter than check(): it re-walks the resolved path and refuses
// any symlink it meets (there should be none: check resolved them), refuses
// non-regular files (FIFOs, devices, directories), and for writes refuses a
// file with more than one hard link, because a hard link inside the workdir
// may name a file outside it and no path check can see that.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/fs/unique_fd.hpp"

namespace cc::fs {

// Stable reason codes (the `reason` field of cc-confine's output).
namespace reason {
inline constexpr const char* workdir = "inside-workdir";
inline constexpr const char* root = "inside-root";
inline constexpr const char* outside = "outside";                // ends outside without following a symlink out
inline constexpr const char* symlink_escape = "symlink-escape";  // lexically inside, a symlink leads out
inline constexpr const char* magic_link = "magic-link";          // a /proc symlink on the way
inline constexpr const char* symlink_loop = "symlink-loop";      // more than 40 symlinks
inline constexpr const char* too_long = "name-too-long";
inline constexpr const char* unresolvable = "unresolvable";      // a directory on the way could not be searched
inline constexpr const char* empty = "empty";
}  // namespace reason

struct Verdict {
    std::string path;      // as asked
    std::string resolved;  // absolute, symlinks and dots resolved ("" when unknown)
    bool allowed = false;
    std::string reason;    // one of cc::fs::reason
    std::string root;      // the workdir or root it lies in (allowed only)
};

enum class Access { read, write };
enum class OpenMethod { openat2, walk };
const char* method_name(OpenMethod m);

struct Opened {
    UniqueFd fd;
    Verdict verdict;
    OpenMethod method = OpenMethod::openat2;
    bool created = false;  // write: the file did not exist before
};

struct OpenOptions {
    // false: skip openat2 and use the O_NOFOLLOW walk (tests, and kernels
    // where openat2 is filtered). When openat2 is wanted but the kernel
    // lacks it, the walk is used and Opened::method says so.
    bool use_openat2 = true;
    unsigned create_mode = 0666;  // write: mode of a new file, before umask
};

class Confinement {
public:
    // Resolves the workdir and roots (realpath) and keeps an O_PATH fd on
    // each, so later opens walk from the directory itself, not its name.
    // A missing or non-directory workdir/root is an input error.
    static Result<Confinement> make(const std::string& workdir, const std::vector<std::string>& roots);

    Verdict check(const std::string& path) const;

    // Opens `path` confined. Read: O_RDONLY; write: O_WRONLY, created if
    // missing (parent directories are not created), truncated if present.
    // Refusals are Errc::denied with the reason code as the message.
    Result<Opened> open(const std::string& path, Access access, const OpenOptions& opts = {}) const;

    const std::string& workdir() const { return bases_.front().path; }

private:
    struct Base {
        std::string path;  // realpath
        UniqueFd fd;       // O_PATH | O_DIRECTORY
        bool is_workdir = false;
    };
    std::vector<Base> bases_;  // [0] is the workdir
};

// {"path","resolved","allowed","reason"[,"root"]}: cc-confine's output line.
// A path that is not UTF-8 is shown with U+FFFD in place of the bad bytes and
// given in full as hex in "pathHex" / "resolvedHex".
nlohmann::ordered_json to_json(const Verdict& v);

// Whether `path` equals `base` or lies beneath it (both absolute, normalised).
bool is_within(const std::string& path, const std::string& base);

// Lexical normalisation of an absolute path: "." and empty components dropped,
// ".." pops (never above "/"). No filesystem access.
std::string lexically_normal(const std::string& absolute);

// Everything left to read from fd (for --open-read and tests).
Result<std::string> read_all(int fd);
Status write_all(int fd, const std::string& data);

}  // namespace cc::fs
