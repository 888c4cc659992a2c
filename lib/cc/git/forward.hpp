// cc-pushgate's upstream forwarding: the state of one push being streamed
// through curl (client body -> upstream, upstream answer -> client), with the
// write token masked on the way back and, when an ancestry check runs, every
// pack byte teed into the quarantine and the pack's last bytes held back.
#pragma once

#include <curl/curl.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cc/core/result.hpp"
#include "cc/git/ancestry.hpp"
#include "cc/git/pack_scan.hpp"
#include "cc/git/pkt_line.hpp"
#include "cc/git/receive_pack.hpp"
#include "cc/git/redact.hpp"
#include "cc/git/server.hpp"

namespace cc::git {

inline const char* const result_type = "application/x-git-receive-pack-result";

// Streams prefix, pack start and the rest of the client's body into curl, and
// the upstream answer back to the client (as is, or merged with rejections).
struct Forward {
    Conn* conn = nullptr;
    Body* body = nullptr;
    std::string out;          // bytes for curl, not yet handed over
    std::size_t out_off = 0;
    bool with_pack = true;
    bool body_failed = false;
    std::optional<Error> client_error;
    std::uint64_t sent = 0;
    // response
    CURL* curl = nullptr;
    bool merge = false;       // false: relay as is
    std::size_t band_max = 0;  // side-band packet size, 0: none
    ChunkedWriter* writer = nullptr;
    SidebandDemux demux;
    std::string raw;          // report without side-band, or a non-200 body
    bool bad_upstream = false;
    bool close_after = false;
    std::vector<std::string> forwarded;  // refs sent upstream
    // Ancestry check (null: none needed).
    Quarantine* quarantine = nullptr;
    std::string held;           // pack bytes read, not yet given to curl
    std::uint64_t pack_fed = 0, pack_released = 0;  // pack bytes read / given to curl
    std::optional<std::string> bad_body;  // refused before the verdict (400): bytes after the pack
    bool body_ended = false;
    std::string check_error;    // the quarantine stopped taking bytes
    std::function<bool()> on_body_end;  // runs the checks; false: nothing may go
    bool stopped_by_check = false;
    // The write token masked in every byte relayed back (see redact.hpp).
    Redactor plain, progress, fatal;
    explicit Forward(const std::vector<std::string>& secrets) : plain(secrets), progress(secrets), fatal(secrets) {}

    static size_t on_read(char* buf, size_t size, size_t n, void* ud) {
        auto* f = static_cast<Forward*>(ud);
        size_t cap = size * n;
        while (f->out_off == f->out.size()) {
            f->out.clear();
            f->out_off = 0;
            if (!f->with_pack) return 0;
            if (!f->quarantine) {
                auto r = f->body->read(f->out, std::min(cap, io_chunk));
                if (!r) {
                    f->body_failed = true;
                    f->client_error = r.error();
                    return CURL_READFUNC_ABORT;
                }
                if (*r == 0) return 0;
                continue;
            }
            // Ancestry check: every pack byte also goes to the quarantine, and
            // the pack's trailing checksum (found by its scan, not guessed
            // from the end of the body) waits until the check has passed, so
            // upstream never holds a whole pack it could apply. Bytes after
            // the pack refuse the push before any of the trailer goes.
            if (f->body_ended) {
                if (f->held.empty()) return 0;
                f->out.swap(f->held);
                continue;
            }
            std::string got;
            auto r = f->body->read(got, std::min(cap, io_chunk));
            if (!r) {
                f->body_failed = true;
                f->client_error = r.error();
                return CURL_READFUNC_ABORT;
            }
            if (*r && f->check_error.empty())
                if (auto w = f->quarantine->write(got); !w) f->check_error = w.error().one_line();
            f->held += got;
            f->pack_fed += got.size();
            if (f->after_pack()) {
                f->bad_body = "the request body goes on after the pack";
                return CURL_READFUNC_ABORT;
            }
            if (*r == 0) {
                f->body_ended = true;
                if (!f->on_body_end()) {
                    f->stopped_by_check = true;
                    return CURL_READFUNC_ABORT;
                }
            } else {
                std::uint64_t limit = f->release_limit();
                if (limit > f->pack_released) {
                    auto go = static_cast<std::size_t>(limit - f->pack_released);
                    f->out = f->held.substr(0, go);
                    f->held.erase(0, go);
                    f->pack_released += go;
                }
            }
        }
        size_t k = std::min(cap, f->out.size() - f->out_off);
        std::memcpy(buf, f->out.data() + f->out_off, k);
        f->out_off += k;
        f->sent += k;
        return k;
    }

    // The pack's end (trailer included), once its scan has read every entry.
    std::uint64_t pack_end() const {
        auto t = quarantine->trailer_offset();
        return t ? *t + PackScanner::trailer_size : ~std::uint64_t{0};
    }
    bool after_pack() const { return quarantine->trailer_offset() && pack_fed > pack_end(); }
    // How far into the pack bytes may go before the verdict: every byte the
    // scan has read as entries; none of the trailer; nothing more once the
    // scan has failed (the bytes are not a pack it can read).
    std::uint64_t release_limit() const {
        if (quarantine->scan_failed() || !check_error.empty()) return pack_released;
        if (auto t = quarantine->trailer_offset()) return std::min(*t, pack_fed);
        return pack_fed;
    }

    static size_t on_write(char* p, size_t size, size_t n, void* ud) {
        auto* f = static_cast<Forward*>(ud);
        size_t len = size * n;
        long status = 0;
        curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200) {
            if (f->raw.size() < 65536) f->raw.append(p, std::min(len, 65536 - f->raw.size()));
            return len;
        }
        std::string_view data(p, len);
        if (!f->band_max) {
            if (f->merge) {
                if (f->raw.size() + len > (16u << 20)) return 0;
                f->raw.append(data);
                return len;
            }
            std::string safe = f->plain.feed(data);
            if (safe.empty()) return len;
            if (!f->writer->started() && !f->writer->begin(200, result_type, f->close_after)) return 0;
            return f->writer->chunk(safe) ? len : 0;
        }
        // Side-band: progress and errors go on live, each band masked as one
        // stream (a hook's output may split a token across packets); the
        // report (band 1) is kept for the end.
        auto relay = f->demux.feed(data);
        if (!relay) {
            f->bad_upstream = true;
            return 0;
        }
        std::string out;
        PktReader r;
        r.feed(*relay);
        for (;;) {
            auto k = r.next();
            if (!k || !*k) break;
            const std::string& payload = (*k)->payload;
            Redactor& red = payload[0] == 2 ? f->progress : f->fatal;
            out += sideband(payload[0], red.feed(std::string_view(payload).substr(1)), f->band_max);
        }
        if (!out.empty()) {
            if (!f->writer->started() && !f->writer->begin(200, result_type, f->close_after)) return 0;
            if (!f->writer->chunk(out)) return 0;
        }
        return len;
    }

    // What is left to send after upstream answered: held-back progress, the
    // report (with the gateway's rejections merged in for a partial push).
    std::string tail(const std::vector<RefStatus>& rejected, const std::vector<std::string>& messages) {
        std::string upstream_report = plain.whole(band_max ? demux.band1() : raw);
        std::string report = upstream_report;
        if (merge) {
            auto merged = merge_report(upstream_report, rejected);
            if (merged) {
                report = *merged;
            } else {
                std::vector<RefStatus> lines = rejected;
                for (const auto& a : forwarded) lines.push_back({a, false, "cc-pushgate: upstream report is unreadable"});
                report = report_status(lines);
            }
        }
        if (!band_max) return merge ? report : plain.finish();
        std::string reply = sideband(2, progress.finish(), band_max) + sideband(3, fatal.finish(), band_max);
        if (merge)
            for (const auto& m : messages) reply += sideband(2, one_line(m) + "\n", band_max);
        reply += sideband(1, report, band_max);
        return reply + std::string(flush_pkt);
    }
};

}  // namespace cc::git
