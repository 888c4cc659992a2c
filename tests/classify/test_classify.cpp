#include "harness.hpp"

#include <fstream>
#include <sstream>

#include "cc/core/json_writer.hpp"
#include "cc/classify/classify.hpp"
#include "cc/classify/hook.hpp"
#include "cc/classify/cli.hpp"
#include "cc/classify/expansions.hpp"
#include "cc/classify/knowledge.hpp"
#include "cc/policy/policy.hpp"

using cc::policy::Decision;
using cc::policy::Mode;

namespace {

std::string join(const std::vector<std::string>& v) {
    if (v.empty()) return "-";
    std::string s;
    for (const auto& x : v) {
        if (!s.empty()) s += ',';
        s += x;
    }
    return s;
}

std::string unescape(const std::string& s) {
    const std::string nl = "\u21b5";
    std::string out;
    std::size_t from = 0;
    for (std::size_t k; (k = s.find(nl, from)) != std::string::npos; from = k + nl.size()) {
        out.append(s, from, k - from);
        out.push_back('\n');
    }
    out.append(s, from, std::string::npos);
    return out;
}

}  // namespace

// The table in cases.tsv: one row per command line, checked in every mode.
TEST_CASE("classification table (tests/classify/cases.tsv)") {
    std::ifstream in(cc::test::source_dir() + "/tests/classify/cases.tsv");
    REQUIRE(in);
    auto policy = cc::policy::default_policy();
    std::string row;
    int line_no = 0, cases = 0;
    while (std::getline(in, row)) {
        ++line_no;
        if (row.empty() || row[0] == '#') continue;
        std::istringstream cols(row);
        std::string chat, ro, classes, line;
        std::getline(cols, chat, '\t');
        std::getline(cols, ro, '\t');
        std::getline(cols, classes, '\t');
        std::getline(cols, line);
        line = unescape(line);
        std::vector<std::string> sorted;
        {
            std::istringstream cs(classes);
            for (std::string c; std::getline(cs, c, ',');)
                if (c != "-") sorted.push_back(c);
            std::sort(sorted.begin(), sorted.end());
        }
        ++cases;
        INFO("cases.tsv:" << line_no << ": " << line);
        auto r = cc::classify::classify(line, Mode::chat, policy);
        CHECK(join(r.classes) == join(sorted));
        CHECK(std::string(cc::policy::to_string(r.decision)) == chat);
        for (Mode m : {Mode::plan, Mode::review, Mode::orchestrate}) {
            auto rr = cc::classify::classify(line, m, policy);
            CHECK(std::string(cc::policy::to_string(rr.decision)) == ro);
        }
    }
    CHECK(cases >= 400);
}

TEST_CASE("a policy file overrides a class's default") {
    auto p = cc::policy::parse(R"({"version":1,"rules":[
        {"action":"push","refs":["main"],"decision":"deny","reason":"main is released by CI"},
        {"action":"push","decision":"allow"},
        {"action":"install_package","modes":["plan"],"decision":"allow"}]})", "test");
    REQUIRE(p);
    auto main = cc::classify::classify("git push origin main", Mode::chat, *p);
    CHECK(main.decision == Decision::deny);
    CHECK(main.reason == "main is released by CI");
    CHECK(main.source == "rules[0]");
    CHECK(cc::classify::classify("git push origin feature", Mode::chat, *p).decision == Decision::allow);
    CHECK(cc::classify::classify("git push origin HEAD:main", Mode::chat, *p).decision == Decision::deny);
    // No ref named: the ref rule cannot match, the next rule decides.
    CHECK(cc::classify::classify("git push", Mode::chat, *p).decision == Decision::allow);
    CHECK(cc::classify::classify("npm install", Mode::plan, *p).decision == Decision::allow);
    CHECK(cc::classify::classify("npm install", Mode::review, *p).decision == Decision::deny);
}

TEST_CASE("one network_access rule serves cc-egress and cc-classify; network_write stays apart") {
    auto p = cc::policy::parse(R"({"rules":[{"action":"network_access","modes":["plan"],"decision":"allow"}]})", "t");
    REQUIRE(p);
    CHECK(cc::classify::classify("curl -s https://example.com", Mode::plan, *p).decision == Decision::allow);
    CHECK(cc::classify::classify("wget -qO- https://example.com", Mode::plan, *p).decision == Decision::allow);
    CHECK(cc::classify::classify("curl -d x=1 https://example.com", Mode::plan, *p).decision == Decision::deny);
    CHECK(cc::classify::classify("curl -o f https://example.com", Mode::plan, *p).decision == Decision::deny);
    CHECK(cc::classify::classify("curl -s https://example.com", Mode::review, *p).decision == Decision::deny);
}

TEST_CASE("every sub-command is reported with its argv, classes and decision") {
    auto r = cc::classify::classify("git -C r commit -m 'a b' && git push origin main", Mode::chat,
                                    cc::policy::default_policy());
    REQUIRE(r.commands.size() == 2);
    CHECK(r.commands[0].finding.argv == std::vector<std::string>{"git", "-C", "r", "commit", "-m", "a b"});
    CHECK(r.commands[0].finding.classes == std::vector<std::string>{"create_commit"});
    CHECK(r.commands[0].decision == Decision::allow);
    CHECK(r.commands[1].decision == Decision::ask);
    CHECK(r.commands[1].finding.refs == std::vector<std::string>{"refs/heads/main"});
    CHECK(r.decision == Decision::ask);
    CHECK(r.action == "push");
    auto j = cc::classify::to_json(r);
    CHECK(j["decision"] == "ask");
    CHECK(j["classes"] == nlohmann::json::array({"create_commit", "push"}));
    CHECK(j["commands"][1]["argv"][1] == "push");
    CHECK_FALSE(j.contains("parseError"));
}

TEST_CASE("a parse error is reported with its line and column and is never better than ask") {
    auto r = cc::classify::classify("ls\necho 'oops", Mode::chat, cc::policy::default_policy());
    REQUIRE(r.parse_error);
    CHECK(r.parse_error->line == 2);
    CHECK(r.parse_error->column == 6);
    CHECK(r.decision == Decision::ask);
    CHECK_THAT(r.reason, Catch::Contains("line 2, column 6: unterminated single quote"));
    auto j = cc::classify::to_json(r);
    CHECK(j["parseError"]["column"] == 6);
    CHECK(cc::classify::classify("ls\necho 'oops", Mode::plan, cc::policy::default_policy()).decision == Decision::deny);
}

TEST_CASE("too long, too deep: handled as unparsable, never a crash") {
    std::string deep;
    for (int i = 0; i < 500; ++i) deep += "$(";
    deep += "git push";
    auto r = cc::classify::classify(deep, Mode::chat, cc::policy::default_policy());
    CHECK(r.decision == Decision::ask);
    REQUIRE(r.parse_error);
    CHECK_THAT(r.parse_error->message, Catch::Contains("nested deeper than"));

    std::string lng(5u << 20, 'a');
    auto l = cc::classify::classify(lng, Mode::chat, cc::policy::default_policy());
    CHECK(l.decision == Decision::ask);
    CHECK_THAT(l.reason, Catch::Contains("longer than"));
    CHECK(cc::classify::classify(lng, Mode::plan, cc::policy::default_policy()).decision == Decision::deny);

    std::string nest = "bash -c 'git push'";
    for (int i = 0; i < 12; ++i) {
        std::string q;
        for (char ch : nest) {
            if (ch == '\'') q += "'\\''";
            else q.push_back(ch);
        }
        nest = "bash -c '" + q + "'";
    }
    std::string wrappers;
    for (int i = 0; i < 200000; ++i) wrappers += "nice ";
    auto w = cc::classify::classify(wrappers + "git push", Mode::chat, cc::policy::default_policy());
    CHECK(w.decision == Decision::ask);
    CHECK(std::find(w.classes.begin(), w.classes.end(), "unparsable") != w.classes.end());

    auto n = cc::classify::classify(nest, Mode::chat, cc::policy::default_policy());
    CHECK(std::find(n.classes.begin(), n.classes.end(), "unparsable") != n.classes.end());
    CHECK(n.decision == Decision::ask);
}

// run_jsonl in-process: lines split across the 64 KiB read blocks and the
// output batches, a blank line, a last line without its newline, and the
// answers byte for byte what to_json gives for each line on its own.
TEST_CASE("run_jsonl: every line answered in order, whatever the block boundaries") {
    std::string big = "echo x";
    while (big.size() < 200000) big += "; echo x";
    std::vector<std::string> cmds = {"ls", big, "git push origin main", "sudo id"};
    std::string in = "{\"cmd\":\"ls\",\"id\":0}\n\n";
    for (std::size_t i = 1; i < cmds.size(); ++i) {
        in += "{\"cmd\":\"" + cmds[i] + "\",\"id\":" + std::to_string(i) + "}";
        if (i + 1 < cmds.size()) in += "\n";  // the last line has no newline
    }
    for (int n = 0; n < 2000; ++n) in.insert(0, "{\"cmd\":\"cat f" + std::to_string(n) + "\"}\n");
    std::istringstream is(in);
    std::ostringstream os, es;
    cc::classify::Options opts;
    CHECK(cc::classify::run_jsonl(is, opts, os, es) == 0);
    CHECK(es.str().empty());
    std::vector<nlohmann::json> out;
    std::istringstream lines(os.str());
    for (std::string l; std::getline(lines, l);) out.push_back(nlohmann::json::parse(l));
    REQUIRE(out.size() == 2000 + cmds.size());
    CHECK(out[1999]["commands"][0]["argv"][1] == "f0");
    for (std::size_t i = 0; i < cmds.size(); ++i) {
        auto want = cc::classify::to_json(cc::classify::classify(cmds[i], Mode::chat, cc::policy::default_policy()));
        want["id"] = i;
        CHECK(out[2000 + i].dump() == nlohmann::json(want).dump());
    }
}

// the reading of last resort for a line the parser rejected.
TEST_CASE("a misread line is never judged weaker than its commands alone") {
    auto pieces = cc::classify::find_actions_lexically("echo 'a; sudo id' | if x; then \"rm\" -rf / ; fi");
    std::vector<std::vector<std::string>> argvs;
    for (const auto& f : pieces) argvs.push_back(f.argv);
    CHECK(argvs == std::vector<std::vector<std::string>>{{"echo", "a"}, {"sudo", "id"}, {"x"}, {"rm", "-rf", "/"}});
    // Without the parse error the pieces are not consulted: quoted text is data.
    auto quoted = cc::classify::classify("echo 'a; sudo id'", Mode::chat, cc::policy::default_policy());
    CHECK(quoted.decision == Decision::allow);
    // With it, the strictest piece decides and says how it was read.
    auto hidden = cc::classify::classify("echo 'a; sudo id", Mode::chat, cc::policy::default_policy());
    CHECK(hidden.decision == Decision::deny);
    CHECK(hidden.action == "privilege_escalation");
    CHECK_THAT(hidden.reason, Catch::Contains("read without the parser"));
    REQUIRE(hidden.parse_error);
    CHECK(hidden.commands.back().finding.argv == std::vector<std::string>{"sudo", "id"});
    // A piece no stricter than the line adds nothing.
    auto plain = cc::classify::classify("echo 'a; echo b", Mode::chat, cc::policy::default_policy());
    CHECK(plain.decision == Decision::ask);
    CHECK(plain.classes == std::vector<std::string>{"unparsable"});
    CHECK(plain.commands.size() == 2);
}

TEST_CASE("the words bash produces by brace expansion and IFS splitting are judged") {
    auto p = cc::policy::default_policy();
    auto r = cc::classify::classify("{sudo,id}", Mode::chat, p);
    CHECK(r.decision == Decision::deny);
    REQUIRE(r.commands.size() == 1);
    CHECK(r.commands[0].finding.argv == std::vector<std::string>{"{sudo,id}"});  // argv as written
    CHECK_THAT(r.commands[0].finding.notes.back(), Catch::Contains("as bash expands it: 'sudo id'"));
    auto ifs = cc::classify::classify("rm$IFS-rf$IFS/", Mode::chat, p);
    CHECK(ifs.decision == Decision::deny);
    CHECK(ifs.action == "destroy_system");
    // Nested and sequence braces; a word that grows past 64 results is cut there.
    CHECK(cc::classify::classify("{s{u,x}do,echo} id", Mode::chat, p).decision == Decision::deny);
    std::string many;
    for (int i = 0; i < 20; ++i) many += "{a,b}";
    CHECK(cc::classify::classify("echo " + many, Mode::plan, p).decision == Decision::allow);
}

TEST_CASE("brace expansion and IFS splitting (expansions.hpp)") {
    using V = std::vector<std::string>;
    auto braces = [](const std::string& w) {
        V out;
        if (!cc::classify::brace_expand(w, out, 64)) return V{"(none)"};
        return out;
    };
    CHECK(braces("{sudo,id}") == V{"sudo", "id"});
    CHECK(braces("a{b,c}d") == V{"abd", "acd"});
    CHECK(braces("{a,{b,c}}") == V{"a", "b", "c"});
    CHECK(braces("x{1..3}") == V{"x1", "x2", "x3"});
    CHECK(braces("{c..a}") == V{"c", "b", "a"});
    CHECK(braces("{a,${x}}") == V{"a", "${x}"});
    CHECK(braces("${x:-{a,b}}") == V{"(none)"});
    CHECK(braces("{a}") == V{"(none)"});
    CHECK(braces("{a,b") == V{"(none)"});
    V many;
    std::string w;
    for (int i = 0; i < 20; ++i) w += "{a,b}";
    CHECK(cc::classify::brace_expand(w, many, 64));
    CHECK(many.size() == 64);
    auto ifs = [](const std::string& word) {
        V out;
        if (!cc::classify::split_on_ifs(word, out)) return V{"(none)"};
        return out;
    };
    CHECK(ifs("rm$IFS-rf$IFS/") == V{"rm", "-rf", "/"});
    CHECK(ifs("git${IFS}push") == V{"git", "push"});
    CHECK(ifs("a${IFS:0:1}b") == V{"a", "b"});
    // Quote removal joins sudo$IFS'id' into sudo$IFSid, so a name that
    // starts with IFS splits too (the other reading is judged as well).
    CHECK(ifs("sudo$IFSid") == V{"sudo", "id"});
    CHECK(ifs("$IFX") == V{"(none)"});
    auto readings = [](const std::string& word, const cc::classify::Values& values = {}) {
        V out;
        cc::classify::plausible_readings(word, values, out, 16);
        return out;
    };
    CHECK(readings("$x") == V{""});
    CHECK(readings("$x", {{"x", {"sudo", "git push"}}}) == V{"", "sudo", "git push"});
    CHECK(readings("${x:-sudo}") == V{"", "sudo"});
    CHECK(readings("${x:=${y:-rm}}") == V{"", "rm"});
    CHECK(readings("s${x}udo") == V{"sudo"});
    CHECK(readings("s$@u$1do") == V{"sudo"});
    CHECK(readings("$(echo -n sudo id)") == V{"", "sudo id"});
    CHECK(readings("`printf sudo`") == V{"", "sudo"});
    CHECK(readings("$(cat f)") == V{""});
    cc::classify::Values many_values{{"a", {"1", "2", "3"}}, {"b", {"1", "2", "3"}}, {"c", {"1", "2", "3"}}};
    CHECK(readings("$a$b$c$d$e", many_values).size() == 16);  // capped
}

// command rules in the policy file, applied to the command as its
// tool sees it (after wrappers and global options), with examples checked.
TEST_CASE("command rules decide the resolved command, in every mode") {
    auto p = cc::policy::parse(R"({"version":1,"rules":[
        {"action":"command","match":["git","push",["--force","-f"]],"decision":"deny","reason":"no force pushes",
         "examples":{"match":["git -C repo push -f origin main"],"notMatch":["git push origin main"]}},
        {"action":"command","match":["mytool","status"],"decision":"allow"},
        {"action":"command","match":["make"],"modes":["chat"],"decision":"ask"}]})", "test");
    REQUIRE(p);
    REQUIRE_FALSE(cc::classify::check_command_rules(*p));
    for (Mode m : {Mode::chat, Mode::plan, Mode::review, Mode::orchestrate}) {
        INFO(cc::policy::to_string(m));
        // Through global options and a wrapper: the rule still sees "git push -f".
        auto force = cc::classify::classify("timeout 60 git -C repo -c x=y push -f origin main", m, *p);
        CHECK(force.decision == Decision::deny);
        CHECK(force.reason == "no force pushes");
        CHECK(force.source == "rules[0]");
        CHECK(force.commands.at(0).finding.resolved ==
              std::vector<std::string>{"git", "push", "-f", "origin", "main"});
        // An operator's tool, allowed without a rebuild; its other subcommands are not.
        auto status = cc::classify::classify("/opt/bin/mytool status --all", m, *p);
        CHECK(status.decision == Decision::allow);
        CHECK(status.source == "rules[1]");
        CHECK(cc::classify::classify("mytool deploy", m, *p).decision ==
              (m == Mode::chat ? Decision::allow : Decision::deny));
        // An allow rule never lifts a hard deny, a redirection or a loader variable.
        CHECK(cc::classify::classify("sudo mytool status", m, *p).decision == Decision::deny);
        CHECK(cc::classify::classify("LD_PRELOAD=/x.so mytool status", m, *p).decision ==
              (m == Mode::chat ? Decision::allow : Decision::deny));
        CHECK(cc::classify::classify("mytool status > out.txt", m, *p).decision ==
              (m == Mode::chat ? Decision::allow : Decision::deny));
        // A rule for one mode: chat asks for make, the read-only modes deny it as before.
        CHECK(cc::classify::classify("make test", m, *p).decision == (m == Mode::chat ? Decision::ask : Decision::deny));
    }
    // A push in a read-only mode stays denied whatever a command rule says.
    auto lift = cc::policy::parse(R"({"rules":[{"action":"command","match":["git","push"],"decision":"allow"}]})", "t");
    REQUIRE(lift);
    CHECK(cc::classify::classify("git push", Mode::plan, *lift).decision == Decision::deny);
    CHECK(cc::classify::classify("git push", Mode::chat, *lift).decision == Decision::allow);
}

TEST_CASE("a command rule whose example disagrees fails, naming the example") {
    auto wrong = cc::policy::parse(R"({"rules":[
        {"action":"command","match":["git","reset","--hard"],"decision":"ask",
         "examples":{"match":["git reset --hard","sudo git -C x reset --hard HEAD"],"notMatch":["git reset --soft","git reset HEAD --hard"]}}]})", "t");
    REQUIRE(wrong);
    auto e = cc::classify::check_command_rules(*wrong);
    REQUIRE(e);
    CHECK(e->one_line() == "rules[0].examples.notMatch[1]: 'git reset HEAD --hard' matches the rule");
    auto miss = cc::policy::parse(R"({"rules":[
        {"action":"command","match":["npm","publish"],"decision":"deny","examples":{"match":["npm run publish-docs"]}}]})", "t");
    REQUIRE(miss);
    auto m = cc::classify::check_command_rules(*miss);
    REQUIRE(m);
    CHECK(m->one_line() == "rules[0].examples.match[0]: 'npm run publish-docs' does not match the rule");
}

TEST_CASE("command rule patterns: name, then later words in order") {
    using cc::policy::command_matches;
    std::vector<std::vector<std::string>> force = {{"git"}, {"push"}, {"--force", "-f"}};
    CHECK(command_matches(force, {"git", "push", "origin", "main", "--force"}));
    CHECK(command_matches(force, {"git", "push", "-f"}));
    CHECK_FALSE(command_matches(force, {"git", "push", "origin"}));
    CHECK_FALSE(command_matches(force, {"git", "-f", "push"}));
    CHECK_FALSE(command_matches(force, {"hub", "push", "-f"}));
    CHECK_FALSE(command_matches(force, {}));
}

// --jsonl and the one-line form write results with append_json(), not by
// dumping to_json(): the bytes must be the same, on every row of the table in
// every mode and on strings JSON has to escape or that are not UTF-8.
TEST_CASE("append_json writes exactly what dumping to_json writes") {
    std::ifstream in(cc::test::source_dir() + "/tests/classify/cases.tsv");
    REQUIRE(in);
    std::vector<std::string> lines = {"echo \"q\" 'back\\slash' $'\\x01\\x1f\\x7f' \t", "echo \xff\xfe \xc3\x28 \xed\xa0\x80 ok",
                                      "echo \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x90\x80\x80 \xe0\x80\xaf", "git push 'a\nb'",
                                      "echo 'unterminated", "printf '\\b\\f\\r' | sh"};
    for (std::string row; std::getline(in, row);) {
        if (row.empty() || row[0] == '#') continue;
        lines.push_back(unescape(row.substr(row.find('\t', row.find('\t', row.find('\t') + 1) + 1) + 1)));
    }
    REQUIRE(lines.size() > 400);
    auto policy = cc::policy::default_policy();
    std::vector<nlohmann::json> ids = {nlohmann::json(7), nlohmann::json("x\"y"), nlohmann::json::parse(R"({"b":1,"a":[1.5,null]})")};
    int compared = 0;
    for (const auto& line : lines)
        for (Mode m : {Mode::chat, Mode::plan, Mode::review, Mode::orchestrate}) {
            INFO(line);
            auto r = cc::classify::classify(line, m, policy);
            r.resolved = compared % 7 == 0;  // "approver": true, now and then
            std::string direct;
            const nlohmann::json* id = compared % 3 == 0 ? &ids[static_cast<std::size_t>(compared / 3) % ids.size()] : nullptr;
            cc::classify::append_json(direct, r, id);
            auto tree = cc::classify::to_json(r);
            if (id) tree["id"] = *id;
            CHECK(direct == cc::json::write(tree));
            ++compared;
        }
    CHECK(compared == static_cast<int>(lines.size()) * 4);
}

// The shipped command data is compiled in and parsed an entry at a time on
// first use; the self-test puts every shipped file through the strict loader
// whole, and every entry alone as start-up parses it.
TEST_CASE("command data: every shipped file passes the strict loader") {
    auto s = cc::classify::Knowledge::check_builtin();
    INFO((s ? std::string() : s.error().one_line()));
    CHECK(s);
    auto k = cc::classify::Knowledge::load(cc::test::scratch_dir() + "/no-such-dir");
    REQUIRE(k);
    const auto* git = k->find("git");
    REQUIRE(git);
    CHECK(git->file == "git.json");
    CHECK(k->find("git") == git);  // parsed once
    CHECK(k->find("no-such-command") == nullptr);
}

TEST_CASE("hook deadlines: the hook answers a second before the CLI gives up, the approver half a second before the hook", "[hook]") {
    using cc::classify::hook_times;
    // Without an approver: 5 s, or a second before a shorter deadline.
    auto plain = hook_times(0, false, 0, 0);
    REQUIRE(plain);
    CHECK(plain->hook_ms == 5000);
    auto tight = hook_times(3000, false, 0, 0);
    REQUIRE(tight);
    CHECK(tight->hook_ms == 2250);  // a quarter of a deadline under 4 s
    // With one: the CLI's 30 s (the examples') bound both; the default
    // approver timeout is no longer 30 s plus slack past the CLI's deadline.
    auto asked = hook_times(0, true, 0, 0);
    REQUIRE(asked);
    CHECK(asked->hook_ms == 29000);
    CHECK(asked->approver_ms == 28500);
    auto sixty = hook_times(60000, true, 0, 10000);
    REQUIRE(sixty);
    CHECK(sixty->hook_ms == 11000);
    CHECK(sixty->approver_ms == 10000);
    // Asking for more than the deadline allows is refused, naming why.
    auto late = hook_times(30000, true, 0, 30000);
    REQUIRE(!late);
    CHECK(late.error().one_line() ==
          "--approver-timeout: 30000 ms does not end half a second before the hook's own deadline (29000 ms)");
    auto over = hook_times(30000, false, 30000, 0);
    REQUIRE(!over);
    CHECK(over.error().subject == "--hook-timeout");
    CHECK(!hook_times(100, false, 0, 0));
}
