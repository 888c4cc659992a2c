#include "cc/git/receive_pack.hpp"

#include <algorithm>
#include <cctype>

namespace cc::git {

namespace {

bool is_hex_oid(std::string_view s) {
    if (s.size() != 40 && s.size() != 64) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_zero_oid(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

std::vector<std::string> split_blanks(std::string_view s) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && s[i] == ' ') ++i;
        std::size_t j = i;
        while (j < s.size() && s[j] != ' ') ++j;
        if (j > i) out.emplace_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

// The parts of git-check-ref-format(1) that matter for a gateway: a name that
// could smuggle a second field, a control byte or a path trick is refused.
std::optional<std::string> bad_ref(std::string_view ref, std::size_t max_len) {
    if (ref.size() > max_len) return "ref name is longer than " + std::to_string(max_len) + " bytes";
    if (ref.rfind("refs/", 0) != 0) return "ref name does not start with refs/";
    for (unsigned char c : ref)
        if (c < 0x20 || c == 0x7f || c == ' ' || c == '~' || c == '^' || c == ':' || c == '?' || c == '*' ||
            c == '[' || c == '\\')
            return "ref name has a forbidden character";
    if (ref.find("..") != std::string_view::npos || ref.find("//") != std::string_view::npos ||
        ref.find("@{") != std::string_view::npos || ref.find("/.") != std::string_view::npos || ref.back() == '/' ||
        ref.back() == '.' || (ref.size() >= 5 && ref.substr(ref.size() - 5) == ".lock"))
        return "ref name is not well formed";
    return std::nullopt;
}

std::string strip_lf(std::string s) {
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
}

}  // namespace

bool Command::is_delete() const { return is_zero_oid(new_oid); }
bool Command::is_create() const { return is_zero_oid(old_oid); }
std::string_view Command::kind() const {
    return is_delete() ? "delete" : is_create() ? "create" : "update";
}

// As git's parse_feature_request() reads a capability list: "name" or
// "name=value" both turn the capability on. Reading only the bare spelling
// would let "push-options=x" pass options to upstream's receive-pack while
// the gateway took them for the start of the pack and recorded none.
bool PushRequest::has(std::string_view cap) const {
    return std::any_of(capabilities.begin(), capabilities.end(), [&](const std::string& c) {
        return c == cap || (c.size() > cap.size() && c.compare(0, cap.size(), cap) == 0 && c[cap.size()] == '=');
    });
}

std::size_t PushRequest::sideband_max() const {
    if (has("side-band-64k")) return max_sideband64k_data;
    if (has("side-band")) return max_sideband_data;
    return 0;
}

Status RequestParser::take_command(const std::string& payload) {
    std::string line = strip_lf(payload);
    if (req_.commands.empty()) {
        if (line.rfind("shallow ", 0) == 0) {
            std::string oid = line.substr(8);
            if (!is_hex_oid(oid)) return input_error("request", "malformed shallow line");
            req_.shallow.push_back(oid);
            return ok();
        }
        if (line.rfind("push-cert", 0) == 0)
            return input_error("request", "signed pushes (push-cert) are not supported by the gateway");
        auto nul = line.find('\0');
        if (nul == std::string::npos) return input_error("request", "first command has no capability list");
        req_.capabilities = split_blanks(std::string_view(line).substr(nul + 1));
        line.resize(nul);
    } else if (line.find('\0') != std::string::npos) {
        return input_error("request", "NUL byte in a command line");
    }
    if (req_.commands.size() >= limits_.max_commands)
        return input_error("request", "more than " + std::to_string(limits_.max_commands) + " commands");
    auto sp1 = line.find(' ');
    auto sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string::npos) return input_error("request", "malformed command line");
    Command c{line.substr(0, sp1), line.substr(sp1 + 1, sp2 - sp1 - 1), line.substr(sp2 + 1)};
    if (!is_hex_oid(c.old_oid) || !is_hex_oid(c.new_oid) || c.old_oid.size() != c.new_oid.size())
        return input_error("request", "malformed object id in a command");
    if (auto why = bad_ref(c.ref, limits_.max_ref_len))
        return input_error("request", *why + " ('" + one_line(c.ref, 80) + "')");
    req_.commands.push_back(std::move(c));
    return ok();
}

Result<bool> RequestParser::feed(std::string_view bytes) {
    if (state_ == State::done) {
        reader_.feed(bytes);
        return true;
    }
    seen_ += bytes.size();
    reader_.feed(bytes);
    while (state_ != State::done) {
        auto p = reader_.next();
        if (!p) return p.error();
        if (!*p) {
            if (seen_ - reader_.buffered() > limits_.max_prefix_bytes ||
                reader_.buffered() > limits_.max_prefix_bytes)
                return input_error("request", "command list is larger than " +
                                                  std::to_string(limits_.max_prefix_bytes) + " bytes");
            return false;
        }
        const Pkt& k = **p;
        if (state_ == State::commands) {
            if (k.kind == Pkt::Kind::flush) {
                state_ = !req_.commands.empty() && req_.has("push-options") ? State::options : State::done;
                continue;
            }
            if (k.kind != Pkt::Kind::data) return input_error("request", "unexpected special packet in the commands");
            if (auto s = take_command(k.payload); !s) return s.error();
        } else {
            if (k.kind == Pkt::Kind::flush) {
                state_ = State::done;
                continue;
            }
            if (k.kind != Pkt::Kind::data) return input_error("request", "unexpected special packet in the push options");
            if (k.payload.find('\0') != std::string::npos || k.payload.find('\n') != std::string::npos)
                return input_error("request", "malformed push option");
            if (req_.options.size() >= limits_.max_options)
                return input_error("request", "more than " + std::to_string(limits_.max_options) + " push options");
            option_bytes_ += k.payload.size();
            if (option_bytes_ > limits_.max_option_bytes)
                return input_error("request", "push options are larger than " +
                                                  std::to_string(limits_.max_option_bytes) + " bytes");
            req_.options.push_back(k.payload);
        }
    }
    prefix_bytes_ = seen_ - reader_.buffered();
    return true;
}

Status RequestParser::finish() const {
    if (state_ == State::done) return ok();
    if (state_ == State::options) return input_error("request", "body ends inside the push options (missing flush)");
    return input_error("request", req_.commands.empty() ? "body ends before the command list"
                                                         : "body ends inside the command list (missing flush)");
}

std::string encode_prefix(const PushRequest& req, const std::vector<Command>& commands) {
    std::string out;
    for (const auto& s : req.shallow) out += pkt("shallow " + s + "\n");
    for (std::size_t i = 0; i < commands.size(); ++i) {
        const Command& c = commands[i];
        std::string line = c.old_oid + " " + c.new_oid + " " + c.ref;
        if (i == 0) {
            line.push_back('\0');
            for (std::size_t j = 0; j < req.capabilities.size(); ++j) {
                if (j) line.push_back(' ');
                line += req.capabilities[j];
            }
        }
        line.push_back('\n');
        out += pkt(line);
    }
    out += flush_pkt;
    if (!commands.empty() && req.has("push-options")) {
        for (const auto& o : req.options) out += pkt(o);
        out += flush_pkt;
    }
    return out;
}

std::string one_line(std::string_view text, std::size_t max) {
    std::string out;
    for (unsigned char c : text) {
        if (out.size() >= max) break;
        out.push_back(c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c));
    }
    return out;
}

std::string report_status(const std::vector<RefStatus>& refs, std::string_view unpack) {
    std::string out = pkt("unpack " + one_line(unpack) + "\n");
    for (const auto& r : refs)
        out += pkt(r.ok ? "ok " + r.ref + "\n" : "ng " + r.ref + " " + one_line(r.reason) + "\n");
    out += flush_pkt;
    return out;
}

Result<std::string> merge_report(std::string_view upstream_report, const std::vector<RefStatus>& extra) {
    PktReader r;
    r.feed(upstream_report);
    std::string out;
    for (;;) {
        auto p = r.next();
        if (!p) return p.error();
        if (!*p) return input_error("report", "upstream report has no closing flush");
        if ((*p)->kind == Pkt::Kind::flush) break;
        out += pkt((*p)->payload);
    }
    for (const auto& e : extra) out += pkt("ng " + e.ref + " " + one_line(e.reason) + "\n");
    out += flush_pkt;
    return out;
}

std::string response_body(const PushRequest& req, const std::vector<std::string>& messages,
                          const std::string& report) {
    std::size_t band = req.sideband_max();
    if (!band) return req.wants_report() ? report : std::string();
    std::string out;
    for (const auto& m : messages) out += sideband(2, one_line(m) + "\n", band);
    if (req.wants_report()) out += sideband(1, report, band);
    out += flush_pkt;
    return out;
}

Result<std::string> filter_advertisement(std::string_view body) {
    PktReader r;
    r.feed(body);
    std::string out;
    bool first_ref = true;
    int flushes = 0;
    for (;;) {
        auto p = r.next();
        if (!p) return p.error();
        if (!*p) break;
        const Pkt& k = **p;
        if (k.kind == Pkt::Kind::flush) {
            out += flush_pkt;
            ++flushes;
            continue;
        }
        if (out.empty() && k.payload.rfind("# service=git-receive-pack", 0) != 0)
            return input_error("advertisement", "does not start with '# service=git-receive-pack'");
        std::string payload = k.payload;
        auto nul = payload.find('\0');
        if (flushes >= 1 && first_ref && nul != std::string::npos) {
            first_ref = false;
            std::string kept;
            std::string caps = strip_lf(payload.substr(nul + 1));
            for (const auto& cap : split_blanks(caps)) {
                if (cap.rfind("push-cert", 0) == 0) continue;
                if (!kept.empty()) kept.push_back(' ');
                kept += cap;
            }
            payload = payload.substr(0, nul + 1) + kept + "\n";
        }
        out += pkt(payload);
    }
    if (r.buffered() != 0) return input_error("advertisement", "ends inside a packet");
    if (out.empty()) return input_error("advertisement", "is empty");
    return out;
}

namespace {
const char* gateway_caps =
    "report-status report-status-v2 delete-refs side-band-64k quiet atomic ofs-delta push-options "
    "object-format=sha1 agent=cc-pushgate/" CC_VERSION;
}

std::string synthetic_advertisement() {
    return pkt("# service=git-receive-pack\n") + std::string(flush_pkt) +
           pkt(std::string(40, '0') + " capabilities^{}" + std::string(1, '\0') + gateway_caps + "\n") +
           std::string(flush_pkt);
}

std::string error_advertisement(std::string_view message) {
    return pkt("# service=git-receive-pack\n") + std::string(flush_pkt) + pkt("ERR " + one_line(message));
}

namespace {

bool good_name(std::string_view s) {
    if (s.empty() || s == "." || s == ".." || s.size() > 100) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string strip_git(std::string s) {
    if (s.size() > 4 && lower(s.substr(s.size() - 4)) == ".git") s.resize(s.size() - 4);
    return s;
}

std::vector<std::string> split_path(std::string_view p) {
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i <= p.size()) {
        std::size_t j = p.find('/', i);
        if (j == std::string_view::npos) j = p.size();
        if (j > i) parts.emplace_back(p.substr(i, j - i));
        i = j + 1;
    }
    return parts;
}

}  // namespace

Route parse_route(std::string_view target) {
    Route r;
    std::string_view path = target, query;
    if (auto q = target.find('?'); q != std::string_view::npos) {
        path = target.substr(0, q);
        query = target.substr(q + 1);
    }
    if (path.find('%') != std::string_view::npos) return r;  // no escapes: one spelling per repo
    auto parts = split_path(path);
    if (!parts.empty() && lower(parts[0]) == "github.com") parts.erase(parts.begin());
    if (parts.size() < 3) return r;
    std::string owner = parts[0], name = strip_git(parts[1]);
    if (!good_name(owner) || !good_name(name)) return r;
    std::vector<std::string> rest(parts.begin() + 2, parts.end());
    if (rest.size() == 2 && rest[0] == "info" && rest[1] == "refs") {
        r.kind = Route::Kind::info_refs;
        std::size_t i = 0;
        while (i <= query.size()) {
            std::size_t j = query.find('&', i);
            if (j == std::string_view::npos) j = query.size();
            auto kv = query.substr(i, j - i);
            if (kv.rfind("service=", 0) == 0) r.service = std::string(kv.substr(8));
            i = j + 1;
        }
    } else if (rest.size() == 1 && rest[0] == "git-receive-pack") {
        r.kind = Route::Kind::receive_pack;
    } else if (rest.size() == 1 && rest[0] == "git-upload-pack") {
        r.kind = Route::Kind::upload_pack;
    } else {
        return r;
    }
    r.owner = owner;
    r.name = name;
    r.repo_key = "github.com/" + lower(owner) + "/" + lower(name);
    return r;
}

Result<std::string> normalise_repo(std::string_view spelling) {
    std::string s(spelling);
    for (const char* prefix : {"https://", "http://", "ssh://git@", "ssh://", "git@"}) {
        if (lower(s).rfind(prefix, 0) == 0) {
            s = s.substr(std::string_view(prefix).size());
            break;
        }
    }
    if (lower(s).rfind("github.com/", 0) == 0 || lower(s).rfind("github.com:", 0) == 0) s = s.substr(11);
    while (!s.empty() && s.back() == '/') s.pop_back();
    auto parts = split_path(s);
    if (parts.size() != 2 || !good_name(parts[0]) || !good_name(strip_git(parts[1])))
        return input_error("'" + std::string(spelling) + "'", "is not a repository (OWNER/NAME)");
    return "github.com/" + lower(parts[0]) + "/" + lower(strip_git(parts[1]));
}

const std::vector<std::string>& github_push_prefixes() {
    static const std::vector<std::string> p = {"https://github.com/", "git@github.com:", "ssh://git@github.com/"};
    return p;
}

GatewayUrl split_gateway_url(const std::string& url) {
    GatewayUrl g;
    g.base = url;
    auto scheme = url.find("://");
    auto path = scheme == std::string::npos ? std::string::npos : url.find('/', scheme + 3);
    if (path != std::string::npos) {
        std::string rest = url.substr(path + 1);
        if (!rest.empty() && rest.back() == '/') rest.pop_back();
        // The ready event's URL: the secret is the only path segment, hex.
        if (!rest.empty() && rest.find('/') == std::string::npos &&
            rest.find_first_not_of("0123456789abcdef") == std::string::npos && rest.size() >= 16) {
            g.secret = rest;
            g.base = url.substr(0, path + 1);
        }
    }
    if (g.base.empty() || g.base.back() != '/') g.base.push_back('/');
    return g;
}

std::string git_config_text(const std::string& url) {
    GatewayUrl g = split_gateway_url(url);
    const std::string& base = g.base;
    std::string out;
    out += "# cc-pushgate: pushes to GitHub go through the gateway at " + base + "\n";
    out += "# The rewrite is a convenience, not the control: see cc-pushgate(1).\n";
    if (!g.secret.empty())
        out += "# This file holds the session's secret: keep it mode 0600, readable by the agent's git alone.\n";
    out += "[url \"" + base + "github.com/\"]\n";
    for (const auto& p : github_push_prefixes()) out += "\tpushInsteadOf = " + p + "\n";
    out += "# Reach the loopback gateway directly, never through an HTTP proxy;\n";
    out += "# other clients need no_proxy=127.0.0.1,localhost,::1 in their environment.\n";
    out += "[http \"" + base + "\"]\n";
    out += "\tproxy = \"\"\n";
    // The session's secret as a header, not in the URL: git's remote helper
    // gets the URL on its command line, which any local user can read.
    if (!g.secret.empty()) out += "\textraHeader = X-CC-Pushgate-Session: " + g.secret + "\n";
    return out;
}

}  // namespace cc::git
