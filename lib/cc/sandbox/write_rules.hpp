// Write rules judged at the moment a file is created or opened for writing.
// The write supervisor (supervisor.hpp) asks judge() about the path it has
// resolved itself, in the sandbox's own view of the filesystem (guest paths,
// symlinks already followed), and performs the operation only when it is
// allowed. Pure: the plan carries the rules, tests call judge() directly.
//
//   WriteRules r;
//   r.paths.push_back({"/work/.git/hooks", ".git/hooks", "mandatory"});
//   r.names.push_back({".env", "standard dispatch policy"});
//   judge(r, "/work/.env", WriteOp::create)          -> refused, rule ".env"
//   judge(r, "/work/.git", WriteOp::remove)          -> refused: an ancestor of a rule's path
//   judge(r, "/work/src/main.c", WriteOp::write)     -> allowed
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace cc::sandbox {

struct WriteRules {
    // A path (guest, canonical) and everything beneath it: nothing there is
    // created, written, removed or renamed, whether it exists at launch or not.
    struct PathRule {
        std::string path;
        std::string rule;    // as the operator or the policy wrote it
        std::string source;  // "mandatory", "protectedPaths", "--deny-write", ...
        // Writable binds the operator nested inside on purpose
        // (writableInProtected): not covered.
        std::vector<std::string> except = {};
    };
    // A glob on the final name (fnmatch, no FNM_PATHNAME): ".env", "*.pem".
    struct NameRule {
        std::string glob;
        std::string source;
    };
    std::vector<PathRule> paths;
    std::vector<NameRule> names;
    // Host-backed writable trees where git's control files are kept out of
    // reach for every repository, not only the ones that exist at launch: a
    // `.git` file or link (a gitdir pointer) is not created, and nothing is
    // written under .git/{config,config.worktree,commondir,gitdir,hooks,
    // modules,worktrees} of any repository there (a new repository's
    // config could name a program the host's next `git status` runs).
    std::vector<std::string> gitScope;
    // Where writes may land at all (the Landlock list: writable binds, the
    // private tmpfs mounts, /dev, /proc); empty: anywhere the mounts allow.
    std::vector<std::string> writable;
};

// What the call does to the path it names.
enum class WriteOp {
    write,       // open for writing, truncate, chmod, chown: the object itself
    create,      // open with O_CREAT, mknod, symlink, the new name of a link
    create_dir,  // mkdir
    remove,      // unlink, rmdir: the name goes away
    rename_from,  // the old name of a rename
    rename_to,   // the new name of a rename (it may replace what is there)
    link_from,   // the existing file a hard link is made to
};
std::string_view to_string(WriteOp op);

struct WriteVerdict {
    bool allowed = true;
    std::string rule;    // the rule that refused, as written
    std::string source;  // where it came from
};

// `path` is absolute and canonical (no "." or ".." components, no trailing
// slash except "/"); an object with no path (a pipe, a socket) is never
// refused.
WriteVerdict judge(const WriteRules& rules, std::string_view path, WriteOp op);

nlohmann::json to_json(const WriteRules& r);

// The system calls the supervisor's filter sends it: an open is sent when
// its flags argument (flagsArg; -1: every call) has O_WRONLY, O_RDWR,
// O_CREAT or O_TRUNC; fchmod when its mode argument (modeArg) adds an
// execute, setuid or setgid bit (what could turn a denied file, a disabled
// git hook say, into something the host runs); the rest always. `--print`
// lists them.
struct NotifiedCall {
    const char* name;
    int flagsArg;
    int modeArg = -1;
};
const std::vector<NotifiedCall>& notified_calls();

}  // namespace cc::sandbox
