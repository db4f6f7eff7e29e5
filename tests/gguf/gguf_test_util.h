// Hand-assembled GGUF bytes for the reader tests: every field written explicitly, so tests can
// build files the writer never would (other versions, every value type, hostile counts).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/gguf.h"

namespace lazyllm::testing {

class RawGguf {
public:
    template <typename T>
    RawGguf& put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        bytes.insert(bytes.end(), p, p + sizeof(T));
        return *this;
    }
    RawGguf& u8(uint8_t v) { return put(v); }
    RawGguf& u32(uint32_t v) { return put(v); }
    RawGguf& u64(uint64_t v) { return put(v); }
    RawGguf& str(std::string_view s) {
        u64(s.size());
        bytes.insert(bytes.end(), s.begin(), s.end());
        return *this;
    }
    RawGguf& type(GgufValueType t) { return u32(static_cast<uint32_t>(t)); }
    RawGguf& raw(const std::vector<uint8_t>& b) {
        bytes.insert(bytes.end(), b.begin(), b.end());
        return *this;
    }
    RawGguf& pad(uint64_t alignment) {
        bytes.resize((bytes.size() + alignment - 1) / alignment * alignment, 0);
        return *this;
    }
    // "GGUF", version, tensor count, kv count.
    RawGguf& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
        bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
        return u32(version).u64(n_tensors).u64(n_kv);
    }
    RawGguf& kv_u32(std::string_view key, uint32_t v) {
        return str(key).type(GgufValueType::UINT32).u32(v);
    }
    RawGguf& kv_str(std::string_view key, std::string_view v) {
        return str(key).type(GgufValueType::STRING).str(v);
    }
    RawGguf& tensor_info(std::string_view name, const std::vector<uint64_t>& ne, uint32_t type,
                         uint64_t offset) {
        str(name).u32(static_cast<uint32_t>(ne.size()));
        for (uint64_t d : ne) u64(d);
        return u32(type).u64(offset);
    }
    size_t size() const { return bytes.size(); }

    Result<GgufFile> parse() const {
        return GgufFile::from_memory(bytes.data(), bytes.size(), "raw.gguf");
    }

    std::vector<uint8_t> bytes;
};

}  // namespace lazyllm::testing
