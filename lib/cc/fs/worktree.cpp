#include "cc/fs/worktree.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/process.hpp>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>

#include "cc/core/io.hpp"
#include "cc/core/json_reader.hpp"
#include "cc/fs/confine.hpp"
#include "cc/fs/unique_fd.hpp"
#include "cc/core/json_writer.hpp"

namespace cc::fs {

namespace bp = boost::process;
using nlohmann::json;

namespace {

constexpr const char* metadata_name = "conversation.json";
constexpr const char* create_lock_name = ".create.lock";
constexpr int metadata_version = 1;

std::string q(const std::string& s) { return "'" + s + "'"; }

std::string basename_of(const std::string& p) {
    auto i = p.find_last_of('/');
    return i == std::string::npos ? p : p.substr(i + 1);
}

Result<std::string> real_dir(const std::string& p, const std::string& what) {
    if (p.empty()) return input_error(what, "must not be empty");
    char* r = ::realpath(p.c_str(), nullptr);
    if (!r && errno == ENOENT && what == "data dir")  // made once by the operator, on the right filesystem
        return input_error(q(p), "data dir does not exist: create it on a reflink filesystem (XFS with reflink=1, "
                                 "btrfs) on the repos' device; see cc-worktree(1)");
    if (!r) return Error{Errc::input, what + " cannot be resolved", q(p), errno};
    std::string out = r;
    std::free(r);
    struct stat st {};
    if (::stat(out.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return input_error(q(p), what + " is not a directory");
    return out;
}

// `git <args>`; on failure the error carries git's last stderr line.
Status run_git(const std::vector<std::string>& args, const std::string& subject) {
    auto git = bp::search_path("git");
    if (git.empty()) return unavailable_error("git", "not found on PATH");
    bp::ipstream err;
    int rc = -1;
    std::string last, line;
    try {
        bp::child c(git, bp::args(args), bp::std_in < bp::null, bp::std_out > bp::null, bp::std_err > err);
        while (std::getline(err, line))
            if (!line.empty()) last = line;
        c.wait();
        rc = c.exit_code();
    } catch (const std::exception& e) {
        return io_error(subject, std::string("cannot run git: ") + e.what(), 0);
    }
    if (rc != 0) return io_error(subject, "git " + args[2] + " failed" + (last.empty() ? "" : ": " + last), 0);
    return ok();
}

Result<std::string> conversations_dir(const std::string& data_dir, bool create) {
    auto d = real_dir(data_dir, "data dir");
    if (!d) return d.error();
    std::string c = *d + "/conversations";
    if (create && ::mkdir(c.c_str(), 0755) != 0 && errno != EEXIST) return io_error(q(c), "cannot create");
    struct stat st {};
    if (::lstat(c.c_str(), &st) != 0) {
        if (errno == ENOENT && !create) return c;  // nothing created yet
        return io_error(q(c), "cannot stat");
    }
    // A symlink here would move every conversation (and every destroy) elsewhere.
    if (!S_ISDIR(st.st_mode)) return Error{Errc::denied, "is not a directory (a symlink?); refusing", q(c), 0};
    return c;
}

Result<Conversation> read_metadata(const std::string& dir, const std::string& id) {
    Conversation c;
    c.id = id;
    c.path = dir;
    std::string file = dir + "/" + metadata_name;
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) {
        c.complete = false;
        return c;
    }
    auto text = io::read_input(file);
    if (!text) return text.error();
    auto doc = cc::json::parse(*text, q(file));
    if (!doc) return doc.error();
    try {
        const json& j = *doc;
        if (j.at("version").get<int>() != metadata_version) return io_error(q(file), "unknown metadata version", 0);
        auto b = parse_backend(j.at("backend").get<std::string>());
        if (!b) return b.error();
        c.backend = *b;
        for (const auto& r : j.at("repos")) {
            RepoClone rc;
            rc.name = r.at("name").get<std::string>();
            rc.source = r.at("source").get<std::string>();
            rc.path = r.at("path").get<std::string>();
            struct stat rs {};
            rc.present = ::lstat(rc.path.c_str(), &rs) == 0 && S_ISDIR(rs.st_mode);
            c.repos.push_back(std::move(rc));
        }
        for (const auto& a : j.at("agents")) {
            AgentDir ad;
            ad.name = a.at("name").get<std::string>();
            ad.workdir = a.at("workdir").get<std::string>();
            ad.roots = a.at("roots").get<std::vector<std::string>>();
            c.agents.push_back(std::move(ad));
        }
    } catch (const std::exception& e) {
        return io_error(q(file), std::string("malformed metadata: ") + e.what(), 0);
    }
    return c;
}

}  // namespace

const char* backend_name(Backend b) { return b == Backend::reflink ? "reflink" : "git-worktree"; }

Result<Backend> parse_backend(const std::string& s) {
    if (s == "reflink") return Backend::reflink;
    if (s == "git-worktree") return Backend::git_worktree;
    return input_error("backend", "must be 'reflink' or 'git-worktree', not " + q(s));
}

nlohmann::ordered_json Conversation::to_json() const {
    nlohmann::ordered_json repos_j = nlohmann::ordered_json::array();
    for (const auto& r : repos) {
        nlohmann::ordered_json rj = {{"name", r.name}, {"source", r.source}, {"path", r.path}};
        if (!complete || !r.present) rj["present"] = r.present;
        if (backend == Backend::reflink && !created.empty()) {
            rj["files"] = r.stats.files;
            rj["directories"] = r.stats.directories;
            rj["symlinks"] = r.stats.symlinks;
            rj["bytes"] = r.stats.bytes;
            rj["hardlinksSplit"] = r.stats.hardlinks_split;
            rj["absoluteSymlinksIntoSource"] = r.stats.absolute_symlinks_into_source;
            rj["skipped"] = r.stats.skipped;
        }
        repos_j.push_back(std::move(rj));
    }
    nlohmann::ordered_json agents_j = nlohmann::ordered_json::array();
    for (const auto& a : agents) agents_j.push_back({{"name", a.name}, {"workdir", a.workdir}, {"roots", a.roots}});
    nlohmann::ordered_json j = {{"version", metadata_version}, {"conversation", id}, {"path", path}, {"backend", backend_name(backend)},
              {"complete", complete}, {"repos", repos_j}, {"agents", agents_j}};
    if (!created.empty()) j["created"] = created;
    if (replaced_incomplete) j["replacedIncomplete"] = true;
    return j;
}

Status validate_id(const std::string& kind, const std::string& id) {
    auto bad = [&](const std::string& why) { return input_error(kind + " " + q(id), why); };
    if (id.empty()) return input_error(kind, "must not be empty");
    if (id.size() > 128) return bad("is longer than 128 bytes");
    auto word = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
    if (!word(id[0])) return bad("must start with a letter or digit (refusing a path outside the data dir)");
    for (char c : id)
        if (!word(c) && c != '.' && c != '_' && c != '-')
            return bad("may contain only letters, digits, '.', '_' and '-' (refusing a path outside the data dir)");
    return ok();
}

Result<Conversation> create_conversation(const CreateRequest& req) {
    // Plan: every check that needs no writing comes first.
    if (Status s = validate_id("conversation", req.conversation); !s) return s.error();
    if (req.repos.empty()) return input_error("repo", "at least one --repo is required");
    std::set<std::string> seen_agents;
    for (const auto& a : req.agents) {
        if (Status s = validate_id("agent", a); !s) return s.error();
        if (!seen_agents.insert(a).second) return input_error("agent " + q(a), "is named twice");
    }
    auto data = real_dir(req.data_dir, "data dir");
    if (!data) return data.error();
    struct stat dst {};
    if (::stat(data->c_str(), &dst) != 0) return io_error(q(*data), "cannot stat");

    Conversation conv;
    conv.id = req.conversation;
    conv.backend = req.backend;
    std::set<std::string> seen_names;
    for (const auto& r : req.repos) {
        auto src = real_dir(r, "repo");
        if (!src) return src.error();
        RepoClone rc;
        rc.source = *src;
        rc.name = basename_of(*src);
        if (Status s = validate_id("repo name", rc.name); !s) return s.error();
        if (!seen_names.insert(rc.name).second) return input_error("repo " + q(r), "another repo has the name " + q(rc.name));
        if (is_within(*data, *src) || is_within(*src, *data))
            return input_error("repo " + q(r), "and the data dir " + q(*data) + " must not contain each other");
        struct stat gst {};
        std::string dotgit = *src + "/.git";
        bool has_git = ::lstat(dotgit.c_str(), &gst) == 0;
        if (req.backend == Backend::git_worktree && !has_git)
            return input_error("repo " + q(r), "is not a git checkout (no .git); the git-worktree backend needs one");
        // A .git file points at a git directory elsewhere (a linked worktree,
        // a submodule): a clone would share that directory with the source.
        if (req.backend == Backend::reflink && has_git && !S_ISDIR(gst.st_mode))
            return input_error("repo " + q(r), "keeps its git directory elsewhere (.git is not a directory); register the main checkout");
        if (req.backend == Backend::reflink) {
            struct stat sst {};
            if (::stat(src->c_str(), &sst) != 0) return io_error(q(*src), "cannot stat");
            if (sst.st_dev != dst.st_dev)
                return unavailable_error(q(*data), "data dir is on another device than repo " + q(*src) +
                                                       "; a reflink clone cannot cross filesystems and there is no fallback");
        }
        conv.repos.push_back(std::move(rc));
    }

    // The probe files live in the data dir itself for a moment, so a refusal
    // leaves not even conversations/ behind.
    if (req.backend == Backend::reflink)
        if (Status s = probe_reflink(*data); !s) return s.error();
    auto cdir = conversations_dir(*data, true);
    if (!cdir) return cdir.error();
    conv.path = *cdir + "/" + req.conversation;
    auto prune = [&] {
        if (req.backend == Backend::git_worktree)
            for (const auto& r : conv.repos) (void)run_git({"-C", r.source, "worktree", "prune"}, q(r.source));
    };
    // A create holds <conversation>/.create.lock (flock) until its metadata
    // is written. A conversation without metadata whose lock nobody holds
    // was left by a create that was killed: it is removed here and made
    // again; one whose lock is held is being made now.
    bool swept = false;
    if (::mkdir(conv.path.c_str(), 0755) != 0) {
        if (errno != EEXIST) return io_error(q(conv.path), "cannot create");
        struct stat mst {};
        if (::lstat((conv.path + "/" + metadata_name).c_str(), &mst) == 0)
            return io_error(q(conv.path), "conversation already exists", 0);
        UniqueFd held{::open((conv.path + "/" + create_lock_name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)};
        if (held && ::flock(held.get(), LOCK_EX | LOCK_NB) != 0)
            return io_error(q(conv.path), "conversation is being created by another process", 0);
        if (!held) {
            struct stat cst {};
            if (::lstat(conv.path.c_str(), &cst) != 0 || !S_ISDIR(cst.st_mode) || cst.st_mtime + 60 > ::time(nullptr))
                return io_error(q(conv.path), "conversation is incomplete and may still be being created; if no "
                                              "create is running, run: cc-worktree destroy " + req.conversation, 0);
        }
        if (Status s = remove_tree(AT_FDCWD, conv.path); !s) return s.error();
        prune();
        if (::mkdir(conv.path.c_str(), 0755) != 0) return io_error(q(conv.path), "cannot create");
        swept = true;
    }
    conv.created.push_back(conv.path);
    UniqueFd create_lock{::open((conv.path + "/" + create_lock_name).c_str(),
                                O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
    if (!create_lock || ::flock(create_lock.get(), LOCK_EX) != 0) {
        Error e = io_error(q(conv.path + "/" + create_lock_name), "cannot create");
        (void)remove_tree(AT_FDCWD, conv.path);
        return e;
    }
    conv.replaced_incomplete = swept;

    // Execute; from here on a failure removes the conversation directory.
    auto fail = [&](const Error& e) -> Result<Conversation> {
        (void)remove_tree(AT_FDCWD, conv.path);
        prune();
        return e;
    };
    std::string repos_dir = conv.path + "/repos";
    if (::mkdir(repos_dir.c_str(), 0755) != 0) return fail(io_error(q(repos_dir), "cannot create"));
    conv.created.push_back(repos_dir);
    for (auto& r : conv.repos) {
        r.path = repos_dir + "/" + r.name;
        if (req.backend == Backend::reflink) {
            auto st = clone_tree(r.source, r.path);
            if (!st) return fail(st.error());
            r.stats = std::move(*st);
        } else {
            Status s = run_git({"-C", r.source, "worktree", "add", "--detach", r.path, "HEAD"}, q(r.source));
            if (!s) return fail(s.error());
        }
        conv.created.push_back(r.path);
    }
    std::string agents_dir = conv.path + "/agents";
    if (::mkdir(agents_dir.c_str(), 0755) != 0) return fail(io_error(q(agents_dir), "cannot create"));
    conv.created.push_back(agents_dir);
    for (const auto& a : req.agents) {
        AgentDir ad{a, agents_dir + "/" + a, {repos_dir}};
        if (::mkdir(ad.workdir.c_str(), 0700) != 0) return fail(io_error(q(ad.workdir), "cannot create"));
        conv.created.push_back(ad.workdir);
        conv.agents.push_back(std::move(ad));
    }
    std::string meta = conv.path + "/" + metadata_name;
    auto j = conv.to_json();
    j.erase("created");
    if (Status s = io::write_file_atomic(meta, cc::json::write(j, 2) + "\n"); !s) return fail(s.error());
    conv.created.push_back(meta);
    (void)::unlink((conv.path + "/" + create_lock_name).c_str());  // complete: the metadata says so now
    return conv;
}

Result<std::vector<Conversation>> list_conversations(const std::string& data_dir) {
    auto cdir = conversations_dir(data_dir, false);
    if (!cdir) return cdir.error();
    std::vector<Conversation> out;
    UniqueFd fd{::open(cdir->c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!fd) {
        if (errno == ENOENT) return out;
        return io_error(q(*cdir), "cannot open");
    }
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(*cdir)) {
        std::string n = e.path().filename().string();
        if (validate_id("conversation", n) && e.is_directory() && !e.is_symlink()) names.insert(n);
    }
    for (const auto& n : names) {
        auto c = read_metadata(*cdir + "/" + n, n);
        if (!c) return c.error();
        out.push_back(std::move(*c));
    }
    return out;
}

Result<Conversation> conversation_status(const std::string& data_dir, const std::string& id) {
    if (Status s = validate_id("conversation", id); !s) return s.error();
    auto cdir = conversations_dir(data_dir, false);
    if (!cdir) return cdir.error();
    std::string dir = *cdir + "/" + id;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return io_error(q(dir), "no such conversation", 0);
    return read_metadata(dir, id);
}

Result<std::string> destroy_conversation(const std::string& data_dir, const std::string& id) {
    if (Status s = validate_id("conversation", id); !s) return s.error();
    auto cdir = conversations_dir(data_dir, false);
    if (!cdir) return cdir.error();
    std::string dir = *cdir + "/" + id;
    UniqueFd parent{::open(cdir->c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    if (!parent) return io_error(q(*cdir), "cannot open");
    struct stat st {};
    if (::fstatat(parent.get(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return io_error(q(dir), "no such conversation", 0);
    if (!S_ISDIR(st.st_mode)) return Error{Errc::denied, "is not a directory (a symlink?); refusing to remove", q(dir), 0};
    auto meta = read_metadata(dir, id);
    // Removal goes through the fd of conversations/, so a rename or symlink
    // swapped in above it cannot redirect it.
    if (Status s = remove_tree(parent.get(), id); !s) return s.error();
    if (meta && meta->backend == Backend::git_worktree)
        for (const auto& r : meta->repos)
            if (Status s = run_git({"-C", r.source, "worktree", "prune"}, q(r.source)); !s) return s.error();
    return dir;
}

}  // namespace cc::fs
