// The one way JSON leaves a cc tool: every stdout document, JSON Lines event,
// connection and metrics line, approver question and file the tools write.
// nlohmann's dump() throws on a string that is not UTF-8, and the tools write
// bytes an adversary chose (host names, ref names, file names, command
// lines), so nothing else in the project calls it (tests/cli/check_no_dump.sh).
//
// Bytes that are not UTF-8 are written losslessly and recognisably:
//   - a string value becomes {"bytes":"<base64 of the raw bytes>"} where
//     {"text"...} or a plain string would stand (ripgrep's JSON convention);
//   - an object key becomes "\uFFFDbase64:<base64>" (and so does a valid key
//     that itself starts with U+FFFD, so the form cannot be forged).
// cc-json(5) says the same to readers.
//
//   std::string line = cc::json::write(j);          // one line, never throws
//   std::string doc  = cc::json::write(j, 2);       // indented
//   cc::json::append_value(out, raw_bytes);         // "..." or {"bytes":"..."}
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace cc::json {

// Length of the longest prefix of s that is complete, valid UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing past U+10FFFF).
// `only_incomplete_tail` tells whether what follows is only an unfinished
// sequence at the very end (a character split across two reads).
std::size_t utf8_valid_prefix(std::string_view s, bool& only_incomplete_tail);
bool utf8_valid(std::string_view s);

// RFC 4648 base64 with padding.
std::string base64(std::string_view bytes);

// Appends s as a JSON string literal, quotes included. s must be valid UTF-8
// (check with utf8_valid); bytes that need no escape are copied in runs.
// Escapes as nlohmann does: \" \\ \b \f \n \r \t and \u00XX for the rest
// below 0x20.
void append_string(std::string& out, std::string_view s);

// Appends s as a JSON value: a string literal when s is UTF-8, else
// {"bytes":"<base64>"}. Never throws.
void append_value(std::string& out, std::string_view s);

// The raw bytes of a value written by append_value()/write(): a string as
// it is, {"bytes":"<base64>"} decoded; nullopt for anything else.
std::optional<std::string> bytes_of(const nlohmann::json& v);

// The key form above: s itself when UTF-8 and not starting with U+FFFD.
std::string key_text(std::string_view s);

// j as text; indent < 0 is one line. Lossless as above, never throws.
std::string write(const nlohmann::json& j, int indent = -1);
std::string write(const nlohmann::ordered_json& j, int indent = -1);

// For formats another program defines and parses strictly (an agent CLI's
// hook answer): bytes that are not UTF-8 become U+FFFD, so the reader gets
// the string it expects. Never throws. Everything of the project's own uses
// write().
std::string write_replacing(const nlohmann::json& j, int indent = -1);
std::string write_replacing(const nlohmann::ordered_json& j, int indent = -1);

}  // namespace cc::json
