// Per-conversation worktrees: every registered repo cloned copy-on-write into
// the conversation, a private directory per agent next to the shared repos.
//
//   cc::fs::CreateRequest req{.data_dir = "/srv/cc", .conversation = "c1",
//                             .repos = {"/src/app"}, .agents = {"a1", "a2"}};
//   auto conv = cc::fs::create_conversation(req);  // Errc::unavailable: no reflink / other device
//   conv->to_json();                                 // what cc-worktree prints
//
// Layout under the data dir:
//
//   conversations/<id>/conversation.json   written last: a conversation without it is incomplete
//   conversations/<id>/repos/<name>/       the clone (whole tree, .git included)
//   conversations/<id>/agents/<agent>/     private, mode 0700; an agent's file tools use it as
//                                          workdir with repos/ as their shared root (cc-confine)
//
// The reflink backend refuses, and leaves nothing behind, when the data dir is
// on another device than a repo or its filesystem cannot FICLONE: there is no
// silent byte copy. The git-worktree backend (`git worktree add --detach`) is
// the explicit alternative for hosts without copy-on-write; it checks out HEAD
// only (uncommitted changes are not carried) and registers the worktree in
// the source repository's .git, which the reflink backend never touches.
//
// Creating the conversation directory with mkdir(2) is the claim: of two
// creates of one id the second fails; creates of different ids on one repo
// run side by side.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/fs/reflink.hpp"

namespace cc::fs {

enum class Backend { reflink, git_worktree };
const char* backend_name(Backend b);
Result<Backend> parse_backend(const std::string& s);

struct CreateRequest {
    std::string data_dir;
    std::string conversation;
    std::vector<std::string> repos;   // paths of registered repos
    std::vector<std::string> agents;  // agent names (may be empty)
    Backend backend = Backend::reflink;
};

struct RepoClone {
    std::string name;    // basename of the source
    std::string source;  // realpath of the registered repo
    std::string path;    // the conversation's copy
    bool present = true;
    CloneStats stats;    // zero for git-worktree
};

struct AgentDir {
    std::string name;
    std::string workdir;
    std::vector<std::string> roots;  // what cc-confine --root takes
};

struct Conversation {
    std::string id;
    std::string path;
    Backend backend = Backend::reflink;
    bool complete = true;
    std::vector<RepoClone> repos;
    std::vector<AgentDir> agents;
    std::vector<std::string> created;  // create only: every path made, in order
    bool replaced_incomplete = false;  // create only: a partial tree a killed create left was removed first

    nlohmann::ordered_json to_json() const;
};

// A conversation or agent id: [A-Za-z0-9][A-Za-z0-9._-]*, at most 128 bytes.
// Anything else (a slash, "..", an empty name) is an input error, which is how
// a path outside the data dir is refused.
Status validate_id(const std::string& kind, const std::string& id);

Result<Conversation> create_conversation(const CreateRequest& req);
Result<std::vector<Conversation>> list_conversations(const std::string& data_dir);
Result<Conversation> conversation_status(const std::string& data_dir, const std::string& id);
// Removes conversations/<id> and nothing else; for git-worktree also prunes
// the source repos' worktree records. Returns the removed path.
Result<std::string> destroy_conversation(const std::string& data_dir, const std::string& id);

}  // namespace cc::fs
