// One TLS leg of an intercepted connection (intercept.hpp), driven by hand:
// OpenSSL reads and writes two buffers of this object through a BIO of its
// own, and the socket is read and written in large pieces, as the plain
// relay does (MSG_DONTWAIT first, the event loop only when the socket has
// nothing or takes nothing).
//
// Why not asio::ssl::stream: its engine moves at most one record (16 KiB)
// per socket read and per socket write, through a 17 KiB BIO pair and a
// copy into its own buffers. Here one recv takes what the socket holds (up
// to 80 KiB: several records), one read_some decrypts every whole record it
// holds, and one write encrypts up to 64 KiB into records that leave in one
// send.
//
// Buffers are held only while bytes wait in them: a leg waiting for its
// peer holds at most 4 KiB of its own, and OpenSSL gives its record
// buffers back too (SSL_MODE_RELEASE_BUFFERS).
//
//   TlsLeg leg(sock, ctx);                  // SSL_new; native_handle() for SNI, host checks
//   auto ec = co_await leg.handshake(true); // server side; false: client
//   n = co_await leg.read_some(p, len, ec); // eof: close_notify; stream_truncated: closed without one
//   co_await leg.write(bytes);              // throws on error
//   co_await leg.shutdown();                // close_notify, then the peer's
//
// One reader and one writer at a time, on the socket's loop; the two may
// not run at once (the intercepted requests are carried one way at a time).
#pragma once

#include "cc/net/session.hpp"

#include <openssl/ssl.h>

namespace cc::net::detail {

class TlsLeg {
public:
    // Throws std::runtime_error when OpenSSL cannot make the session.
    TlsLeg(Sock& s, SSL_CTX* ctx);
    ~TlsLeg();
    TlsLeg(const TlsLeg&) = delete;
    TlsLeg& operator=(const TlsLeg&) = delete;

    SSL* native_handle() { return ssl_; }

    // The handshake, as server or client; its error, if any.
    awaitable<ErrorCode> handshake(bool server);
    // Up to `len` bytes of plaintext, every whole record already read; 0
    // with `ec` set at the end: asio::error::eof after the peer's
    // close_notify, asio::ssl::error::stream_truncated when it closed
    // without one, anything else for a failure.
    awaitable<std::size_t> read_some(char* p, std::size_t len, ErrorCode& ec);
    // Returns once a read_some will find bytes (or the end) without
    // waiting on the socket: the caller holds no buffer while the peer is
    // quiet.
    awaitable<void> readable();
    // Gives back the buffers no byte waits in (between messages).
    void trim();
    // All of `data`, sent before it returns; throws system_error.
    awaitable<void> write(std::string_view data);
    // Our close_notify, then the peer's (bounded by the caller's deadline).
    awaitable<ErrorCode> shutdown();

    // For the BIO (tls_leg.cpp): what it reads from and writes to.
    int bio_read(char* p, int len);
    int bio_write(const char* p, int len);

private:
    awaitable<ErrorCode> fill();   // at least one more byte into in_ (or eof_)
    awaitable<ErrorCode> flush();  // everything in out_ onto the socket
    ErrorCode failure(int ret);    // the error of a failed SSL call

    Sock& sock_;
    SSL* ssl_ = nullptr;
    std::unique_ptr<char[]> in_;  // read from the socket, not yet taken by OpenSSL: [in_at_, in_end_)
    std::size_t in_cap_ = 0, in_at_ = 0, in_end_ = 0;
    bool eof_ = false;     // the socket's read side ended
    std::string out_;      // records made, not yet sent: [out_at_, end)
    std::size_t out_at_ = 0;
    ErrorCode sticky_;     // the end (or failure) a read met after returning bytes
};

}  // namespace cc::net::detail
