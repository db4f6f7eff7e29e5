// GgufValue accessors and display, GgufTensorInfo sizes.
#include <fmt/format.h>

#include <limits>
#include <type_traits>

#include "gguf/gguf_format.h"
#include "lazyllm/gguf.h"

namespace lazyllm {
namespace {

constexpr size_t kMaxDisplayString = 64;       // bytes of a top-level string shown
constexpr size_t kMaxDisplayArrayString = 32;  // bytes of each string inside an array

bool is_unsigned_int(GgufValueType t) {
    return t == GgufValueType::UINT8 || t == GgufValueType::UINT16 || t == GgufValueType::UINT32 ||
           t == GgufValueType::UINT64;
}
bool is_signed_int(GgufValueType t) {
    return t == GgufValueType::INT8 || t == GgufValueType::INT16 || t == GgufValueType::INT32 ||
           t == GgufValueType::INT64;
}
bool is_float(GgufValueType t) {
    return t == GgufValueType::FLOAT32 || t == GgufValueType::FLOAT64;
}

std::string type_desc(const GgufValue& v) {
    if (v.type == GgufValueType::ARRAY) {
        return fmt::format("ARRAY of {}", gguf_value_type_name(v.elem_type));
    }
    return std::string(gguf_value_type_name(v.type));
}

Error type_error(const GgufValue& v, std::string_view expected) {
    return make_error(ErrorCode::kCorrupt, "expected {}, got {}", expected, type_desc(v));
}

// Escapes control bytes and quotes so a value prints on one line; cuts after `max_bytes`
// at a UTF-8 code point boundary.
std::string display_string(const std::string& s, size_t max_bytes, bool quoted) {
    size_t n = s.size();
    if (n > max_bytes) {
        n = max_bytes;
        while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    }
    std::string out;
    out.reserve(n + 8);
    if (quoted) out += '"';
    for (size_t i = 0; i < n; ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        switch (c) {
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\\':
                out += quoted ? "\\\\" : "\\";
                break;
            case '"':
                out += quoted ? "\\\"" : "\"";
                break;
            default:
                if (c < 0x20 || c == 0x7F) {
                    out += fmt::format("\\x{:02x}", c);
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    if (quoted) out += '"';
    if (n < s.size()) out += fmt::format("... ({} bytes)", s.size());
    return out;
}

// Floats read as FLOAT32 print as floats so 1e-5f shows "1e-05", not its double expansion.
std::string display_float(double v, GgufValueType declared) {
    if (declared == GgufValueType::FLOAT32) return fmt::format("{}", static_cast<float>(v));
    return fmt::format("{}", v);
}

template <typename Vec, typename Fn>
std::string display_array(const Vec& items, size_t max_items, Fn&& fmt_item) {
    std::string out = "[";
    size_t shown = std::min(items.size(), max_items);
    for (size_t i = 0; i < shown; ++i) {
        if (i) out += ", ";
        out += fmt_item(items[i]);
    }
    if (shown < items.size()) {
        out += fmt::format("{}... ({} items)", shown ? ", " : "", items.size());
    }
    out += "]";
    return out;
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType t) {
    switch (t) {
        case GgufValueType::UINT8:
            return "UINT8";
        case GgufValueType::INT8:
            return "INT8";
        case GgufValueType::UINT16:
            return "UINT16";
        case GgufValueType::INT16:
            return "INT16";
        case GgufValueType::UINT32:
            return "UINT32";
        case GgufValueType::INT32:
            return "INT32";
        case GgufValueType::FLOAT32:
            return "FLOAT32";
        case GgufValueType::BOOL:
            return "BOOL";
        case GgufValueType::STRING:
            return "STRING";
        case GgufValueType::ARRAY:
            return "ARRAY";
        case GgufValueType::UINT64:
            return "UINT64";
        case GgufValueType::INT64:
            return "INT64";
        case GgufValueType::FLOAT64:
            return "FLOAT64";
    }
    return "UNKNOWN";
}

Result<uint64_t> GgufValue::as_uint() const {
    if (is_unsigned_int(type)) return std::get<uint64_t>(data);
    if (is_signed_int(type)) {
        int64_t v = std::get<int64_t>(data);
        if (v < 0) {
            return make_error(ErrorCode::kCorrupt, "expected a non-negative integer, got {} {}",
                              gguf_value_type_name(type), v);
        }
        return static_cast<uint64_t>(v);
    }
    return type_error(*this, "an unsigned integer");
}

Result<int64_t> GgufValue::as_int() const {
    if (is_signed_int(type)) return std::get<int64_t>(data);
    if (is_unsigned_int(type)) {
        uint64_t v = std::get<uint64_t>(data);
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return make_error(ErrorCode::kCorrupt, "UINT64 value {} does not fit int64", v);
        }
        return static_cast<int64_t>(v);
    }
    return type_error(*this, "an integer");
}

Result<double> GgufValue::as_float() const {
    if (is_float(type)) return std::get<double>(data);
    if (is_unsigned_int(type)) return static_cast<double>(std::get<uint64_t>(data));
    if (is_signed_int(type)) return static_cast<double>(std::get<int64_t>(data));
    return type_error(*this, "a number");
}

Result<bool> GgufValue::as_bool() const {
    if (type == GgufValueType::BOOL) return std::get<bool>(data);
    return type_error(*this, "BOOL");
}

Result<std::string> GgufValue::as_string() const {
    if (type == GgufValueType::STRING) return std::get<std::string>(data);
    return type_error(*this, "STRING");
}

Result<std::vector<std::string>> GgufValue::as_string_array() const {
    if (type == GgufValueType::ARRAY && elem_type == GgufValueType::STRING) {
        return std::get<std::vector<std::string>>(data);
    }
    return type_error(*this, "ARRAY of STRING");
}

Result<std::vector<double>> GgufValue::as_float_array() const {
    if (type == GgufValueType::ARRAY) {
        if (is_float(elem_type)) return std::get<std::vector<double>>(data);
        if (is_unsigned_int(elem_type)) {
            const auto& v = std::get<std::vector<uint64_t>>(data);
            return std::vector<double>(v.begin(), v.end());
        }
        if (is_signed_int(elem_type)) {
            const auto& v = std::get<std::vector<int64_t>>(data);
            return std::vector<double>(v.begin(), v.end());
        }
    }
    return type_error(*this, "an ARRAY of numbers");
}

Result<std::vector<int64_t>> GgufValue::as_int_array() const {
    if (type == GgufValueType::ARRAY) {
        if (is_signed_int(elem_type)) return std::get<std::vector<int64_t>>(data);
        if (is_unsigned_int(elem_type)) {
            const auto& v = std::get<std::vector<uint64_t>>(data);
            std::vector<int64_t> out;
            out.reserve(v.size());
            for (size_t i = 0; i < v.size(); ++i) {
                if (v[i] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                    return make_error(ErrorCode::kCorrupt,
                                      "array element {} ({}) does not fit int64", i, v[i]);
                }
                out.push_back(static_cast<int64_t>(v[i]));
            }
            return out;
        }
    }
    return type_error(*this, "an ARRAY of integers");
}

size_t GgufValue::array_size() const {
    if (type != GgufValueType::ARRAY) return 0;
    return std::visit(
        [](const auto& d) -> size_t {
            using T = std::decay_t<decltype(d)>;
            if constexpr (requires { d.size(); } && !std::is_same_v<T, std::string>) {
                return d.size();
            } else {
                return 0;
            }
        },
        data);
}

std::string GgufValue::to_display(size_t max_items) const {
    if (type == GgufValueType::ARRAY) {
        return std::visit(
            [&](const auto& d) -> std::string {
                using T = std::decay_t<decltype(d)>;
                if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                    return display_array(d, max_items, [](const std::string& s) {
                        return display_string(s, kMaxDisplayArrayString, true);
                    });
                } else if constexpr (std::is_same_v<T, std::vector<double>>) {
                    return display_array(d, max_items,
                                         [&](double x) { return display_float(x, elem_type); });
                } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
                    return display_array(d, max_items,
                                         [](bool b) { return std::string(b ? "true" : "false"); });
                } else if constexpr (std::is_same_v<T, std::vector<uint64_t>> ||
                                     std::is_same_v<T, std::vector<int64_t>>) {
                    return display_array(d, max_items, [](auto x) { return fmt::format("{}", x); });
                } else {
                    return "[]";  // an ARRAY value always holds a vector
                }
            },
            data);
    }
    return std::visit(
        [&](const auto& d) -> std::string {
            using T = std::decay_t<decltype(d)>;
            if constexpr (std::is_same_v<T, std::string>) {
                return display_string(d, kMaxDisplayString, false);
            } else if constexpr (std::is_same_v<T, double>) {
                return display_float(d, type);
            } else if constexpr (std::is_same_v<T, bool>) {
                return d ? "true" : "false";
            } else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t>) {
                return fmt::format("{}", d);
            } else {
                return fmt::format("<{} items>", d.size());  // a vector in a scalar: malformed
            }
        },
        data);
}

uint64_t GgufTensorInfo::n_elements() const {
    uint64_t n = 1;
    for (int64_t d : shape) n *= static_cast<uint64_t>(d);
    return n;
}

uint64_t GgufTensorInfo::n_bytes() const {
    auto traits = ggml_type_traits(static_cast<uint32_t>(type));
    if (!traits) return 0;
    return n_elements() / static_cast<uint64_t>(traits->block_size) * traits->type_size;
}

}  // namespace lazyllm
