#include "cc/core/json_reader.hpp"

#include <algorithm>

namespace cc::json {

Result<json> parse(const std::string& text, const std::string& subject) {
    try {
        return json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        return input_error(subject, "malformed JSON at byte " + std::to_string(e.byte));
    }
}

std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
}

std::string join(const std::string& path, std::size_t index) {
    return path + "[" + std::to_string(index) + "]";
}

const char* type_name(const json& j) {
    switch (j.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::string: return "a string";
        case json::value_t::array: return "an array";
        case json::value_t::object: return "an object";
        case json::value_t::binary: return "binary";
        case json::value_t::discarded: return "discarded";
        default: return "a number";
    }
}

ObjectReader::ObjectReader(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {
    if (!obj_.is_object())
        err_ = input_error(path_.empty() ? "document" : path_,
                           std::string("must be an object, not ") + type_name(obj_));
}

bool ObjectReader::has(const std::string& key) const { return obj_.is_object() && obj_.contains(key); }

void ObjectReader::fail(const std::string& key, const std::string& message) {
    if (!err_) err_ = input_error(join(path_, key), message);
}

const json* ObjectReader::find(const std::string& key, json::value_t want, const char* want_name) {
    known_.push_back(key);
    if (err_ || !obj_.is_object()) return nullptr;
    auto it = obj_.find(key);
    if (it == obj_.end()) return nullptr;
    bool match = it->type() == want ||
                 (want == json::value_t::number_integer &&
                  (it->is_number_unsigned() || it->is_number_integer())) ||
                 (want == json::value_t::number_float && it->is_number());
    if (!match) {
        fail(key, std::string("must be ") + want_name + ", not " + type_name(*it));
        return nullptr;
    }
    return &*it;
}

void ObjectReader::required(const std::string& key, std::string& out) {
    if (!err_ && obj_.is_object() && !obj_.contains(key)) {
        known_.push_back(key);
        fail(key, "is required");
        return;
    }
    optional(key, out);
}

void ObjectReader::optional(const std::string& key, std::string& out) {
    if (auto* v = find(key, json::value_t::string, "a string")) out = v->get<std::string>();
}

void ObjectReader::optional(const std::string& key, std::optional<std::string>& out) {
    if (has(key) && obj_.at(key).is_null()) {  // explicit null == absent
        known_.push_back(key);
        return;
    }
    if (auto* v = find(key, json::value_t::string, "a string")) out = v->get<std::string>();
}

void ObjectReader::optional(const std::string& key, bool& out) {
    if (auto* v = find(key, json::value_t::boolean, "a boolean")) out = v->get<bool>();
}

void ObjectReader::optional(const std::string& key, int& out) {
    if (auto* v = find(key, json::value_t::number_integer, "an integer")) {
        if (v->is_number_unsigned() && v->get<std::uint64_t>() > 0x7fffffffULL)
            fail(key, "is out of range");
        else if (v->is_number_integer() && (v->get<std::int64_t>() > 0x7fffffffLL ||
                                            v->get<std::int64_t>() < -0x7fffffffLL))
            fail(key, "is out of range");
        else
            out = v->get<int>();
    }
}

void ObjectReader::optional(const std::string& key, double& out) {
    if (auto* v = find(key, json::value_t::number_float, "a number")) out = v->get<double>();
}

void ObjectReader::optional(const std::string& key, std::vector<std::string>& out) {
    auto* v = find(key, json::value_t::array, "an array of strings");
    if (!v) return;
    std::vector<std::string> items;
    for (std::size_t i = 0; i < v->size(); ++i) {
        const json& item = (*v)[i];
        if (!item.is_string()) {
            if (!err_)
                err_ = input_error(join(join(path_, key), i),
                                   std::string("must be a string, not ") + type_name(item));
            return;
        }
        items.push_back(item.get<std::string>());
    }
    out = std::move(items);
}

std::optional<Error> ObjectReader::finish() const {
    if (err_) return err_;
    for (auto it = obj_.begin(); it != obj_.end(); ++it)
        if (std::find(known_.begin(), known_.end(), it.key()) == known_.end())
            return input_error(join(path_, it.key()), "unknown field");
    return std::nullopt;
}

std::string string_at(const json& j, const char* key) {
    if (!j.is_object()) return {};
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace cc::json
