#include "cc/classify/cli.hpp"

#include <algorithm>
#include <istream>
#include <ostream>

#include "cc/classify/knowledge.hpp"
#include "cc/core/json_reader.hpp"
#include "cc/core/json_writer.hpp"

namespace cc::classify {

cc::Result<Options> make_options(const std::string& mode_name, const std::string& policy_path) {
    Options opts;
    auto mode = policy::parse_mode(mode_name);
    if (!mode) return input_error("", "--mode: unknown mode '" + mode_name + "' (chat, plan, review or orchestrate)");
    opts.mode = *mode;
    if (auto k = install_knowledge(knowledge_dir()); !k) return k.error();
    // --policy, else the operator's file (/etc/cc/policy.json), else none.
    std::string used;
    auto p = policy::load_effective(policy_path, policy::Policy{}, &used);
    if (!p) return p.error();
    if (auto e = check_command_rules(*p)) {
        e->subject = "'" + used + "': " + e->subject;
        return *e;
    }
    opts.policy = std::move(*p);
    return opts;
}

using policy::Decision;

namespace {

// Command lines are bytes, not always UTF-8: the project's writer keeps
// them whole ({"bytes":...}) and never throws.
template <typename J>
std::string dump(const J& j) {
    return cc::json::write(j);
}

}  // namespace

int exit_status(Decision d) {
    switch (d) {
        case Decision::allow: return exit_allow;
        case Decision::ask: return exit_ask;
        case Decision::deny: return exit_deny;
    }
    return exit_deny;
}

nlohmann::json question(const Result& r, std::string_view line) {
    nlohmann::json q = nlohmann::json::parse(dump(to_json(r)));
    q["tool"] = "cc-classify";
    q["command"] = std::string(line);
    q["action"] = r.action;
    return q;
}

void resolve(Result& r, std::string_view line, const Resolver& resolver) {
    if (r.decision != Decision::ask || !resolver) return;
    policy::Verdict v = resolver({r.decision, r.reason, r.source}, question(r, line));
    r.decision = v.decision;
    r.reason = v.reason;
    r.source = v.source;
    r.resolved = true;
}

std::vector<std::string> line_words(int argc, const char* const* argv, const std::vector<std::string>& value_options) {
    std::vector<std::string> words;
    for (int k = 1; k < argc; ++k) {
        std::string_view a = argv[k];
        if (a == "--") {
            for (++k; k < argc; ++k) words.emplace_back(argv[k]);
            break;
        }
        if (a.size() > 1 && a[0] == '-') {
            if (std::find(value_options.begin(), value_options.end(), a) != value_options.end()) ++k;
            continue;
        }
        words.emplace_back(a);
    }
    return words;
}

int run_line(const std::string& line, const Options& opts, std::string& json) {
    Result r = classify(line, opts.mode, opts.policy);
    resolve(r, line, opts.resolver);
    json.clear();
    append_json(json, r);
    return exit_status(r.decision);
}

std::string explain(const Result& r) {
    auto joined = [](const std::vector<std::string>& v, const char* sep) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
        return s;
    };
    auto pad = [](std::string_view d) { return std::string(d) + std::string(7 - d.size(), ' '); };
    std::string out;
    for (const auto& s : r.commands) {
        out += pad(policy::to_string(s.decision)) + (s.finding.argv.empty() ? "(the line)" : joined(s.finding.argv, " ")) + '\n';
        out += "       classes " + (s.finding.classes.empty() ? std::string("none") : joined(s.finding.classes, ", "));
        out += s.source.empty() ? "; " + s.reason : "; decided by " + s.source + ": " + s.reason;
        out += '\n';
        if (!s.finding.resolved.empty() && s.finding.resolved != s.finding.argv)
            out += "       resolved to " + joined(s.finding.resolved, " ") + '\n';
        if (!s.finding.data.empty()) out += "       data " + joined(s.finding.data, ", ") + '\n';
        for (const auto& n : s.finding.notes) out += "       " + n + '\n';
    }
    out += "line: " + std::string(policy::to_string(r.decision)) + " in " + std::string(policy::to_string(r.mode)) +
           " mode" + (r.source.empty() ? "" : " (" + r.source + ")") + ": " + r.reason + '\n';
    return out;
}

int run_explain(const std::string& line, const Options& opts, std::string& text) {
    Result r = classify(line, opts.mode, opts.policy, true);
    resolve(r, line, opts.resolver);
    text = explain(r);
    return exit_status(r.decision);
}

int run_line(const std::string& line, const Options& opts, std::ostream& out) {
    std::string json;
    int status = run_line(line, opts, json);
    out << json << '\n';
    return status;
}

namespace {

// Lines from a stream buffer in blocks of what it already holds. Before a
// read that could block, `flush` is called: a caller that writes one line and
// waits for its answer gets it, however the input is split.
class LineReader {
public:
    explicit LineReader(std::streambuf& sb) : sb_(sb) {}

    template <typename Flush>
    bool next(std::string& line, Flush&& flush) {
        using traits = std::char_traits<char>;
        constexpr std::streamsize block = 64 * 1024;
        for (;;) {
            if (auto nl = buf_.find('\n', scan_); nl != std::string::npos) {
                line.assign(buf_, pos_, nl - pos_);
                pos_ = scan_ = nl + 1;
                return true;
            }
            buf_.erase(0, pos_);
            pos_ = 0;
            scan_ = buf_.size();
            std::streamsize avail = sb_.in_avail();
            if (avail == 0) {
                flush();
                avail = traits::eq_int_type(sb_.sgetc(), traits::eof()) ? -1 : std::max<std::streamsize>(sb_.in_avail(), 1);
            }
            if (avail < 0) {  // end of input; a last line may lack its newline
                if (buf_.empty()) return false;
                line.swap(buf_);
                buf_.clear();
                scan_ = 0;
                return true;
            }
            std::size_t had = buf_.size();
            buf_.resize(had + static_cast<std::size_t>(std::min(avail, block)));
            std::streamsize got = sb_.sgetn(buf_.data() + had, std::min(avail, block));
            buf_.resize(had + static_cast<std::size_t>(std::max<std::streamsize>(got, 0)));
        }
    }

private:
    std::streambuf& sb_;
    std::string buf_;
    std::size_t pos_ = 0;   // start of the next line in buf_
    std::size_t scan_ = 0;  // buf_ holds no newline between pos_ and here
};

}  // namespace

int run_jsonl(std::istream& in, const Options& opts, std::ostream& out, std::ostream& err) {
    // Answers are collected in one string and written together: before any
    // read that could wait for input, and every 64 KiB of output.
    constexpr std::size_t batch_bytes = 64 * 1024;
    std::string text, batch;
    batch.reserve(batch_bytes + 4096);
    std::size_t n = 0;
    int status = 0;
    auto flush = [&] {
        if (batch.empty()) return;
        out.write(batch.data(), static_cast<std::streamsize>(batch.size())).flush();
        batch.clear();
    };
    LineReader lines(*in.rdbuf());
    while (lines.next(text, flush)) {
        ++n;
        [&] {
            if (text.find_first_not_of(" \t\r") == std::string::npos) return;
            auto fail = [&](const Error& e) {
                nlohmann::json j = {{"error", e.one_line()}, {"decision", "deny"}, {"line", n}};
                batch += dump(j);  // keys sorted, as they always were
                batch.push_back('\n');
                err << "cc-classify: stdin line " << n << ": " << e.one_line() << '\n';
                status = 2;
            };
            // The line number is fail()'s prefix (and the result's "line"): the
            // error itself names no subject, or it would be said twice.
            auto doc = json::parse(text, "");
            if (!doc) return fail(doc.error());
            json::ObjectReader rd(*doc, "");
            std::string cmd;
            std::optional<std::string> mode_name;
            rd.required("cmd", cmd);
            rd.optional("mode", mode_name);
            rd.accept("id");
            if (auto e = rd.finish()) return fail(*e);
            policy::Mode mode = opts.mode;
            if (mode_name) {
                auto m = policy::parse_mode(*mode_name);
                if (!m)
                    return fail(input_error("mode", "unknown mode '" + *mode_name + "' (chat, plan, review or orchestrate)"));
                mode = *m;
            }
            Result r = classify(cmd, mode, opts.policy);
            if (r.decision == Decision::ask && opts.resolver) flush();  // the approver may take its time
            resolve(r, cmd, opts.resolver);
            auto id = doc->find("id");
            append_json(batch, r, id != doc->end() ? &*id : nullptr);
            batch.push_back('\n');
        }();
        if (batch.size() >= batch_bytes) flush();
        if (!out) return status;
    }
    flush();
    return status;
}

}  // namespace cc::classify
