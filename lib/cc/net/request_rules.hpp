// Requests to an intercepted host (intercept.hpp) mapped to the action
// classes every tool decides with lib/cc/policy: merging a pull request on
// GitHub's REST or GraphQL API is publish_review_or_merge whichever client
// sends it, an npm publish is publish_package, git's receive-pack over HTTPS
// is a push (refused here: pushes go through cc-pushgate). The rules are
// data (share/cc/egress/requests.json), each with requests it must and must
// not match, checked when the file is loaded.
//
//   {"version": 1, "rules": [
//     {"hosts": ["api.github.com"], "methods": ["PUT"], "path": "/repos/*/*/pulls/*/merge",
//      "action": "publish_review_or_merge", "why": "merge a pull request",
//      "examples": {"match": ["PUT api.github.com/repos/o/r/pulls/7/merge"],
//                   "notMatch": ["GET api.github.com/repos/o/r/pulls/7/merge"]}},
//     {"hosts": ["api.github.com"], "methods": ["POST"], "path": "/graphql",
//      "graphql": ["mergePullRequest"], ...},
//     {"hosts": ["github.com"], "methods": ["GET"], "path": "/**/info/refs",
//      "query": "service=git-receive-pack", "action": "push", "decision": "deny", ...}]}
//
// Paths: '*' is one segment, '**' any number (none included); compared
// without case, on the normalised path (normal_path). An example is
// "METHOD host/path[?query]", with " BODY" after a space for GraphQL.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/policy/policy.hpp"

namespace cc::net {

struct RequestRule {
    std::vector<std::string> hosts, methods;
    std::string path, query;
    std::vector<std::string> graphql;  // mutation fields; the rule then needs the body
    std::string action, why;
    std::optional<policy::Decision> decision;  // fixed here (deny), whatever the policy says
    std::vector<std::string> examples_match, examples_not_match;
};

struct RequestRules {
    std::vector<RequestRule> rules;
    std::string source;  // the file read
};

Result<RequestRules> parse_request_rules(const std::string& text, const std::string& subject);
// $CC_DATA_DIR/egress/requests.json.
Result<RequestRules> load_request_rules();

// The path of a request target as a server would route it: the query cut
// off, percent-escapes of unreserved characters decoded, '.' and '..'
// segments resolved, repeated '/' collapsed. nullopt when it cannot be read
// one way only (an encoded '/', '\', '%' or control byte; a '..' above the
// root): such a request is refused, never matched by a guess.
std::optional<std::string> normal_path(std::string_view target);
// The raw query ("" when none), percent-decoded.
std::string query_of(std::string_view target);

struct RequestClass {
    std::string action, why;
    std::string rule;  // "requests.json rules[3]"
    std::optional<policy::Decision> decision;
};

// Does a rule need the request's body to decide (a GraphQL rule whose host,
// method and path match)?
bool needs_body(const RequestRules& rr, const std::string& host, const std::string& method, const std::string& path);
// The first rule that matches, or nullopt. `body` is read only by GraphQL
// rules: a body that is not a GraphQL request in JSON matches them (a
// request that cannot be read is judged as the worst it could be).
std::optional<RequestClass> classify_request(const RequestRules& rr, const std::string& host, const std::string& method,
                                             const std::string& target, const std::string* body = nullptr);

}  // namespace cc::net
