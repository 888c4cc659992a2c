// Where the gateway's write tokens come from. The token only ever goes into
// the Authorization header of the upstream request: it is never logged, never
// put in a URL and never reported in JSON.
//
//   auto src = cc::git::command_token_source({"/usr/local/bin/mint", "--repo"}, 30s);
//   cc::Result<std::string> tok = (*src)->token("acme", "demo");   // per push
//   src->revoke_all();                                             // at shutdown
#pragma once

#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cc/core/result.hpp"

namespace cc::git {

class TokenSource {
public:
    virtual ~TokenSource() = default;
    // A write token for OWNER/NAME (the spelling the operator linked).
    virtual Result<std::string> token(const std::string& owner, const std::string& name) = 0;
    // Revokes every token this source minted; the JSON says how many and which failed.
    virtual nlohmann::json revoke_all() { return nlohmann::json::object(); }
    // Where tokens are revoked (App mode): starts the revocation watch, a
    // process forked now (call while the process has one thread) that is
    // told each minted token and revokes what is left when this process
    // ends without revoking them itself: a fatal error, a crash, SIGKILL.
    virtual Status watch_for_exit() { return ok(); }
    virtual std::string kind() const = 0;  // "command", "file", "github-app"
};

// Runs argv per push (no shell); the first line of its stdout is the token. The
// child sees CC_PUSHGATE_REPO=OWNER/NAME. Non-zero exit, no output or no answer
// within `timeout` is an error naming the command.
std::unique_ptr<TokenSource> command_token_source(std::vector<std::string> argv, std::chrono::milliseconds timeout);
// Reads the file per push, so a rotated token is picked up.
std::unique_ptr<TokenSource> file_token_source(std::string path);

struct AppConfig {
    std::string app_id;
    std::string key_pem;          // the App's RSA private key, PEM
    std::string installation_id;
    std::string api_url = "https://api.github.com";
    std::chrono::milliseconds timeout{20000};
};
// GitHub App mode: per push, mints an installation token scoped to the one
// repository (contents: write) with an RS256 JWT; revoke_all() deletes every
// token it minted. An input error when the key does not load.
Result<std::unique_ptr<TokenSource>> app_token_source(AppConfig config);

// The App JWT (RFC 7519, RS256 per RFC 7518 section 3.3): iat 60 s in the past
// to allow for clock drift, exp 9 minutes later (GitHub's limit is 10).
Result<std::string> make_app_jwt(const std::string& key_pem, const std::string& app_id, std::time_t now);

// base64url without padding (RFC 4648 section 5), as JWS uses it.
std::string base64url(std::string_view data);

// A token must fit in one header value.
Status check_token(const std::string& token, const std::string& subject);

}  // namespace cc::git
