// Talking to the upstream (curl): the handle setup every upstream request
// shares, and the protocol v2 ls-refs query that tells the gateway which of
// the pushed names the upstream resolves through a symbolic ref.
//
//   CurlHandle ch;  common_curl(ch, url, token, agent, timeout);  ...
//   auto refs = ls_refs(repo_url, token, agent, {"refs/heads/alias"}, timeout);
//   if (refs) for (auto& [name, r] : *refs) if (!r.symref_target.empty()) ...
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::git {

struct CurlHandle {
    CURL* h = curl_easy_init();
    curl_slist* headers = nullptr;
    CurlHandle() = default;
    CurlHandle(const CurlHandle&) = delete;
    CurlHandle& operator=(const CurlHandle&) = delete;
    ~CurlHandle() {
        curl_slist_free_all(headers);
        if (h) curl_easy_cleanup(h);
    }
    void header(const std::string& line) { headers = curl_slist_append(headers, line.c_str()); }
};

// URL, no redirects, HTTP/1.1, stall timeout, Basic with the token as password.
void common_curl(CurlHandle& c, const std::string& url, const std::string& token, const std::string& agent,
                 std::chrono::seconds io_timeout);
std::string curl_error_text(CURLcode rc, const char* errbuf);
// CURLOPT_WRITEFUNCTION appending to a std::string, refusing past 32 MiB.
size_t collect_capped(char* p, size_t size, size_t n, void* ud);

struct RemoteRef {
    std::string oid;            // what the name resolves to (all zeros for an unborn symref)
    std::string symref_target;  // empty: not a symbolic ref
};

// Parses an ls-refs response ("<oid> <name>[ symref-target:<t>][ peeled:<o>]" lines, flush).
Result<std::map<std::string, RemoteRef>> parse_ls_refs(std::string_view body);

// Asks `repo_url` (BASE/O/N.git) for the refs starting with one of `prefixes`
// with protocol v2 ls-refs (gitprotocol-v2(5)), symbolic refs' targets included.
// A failure is an error: the caller refuses rather than guess.
Result<std::map<std::string, RemoteRef>> ls_refs(const std::string& repo_url, const std::string& token,
                                                 const std::string& agent, const std::vector<std::string>& prefixes,
                                                 std::chrono::seconds io_timeout);

// Which of `names` (refs the upstream's ls-refs did not list) exist on the
// upstream all the same: a symbolic ref whose target does not exist yet (or a
// broken ref) is listed by no git protocol, yet a push to it creates the
// target. The probe is one receive-pack request that can change nothing: for
// each name an update of <name>/<random> that expects the old value `oid`
// (an object the upstream has) where there is no ref. receive-pack refuses
// each; for a name that exists as a ref, its message says so ("'<name>'
// exists; cannot create ..."). The names it says that of are returned. A
// failure to ask is an error.
Result<std::vector<std::string>> unlisted_refs(const std::string& repo_url, const std::string& token,
                                               const std::string& agent, const std::vector<std::string>& names,
                                               const std::string& oid, std::chrono::seconds io_timeout);
Result<bool> unlisted_ref(const std::string& repo_url, const std::string& token, const std::string& agent,
                          const std::string& name, const std::string& oid, std::chrono::seconds io_timeout);

}  // namespace cc::git
