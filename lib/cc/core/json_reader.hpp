// Strict reading of JSON objects for every input format (SandboxSpec, policy,
// egress lists). Unknown fields, wrong types and missing required fields are
// errors that name the field path, e.g. `bindMounts[2].hostPath: must be
// absolute`. Nothing is ignored silently.
//
//   cc::json::ObjectReader r(doc, "");            // "" = the document root
//   std::string id;  r.required("sessionId", id);
//   bool net = true; r.optional("networkEnabled", net);
//   if (auto e = r.finish()) return *e;           // unknown fields, first error
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cc/core/result.hpp"

namespace cc::json {

using nlohmann::json;

// Parse text, turning nlohmann's exception into an input error naming `subject`
// (a file name or "stdin") and the byte offset.
Result<json> parse(const std::string& text, const std::string& subject);

// "a.b" + "c" -> "a.b.c"; "" + "c" -> "c"; "a" + index 2 -> "a[2]".
std::string join(const std::string& path, const std::string& key);
std::string join(const std::string& path, std::size_t index);

const char* type_name(const json& j);

// j[key] when j is an object and that member is a string; else "". For
// renderers of a tool's own output, which may leave a member out.
std::string string_at(const json& j, const char* key);

class ObjectReader {
public:
    // `path` names this object in messages ("" for the root).
    ObjectReader(const json& obj, std::string path);

    // Each reader fills `out` and records the field as known. A type mismatch
    // records an error (the first one wins) and leaves `out` unchanged.
    void required(const std::string& key, std::string& out);
    void optional(const std::string& key, std::string& out);
    void optional(const std::string& key, std::optional<std::string>& out);
    void optional(const std::string& key, bool& out);
    void optional(const std::string& key, int& out);
    void optional(const std::string& key, double& out);
    void optional(const std::string& key, std::vector<std::string>& out);
    // Nested values handed to a callback: fn(const json&, path) -> Status.
    template <typename Fn>
    void optional_value(const std::string& key, Fn&& fn) {
        known_.push_back(key);
        if (!obj_.is_object() || !obj_.contains(key)) return;
        if (err_) return;
        Status s = fn(obj_.at(key), join(path_, key));
        if (!s) err_ = s.error();
    }
    void accept(const std::string& key) { known_.push_back(key); }  // read elsewhere
    bool has(const std::string& key) const;

    void fail(const std::string& key, const std::string& message);
    // Returns the first error, or one for the first unknown field.
    std::optional<Error> finish() const;

private:
    const json* find(const std::string& key, json::value_t want, const char* want_name);
    const json& obj_;
    std::string path_;
    std::vector<std::string> known_;
    std::optional<Error> err_;
};

}  // namespace cc::json
