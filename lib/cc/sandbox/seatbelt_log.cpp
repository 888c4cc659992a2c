#include "cc/sandbox/seatbelt_log.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace cc::sandbox {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "Sandbox: <process>(<pid>) [<anything>: ]deny(<n>) <operation>[ <target>]"
// The process name may hold spaces and parentheses ("Foo Helper (Plugin)"),
// the target spaces; so the pid is the last "(digits)" before " deny(" or
// before the ": " that precedes it.
std::optional<SeatbeltDenial> parse_message(const std::string& msg) {
    static const std::string prefix = "Sandbox: ";
    if (msg.rfind(prefix, 0) != 0) return std::nullopt;
    auto deny = msg.find(" deny(", prefix.size());
    if (deny == std::string::npos) return std::nullopt;
    // The count "deny(1)" and the operation after it.
    auto close = msg.find(") ", deny + 6);
    if (close == std::string::npos) return std::nullopt;
    for (std::size_t i = deny + 6; i < close; ++i)
        if (!is_digit(msg[i])) return std::nullopt;
    std::string rest = msg.substr(close + 2);
    SeatbeltDenial d;
    auto sp = rest.find(' ');
    d.operation = rest.substr(0, sp);
    if (sp != std::string::npos) d.target = rest.substr(sp + 1);
    if (d.operation.empty() ||
        !std::all_of(d.operation.begin(), d.operation.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '-' || is_digit(c) || c == '*'; }))
        return std::nullopt;
    // Before " deny(": "<process>(<pid>)" possibly followed by " <policy>:".
    std::string who = msg.substr(prefix.size(), deny - prefix.size());
    auto pid_end = who.rfind(')');
    if (pid_end == std::string::npos) return std::nullopt;
    auto pid_open = who.rfind('(', pid_end);
    if (pid_open == std::string::npos || pid_open + 1 == pid_end) return std::nullopt;
    for (std::size_t i = pid_open + 1; i < pid_end; ++i)
        if (!is_digit(who[i])) return std::nullopt;
    if (pid_end - pid_open > 10) return std::nullopt;
    d.pid = std::stol(who.substr(pid_open + 1, pid_end - pid_open - 1));
    d.process = who.substr(0, pid_open);
    d.message = msg;
    return d;
}

std::string action_of(const std::string& op) {
    if (op.rfind("file-read", 0) == 0 || op == "file-test-existence" || op == "file-map-executable") return "read";
    if (op.rfind("file-write", 0) == 0 || op == "file-link" || op == "file-clone") return "write";
    if (op == "process-exec" || op.rfind("process-exec", 0) == 0) return "exec";
    if (op.rfind("network", 0) == 0 || op == "system-socket") return "network";
    return "unknown";
}

}  // namespace

std::vector<std::string> seatbelt_log_argv(const std::string& tag, const std::string& log_exe) {
    return {log_exe, "stream", "--style", "ndjson", "--level", "default", "--predicate",
            "processID == 0 AND eventMessage ENDSWITH \"" + tag + "\""};
}

std::optional<SeatbeltDenial> parse_seatbelt_log_line(const std::string& line, const std::string& tag) {
    if (tag.empty() || line.empty() || line[0] != '{') return std::nullopt;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    auto msg = j.find("eventMessage");
    if (msg == j.end() || !msg->is_string()) return std::nullopt;
    // Kernel events only: a process inside can log the tag itself.
    auto pid = j.find("processID");
    if (pid == j.end() || !pid->is_number_integer() || pid->get<long long>() != 0) return std::nullopt;
    if (auto type = j.find("eventType"); type != j.end() && type->is_string() && *type != "logEvent") return std::nullopt;
    std::string text = msg->get<std::string>();
    // The rule's message ends the event, on its own line.
    if (text.size() < tag.size() || text.compare(text.size() - tag.size(), tag.size(), tag) != 0) return std::nullopt;
    text.resize(text.size() - tag.size());
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
    if (text.find('\n') != std::string::npos) return std::nullopt;  // one refusal per event
    return parse_message(text);
}

spec::Violation seatbelt_violation(const SeatbeltDenial& d) {
    spec::Violation v;
    v.action = action_of(d.operation);
    bool file = d.operation.rfind("file", 0) == 0 || d.operation.rfind("process-exec", 0) == 0;
    v.target = file ? d.target : d.target.empty() ? d.operation : d.operation + " " + d.target;
    v.raw = d.message;
    return v;
}

bool seatbelt_log_drop_notice(const std::string& line) {
    if (!line.empty() && line[0] == '{') {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) return false;
        auto type = j.find("eventType");
        return type != j.end() && type->is_string() && *type == "lossEvent";
    }
    std::string lower;
    for (char c : line) lower += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    return lower.find("dropped") != std::string::npos;
}

SeatbeltLogReader::SeatbeltLogReader(std::string tag, std::size_t burst, double per_second, std::size_t max_remembered)
    : tag_(std::move(tag)),
      burst_(static_cast<double>(burst)),
      per_second_(per_second),
      tokens_(static_cast<double>(burst)),
      max_remembered_(max_remembered) {}

std::optional<spec::Violation> SeatbeltLogReader::feed(const std::string& line, Clock::time_point now) {
    if (seatbelt_log_drop_notice(line)) {
        ++stats_.log_dropped;
        return std::nullopt;
    }
    auto d = parse_seatbelt_log_line(line, tag_);
    if (!d) return std::nullopt;
    std::string key = d->operation + '\0' + d->target;
    if (seen_.count(key)) {
        ++stats_.duplicates;
        return std::nullopt;
    }
    if (last_) {
        double secs = std::chrono::duration<double>(now - *last_).count();
        if (secs > 0) tokens_ = std::min(burst_, tokens_ + secs * per_second_);
    }
    last_ = now;
    if (tokens_ < 1) {
        ++stats_.rate_limited;
        return std::nullopt;
    }
    tokens_ -= 1;
    seen_.insert(key);
    order_.push_back(key);
    if (order_.size() > max_remembered_) {
        seen_.erase(order_.front());
        order_.pop_front();
    }
    ++stats_.emitted;
    return seatbelt_violation(*d);
}

}  // namespace cc::sandbox
