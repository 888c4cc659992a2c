// libFuzzer target for what cc-pushgate reads from the agent before any
// verdict: the request head, the receive-pack command list (pkt-lines) and
// the pack. Beyond "no crash, no hang", it checks:
//  - the command parser reads a request fed in two slices as in one;
//  - every field it accepts (ref names, capabilities, push options, head
//    lines) can be written by the project's JSON writer and read back to the
//    same bytes: nothing the gateway logs can end the process;
//  - the pack scanner fed in two slices agrees with one feed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cc/core/json_writer.hpp"
#include "cc/git/http.hpp"
#include "cc/git/pack_scan.hpp"
#include "cc/git/pkt_line.hpp"
#include "cc/git/receive_pack.hpp"

using namespace cc::git;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

// The writer's promise: any bytes, written and read back, are the same bytes.
void writes_back(const std::string& field) {
    nlohmann::json j = {{"v", field}, {field, 1}};
    std::string out = cc::json::write(j);
    auto back = nlohmann::json::parse(out, nullptr, false);
    check(!back.is_discarded());
    check(cc::json::bytes_of(back["v"]) == field);
}

void head(std::string_view in) {
    std::string buf(in);
    auto h = http::take_head(buf);
    if (!h || !*h) return;
    const http::RequestHead& r = **h;
    writes_back(r.method);
    writes_back(r.target);
    for (const auto& [k, v] : r.headers) {
        writes_back(k);
        writes_back(v);
    }
    (void)parse_route(r.target);
}

void commands(std::string_view in) {
    RequestParser whole;
    auto a = whole.feed(in);
    std::size_t cut = in.empty() ? 0 : static_cast<unsigned char>(in[0]) % (in.size() + 1);
    RequestParser split;
    auto b = split.feed(in.substr(0, cut));
    if (b && !*b) b = split.feed(in.substr(cut));
    check(static_cast<bool>(a) == static_cast<bool>(b));
    if (!a || !*a) return;
    check(b && *b);
    const PushRequest& r = whole.request();
    check(r.commands.size() == split.request().commands.size());
    for (std::size_t i = 0; i < r.commands.size(); ++i) {
        check(r.commands[i].ref == split.request().commands[i].ref);
        writes_back(r.commands[i].ref);
    }
    for (const auto& c : r.capabilities) writes_back(c);
    for (const auto& o : r.options) writes_back(o);
    // What goes upstream parses back to the same commands.
    RequestParser again;
    auto re = again.feed(encode_prefix(r, r.commands));
    check(re && *re);
    check(again.request().commands.size() == r.commands.size());
}

void pkts(std::string_view in) {
    PktReader r;
    r.feed(in);
    for (int i = 0; i < 4096; ++i) {
        auto p = r.next();
        if (!p || !*p) break;
        if ((*p)->kind == Pkt::Kind::data) writes_back((*p)->payload);
    }
}

void pack(std::string_view in) {
    PackScanner whole(1u << 20), split(1u << 20);
    auto a = whole.feed(in);
    std::size_t cut = in.size() / 2;
    auto b = split.feed(in.substr(0, cut));
    if (b) b = split.feed(in.substr(cut));
    check(static_cast<bool>(a) == static_cast<bool>(b));
    if (a) check(whole.objects().size() == split.objects().size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    head(in);
    commands(in);
    pkts(in);
    pack(in);
    return 0;
}
