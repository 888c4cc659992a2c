// A Result written as JSON text directly, for the one-line form and --jsonl:
// the same bytes as cc::json::write(to_json()) (a test holds the two equal on the case
// table in every mode), without building a tree of it first. Building and
// destroying that tree was half of --jsonl's time.
#include <array>
#include <charconv>

#include "cc/classify/classify.hpp"
#include "cc/core/json_writer.hpp"

namespace cc::classify {

namespace {

// 0: a byte that stands for itself; 1: one to escape; 2: one past ASCII.
constexpr auto byte_kind = [] {
    std::array<unsigned char, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[static_cast<std::size_t>(c)] = 1;
    t['"'] = t['\\'] = 1;
    for (int c = 0x80; c < 256; ++c) t[static_cast<std::size_t>(c)] = 2;
    return t;
}();

void string(std::string& out, std::string_view s) {
    unsigned char seen = 0;
    for (unsigned char c : s) seen |= byte_kind[c];
    if (seen == 0) {  // most strings: nothing to escape, all ASCII
        out.push_back('"');
        out.append(s);
        out.push_back('"');
        return;
    }
    if ((seen & 2) && !cc::json::utf8_valid(s)) {  // rare: {"bytes":...}, as cc::json::write writes it
        cc::json::append_value(out, s);
        return;
    }
    cc::json::append_string(out, s);  // escapes as nlohmann does
}

void strings(std::string& out, const std::vector<std::string>& v) {
    out.push_back('[');
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) out.push_back(',');
        string(out, v[i]);
    }
    out.push_back(']');
}

void number(std::string& out, std::size_t n) {
    char b[24];
    auto [end, ec] = std::to_chars(b, b + sizeof b, n);
    (void)ec;
    out.append(b, end);
}

void key(std::string& out, const char* k) {
    out += ",\"";
    out += k;
    out += "\":";
}

}  // namespace

void append_json(std::string& out, const Result& r, const nlohmann::json* id) {
    out += "{\"decision\":";
    string(out, policy::to_string(r.decision));
    key(out, "mode");
    string(out, policy::to_string(r.mode));
    key(out, "classes");
    strings(out, r.classes);
    key(out, "reason");
    string(out, r.reason);
    if (!r.source.empty()) key(out, "source"), string(out, r.source);
    if (r.resolved) out += ",\"approver\":true";
    out += ",\"commands\":[";
    for (std::size_t i = 0; i < r.commands.size(); ++i) {
        const SubCommand& s = r.commands[i];
        out += i ? ",{\"argv\":" : "{\"argv\":";
        strings(out, s.finding.argv);
        key(out, "classes");
        strings(out, s.finding.classes);
        key(out, "decision");
        string(out, policy::to_string(s.decision));
        key(out, "reason");
        string(out, s.reason);
        if (!s.source.empty()) key(out, "source"), string(out, s.source);
        if (!s.finding.notes.empty()) key(out, "notes"), strings(out, s.finding.notes);
        if (!s.finding.refs.empty()) key(out, "refs"), strings(out, s.finding.refs);
        key(out, "offset");
        number(out, s.finding.offset);
        out.push_back('}');
    }
    out.push_back(']');
    if (r.parse_error) {
        out += ",\"parseError\":{\"message\":";
        string(out, r.parse_error->message);
        key(out, "line");
        number(out, r.parse_error->line);
        key(out, "column");
        number(out, r.parse_error->column);
        key(out, "offset");
        number(out, r.parse_error->offset);
        out.push_back('}');
    }
    if (id) {
        key(out, "id");
        out += cc::json::write(*id);
    }
    out.push_back('}');
}

}  // namespace cc::classify
