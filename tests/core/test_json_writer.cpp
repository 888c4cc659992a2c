// lib/cc/core/json_writer: the one way JSON leaves a tool. Bytes that are not
// UTF-8 are kept whole ({"bytes":base64} for a value, "\uFFFDbase64:..." for a
// key) and nothing throws.
#include <catch2/catch.hpp>

#include "harness.hpp"

#include <random>
#include <string>

#include "cc/core/json_writer.hpp"

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

std::string b64_decode(const std::string& in) {
    static const std::string abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    unsigned v = 0;
    int bits = 0;
    for (char c : in) {
        if (c == '=') break;
        v = (v << 6) | static_cast<unsigned>(abc.find(c));
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((v >> bits) & 0xFF));
        }
    }
    return out;
}

// What a reader of cc-json(5) does: a {"bytes":...} object or a marked key
// back to the raw bytes.
json decode(const json& j) {
    if (j.is_object() && j.size() == 1 && j.contains("bytes") && j["bytes"].is_string())
        return b64_decode(j["bytes"].get<std::string>());
    if (j.is_array()) {
        json a = json::array();
        for (const auto& v : j) a.push_back(decode(v));
        return a;
    }
    if (j.is_object()) {
        json o = json::object();
        const std::string mark = "\xEF\xBF\xBD" "base64:";
        for (const auto& [k, v] : j.items())
            o[k.rfind(mark, 0) == 0 ? b64_decode(k.substr(mark.size())) : k] = decode(v);
        return o;
    }
    return j;
}

}  // namespace

TEST_CASE("json writer: nlohmann's own dump throws on these bytes (why the writer exists)", "[core][json]") {
    json j = {{"host", "ex\xff" "ample.com"}};
    CHECK_THROWS_WITH(j.dump(), Catch::Contains("invalid UTF-8 byte at index 2: 0xFF"));
    CHECK_NOTHROW(cc::json::write(j));
}

TEST_CASE("json writer: valid text is written exactly as nlohmann writes it", "[core][json]") {
    json j = {{"a", "plain"}, {"b", "tab\tquote\"back\\ctl\x01 \x7f"}, {"c", {1, 2.5, nullptr, true}},
              {"d", "h\xc3\xa9llo \xf0\x9f\x98\x80"}, {"e", json::object()}};
    CHECK(cc::json::write(j) == j.dump());
    CHECK(cc::json::write(j, 2) == j.dump(2));
    ordered_json o = {{"z", 1}, {"a", "x"}};
    CHECK(cc::json::write(o) == R"({"z":1,"a":"x"})");
}

TEST_CASE("json writer: a value that is not UTF-8 becomes {\"bytes\": base64}", "[core][json]") {
    json j = {{"event", "connection"}, {"host", "ex\xff" "ample.com"}, {"list", {"ok", "\xc3"}}};
    std::string out = cc::json::write(j);
    CHECK(out == R"({"event":"connection","host":{"bytes":"ZXj/YW1wbGUuY29t"},"list":["ok",{"bytes":"ww=="}]})");
    CHECK(decode(json::parse(out)) == j);
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8 either.
    for (std::string bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
        std::string w = cc::json::write(json{{"v", bad}});
        CHECK(w.find("\"bytes\"") != std::string::npos);
        CHECK(decode(json::parse(w))["v"] == bad);
    }
}

TEST_CASE("json writer: a key that is not UTF-8 (or looks like the mark) is marked and kept", "[core][json]") {
    json env = {{"PATH", "/bin"}, {"X\xfe", "v"}, {"\xEF\xBF\xBD" "base64:QQ==", "forged"}};
    std::string out = cc::json::write(json{{"env", env}});
    json back = decode(json::parse(out));
    CHECK(back["env"] == env);
    // The forged key did not decode to "A".
    CHECK_FALSE(back["env"].contains("A"));
}

TEST_CASE("json writer: append_value and append_string", "[core][json]") {
    std::string out;
    cc::json::append_value(out, "a\"b\n");
    CHECK(out == R"("a\"b\n")");
    out.clear();
    cc::json::append_value(out, std::string("\x80\x81", 2));
    CHECK(out == R"({"bytes":"gIE="})");
    CHECK(cc::json::key_text("ok") == "ok");
    CHECK(cc::json::bytes_of(json{{"bytes", "gIE="}}) == std::string("\x80\x81", 2));
    CHECK(cc::json::bytes_of(json("plain")) == "plain");
    CHECK_FALSE(cc::json::bytes_of(json{{"bytes", "g!E="}}));  // not base64
    CHECK_FALSE(cc::json::bytes_of(json{{"bytes", "gI=E"}}));  // data after padding
    CHECK_FALSE(cc::json::bytes_of(json(3)));
    CHECK(cc::json::write_replacing(json{{"r", "a\xff"}}) == "{\"r\":\"a\xEF\xBF\xBD\"}");
}

TEST_CASE("json writer: every byte string round-trips (random property)", "[core][json]") {
    std::mt19937 rng(7);
    for (int i = 0; i < 5000; ++i) {
        std::string s(rng() % 24, '\0');
        for (auto& c : s) c = static_cast<char>(rng() % 4 == 0 ? 0x80 + rng() % 0x80 : rng() % 0x80);
        json j = {{"v", s}, {s, 1}};
        std::string out;
        REQUIRE_NOTHROW(out = cc::json::write(j));
        json parsed = json::parse(out);  // always parseable, always UTF-8
        REQUIRE(decode(parsed) == j);
        REQUIRE(cc::json::bytes_of(parsed["v"]) == s);
    }
}
