// Following the plaintext part of a TLS handshake on a tunnel, both ways,
// record by record (RFC 8446 5.1, 4.1; RFC 5246 7), so that every
// ClientHello is seen before it is forwarded: the first, and a second one
// after a HelloRetryRequest (RFC 8446 4.1.4), which may come after a dummy
// change_cipher_spec (RFC 8446 D.4). Pure bytes in, verdicts out: no sockets.
//
//   cc::net::tls::Follower f;
//   f.client(bytes_from_client);         // then forward f.client_ready() bytes in total
//   for (auto& h : f.take_hellos()) ...  // check each server name against the rules
//   f.server(bytes_from_server);         // the ServerHello tells the version and a retry
//   if (f.refused()) ... f.error();      // close the tunnel, log why
//   if (f.client_done()) ...             // the rest is relayed without looking
//
// The client's plaintext ends with the server's real ServerHello in TLS 1.3
// (its next flight is encrypted application_data records) and with the
// client's own change_cipher_spec in TLS 1.2 and older. Until then the client
// may send only: ClientHellos (a second one only after a HelloRetryRequest,
// naming the same server byte for byte), change_cipher_spec, alerts, early
// data (application_data) and, after a TLS 1.2 ServerHello, its own
// plaintext handshake messages. A stream whose first record is a TLS record
// of another type (an alert placed first) is refused: it is TLS-looking but
// does not start with a ClientHello.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cc::net::tls {

struct Hello {
    bool has_sni = false;
    std::string sni;  // the host_name as sent
};

// The server_name of one whole ClientHello handshake message (type, length,
// body). 1: found (sni set), 0: no server_name extension, -1: malformed.
int hello_server_name(std::string_view message, std::string& sni);

class Follower {
public:
    void client(std::string_view bytes);
    void server(std::string_view bytes);

    // Client bytes (counted from the first one fed) that may be forwarded
    // once the hellos taken so far have been checked: whole records, none
    // leaving a handshake message half read; everything once client_done().
    std::uint64_t client_ready() const { return !refused() && client_done() ? c_.fed : client_ready_; }
    std::vector<Hello> take_hellos();

    bool not_tls() const { return not_tls_; }  // the client's first bytes are no TLS record
    bool refused() const { return !error_.empty(); }
    const std::string& error() const { return error_; }
    bool client_done() const { return client_done_ || not_tls_; }
    bool server_done() const { return server_done_ || not_tls_; }
    int hello_retries() const { return retries_; }
    int hellos() const { return hellos_; }

private:
    enum class Version { unknown, tls12, tls13 };
    struct Stream {
        std::string record;     // an incomplete record
        std::string handshake;  // handshake bytes of an incomplete message
        std::uint64_t fed = 0;  // bytes fed so far
        std::uint64_t parsed = 0;
    };
    void refuse(std::string why);
    void client_record(std::uint8_t type, std::string_view body);
    void client_message(std::string_view message);
    void server_record(std::uint8_t type, std::string_view body);
    void server_message(std::string_view message);

    Stream c_, s_;
    std::vector<Hello> pending_;
    std::string first_sni_;
    bool first_has_sni_ = false;
    int hellos_ = 0, retries_ = 0;
    Version version_ = Version::unknown;
    bool started_ = false, not_tls_ = false, client_done_ = false, server_done_ = false;
    std::uint64_t client_ready_ = 0;
    std::string error_;
};

}  // namespace cc::net::tls
