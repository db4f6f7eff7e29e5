// GGUF v3 writer (little-endian): header, metadata in insertion order, tensor infos, padding
// to the alignment, tensor data each padded to the alignment (as llama.cpp's gguf.cpp writes
// it). Misuse (wrong data size, duplicate tensor name) is a programming error: CHECK.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/check.h"
#include "gguf/gguf_format.h"
#include "lazyllm/gguf.h"

namespace lazyllm {
namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    // resize + memcpy rather than insert: GCC 12 at -O3 reports a false -Wstringop-overflow
    // for vector::insert into an empty vector.
    const size_t off = out.size();
    out.resize(off + sizeof(T));
    std::memcpy(out.data() + off, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

void put_type(std::vector<uint8_t>& out, GgufValueType t) {
    put<uint32_t>(out, static_cast<uint32_t>(t));
}

std::vector<uint8_t> encode_array_header(GgufValueType elem, size_t n) {
    std::vector<uint8_t> out;
    put_type(out, GgufValueType::ARRAY);
    put_type(out, elem);
    put<uint64_t>(out, n);
    return out;
}

template <typename T>
std::vector<uint8_t> encode_scalar(GgufValueType t, T v) {
    std::vector<uint8_t> out;
    put_type(out, t);
    put<T>(out, v);
    return out;
}

void pad_to(std::vector<uint8_t>& out, uint64_t alignment) {
    out.resize(out.size() + (alignment - out.size() % alignment) % alignment, 0);
}

void set_entry(std::vector<std::pair<std::string, std::vector<uint8_t>>>& kv,
               const std::string& key, std::vector<uint8_t> encoded) {
    for (auto& [k, v] : kv) {
        if (k == key) {
            v = std::move(encoded);  // replacing keeps the key's first position
            return;
        }
    }
    kv.emplace_back(key, std::move(encoded));
}

}  // namespace

GgufWriter::GgufWriter(uint64_t alignment) : alignment_(alignment) {
    LAZYLLM_CHECK_MSG(
        alignment > 0 && std::has_single_bit(alignment) && alignment <= (uint64_t{1} << 31),
        "GGUF alignment must be a power of two");
}

void GgufWriter::set_uint32(const std::string& key, uint32_t v) {
    set_entry(kv_, key, encode_scalar(GgufValueType::UINT32, v));
}
void GgufWriter::set_int32(const std::string& key, int32_t v) {
    set_entry(kv_, key, encode_scalar(GgufValueType::INT32, v));
}
void GgufWriter::set_uint64(const std::string& key, uint64_t v) {
    set_entry(kv_, key, encode_scalar(GgufValueType::UINT64, v));
}
void GgufWriter::set_float32(const std::string& key, float v) {
    set_entry(kv_, key, encode_scalar(GgufValueType::FLOAT32, v));
}
void GgufWriter::set_bool(const std::string& key, bool v) {
    set_entry(kv_, key, encode_scalar(GgufValueType::BOOL, static_cast<uint8_t>(v ? 1 : 0)));
}
void GgufWriter::set_string(const std::string& key, const std::string& v) {
    std::vector<uint8_t> out;
    put_type(out, GgufValueType::STRING);
    put_string(out, v);
    set_entry(kv_, key, std::move(out));
}
void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
    std::vector<uint8_t> out = encode_array_header(GgufValueType::STRING, v.size());
    for (const auto& s : v) put_string(out, s);
    set_entry(kv_, key, std::move(out));
}
void GgufWriter::set_float32_array(const std::string& key, const std::vector<float>& v) {
    std::vector<uint8_t> out = encode_array_header(GgufValueType::FLOAT32, v.size());
    for (float x : v) put<float>(out, x);
    set_entry(kv_, key, std::move(out));
}
void GgufWriter::set_int32_array(const std::string& key, const std::vector<int32_t>& v) {
    std::vector<uint8_t> out = encode_array_header(GgufValueType::INT32, v.size());
    for (int32_t x : v) put<int32_t>(out, x);
    set_entry(kv_, key, std::move(out));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> shape,
                            std::vector<uint8_t> data) {
    auto traits = ggml_type_traits(static_cast<uint32_t>(type));
    LAZYLLM_CHECK_MSG(traits.has_value(), name.c_str());
    LAZYLLM_CHECK_MSG(!shape.empty() && shape.size() <= gguf::kMaxDims, name.c_str());
    for (int64_t d : shape) LAZYLLM_CHECK_MSG(d > 0, name.c_str());
    LAZYLLM_CHECK_MSG(shape[0] % traits->block_size == 0, name.c_str());
    for (const auto& t : tensors_) LAZYLLM_CHECK_MSG(t.name != name, name.c_str());
    GgufTensorInfo info{name, type, shape, 0};
    LAZYLLM_CHECK_MSG(info.n_bytes() == data.size(), name.c_str());
    tensors_.push_back(TensorEntry{name, type, std::move(shape), std::move(data)});
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
    // general.alignment is written when it differs from the default and the caller did not set
    // it (a caller-set value is written as given, so tests can build inconsistent files).
    bool has_alignment_key = false;
    for (const auto& [k, v] : kv_) has_alignment_key |= (k == gguf::kAlignmentKey);
    bool add_alignment_key = !has_alignment_key && alignment_ != gguf::kDefaultAlignment;

    uint64_t data_size = 0;
    for (const auto& t : tensors_) {
        data_size += t.data.size() + (alignment_ - t.data.size() % alignment_) % alignment_;
    }
    std::vector<uint8_t> out;
    out.reserve(4096 + data_size);
    put<uint32_t>(out, gguf::kMagic);
    put<uint32_t>(out, gguf::kVersionWritten);
    put<uint64_t>(out, tensors_.size());
    put<uint64_t>(out, kv_.size() + (add_alignment_key ? 1 : 0));
    if (add_alignment_key) {
        put_string(out, std::string(gguf::kAlignmentKey));
        put_type(out, GgufValueType::UINT32);
        put<uint32_t>(out, static_cast<uint32_t>(alignment_));
    }
    for (const auto& [key, encoded] : kv_) {
        put_string(out, key);
        out.insert(out.end(), encoded.begin(), encoded.end());
    }
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
        put_string(out, t.name);
        put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
        for (int64_t d : t.shape) put<uint64_t>(out, static_cast<uint64_t>(d));
        put<uint32_t>(out, static_cast<uint32_t>(t.type));
        put<uint64_t>(out, offset);
        offset += t.data.size() + (alignment_ - t.data.size() % alignment_) % alignment_;
    }
    pad_to(out, alignment_);  // the data section starts aligned in the file
    for (const auto& t : tensors_) {
        out.insert(out.end(), t.data.begin(), t.data.end());
        pad_to(out, alignment_);
    }
    return out;
}

Status GgufWriter::write(const std::string& path) const {
    std::vector<uint8_t> bytes = to_bytes();
    // A temporary name of its own (mkstemp), so that two writers of the same path never write
    // into one file: each renames a complete file into place, the last one wins.
    std::string tmp = path + ".tmp.XXXXXX";
    int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) {
        return make_error(ErrorCode::kIo, "cannot create '{}': {}", tmp, std::strerror(errno));
    }
    if (::fchmod(fd, 0644) != 0) {
        int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return make_error(ErrorCode::kIo, "cannot chmod '{}': {}", tmp, std::strerror(e));
    }
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            return make_error(ErrorCode::kIo, "cannot write '{}': {}", tmp, std::strerror(e));
        }
        done += static_cast<size_t>(n);
    }
    if (::close(fd) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        return make_error(ErrorCode::kIo, "cannot write '{}': {}", tmp, std::strerror(e));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        return make_error(ErrorCode::kIo, "cannot rename '{}' to '{}': {}", tmp, path,
                          std::strerror(e));
    }
    return {};
}

}  // namespace lazyllm
