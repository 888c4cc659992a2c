#include "cc/sandbox/plan_text.hpp"

#include <map>
#include <sstream>

#include "cc/core/json_reader.hpp"
#include "cc/core/output.hpp"
#include "cc/core/json_writer.hpp"

namespace cc::sandbox {

namespace {

using nlohmann::json;
using tool::Colour;
using tool::paint;

std::string str(const json& j, const char* key) { return cc::json::string_at(j, key); }

std::string words(const json& list, const std::string& sep = " ") {
    std::string s;
    if (!list.is_array()) return s;
    for (const auto& w : list) s += (s.empty() ? "" : sep) + (w.is_string() ? w.get<std::string>() : cc::json::write(w));
    return s;
}

// "  key   value": the left column padded to one width.
void row(std::ostringstream& out, const std::string& key, const std::string& value) {
    out << paint(key, Colour::bold) << std::string(key.size() < 10 ? 10 - key.size() : 1, ' ') << value << '\n';
}

}  // namespace

std::string plan_text(const json& p) {
    std::ostringstream out;
    row(out, "session", str(p, "sessionId"));
    row(out, "backend", str(p, "backend") + (str(p, "backendLog").empty() ? "" : " (" + str(p, "backendLog") + ")"));
    row(out, "profile", str(p, "profile") + ", mode " + str(p, "mode"));
    if (p.contains("identity")) {
        const json& id = p["identity"];
        std::string who = "uid " + std::to_string(id.value("hostUid", 0)) + ", gid " + std::to_string(id.value("hostGid", 0)) +
                          (id.value("userNamespace", false) ? " in a user namespace" : "");
        if (!str(id, "why").empty()) who += " (" + str(id, "why") + ")";
        row(out, "identity", who);
    }
    row(out, "layers", words(p.value("layers", json::array())));
    if (p.contains("microvm") && p["microvm"].contains("guest")) {
        // In a VM the command is the guest's; bubblewrap's argv ends in the monitor.
        const json& vm = p["microvm"];
        row(out, "command", words(vm["guest"].value("argv", json::array())));
        row(out, "vm", str(vm, "monitor") + " " + str(vm, "monitorVersion") + ", accelerator " + str(vm, "accel") +
                           ", kernel " + str(vm, "kernel") + " (" + str(vm, "kernelVersion") + ")");
    } else if (p.contains("argv") && p["argv"].is_array()) {
        // The command is what follows bubblewrap's (or the init step's) "--".
        const json& argv = p["argv"];
        std::size_t i = argv.size();
        for (std::size_t k = argv.size(); k-- > 0;)
            if (argv[k] == "--") {
                i = k + 1;
                break;
            }
        json cmd = json::array();
        for (; i < argv.size(); ++i) cmd.push_back(argv[i]);
        row(out, "command", words(cmd));
    }
    if (!str(p, "chdir").empty()) row(out, "workdir", str(p, "chdir"));
    if (p.contains("proxy")) {
        const json& x = p["proxy"];
        std::string v = str(x, "transport");
        if (v != "none" && v != "host")
            v += ", HTTP proxy 127.0.0.1:" + std::to_string(x.value("httpPort", 0)) + ", SOCKS5 127.0.0.1:" +
                 std::to_string(x.value("socksPort", 0)) + ", cc-egress " + str(x, "egress");
        if (!str(x, "policy").empty()) v += ", policy " + str(x, "policy");
        if (!str(x, "approver").empty()) v += ", approver " + str(x, "approver");
        row(out, "network", v);
    }
    row(out, "runtime", str(p, "runtimeDir"));

    if (p.contains("mounts") && p["mounts"].is_array()) {
        out << '\n' << paint("mounts", Colour::bold) << " (" << p["mounts"].size() << ")\n";
        for (const auto& m : p["mounts"]) {
            std::string op = str(m, "op");
            std::string line = "  " + op + std::string(op.size() < 10 ? 10 - op.size() : 1, ' ');
            line += str(m, "src").empty() ? str(m, "dest") : str(m, "src") + " -> " + str(m, "dest");
            out << (op.find("bind") != std::string::npos && op.find("ro") == std::string::npos && op != "dev-bind"
                        ? paint(line, Colour::yellow)
                        : line);
            if (!str(m, "why").empty()) out << "  " << paint(str(m, "why"), Colour::dim);
            out << '\n';
        }
    }
    if (p.contains("denies") && p["denies"].is_array()) {
        std::map<std::string, int> count;
        for (const auto& d : p["denies"]) ++count[str(d, "kind")];
        out << '\n'
            << paint("deny rules", Colour::bold) << " (" << count["read"] << " read, " << count["write"] << " write)\n";
        for (const auto& d : p["denies"]) {
            std::string enforced = words(d.value("enforcement", json::array()), "; ");
            out << "  " << (str(d, "kind") == "read" ? paint("read ", Colour::red) : paint("write", Colour::yellow)) << "  "
                << str(d, "rule") << "  " << paint("(" + str(d, "source") + ")", Colour::dim);
            if (!enforced.empty()) out << "  " << enforced;
            out << '\n';
        }
    }
    if (p.contains("env") && p["env"].is_object()) {
        out << '\n' << paint("environment", Colour::bold) << " (" << p["env"].size() << " variables)\n";
        for (const auto& [k, v] : p["env"].items()) out << "  " << k << "=" << (v.is_string() ? v.get<std::string>() : cc::json::write(v)) << '\n';
        if (p.contains("envRemoved") && !p["envRemoved"].empty())
            out << "  " << paint("removed:", Colour::dim) << " " << words(p["envRemoved"]) << '\n';
    }
    if (p.contains("notes") && p["notes"].is_array() && !p["notes"].empty()) {
        out << '\n' << paint("notes", Colour::bold) << '\n';
        for (const auto& n : p["notes"]) out << "  - " << (n.is_string() ? n.get<std::string>() : cc::json::write(n)) << '\n';
    }
    out << '\n' << paint("(the whole plan, bubblewrap's argv and the filters included: --format json)", Colour::dim) << '\n';
    return out.str();
}

}  // namespace cc::sandbox
