// Bounds-checked little-endian reads over an in-memory byte range (internal to the reader).
// Every read checks the bytes left before touching memory; errors carry the byte offset.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "lazyllm/result.h"

namespace lazyllm::gguf {

class ByteCursor {
public:
    ByteCursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

    uint64_t pos() const { return pos_; }
    uint64_t size() const { return size_; }
    uint64_t remaining() const { return size_ - pos_; }

    // Fails unless `n` more bytes are there; `what` names the field for the message.
    Status need(uint64_t n, std::string_view what) const {
        if (n > remaining()) {
            return make_error(ErrorCode::kCorrupt,
                              "unexpected end of data at offset {} reading {}: {} bytes needed, "
                              "{} left",
                              pos_, what, n, remaining());
        }
        return {};
    }

    template <typename T>
    Result<T> read(std::string_view what) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (sizeof(T) > remaining()) return need(sizeof(T), what).error();
        return read_unchecked<T>();
    }

    // Caller has checked that sizeof(T) bytes remain (hot loops over array elements).
    template <typename T>
    T read_unchecked() {
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    // GGUF string: uint64 byte length, then the bytes (no terminator, any encoding).
    Result<std::string_view> read_string(std::string_view what) {
        if (8 > remaining()) return need(8, what).error();
        uint64_t start = pos_;
        uint64_t len = read_unchecked<uint64_t>();
        if (len > remaining()) {
            return make_error(ErrorCode::kCorrupt,
                              "{} at offset {} has length {}, but only {} bytes are left", what,
                              start, len, remaining());
        }
        std::string_view s(reinterpret_cast<const char*>(data_ + pos_), len);
        pos_ += len;
        return s;
    }

private:
    const uint8_t* data_;
    uint64_t size_;
    uint64_t pos_ = 0;
};

}  // namespace lazyllm::gguf
