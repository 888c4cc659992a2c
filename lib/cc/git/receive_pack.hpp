// The receive-pack side of git's smart-HTTP push (gitprotocol-pack(5),
// gitprotocol-http(5)), as far as a gateway needs it: read the commands, push
// options and capabilities from the front of a request body, re-encode a
// subset of them, and write the report-status answer that makes git print its
// own "[remote rejected] <src> -> <dst> (<reason>)" line.
//
//   cc::git::RequestParser p;
//   while (!done) { auto r = p.feed(chunk); if (!r) fail(r.error()); done = *r; }
//   const PushRequest& req = p.request();   std::string pack_start = p.take_rest();
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/git/pkt_line.hpp"

namespace cc::git {

struct Command {
    std::string old_oid;
    std::string new_oid;
    std::string ref;  // full name: refs/heads/main

    bool is_delete() const;  // new is the zero id
    bool is_create() const;  // old is the zero id
    std::string_view kind() const;  // "create", "update" or "delete"
};

struct PushRequest {
    std::vector<std::string> shallow;
    std::vector<Command> commands;
    std::vector<std::string> capabilities;  // as sent after the NUL of the first command
    std::vector<std::string> options;       // push options (git push -o), when "push-options" is a cap

    bool has(std::string_view cap) const;
    bool atomic() const { return has("atomic"); }
    // Side-band packet size the client asked for, 0 when it asked for none.
    std::size_t sideband_max() const;
    bool wants_report() const { return has("report-status") || has("report-status-v2"); }
    // A probe (the first POST of a large push) carries nothing but a flush.
    bool is_probe() const { return commands.empty() && shallow.empty(); }
};

struct ParseLimits {
    std::size_t max_ref_len = 1024;       // longer ref names are refused
    std::size_t max_commands = 10000;
    std::size_t max_prefix_bytes = 8u << 20;  // commands + options, before the pack
    std::size_t max_options = 100;            // push options (git push -o), count
    std::size_t max_option_bytes = 64u << 10; // and their bytes together
};

// Reads the prefix (shallow lines, commands, flush, [push options, flush]) of a
// receive-pack request from a stream fed in arbitrary slices.
class RequestParser {
public:
    explicit RequestParser(ParseLimits limits = {}) : limits_(limits) {}
    // true once the prefix is complete (bytes past it stay buffered); an input
    // error names what is wrong (bad pkt-line length, malformed command, ...).
    Result<bool> feed(std::string_view bytes);
    bool done() const { return state_ == State::done; }
    const PushRequest& request() const { return req_; }
    // The bytes after the prefix fed so far (the start of the pack).
    std::string take_rest() { return reader_.take_rest(); }
    // How many bytes of the stream the prefix took (valid once done()).
    std::size_t prefix_bytes() const { return prefix_bytes_; }
    // The stream ended: an error unless the prefix was complete.
    Status finish() const;

private:
    enum class State { commands, options, done };
    Status take_command(const std::string& line);
    ParseLimits limits_;
    PktReader reader_;
    PushRequest req_;
    State state_ = State::commands;
    std::size_t seen_ = 0;
    std::size_t prefix_bytes_ = 0;
    std::size_t option_bytes_ = 0;
};

// The prefix of a request carrying `commands` (caps on the first one), the
// request's shallow lines and push options: what goes upstream before the pack.
std::string encode_prefix(const PushRequest& req, const std::vector<Command>& commands);

// One line of a report: ok, or ng with a reason (kept to one printable line).
struct RefStatus {
    std::string ref;
    bool ok = false;
    std::string reason;
};

// "unpack ok", one ok/ng line per ref, flush: the report-status body.
std::string report_status(const std::vector<RefStatus>& refs, std::string_view unpack = "ok");

// Appends ng lines to an upstream report (pkt-lines ending in a flush), before its flush.
Result<std::string> merge_report(std::string_view upstream_report, const std::vector<RefStatus>& extra);

// The whole response body for the client: `messages` as band-2 lines (only when
// the client asked for side-band; git shows them as "remote: ..."), then the
// report, side-band wrapped and flushed when asked for.
std::string response_body(const PushRequest& req, const std::vector<std::string>& messages,
                          const std::string& report);

// Makes a reason safe for one report line: control characters become blanks,
// length is capped.
std::string one_line(std::string_view text, std::size_t max = 1000);

// Ref advertisement (GET info/refs?service=git-receive-pack). Removes the
// push-cert capability (a signed push would send a block the gateway does not
// forward). An input error when the body is not an advertisement.
Result<std::string> filter_advertisement(std::string_view body);
// An advertisement of an empty repository with the gateway's capabilities: used
// when upstream cannot be asked, so that git goes on to POST and the push gets
// a rejected ref with the reason instead of a bare fatal error.
std::string synthetic_advertisement();
// An advertisement that makes git print "fatal: remote error: <message>".
std::string error_advertisement(std::string_view message);

// Which repository and which smart-HTTP endpoint a request target names.
// Accepted: "/[github.com/]<owner>/<name>[.git]/info/refs?service=<svc>" and
// ".../git-receive-pack" (and git-upload-pack, reported so it can be refused).
struct Route {
    enum class Kind { info_refs, receive_pack, upload_pack, other };
    Kind kind = Kind::other;
    std::string repo_key;  // github.com/<owner>/<name>, lower case, no .git
    std::string owner, name;
    std::string service;   // info_refs only: the service= query value
};
Route parse_route(std::string_view target);

// "OWNER/NAME", "github.com/O/N.git", "https://github.com/O/N/" -> "github.com/o/n";
// an input error when it does not name one repository.
Result<std::string> normalise_repo(std::string_view spelling);

// The ready event's URL ("http://127.0.0.1:P/<secret>/") as the base the
// agent's git pushes to ("http://127.0.0.1:P/") and the session's secret
// (empty when the URL carries none).
struct GatewayUrl {
    std::string base, secret;
};
GatewayUrl split_gateway_url(const std::string& url);

// The agent-side git configuration for a gateway at `url` (the ready
// event's), in git's config-file format: pushInsteadOf to the base, no
// proxy, and the secret as an X-CC-Pushgate-Session header.
std::string git_config_text(const std::string& url);
// The pushInsteadOf prefixes rewritten to the gateway.
const std::vector<std::string>& github_push_prefixes();

}  // namespace cc::git
