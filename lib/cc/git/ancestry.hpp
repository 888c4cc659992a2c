// Force pushes told from fast-forwards without trusting the client: the
// pushed pack is indexed (by the real `git index-pack`) into a quarantine
// object directory of a bare mirror the gateway keeps per repository, as
// receive-pack's own quarantine does, and `git merge-base --is-ancestor`
// answers there. The mirror only ever holds the old tips fetched from the
// upstream; a quarantine is removed when its push is done.
//
//   auto m = Mirror::open(state_dir, "github.com/acme/demo");       // git init --bare once
//   m->ensure(old_oid, upstream_repo_url, "refs/heads/x", token);   // fetch the old tip if missing
//   auto q = Quarantine::start(*m, {url, token}, false);  q->write(pack_bytes) ...;
//   q->finish({new_oid});                                           // commits it lacks fetched by id
//   auto ff = q->is_ancestor(old_oid, new_oid);                     // true: fast-forward
//
// Without content rules only the pack's commits and tags are indexed (see
// pack_scan.hpp): the ancestry check needs no blob, and hashing every blob a
// second time is most of what the check would cost. With content rules the
// whole pack goes through `git index-pack --fix-thin` as it streams.
#pragma once

#include <memory>
#include <string>
#include <vector>
#include <string_view>

#include "cc/core/result.hpp"
#include "cc/policy/policy.hpp"

namespace cc::git {

class Mirror {
public:
    // <state_dir>/<github.com/owner/name>.git, created (git init --bare) when missing.
    static Result<Mirror> open(const std::string& state_dir, const std::string& repo_key);
    // Makes sure commit `oid` is in the mirror, fetching `ref` from `url`
    // (Basic auth with `token`, passed in the child's environment, never argv).
    Status ensure(const std::string& oid, const std::string& url, const std::string& ref, const std::string& token) const;
    // The upstream's default branch (its HEAD) into the mirror, as the base a
    // new branch's content is read against; "" when the upstream has none.
    Result<std::string> fetch_head(const std::string& url, const std::string& token) const;
    // Fetches commits by id (protocol v2 allows any the upstream has) into
    // the mirror; an error when the upstream has not all of them.
    Status fetch_oids(const std::vector<std::string>& oids, const std::string& url, const std::string& token) const;
    const std::string& dir() const { return dir_; }

private:
    std::string dir_;
};

// Removes the incoming-* quarantines under a mirror's objects directory
// (or under every mirror below mirror_dir) that no living gateway holds: a
// gateway killed mid-push leaves its quarantine behind. Returns how many went.
std::size_t sweep_quarantines(const std::string& objects_dir);
std::size_t sweep_all_quarantines(const std::string& mirror_dir);

class Quarantine {
public:
    // Where commits the mirror lacks are fetched from.
    struct Source {
        std::string url, token;
    };
    // A fresh incoming-XXXXXX object directory in the mirror. With `whole`
    // (content rules need trees and blobs), an index-pack reading the whole
    // pack as it streams; otherwise only its commits and tags are kept.
    static Result<std::unique_ptr<Quarantine>> start(const Mirror& m, Source src, bool whole);
    ~Quarantine();
    Quarantine(const Quarantine&) = delete;
    Quarantine& operator=(const Quarantine&) = delete;

    Status write(std::string_view bytes);
    // The scan of the pack written so far: where its trailing checksum
    // starts once every entry is read (nullopt before), and whether the bytes
    // stopped being a pack the scan can read (anything after the trailer
    // included). A gateway forwards no byte of the trailer, and nothing after
    // a failed scan, before its verdict.
    std::optional<std::uint64_t> trailer_offset() const;
    bool scan_failed() const;
    // Ends the pack; an error when it is not a well-formed pack (or
    // index-pack refused it). Then every commit reachable from `tips` that is
    // neither in the pack nor in the mirror (a tip the upstream already has,
    // a parent on another branch) is fetched from the upstream by id; an
    // error when that leaves one missing (the check cannot tell).
    Status finish(const std::vector<std::string>& tips);
    // Is `old_oid` an ancestor of `new_oid` (a fast-forward), looking at the
    // mirror and the quarantined pack? An error when git cannot tell.
    Result<bool> is_ancestor(const std::string& old_oid, const std::string& new_oid) const;

    // What moving a ref from `base` (a commit in the mirror; "" for none) to
    // `new_oid` brings: the paths that differ between the two trees, and the
    // largest blob among the objects reachable from new_oid but not from base.
    // With `from_merge_base`, their merge base stands for `base` (a new branch
    // read against the upstream's default branch).
    Result<policy::PushContent> content(const std::string& base, const std::string& new_oid,
                                        bool from_merge_base = false) const;

private:
    struct Impl;
    explicit Quarantine(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace cc::git
