// Interpreters, containers and the system's own knobs (ip, hostname), and
// the one-line handlers for editors, namespace escapes and user changes.
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

void Analyzer::python(Call& c) {
    std::size_t from = c.args_from();
    for (std::size_t k = from; k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        if (t == "-V" || t == "--version" || t == "-VV") return;
        if (t == "-c") {
            add(c.f, kRun, std::string(c.name()) + " -c runs inline code");
            if (k + 1 < c.a.size() && !c.a[k + 1].dynamic) inline_code(c, "python", c.a[k + 1].text);
            return;
        }
        if (t == "-m" && k + 1 < c.a.size()) {
            std::string m = c.a[k + 1].text;
            if (m == "pip") return pip(c, k + 2);
            if (m == "venv" || m == "virtualenv") return add(c.f, kWrite, "python -m venv creates a directory");
            if (m == "json.tool" || m == "tokenize" || m == "pydoc" || m == "site" || m == "sysconfig" || m == "platform")
                return;
            if (m == "twine") {
                Args rest_args = {Arg{"twine", false}};
                rest_args.insert(rest_args.end(), c.a.begin() + static_cast<std::ptrdiff_t>(k + 2), c.a.end());
                return command(rest_args, 0, c.f, c.ctx, c.depth);
            }
            if (m == "http.server") add(c.f, kNet, "python -m http.server serves files");
            return add(c.f, kRun, "python -m " + m);
        }
        if (!is_opt(c.a[k]) && t != "-") return add(c.f, kRun, std::string(c.name()) + " runs '" + t + "'");
        if (t == "-") break;
    }
    add(c.f, kRun, std::string(c.name()) + " runs code read from its input");
    if (c.ctx.stdin_script) inline_code(c, "python", *c.ctx.stdin_script);
}

void Analyzer::interpreter(Call& c) {
    std::size_t from = c.args_from();
    if (c.a.size() == from + 1) {
        sv t = c.a[from].text;
        if (t == "--version" || t == "-v" || t == "-V" || t == "-version" || t == "version" || t == "--help" || t == "-h")
            return;
    }
    add(c.f, kRun, std::string(c.name()) + " runs code");
    // Inline code, or a script on stdin: the calls in it that shell out or
    // delete are judged as the commands they amount to.
    sv name = c.name();
    sv lang = name == "node" || name == "nodejs" || name == "bun" || name == "deno" ? sv("node")
              : name == "ruby"                                                    ? sv("ruby")
              : name == "perl"                                                    ? sv("perl")
                                                                                  : sv();
    if (lang.empty()) return;
    for (std::size_t k = from; k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        bool inline_opt = t == "-e" || t == "--eval" || (lang == "node" && (t == "-p" || t == "--print")) ||
                          (lang == "perl" && (t == "-E" || t == "-ne" || t == "-pe" || t == "-le" || t == "-lne"));
        if (inline_opt) {
            if (k + 1 < c.a.size() && !c.a[k + 1].dynamic) inline_code(c, lang, c.a[k + 1].text);
            return;
        }
        if (starts_with(t, "--eval=")) return inline_code(c, lang, t.substr(7));
        if (!is_opt(c.a[k]) && t != "-") return;  // a script file: not read here
    }
    if (c.ctx.stdin_script) inline_code(c, lang, *c.ctx.stdin_script);
}

void Analyzer::docker(Call& c) {
    std::size_t from = c.args_from();
    auto p = positionals(c.a, from, "Hcl", {"--host", "--context", "--config", "--log-level", "--tlscacert", "--tlscert", "--tlskey"});
    std::string s = p.empty() ? "" : c.a[p[0]].text;
    std::string tool(c.name());
    if (s == "push") return add(c.f, kPublish, tool + " push publishes an image");
    if (s == "--version" || s == "version" || s.empty()) {
        if (s.empty() && c.a.size() > from) return add(c.f, kRun, tool + " talks to a root daemon");
        return;
    }
    // Inspection through the daemon reads (allowed in the read-only modes);
    // prunes and volume removal delete in bulk.
    std::string s2 = p.size() > 1 ? c.a[p[1]].text : "";
    static constexpr auto inspect = sorted_names({"ps", "images", "logs", "inspect", "info", "top", "stats", "port",
                                                  "diff", "history", "events", "search", "version"});
    static constexpr auto group_reads = sorted_names({"ls", "list", "inspect", "logs", "ps", "top", "stats", "port",
                                                      "diff", "history", "df"});
    if (contains(inspect, s) && s != "search") return;
    if ((s == "container" || s == "image" || s == "volume" || s == "network" || s == "system" || s == "compose" ||
         s == "context" || s == "buildx") &&
        contains(group_reads, s2))
        return;
    add(c.f, kRun, tool + " " + s + " acts through the container daemon");
    if (s2 == "prune" || (s == "volume" && (s2 == "rm" || s2 == "remove")) || (s == "system" && s2 == "reset"))
        add(c.f, kDestroyWork, tool + " " + s + " " + s2 + " deletes containers, images or volumes in bulk");
    if (s == "search") add(c.f, kNet, tool + " search");
    if (s == "pull" || s == "build" || s == "login") add(c.f, kNet, tool + " " + s);
    if (s != "run" && s != "create" && s != "exec" && !(s == "container" && p.size() > 1)) return;
    for (std::size_t k = p[0] + 1; k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        std::string next = k + 1 < c.a.size() ? c.a[k + 1].text : "";
        auto val = [&](sv name) -> std::optional<std::string> {
            if (t == name) return next;
            if (starts_with(t, std::string(name) + "=")) return t.substr(name.size() + 1);
            return std::nullopt;
        };
        if (t == "--privileged") return add(c.f, kEscape, tool + " --privileged");
        for (sv ns : {"--pid", "--net", "--network", "--ipc", "--uts", "--userns", "--cgroupns"})
            if (auto v = val(ns); v && *v == "host") return add(c.f, kEscape, tool + " " + std::string(ns) + "=host");
        if (auto v = val("--cap-add")) {
            std::string cap = *v;
            std::transform(cap.begin(), cap.end(), cap.begin(), [](unsigned char ch) { return std::toupper(ch); });
            if (cap == "ALL" || cap.find("SYS_ADMIN") != std::string::npos || cap.find("SYS_MODULE") != std::string::npos ||
                cap.find("SYS_PTRACE") != std::string::npos || cap.find("DAC_READ_SEARCH") != std::string::npos ||
                cap.find("SYS_RAWIO") != std::string::npos)
                return add(c.f, kEscape, tool + " --cap-add " + *v);
        }
        if (auto v = val("--security-opt"); v && (v->find("unconfined") != std::string::npos || v->find("disable") != std::string::npos))
            return add(c.f, kEscape, tool + " --security-opt " + *v);
        if (auto v = val("--device")) return add(c.f, kEscape, tool + " --device " + *v);
        std::optional<std::string> vol = val("-v");
        if (!vol) vol = val("--volume");
        if (!vol && starts_with(t, "-v") && t.size() > 2 && t[2] != '-') vol = t.substr(2);
        std::optional<std::string> mnt = val("--mount");
        std::string src;
        if (vol) src = vol->substr(0, vol->find(':'));
        if (mnt) {
            auto at = mnt->find("source=");
            if (at == std::string::npos) at = mnt->find("src=");
            if (at != std::string::npos) {
                auto start = mnt->find('=', at) + 1;
                src = mnt->substr(start, mnt->find(',', start) - start);
            }
        }
        if (!src.empty()) {
            std::string n = normalize_path(src);
            if (n == "/" || n == "/var/run/docker.sock" || n == "/run/docker.sock" || n == "/proc" || n == "/sys" ||
                n == "/dev" || n == "/etc" || n == "/root" || n == "/boot" || n == "/var/run" || n == "/run" ||
                starts_with(n, "/run/containerd") || starts_with(n, "/var/lib/docker"))
                return add(c.f, kEscape, tool + " mounts the host path '" + src + "'");
        }
    }
}

// Cloud and CI command lines (aws, gsutil, gcloud, gitlab-runner): they act
// on remote state. What deletes there (s3 rm/rb, sync --delete, delete-*,
// terminate-*, unregister) is outward and destructive: asked in chat.
void Analyzer::cloud(Call& c) {
    std::string tool(c.name());
    auto pos = positionals(c.a, c.args_from(), "", {"--profile", "--region", "--output", "--endpoint-url", "--project",
                                                    "--bucket", "--key", "--query", "--zone", "--format"});
    if (pos.empty()) {
        if (c.a.size() == c.args_from() + 1 && (c.a[c.args_from()].text == "--version" || c.a[c.args_from()].text == "--help"))
            return;
        return add(c.f, kRun, tool + " acts on remote state");
    }
    std::vector<std::string> w;
    for (auto k : pos) w.push_back(c.a[k].text);
    add(c.f, kNet, tool + " talks to its service");
    auto word = [&](std::size_t j) { return j < w.size() ? w[j] : std::string(); };
    bool destroys = false;
    if (tool == "aws" && word(0) == "s3")
        destroys = word(1) == "rm" || word(1) == "rb" || word(1) == "mv" ||
                   (word(1) == "sync" && has_flag(c.a, c.args_from(), c.a.size(), '\0', {"--delete"}));
    else if (tool == "gsutil")
        destroys = word(0) == "rm" || word(0) == "rb" || word(0) == "mv" ||
                   (word(0) == "rsync" && has_flag(c.a, c.args_from(), c.a.size(), 'd', {}));
    else if (tool == "gitlab-runner")
        destroys = word(0) == "unregister" || word(0) == "uninstall";
    for (const auto& x : w)
        if (starts_with(x, "delete") || starts_with(x, "remove") || starts_with(x, "terminate") || starts_with(x, "purge") ||
            starts_with(x, "destroy") || x == "rm")
            destroys = true;
    if (destroys) {
        add(c.f, kNetWrite, tool + " " + word(0) + " " + word(1) + " changes remote state");
        add(c.f, kDestroyWork, tool + " " + word(0) + " " + word(1) + " deletes remote data");
        return;
    }
    static constexpr auto reads = sorted_names({"ls", "list", "describe", "get", "show", "cat", "du", "stat", "help",
                                                "version", "info", "whoami", "get-caller-identity"});
    for (const auto& x : w)
        if (contains(reads, x) || starts_with(x, "list-") || starts_with(x, "describe-") || starts_with(x, "get-"))
            return;
    add(c.f, kRun, tool + " " + word(0) + " acts on remote state");
}

void Analyzer::kubectl(Call& c) {
    auto p = positionals(c.a, c.args_from(), "nlcs", {"--namespace", "--context", "--cluster", "--kubeconfig", "--selector", "--server", "--output", "-o", "--user"});
    std::string s = p.empty() ? "" : c.a[p[0]].text;
    static constexpr auto ro = sorted_names({"get", "describe", "logs", "version", "explain", "top",
                                              "api-resources", "api-versions", "cluster-info", "diff", "events", "auth", ""});
    // Reading the cluster is inspection, allowed in the read-only modes.
    if (contains(ro, s)) return;
    if (s == "config" && p.size() > 1 && (c.a[p[1]].text == "view" || c.a[p[1]].text == "get-contexts" || c.a[p[1]].text == "current-context"))
        return;
    if (has_flag(c.a, c.args_from(), c.a.size(), '\0', {"--dry-run"}) && s != "exec" && s != "run")
        return add(c.f, kNet, "kubectl " + s + " --dry-run asks the cluster");
    add(c.f, kRun, "kubectl " + s + " acts on the cluster");
    if (s == "delete" || s == "drain" || (s == "scale" && std::any_of(c.a.begin(), c.a.end(), [](const Arg& x) {
                                              return x.text == "--replicas=0";
                                          })))
        add(c.f, kDestroyWork, "kubectl " + s + " deletes or stops what runs in the cluster");
}

void Analyzer::ip(Call& c) {
    auto p = positionals(c.a, c.args_from(), "n", {"-netns"});
    for (std::size_t j = 0; j < p.size(); ++j) {
        sv t = c.a[p[j]].text;
        if (t == "netns" && j + 1 < p.size() && c.a[p[j + 1]].text == "exec")
            return add(c.f, kEscape, "ip netns exec enters a network namespace");
        if (t == "add" || t == "del" || t == "delete" || t == "set" || t == "flush" || t == "change" ||
            t == "replace" || t == "append" || t == "a")
            return add(c.f, kPriv, "ip " + std::string(t) + " changes the network configuration");
    }
}

void Analyzer::hostname(Call& c) {
    auto p = positionals(c.a, c.args_from(), "F", {"--file"});
    if (!p.empty() || has_flag(c.a, c.args_from(), c.a.size(), 'F', {"--file"}))
        add(c.f, kPriv, "hostname sets the host name");
}

void Analyzer::editor(Call& c) { add(c.f, kWrite, std::string(c.name()) + " edits files"); }

void Analyzer::escape(Call& c) { add(c.f, kEscape, std::string(c.name()) + " leaves the sandbox's namespaces or root"); }

void Analyzer::privilege(Call& c) { add(c.f, kPriv, std::string(c.name()) + " changes users, groups or capabilities"); }

}  // namespace cc::classify::detail
