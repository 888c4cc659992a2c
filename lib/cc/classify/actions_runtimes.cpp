// Interpreters, containers and the system's own knobs (ip, hostname), and
// the one-line handlers for editors, namespace escapes and user changes.
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

void Analyzer::python(Call& c) {
    std::size_t from = c.args_from();
    for (std::size_t k = from; k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        if (t == "-V" || t == "--version" || t == "-VV") return;
        if (t == "-c") return add(c.f, kRun, std::string(c.name()) + " -c runs inline code");
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
        if (!is_opt(c.a[k])) return add(c.f, kRun, std::string(c.name()) + " runs '" + t + "'");
    }
    add(c.f, kRun, std::string(c.name()) + " runs code read from its input");
}

void Analyzer::interpreter(Call& c) {
    std::size_t from = c.args_from();
    if (c.a.size() == from + 1) {
        sv t = c.a[from].text;
        if (t == "--version" || t == "-v" || t == "-V" || t == "-version" || t == "version" || t == "--help" || t == "-h")
            return;
    }
    add(c.f, kRun, std::string(c.name()) + " runs code");
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
    add(c.f, kRun, tool + " " + s + " acts through the container daemon");
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

void Analyzer::kubectl(Call& c) {
    auto p = positionals(c.a, c.args_from(), "nlcs", {"--namespace", "--context", "--cluster", "--kubeconfig", "--selector", "--server", "--output", "-o", "--user"});
    std::string s = p.empty() ? "" : c.a[p[0]].text;
    static constexpr auto ro = sorted_names({"get", "describe", "logs", "version", "explain", "top",
                                              "api-resources", "api-versions", "cluster-info", "diff", "events", "auth", ""});
    if (contains(ro, s)) return add(c.f, kNet, "kubectl " + s + " reads the cluster");
    if (s == "config" && p.size() > 1 && (c.a[p[1]].text == "view" || c.a[p[1]].text == "get-contexts" || c.a[p[1]].text == "current-context"))
        return;
    add(c.f, kRun, "kubectl " + s + " acts on the cluster");
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
