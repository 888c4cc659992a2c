#include "cc/git/pack_scan.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>

namespace cc::git {

namespace {

constexpr std::size_t max_pending_delta = 1u << 20;  // a REF_DELTA larger than this is no commit worth waiting for
constexpr std::size_t scratch_size = 256 * 1024;

std::uint32_t be32(const char* p) {
    auto b = [&](int i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])); };
    return (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

std::string hex(const unsigned char* p, std::size_t n) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < n; ++i) {
        s.push_back(d[p[i] >> 4]);
        s.push_back(d[p[i] & 15]);
    }
    return s;
}

// Git's delta varint (little-endian groups of 7 bits).
bool delta_size(std::string_view d, std::size_t& pos, std::uint64_t& out) {
    out = 0;
    int shift = 0;
    for (;;) {
        if (pos >= d.size() || shift > 56) return false;
        auto c = static_cast<unsigned char>(d[pos++]);
        out |= static_cast<std::uint64_t>(c & 0x7f) << shift;
        shift += 7;
        if (!(c & 0x80)) return true;
    }
}

// The size a delta says its result has, before anything is applied.
std::optional<std::uint64_t> delta_result_size(std::string_view d) {
    std::size_t pos = 0;
    std::uint64_t base_len = 0, out_len = 0;
    if (!delta_size(d, pos, base_len) || !delta_size(d, pos, out_len)) return std::nullopt;
    return out_len;
}

}  // namespace

std::optional<std::string> apply_delta(std::string_view base, std::string_view d) {
    std::size_t pos = 0;
    std::uint64_t base_len = 0, out_len = 0;
    if (!delta_size(d, pos, base_len) || !delta_size(d, pos, out_len)) return std::nullopt;
    if (base_len != base.size() || out_len > (64u << 20)) return std::nullopt;
    std::string out;
    out.reserve(out_len);
    while (pos < d.size()) {
        auto op = static_cast<unsigned char>(d[pos++]);
        if (op & 0x80) {
            std::uint64_t off = 0, len = 0;
            for (int i = 0; i < 4; ++i)
                if (op & (1 << i)) {
                    if (pos >= d.size()) return std::nullopt;
                    off |= static_cast<std::uint64_t>(static_cast<unsigned char>(d[pos++])) << (8 * i);
                }
            for (int i = 0; i < 3; ++i)
                if (op & (0x10 << i)) {
                    if (pos >= d.size()) return std::nullopt;
                    len |= static_cast<std::uint64_t>(static_cast<unsigned char>(d[pos++])) << (8 * i);
                }
            if (len == 0) len = 0x10000;
            if (off + len > base.size() || out.size() + len > out_len) return std::nullopt;
            out.append(base.substr(off, len));
        } else if (op) {
            if (pos + op > d.size() || out.size() + op > out_len) return std::nullopt;
            out.append(d.substr(pos, op));
            pos += op;
        } else {
            return std::nullopt;  // opcode 0 is reserved
        }
    }
    if (out.size() != out_len) return std::nullopt;
    return out;
}

std::string pack_entry_header(int type, std::uint64_t size) {
    std::string h;
    unsigned char c = static_cast<unsigned char>((type << 4) | (size & 15));
    size >>= 4;
    while (size) {
        h.push_back(static_cast<char>(c | 0x80));
        c = size & 0x7f;
        size >>= 7;
    }
    h.push_back(static_cast<char>(c));
    return h;
}

std::string commit_pack(const std::vector<PackObject>& objects) {
    std::string p = "PACK";
    auto put32 = [&](std::uint32_t v) {
        for (int s = 24; s >= 0; s -= 8) p.push_back(static_cast<char>((v >> s) & 0xff));
    };
    put32(2);
    put32(static_cast<std::uint32_t>(objects.size()));
    for (const auto& o : objects) {
        p += pack_entry_header(o.type, o.data.size());
        uLongf len = compressBound(static_cast<uLong>(o.data.size()));
        std::string z(len, '\0');
        compress2(reinterpret_cast<Bytef*>(z.data()), &len, reinterpret_cast<const Bytef*>(o.data.data()),
                  static_cast<uLong>(o.data.size()), 1);
        p.append(z.data(), len);
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(p.data(), p.size(), md, &n, EVP_sha1(), nullptr);
    p.append(reinterpret_cast<const char*>(md), n);
    return p;
}

PackScanner::PackScanner(std::size_t hold_cap) : hold_cap_(hold_cap) {}

PackScanner::~PackScanner() {
    if (z_init_) inflateEnd(&z_);
}

void PackScanner::set_incomplete(const std::string& why) {
    if (incomplete_.empty()) incomplete_ = why;
}

// Whether `n` more bytes fit under the cap: a delta's result is counted
// before it is made (a few bytes of copy instructions can describe 64 MiB),
// so a push of a few kilobytes cannot make the scan hold more than the cap.
bool PackScanner::room_for(std::uint64_t n) {
    if (held_ + n <= hold_cap_) return true;
    set_incomplete("the pack's commits are over the " + std::to_string(hold_cap_ >> 20) + " MiB the check holds");
    return false;
}

// A delta applied to a kept commit or tag: kept as what it makes, counted
// first; the delta's own bytes are let go. false when it does not apply.
// `base` may be an element of objects_: it is not read once keep() ran.
bool PackScanner::apply_kept(std::uint64_t offset, const PackObject& base, std::string& delta) {
    auto n = delta_result_size(delta);
    if (!n) return false;
    const std::size_t delta_bytes = delta.size();
    if (!room_for(*n)) {
        held_ -= std::min(held_, delta_bytes);
        std::string().swap(delta);
        return true;  // not kept: the scan is incomplete, and says why
    }
    auto got = apply_delta(base.data, delta);
    if (!got) return false;
    held_ += got->size();
    held_ -= std::min(held_, delta_bytes);
    std::string().swap(delta);
    int t = base.type;
    keep(offset, t, std::move(*got));
    return true;
}

void PackScanner::keep(std::uint64_t offset, int type, std::string data) {
    at_[offset] = objects_.size();
    objects_.push_back({type, std::move(data)});
}

Status PackScanner::start_entry() {
    // type 1 commit, 2 tree, 3 blob, 4 tag, 6 OFS_DELTA, 7 REF_DELTA
    keep_ = false;
    if (type_ == 1 || type_ == 4) {
        keep_ = true;
    } else if (type_ == 6) {
        if (base_offset_ == 0 || base_offset_ > entry_offset_)
            return input_error("pack", "a delta's base offset is out of range");
        std::uint64_t base = entry_offset_ - base_offset_;
        base_offset_ = base;
        keep_ = at_.count(base) || pending_.count(base);
    } else if (type_ == 7) {
        keep_ = size_ <= max_pending_delta;
        if (!keep_) set_incomplete("a delta on an object outside the pack is too large to hold");
    } else if (type_ != 2 && type_ != 3) {
        return input_error("pack", "an entry of unknown type " + std::to_string(type_));
    }
    if (keep_ && !room_for(size_)) keep_ = false;
    if (keep_) {
        held_ += size_;
        out_.clear();
        out_.reserve(size_);
    }
    inflated_ = 0;
    if (!z_init_) {
        if (inflateInit(&z_) != Z_OK) return io_error("pack", "inflateInit failed", 0);
        z_init_ = true;
    } else if (inflateReset(&z_) != Z_OK) {
        return io_error("pack", "inflateReset failed", 0);
    }
    state_ = State::body;
    return ok();
}

Status PackScanner::end_entry() {
    if (inflated_ != size_) return input_error("pack", "an entry inflates to a size other than its header says");
    if (keep_) {
        if (type_ == 1 || type_ == 4) {
            keep(entry_offset_, type_, std::move(out_));
        } else if (type_ == 6 && at_.count(base_offset_)) {
            if (!apply_kept(entry_offset_, objects_[at_[base_offset_]], out_)) return input_error("pack", "a delta does not apply to its base");
        } else {
            Pending p;
            if (type_ == 6)
                p.base_offset = base_offset_;
            else
                p.base_oid = base_oid_;
            p.delta = std::move(out_);
            pending_[entry_offset_] = std::move(p);
        }
        out_.clear();
    }
    ++seen_;
    state_ = seen_ == count_ ? State::trailer : State::entry;
    if (state_ == State::trailer) trailer_at_ = offset_;
    small_.clear();
    return ok();
}

Status PackScanner::feed(std::string_view in) {
    while (!in.empty()) {
        switch (state_) {
            case State::header: {
                std::size_t k = std::min<std::size_t>(12 - small_.size(), in.size());
                small_.append(in.substr(0, k));
                in.remove_prefix(k);
                offset_ += k;
                if (small_.size() < 12) break;
                if (small_.compare(0, 4, "PACK") != 0) return input_error("pack", "does not start with PACK");
                auto version = be32(small_.data() + 4);
                if (version != 2 && version != 3) return input_error("pack", "version " + std::to_string(version));
                count_ = be32(small_.data() + 8);
                small_.clear();
                seen_ = 0;
                state_ = count_ ? State::entry : State::trailer;
                trailer_at_ = offset_;
                entry_offset_ = offset_;
                break;
            }
            case State::entry: {
                if (small_.empty()) entry_offset_ = offset_;
                auto c = static_cast<unsigned char>(in[0]);
                small_.push_back(static_cast<char>(c));
                in.remove_prefix(1);
                ++offset_;
                if (small_.size() > 10) return input_error("pack", "an entry header is too long");
                if (c & 0x80) break;
                auto b0 = static_cast<unsigned char>(small_[0]);
                type_ = (b0 >> 4) & 7;
                size_ = b0 & 15;
                for (std::size_t i = 1; i < small_.size(); ++i)
                    size_ |= static_cast<std::uint64_t>(static_cast<unsigned char>(small_[i]) & 0x7f)
                             << (4 + 7 * (i - 1));
                small_.clear();
                base_offset_ = 0;
                if (type_ == 6) {
                    state_ = State::ofs;
                } else if (type_ == 7) {
                    state_ = State::ref;
                } else if (auto s = start_entry(); !s) {
                    return s;
                }
                break;
            }
            case State::ofs: {
                auto c = static_cast<unsigned char>(in[0]);
                in.remove_prefix(1);
                ++offset_;
                if (small_.empty())
                    base_offset_ = c & 0x7f;
                else
                    base_offset_ = ((base_offset_ + 1) << 7) | (c & 0x7f);
                small_.push_back(static_cast<char>(c));
                if (small_.size() > 9) return input_error("pack", "a delta's base offset is too long");
                if (c & 0x80) break;
                small_.clear();
                if (auto s = start_entry(); !s) return s;
                break;
            }
            case State::ref: {
                std::size_t k = std::min<std::size_t>(20 - small_.size(), in.size());
                small_.append(in.substr(0, k));
                in.remove_prefix(k);
                offset_ += k;
                if (small_.size() < 20) break;
                base_oid_ = hex(reinterpret_cast<const unsigned char*>(small_.data()), 20);
                small_.clear();
                if (auto s = start_entry(); !s) return s;
                break;
            }
            case State::body: {
                static thread_local std::string scratch(scratch_size, '\0');
                z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
                z_.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), 1u << 30));
                int r = Z_OK;
                while (z_.avail_in || r == Z_OK) {
                    std::size_t before = 0;
                    if (keep_) {
                        // Never past the declared size: a longer stream is an error below.
                        std::size_t room =
                            static_cast<std::size_t>(std::min<std::uint64_t>(size_ - inflated_ + 1, scratch_size));
                        before = out_.size();
                        out_.resize(before + room);
                        z_.next_out = reinterpret_cast<Bytef*>(out_.data() + before);
                        z_.avail_out = static_cast<uInt>(room);
                    } else {
                        z_.next_out = reinterpret_cast<Bytef*>(scratch.data());
                        z_.avail_out = static_cast<uInt>(scratch_size);
                    }
                    uInt room = z_.avail_out;
                    r = inflate(&z_, Z_NO_FLUSH);
                    std::size_t produced = room - z_.avail_out;
                    if (keep_) out_.resize(before + produced);
                    inflated_ += produced;
                    if (inflated_ > size_)
                        return input_error("pack", "an entry inflates past the size its header says");
                    if (r == Z_STREAM_END) break;
                    if (r == Z_BUF_ERROR && !z_.avail_in) break;  // needs more input
                    if (r != Z_OK)
                        return input_error("pack", "an entry does not inflate (zlib " + std::to_string(r) + ")");
                    if (!z_.avail_in && z_.avail_out) break;
                }
                std::size_t used = in.size() - z_.avail_in;
                in.remove_prefix(used);
                offset_ += used;
                if (r == Z_STREAM_END)
                    if (auto s = end_entry(); !s) return s;
                break;
            }
            case State::trailer: {
                std::size_t k = std::min<std::size_t>(20 - small_.size(), in.size());
                small_.append(in.substr(0, k));
                in.remove_prefix(k);
                offset_ += k;
                if (small_.size() == 20) state_ = State::done;
                break;
            }
            case State::done:
                return input_error("pack", "has bytes after its trailer");
        }
    }
    return ok();
}

Status PackScanner::finish() {
    if (state_ != State::done)
        return input_error("pack",
                           "ends early (" + std::to_string(seen_) + " of " + std::to_string(count_) + " entries)");
    return ok();
}

void PackScanner::resolve(const Lookup& lookup) {
    // Ids of the kept objects, for REF_DELTAs on bases inside the pack.
    auto oid_of = [](const PackObject& o) {
        std::string hdr = std::string(o.type == 1 ? "commit " : "tag ") + std::to_string(o.data.size());
        hdr.push_back('\0');
        EVP_MD_CTX* ctx = EVP_MD_CTX_new();
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        EVP_DigestInit_ex(ctx, EVP_sha1(), nullptr);
        EVP_DigestUpdate(ctx, hdr.data(), hdr.size());
        EVP_DigestUpdate(ctx, o.data.data(), o.data.size());
        EVP_DigestFinal_ex(ctx, md, &n);
        EVP_MD_CTX_free(ctx);
        return hex(md, n);
    };
    std::map<std::string, std::size_t> by_oid;
    for (std::size_t i = 0; i < objects_.size(); ++i) by_oid[oid_of(objects_[i])] = i;
    std::map<std::string, std::optional<PackObject>> outside;  // asked of `lookup`: nullopt, it has none
    for (bool progress = true; progress && !pending_.empty();) {
        progress = false;
        std::vector<std::string> ask;
        for (const auto& [offset, p] : pending_)
            if (!p.base_oid.empty() && !by_oid.count(p.base_oid) && !outside.count(p.base_oid))
                ask.push_back(p.base_oid);
        std::sort(ask.begin(), ask.end());
        ask.erase(std::unique(ask.begin(), ask.end()), ask.end());
        if (!ask.empty()) {
            auto got = lookup(ask);
            for (const auto& oid : ask) {
                auto g = got.find(oid);
                outside[oid] = g == got.end() ? std::nullopt : std::optional<PackObject>(std::move(g->second));
            }
        }
        for (auto it = pending_.begin(); it != pending_.end();) {
            const Pending& p = it->second;
            const PackObject* base = nullptr;
            if (p.base_oid.empty()) {
                if (auto b = at_.find(p.base_offset); b != at_.end()) base = &objects_[b->second];
            } else if (auto b = by_oid.find(p.base_oid); b != by_oid.end()) {
                base = &objects_[b->second];
            } else if (auto o = outside.find(p.base_oid); o != outside.end() && o->second) {
                base = &*o->second;
            }
            if (!base) {
                ++it;
                continue;
            }
            progress = true;
            std::uint64_t offset = it->first;
            if (base->type == 1 || base->type == 4) {
                const std::size_t before = objects_.size();
                if (!apply_kept(offset, *base, it->second.delta))
                    set_incomplete("a delta does not apply to its base");
                else if (objects_.size() > before)
                    by_oid[oid_of(objects_.back())] = objects_.size() - 1;
            } else {
                held_ -= std::min(held_, it->second.delta.size());
            }
            it = pending_.erase(it);
        }
    }
    // Deltas on a pending base that itself was no commit are not commits.
    for (auto it = pending_.begin(); it != pending_.end();) {
        bool on_pending = it->second.base_oid.empty() && !at_.count(it->second.base_offset) &&
                          !pending_.count(it->second.base_offset);
        it = on_pending ? pending_.erase(it) : std::next(it);
    }
}

}  // namespace cc::git
