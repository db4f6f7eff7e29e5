// Typed readers of a request's JSON fields and the errors that name them, shared by the
// parsers of the OpenAI-compatible API (api_request.cpp) and of the lazyllm extension
// (lazy_extension.cpp).
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "server/api_request.h"

namespace lazyllm::server {

inline ApiError bad(std::string param, std::string message, std::string code = "") {
    ApiError e;
    e.param = std::move(param);
    e.message = std::move(message);
    e.code = std::move(code);
    return e;
}

inline ApiError unsupported(std::string param, std::string what) {
    return bad(std::move(param), what + " is unsupported by this server", "unsupported");
}

inline std::string type_name(const nlohmann::json& v) {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "a boolean";
    if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
    if (v.is_number()) return "a number";
    if (v.is_string()) return "a string";
    if (v.is_array()) return "an array";
    return "an object";
}

inline ApiError wrong_type(const std::string& field, const char* expected,
                           const nlohmann::json& v) {
    return bad(field, fmt::format("'{}' must be {}, got {}", field, expected, type_name(v)));
}

// Typed field readers: std::nullopt when the field is absent or null, an error for a wrong type
// or a value out of range.
struct Fields {
    const nlohmann::json& obj;
    std::string prefix;  // "lazyllm." for the extension object
    std::optional<ApiError> err;

    std::string name(const char* key) const { return prefix + key; }
    const nlohmann::json* get(const char* key) const {
        auto it = obj.find(key);
        if (it == obj.end() || it->is_null()) return nullptr;
        return &*it;
    }
    std::optional<bool> boolean(const char* key) {
        const nlohmann::json* v = get(key);
        if (!v || err) return std::nullopt;
        if (!v->is_boolean()) return fail(wrong_type(name(key), "a boolean", *v));
        return v->get<bool>();
    }
    std::optional<std::string> string(const char* key) {
        const nlohmann::json* v = get(key);
        if (!v || err) return std::nullopt;
        if (!v->is_string()) return fail(wrong_type(name(key), "a string", *v));
        return v->get<std::string>();
    }
    std::optional<double> number(const char* key, double lo, double hi) {
        const nlohmann::json* v = get(key);
        if (!v || err) return std::nullopt;
        if (!v->is_number()) return fail(wrong_type(name(key), "a number", *v));
        const double x = v->get<double>();
        if (!(x >= lo && x <= hi)) {
            return fail(bad(name(key),
                            fmt::format("'{}' must be in [{}, {}], got {}", name(key), lo, hi, x)));
        }
        return x;
    }
    std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) {
        const nlohmann::json* v = get(key);
        if (!v || err) return std::nullopt;
        auto out_of_range = [&] {
            return fail(bad(name(key), fmt::format("'{}' must be in [{}, {}], got {}", name(key),
                                                   lo, hi, v->dump())));
        };
        // 3.0 is accepted as 3 (JavaScript clients send numbers); 3.5 is not.
        if (v->is_number_float()) {
            const double d = v->get<double>();
            if (std::floor(d) != d) return fail(wrong_type(name(key), "an integer", *v));
            // Past 2^53 a float holds no exact integer: out of range where it lies outside
            // [lo, hi] (a JSON integer beyond 64 bits reads as a float), else not an integer.
            if (std::fabs(d) > 9e15) {
                const bool outside = d < static_cast<double>(lo) || d > static_cast<double>(hi);
                if (outside) return out_of_range();
                return fail(wrong_type(name(key), "an integer", *v));
            }
        } else if (!v->is_number()) {
            return fail(wrong_type(name(key), "an integer", *v));
        }
        const bool too_big =
            v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi);
        const int64_t x = too_big                ? hi
                          : v->is_number_float() ? static_cast<int64_t>(v->get<double>())
                                                 : v->get<int64_t>();
        if (too_big || x < lo || x > hi) return out_of_range();
        return x;
    }
    std::nullopt_t fail(ApiError e) {
        if (!err) err = std::move(e);
        return std::nullopt;
    }
};

inline std::optional<ApiError> check_known(const nlohmann::json& obj,
                                           const std::set<std::string>& known,
                                           const std::string& prefix) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        // null is "not given": several OpenAI SDKs send every optional field, unset ones as null.
        if (!known.count(it.key()) && !it->is_null()) {
            return bad(prefix + it.key(), fmt::format("unknown field '{}{}'", prefix, it.key()),
                       "unknown_field");
        }
    }
    return std::nullopt;
}

}  // namespace lazyllm::server
