#include "cc/git/pkt_line.hpp"

#include <algorithm>

namespace cc::git {

namespace {
int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
}  // namespace

std::string pkt(std::string_view payload) {
    if (payload.size() > max_pkt_len - 4) payload = payload.substr(0, max_pkt_len - 4);
    static const char digits[] = "0123456789abcdef";
    std::size_t n = payload.size() + 4;
    std::string out;
    out.reserve(n);
    out.push_back(digits[(n >> 12) & 0xf]);
    out.push_back(digits[(n >> 8) & 0xf]);
    out.push_back(digits[(n >> 4) & 0xf]);
    out.push_back(digits[n & 0xf]);
    out.append(payload);
    return out;
}

Result<std::optional<Pkt>> PktReader::next() {
    if (buffered() < 4) return std::optional<Pkt>{};
    std::size_t len = 0;
    for (int i = 0; i < 4; ++i) {
        int v = hex_value(buf_[pos_ + i]);
        if (v < 0) return input_error("pkt-line", "bad length '" + buf_.substr(pos_, 4) + "'");
        len = len * 16 + static_cast<std::size_t>(v);
    }
    Pkt p;
    if (len < 4) {
        p.kind = len == 0 ? Pkt::Kind::flush : len == 1 ? Pkt::Kind::delim
                 : len == 2                   ? Pkt::Kind::response_end
                                              : Pkt::Kind::data;
        if (len == 3) return input_error("pkt-line", "bad length '0003'");
        pos_ += 4;
    } else {
        if (len > max_pkt_len)
            return input_error("pkt-line", "length " + std::to_string(len) + " is over " + std::to_string(max_pkt_len));
        if (buffered() < len) return std::optional<Pkt>{};
        p.payload.assign(buf_, pos_ + 4, len - 4);
        pos_ += len;
    }
    // Compact now and then so a long stream does not grow the buffer.
    if (pos_ > 65536 && pos_ * 2 > buf_.size()) {
        buf_.erase(0, pos_);
        pos_ = 0;
    }
    return std::optional<Pkt>{std::move(p)};
}

std::string PktReader::take_rest() {
    std::string rest = buf_.substr(pos_);
    buf_.clear();
    pos_ = 0;
    return rest;
}

std::string sideband(char band, std::string_view data, std::size_t max_data) {
    std::string out;
    max_data = std::clamp<std::size_t>(max_data, 1, max_sideband64k_data);
    for (std::size_t off = 0; off < data.size(); off += max_data) {
        std::string payload(1, band);
        payload.append(data.substr(off, max_data));
        out += pkt(payload);
    }
    return out;
}

Result<std::string> SidebandDemux::feed(std::string_view bytes) {
    reader_.feed(bytes);
    std::string relay;
    for (;;) {
        auto p = reader_.next();
        if (!p) return p.error();
        if (!*p) break;
        const Pkt& k = **p;
        if (k.kind == Pkt::Kind::flush) {
            flushed_ = true;
            continue;
        }
        if (k.kind != Pkt::Kind::data || k.payload.empty())
            return input_error("side-band", "unexpected special packet");
        char band = k.payload[0];
        if (band == 1) {
            if (band1_.size() + k.payload.size() > max_band1)
                return input_error("side-band", "report is larger than " + std::to_string(max_band1) + " bytes");
            band1_.append(k.payload, 1);
        } else if (band == 2 || band == 3) {
            relay += pkt(k.payload);
        } else {
            return input_error("side-band", "unknown band " + std::to_string(static_cast<unsigned char>(band)));
        }
    }
    return relay;
}

}  // namespace cc::git
