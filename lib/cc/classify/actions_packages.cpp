// Package managers: install, remove, publish, and the scripts they run.
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

// A data entry with "subcommands" and no reader (apt, brew, pnpm, ...): the
// first word after the options names the classes; none given is "bare",
// one not listed is "otherwise" (run_code unless the file says).
void Analyzer::subcommand_tool(Call& c, const CommandEntry& e, std::size_t from) {
    if (from == sv::npos) from = c.args_from();
    auto p = positionals(c.a, from, e.short_value_options, e.long_value_options);
    std::string tool(c.name());
    if (p.empty()) {
        if (!has_flag(c.a, from, c.a.size(), 'v', {"--version", "--help"}) && !has_flag(c.a, from, c.a.size(), 'h', {}))
            for (sv cls : e.bare)
                add(c.f, cls, cls == kInstall ? tool + " installs dependencies" : tool + " with no subcommand is " + std::string(cls));
        return;
    }
    std::string what = tool + " " + c.a[p[0]].text;
    if (const auto* s = e.subcommand(c.a[p[0]].text)) {
        for (sv cls : *s) add(c.f, cls, what);
        return;
    }
    if (!e.has_otherwise) return add(c.f, kRun, "'" + what + "' is not known to only read");
    for (sv cls : e.otherwise) add(c.f, cls, "'" + what + "' is not known to only read");
}

// After a reader's special cases (cargo fmt, go mod, conda env, npm audit): the
// subcommand list of the tool's data entry (packages.json), as for a tool
// with no reader. No list (an operator's entry without one): run_code.
void Analyzer::listed_subcommands(Call& c, std::size_t from, sv family) {
    const CommandEntry* e = known_.find(c.name());
    if (!e || !e->has_subcommands) e = known_.find_prefix(c.name());
    if ((!e || !e->has_subcommands) && !family.empty()) e = known_.find(family);
    if (e && e->has_subcommands) return subcommand_tool(c, *e, from);
    add(c.f, kRun, "'" + std::string(c.name()) + "' has no subcommand list in the command data");
}

void Analyzer::npm(Call& c) {
    std::size_t from = c.args_from();
    auto p = positionals(c.a, from, "Cw", {"--prefix", "--workspace", "--registry", "--loglevel", "--cache",
                                           "--userconfig", "--tag", "--otp", "--access", "--omit", "--include"});
    if (!p.empty() && c.a[p[0]].text == "audit") {
        if (p.size() > 1 && c.a[p[1]].text == "fix") return add(c.f, kInstall, "npm audit fix");
        return;
    }
    if (!p.empty() && (c.a[p[0]].text == "config" || c.a[p[0]].text == "c")) {
        if (p.size() > 1 && (c.a[p[1]].text == "get" || c.a[p[1]].text == "list" || c.a[p[1]].text == "ls")) return;
        return add(c.f, kWrite, "npm config changes settings");
    }
    if (!p.empty() && c.a[p[0]].text == "dist-tag") {
        if (p.size() > 1 && (c.a[p[1]].text == "ls" || c.a[p[1]].text == "list")) return;
        return add(c.f, kPublish, "npm dist-tag");
    }
    if (!p.empty() && c.a[p[0]].text == "version" && p.size() > 1) return add(c.f, kWrite, "npm version bumps the version");
    listed_subcommands(c);
}

void Analyzer::yarn(Call& c) {
    auto p = positionals(c.a, c.args_from(), "", {"--cwd", "--modules-folder"});
    if (p.size() > 1 && c.a[p[0]].text == "npm" && c.a[p[1]].text == "publish") return add(c.f, kPublish, "yarn npm publish");
    listed_subcommands(c);
}

void Analyzer::bun(Call& c) {
    auto p = positionals(c.a, c.args_from(), "", {"--cwd"});
    if (!p.empty()) {
        sv s = c.a[p[0]].text;
        if (s.find('.') != sv::npos || s.find('/') != sv::npos) return add(c.f, kRun, "bun runs '" + std::string(s) + "'");
        if (s == "pm") {
            if (p.size() > 1 && (c.a[p[1]].text == "ls" || c.a[p[1]].text == "hash" || c.a[p[1]].text == "bin")) return;
        }
    }
    listed_subcommands(c);
}

// pip, also as `python -m pip` (from: the word after "pip").
void Analyzer::pip(Call& c, std::size_t from) { listed_subcommands(c, from, "pip"); }

void Analyzer::uv(Call& c) {
    auto p = positionals(c.a, c.args_from(), "p", {"--python", "--directory", "--project", "--index-url"});
    if (p.empty()) return;
    std::string s = c.a[p[0]].text;
    std::string s2 = p.size() > 1 ? c.a[p[1]].text : "";
    if (s == "pip") {
        if (s2 == "install" || s2 == "sync") return add(c.f, kInstall, "uv pip " + s2);
        if (s2 == "uninstall" || s2 == "compile") return add(c.f, kWrite, "uv pip " + s2);
        return;
    }
    if (s == "tool") {
        if (s2 == "install" || s2 == "upgrade") return add(c.f, kInstall, "uv tool " + s2);
        if (s2 == "run") return add(c.f, kRun, "uv tool run");
        if (s2 == "list" || s2 == "dir") return;
        return add(c.f, kWrite, "uv tool " + s2);
    }
    if (s == "python") {
        if (s2 == "install") return add(c.f, kInstall, "uv python install");
        if (s2 == "list" || s2 == "find" || s2 == "dir") return;
        return add(c.f, kWrite, "uv python " + s2);
    }
    if (s == "add" || s == "sync" || s == "lock") return add(c.f, kInstall, "uv " + s);
    if (s == "remove" || s == "venv" || s == "init" || s == "build" || s == "cache") return add(c.f, kWrite, "uv " + s);
    if (s == "publish") return add(c.f, kPublish, "uv publish");
    if (s == "run") return add(c.f, kRun, "uv run");
    if (s == "tree" || s == "version" || s == "help" || s == "--version") return;
    add(c.f, kRun, "'uv " + s + "' is not known to only read");
}

void Analyzer::p_conda(Call& c) {
    auto p = positionals(c.a, c.args_from(), "npc", {"--name", "--prefix", "--channel"});
    if (p.size() > 1 && c.a[p[0]].text == "env") {
        std::string s = c.a[p[1]].text;
        if (s == "create" || s == "update") return add(c.f, kInstall, std::string(c.name()) + " env " + s);
        if (s == "list" || s == "export") return;
        return add(c.f, kWrite, std::string(c.name()) + " env " + s);
    }
    listed_subcommands(c);
}

void Analyzer::p_dpkg(Call& c) {
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
        sv t = c.a[k].text;
        if (t == "-i" || t == "--install" || t == "--unpack" || t == "-r" || t == "--remove" || t == "-P" ||
            t == "--purge" || t == "--configure" || t == "-a" || t == "--set-selections")
            return add(c.f, kInstall, "dpkg " + std::string(t));
    }
}

// rpm: queries (-q, -V, -K and their long forms) only read, and in them -i
// means --info; every mode that changes the package database installs or
// removes.
void Analyzer::p_rpm(Call& c) {
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
        sv t = c.a[k].text;
        if (t == "--query" || t == "--verify" || t == "--checksig" ||
            (t.size() > 1 && t[0] == '-' && t[1] != '-' && t.find_first_of("qVK") != sv::npos))
            return;
        if (t == "--install" || t == "--upgrade" || t == "--freshen" || t == "--erase" || t == "--reinstall" ||
            t == "--import" || t == "--initdb" || t == "--rebuilddb" || t == "--setperms" || t == "--setugids" ||
            t == "--restore")
            return add(c.f, kInstall, "rpm " + std::string(t));
        if (t.size() > 1 && t[0] == '-' && t[1] != '-' && t.find_first_of("iUFe") != sv::npos)
            return add(c.f, kInstall, "rpm " + std::string(t));
    }
}

void Analyzer::p_pacman(Call& c) {
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        if (t.size() < 2 || t[0] != '-' || t[1] == '-') {
            if (t == "--sync" || t == "--upgrade" || t == "--remove") return add(c.f, kInstall, std::string(c.name()) + " " + t);
            continue;
        }
        char op = t[1];
        if (op == 'S' && t.find_first_of("sigl", 2) != std::string::npos && t.find('y') == std::string::npos) return;
        if (op == 'S' || op == 'U' || op == 'R') return add(c.f, kInstall, std::string(c.name()) + " " + t);
    }
    if (c.name() != "pacman" && c.a.size() == c.args_from()) add(c.f, kInstall, std::string(c.name()) + " upgrades the system");
}

void Analyzer::p_nix(Call& c) {
    if (c.name() == "nix-env") {
        for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
            sv t = c.a[k].text;
            if (t == "-q" || t == "--query") return;
            if (t.size() > 1 && t[0] == '-' && t[1] != '-' && t.find_first_of("iuep") != sv::npos && t.find('q') == sv::npos)
                return add(c.f, kInstall, "nix-env " + std::string(t));
            if (t == "--install" || t == "--upgrade" || t == "--uninstall") return add(c.f, kInstall, "nix-env " + std::string(t));
        }
        return;
    }
    if (c.name() == "nix-shell" || c.name() == "nix-build") return add(c.f, kRun, std::string(c.name()));
    auto p = positionals(c.a, c.args_from(), "", {"--option", "--extra-experimental-features"});
    if (p.empty()) return;
    std::string s = c.a[p[0]].text;
    std::string s2 = p.size() > 1 ? c.a[p[1]].text : "";
    if (s == "profile" && (s2 == "install" || s2 == "upgrade" || s2 == "remove" || s2 == "add"))
        return add(c.f, kInstall, "nix profile " + s2);
    if (s == "search" || s == "eval" || s == "show-config" || s == "path-info" || s == "why-depends" ||
        s == "--version" || (s == "flake" && (s2 == "show" || s2 == "metadata" || s2 == "info")) ||
        (s == "profile" && (s2 == "list" || s2 == "history")))
        return;
    add(c.f, kRun, "nix " + s);
}

void Analyzer::p_cargo(Call& c) {
    auto p = positionals(c.a, c.args_from(), "pjZ", {"--manifest-path", "--package", "--jobs", "--target", "--features", "--config", "--color", "-Z"});
    if (!p.empty() && c.a[p[0]].text == "fmt") {
        if (has_flag(c.a, c.args_from(), c.a.size(), 0, {"--check"})) return;
        return add(c.f, kWrite, "cargo fmt rewrites files");
    }
    if (!p.empty() && c.a[p[0]].text.size() > 1 && c.a[p[0]].text[0] == '+') {  // cargo +nightly build
        Args rest_args = {Arg{"cargo", false}};
        rest_args.insert(rest_args.end(), c.a.begin() + static_cast<std::ptrdiff_t>(p[0] + 1), c.a.end());
        return command(rest_args, 0, c.f, c.ctx, c.depth);
    }
    listed_subcommands(c);
}

void Analyzer::p_go(Call& c) {
    auto p = positionals(c.a, c.args_from(), "C", {});
    if (p.size() > 1 && c.a[p[0]].text == "mod") {
        std::string s = c.a[p[1]].text;
        if (s == "graph" || s == "why" || s == "verify") return;
        if (s == "download" || s == "tidy" || s == "vendor") {
            add(c.f, kNet, "go mod " + s);
            return add(c.f, kWrite, "go mod " + s);
        }
        return add(c.f, kWrite, "go mod " + s);
    }
    if (!p.empty() && c.a[p[0]].text == "env" && has_flag(c.a, c.args_from(), c.a.size(), 'w', {}))
        return add(c.f, kWrite, "go env -w");
    listed_subcommands(c);
}

void Analyzer::p_dotnet(Call& c) {
    auto p = positionals(c.a, c.args_from(), "", {});
    if (p.empty()) return;
    std::string s = c.a[p[0]].text;
    std::string s2 = p.size() > 1 ? c.a[p[1]].text : "";
    std::string s3 = p.size() > 2 ? c.a[p[2]].text : "";
    if ((s == "add" && (s2 == "package" || s3 == "package")) || s == "restore" || (s == "tool" && (s2 == "install" || s2 == "update")) ||
        (s == "workload" && (s2 == "install" || s2 == "update")))
        return add(c.f, kInstall, "dotnet " + s + " " + s2);
    if (s == "nuget" && s2 == "push") return add(c.f, kPublish, "dotnet nuget push");
    if (s == "--version" || s == "--info" || s == "--list-sdks" || s == "--list-runtimes" || (s == "list" && s3 == "package") || s == "help")
        return;
    if (s == "new" || s == "remove" || s == "sln" || s == "format") return add(c.f, kWrite, "dotnet " + s);
    add(c.f, kRun, "dotnet " + s);
}

void Analyzer::p_build_publish(Call& c) {  // mvn, gradle: publish/deploy goals publish
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
        sv t = c.a[k].text;
        if (t == "deploy" || starts_with(t, "publish") || t.find(":deploy") != sv::npos || t.find(":publish") != sv::npos)
            return add(c.f, kPublish, std::string(c.name()) + " " + std::string(t));
    }
    if (c.a.size() == c.args_from() + 1 && (c.a.back().text == "--version" || c.a.back().text == "-v" || c.a.back().text == "-version"))
        return;
    add(c.f, kRun, std::string(c.name()) + " runs a build");
}

void Analyzer::p_publisher(Call& c) {  // twine, flit, hatch, vsce, ovsx, deno, helm, docker-style push tools
    auto p = positionals(c.a, c.args_from(), "r", {"--repository", "--repository-url"});
    std::string s = p.empty() ? "" : c.a[p[0]].text;
    if (s == "upload" || s == "publish" || s == "push" || s == "release") return add(c.f, kPublish, std::string(c.name()) + " " + s);
    if (s == "check" || s == "--version" || s == "version" || s == "ls" || s == "show") return;
    if (c.name() == "deno") {
        if (s == "install" || s == "add" || s == "cache") return add(c.f, kInstall, "deno " + s);
        if (s == "fmt" && !has_flag(c.a, c.args_from(), c.a.size(), 0, {"--check"})) return add(c.f, kWrite, "deno fmt");
        if (s == "info" || s == "doc" || s == "types" || s == "lint") return;
    }
    if (c.name() == "hatch" || c.name() == "flit") {
        if (s == "build") return add(c.f, kWrite, std::string(c.name()) + " build");
    }
    add(c.f, kRun, std::string(c.name()) + " " + s);
}

void Analyzer::p_installer(Call& c) {  // rustup, nvm, pyenv, asdf, mise, volta, sdk, opam, cabal, stack, luarocks, cpanm, mix
    auto p = positionals(c.a, c.args_from(), "", {});
    std::string s = p.empty() ? "" : c.a[p[0]].text;
    std::string s2 = p.size() > 1 ? c.a[p[1]].text : "";
    if (c.name() == "cpan" || c.name() == "cpanm") return add(c.f, kInstall, std::string(c.name()));
    if (c.name() == "mix") {
        if (s == "deps.get" || s == "deps.update" || s == "archive.install" || s == "local.hex") return add(c.f, kInstall, "mix " + s);
        if (s == "hex.publish") return add(c.f, kPublish, "mix hex.publish");
        return add(c.f, kRun, "mix " + s);
    }
    if (s == "install" || s == "add" || s == "update" || s == "upgrade" || s == "use" || s == "global" ||
        s == "local" || s == "default" || (s == "toolchain" && (s2 == "install" || s2 == "add")) ||
        (s == "component" && s2 == "add") || (s == "target" && s2 == "add") || s == "plugin" || s == "pin")
        return add(c.f, kInstall, std::string(c.name()) + " " + s);
    if (s == "list" || s == "ls" || s == "show" || s == "current" || s == "which" || s == "version" ||
        s == "versions" || s == "--version" || s == "help" || s == "info" || s == "search" || s.empty() ||
        s == "ls-remote" || s == "doctor")
        return;
    if (s == "run" || s == "exec" || s == "x" || s == "shell") return add(c.f, kRun, std::string(c.name()) + " " + s);
    add(c.f, kWrite, std::string(c.name()) + " " + s);
}

}  // namespace cc::classify::detail
