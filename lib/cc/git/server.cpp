#include "cc/git/server.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <mutex>

#include "cc/core/tool.hpp"

namespace cc::git {

namespace asio = boost::asio;

void log_line(const std::string& s) {
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    std::cerr << cc::tool::log_prefix("cc-pushgate") << s << '\n';
}

std::string response_head(int status, const std::string& type, std::optional<std::size_t> length, bool close) {
    std::string h = "HTTP/1.1 " + std::to_string(status) + " " + http::status_text(status) + "\r\n";
    h += "Content-Type: " + type + "\r\n";
    h += "Cache-Control: no-cache, max-age=0, must-revalidate\r\n";
    h += "Server: cc-pushgate/" CC_VERSION "\r\n";
    if (length)
        h += "Content-Length: " + std::to_string(*length) + "\r\n";
    else
        h += "Transfer-Encoding: chunked\r\n";
    if (close) h += "Connection: close\r\n";
    return h + "\r\n";
}

bool send_whole(Conn& c, int status, const std::string& type, const std::string& body, bool close) {
    return c.write_all(response_head(status, type, body.size(), close) + body).ok();
}

// 128 random bits, hex.
std::string session_secret() {
    unsigned char raw[16];
    std::size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = ::getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return "";
        got += static_cast<std::size_t>(n);
    }
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned char b : raw) {
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 15]);
    }
    return out;
}

Result<asio::ip::tcp::endpoint> parse_listen(const std::string& listen) {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) return input_error("--listen", "'" + listen + "' is not HOST:PORT");
    std::string host = listen.substr(0, colon), port = listen.substr(colon + 1);
    if (!host.empty() && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(host, ec);
    if (ec) return input_error("--listen", "'" + host + "' is not an IP address");
    if (!addr.is_loopback()) return input_error("--listen", "'" + host + "' is not a loopback address");
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) || std::stoi(port) > 65535)
        return input_error("--listen", "'" + port + "' is not a port");
    return asio::ip::tcp::endpoint(addr, static_cast<unsigned short>(std::stoi(port)));
}

}  // namespace cc::git
