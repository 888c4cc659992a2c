// A TLS leg driven by hand (tls_leg.hpp): OpenSSL on a BIO over two of our
// buffers, the socket read and written in large pieces.

#include "cc/net/tls_leg.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>

#include <boost/asio/ssl/error.hpp>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace cc::net::detail {

namespace {

// What one recv may take: five whole records (16 KiB of plaintext and up to
// 256 bytes of framing each) and change, so a busy socket's backlog is
// decrypted in one pass.
constexpr std::size_t k_in_size = 5 * (16 * 1024 + 256) + 4096;
// What one write encrypts before its records are sent: four full records.
constexpr std::size_t k_write_piece = 64 * 1024;
// The records of a short answer: the send buffer kept between writes.
constexpr std::size_t k_keep_out = 4096;

// Read buffers an idle leg gave back, kept for the next one on this loop
// (a few at most): malloc would hand a freed 80 KiB back to the system and
// fault its pages in again for the next request.
constexpr std::size_t k_spares = 4;
thread_local std::vector<std::unique_ptr<char[]>> t_spares;

std::unique_ptr<char[]> take_in_buffer() {
    if (t_spares.empty()) return std::make_unique_for_overwrite<char[]>(k_in_size);
    auto b = std::move(t_spares.back());
    t_spares.pop_back();
    return b;
}

void give_back(std::unique_ptr<char[]>& b, std::size_t& cap) {
    if (b && cap == k_in_size && t_spares.size() < k_spares) t_spares.push_back(std::move(b));
    b.reset();
    cap = 0;
}

TlsLeg* leg_of(BIO* b) { return static_cast<TlsLeg*>(BIO_get_data(b)); }

int leg_bio_write(BIO* b, const char* p, int len) {
    BIO_clear_retry_flags(b);
    return leg_of(b)->bio_write(p, len);
}

int leg_bio_read(BIO* b, char* p, int len) {
    BIO_clear_retry_flags(b);
    int n = leg_of(b)->bio_read(p, len);
    if (n == 0) {
        // Nothing read yet: come back after the next recv (the socket's end
        // is handled by the leg, never shown to OpenSSL as a BIO end).
        BIO_set_retry_read(b);
        return -1;
    }
    return n;
}

long leg_bio_ctrl(BIO*, int cmd, long, void*) {
    // A flush is a no-op (the leg sends what was written); every other
    // control is answered "not supported", as by a plain memory sink.
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int leg_bio_create(BIO* b) {
    BIO_set_init(b, 1);
    return 1;
}

BIO_METHOD* leg_method() {
    static BIO_METHOD* m = [] {
        BIO_METHOD* x = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "cc-egress TLS leg");
        if (!x) throw std::runtime_error("cannot make the TLS leg's BIO method");
        BIO_meth_set_write(x, leg_bio_write);
        BIO_meth_set_read(x, leg_bio_read);
        BIO_meth_set_ctrl(x, leg_bio_ctrl);
        BIO_meth_set_create(x, leg_bio_create);
        return x;
    }();
    return m;
}

ErrorCode errno_code(int e) { return ErrorCode(e, boost::system::system_category()); }

}  // namespace

TlsLeg::TlsLeg(Sock& s, SSL_CTX* ctx) : sock_(s) {
    ssl_ = SSL_new(ctx);
    BIO* bio = ssl_ ? BIO_new(leg_method()) : nullptr;
    if (!bio) {
        SSL_free(ssl_);
        throw std::runtime_error("cannot make a TLS session");
    }
    BIO_set_data(bio, this);
    SSL_set_bio(ssl_, bio, bio);  // one BIO both ways: the SSL takes the one reference
    // OpenSSL's record buffers go back too while nothing waits in them (as
    // asio's stream had it): an idle intercepted connection holds none.
    SSL_set_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
}

TlsLeg::~TlsLeg() {
    // A session whose handshake completed stays resumable when the
    // connection ends without close_notify, as most HTTP servers end theirs
    // (SSL_free would mark it bad). A fatal error has made it unresumable
    // already.
    if (SSL_is_init_finished(ssl_)) SSL_set_shutdown(ssl_, SSL_get_shutdown(ssl_) | SSL_SENT_SHUTDOWN);
    SSL_free(ssl_);
    give_back(in_, in_cap_);
}

int TlsLeg::bio_read(char* p, int len) {
    std::size_t n = std::min(in_end_ - in_at_, static_cast<std::size_t>(len));
    if (n == 0) return 0;
    std::memcpy(p, in_.get() + in_at_, n);
    in_at_ += n;
    return static_cast<int>(n);
}

int TlsLeg::bio_write(const char* p, int len) {
    out_.append(p, static_cast<std::size_t>(len));
    return len;
}

ErrorCode TlsLeg::failure(int ret) {
    const int e = SSL_get_error(ssl_, ret);
    const unsigned long err = ERR_get_error();
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN) return asio::error::eof;
    if (err) return ErrorCode(static_cast<int>(err), asio::error::get_ssl_category());
    if (e == SSL_ERROR_SYSCALL) return asio::ssl::error::unspecified_system_error;
    return ErrorCode(EPROTO, boost::system::system_category());
}

awaitable<ErrorCode> TlsLeg::fill() {
    if (eof_) co_return asio::error::eof;
    // OpenSSL asks for more only once it has taken every byte read so far
    // (the BIO hands it all it asks for): the buffer starts empty.
    if (in_at_ < in_end_) co_return ErrorCode(EPROTO, boost::system::system_category());
    in_at_ = in_end_ = 0;
    while (true) {
        if (!in_) {
            in_ = take_in_buffer();  // not zeroed: recv writes it
            in_cap_ = k_in_size;
        }
        ssize_t n = ::recv(sock_.native_handle(), in_.get(), in_cap_, MSG_DONTWAIT);
        if (n > 0) {
            in_end_ = static_cast<std::size_t>(n);
            co_return ErrorCode();
        }
        if (n == 0) {
            eof_ = true;
            co_return asio::error::eof;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) co_return errno_code(errno);
        // Waiting with nothing held: the buffer goes back (an idle leg
        // costs nothing of ours).
        give_back(in_, in_cap_);
        ErrorCode ec;
        co_await sock_.async_wait(Sock::wait_read, asio::redirect_error(use_awaitable, ec));
        if (ec) co_return ec;
    }
}

awaitable<ErrorCode> TlsLeg::flush() {
    while (out_at_ < out_.size()) {
        ssize_t n = ::send(sock_.native_handle(), out_.data() + out_at_, out_.size() - out_at_, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            out_at_ += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || errno != EAGAIN) co_return errno_code(n == 0 ? EPIPE : errno);
        ErrorCode ec;
        co_await sock_.async_wait(Sock::wait_write, asio::redirect_error(use_awaitable, ec));
        if (ec) co_return ec;
    }
    // All sent: a large buffer goes back too (a small one is kept for
    // the next answer).
    if (out_.capacity() > k_keep_out)
        std::string().swap(out_);
    else
        out_.clear();
    out_at_ = 0;
    co_return ErrorCode();
}

awaitable<void> TlsLeg::readable() {
    if (sticky_ || eof_ || in_at_ < in_end_ || SSL_has_pending(ssl_) == 1) co_return;
    // An error or the end is the next read_some's to report.
    co_await fill();
}

void TlsLeg::trim() {
    if (in_at_ == in_end_) {
        give_back(in_, in_cap_);
        in_at_ = in_end_ = 0;
    }
    if (out_at_ == out_.size()) {
        std::string().swap(out_);
        out_at_ = 0;
    }
}

awaitable<ErrorCode> TlsLeg::handshake(bool server) {
    if (server)
        SSL_set_accept_state(ssl_);
    else
        SSL_set_connect_state(ssl_);
    while (true) {
        ERR_clear_error();
        const int r = SSL_do_handshake(ssl_);
        const int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
        ErrorCode fail = r == 1 || e == SSL_ERROR_WANT_READ ? ErrorCode() : failure(r);
        // What the step made goes out first: the next flight, or the alert
        // that says why it failed.
        ErrorCode sent = co_await flush();
        if (fail) co_return fail;
        if (sent) co_return sent;
        if (r == 1) co_return ErrorCode();
        if (ErrorCode got = co_await fill()) co_return got == asio::error::eof ? asio::ssl::error::stream_truncated : got;
    }
}

awaitable<std::size_t> TlsLeg::read_some(char* p, std::size_t len, ErrorCode& ec) {
    ec = {};
    if (sticky_) {
        ec = sticky_;
        co_return 0;
    }
    std::size_t got = 0;
    while (got < len) {
        ERR_clear_error();
        std::size_t n = 0;
        const int r = SSL_read_ex(ssl_, p + got, len - got, &n);
        if (r == 1) {
            got += n;
            continue;
        }
        const int e = SSL_get_error(ssl_, r);
        ErrorCode end = e == SSL_ERROR_WANT_READ ? ErrorCode() : failure(r);
        // A read may answer (a key update, an alert): sent before waiting.
        if (!out_.empty())
            if (ErrorCode sent = co_await flush(); sent && !end) end = sent;
        if (!end) {
            if (got > 0) break;  // every whole record read so far: the caller's
            ErrorCode more = co_await fill();
            if (!more) continue;
            end = more == asio::error::eof ? ErrorCode(asio::ssl::error::stream_truncated) : more;
        }
        if (got > 0) {
            sticky_ = end;
            break;
        }
        ec = end;
        co_return 0;
    }
    co_return got;
}

awaitable<void> TlsLeg::write(std::string_view data) {
    while (!data.empty()) {
        const std::size_t piece = std::min(data.size(), k_write_piece);
        ERR_clear_error();
        std::size_t n = 0;
        const int r = SSL_write_ex(ssl_, data.data(), piece, &n);
        if (r == 1) {
            data.remove_prefix(n);
            if (ErrorCode sent = co_await flush()) throw boost::system::system_error(sent);
            continue;
        }
        if (SSL_get_error(ssl_, r) != SSL_ERROR_WANT_READ) {
            ErrorCode fail = failure(r);
            co_await flush();
            throw boost::system::system_error(fail);
        }
        // A TLS 1.2 peer's renegotiation: its records first.
        if (ErrorCode sent = co_await flush()) throw boost::system::system_error(sent);
        if (ErrorCode got = co_await fill()) throw boost::system::system_error(got);
    }
}

awaitable<ErrorCode> TlsLeg::shutdown() {
    bool first = true;
    while (true) {
        ERR_clear_error();
        const int r = SSL_shutdown(ssl_);
        ErrorCode sent = co_await flush();
        if (r == 1) co_return sent;
        if (sent) co_return sent;
        if (r == 0 && first) {
            first = false;  // ours is sent: the next call reads the peer's
            continue;
        }
        if (r < 0 && SSL_get_error(ssl_, r) != SSL_ERROR_WANT_READ) co_return failure(r);
        if (ErrorCode got = co_await fill()) co_return got;
    }
}

}  // namespace cc::net::detail
