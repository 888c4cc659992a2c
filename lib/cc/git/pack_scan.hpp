// The commits (and annotated tags) of a pack, read as the pack streams past:
// what the ancestry check needs, without indexing every blob. Each entry is
// inflated to find where the next one starts (a pack records no compressed
// lengths), but only commits, tags and small deltas that may turn out to be
// one are kept; blobs and trees are inflated into a scratch buffer and
// dropped. Nothing here decides an object's id: the kept objects are handed
// to `git index-pack` (as a small pack of their own, see `commit_pack`), which
// hashes them, so an ancestry verdict still rests on ids git computed.
//
//   PackScanner s;
//   s.feed(bytes) ...;  s.finish();                       // an error: not a well-formed pack
//   s.resolve([&](oid) { return object from the mirror; }); // deltas on bases outside the pack
//   std::string pack = commit_pack(s.objects());           // -> git index-pack --stdin
#pragma once

#include <zlib.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::git {

struct PackObject {
    int type = 0;  // 1 commit, 4 tag
    std::string data;
};

class PackScanner {
public:
    // `hold_cap`: the most bytes of kept objects and pending deltas held at
    // once; past it the scan is incomplete (the check then cannot vouch).
    explicit PackScanner(std::size_t hold_cap = 16u << 20);
    ~PackScanner();
    PackScanner(const PackScanner&) = delete;
    PackScanner& operator=(const PackScanner&) = delete;

    // The next bytes of the pack; an error when they are not a pack.
    Status feed(std::string_view bytes);
    // The stream ended: an error unless every entry and the trailer arrived.
    Status finish();

    // Deltas whose base the pack does not hold (a thin pack), or held back:
    // `lookup` gives the objects it has of those ids (hex), a commit or tag
    // whole, anything else as type 2 with no data. Asked once per round,
    // until nothing more resolves.
    using Lookup = std::function<std::map<std::string, PackObject>(const std::vector<std::string>& oids)>;
    void resolve(const Lookup& lookup);

    const std::vector<PackObject>& objects() const { return objects_; }
    std::uint32_t entries() const { return count_; }
    // Where the pack's trailing checksum starts, once every entry has been
    // read (nullopt before): what a gateway withholds until its verdict.
    std::optional<std::uint64_t> trailer_offset() const {
        if (state_ == State::trailer || state_ == State::done) return trailer_at_;
        return std::nullopt;
    }
    static constexpr std::uint64_t trailer_size = 20;
    // Some entry could not be kept or resolved: a commit may be missing.
    bool incomplete() const { return !incomplete_.empty(); }
    const std::string& incomplete_reason() const { return incomplete_; }
    std::size_t unresolved() const { return pending_.size(); }

private:
    enum class State { header, entry, ofs, ref, body, trailer, done };
    struct Pending {
        std::uint64_t base_offset = 0;  // an OFS_DELTA on a pending entry
        std::string base_oid;           // a REF_DELTA
        std::string delta;
    };
    Status start_entry();
    Status end_entry();
    void keep(std::uint64_t offset, int type, std::string data);
    bool room_for(std::uint64_t n);
    bool apply_kept(std::uint64_t offset, const PackObject& base, std::string& delta);
    void set_incomplete(const std::string& why);

    State state_ = State::header;
    std::string small_;  // header bytes not yet complete
    std::uint32_t count_ = 0, seen_ = 0;
    std::uint64_t offset_ = 0;        // bytes consumed so far
    std::uint64_t entry_offset_ = 0;  // where the current entry starts
    std::uint64_t trailer_at_ = 0;    // where the trailer starts (state trailer or done)
    int type_ = 0;
    std::uint64_t size_ = 0;  // the entry's inflated size
    std::uint64_t base_offset_ = 0;
    std::string base_oid_;
    bool keep_ = false;  // the inflated bytes are kept in out_
    std::string out_;
    std::uint64_t inflated_ = 0;
    z_stream z_{};
    bool z_init_ = false;
    std::size_t held_ = 0, hold_cap_;
    std::map<std::uint64_t, std::size_t> at_;   // entry offset -> index in objects_
    std::map<std::uint64_t, Pending> pending_;  // entry offset -> a delta not yet resolved
    std::vector<PackObject> objects_;
    std::string incomplete_;
};

// Applies a git delta to `base`; nullopt when the delta is malformed.
std::optional<std::string> apply_delta(std::string_view base, std::string_view delta);

// A pack entry's header: its type and inflated size (git's varint).
std::string pack_entry_header(int type, std::uint64_t size);

// A pack of `objects` (undeltified, zlib-compressed) with its SHA-1 trailer.
std::string commit_pack(const std::vector<PackObject>& objects);

}  // namespace cc::git
