#include "cc/net/egress_text.hpp"

#include <sstream>

#include "cc/core/json_reader.hpp"
#include "cc/core/output.hpp"

namespace cc::net {

namespace {

using nlohmann::json;

std::string str(const json& j, const char* key) { return cc::json::string_at(j, key); }

std::string ports_of(const json& e) {
    if (!e.contains("ports")) return "";
    if (e["ports"].is_string()) return ":" + e["ports"].get<std::string>();
    std::string s;
    for (const auto& p : e["ports"]) s += (s.empty() ? ":" : ",") + std::to_string(p.get<int>());
    return s;
}

}  // namespace

std::string check_text(const json& line) {
    const std::string decision = str(line, "decision");
    std::ostringstream out;
    out << tool::paint_decision(decision) << std::string(decision.size() < 6 ? 6 - decision.size() : 1, ' ')
        << str(line, "host");
    if (line.contains("addresses") && line["addresses"].is_array() && !line["addresses"].empty()) {
        out << " (";
        bool first = true;
        for (const auto& a : line["addresses"]) {
            out << (first ? "" : ", ") << a.get<std::string>();
            first = false;
        }
        out << ")";
    }
    out << "  " << str(line, "reason");
    const std::string rule = str(line, "rule");
    if (!rule.empty()) out << "  " << tool::paint("[" + rule + "]", tool::Colour::dim);
    out << '\n';
    return out.str();
}

std::string plan_text(const json& plan) {
    std::ostringstream out;
    const json rule = plan.value("networkRule", json::object());
    const std::string net = str(plan, "network");
    out << tool::paint("network", tool::Colour::bold) << "  "
        << (net == "on" ? tool::paint("on", tool::Colour::green) : tool::paint(net, tool::Colour::red)) << " ("
        << str(rule, "decision") << " by " << str(rule, "source") << " in " << str(rule, "mode")
        << " mode: " << str(rule, "reason") << "; set by " << str(rule, "networkSetBy") << ")\n";
    if (!str(plan, "sessionId").empty()) out << "session  " << str(plan, "sessionId") << '\n';
    const json rules = plan.value("rules", json::object());
    struct List {
        const char* key;
        const char* title;
        const char* field;
        bool all;  // every entry, or a count and the first few
    };
    for (const List& l : {List{"allowNames", "allowed names", "pattern", true},
                          List{"allowAddresses", "allowed addresses", "address", true},
                          List{"denyNames", "denied names", "pattern", false},
                          List{"denyAddresses", "denied addresses", "address", false},
                          List{"nonPublicAddresses", "non-public addresses (denied unless allowed)", "address", false}}) {
        if (!rules.contains(l.key) || !rules[l.key].is_array()) continue;
        const json& list = rules[l.key];
        out << '\n' << tool::paint(l.title, tool::Colour::bold) << " (" << list.size() << ")\n";
        std::size_t shown = 0;
        for (const auto& e : list) {
            if (!l.all && shown == 5) {
                out << "  ... " << list.size() - shown << " more (--format json lists them all)\n";
                break;
            }
            out << "  " << str(e, l.field) << ports_of(e) << "  " << tool::paint(str(e, "source"), tool::Colour::dim)
                << '\n';
            ++shown;
        }
    }
    return out.str();
}

}  // namespace cc::net
