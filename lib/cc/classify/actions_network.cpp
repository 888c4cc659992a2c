// Network clients: reads, writes (uploads, POSTs) and copies to remote hosts.
#include "cc/classify/analyzer.hpp"

namespace cc::classify::detail {

namespace {

// DELETE, PUT and PATCH remove or replace what is there: outward and
// destructive, unless every address in the words is this machine's own.
bool destroys_remote(std::string m, const Args& a, std::size_t from) {
    std::transform(m.begin(), m.end(), m.begin(), [](unsigned char ch) { return std::toupper(ch); });
    if (m != "DELETE" && m != "PUT" && m != "PATCH") return false;
    bool remote = false, any = false;
    for (std::size_t k = from; k < a.size(); ++k) {
        const std::string& t = a[k].text;
        if (is_opt(a[k]) || (t.find("://") == std::string::npos && t.find('.') == std::string::npos && t.find(':') == std::string::npos))
            continue;
        any = true;
        sv rest(t);
        if (auto p = rest.find("://"); p != sv::npos) rest.remove_prefix(p + 3);
        if (auto at = rest.find('@'); at != sv::npos && at < rest.find('/')) rest.remove_prefix(at + 1);
        if (!(starts_with(rest, "localhost") || starts_with(rest, "127.") || starts_with(rest, "[::1]") ||
              starts_with(rest, ":")))
            remote = true;
    }
    return remote || !any;
}

}  // namespace

void Analyzer::n_curl(Call& c) {
    std::size_t from = c.args_from();
    add(c.f, kNet, "curl talks to the network");
    static const sv value_opts = "AbcCdDeEFHKmoPQrtTuUwxXyYz";
    for (std::size_t k = from; k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        if (!is_opt(c.a[k])) continue;
        std::string name, value;
        bool has_value = false;
        if (starts_with(t, "--")) {
            auto eq = t.find('=');
            name = t.substr(0, eq);
            if (eq != std::string::npos) {
                value = t.substr(eq + 1);
                has_value = true;
            } else if (k + 1 < c.a.size()) {
                value = c.a[k + 1].text;
                has_value = true;
            }
        } else {
            for (std::size_t j = 1; j < t.size(); ++j) {
                char ch = t[j];
                if (ch == 'O' || ch == 'J') add(c.f, kWrite, "curl -O saves the response to a file");
                if (value_opts.find(ch) != sv::npos) {
                    name = std::string("-") + ch;
                    if (j + 1 < t.size()) value = t.substr(j + 1);
                    else if (k + 1 < c.a.size()) value = c.a[k + 1].text;
                    has_value = true;
                    break;
                }
            }
        }
        if (name == "-o" || name == "--output" || name == "-D" || name == "--dump-header" || name == "-c" ||
            name == "--cookie-jar" || name == "--trace" || name == "--trace-ascii" || name == "--stderr" ||
            name == "--libcurl" || name == "--etag-save" || name == "--hsts" || name == "--alt-svc") {
            if (has_value) write_target(c.f, value, false, "curl " + name);
        } else if (name == "--remote-name" || name == "--remote-name-all" || name == "--output-dir" ||
                   name == "--remote-header-name") {
            add(c.f, kWrite, "curl " + name + " saves the response to a file");
        } else if (name == "-d" || starts_with(name, "--data") || name == "-F" || starts_with(name, "--form") ||
                   name == "-T" || name == "--upload-file" || name == "--json" || name == "--mail-rcpt") {
            add(c.f, kNetWrite, "curl " + name + " sends data");
        } else if ((name == "-X" || name == "--request") && has_value) {
            std::string m = value;
            std::transform(m.begin(), m.end(), m.begin(), [](unsigned char ch) { return std::toupper(ch); });
            if (m != "GET" && m != "HEAD" && m != "OPTIONS") add(c.f, kNetWrite, "curl -X " + m + " changes remote state");
            if (destroys_remote(m, c.a, from)) add(c.f, kDestroyWork, "curl -X " + m + " removes or replaces remote data");
        }
    }
}

void Analyzer::n_wget(Call& c) {
    std::size_t from = c.args_from();
    add(c.f, kNet, "wget talks to the network");
    bool to_stdout = false, spider = false;
    if (auto o = opt_value(c.a, from, 'O', {"--output-document"}, "oaeiPtTwUQBDA")) {
        if (is_harmless_sink(*o)) to_stdout = true;
        else write_target(c.f, *o, false, "wget -O");
    }
    if (has_flag(c.a, from, c.a.size(), 0, {"--spider"})) spider = true;
    if (auto o = opt_value(c.a, from, 'o', {"--output-file"}, "OaeiPtTwUQBDA")) write_target(c.f, *o, false, "wget -o");
    if (!to_stdout && !spider && !opt_value(c.a, from, 'O', {"--output-document"}, "oaeiPtTwUQBDA"))
        add(c.f, kWrite, "wget saves downloads to files");
    if (has_flag(c.a, from, c.a.size(), 0, {"--post-data", "--post-file", "--body-data", "--body-file"}))
        add(c.f, kNetWrite, "wget sends data");
    if (auto m = opt_value(c.a, from, 0, {"--method"}); m && *m != "GET" && *m != "HEAD") {
        add(c.f, kNetWrite, "wget --method " + *m + " changes remote state");
        if (destroys_remote(*m, c.a, from)) add(c.f, kDestroyWork, "wget --method " + *m + " removes or replaces remote data");
    }
}

void Analyzer::n_httpie(Call& c) {
    add(c.f, kNet, std::string(c.name()) + " talks to the network");
    auto pos = positionals(c.a, c.args_from(), "aAo", {"--auth", "--auth-type", "--output", "--session"});
    for (std::size_t j = 0; j < pos.size(); ++j) {
        const std::string& t = c.a[pos[j]].text;
        if (j == 0 && (t == "POST" || t == "PUT" || t == "PATCH" || t == "DELETE")) {
            if (destroys_remote(t, c.a, pos[0] + 1))
                add(c.f, kDestroyWork, std::string(c.name()) + " " + t + " removes or replaces remote data");
            return add(c.f, kNetWrite, std::string(c.name()) + " " + t + " changes remote state");
        }
        if (j > 0 && (t.find('=') != std::string::npos || t.find(":=") != std::string::npos) &&
            t.find("==") == std::string::npos)
            return add(c.f, kNetWrite, std::string(c.name()) + " sends data");
    }
    if (has_flag(c.a, c.args_from(), c.a.size(), 'd', {"--download"})) add(c.f, kWrite, "downloads to a file");
}

void Analyzer::n_ssh(Call& c) {
    add(c.f, kNet, "ssh talks to another host");
    add(c.f, kRun, "ssh runs commands on another host");
}

void Analyzer::n_copy(Call& c) {  // scp, rsync, sftp
    bool remote = c.name() == "sftp" || c.name() == "ftp";
    for (std::size_t k = c.args_from(); k < c.a.size(); ++k) {
        const std::string& t = c.a[k].text;
        auto colon = t.find(':');
        if (!is_opt(c.a[k]) && colon != std::string::npos && colon > 0 && t.find('/') > colon) remote = true;
    }
    if (remote) {
        add(c.f, kNet, std::string(c.name()) + " copies over the network");
        add(c.f, kNetWrite, std::string(c.name()) + " may send files");
    }
    // Deleting at the far end (what the source lacks) or the sources
    // themselves: bulk deletion no undo brings back.
    if (has_flag(c.a, c.args_from(), c.a.size(), '\0',
                 {"--delete", "--delete-before", "--delete-during", "--delete-delay", "--delete-after",
                  "--delete-excluded", "--delete-missing-args", "--del", "--remove-source-files"}))
        add(c.f, kDestroyWork, std::string(c.name()) + " deletes files at the destination or the source");
    f_write(c);
}

}  // namespace cc::classify::detail
