#include "cc/git/gateway_impl.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/process.hpp>

#include <atomic>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "cc/git/ancestry.hpp"
#include "cc/git/decision.hpp"
#include "cc/git/http.hpp"
#include "cc/git/receive_pack.hpp"
#include "cc/git/redact.hpp"
#include "cc/git/forward.hpp"
#include "cc/git/server.hpp"
#include "cc/git/upstream.hpp"

namespace cc::git::detail {

// New names a push may create that the upstream's listing does not show,
// each checked with one probe request (read_symrefs).
constexpr std::size_t max_probes_per_push = 32;

// Which of the pushed names the upstream resolves through a symbolic ref
// (decide_push then judges their targets too). When the upstream cannot say,
// nothing goes (fail closed): the reason is returned, and the push fails as
// when upstream is down.
std::optional<std::string> Gateway::read_symrefs(const Linked& target, const std::string& token,
                                                 const http::RequestHead& h, const PushPlan& plan, PushContext& ctx) {
    std::string agent = h.header("user-agent").value_or("git/cc-pushgate");
    std::vector<std::string> names = plan.open_refs();
    std::vector<std::string> prefixes = names;
    prefixes.push_back("HEAD");  // an object the upstream has, for the probe below
    auto remote = ls_refs(upstream_url(target), token, agent, prefixes, cfg_.io_timeout);
    if (!remote) {
        if (remote.error().subject == "upstream unreachable") return remote.error().one_line();
        return "could not read the upstream's symbolic refs (" + remote.error().one_line() + ")";
    }
    std::map<std::string, std::string> symrefs;
    std::string some_oid;
    for (const auto& [name, r] : *remote) {
        if (!r.symref_target.empty()) symrefs[name] = r.symref_target;
        if (some_oid.empty() && r.oid.find_first_not_of('0') != std::string::npos) some_oid = r.oid;
    }
    ctx.symrefs = std::move(symrefs);
    // An update or delete of a name the listing does not show: hidden from
    // fetches, and so possibly a symbolic ref to anything.
    for (const auto& r : plan.refs)
        if (!r.denied() && !r.cmd.is_create() && !remote->count(r.cmd.ref)) ctx.hidden.push_back(r.cmd.ref);
    // A new name the upstream does not list may still be a symbolic ref there
    // whose target does not exist yet: no protocol lists those. Ask
    // receive-pack, in a request that can change nothing (upstream.hpp).
    // With no commit on the upstream there is nothing to ask with.
    bool creates = std::any_of(plan.refs.begin(), plan.refs.end(), [&](const RefPlan& r) {
        return !r.denied() && r.cmd.is_create() && !remote->count(r.cmd.ref);
    });
    if (!creates) return std::nullopt;
    if (some_oid.empty()) {
        // HEAD is unborn: any branch's commit will do.
        auto heads = ls_refs(upstream_url(target), token, agent, {"refs/heads/", "refs/tags/"}, cfg_.io_timeout);
        if (!heads) return "could not read the upstream's refs (" + heads.error().one_line() + ")";
        for (const auto& [name, r] : *heads)
            if (some_oid.empty() && r.oid.find_first_not_of('0') != std::string::npos) some_oid = r.oid;
    }
    if (some_oid.empty()) return std::nullopt;
    // One probe per new name: bounded, so one push cannot make the gateway
    // send the upstream hundreds of requests.
    std::size_t probes = 0;
    for (const auto& r : plan.refs)
        if (!r.denied() && r.cmd.is_create() && !remote->count(r.cmd.ref)) ++probes;
    if (probes > max_probes_per_push)
        return "this push creates " + std::to_string(probes) + " names the upstream does not list; at most " +
               std::to_string(max_probes_per_push) + " are checked in one push: push them in parts";
    for (const auto& r : plan.refs) {
        if (r.denied() || !r.cmd.is_create() || remote->count(r.cmd.ref)) continue;
        auto hidden = unlisted_refs(upstream_url(target), token, agent, {r.cmd.ref}, some_oid, cfg_.io_timeout);
        if (!hidden) {
            if (hidden.error().subject == "upstream unreachable") return hidden.error().one_line();
            return "could not ask the upstream whether " + r.cmd.ref + " exists (" + hidden.error().one_line() + ")";
        }
        ctx.unlisted.insert(ctx.unlisted.end(), hidden->begin(), hidden->end());
    }
    return std::nullopt;
}

// An `ask` goes to the approver (none configured: deny).
void Gateway::ask_approver(RefPlan& r, const std::string& repo_key) const {
    if (r.verdict.decision != policy::Decision::ask) return;
    json q = {{"action", "push"},   {"mode", policy::to_string(cfg_.mode)},
              {"repo", repo_key},   {"ref", r.cmd.ref},
              {"old", r.cmd.old_oid}, {"new", r.cmd.new_oid},
              {"kind", r.kind},     {"reason", r.verdict.reason}};
    if (!r.symref_target.empty()) q["symrefTarget"] = r.symref_target;
    r.verdict = policy::resolve_ask(r.verdict, q, cfg_.approver);
}

bool Gateway::handle_push(Conn& c, const http::RequestHead& h, const Route& route, bool close) {
    auto t0 = Clock::now();
    Body body(c, h);
    if (auto e = body.init_error()) {
        send_whole(c, e->code == Errc::input ? 415 : 400, "text/plain", "cc-pushgate: " + e->one_line() + "\n", true);
        return false;
    }
    if (auto e = h.header("expect"); e && e->find("100") != std::string::npos)
        if (!c.write_all("HTTP/1.1 100 Continue\r\n\r\n")) return false;

    auto protocol_error = [&](const Error& e) {
        log_line(route.repo_key + ": bad push request: " + e.one_line());
        emit_({{"event", "error"}, {"repo", route.repo_key}, {"error", e.one_line()}});
        send_whole(c, 400, "text/plain", "cc-pushgate: bad push request: " + e.message + "\n", true);
        return false;
    };

    // 1. The prefix: shallow lines, commands, push options.
    RequestParser parser;
    std::string chunk;
    bool eof = false;
    while (!parser.done()) {
        chunk.clear();
        auto n = body.read(chunk, io_chunk);
        if (!n) return protocol_error(n.error());
        if (*n == 0) {
            eof = true;
            break;
        }
        auto r = parser.feed(chunk);
        if (!r) return protocol_error(r.error());
    }
    if (eof)
        if (auto s = parser.finish(); !s) return protocol_error(s.error());
    const PushRequest& req = parser.request();
    std::string pack_start = parser.take_rest();
    if (req.is_probe()) {
        // The probe before a large push: answer as http-backend does.
        if (!pack_start.empty()) return protocol_error(input_error("request", "data after an empty command list"));
        chunk.clear();
        auto n = body.read(chunk, io_chunk);
        if (!n) return protocol_error(n.error());
        if (*n) return protocol_error(input_error("request", "data after an empty command list"));
        return send_whole(c, 200, result_type, "", close);
    }

    // 2. One verdict per ref: decided from the names as pushed, then again
    // with the upstream's symbolic refs among them.
    auto it = linked_.find(route.repo_key);
    PushContext ctx{route.repo_key, it != linked_.end(), cfg_.mode, &cfg_.policy, cfg_.ref_vars, std::nullopt, {}, {}};
    PushPlan plan = decide_push(req, ctx);
    // The write token is fetched once per push, before anything is asked of
    // upstream; a failure rejects the refs that would have gone (below).
    std::optional<Result<std::string>> token;
    std::optional<std::string> upstream_failure;
    if (plan.any_open()) {
        token = cfg_.tokens->token(it->second.owner, it->second.name);
        if (*token) upstream_failure = read_symrefs(it->second, **token, h, plan, ctx);
        if (ctx.symrefs) plan = decide_push(req, ctx);
    }
    for (auto& r : plan.refs) ask_approver(r, route.repo_key);
    // Ancestry checks: the old tips into the mirror, a quarantine for the pack.
    // When that cannot be done, the update is judged as a force push.
    std::unique_ptr<Quarantine> quarantine;
    std::unique_lock<std::mutex> mirror_guard;
    std::vector<RefPlan*> to_check, to_read;  // ancestry; content (paths, sizes)
    for (auto& r : plan.refs) {
        if (r.needs_ancestry()) to_check.push_back(&r);
        if (r.needs_content()) to_read.push_back(&r);
    }
    std::string head_base;  // the upstream's default branch: what a new branch's content is read against
    if (!to_check.empty() || !to_read.empty()) {
        std::string failure;
        if (!token || !*token) {
            failure = "no write token to fetch the old tip with";
        } else {
            mirror_guard = std::unique_lock<std::mutex>(mirror_lock(route.repo_key));
            auto mirror = Mirror::open(cfg_.mirror_dir, route.repo_key);
            if (!mirror) failure = mirror.error().one_line();
            auto have_old = [&](const RefPlan& r) {
                if (!failure.empty() || r.cmd.is_create()) return;
                const std::string& fetch_ref = r.symref_target.empty() ? r.cmd.ref : r.symref_target;
                if (auto e = mirror->ensure(r.cmd.old_oid, upstream_url(it->second), fetch_ref, **token); !e)
                    failure = e.error().one_line();
            };
            for (auto* r : to_check) have_old(*r);
            for (auto* r : to_read) have_old(*r);
            if (failure.empty() &&
                std::any_of(to_read.begin(), to_read.end(), [](const RefPlan* r) { return r->cmd.is_create(); })) {
                if (auto hb = mirror->fetch_head(upstream_url(it->second), **token)) head_base = *hb;
                else failure = hb.error().one_line();
            }
            if (failure.empty()) {
                // Content rules read trees and blobs: then the whole pack is
                // indexed; the ancestry check alone needs only its commits.
                auto q = Quarantine::start(*mirror, {upstream_url(it->second), **token}, !to_read.empty());
                if (q) quarantine = std::move(*q);
                else failure = q.error().one_line();
            }
        }
        if (!failure.empty()) {
            log_line(route.repo_key + ": ancestry and content checks unavailable: " + failure);
            for (auto* r : to_check) {
                settle_ancestry(*r, Result<bool>(io_error("", failure, 0)));
                r->checked = false;
                ask_approver(*r, route.repo_key);
            }
            for (auto* r : to_read) settle_content(*r, Result<policy::PushContent>(io_error("", failure, 0)), ctx);
            to_check.clear();
            to_read.clear();
            quarantine.reset();
        }
    }
    PushOutcome out = outcome(plan, req.atomic(), cfg_.reject_label);
    const std::vector<Command>& allowed = out.forward;
    const std::vector<RefStatus>& rejected = out.rejected;
    const std::vector<std::string>& messages = out.messages;

    json event = {{"event", "push"}, {"repo", route.repo_key}, {"atomic", req.atomic()}, {"options", req.options}};
    auto fill_refs = [&] {
        json refs = json::array();
        for (const auto& r : plan.refs) {
            json j = {{"ref", r.cmd.ref},
                      {"old", r.cmd.old_oid},
                      {"new", r.cmd.new_oid},
                      {"kind", r.kind},
                      {"decision", policy::to_string(r.verdict.decision)},
                      {"reason", r.verdict.reason},
                      {"source", r.verdict.source}};
            if (!r.symref_target.empty()) j["symrefTarget"] = r.symref_target;
            if (r.checked) j["ancestryChecked"] = true;
            if (r.content)
                j["content"] = {{"files", r.content->files}, {"largestBytes", r.content->largest}};
            if (!r.looks_like.empty()) j["looksLike"] = r.looks_like;
            refs.push_back(std::move(j));
        }
        event["refs"] = refs;
    };
    auto finish_event = [&](const std::string& result, std::optional<long> upstream_status, const std::string& err) {
        fill_refs();
        event["result"] = result;
        event["forwarded"] = json::array();
        if (result == "forwarded" || result == "partial")
            for (const auto& a : allowed) event["forwarded"].push_back(a.ref);
        event["bytes"] = body.wire_bytes();
        event["upstreamStatus"] = upstream_status ? json(*upstream_status) : json(nullptr);
        if (!err.empty()) event["error"] = err;
        event["durationMs"] =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
        emit_(event);
    };

    // Answers with rejections only, after reading the whole body: replying
    // early makes git fail with "Broken pipe" and lose the reason.
    auto reject_all = [&](std::vector<RefStatus> lines, std::vector<std::string> msgs, const std::string& result,
                          std::optional<long> upstream_status, const std::string& err) {
        bool drained = body.drain(cfg_.drain_limit, cfg_.drain_timeout);
        if (!drained) log_line(route.repo_key + ": stopped draining the push body at a cap; closing");
        bool ok = send_whole(c, 200, result_type, response_body(req, msgs, report_status(lines)), close || !drained);
        finish_event(result, upstream_status, err);
        return ok && drained;
    };

    if (out.forward_nothing()) return reject_all(rejected, messages, "rejected", std::nullopt, "");

    // 3. Forward the allowed commands with the pack.
    const Linked& target = it->second;
    bool partial = !rejected.empty();
    auto gateway_failure = [&](const std::string& why, std::optional<long> status) {
        std::vector<RefStatus> lines = rejected;
        std::vector<std::string> msgs = messages;
        for (const auto& a : allowed) lines.push_back({a.ref, false, "cc-pushgate: " + why});
        msgs.push_back("cc-pushgate: " + why);
        log_line(route.repo_key + ": " + why);
        return reject_all(lines, msgs, "error", status, why);
    };
    bool with_pack = std::any_of(allowed.begin(), allowed.end(), [](const Command& a) { return !a.is_delete(); });
    if (!with_pack && !body.drain(cfg_.drain_limit, cfg_.drain_timeout)) {
        // Only deletes go upstream: the pack stays behind, read before upstream answers.
        send_whole(c, 413, "text/plain", "cc-pushgate: push body over the drain cap\n", true);
        finish_event("error", std::nullopt, "push body over the drain cap");
        return false;
    }
    if (upstream_failure) return gateway_failure(*upstream_failure, std::nullopt);
    if (!token || !*token) return gateway_failure("could not get a write token: " + (token ? token->error().one_line() : std::string("not asked")), std::nullopt);

    Forward f(secret_spellings(**token));
    for (const auto& a : allowed) f.forwarded.push_back(a.ref);
    f.conn = &c;
    f.body = &body;
    f.out = encode_prefix(req, allowed);
    const std::uint64_t prefix_len = f.out.size();
    // Deletes carry no pack; when only deletes remain, the pack stays behind.
    f.with_pack = with_pack;
    if (f.with_pack && quarantine) {
        f.quarantine = quarantine.get();
        f.held = pack_start;
        f.pack_fed = pack_start.size();
        if (auto w = quarantine->write(pack_start); !w) f.check_error = w.error().one_line();
    } else if (f.with_pack) {
        f.out += pack_start;
    }
    std::vector<RefStatus> check_rejected;  // refs whose force push the check stopped
    std::vector<std::string> tips;  // the new commits whose ancestry is checked
    for (auto* r : to_check) tips.push_back(r->cmd.new_oid);
    f.on_body_end = [&]() -> bool {
        std::string failure = f.check_error;
        if (failure.empty())
            if (auto s = quarantine->finish(tips); !s) failure = s.error().one_line();
        bool go = true;
        for (auto* r : to_check) {
            Result<bool> ff = failure.empty() ? quarantine->is_ancestor(r->cmd.old_oid, r->cmd.new_oid)
                                              : Result<bool>(io_error("", failure, 0));
            if (!ff) log_line(route.repo_key + ": ancestry check failed: " + ff.error().one_line());
            settle_ancestry(*r, ff);
            ask_approver(*r, route.repo_key);
            if (!r->allowed()) {
                go = false;
                check_rejected.push_back({r->cmd.ref, false, policy_reason(r->verdict, cfg_.reject_label)});
            }
        }
        // Content rules: what each update brings, read from the same quarantine.
        for (auto* r : to_read) {
            if (!r->allowed()) continue;
            bool create = r->cmd.is_create();
            Result<policy::PushContent> got = !failure.empty() ? Result<policy::PushContent>(io_error("", failure, 0))
                                                               : quarantine->content(create ? head_base : r->cmd.old_oid,
                                                                                     r->cmd.new_oid, create);
            if (!got) log_line(route.repo_key + ": content check failed: " + got.error().one_line());
            settle_content(*r, got, ctx);
            ask_approver(*r, route.repo_key);
            if (!r->allowed()) {
                go = false;
                check_rejected.push_back({r->cmd.ref, false, policy_reason(r->verdict, cfg_.reject_label)});
            }
        }
        return go;
    };
    f.merge = partial;
    f.band_max = req.sideband_max();
    f.close_after = close;
    ChunkedWriter writer(c);
    f.writer = &writer;

    CurlHandle ch;
    char errbuf[CURL_ERROR_SIZE] = {0};
    f.curl = ch.h;
    common_curl(ch, upstream_url(target) + "/git-receive-pack", **token, h.header("user-agent").value_or("git/cc-pushgate"),
                cfg_.io_timeout);
    ch.header("Content-Type: application/x-git-receive-pack-request");
    ch.header(std::string("Accept: ") + result_type);
    // Mirror the client's framing: a declared length stays a declared length
    // (some servers refuse chunked request bodies, e.g. lighttpd streaming
    // to CGI answers 411); otherwise chunked, as git itself sends large pushes.
    std::optional<curl_off_t> upload_len;
    if (auto len = body.declared_length(); len && *len >= parser.prefix_bytes())
        upload_len = static_cast<curl_off_t>(prefix_len + (f.with_pack ? *len - parser.prefix_bytes() : 0));
    else
        ch.header("Transfer-Encoding: chunked");
    ch.header("Expect:");
    curl_easy_setopt(ch.h, CURLOPT_HTTPHEADER, ch.headers);
    curl_easy_setopt(ch.h, CURLOPT_POST, 1L);
    if (upload_len) curl_easy_setopt(ch.h, CURLOPT_POSTFIELDSIZE_LARGE, *upload_len);
    curl_easy_setopt(ch.h, CURLOPT_READFUNCTION, Forward::on_read);
    curl_easy_setopt(ch.h, CURLOPT_READDATA, &f);
    curl_easy_setopt(ch.h, CURLOPT_WRITEFUNCTION, Forward::on_write);
    curl_easy_setopt(ch.h, CURLOPT_WRITEDATA, &f);
    curl_easy_setopt(ch.h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(ch.h, CURLOPT_UPLOAD_BUFFERSIZE, static_cast<long>(io_chunk));
    CURLcode rc = curl_easy_perform(ch.h);
    long status = 0;
    curl_easy_getinfo(ch.h, CURLINFO_RESPONSE_CODE, &status);

    if (f.bad_body) {
        // Refused before the verdict, and before any of the pack's trailer
        // went upstream: the upstream holds no pack it could apply.
        log_line(route.repo_key + ": refused: " + *f.bad_body);
        finish_event("error", std::nullopt, *f.bad_body);
        if (!writer.started()) send_whole(c, 400, "text/plain", "cc-pushgate: " + *f.bad_body + "\n", true);
        return false;
    }
    if (f.body_failed) {
        // The client's body broke (closed, bad framing): nobody to answer.
        log_line(route.repo_key + ": push body failed: " + f.client_error->one_line());
        finish_event("error", status ? std::optional<long>(status) : std::nullopt, f.client_error->one_line());
        return false;
    }
    if (f.stopped_by_check) {
        // Upstream got the commands and all of the pack but its checksum, so it
        // applied nothing. Every ref of this push reads as not pushed.
        std::vector<RefStatus> lines = rejected;
        std::vector<std::string> msgs = messages;
        for (const auto& r : check_rejected) {
            lines.push_back(r);
            msgs.push_back(cfg_.reject_label + " policy denied " + r.ref + ": " +
                           r.reason.substr(cfg_.reject_label.size() + std::string(" policy: ").size()));
        }
        for (const auto& a : allowed)
            if (std::none_of(check_rejected.begin(), check_rejected.end(), [&](const RefStatus& r) { return r.ref == a.ref; }))
                lines.push_back({a.ref, false, "atomic transaction failed"});
        finish_event("rejected", std::nullopt, "");
        std::string reply = response_body(req, msgs, report_status(lines));
        bool okw;
        if (writer.started())
            okw = writer.chunk(reply).ok() && writer.end().ok();
        else
            okw = send_whole(c, 200, result_type, reply, close);
        return okw && body.complete();
    }
    if (writer.started() && rc != CURLE_OK) {
        // Mid-relay failure: the only honest signal left is to cut the stream.
        finish_event("error", status, "upstream failed mid-response: " + curl_error_text(rc, errbuf));
        return false;
    }
    if (rc != CURLE_OK || status != 200) {
        std::string why;
        curl_off_t connected_us = 0;
        curl_easy_getinfo(ch.h, CURLINFO_CONNECT_TIME_T, &connected_us);
        if (rc != CURLE_OK && status == 0 && connected_us > 0) {
            // Reached, then gone (a crash, a restart, a reset) before it
            // answered: an outage, said as one. Whether it could have applied
            // anything follows from what of the pack it was given.
            bool whole = !f.with_pack || (f.quarantine && f.quarantine->trailer_offset() && f.pack_released >= f.pack_end());
            why = "the upstream went away during the push (" + curl_error_text(rc, errbuf) + "); " +
                  (whole ? "it may have applied it: fetch to see" : "it had not received the whole pack, so it applied nothing");
        } else if (rc != CURLE_OK && status == 0)
            why = "upstream unreachable: " + curl_error_text(rc, errbuf);
        else if (status == 401 || status == 403)
            why = "upstream refused the write token (HTTP " + std::to_string(status) + ")";
        else if (status != 200)
            why = "upstream answered HTTP " + std::to_string(status);
        else
            why = "upstream failed: " + curl_error_text(rc, errbuf);
        return gateway_failure(why, status ? std::optional<long>(status) : std::nullopt);
    }
    // A partial push: upstream's report plus the gateway's rejections, so git
    // prints both the pushed and the rejected refs.
    std::string tail = f.tail(rejected, messages);
    bool okw;
    if (writer.started())
        okw = writer.chunk(tail).ok() && writer.end().ok();
    else
        okw = send_whole(c, 200, result_type, tail, close);
    if (f.plain.masked() || f.progress.masked() || f.fatal.masked()) {
        log_line(route.repo_key + ": upstream's answer carried the write token; masked before relaying");
        event["tokenMasked"] = true;
    }
    finish_event(partial ? "partial" : "forwarded", status, "");
    return okw && body.complete();
}

}  // namespace cc::git::detail
