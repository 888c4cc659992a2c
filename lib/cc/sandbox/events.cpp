#include "cc/sandbox/events.hpp"

#include <cstring>
#include <utility>

namespace cc::sandbox {

std::string EventWriter::line(std::string_view kind, nlohmann::json fields) {
    nlohmann::json j = {{"event", kind}, {"sessionId", session_}, {"seq", ++seq_}};
    for (auto& [k, v] : fields.items()) j[k] = std::move(v);
    return cc::json::write(j);
}

// Built by hand, keys in the same (sorted) order nlohmann writes: this runs
// once per 64 KiB of child output.
std::string EventWriter::chunk(std::string_view kind, std::string_view data) {
    std::string out;
    chunk_into(out, kind, data);
    return out;
}

void EventWriter::chunk_into(std::string& out, std::string_view kind, std::string_view data) {
    bool tail = false;
    bool text = utf8_valid_prefix(data, tail) == data.size();
    out.clear();
    out.reserve(data.size() + data.size() / 8 + 96);
    out += text ? "{" : "{\"bytes\":\"" + base64(data) + "\",";
    out += "\"event\":";
    append_string(out, kind);
    out += ",\"seq\":" + std::to_string(++seq_) + ",\"sessionId\":";
    cc::json::append_value(out, session_);
    if (text) {
        out += ",\"text\":";
        append_string(out, data);
    }
    out += "}";
}

std::string_view Utf8Carry::take(std::string_view data, std::string& scratch) {
    std::string_view all = data;
    if (!carry_.empty()) {
        scratch.assign(carry_);
        scratch.append(data);
        carry_.clear();
        all = scratch;
    }
    bool tail = false;
    std::size_t ok = utf8_valid_prefix(all, tail);
    if (tail && all.size() - ok <= 3) {
        carry_.assign(all.substr(ok));
        all = all.substr(0, ok);
    }
    return all;
}

std::string Utf8Carry::take(std::string_view data) {
    std::string buf = std::move(carry_);
    carry_.clear();
    buf.append(data);
    bool tail = false;
    std::size_t ok = utf8_valid_prefix(buf, tail);
    if (tail && buf.size() - ok <= 3) {
        carry_ = buf.substr(ok);
        buf.resize(ok);
    }
    return buf;
}

nlohmann::json setup_failure_exit(const Error& e) {
    return {{"exitCode", 125}, {"endedBy", "setup"}, {"reason", e.one_line()}};
}

}  // namespace cc::sandbox
