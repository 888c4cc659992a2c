// Network asks: when the policy's network rule for the session's mode is
// `ask`, each new host:port the rules let through is put to --approver (the
// approver protocol of lib/cc/policy/approver.hpp: one JSON question on its
// stdin, `allow` or `deny` on its stdout, anything else or no answer within
// the timeout is deny). Every outcome is kept for the session, so a host:port
// is asked about once; connections to a host:port whose question is still
// out wait for that answer instead of asking again.
//
// The approver runs on the Asker's own thread and event loop (Boost.Process
// with asynchronous pipes), never on a proxy loop: other clients are served
// while a human thinks. Callers get the outcome through a callback, called
// on the Asker's thread (or on the caller's, for a cached outcome).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>

#include "cc/policy/approver.hpp"

namespace cc::net {

struct AskOutcome {
    bool allow = false;
    std::string reason;  // "approved", "refused by the approver", "ask without approver", ...
    bool cached = false; // the answer was already known (or being asked) for this host:port
};

class Asker {
public:
    using Done = std::function<void(const AskOutcome&)>;
    // `approver.argv` empty: every ask is deny, reason "ask without approver",
    // and nothing runs. `log` gets one line per question answered.
    Asker(policy::Approver approver, policy::Verdict rule, std::function<void(const std::string&)> log);
    ~Asker();  // stops: approvers still running are killed, their waiters get deny
    Asker(const Asker&) = delete;
    Asker& operator=(const Asker&) = delete;

    // `key` is "host:port"; `question` what the approver reads (without
    // the fields the Asker adds). `done` is called exactly once.
    void ask(const std::string& key, nlohmann::json question, Done done);
    bool has_approver() const;
    // Whether the approver allowed `key` already (false: refused, still out,
    // or never asked). Asks nothing.
    bool approved(const std::string& key) const;

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace cc::net
