// cc-worktree: copy-on-write worktrees per conversation. See cc-worktree(1).
#include <CLI/CLI.hpp>

#include <cctype>
#include <iostream>

#include "cc/core/cli.hpp"
#include "cc/core/tool.hpp"
#include "cc/fs/worktree.hpp"
#include "cc/core/json_writer.hpp"

namespace {
constexpr const char* name = "cc-worktree";

int emit(const nlohmann::ordered_json& j) {
    cc::tool::emit_line(cc::json::write(j));
    return cc::tool::exit_ok;
}
}  // namespace

int main(int argc, char** argv) {
    return cc::tool::run(name, [&] {
        CLI::App app{"Copy-on-write (reflink) worktrees per conversation"};
        app.require_subcommand(1);
        cc::tool::standard_flags(app, name);
        std::string data_dir, conversation, backend = "reflink";
        std::vector<std::string> repos, agents;
        auto* create = app.add_subcommand("create", "clone every repo into a new conversation");
        auto* list = app.add_subcommand("list", "list the conversations under the data dir");
        auto* status = app.add_subcommand("status", "describe one conversation");
        auto* destroy = app.add_subcommand("destroy", "remove one conversation");
        for (auto* sub : {create, list, status, destroy})
            sub->add_option("--data-dir", data_dir, "directory holding conversations/")->required();
        for (auto* sub : {create, status, destroy})
            sub->add_option("--conversation", conversation, "conversation id")->required();
        create->add_option("--repo", repos, "registered repo to clone (repeatable)")->required()->allow_extra_args(false);
        create->add_option("--agent", agents, "agent that gets a private directory (repeatable)")->allow_extra_args(false);
        create->add_option("--backend", backend, "reflink (default) or git-worktree");
        if (auto rc = cc::tool::parse(app, argc, argv, "cc-worktree")) return *rc;

        if (*create) {
            auto b = cc::fs::parse_backend(backend);
            if (!b) return cc::tool::report(name, b.error());
            if (*b == cc::fs::Backend::git_worktree)
                cc::tool::log(name, "backend git-worktree (chosen): checks out HEAD only, no copy-on-write");
            auto c = cc::fs::create_conversation({data_dir, conversation, repos, agents, *b});
            if (!c) return cc::tool::report(name, c.error());
            return emit(c->to_json());
        }
        if (*list) {
            auto all = cc::fs::list_conversations(data_dir);
            if (!all) return cc::tool::report(name, all.error());
            nlohmann::ordered_json arr = nlohmann::ordered_json::array();
            for (const auto& c : *all) arr.push_back(c.to_json());
            return emit(nlohmann::ordered_json{{"conversations", arr}});
        }
        if (*status) {
            auto c = cc::fs::conversation_status(data_dir, conversation);
            if (!c) return cc::tool::report(name, c.error());
            return emit(c->to_json());
        }
        auto removed = cc::fs::destroy_conversation(data_dir, conversation);
        if (!removed) return cc::tool::report(name, removed.error());
        return emit(nlohmann::ordered_json{{"conversation", conversation}, {"removed", *removed}});
    });
}
