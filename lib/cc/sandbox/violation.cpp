#include "cc/sandbox/violation.hpp"
#include "cc/core/json_reader.hpp"
#include "cc/core/json_writer.hpp"

#include <array>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cc::sandbox {

namespace {

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

bool looks_like_path(std::string_view s) {
    return !s.empty() && (s[0] == '/' || s.rfind("./", 0) == 0 || s.rfind("../", 0) == 0 || s[0] == '~');
}

// The first quoted path ('...', "...", `...', ‘...’), else the first word
// that starts with '/' (trailing ':' or ',' dropped).
std::string target_of(std::string_view line) {
    static const std::array<std::pair<std::string_view, std::string_view>, 4> quotes = {{
        {"'", "'"}, {"\"", "\""}, {"`", "'"}, {"\xE2\x80\x98", "\xE2\x80\x99"}}};
    for (std::size_t i = 0; i < line.size(); ++i) {
        for (const auto& [open, close] : quotes) {
            if (line.compare(i, open.size(), open) != 0) continue;
            std::size_t start = i + open.size();
            std::size_t end = line.find(close, start);
            if (end == std::string_view::npos) continue;
            std::string_view inner = line.substr(start, end - start);
            if (looks_like_path(inner)) return std::string(inner);
        }
    }
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ') ++i;
        std::size_t j = line.find(' ', i);
        if (j == std::string_view::npos) j = line.size();
        std::string_view w = line.substr(i, j - i);
        while (!w.empty() && (w.back() == ':' || w.back() == ',' || w.back() == ')')) w.remove_suffix(1);
        if (looks_like_path(w) && w.size() > 1) return std::string(w);
        i = j;
    }
    return "";
}

std::string action_of(std::string_view l, std::string_view message) {
    if (message == "Read-only file system" || message == "EROFS") return "write";
    for (std::string_view k : {"cannot execute", "exec", "Exec"})
        if (contains(l, k)) return "exec";
    for (std::string_view k : {"connect", "socket", "bind("})
        if (contains(l, k)) return "network";
    for (std::string_view k : {"cannot create", "cannot touch", "cannot remove", "cannot move", "cannot make",
                               "cannot overwrite", "cannot rename", "cannot link", "cannot change", "create",
                               "write", "Write", "mkdir", "unlink", "rename", "rmdir", "chmod", "O_WRONLY", "O_RDWR", ">"})
        if (contains(l, k)) return "write";
    for (std::string_view k : {"cat: ", "head: ", "tail: ", "less: ", "grep: ", "ls: ", "cp: ", "diff: ", "find: ",
                               "cannot open", "cannot access", "cannot read", "cannot stat", "open", "read",
                               "Read", "stat", "directory"})
        if (contains(l, k)) return "read";
    return "unknown";
}

}  // namespace

std::optional<spec::Violation> parse_violation(const std::string& line) {
    static const std::array<std::string_view, 6> messages = {"Read-only file system", "Operation not permitted",
                                                             "Permission denied", "EROFS", "EPERM", "EACCES"};
    std::string_view l(line);
    for (auto m : messages) {
        if (!contains(l, m)) continue;
        spec::Violation v;
        v.action = action_of(l, m);
        v.target = target_of(l);
        v.raw = line;
        return v;
    }
    return std::nullopt;
}

std::optional<spec::Violation> network_violation(const std::string& egress_line) {
    auto j = nlohmann::json::parse(egress_line, nullptr, false);
    if (!j.is_object() || cc::json::string_at(j, "event") != "connection" || cc::json::string_at(j, "decision") != "deny")
        return std::nullopt;
    // A name that is not UTF-8 comes as {"bytes":...} (cc-json(5)).
    std::string host = j.contains("host") ? cc::json::bytes_of(j["host"]).value_or("") : "";
    if (host.empty()) host = cc::json::string_at(j, "address");
    if (host.empty()) host = "?";
    else if (host.find(':') != std::string::npos) host = "[" + host + "]";  // an IPv6 literal
    std::string target = host;
    if (j.contains("port") && j["port"].is_number_unsigned()) target += ":" + std::to_string(j["port"].get<unsigned>());
    return spec::Violation{"network", target, egress_line};
}

}  // namespace cc::sandbox
