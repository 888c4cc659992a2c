#include "cc/sandbox/write_rules.hpp"

#include <fnmatch.h>

#include <string>
#include <vector>

namespace cc::sandbox {

namespace {

// Is `p` equal to `dir` or beneath it?
bool within(std::string_view p, std::string_view dir) {
    if (dir == "/") return true;
    return p.size() >= dir.size() && p.compare(0, dir.size(), dir) == 0 && (p.size() == dir.size() || p[dir.size()] == '/');
}

// The operations that take a name away or put something else in its place:
// applied to an ancestor of a rule's path, they would move the protected
// tree away (and let a fresh one be made where it was).
bool displaces(WriteOp op) { return op == WriteOp::remove || op == WriteOp::rename_from || op == WriteOp::rename_to; }

// The names inside a git directory that decide what git runs or where its
// configuration comes from.
bool git_control_name(std::string_view n) {
    for (std::string_view c : {"config", "config.worktree", "commondir", "gitdir", "hooks", "modules", "worktrees"})
        if (n == c) return true;
    return false;
}

// Does `path` (inside `scope`) touch a git control file? Returns what for.
const char* git_control(std::string_view path, std::string_view scope, WriteOp op) {
    std::string_view rest = path.substr(scope == "/" ? 0 : scope.size());
    std::vector<std::string_view> parts;
    while (!rest.empty()) {
        if (rest.front() == '/') { rest.remove_prefix(1); continue; }
        auto e = rest.find('/');
        parts.push_back(rest.substr(0, e));
        rest = e == std::string_view::npos ? std::string_view() : rest.substr(e);
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (parts[i] != ".git") continue;
        if (i + 1 == parts.size()) {
            // A .git that is a file or a link points git elsewhere.
            if (op == WriteOp::create || op == WriteOp::rename_to) return ".git (a gitdir pointer file or link)";
            continue;
        }
        if (git_control_name(parts[i + 1])) return ".git/{config,hooks,...} of any repository";
    }
    return nullptr;
}

}  // namespace

std::string_view to_string(WriteOp op) {
    switch (op) {
        case WriteOp::write: return "write";
        case WriteOp::create: return "create";
        case WriteOp::create_dir: return "create-dir";
        case WriteOp::remove: return "remove";
        case WriteOp::rename_from: return "rename-from";
        case WriteOp::rename_to: return "rename-to";
        case WriteOp::link_from: return "link-from";
    }
    return "write";
}

WriteVerdict judge(const WriteRules& rules, std::string_view path, WriteOp op) {
    if (path.empty() || path.front() != '/') return {};
    for (const auto& r : rules.paths) {
        bool excepted = false;
        for (const auto& e : r.except)
            if (within(path, e)) excepted = true;
        if (excepted) continue;
        if (within(path, r.path)) return {false, r.rule, r.source};
        if (displaces(op) && within(r.path, path)) return {false, r.rule, r.source + " (an ancestor of " + r.path + ")"};
        // Anything but a directory made where a rule's path would go (a
        // symlink at ~/.local before ~/.local/lib/.../x.pth exists) would
        // take the path somewhere no rule names: what the host reads later
        // through it is then the command's.
        if (op == WriteOp::create && within(r.path, path))
            return {false, r.rule, r.source + " (not a directory on the way to " + r.path + ")"};
    }
    for (const auto& scope : rules.gitScope)
        if (within(path, scope))
            if (const char* what = git_control(path, scope, op)) return {false, what, "git control files"};
    auto slash = path.rfind('/');
    std::string name(path.substr(slash + 1));
    if (!name.empty())
        for (const auto& n : rules.names)
            if (::fnmatch(n.glob.c_str(), name.c_str(), 0) == 0) return {false, n.glob, n.source};
    if (!rules.writable.empty()) {
        bool inside = false;
        for (const auto& w : rules.writable)
            if (within(path, w)) { inside = true; break; }
        if (!inside) return {false, "writable binds only", "landlock"};
    }
    return {};
}

const std::vector<NotifiedCall>& notified_calls() {
    static const std::vector<NotifiedCall> calls = {
        {"open", 1},      {"openat", 2},    {"openat2", -1},  {"creat", -1},    {"mkdir", -1},     {"mkdirat", -1},
        {"mknod", -1},    {"mknodat", -1},  {"rename", -1},   {"renameat", -1}, {"renameat2", -1}, {"link", -1},
        {"linkat", -1},   {"symlink", -1},  {"symlinkat", -1}, {"unlink", -1},  {"unlinkat", -1},  {"rmdir", -1},
        {"truncate", -1}, {"chmod", -1},    {"fchmodat", -1}, {"fchmod", -1, 1},
        // A POSIX ACL (system.posix_acl_access) can make a file executable
        // where chmod is refused; other attributes change what a file means
        // to the programs that read them.
        {"setxattr", -1}, {"lsetxattr", -1}, {"fsetxattr", -1}, {"removexattr", -1}, {"lremovexattr", -1},
        {"fremovexattr", -1},
        // A Unix socket made at a path is a file like any other (u.key).
        {"bind", -1},
    };
    return calls;
}

nlohmann::json to_json(const WriteRules& r) {
    nlohmann::json paths = nlohmann::json::array(), names = nlohmann::json::array();
    for (const auto& p : r.paths) {
        nlohmann::json j = {{"path", p.path}, {"rule", p.rule}, {"source", p.source}};
        if (!p.except.empty()) j["except"] = p.except;
        paths.push_back(j);
    }
    for (const auto& n : r.names) names.push_back({{"glob", n.glob}, {"source", n.source}});
    nlohmann::json calls = nlohmann::json::array();
    for (const auto& n : notified_calls())
        calls.push_back(n.modeArg >= 0    ? std::string(n.name) + " (adding an execute, setuid or setgid bit)"
                        : n.flagsArg < 0 ? std::string(n.name)
                                         : std::string(n.name) + " (with O_WRONLY, O_RDWR, O_CREAT or O_TRUNC)");
    calls.push_back("fchmodat2 (ENOSYS: libc falls back to fchmodat)");
    calls.push_back("setxattrat, removexattrat, file_setattr (ENOSYS)");
    return {{"paths", paths}, {"names", names}, {"gitControl", r.gitScope}, {"writable", r.writable}, {"calls", calls}};
}

}  // namespace cc::sandbox
