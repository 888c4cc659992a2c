// git and the forge CLIs (gh, hub, glab, tea, az repos): commits, pushes,
// pull requests, reviews and tracker writes, after global options and aliases.
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

namespace {

// Configuration a read may set on the command line: how output looks and
// what is shown. Any other key may name a program git runs (core.fsmonitor,
// core.pager=PROG, a filter's process) or change whose configuration is
// trusted (safe.directory), so it is run_code: refused in the read-only
// modes, whatever the key's spelling.
bool safe_read_config(sv key, sv value, bool dynamic) {
    std::string k(key);
    for (char& ch : k) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    static constexpr auto prefixes = sorted_names({"color.", "log.", "pretty.", "column.", "advice.", "i18n.",
                                                   "grep.", "status.", "format.", "blame."});
    for (sv p : prefixes)
        if (starts_with(k, p)) return true;
    static constexpr auto keys = sorted_names({"core.quotepath", "core.abbrev", "core.autocrlf", "core.safecrlf",
                                               "diff.renames", "diff.algorithm", "diff.noprefix",
                                               "diff.mnemonicprefix", "diff.colormoved", "diff.relative",
                                               "diff.submodule", "diff.context", "diff.interhunkcontext",
                                               "merge.conflictstyle", "init.defaultbranch", "user.name",
                                               "user.email", "core.commentchar", "core.commentstring"});
    if (contains(keys, sv(k))) return true;
    // A pager that only shows: none, cat, less.
    if (k == "core.pager" || starts_with(k, "pager.")) {
        if (dynamic) return false;
        static constexpr auto pagers = sorted_names({"", "cat", "less", "less -R", "less -FRX", "less -FRSX", "false",
                                                     "true", "0", "1", "no", "yes", "off", "on"});
        return contains(pagers, value);
    }
    return false;
}

}  // namespace

void Analyzer::git(Call& c) {
    const Args& a = c.a;
    std::size_t k = c.args_from();
    std::vector<std::pair<std::string, std::string>> aliases;
    // -c KEY=VALUE and --config-env KEY=ENVVAR, in either spelling: the key
    // judged, an alias remembered.
    auto config = [&](const std::string& kv, bool dynamic, bool from_env) {
        if (!from_env && starts_with(kv, "alias.")) {
            auto eq = kv.find('=');
            if (eq != std::string::npos) aliases.emplace_back(kv.substr(6, eq - 6), kv.substr(eq + 1));
        }
        auto eq = kv.find('=');
        sv key = sv(kv).substr(0, eq);
        sv value = eq == std::string::npos ? sv() : sv(kv).substr(eq + 1);
        static constexpr auto runs = sorted_names({"core.sshCommand", "core.pager", "core.editor",
                                                   "core.hooksPath", "core.fsmonitor", "diff.external",
                                                   "core.askPass", "credential.helper", "sequence.editor",
                                                   "gpg.program", "uploadpack.packObjectsHook"});
        const char* how = from_env ? "git --config-env " : "git -c ";
        if (contains(runs, key) || key.find(".command") != sv::npos || key.find(".textconv") != sv::npos ||
            key.find(".clean") != sv::npos || key.find(".smudge") != sv::npos || key.find(".process") != sv::npos) {
            if (!(key == "core.pager" && !from_env && safe_read_config(key, value, dynamic)))
                add(c.f, kRun, how + std::string(key) + " runs a configured program");
        } else if (from_env || (!starts_with(key, "alias.") && !safe_read_config(key, value, dynamic))) {
            // From the environment the value is never known here (an alias
            // so given could be any command, '!' ones included).
            add(c.f, kRun, how + std::string(key) + " is not configuration known to be safe for a read");
        }
    };
    // A repository in a place anyone may write (/tmp, /var/tmp, /dev/shm),
    // or reached by climbing out of the work with "..": its configuration
    // (core.fsmonitor, a hook path) is not known to be the project's, and git
    // runs what it names even for a read.
    auto elsewhere = [&](const Arg& dir, sv opt) {
        std::string p = normalize_path(dir.text);
        bool shared = p == "/tmp" || starts_with(p, "/tmp/") || p == "/var/tmp" || starts_with(p, "/var/tmp/") ||
                      p == "/dev/shm" || starts_with(p, "/dev/shm/");
        if (dir.dynamic || shared || p == ".." || starts_with(p, "../") || climbs(p))
            add(c.f, kRun, "git " + std::string(opt) + " " + dir.text +
                               ": a repository whose configuration (which can run programs) is not known to be the project's");
    };
    while (k < a.size() && is_opt(a[k])) {
        const std::string& t = a[k].text;
        for (sv opt : {"--git-dir=", "--work-tree="})
            if (starts_with(t, opt)) elsewhere(Arg{t.substr(opt.size()), a[k].dynamic}, opt.substr(0, opt.size() - 1));
        if ((t == "-C" || t == "--git-dir" || t == "--work-tree") && k + 1 < a.size()) elsewhere(a[k + 1], t);
        if (starts_with(t, "--config-env=")) {
            config(t.substr(13), true, true);
            ++k;
            continue;
        }
        if (t == "-C" || t == "-c" || t == "--git-dir" || t == "--work-tree" || t == "--namespace" ||
            t == "--super-prefix" || t == "--config-env" || t == "--list-cmds") {
            if ((t == "-c" || t == "--config-env") && k + 1 < a.size())
                config(a[k + 1].text, a[k + 1].dynamic, t == "--config-env");
            k += 2;
            continue;
        }
        if (starts_with(t, "--exec-path=")) add(c.f, kRun, "git --exec-path runs git commands from another place");
        if (t == "--exec-path" && k + 1 < a.size() && !is_opt(a[k + 1]) && a[k + 1].text.find('/') != std::string::npos)
            add(c.f, kRun, "git --exec-path runs git commands from another place");
        ++k;  // --no-pager, -p, --bare, --git-dir=..., -P, ...
    }
    if (k >= a.size()) return;  // git --version, git --help
    std::string sub = a[k].text;
    if (resolve) {  // without its global options, for command rules
        c.f.resolved.assign(1, "git");
        for (std::size_t j = k; j < a.size(); ++j) c.f.resolved.push_back(a[j].text);
    }
    for (const auto& [name, value] : aliases) {
        if (name != sub) continue;
        if (!value.empty() && value[0] == '!') {
            std::string s = value.substr(1);
            for (std::size_t j = k + 1; j < a.size(); ++j) s += " " + a[j].text;
            return reparse(s, c.f, "git alias '" + name + "'", c.depth);
        }
        std::string s = "git " + value;
        for (std::size_t j = k + 1; j < a.size(); ++j) s += " " + a[j].text;
        return reparse(s, c.f, "git alias '" + name + "'", c.depth);
    }
    git_sub(c, k, sub);
}

// Git commands that lose work no undo brings back: uncommitted changes
// (reset --hard, checkout or restore of paths, switch --discard-changes,
// clean -f), stashes (drop, clear), unmerged branches (branch -D) and the
// remote's commits (push --force, a +refspec). They still write files too.
void Analyzer::git_destroys_work(Call& c, std::size_t from, const std::string& sub) {
    const Args& a = c.a;
    auto lose = [&](const std::string& what) { add(c.f, kDestroyWork, "git " + sub + " " + what); };
    auto flag = [&](char s, std::initializer_list<sv> l) { return has_flag(a, from, a.size(), s, l); };
    auto dashdash_paths = [&] {
        for (std::size_t j = from; j + 1 < a.size(); ++j)
            if (a[j].text == "--") return true;
        return false;
    };
    if (sub == "reset" && flag(0, {"--hard"})) return lose("--hard discards uncommitted changes");
    if (sub == "checkout") {
        if (flag('f', {"--force"})) return lose("--force discards uncommitted changes");
        auto p = positionals(a, from, "bBU", {"--orphan", "--conflict", "--pathspec-from-file"});
        bool path_like = p.size() == 1 && (a[p[0]].text == "." || starts_with(a[p[0]].text, "./") ||
                                           starts_with(a[p[0]].text, ":/"));
        if (dashdash_paths() || p.size() >= 2 || path_like || flag(0, {"--pathspec-from-file"}))
            return lose("of paths overwrites their uncommitted changes");
        return;
    }
    if (sub == "restore") {
        bool staged_only = flag('S', {"--staged"}) && !flag('W', {"--worktree"});
        if (!staged_only) return lose("overwrites uncommitted changes in the worktree");
        return;
    }
    if (sub == "switch" && (flag('f', {"--force", "--discard-changes"})))
        return lose("--discard-changes discards uncommitted changes");
    if (sub == "clean" && (flag('f', {"--force"})) && !flag('n', {"--dry-run"}))
        return lose("-f deletes untracked files");
    if (sub == "stash") {
        auto p = positionals(a, from, "", {});
        if (!p.empty() && (a[p[0]].text == "drop" || a[p[0]].text == "clear"))
            return lose(a[p[0]].text + " deletes stashed changes");
        return;
    }
    if (sub == "branch" &&
        (flag('D', {}) || ((flag('d', {"--delete"})) && flag('f', {"--force"}))))
        return lose("-D deletes a branch whether or not it was merged");
    if (sub == "push") {
        if (flag('f', {"--force", "--force-with-lease", "--mirror"}))
            return lose("--force overwrites the remote's commits");
        for (std::size_t p : positionals(a, from, "o", {"--repo", "--push-option", "--receive-pack", "--exec"}))
            if (!a[p].text.empty() && a[p].text[0] == '+') return lose("of '" + a[p].text + "' forces the update");
    }
}

void Analyzer::git_sub(Call& c, std::size_t k, const std::string& sub) {
    const Args& a = c.a;
    std::size_t from = k + 1;
    git_destroys_work(c, from, sub);
    auto note = [&](sv cls) { add(c.f, cls, "git " + sub); };
    auto pos = [&](sv sopts = "", std::initializer_list<sv> lopts = {}) { return positionals(a, from, sopts, lopts); };
    if (sub == "push") return git_push(c, from);
    // A dry run lists what it would remove and removes nothing (git clean
    // refuses -i with -n): a read.
    if (sub == "clean" && has_flag(a, from, a.size(), 'n', {"--dry-run"}) && !has_flag(a, from, a.size(), 'i', {"--interactive"}))
        return;
    if (sub == "pull") {
        note(kCommit);
        note(kNet);
        return note(kWrite);
    }
    if (sub == "fetch" || sub == "clone") {
        note(kNet);
        return note(kWrite);
    }
    if (sub == "ls-remote") return note(kNet);
    if (sub == "send-email") {  // outward like a push: commits leave by mail
        note(kNet);
        note(kNetWrite);
        return add(c.f, kPush, "git send-email sends commits out by mail");
    }
    if (sub == "config") {
        for (std::size_t j = from; j < a.size(); ++j) {
            sv t = a[j].text;
            if (t == "--get" || t == "--get-all" || t == "--get-regexp" || t == "-l" || t == "--list" ||
                t == "--get-urlmatch" || t == "--get-color" || t == "--get-colorbool" || t == "get" || t == "list")
                return;
        }
        auto p = pos("f", {"--file", "--blob", "--type", "--default"});
        if (p.size() <= 1 && !has_flag(a, from, a.size(), 0, {"--unset", "--unset-all", "--add", "--replace-all",
                                                                "--rename-section", "--remove-section", "--edit"}) &&
            !has_flag(a, from, a.size(), 'e', {}))
            return;
        return note(kWrite);
    }
    if (sub == "branch") {
        if (has_flag(a, from, a.size(), 0, {"--delete", "--move", "--copy", "--set-upstream-to", "--unset-upstream",
                                             "--edit-description", "--force", "--create-reflog", "--track"}))
            return note(kWrite);
        for (std::size_t j = from; j < a.size(); ++j) {
            sv t = a[j].text;
            if (t.size() > 1 && t[0] == '-' && t[1] != '-' && t.find_first_of("dDmMcCuf") != sv::npos) return note(kWrite);
        }
        bool listing = has_flag(a, from, a.size(), 'l', {"--list", "--contains", "--no-contains", "--merged",
                                                           "--no-merged", "--points-at", "--show-current"}) ||
                       has_flag(a, from, a.size(), 'a', {"--all"}) || has_flag(a, from, a.size(), 'r', {"--remotes"});
        if (listing || pos("", {"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort",
                                "--format", "--color", "--column"}).empty())
            return;
        return note(kWrite);
    }
    if (sub == "tag") {
        if (has_flag(a, from, a.size(), 'l', {"--list", "--contains", "--no-contains", "--points-at", "--merged", "--no-merged"}) ||
            has_flag(a, from, a.size(), 'v', {"--verify"}))
            return;
        if (pos("", {"--sort", "--format", "--color", "--column"}).empty() &&
            !has_flag(a, from, a.size(), 'd', {"--delete"}))
            return;
        return note(kWrite);
    }
    auto sub2 = [&]() -> std::string {
        auto p = pos();
        return p.empty() ? std::string() : a[p[0]].text;
    };
    if (sub == "remote") {
        std::string s = sub2();
        if (s.empty() || s == "show" || s == "get-url") return;
        if (s == "update") {
            note(kNet);
            return note(kWrite);
        }
        return note(kWrite);
    }
    if (sub == "stash") {
        std::string s = sub2();
        if (s == "list" || s == "show") return;
        return note(kWrite);
    }
    if (sub == "worktree") {
        std::string s = sub2();
        if (s == "list") return;
        return note(kWrite);
    }
    if (sub == "reflog") {
        std::string s = sub2();
        if (s.empty() || s == "show" || s == "exists") return;
        return note(kWrite);
    }
    if (sub == "notes") {
        std::string s = sub2();
        if (s.empty() || s == "list" || s == "show") return;
        return note(kWrite);
    }
    if (sub == "submodule") {
        std::string s = sub2();
        if (s.empty() || s == "status" || s == "summary" || s == "foreach") {
            if (s == "foreach") return join_and_reparse(c, pos()[0] + 1, "git submodule foreach");
            return;
        }
        if (s == "update" || s == "add" || s == "sync" || s == "init") {
            note(kNet);
            return note(kWrite);
        }
        return note(kWrite);
    }
    if (sub == "bisect") {
        std::string s = sub2();
        if (s == "log" || s == "visualize" || s == "view") return;
        if (s == "run") return add(c.f, kRun, "git bisect run runs a script");
        return note(kWrite);
    }
    if (sub == "archive") {
        if (auto o = opt_value(a, from, 'o', {"--output"})) write_target(c.f, *o, false, "git archive -o");
        return;
    }
    // Outward through git's other transports: the same class as a push.
    if (sub == "lfs" || sub == "subtree" || sub == "svn") {
        auto p = pos();
        if (sub == "lfs" && !p.empty() &&
            (a[p[0]].text == "ls-files" || a[p[0]].text == "status" || a[p[0]].text == "env" || a[p[0]].text == "version"))
            return;
        if (!p.empty() && (a[p[0]].text == "push" || a[p[0]].text == "dcommit"))
            return add(c.f, kPush, "git " + sub + " " + a[p[0]].text + " sends commits to a remote");
    }
    if (sub == "symbolic-ref") {  // reads with one name, writes with two or -d
        if (has_flag(a, from, a.size(), 'd', {"--delete"}) || pos("m").size() >= 2) return note(kWrite);
        return;
    }
    // The rest is data: git.json lists each plain subcommand's classes.
    const CommandEntry* e = known_.find("git");
    const Names* listed = e ? e->subcommand(sub) : nullptr;
    if (!listed) return add(c.f, kRun, "'git " + sub + "' is not a known git command (an alias or an extension)");
    if (listed->empty()) {
        if (has_flag(a, from, a.size(), 'O', {"--open-files-in-pager", "--ext-diff", "--textconv"}) &&
            (sub == "grep" || sub == "diff" || sub == "log" || sub == "show"))
            return add(c.f, kRun, "git " + sub + " runs a configured or named program");
        if (sub == "diff" || sub == "log" || sub == "show") {
            if (auto o = opt_value(a, from, 0, {"--output"})) write_target(c.f, *o, false, "git " + sub + " --output");
        }
        return;
    }
    for (sv cls : *listed) note(cls);
}

void Analyzer::git_push(Call& c, std::size_t from) {
    add(c.f, kPush, "git push");
    const Args& a = c.a;
    auto p = positionals(a, from, "o", {"--repo", "--push-option", "--receive-pack", "--exec"});
    bool all = has_flag(a, from, a.size(), 0, {"--all", "--mirror", "--branches"});
    if (has_flag(a, from, a.size(), 0, {"--tags"})) c.f.refs.push_back("refs/tags/*");
    if (all) return;
    for (std::size_t j = 1; j < p.size(); ++j) {
        std::string spec = a[p[j]].text;
        if (a[p[j]].dynamic) continue;
        if (!spec.empty() && spec[0] == '+') spec.erase(0, 1);
        auto colon = spec.find(':');
        std::string dst = colon == std::string::npos ? spec : spec.substr(colon + 1);
        if (dst.empty() || dst == "HEAD" || dst.find('*') != std::string::npos) continue;
        if (!starts_with(dst, "refs/")) dst = "refs/heads/" + dst;
        c.f.refs.push_back(dst);
    }
}

// The other forges' CLIs (GitLab's glab, Gitea's tea, Azure's az repos)
// and hub: the same classes as the gh spellings they mirror.
void Analyzer::forge(Call& c) {
    sv name = c.name();
    // Options with values are not told apart here: a value is taken for
    // the next word only when it cannot be a subcommand.
    std::vector<std::string> w;
    for (std::size_t k = c.args_from(); k < c.a.size() && w.size() < 3; ++k)
        if (!is_opt(c.a[k])) w.push_back(c.a[k].text);
    std::size_t at = 0;
    if (name == "az") {
        if (w.empty() || w[0] != "repos") return cloud(c);
        at = 1;
    }
    if (name == "hub") {
        // hub is git with forge commands added.
        if (w.empty()) return;
        if (w[0] == "pull-request") return add(c.f, kOpenPr, "hub pull-request");
        if (w[0] == "ci-status" || w[0] == "browse" || w[0] == "compare") return;
        if (w[0] != "pr" && w[0] != "issue" && w[0] != "release" && w[0] != "api" && w[0] != "fork" &&
            w[0] != "create" && w[0] != "delete" && w[0] != "sync")
            return git(c);
    }
    std::string group = w.size() > at ? w[at] : "", sub = w.size() > at + 1 ? w[at + 1] : "";
    std::string what = std::string(name) + " " + group + (sub.empty() ? "" : " " + sub);
    auto in = [&](std::initializer_list<sv> l) { return std::find(l.begin(), l.end(), sv(sub)) != l.end(); };
    auto reads = {"list", "ls", "view", "show", "diff", "status", "checks", "search"};
    bool read = std::find(reads.begin(), reads.end(), sv(sub)) != reads.end() || sub.empty();
    if (group == "mr" || group == "pr" || group == "pulls" || group == "pull") {
        if (in({"create", "new"})) return add(c.f, kOpenPr, what + " opens a pull request");
        if (in({"checkout", "co"})) return add(c.f, kWrite, what);
        if (read) return;
        return add(c.f, kReview, what + " changes a pull request");
    }
    if (group == "issue" || group == "issues" || group == "work-items") {
        if (read) return;
        return add(c.f, kTracker, what);
    }
    if (group == "release" || group == "releases") {
        if (read) return;
        if (in({"download"})) return add(c.f, kWrite, what);
        return add(c.f, kPublish, what);
    }
    if (group == "api") {
        bool fields = has_flag(c.a, c.args_from(), c.a.size(), 'f', {"--field", "--raw-field", "--input"}) ||
                      has_flag(c.a, c.args_from(), c.a.size(), 'F', {});
        std::string m = opt_value(c.a, c.args_from(), 'X', {"--method"}).value_or(fields ? "POST" : "GET");
        std::transform(m.begin(), m.end(), m.begin(), [](unsigned char ch) { return std::toupper(ch); });
        if (m != "GET" && m != "HEAD") return add(c.f, kTracker, what + " " + m + " writes to the forge");
        return;
    }
    if (group == "repo" || group == "repos" || group == "create" || group == "delete" || group == "fork" ||
        group == "sync") {
        if (read && group == "repo") return;
        if (in({"clone"})) return add(c.f, kWrite, what);
        return add(c.f, kTracker, what + " changes a repository on the forge");
    }
    // Not known: it may act on the forge (delete, close, transfer), so it
    // is asked, never taken for local code.
    add(c.f, kRun, "'" + what + "' is not a command known to cc-classify");
    add(c.f, kTracker, "'" + what + "' may change the forge");
}

// gh: `gh GROUP SUB` is looked up as "GROUP SUB", then "GROUP *", in the
// entry's subcommand list (git.json); `gh api` is read here (its method and
// body decide). Not listed: run_code.
void Analyzer::gh(Call& c) {
    const CommandEntry* e = known_.find(c.name());
    if (!e || !e->has_subcommands) e = known_.find("gh");
    static const std::vector<std::string> none;
    auto p = positionals(c.a, c.args_from(), e ? e->short_value_options : sv(), e ? e->long_value_options : none);
    if (p.empty()) return;
    std::string group = c.a[p[0]].text;
    std::string sub = p.size() > 1 ? c.a[p[1]].text : "";
    std::string what = "gh " + group + (sub.empty() ? "" : " " + sub);
    if (group == "api") {
        std::string m = opt_value(c.a, c.args_from(), 'X', {"--method"}).value_or("");
        std::transform(m.begin(), m.end(), m.begin(), [](unsigned char ch) { return std::toupper(ch); });
        bool fields = has_flag(c.a, c.args_from(), c.a.size(), 'f', {"--field", "--raw-field", "--input"}) ||
                      has_flag(c.a, c.args_from(), c.a.size(), 'F', {});
        if (m.empty() && sub == "graphql") {
            // Every GraphQL request is a POST; only a mutation (or a body
            // from a file, which cannot be seen) changes anything.
            bool input = has_flag(c.a, c.args_from(), c.a.size(), '\0', {"--input"});
            bool mutation = false;
            for (std::size_t k = c.args_from(); k < c.a.size(); ++k)
                if (c.a[k].dynamic || c.a[k].text.find("mutation") != std::string::npos) mutation = true;
            if (input || mutation) return add(c.f, kTracker, "gh api graphql sends a mutation (or a body from a file)");
            return;
        }
        if ((!m.empty() && m != "GET" && m != "HEAD") || (m.empty() && fields))
            return add(c.f, kTracker, "gh api " + (m.empty() ? std::string("POST") : m) + " writes to the forge");
        return;
    }
    // `gh pr`, `gh issue`: a group alone prints its usage.
    static constexpr auto groups = sorted_names({"alias", "api", "attestation", "auth", "browse", "cache", "codespace",
                                                 "completion", "config", "extension", "ext", "gist", "gpg-key", "help",
                                                 "issue", "label", "org", "pr", "project", "release", "repo", "ruleset",
                                                 "run", "search", "secret", "ssh-key", "status", "variable", "workflow"});
    if (sub.empty() && contains(groups, group)) return;
    const Names* listed = e ? e->subcommand(group + " " + sub) : nullptr;
    if (!listed && e) listed = e->subcommand(group + " *");
    if (listed) {
        for (sv cls : *listed) add(c.f, cls, what);
        return;
    }
    add(c.f, kRun, "'" + what + "' is not a gh command known to cc-classify");
    add(c.f, kTracker, "'" + what + "' may change the forge");
}

}  // namespace cc::classify::detail
