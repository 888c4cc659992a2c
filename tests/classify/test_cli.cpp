// cc-classify as a process: exit statuses, JSON out, --jsonl, the claude
// PreToolUse hook byte for byte, the approver, and bad input.
#include "harness.hpp"

#include <sys/stat.h>

#include <boost/process.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <signal.h>

#include <nlohmann/json.hpp>

using cc::test::bin;
using cc::test::run;
using nlohmann::json;

namespace {

std::string script(const std::string& name, const std::string& body) {
    std::string path = cc::test::scratch_dir() + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
}

}  // namespace

TEST_CASE("exit status: 0 allow, 10 ask, 11 deny, 2 bad input") {
    auto allow = run({bin("cc-classify"), "--", "ls -la"});
    CHECK(allow.status == 0);
    CHECK(json::parse(allow.out)["decision"] == "allow");
    auto ask = run({bin("cc-classify"), "git push origin main"});
    CHECK(ask.status == 10);
    auto j = json::parse(ask.out);
    CHECK(j["decision"] == "ask");
    CHECK(j["classes"] == json::array({"push"}));
    CHECK(j["mode"] == "chat");
    CHECK(j["commands"][0]["argv"] == json::array({"git", "push", "origin", "main"}));
    CHECK(j["commands"][0]["refs"] == json::array({"refs/heads/main"}));
    auto deny = run({bin("cc-classify"), "--mode", "plan", "--", "git", "commit", "-m", "x"});
    CHECK(deny.status == 11);
    CHECK(json::parse(deny.out)["decision"] == "deny");
    CHECK(run({bin("cc-classify"), "sudo rm -rf /"}).status == 11);
    for (const char* m : {"plan", "review", "orchestrate"})
        CHECK(run({bin("cc-classify"), "--mode", m, "npm install"}).status == 11);

    auto bad_mode = run({bin("cc-classify"), "--mode", "yolo", "ls"});
    CHECK(bad_mode.status == 2);
    CHECK(bad_mode.err == "cc-classify: --mode: unknown mode 'yolo' (chat, plan, review or orchestrate)\n");
    CHECK(bad_mode.out.empty());
    auto none = run({bin("cc-classify")});
    CHECK(none.status == 2);
    CHECK_THAT(none.err, Catch::Contains("give exactly one of"));
    CHECK(run({bin("cc-classify"), "--bogus", "ls"}).status == 2);
    CHECK(run({bin("cc-classify"), "--hook", "cursor"}).status == 2);
    CHECK(run({bin("cc-classify"), "--jsonl", "ls"}).status == 2);
}

TEST_CASE("--policy: rules decide; a bad policy file is exit 2 with nothing on stdout") {
    std::string dir = cc::test::scratch_dir();
    std::ofstream(dir + "/p.json") << R"({"version":1,"rules":[{"action":"push","refs":["main"],"decision":"deny","reason":"main is released by CI"},{"action":"push","decision":"allow"}]})";
    auto main = run({bin("cc-classify"), "--policy", dir + "/p.json", "git push origin main"});
    CHECK(main.status == 11);
    CHECK(json::parse(main.out)["reason"] == "main is released by CI");
    CHECK(run({bin("cc-classify"), "--policy", dir + "/p.json", "git push origin topic"}).status == 0);
    std::ofstream(dir + "/bad.json") << R"({"rules":[{"action":"push","decision":"maybe"}]})";
    auto bad = run({bin("cc-classify"), "--policy", dir + "/bad.json", "ls"});
    CHECK(bad.status == 2);
    CHECK(bad.out.empty());
    CHECK_THAT(bad.err, Catch::Contains("rules[0].decision: unknown decision 'maybe'"));
    auto missing = run({bin("cc-classify"), "--policy", dir + "/nope.json", "ls"});
    CHECK(missing.status == 2);
    CHECK_THAT(missing.err, Catch::Contains("nope.json"));
}

TEST_CASE("--approver resolves an ask; its failures are deny") {
    auto yes = script("yes.sh", "grep -q '\"action\":\"push\"' && echo allow");
    auto r = run({bin("cc-classify"), "--approver", yes, "git push"});
    CHECK(r.status == 0);
    auto j = json::parse(r.out);
    CHECK(j["decision"] == "allow");
    CHECK(j["approver"] == true);
    auto no = script("no.sh", "cat >/dev/null; echo deny");
    CHECK(run({bin("cc-classify"), "--approver", no, "git push"}).status == 11);
    auto slow = script("slow.sh", "sleep 5; echo allow");
    auto t = run({bin("cc-classify"), "--approver", slow, "--approver-timeout", "200", "git push"});
    CHECK(t.status == 11);
    CHECK_THAT(json::parse(t.out)["reason"].get<std::string>(), Catch::Contains("no answer within 200 ms"));
    // Not asked when nothing is an ask.
    auto never = script("never.sh", "echo allow; touch " + cc::test::scratch_dir() + "/asked");
    CHECK(run({bin("cc-classify"), "--approver", never, "sudo id"}).status == 11);
    CHECK(run({bin("cc-classify"), "--approver", never, "ls"}).status == 0);
    struct stat st;
    CHECK(::stat((cc::test::scratch_dir() + "/asked").c_str(), &st) != 0);
}

TEST_CASE("--jsonl: one result line per input line, in order, with ids") {
    std::string in =
        "{\"cmd\": \"ls\"}\n"
        "{\"cmd\": \"git push\", \"id\": 7}\n"
        "\n"
        "{\"cmd\": \"git commit -m x\", \"mode\": \"review\", \"id\": \"c\"}\n";
    auto r = run({bin("cc-classify"), "--jsonl"}, in);
    CHECK(r.status == 0);
    std::vector<json> lines;
    std::istringstream out(r.out);
    for (std::string l; std::getline(out, l);) lines.push_back(json::parse(l));
    REQUIRE(lines.size() == 3);
    CHECK(lines[0]["decision"] == "allow");
    CHECK(lines[1]["decision"] == "ask");
    CHECK(lines[1]["id"] == 7);
    CHECK(lines[2]["decision"] == "deny");
    CHECK(lines[2]["mode"] == "review");
    CHECK(lines[2]["id"] == "c");

    auto bad = run({bin("cc-classify"), "--jsonl"}, "{\"cmd\":\"ls\"}\nnot json\n{\"cmd\":\"ls\",\"colour\":1}\n{\"cmd\":\"ls\",\"mode\":\"x\"}\n{\"cmd\":\"id\"}\n");
    CHECK(bad.status == 2);
    std::istringstream bo(bad.out);
    std::vector<json> bl;
    for (std::string l; std::getline(bo, l);) bl.push_back(json::parse(l));
    REQUIRE(bl.size() == 5);
    CHECK(bl[1]["decision"] == "deny");
    CHECK(bl[1]["line"] == 2);
    CHECK_THAT(bl[2]["error"].get<std::string>(), Catch::Contains("colour: unknown field"));
    CHECK_THAT(bl[3]["error"].get<std::string>(), Catch::Contains("unknown mode 'x'"));
    CHECK(bl[4]["decision"] == "allow");
    CHECK_THAT(bad.err, Catch::Contains("stdin line 2"));

    std::string many;
    for (int i = 0; i < 3000; ++i) many += "{\"cmd\":\"git push origin b" + std::to_string(i) + "\",\"id\":" + std::to_string(i) + "}\n";
    auto m = run({bin("cc-classify"), "--jsonl"}, many);
    CHECK(m.status == 0);
    std::istringstream mo(m.out);
    int n = 0;
    for (std::string l; std::getline(mo, l); ++n)
        if (json::parse(l)["id"] != n) break;
    CHECK(n == 3000);
}

// --jsonl writes its answers in batches; a caller that sends one line and
// waits for its answer must still get it, also when the line arrives in parts
// or together with the start of the next one.
TEST_CASE("--jsonl: each answer comes without waiting for more input") {
    namespace bp = boost::process;
    bp::opstream to;
    bp::ipstream from;
    bp::child child(bin("cc-classify"), "--jsonl", bp::std_in < to, bp::std_out > from, bp::std_err > bp::null);
    auto answer = [&](const std::string& send) -> json {
        to << send << std::flush;
        auto line = std::async(std::launch::async, [&] {
            std::string l;
            std::getline(from, l);
            return l;
        });
        if (line.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
            child.terminate();  // unblocks the reader
            FAIL("no answer to " << send);
        }
        return json::parse(line.get());
    };
    CHECK(answer("{\"cmd\":\"git push\",\"id\":1}\n")["id"] == 1);
    CHECK(answer("{\"cmd\":\"ls\",\"id\":2}\n")["decision"] == "allow");
    // A whole line followed by the start of the next: the first is answered.
    CHECK(answer("{\"cmd\":\"ls\",\"id\":3}\n{\"cmd\":\"sudo")["id"] == 3);
    auto last = answer(" id\",\"id\":4}\n");
    CHECK(last["id"] == 4);
    CHECK(last["decision"] == "deny");
    to.pipe().close();
    child.wait();
    CHECK(child.exit_code() == 0);
}

// The PreToolUse payload as the agent CLI sends it (hooks reference: common
// fields plus tool_name, tool_input, tool_use_id).
TEST_CASE("--hook claude: PreToolUse in, hookSpecificOutput out, byte for byte") {
    auto payload = [](const std::string& tool, const std::string& cmd, const std::string& pmode = "bypassPermissions") {
        json j = {{"session_id", "abc123"},
                  {"transcript_path", "/tmp/t.jsonl"},
                  {"cwd", "/work"},
                  {"permission_mode", pmode},
                  {"hook_event_name", "PreToolUse"},
                  {"tool_name", tool},
                  {"tool_input", {{"command", cmd}, {"description", "d"}, {"timeout", 120000}}},
                  {"tool_use_id", "toolu_01ABC"}};
        return j.dump();
    };
    auto ask = run({bin("cc-classify"), "--hook", "claude"}, payload("Bash", "git push origin main"));
    CHECK(ask.status == 0);
    CHECK(ask.out ==
          "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\","
          "\"permissionDecisionReason\":\"cc-classify (chat mode): push to refs/heads/main needs approval in chat "
          "mode; no approver is connected, so ask is deny\"}}\n");
    auto allow = run({bin("cc-classify"), "--hook", "claude"}, payload("Bash", "ls -la"));
    CHECK(allow.status == 0);
    CHECK(allow.out ==
          "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\","
          "\"permissionDecisionReason\":\"cc-classify (chat mode): every command is known to only read\"}}\n");
    auto deny = run({bin("cc-classify"), "--hook", "claude", "--mode", "review"}, payload("Bash", "git commit -m x"));
    CHECK(deny.out ==
          "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\","
          "\"permissionDecisionReason\":\"cc-classify (review mode): create_commit is not allowed in review mode "
          "(read-only)\"}}\n");
    // The CLI's own plan mode is never looser than --mode.
    auto plan = run({bin("cc-classify"), "--hook", "claude"}, payload("Bash", "rm x", "plan"));
    CHECK_THAT(plan.out, Catch::Contains("\"permissionDecision\":\"deny\""));
    // An approver answers the ask.
    auto yes = script("hook-yes.sh", "cat >/dev/null; echo allow");
    auto approved = run({bin("cc-classify"), "--hook", "claude", "--approver", yes}, payload("Bash", "git push"));
    CHECK_THAT(approved.out, Catch::Contains("\"permissionDecision\":\"allow\""));
    CHECK_THAT(approved.out, Catch::Contains("approved"));
    // Bytes that are not UTF-8 still get a well-formed answer (never exit 1,
    // which the agent CLI would take as "run it").
    std::string raw = "{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"git push \\u00ff\"}}";
    auto bytes = run({bin("cc-classify"), "--hook", "claude"}, raw);
    CHECK(bytes.status == 0);
    CHECK_THAT(bytes.out, Catch::Contains("\"permissionDecision\":\"deny\""));
    auto latin = run({bin("cc-classify"), "--", std::string("echo \xff\xfe > f")});
    CHECK(latin.status == 0);
    // Kept whole, as its bytes (cc-json(5)): base64 of ff fe.
    CHECK(json::parse(latin.out)["commands"][0]["argv"][1] == json{{"bytes", "//4="}});
    // Other tools: no opinion.
    auto other = run({bin("cc-classify"), "--hook", "claude"}, payload("Read", "x"));
    CHECK(other.status == 0);
    CHECK(other.out.empty());
    // Malformed input blocks: exit 2 with the reason on stderr.
    for (const std::string& bad : {std::string("nope"), std::string("[]"), std::string("{\"tool_name\":\"Bash\"}"),
                                   std::string("{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":3}}"),
                                   std::string("{\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls\"}}")}) {
        INFO(bad);
        auto r = run({bin("cc-classify"), "--hook", "claude"}, bad);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::StartsWith("cc-classify: hook input: "));
    }
}

TEST_CASE("--help names every option; --version") {
    auto h = run({bin("cc-classify"), "--help"});
    CHECK(h.status == 0);
    for (const char* o : {"--mode", "--policy", "--jsonl", "--explain", "--hook", "--approver", "--approver-timeout", "--version",
                          "--emit-ask", "--wrap-with", "--hook-timeout"})
        CHECK_THAT(h.out, Catch::Contains(o));
    auto v = run({bin("cc-classify"), "--version"});
    CHECK(v.status == 0);
    CHECK_THAT(v.out, Catch::StartsWith("cc-classify "));
}

// The one-argument form classifies its argument byte for byte. CLI11
// reads "[a,b]" as a list (brackets dropped, commas split), so before the fix
// "[sudo,id]" was classified as "sudo id"; the two forms must agree on every
// row of the case table, in a read-only mode where most rows differ.
TEST_CASE("the command-line form and --jsonl agree on the whole case table") {
    std::ifstream in(cc::test::source_dir() + "/tests/classify/cases.tsv");
    REQUIRE(in);
    std::vector<std::string> lines;
    std::string jsonl;
    for (std::string row; std::getline(in, row);) {
        if (row.empty() || row[0] == '#') continue;
        std::string line = row;
        for (int tab = 0; tab < 3; ++tab) line = line.substr(line.find('\t') + 1);
        for (std::size_t k; (k = line.find("\u21b5")) != std::string::npos;) line.replace(k, 3, "\n");
        lines.push_back(line);
        jsonl += json({{"cmd", line}, {"mode", "plan"}}).dump() + "\n";
    }
    REQUIRE(lines.size() >= 400);
    auto batch = run({bin("cc-classify"), "--jsonl"}, jsonl);
    REQUIRE(batch.status == 0);
    std::istringstream answers(batch.out);
    int agreed = 0;
    for (const auto& line : lines) {
        std::string answer;
        REQUIRE(std::getline(answers, answer));
        auto one = run({bin("cc-classify"), "--mode", "plan", "--", line});
        INFO(line);
        CHECK(one.out == answer + "\n");
        if (one.out == answer + "\n") ++agreed;
    }
    CHECK(agreed == static_cast<int>(lines.size()));
    // The rewrite itself: "[sudo,id]" is one unknown command, not sudo.
    auto bracket = json::parse(run({bin("cc-classify"), "[sudo,id]"}).out);
    CHECK(bracket["commands"][0]["argv"] == json::array({"[sudo,id]"}));
    CHECK(bracket["classes"] == json::array({"run_code"}));
    // Several words are still joined with single spaces, options anywhere.
    auto words = json::parse(run({bin("cc-classify"), "git", "[a,b]", "--mode=plan", "push"}).out);
    CHECK(words["commands"][0]["argv"] == json::array({"git", "[a,b]", "push"}));
    CHECK(words["mode"] == "plan");
    auto valued = json::parse(run({bin("cc-classify"), "--mode", "review", "[x]"}).out);
    CHECK(valued["commands"][0]["argv"] == json::array({"[x]"}));
    CHECK(valued["mode"] == "review");
}

TEST_CASE("--policy with a command rule whose example disagrees is exit 2, naming the example") {
    std::string dir = cc::test::scratch_dir();
    std::ofstream(dir + "/rules.json")
        << R"({"rules":[{"action":"command","match":["git","push",["--force","-f"]],"decision":"deny",)"
           R"("examples":{"match":["git push --force"],"notMatch":["git push -f origin main"]}}]})";
    auto bad = run({bin("cc-classify"), "--policy", dir + "/rules.json", "ls"});
    CHECK(bad.status == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err == "cc-classify: '" + dir + "/rules.json': rules[0].examples.notMatch[0]: 'git push -f origin main' matches the rule\n");
    std::ofstream(dir + "/good.json")
        << R"({"rules":[{"action":"command","match":["git","push",["--force","-f"]],"decision":"deny","reason":"no force",)"
           R"("examples":{"match":["git push --force"],"notMatch":["git push origin main"]}}]})";
    auto force = run({bin("cc-classify"), "--policy", dir + "/good.json", "--", "sudo -u me git push -f"});
    CHECK(force.status == 11);
    auto ok = run({bin("cc-classify"), "--policy", dir + "/good.json", "git push origin main"});
    CHECK(ok.status == 10);
    std::ofstream(dir + "/shape.json") << R"({"rules":[{"action":"command","match":[["git"]],"decision":"deny"}]})";
    auto shape = run({bin("cc-classify"), "--policy", dir + "/shape.json", "ls"});
    CHECK(shape.status == 2);
    CHECK_THAT(shape.err, Catch::Contains("rules[0].match[0]: the command name must be a string"));
    std::ofstream(dir + "/stray.json") << R"({"rules":[{"action":"push","match":["git"],"decision":"deny"}]})";
    auto stray = run({bin("cc-classify"), "--policy", dir + "/stray.json", "ls"});
    CHECK(stray.status == 2);
    CHECK_THAT(stray.err, Catch::Contains("match"));
}

TEST_CASE("--explain names the rule or default that decided each sub-command") {
    std::string dir = cc::test::scratch_dir();
    std::ofstream(dir + "/force.json")
        << R"({"rules":[{"action":"command","match":["git","push",["--force","-f"]],"decision":"deny","reason":"no force pushes"}]})";
    auto e = run({bin("cc-classify"), "--explain", "--policy", dir + "/force.json", "--", "ls && sudo git -C r push -f"});
    CHECK(e.status == 11);
    CHECK(e.out ==
          "allow  ls\n"
          "       classes none; known to only read\n"
          "       data readers.json (ls)\n"
          "deny   sudo git -C r push -f\n"
          "       classes destroy_work, privilege_escalation, push; decided by rules[0]: no force pushes\n"
          "       resolved to git push -f\n"
          "       data wrappers.json (sudo), git.json (git)\n"
          "       sudo runs a command as another user\n"
          "       git push --force overwrites the remote's commits\n"
          "       git push\n"
          "line: deny in chat mode (rules[0]): no force pushes\n");
    auto plain = run({bin("cc-classify"), "--explain", "--mode", "plan", "git status"});
    CHECK(plain.status == 0);
    CHECK(plain.out == "allow  git status\n       classes none; known to only read\n       data git.json (git)\n"
                       "line: allow in plan mode: every command is known to only read\n");
    auto bad = run({bin("cc-classify"), "--explain", "--jsonl"});
    CHECK(bad.status == 2);
    CHECK(bad.err == "cc-classify: --explain: only with a command line\n");
}

// The shipped command data is compiled in; the data directory's classify/*.json
// are the operator's, read at start: a file adds tools (or replaces the shipped
// file of its name), and a bad file is exit 2 naming the file and field.
TEST_CASE("command data: a tool added without a rebuild; a bad file is exit 2, one line") {
    std::string share = cc::test::source_dir() + "/share/cc";
    std::string data = cc::test::scratch_dir() + "/data";
    REQUIRE(std::system(("rm -rf '" + data + "' && mkdir -p '" + data + "' && cp -r '" + share + "/classify' '" + data +
                         "/'").c_str()) == 0);
    auto with = [&](const std::vector<std::string>& argv) {
        cc::test::RunOptions o;
        o.env["CC_DATA_DIR"] = data;
        return run(argv, o);
    };
    // Before: unknown, so run_code (denied in plan mode).
    CHECK(with({bin("cc-classify"), "--mode", "plan", "mytool status"}).status == 11);
    std::ofstream(data + "/classify/local.json")
        << R"({"version":1,"commands":[{"names":["mytool"],"subcommands":[{"names":["status","log"],"classes":[]},)"
           R"({"names":["sync"],"classes":["network_access","write_files"]}],"valueOptions":{"short":"C"}},)"
           R"({"names":["peek"],"readOnly":true},{"names":["beam"],"classes":["network_write"]},)"
           R"({"names":["zap"],"prefixes":["zap-"],"classes":["network_write"]}]})";
    auto status = with({bin("cc-classify"), "--mode", "plan", "mytool -C dir status"});
    CHECK(status.status == 0);
    auto sync = json::parse(with({bin("cc-classify"), "mytool sync"}).out);
    CHECK(sync["classes"] == json::array({"network_access", "write_files"}));
    CHECK(with({bin("cc-classify"), "--mode", "plan", "mytool frobnicate"}).status == 11);
    CHECK(with({bin("cc-classify"), "--mode", "plan", "sudo peek x"}).status == 11);  // a wrapper still counts
    CHECK(with({bin("cc-classify"), "--mode", "plan", "peek x | grep y"}).status == 0);
    CHECK(json::parse(with({bin("cc-classify"), "beam x"}).out)["classes"] == json::array({"network_write"}));
    // A name prefix of an operator's entry, and the shipped ones (python*, pip*, mkfs*) as before.
    CHECK(json::parse(with({bin("cc-classify"), "zap-now x"}).out)["classes"] == json::array({"network_write"}));
    CHECK(json::parse(with({bin("cc-classify"), "pip3.12 install x"}).out)["classes"] == json::array({"install_package"}));
    CHECK(json::parse(with({bin("cc-classify"), "mkfs.ext4 /dev/sdb1"}).out)["classes"] == json::array({"destroy_system"}));
    CHECK(with({bin("cc-classify"), "--mode", "plan", "python3.12 --version"}).status == 0);
    auto explained = with({bin("cc-classify"), "--explain", "--", "mytool sync"});
    CHECK_THAT(explained.out, Catch::Contains("       data local.json (mytool)\n"));

    // Each way a file can be wrong: exit 2, nothing on stdout, one line naming the file and the field.
    const std::vector<std::pair<std::string, std::string>> bad = {
        {R"({"version":1,"commands":[{"names":["x"],"readOnly":true,"colour":"red"}]})", "commands[0].colour: unknown field"},
        {R"({"version":1,"commands":[{"names":["x"],"classes":["launch_missiles"]}]})", "commands[0].classes[0]: unknown class 'launch_missiles'"},
        {R"({"version":1,"commands":[{"names":["x"],"reader":"telepathy"}]})", "commands[0].reader: unknown reader 'telepathy'"},
        {R"({"version":1,"commands":[{"names":["git"],"readOnly":true}]})", "commands[0].names: 'git' is already listed in git.json"},
        {R"({"version":1,"commands":[{"names":["x"]}]})", "commands[0]: needs exactly one of"},
        {R"({"version":1,"commands":[{"names":["x"],"readOnly":true,"classes":["run_code"]}]})", "commands[0]: needs exactly one of"},
        {R"({"version":2,"commands":[]})", "version: must be 1"},
        {R"({"version":1,"commands":[{"names":["/bin/x"],"readOnly":true}]})", "has a '/'"},
        {R"({"version":1,"commands":[{"names":["x"],"prefixes":["py"],"readOnly":true}]})",
         "commands[0].prefixes: 'py' overlaps the prefix 'python' of runtimes.json (prefixes never overlap)"},
        {R"({"version":1,"commands":[{"names":["x"],"prefixes":["xa","x"],"readOnly":true}]})",
         "commands[0].prefixes: 'x' overlaps the prefix 'xa' of local.json (prefixes never overlap)"},
        {R"({"version":1,"commands":[{"names":["x"],"prefixes":[""],"readOnly":true}]})", "commands[0].prefixes[0]: must not be empty"},
        {R"({"version":1,"commands":[{"names":["x"],"subcommands":[{"names":["a"]}]}]})", "commands[0].subcommands[0].classes: is required"},
        {R"({"version":1,"commands":[{"names":["x"],"reader":"sudo","bare":["run_code"]}]})", "\"bare\", \"otherwise\" and \"valueOptions\" go with"},
        {R"({"version":1,"commands":[{"names":["x"],"readOnly":true}],)", "local.json"},
        {R"({"version":1,"commands":[{"names":["x"],"classes":["run_code"],"optionClasses":{"-o":["write_files"]}}]})",
         "commands[0].optionClasses: goes with \"readOnly\": true"},
        {R"({"version":1,"commands":[{"names":["x"],"readOnly":true,"optionClasses":{"o":["write_files"]}}]})",
         "commands[0].optionClasses.o: 'o' is not an option (-x, --name, -name or +)"},
        {R"({"version":1,"commands":[{"names":["x"],"readOnly":true,"optionClasses":{"-o":["writes"]}}]})",
         "unknown class 'writes'"},
        {R"({"version":1,"commands":[{"names":["x"],"readOnly":true,"optionClasses":{"-o":[]}}]})",
         "commands[0].optionClasses.-o: must name at least one class"},
    };
    for (const auto& [text, message] : bad) {
        INFO(text);
        std::ofstream(data + "/classify/local.json", std::ios::trunc) << text;
        for (const std::vector<std::string>& argv : {std::vector<std::string>{bin("cc-classify"), "ls"},
                                                     std::vector<std::string>{bin("cc-classify"), "--jsonl"},
                                                     std::vector<std::string>{bin("cc-classify"), "--hook", "claude"}}) {
            auto r = with(argv);
            CHECK(r.status == 2);
            CHECK(r.out.empty());
            CHECK_THAT(r.err, Catch::StartsWith("cc-classify: '" + data + "/classify/local.json': "));
            CHECK_THAT(r.err, Catch::Contains(message));
            CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        }
    }
    REQUIRE(std::remove((data + "/classify/local.json").c_str()) == 0);

    // A file named like a shipped one replaces it whole: here git.json knows
    // only `git`, read-only, so a push reads in plan mode; the other shipped
    // files still count (gh stays known), and their names stay theirs.
    std::ofstream(data + "/classify/git.json") << R"({"version":1,"commands":[{"names":["git"],"readOnly":true}]})";
    CHECK(with({bin("cc-classify"), "--mode", "plan", "git push origin main"}).status == 0);
    CHECK(with({bin("cc-classify"), "--mode", "plan", "gh pr create"}).status == 11);  // no longer known: run_code
    CHECK(with({bin("cc-classify"), "--mode", "plan", "ls"}).status == 0);
    CHECK_THAT(with({bin("cc-classify"), "--explain", "--", "git push"}).out, Catch::Contains("       data git.json (git)\n"));
    std::ofstream(data + "/classify/git.json", std::ios::trunc)
        << R"({"version":1,"commands":[{"names":["git","ls"],"readOnly":true}]})";
    auto twice = with({bin("cc-classify"), "ls"});
    CHECK(twice.status == 2);
    CHECK(twice.err == "cc-classify: '" + data + "/classify/git.json': commands[0].names: 'ls' is already listed in "
                       "readers.json (a name is listed once)\n");
    REQUIRE(std::remove((data + "/classify/git.json").c_str()) == 0);
    // No operator file (an empty or missing directory): the shipped data alone.
    REQUIRE(std::system(("rm -rf '" + data + "/classify'").c_str()) == 0);
    CHECK(with({bin("cc-classify"), "--mode", "plan", "git status && ls"}).status == 0);
    CHECK(with({bin("cc-classify"), "--mode", "plan", "git push"}).status == 11);
}

// The payloads as each CLI sends them (Claude Code and Codex: PreToolUse with
// session_id, transcript_path, cwd, permission_mode, tool_name, tool_input,
// tool_use_id, Codex adding turn_id and model; Gemini CLI: BeforeTool with
// session_id, transcript_path, cwd, timestamp, tool_name, tool_input).
namespace {

std::string claude_call(const std::string& cmd) {
    return json({{"session_id", "abc123"}, {"transcript_path", "/tmp/t.jsonl"}, {"cwd", "/work"},
                 {"permission_mode", "default"}, {"hook_event_name", "PreToolUse"}, {"tool_name", "Bash"},
                 {"tool_input", {{"command", cmd}, {"description", "d"}, {"timeout", 120000}}},
                 {"tool_use_id", "toolu_01ABC"}})
        .dump();
}

std::string codex_call(const std::string& tool, const std::string& cmd) {
    return json({{"session_id", "019a-thread"}, {"turn_id", "turn-1"}, {"transcript_path", nullptr}, {"cwd", "/work"},
                 {"hook_event_name", "PreToolUse"}, {"model", "gpt-test"}, {"permission_mode", "default"},
                 {"tool_name", tool}, {"tool_input", {{"command", cmd}}}, {"tool_use_id", "call-1"}})
        .dump();
}

std::string gemini_call(const std::string& tool, const std::string& cmd) {
    return json({{"session_id", "s1"}, {"transcript_path", "/tmp/g.json"}, {"cwd", "/work"},
                 {"hook_event_name", "BeforeTool"}, {"timestamp", "2026-12-03T00:00:00.000Z"}, {"tool_name", tool},
                 {"tool_input", {{"command", cmd}, {"description", "d"}}}})
        .dump();
}

}  // namespace

TEST_CASE("--hook claude: ask passed to the CLI's prompt with --emit-ask; updatedInput with --wrap-with") {
    std::string spec = cc::test::scratch_dir() + "/spec dir's.json";
    std::ofstream(spec) << "{}";
    auto ask = run({bin("cc-classify"), "--hook", "claude", "--emit-ask"}, claude_call("git push origin main"));
    CHECK(ask.status == 0);
    CHECK(ask.out ==
          "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"ask\","
          "\"permissionDecisionReason\":\"cc-classify (chat mode): push to refs/heads/main needs approval in chat "
          "mode\"}}\n");
    auto wrapped = run({bin("cc-classify"), "--hook", "claude", "--wrap-with", spec}, claude_call("ls -la"));
    CHECK(wrapped.status == 0);
    CHECK(wrapped.out ==
          "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\","
          "\"permissionDecisionReason\":\"cc-classify (chat mode): every command is known to only read\","
          "\"updatedInput\":{\"command\":\"'" + bin("cc-wrap") + "' --spec '" + spec.substr(0, spec.find('\'')) + "'\\\\''s.json' -- bash -c "
          "'ls -la'\",\"description\":\"d\",\"timeout\":120000}}}\n");
    // A deny is never rewritten; an ask shown to the user shows the wrapped call.
    auto deny = run({bin("cc-classify"), "--hook", "claude", "--wrap-with", spec}, claude_call("sudo ls"));
    CHECK_THAT(deny.out, Catch::Contains("\"permissionDecision\":\"deny\""));
    CHECK_THAT(deny.out, !Catch::Contains("updatedInput"));
    auto both = json::parse(run({bin("cc-classify"), "--hook", "claude", "--emit-ask", "--wrap-with", spec},
                                claude_call("git push")).out);
    CHECK(both["hookSpecificOutput"]["permissionDecision"] == "ask");
    CHECK_THAT(both["hookSpecificOutput"]["updatedInput"]["command"].get<std::string>(), Catch::EndsWith("-- bash -c 'git push'"));
    // Usage errors: exit 2 before reading anything.
    CHECK(run({bin("cc-classify"), "--hook", "codex", "--emit-ask"}, claude_call("ls")).status == 2);
    CHECK(run({bin("cc-classify"), "--hook", "claude", "--emit-ask", "--approver", "true"}, claude_call("ls")).status == 2);
    auto missing = run({bin("cc-classify"), "--hook", "claude", "--wrap-with", "/nonexistent/spec.json"}, claude_call("ls"));
    CHECK(missing.status == 2);
    CHECK(missing.err == "cc-classify: --wrap-with: cannot read the SandboxSpec '/nonexistent/spec.json'\n");
    CHECK(run({bin("cc-classify"), "--wrap-with", spec, "ls"}).status == 2);
}

// The rewrite runs the very line that was judged: bash reads the wrapped
// command back into cc-wrap's argv with the original as one argument.
TEST_CASE("--wrap-with: the original command survives the quoting byte for byte") {
    std::string dir = cc::test::scratch_dir() + "/wrapbin";
    REQUIRE(std::system(("mkdir -p '" + dir + "'").c_str()) == 0);
    {
        std::ofstream stub(dir + "/cc-wrap");
        stub << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\n";
    }
    ::chmod((dir + "/cc-wrap").c_str(), 0755);
    std::string spec = cc::test::scratch_dir() + "/s'p ec.json";
    std::ofstream(spec) << "{}";
    for (const std::string& cmd : {std::string("ls 'a b' \"c\"; echo 'it'\\''s'"), std::string("echo $'x\\'y' && printf '%s\\n' \"$HOME\""),
                                   std::string("cat <<'EOF'\nline ' two\nEOF"), std::string("echo \xc3\xbf \t tab"),
                                   std::string("echo '''' \"'\" \\' ")}) {
        INFO(cmd);
        auto r = run({bin("cc-classify"), "--hook", "codex", "--wrap-with", spec}, codex_call("Bash", cmd));
        REQUIRE(r.status == 0);
        auto j = json::parse(r.out);
        REQUIRE(j["hookSpecificOutput"]["permissionDecision"] == "allow");
        std::string wrapped = j["hookSpecificOutput"]["updatedInput"]["command"];
        // cc-wrap by its absolute path (a login shell's PATH may not have
        // it); the stub stands in for it here.
        const std::string exe = "'" + bin("cc-wrap") + "' ";
        REQUIRE(wrapped.rfind(exe, 0) == 0);
        wrapped = "'" + dir + "/cc-wrap' " + wrapped.substr(exe.size());
        cc::test::RunOptions o;
        o.env["PATH"] = "/usr/bin:/bin";
        auto argv = run({"/bin/bash", "-c", wrapped}, o);
        REQUIRE(argv.status == 0);
        std::string expected = std::string("--spec\0", 7) + spec + '\0' + std::string("--\0bash\0-c\0", 11) + cmd + '\0';
        CHECK(argv.out == expected);
    }
    // A NUL would cut the argument short of the line judged: denied.
    auto nul = run({bin("cc-classify"), "--hook", "codex", "--wrap-with", spec},
                   std::string("{\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls\\u0000; sudo rm -rf /\"}}"));
    CHECK_THAT(nul.out, Catch::Contains("\"permissionDecision\":\"deny\""));
}

TEST_CASE("--hook codex: deny and allow-with-updatedInput in Codex's wire format, byte for byte") {
    auto deny = run({bin("cc-classify"), "--hook", "codex"}, codex_call("Bash", "git push origin main"));
    CHECK(deny.status == 0);
    CHECK(deny.out ==
          "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\","
          "\"permissionDecisionReason\":\"cc-classify (chat mode): push to refs/heads/main needs approval in chat "
          "mode; no approver is connected, so ask is deny\"}}\n");
    // Codex takes a bare allow as a failed hook: an allow is no output at all,
    // and the call goes on to Codex's own approval.
    auto allow = run({bin("cc-classify"), "--hook", "codex"}, codex_call("Bash", "ls -la"));
    CHECK(allow.status == 0);
    CHECK(allow.out.empty());
    CHECK(allow.err.empty());
    std::string spec = cc::test::scratch_dir() + "/codex-spec.json";
    std::ofstream(spec) << "{}";
    auto wrapped = run({bin("cc-classify"), "--hook", "codex", "--wrap-with", spec}, codex_call("Bash", "ls -la"));
    CHECK(wrapped.out ==
          "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\","
          "\"updatedInput\":{\"command\":\"'" + bin("cc-wrap") + "' --spec '" + spec + "' -- bash -c 'ls -la'\"}}}\n");
    auto plan = run({bin("cc-classify"), "--hook", "codex", "--mode", "plan"}, codex_call("Bash", "npm install"));
    CHECK_THAT(plan.out, Catch::Contains("\"permissionDecision\":\"deny\""));
    auto other = run({bin("cc-classify"), "--hook", "codex"}, codex_call("apply_patch", "x"));
    CHECK(other.status == 0);
    CHECK(other.out.empty());
    auto wrong = run({bin("cc-classify"), "--hook", "codex"},
                     std::string("{\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls\"}}"));
    CHECK(wrong.status == 2);
    CHECK(wrong.err == "cc-classify: hook input: hook_event_name: only PreToolUse is supported\n");
}

TEST_CASE("--hook gemini: BeforeTool decision and reason, byte for byte") {
    auto deny = run({bin("cc-classify"), "--hook", "gemini"}, gemini_call("run_shell_command", "sudo id"));
    CHECK(deny.status == 0);
    CHECK(deny.out == "{\"decision\":\"deny\",\"reason\":\"cc-classify (chat mode): privilege_escalation is not allowed "
                      "in chat mode\"}\n");
    auto allow = run({bin("cc-classify"), "--hook", "gemini"}, gemini_call("run_shell_command", "git status"));
    CHECK(allow.out == "{\"decision\":\"allow\",\"reason\":\"cc-classify (chat mode): every command is known to only "
                       "read\"}\n");
    auto ask = run({bin("cc-classify"), "--hook", "gemini"}, gemini_call("run_shell_command", "git push"));
    CHECK_THAT(ask.out, Catch::StartsWith("{\"decision\":\"deny\""));
    std::string spec = cc::test::scratch_dir() + "/gemini-spec.json";
    std::ofstream(spec) << "{}";
    auto wrapped = run({bin("cc-classify"), "--hook", "gemini", "--wrap-with", spec}, gemini_call("run_shell_command", "ls"));
    CHECK(wrapped.out == "{\"decision\":\"allow\",\"reason\":\"cc-classify (chat mode): every command is known to only "
                         "read\",\"hookSpecificOutput\":{\"hookEventName\":\"BeforeTool\",\"tool_input\":{\"command\":"
                         "\"'" + bin("cc-wrap") + "' --spec '" + spec + "' -- bash -c 'ls'\",\"description\":\"d\"}}}\n");
    // Gemini replaces the arguments with tool_input: every one is kept
    // (dir_path above all, or the command would run elsewhere).
    auto in_dir = run({bin("cc-classify"), "--hook", "gemini", "--wrap-with", spec},
                      json({{"hook_event_name", "BeforeTool"}, {"tool_name", "run_shell_command"},
                            {"tool_input", {{"command", "ls"}, {"dir_path", "sub/dir"}, {"is_background", false}}}})
                          .dump());
    auto kept = json::parse(in_dir.out)["hookSpecificOutput"]["tool_input"];
    CHECK(kept["dir_path"] == "sub/dir");
    CHECK(kept["is_background"] == false);
    CHECK(kept["command"] == "'" + bin("cc-wrap") + "' --spec '" + spec + "' -- bash -c 'ls'");
    auto other = run({bin("cc-classify"), "--hook", "gemini"}, gemini_call("read_file", "x"));
    CHECK(other.status == 0);
    CHECK(other.out == "{}\n");
    auto wrong = run({bin("cc-classify"), "--hook", "gemini"}, claude_call("ls"));
    CHECK(wrong.status == 2);
    CHECK(wrong.err == "cc-classify: hook input: hook_event_name: only BeforeTool is supported\n");
}

// Every CLI runs the call when its hook fails any other way than exit 2, so
// malformed input, a crash and a hang must all end in exit 2 with a reason.
TEST_CASE("a hook never fails open: bad input, a crash or a timeout is exit 2 in every protocol") {
    namespace bp = boost::process;
    for (const char* proto : {"claude", "codex", "gemini"}) {
        INFO(proto);
        for (const std::string& bad : {std::string("nope"), std::string("[]"), std::string("{\"tool_name\":3}")}) {
            auto r = run({bin("cc-classify"), "--hook", proto}, bad);
            CHECK(r.status == 2);
            CHECK(r.out.empty());
            CHECK_THAT(r.err, Catch::StartsWith("cc-classify: hook input: "));
        }
        // A hang: the payload never ends. The hook denies on its own deadline.
        bp::opstream to;
        bp::ipstream err;
        auto start = std::chrono::steady_clock::now();
        bp::child hang(bin("cc-classify"), "--hook", proto, "--hook-timeout", "300", bp::std_in < to,
                       bp::std_out > bp::null, bp::std_err > err);
        to << "{\"tool_name\":" << std::flush;
        hang.wait();
        auto took = std::chrono::steady_clock::now() - start;
        CHECK(hang.exit_code() == 2);
        CHECK(took >= std::chrono::milliseconds(250));
        CHECK(took < std::chrono::seconds(20));
        std::string line;
        std::getline(err, line);
        CHECK(line == "cc-classify: hook: no answer within 300 ms (--hook-timeout); the call is denied");
        // A crash (here a signal from outside, as a fault inside would raise):
        // still exit 2 with a reason, never a status the CLI lets through.
        for (int sig : {SIGSEGV, SIGABRT, SIGBUS}) {
            bp::opstream to2;
            bp::ipstream err2;
            bp::child crash(bin("cc-classify"), "--hook", proto, bp::std_in < to2, bp::std_out > bp::null, bp::std_err > err2);
            to2 << "{" << std::flush;
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            ::kill(crash.id(), sig);
            crash.wait();
            CHECK(crash.exit_code() == 2);
            std::string why;
            std::getline(err2, why);
            CHECK(why == "cc-classify: hook: ended by signal " + std::to_string(sig) + "; the call is denied");
        }
    }
    // The default deadline leaves room for the approver's own timeout.
    auto slow = script("slow-approver.sh", "cat >/dev/null; sleep 1; echo allow");
    auto approved = run({bin("cc-classify"), "--hook", "claude", "--approver", slow, "--approver-timeout", "3000"},
                        claude_call("git push"));
    CHECK(approved.status == 0);
    CHECK_THAT(approved.out, Catch::Contains("\"permissionDecision\":\"allow\""));
}

// A CLI that lets the model type into a running program (Codex's
// write_stdin) reaches a shell through a pager's `!` command, which no hook
// sees. In the read-only modes the hook hands back the call with the pagers'
// escapes turned off.
TEST_CASE("--hook in a read-only mode: an allowed call runs with its pagers' escapes off") {
    if (std::system("command -v script >/dev/null && command -v less >/dev/null") != 0)
        CC_SKIP("needs script(1) and less(1)");
    std::string dir = cc::test::scratch_dir() + "/pager";
    REQUIRE(std::system(("mkdir -p '" + dir + "' && echo hello > '" + dir + "/f.txt'").c_str()) == 0);
    // Types `!touch MARKER` into the program on a terminal, then RETURN and q.
    auto typed = [&](const std::string& line, const std::string& marker) {
        std::string sh = "(sleep 0.5; printf '!touch " + marker + "\\n'; sleep 0.5; printf '\\nq'; sleep 0.3; printf 'q') | "
                         "timeout 10 script -qec " + std::string("'") + line + "' /dev/null >/dev/null 2>&1";
        return std::system(sh.c_str());
    };
    const std::string call = "less " + dir + "/f.txt";
    // Without the hook's rewrite, less runs the typed command.
    typed(call, dir + "/escaped");
    REQUIRE(::access((dir + "/escaped").c_str(), F_OK) == 0);
    auto r = run({bin("cc-classify"), "--hook", "codex", "--mode", "plan"}, codex_call("Bash", call));
    REQUIRE(r.status == 0);
    auto j = json::parse(r.out);
    CHECK(j["hookSpecificOutput"]["permissionDecision"] == "allow");
    std::string updated = j["hookSpecificOutput"]["updatedInput"]["command"];
    CHECK(updated == std::string("export LESSSECURE=1 PAGER=cat GIT_PAGER=cat MANPAGER=cat SYSTEMD_PAGER=cat BAT_PAGER=cat "
                                 "DELTA_PAGER=cat\n") + call);
    // The call as handed back: the same keys run nothing.
    std::string quoted_updated;
    for (char ch : updated) quoted_updated += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    int st = typed(quoted_updated, dir + "/guarded");
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) != 124);  // less ended on q, not by the timeout
    errno = 0;
    CHECK(::access((dir + "/guarded").c_str(), F_OK) == -1);
    CHECK(errno == ENOENT);  // never made, not merely unreadable
    // Chat mode is left as it was (a plain allow is no output for Codex).
    auto chat = run({bin("cc-classify"), "--hook", "codex"}, codex_call("Bash", call));
    CHECK(chat.out.empty());
}

// The operator's policy (/etc/cc/policy.json from the package; here
// $CC_CONFIG_DIR/policy.json) is what every tool reads when it is given no
// --policy; --policy beats it; one that cannot be read or parsed stops the
// tool (exit 2, naming it), never a silent fall back to the built-in policy.
TEST_CASE("the operator's policy file is read when no --policy is given, by cc-classify, cc-egress and cc-pushgate") {
    std::string etc = cc::test::scratch_dir() + "/etc-cc";
    std::string empty = cc::test::scratch_dir() + "/etc-cc-empty";
    std::string broken = cc::test::scratch_dir() + "/etc-cc-broken";
    for (const auto& d : {etc, empty, broken}) std::filesystem::create_directories(d);
    std::ofstream(etc + "/policy.json")
        << R"({"version":1,"rules":[{"action":"push","refs":["main"],"decision":"deny","reason":"main is released by CI"},)"
        << R"({"action":"network_access","decision":"deny","reason":"this host is offline"}]})";
    std::ofstream(broken + "/policy.json") << R"({"version":1,"rules":[{"action":"push","decision":"maybe"}]})";
    auto with = [](const std::string& dir) {
        cc::test::RunOptions o;
        o.env["CC_CONFIG_DIR"] = dir;
        return o;
    };
    // cc-classify: the operator's rule decides; without the file, the built-in answer.
    auto denied = run({bin("cc-classify"), "git push origin main"}, with(etc));
    CHECK(denied.status == 11);
    CHECK(json::parse(denied.out)["reason"] == "main is released by CI");
    CHECK(run({bin("cc-classify"), "git push origin main"}, with(empty)).status == 10);
    std::string other = cc::test::scratch_dir() + "/other.json";
    std::ofstream(other) << R"({"version":1,"rules":[{"action":"push","decision":"allow"}]})";
    CHECK(run({bin("cc-classify"), "--policy", other, "git push origin main"}, with(etc)).status == 0);
    auto bad = run({bin("cc-classify"), "ls"}, with(broken));
    CHECK(bad.status == 2);
    CHECK(bad.out.empty());
    CHECK_THAT(bad.err, Catch::Contains(broken + "/policy.json") && Catch::Contains("unknown decision 'maybe'"));

    // cc-egress: the network rule comes from it, and its plan names the file.
    auto plan = [&](const std::string& dir, std::vector<std::string> extra = {}) {
        std::vector<std::string> argv = {bin("cc-egress"), "--no-baseline", "--allow", "one.test:443", "--dry-run"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return run(argv, with(dir));
    };
    auto p = plan(etc);
    INFO(p.err);
    REQUIRE(p.status == 0);
    json pj = json::parse(p.out);
    CHECK(pj["policy"] == etc + "/policy.json");
    CHECK(pj["network"] == "off");
    CHECK(pj["networkRule"]["reason"] == "this host is offline");
    json builtin = json::parse(plan(empty).out);
    CHECK(builtin["policy"] == "built-in");
    CHECK(builtin["network"] == "on");
    CHECK(json::parse(plan(etc, {"--policy", other}).out)["policy"] == other);
    auto eb = plan(broken);
    CHECK(eb.status == 2);
    CHECK_THAT(eb.err, Catch::Contains(broken + "/policy.json"));

    // cc-pushgate: no --policy needed; a broken operator file stops it before it listens.
    std::ofstream(cc::test::scratch_dir() + "/token") << "t\n";
    auto gb = run({bin("cc-pushgate"), "--upstream", "http://127.0.0.1:9", "--repo", "acme/demo", "--token-file",
                   cc::test::scratch_dir() + "/token"},
                  with(broken));
    CHECK(gb.status == 2);
    CHECK(gb.out.empty());
    CHECK_THAT(gb.err, Catch::Contains(broken + "/policy.json"));
}

// --install-hook writes cc-classify into an agent CLI's own settings file
// (absolute path, the CLI's timeout beside --deadline), keeping everything
// else there; --check-hook says whether that hook would run and bound the
// CLI, and exits 1 when not.
TEST_CASE("--install-hook and --check-hook: each CLI's settings, merged, checked, never half-written") {
    std::string dir = cc::test::scratch_dir() + "/hooks";
    std::filesystem::create_directories(dir);
    const std::string claude = dir + "/claude.json";
    std::ofstream(claude) << R"({"model":"m","hooks":{"PreToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"lint.sh"}]}]}})";
    auto inst = run({bin("cc-classify"), "--install-hook", "claude", "--settings", claude, "--mode", "plan", "--deadline", "20000"});
    INFO(inst.err);
    REQUIRE(inst.status == 0);
    json said = json::parse(inst.out);
    CHECK(said["event"] == "hook-installed");
    json s = json::parse(std::ifstream(claude));
    CHECK(s["model"] == "m");
    REQUIRE(s["hooks"]["PreToolUse"].size() == 2);
    CHECK(s["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "lint.sh");  // another hook stays
    json mine = s["hooks"]["PreToolUse"][1];
    CHECK(mine["matcher"] == "Bash");
    std::string cmd = mine["hooks"][0]["command"];
    CHECK(cmd.rfind("/", 0) == 0);  // absolute: a CLI that resets PATH still finds it
    CHECK_THAT(cmd, Catch::EndsWith("/cc-classify --hook claude --mode plan --deadline 20000"));
    CHECK(mine["hooks"][0]["timeout"] == 20);  // seconds, for Claude Code
    auto check = run({bin("cc-classify"), "--check-hook", "claude", "--settings", claude});
    CHECK(check.status == 0);
    CHECK(json::parse(check.out)["runs"] == true);
    // Installed again: replaced, not doubled.
    REQUIRE(run({bin("cc-classify"), "--install-hook", "claude", "--settings", claude}).status == 0);
    CHECK(json::parse(std::ifstream(claude))["hooks"]["PreToolUse"].size() == 2);

    // What the check catches: a timeout under the deadline (the CLI gives up
    // first and runs the call), a bare program name.
    s = json::parse(std::ifstream(claude));
    s["hooks"]["PreToolUse"][1]["hooks"][0]["timeout"] = 5;
    std::ofstream(claude) << s.dump();
    auto short_timeout = run({bin("cc-classify"), "--check-hook", "claude", "--settings", claude});
    CHECK(short_timeout.status == 1);
    CHECK(json::parse(short_timeout.out)["problems"][0] ==
          "the CLI gives the hook 5000 ms, less than its --deadline 30000: a timed-out hook is no opinion to the CLI, and "
          "the call runs");
    s["hooks"]["PreToolUse"][1]["hooks"][0] = {{"type", "command"}, {"command", "cc-classify --hook claude"}, {"timeout", 30}};
    std::ofstream(claude) << s.dump();
    auto bare = run({bin("cc-classify"), "--check-hook", "claude", "--settings", claude});
    CHECK(bare.status == 1);
    CHECK_THAT(json::parse(bare.out)["problems"][0].get<std::string>(), Catch::Contains("by name"));

    // Gemini: BeforeTool, run_shell_command, milliseconds.
    const std::string gemini = dir + "/gemini/settings.json";  // its directory is made
    REQUIRE(run({bin("cc-classify"), "--install-hook", "gemini", "--settings", gemini}).status == 0);
    json g = json::parse(std::ifstream(gemini));
    CHECK(g["hooks"]["BeforeTool"][0]["matcher"] == "run_shell_command");
    CHECK(g["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] == 30000);
    CHECK(run({bin("cc-classify"), "--check-hook", "gemini", "--settings", gemini}).status == 0);

    // Codex: written, but outside its managed layers it runs only once trusted in /hooks.
    const std::string codex = dir + "/codex-hooks.json";
    REQUIRE(run({bin("cc-classify"), "--install-hook", "codex", "--settings", codex}).status == 0);
    auto cx = run({bin("cc-classify"), "--check-hook", "codex", "--settings", codex});
    CHECK(cx.status == 1);
    CHECK_THAT(json::parse(cx.out)["problems"][0].get<std::string>(), Catch::Contains("trusted"));
    // Codex's managed layer (runs without trust): requirements.toml, TOML,
    // the operator's. The rest of the file stays byte for byte; the result
    // is read back by a real TOML parser (Python's tomllib).
    const std::string req = dir + "/codex/requirements.toml";
    std::filesystem::create_directories(dir + "/codex");
    const std::string theirs = "allowed_approval_policies = [\"on-request\"]\n\n[features]\nhooks = true\n\n"
                               "[[hooks.PreToolUse]]\nmatcher = \"^apply_patch$\"\n[[hooks.PreToolUse.hooks]]\n"
                               "type = \"command\"\ncommand = \"/usr/local/bin/audit\"\n";
    std::ofstream(req) << theirs;
    auto none = run({bin("cc-classify"), "--check-hook", "codex", "--scope", "managed", "--settings", req});
    CHECK(none.status == 1);
    CHECK(json::parse(none.out)["problems"][0] == "no cc-classify hook under hooks.PreToolUse");
    for (int round = 0; round < 2; ++round) {  // the second install replaces the first
        auto m = run({bin("cc-classify"), "--install-hook", "codex", "--scope", "managed", "--settings", req, "--deadline",
                      "20000"});
        INFO(m.err);
        REQUIRE(m.status == 0);
    }
    std::string written;
    {
        std::ifstream f(req);
        written.assign(std::istreambuf_iterator<char>(f), {});
    }
    CHECK(written.rfind(theirs, 0) == 0);
    auto parsed = run({"python3", "-c",
                       "import json, sys, tomllib; d = tomllib.load(open(sys.argv[1], 'rb')); "
                       "print(json.dumps(d))", req});
    INFO(parsed.err);
    REQUIRE(parsed.status == 0);
    json t = json::parse(parsed.out);
    CHECK(t["features"]["hooks"] == true);
    REQUIRE(t["hooks"]["PreToolUse"].size() == 2);  // theirs, then ours (once)
    CHECK(t["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "/usr/local/bin/audit");
    json ours = t["hooks"]["PreToolUse"][1];
    CHECK(ours["matcher"] == "Bash");
    CHECK_THAT(ours["hooks"][0]["command"].get<std::string>(), Catch::EndsWith("/cc-classify --hook codex --deadline 20000"));
    CHECK(ours["hooks"][0]["timeout"] == 20);
    auto mcheck = run({bin("cc-classify"), "--check-hook", "codex", "--scope", "managed", "--settings", req});
    INFO(mcheck.out);
    CHECK(mcheck.status == 0);
    CHECK(json::parse(mcheck.out)["runs"] == true);
    // A file that gives PreToolUse as a value: left as it is, exit 2.
    const std::string inline_req = dir + "/codex/inline.toml";
    std::ofstream(inline_req) << "[hooks]\nPreToolUse = []\n";
    auto clash = run({bin("cc-classify"), "--install-hook", "codex", "--scope", "managed", "--settings", inline_req});
    CHECK(clash.status == 2);
    CHECK(clash.err == "cc-classify: '" + inline_req +
                           "': gives hooks in a form this installer cannot extend safely ('PreToolUse = []'): add the "
                           "hook as [[hooks.PreToolUse]] tables by hand\n");
    std::ifstream cf(inline_req);
    CHECK(std::string(std::istreambuf_iterator<char>(cf), {}) == "[hooks]\nPreToolUse = []\n");

    // A settings file that is not JSON is left as it is: exit 2, naming it.
    const std::string broken = dir + "/broken.json";
    std::ofstream(broken) << "{not json";
    auto bad = run({bin("cc-classify"), "--install-hook", "claude", "--settings", broken});
    CHECK(bad.status == 2);
    CHECK(bad.out.empty());
    CHECK_THAT(bad.err, Catch::Contains("'" + broken + "': is not a JSON object; left as it is"));
    std::ifstream bf(broken);
    CHECK(std::string(std::istreambuf_iterator<char>(bf), {}) == "{not json");
    // The scope's own file, under HOME.
    cc::test::RunOptions home;
    home.env["HOME"] = dir + "/home";
    auto user = run({bin("cc-classify"), "--install-hook", "claude"}, home);
    CHECK(user.status == 0);
    CHECK(json::parse(user.out)["settings"] == dir + "/home/.claude/settings.json");
    CHECK(run({bin("cc-classify"), "--install-hook", "cursor"}).status == 2);
    CHECK(run({bin("cc-classify"), "--install-hook", "claude", "ls"}).status == 2);
}
