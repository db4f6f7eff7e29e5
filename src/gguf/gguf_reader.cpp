// GGUF v2/v3 reader. Layout (ggml's docs/gguf.md, gguf_format.h): header {magic "GGUF", uint32
// version, uint64 tensor_count, uint64 kv_count}, kv_count metadata entries, tensor_count tensor
// infos, padding to general.alignment, then the tensor data section. v1 (32-bit counts) is
// rejected; v2 and v3 are identical for little-endian files. Nested arrays (ARRAY of ARRAY) are
// rejected, as llama.cpp's gguf.cpp does.
//
// Hostile input: every count, length, offset and extent is checked against the bytes left
// before anything is allocated or touched, with checked arithmetic, so a truncated or crafted
// file fails with an Error naming the key / tensor / offset at fault.
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <unordered_map>
#include <utility>

#include "base/mmap_file.h"
#include "gguf/byte_cursor.h"
#include "gguf/gguf_format.h"
#include "lazyllm/gguf.h"

namespace lazyllm {

using gguf::ByteCursor;

namespace {

// Everything the reader learns about a file (GgufFile::Impl is private to GgufFile, so the
// parse helpers work on this base).
struct FileState {
    std::string path;
    MmapFile map;  // empty for from_memory
    const uint8_t* data = nullptr;
    uint64_t size = 0;
    uint32_t version = 0;
    uint64_t alignment = gguf::kDefaultAlignment;
    uint64_t data_offset = 0;
    std::vector<std::pair<std::string, GgufValue>> metadata;
    std::vector<GgufTensorInfo> tensors;
    // Keys are views into the file bytes, which outlive the maps (mmap or caller's buffer).
    std::unordered_map<std::string_view, size_t> key_index;
    std::unordered_map<std::string_view, size_t> tensor_index;
};

}  // namespace

struct GgufFile::Impl : FileState {};

namespace {

// Smallest encodings, used to reject counts that cannot fit in the bytes left.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // empty key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, n_dims 1, type, offset

bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
    return !__builtin_mul_overflow(a, b, out);
}
bool checked_add(uint64_t a, uint64_t b, uint64_t* out) {
    return !__builtin_add_overflow(a, b, out);
}

std::string describe_magic(const uint8_t* p) {
    std::string printable;
    for (int i = 0; i < 4; ++i) {
        char c = static_cast<char>(p[i]);
        printable += (c >= 0x20 && c < 0x7F) ? c : '.';
    }
    return fmt::format("{:02x} {:02x} {:02x} {:02x} ('{}')", p[0], p[1], p[2], p[3], printable);
}

template <typename Raw, typename Stored>
std::vector<Stored> read_numbers(ByteCursor& c, uint64_t n) {
    std::vector<Stored> v;
    v.reserve(n);
    for (uint64_t i = 0; i < n; ++i) v.push_back(static_cast<Stored>(c.read_unchecked<Raw>()));
    return v;
}

Result<bool> read_bool(ByteCursor& c) {
    uint64_t at = c.pos();
    uint8_t b = c.read_unchecked<uint8_t>();
    if (b > 1) {
        return make_error(ErrorCode::kCorrupt, "BOOL at offset {} has value {} (expected 0 or 1)",
                          at, b);
    }
    return b == 1;
}

// Scalar value of a known scalar type; the caller has checked that its bytes are there.
Result<GgufValue> read_scalar(ByteCursor& c, GgufValueType type) {
    GgufValue v;
    v.type = type;
    switch (type) {
        case GgufValueType::UINT8:
            v.data = uint64_t{c.read_unchecked<uint8_t>()};
            break;
        case GgufValueType::INT8:
            v.data = int64_t{c.read_unchecked<int8_t>()};
            break;
        case GgufValueType::UINT16:
            v.data = uint64_t{c.read_unchecked<uint16_t>()};
            break;
        case GgufValueType::INT16:
            v.data = int64_t{c.read_unchecked<int16_t>()};
            break;
        case GgufValueType::UINT32:
            v.data = uint64_t{c.read_unchecked<uint32_t>()};
            break;
        case GgufValueType::INT32:
            v.data = int64_t{c.read_unchecked<int32_t>()};
            break;
        case GgufValueType::UINT64:
            v.data = c.read_unchecked<uint64_t>();
            break;
        case GgufValueType::INT64:
            v.data = c.read_unchecked<int64_t>();
            break;
        case GgufValueType::FLOAT32:
            v.data = double{c.read_unchecked<float>()};
            break;
        case GgufValueType::FLOAT64:
            v.data = c.read_unchecked<double>();
            break;
        case GgufValueType::BOOL: {
            LAZYLLM_ASSIGN_OR_RETURN(bool b, read_bool(c));
            v.data = b;
            break;
        }
        case GgufValueType::STRING:
        case GgufValueType::ARRAY:
            return make_error(ErrorCode::kInternal, "read_scalar called for a non-scalar type");
    }
    return v;
}

Result<GgufValue> read_array(ByteCursor& c) {
    LAZYLLM_ASSIGN_OR_RETURN(uint32_t elem_raw, c.read<uint32_t>("array element type"));
    if (elem_raw == static_cast<uint32_t>(GgufValueType::ARRAY)) {
        return make_error(ErrorCode::kUnsupported,
                          "nested arrays (ARRAY of ARRAY, at offset {}) are not supported",
                          c.pos() - 4);
    }
    if (elem_raw > gguf::kMaxValueType) {
        return make_error(ErrorCode::kCorrupt, "unknown array element type {} at offset {}",
                          elem_raw, c.pos() - 4);
    }
    auto elem = static_cast<GgufValueType>(elem_raw);
    uint64_t count_at = c.pos();
    LAZYLLM_ASSIGN_OR_RETURN(uint64_t count, c.read<uint64_t>("array length"));
    // Each element takes at least this many bytes: reject impossible counts before reserving.
    uint64_t min_elem = elem == GgufValueType::STRING ? 8 : gguf::scalar_value_size(elem);
    if (count > c.remaining() / min_elem) {
        return make_error(ErrorCode::kCorrupt,
                          "array length {} at offset {} is impossible: {} elements of {} "
                          "bytes or more, but only {} bytes are left",
                          count, count_at, gguf_value_type_name(elem), min_elem, c.remaining());
    }
    // Elements are held widened (8 bytes a number, 32 or more a string): a sparse file of a few
    // KiB can claim a 512 MiB array. The largest real ones (vocabularies, merges) hold well
    // under a million.
    constexpr uint64_t kMaxArrayElements = uint64_t{1} << 24;
    if (count > kMaxArrayElements) {
        return make_error(ErrorCode::kCorrupt,
                          "array length {} at offset {} is beyond any model's metadata (at most "
                          "{} elements)",
                          count, count_at, kMaxArrayElements);
    }
    GgufValue v;
    v.type = GgufValueType::ARRAY;
    v.elem_type = elem;
    switch (elem) {
        case GgufValueType::UINT8:
            v.data = read_numbers<uint8_t, uint64_t>(c, count);
            break;
        case GgufValueType::INT8:
            v.data = read_numbers<int8_t, int64_t>(c, count);
            break;
        case GgufValueType::UINT16:
            v.data = read_numbers<uint16_t, uint64_t>(c, count);
            break;
        case GgufValueType::INT16:
            v.data = read_numbers<int16_t, int64_t>(c, count);
            break;
        case GgufValueType::UINT32:
            v.data = read_numbers<uint32_t, uint64_t>(c, count);
            break;
        case GgufValueType::INT32:
            v.data = read_numbers<int32_t, int64_t>(c, count);
            break;
        case GgufValueType::UINT64:
            v.data = read_numbers<uint64_t, uint64_t>(c, count);
            break;
        case GgufValueType::INT64:
            v.data = read_numbers<int64_t, int64_t>(c, count);
            break;
        case GgufValueType::FLOAT32:
            v.data = read_numbers<float, double>(c, count);
            break;
        case GgufValueType::FLOAT64:
            v.data = read_numbers<double, double>(c, count);
            break;
        case GgufValueType::BOOL: {
            std::vector<bool> bools;
            bools.reserve(count);
            for (uint64_t i = 0; i < count; ++i) {
                LAZYLLM_ASSIGN_OR_RETURN(bool b, read_bool(c));
                bools.push_back(b);
            }
            v.data = std::move(bools);
            break;
        }
        case GgufValueType::STRING: {
            std::vector<std::string> strings;
            strings.reserve(count);
            for (uint64_t i = 0; i < count; ++i) {
                auto s = c.read_string("string");
                if (!s.ok()) return s.error().with_context(fmt::format("array element {}", i));
                strings.emplace_back(*s);
            }
            v.data = std::move(strings);
            break;
        }
        case GgufValueType::ARRAY:
            break;  // rejected above
    }
    return v;
}

Result<GgufValue> read_value(ByteCursor& c, uint32_t type_raw, uint64_t type_at) {
    if (type_raw > gguf::kMaxValueType) {
        return make_error(ErrorCode::kCorrupt, "unknown value type {} at offset {}", type_raw,
                          type_at);
    }
    auto type = static_cast<GgufValueType>(type_raw);
    if (type == GgufValueType::ARRAY) return read_array(c);
    if (type == GgufValueType::STRING) {
        LAZYLLM_ASSIGN_OR_RETURN(std::string_view s, c.read_string("string value"));
        GgufValue v;
        v.type = type;
        v.data = std::string(s);
        return v;
    }
    LAZYLLM_TRY(c.need(gguf::scalar_value_size(type), gguf_value_type_name(type)));
    return read_scalar(c, type);
}

Status read_header(ByteCursor& c, FileState& f, uint64_t* n_tensors, uint64_t* n_kv) {
    if (c.size() < 4) {
        return make_error(ErrorCode::kCorrupt, "file is {} bytes, too small for a GGUF header",
                          c.size());
    }
    const uint8_t* magic_bytes = f.data;
    uint32_t magic = c.read_unchecked<uint32_t>();
    if (magic != gguf::kMagic) {
        return make_error(ErrorCode::kCorrupt,
                          "not a GGUF file: magic at offset 0 is {}, expected 'GGUF'",
                          describe_magic(magic_bytes));
    }
    LAZYLLM_ASSIGN_OR_RETURN(f.version, c.read<uint32_t>("version"));
    if (f.version == 1) {
        return make_error(ErrorCode::kUnsupported,
                          "GGUF version 1 is not supported (it used 32-bit counts); re-convert "
                          "the model with a current llama.cpp");
    }
    if (f.version != 2 && f.version != 3) {
        uint32_t swapped = __builtin_bswap32(f.version);
        if (swapped >= 1 && swapped <= 3) {
            return make_error(ErrorCode::kUnsupported,
                              "big-endian GGUF files are not supported (version field {:#x})",
                              f.version);
        }
        return make_error(ErrorCode::kUnsupported,
                          "unknown GGUF version {} at offset 4 (supported: 2, 3)", f.version);
    }
    LAZYLLM_ASSIGN_OR_RETURN(*n_tensors, c.read<uint64_t>("tensor count"));
    LAZYLLM_ASSIGN_OR_RETURN(*n_kv, c.read<uint64_t>("metadata count"));
    if (*n_kv > c.remaining() / kMinKvBytes) {
        return make_error(ErrorCode::kCorrupt,
                          "metadata count {} at offset 16 is impossible: each entry takes at "
                          "least {} bytes and only {} bytes follow the header",
                          *n_kv, kMinKvBytes, c.remaining());
    }
    if (*n_tensors > c.remaining() / kMinTensorInfoBytes) {
        return make_error(ErrorCode::kCorrupt,
                          "tensor count {} at offset 8 is impossible: each tensor info takes at "
                          "least {} bytes and only {} bytes follow the header",
                          *n_tensors, kMinTensorInfoBytes, c.remaining());
    }
    return {};
}

Status read_metadata(ByteCursor& c, FileState& f, uint64_t n_kv) {
    for (uint64_t i = 0; i < n_kv; ++i) {
        uint64_t entry_at = c.pos();
        auto key = c.read_string("key");
        if (!key.ok()) {
            return key.error().with_context(fmt::format("metadata entry #{}", i));
        }
        uint64_t type_at = c.pos();
        auto type_raw = c.read<uint32_t>("value type");
        Result<GgufValue> value =
            type_raw.ok() ? read_value(c, *type_raw, type_at) : Result<GgufValue>(type_raw.error());
        if (!value.ok()) {
            return value.error().with_context(fmt::format("metadata key '{}'", *key));
        }
        auto [it, inserted] = f.key_index.emplace(*key, f.metadata.size());
        if (!inserted) {
            return make_error(ErrorCode::kCorrupt,
                              "duplicate metadata key '{}' (entries #{} and #{}, offset {})", *key,
                              it->second, i, entry_at);
        }
        f.metadata.emplace_back(std::string(*key), std::move(*value));
    }
    return {};
}

Status read_alignment(FileState& f) {
    auto it = f.key_index.find(gguf::kAlignmentKey);
    if (it == f.key_index.end()) return {};
    const GgufValue& v = f.metadata[it->second].second;
    auto a = v.as_uint();
    if (!a.ok()) return a.error().with_context(fmt::format("key '{}'", gguf::kAlignmentKey));
    if (*a == 0 || !std::has_single_bit(*a) || *a > (uint64_t{1} << 31)) {
        return make_error(ErrorCode::kCorrupt,
                          "key '{}' is {}: it must be a non-zero power of two (at most 2^31)",
                          gguf::kAlignmentKey, *a);
    }
    f.alignment = *a;
    return {};
}

// `raw_name` receives the view of the name inside the file bytes (stable, for the index).
Result<GgufTensorInfo> read_tensor_info(ByteCursor& c, uint64_t index, std::string_view* raw_name) {
    GgufTensorInfo t;
    auto name = c.read_string("name");
    if (!name.ok()) return name.error().with_context(fmt::format("tensor #{}", index));
    *raw_name = *name;
    t.name = std::string(*name);
    auto ctx = [&](const Error& e) { return e.with_context(fmt::format("tensor '{}'", t.name)); };

    auto n_dims = c.read<uint32_t>("n_dims");
    if (!n_dims.ok()) return ctx(n_dims.error());
    if (*n_dims == 0 || *n_dims > gguf::kMaxDims) {
        return make_error(ErrorCode::kCorrupt,
                          "tensor '{}' has n_dims {} at offset {} "
                          "(expected 1..{})",
                          t.name, *n_dims, c.pos() - 4, gguf::kMaxDims);
    }
    for (uint32_t d = 0; d < *n_dims; ++d) {
        auto ne = c.read<uint64_t>("dimension");
        if (!ne.ok()) return ctx(ne.error());
        if (*ne == 0 || *ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return make_error(ErrorCode::kCorrupt,
                              "tensor '{}' has ne[{}] = {} at offset {} (must be positive and "
                              "fit int64)",
                              t.name, d, *ne, c.pos() - 8);
        }
        t.shape.push_back(static_cast<int64_t>(*ne));
    }
    auto type = c.read<uint32_t>("type");
    if (!type.ok()) return ctx(type.error());
    if (!ggml_type_traits(*type)) {
        std::string_view known = gguf::unsupported_ggml_type_name(*type);
        if (!known.empty()) {
            return make_error(ErrorCode::kUnsupported,
                              "tensor '{}' has ggml type {} ({}), which lazyllm does not support",
                              t.name, *type, known);
        }
        return make_error(ErrorCode::kUnsupported, "tensor '{}' has unknown ggml type {}", t.name,
                          *type);
    }
    t.type = static_cast<GgmlType>(*type);
    auto offset = c.read<uint64_t>("offset");
    if (!offset.ok()) return ctx(offset.error());
    t.offset = *offset;
    return t;
}

// Sizes and extents, once the data section start is known.
Status check_tensor_extent(const FileState& f, const GgufTensorInfo& t) {
    auto traits = *ggml_type_traits(static_cast<uint32_t>(t.type));
    auto bs = static_cast<uint64_t>(traits.block_size);
    if (static_cast<uint64_t>(t.shape[0]) % bs != 0) {
        return make_error(ErrorCode::kCorrupt,
                          "tensor '{}' ({}): ne[0] = {} is not a multiple of the block size {}",
                          t.name, traits.name, t.shape[0], bs);
    }
    uint64_t n_el = 1;
    for (int64_t d : t.shape) {
        if (!checked_mul(n_el, static_cast<uint64_t>(d), &n_el) ||
            n_el > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return make_error(ErrorCode::kCorrupt,
                              "tensor '{}': element count of shape [{}] "
                              "overflows int64",
                              t.name, fmt::join(t.shape, ", "));
        }
    }
    uint64_t n_bytes = 0;
    uint64_t start = 0;
    uint64_t end = 0;
    if (!checked_mul(n_el / bs, traits.type_size, &n_bytes)) {
        return make_error(ErrorCode::kCorrupt, "tensor '{}': byte size of shape [{}] overflows",
                          t.name, fmt::join(t.shape, ", "));
    }
    if (t.offset % f.alignment != 0) {
        return make_error(ErrorCode::kCorrupt,
                          "tensor '{}': data offset {} is not a multiple of the alignment {}",
                          t.name, t.offset, f.alignment);
    }
    if (!checked_add(f.data_offset, t.offset, &start) || !checked_add(start, n_bytes, &end) ||
        end > f.size) {
        return make_error(ErrorCode::kCorrupt,
                          "tensor '{}': {} bytes at data offset {} (file offset {}) extend past "
                          "the end of the file ({} bytes)",
                          t.name, n_bytes, t.offset, f.data_offset + t.offset, f.size);
    }
    return {};
}

Status check_no_overlap(const std::vector<GgufTensorInfo>& tensors) {
    std::vector<const GgufTensorInfo*> by_offset;
    by_offset.reserve(tensors.size());
    for (const auto& t : tensors) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const auto* a, const auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const GgufTensorInfo& prev = *by_offset[i - 1];
        const GgufTensorInfo& cur = *by_offset[i];
        if (prev.offset + prev.n_bytes() > cur.offset) {
            return make_error(ErrorCode::kCorrupt,
                              "tensors '{}' (data offset {}, {} bytes) and '{}' (data offset {}) "
                              "overlap",
                              prev.name, prev.offset, prev.n_bytes(), cur.name, cur.offset);
        }
    }
    return {};
}

Status parse(FileState& f) {
    ByteCursor c(f.data, f.size);
    uint64_t n_tensors = 0;
    uint64_t n_kv = 0;
    LAZYLLM_TRY(read_header(c, f, &n_tensors, &n_kv));
    LAZYLLM_TRY(read_metadata(c, f, n_kv));
    LAZYLLM_TRY(read_alignment(f));
    if (n_tensors > c.remaining() / kMinTensorInfoBytes) {
        return make_error(ErrorCode::kCorrupt,
                          "tensor count {} is impossible: each tensor info takes at least {} "
                          "bytes and only {} bytes follow the metadata (offset {})",
                          n_tensors, kMinTensorInfoBytes, c.remaining(), c.pos());
    }
    for (uint64_t i = 0; i < n_tensors; ++i) {
        std::string_view raw_name;
        LAZYLLM_ASSIGN_OR_RETURN(GgufTensorInfo t, read_tensor_info(c, i, &raw_name));
        auto [it, inserted] = f.tensor_index.emplace(raw_name, f.tensors.size());
        if (!inserted) {
            return make_error(ErrorCode::kCorrupt,
                              "duplicate tensor name '{}' (tensors #{} "
                              "and #{})",
                              t.name, it->second, i);
        }
        f.tensors.push_back(std::move(t));
    }

    // Data section: after the tensor infos, padded to the alignment (ggml's gguf.md).
    uint64_t pad = (f.alignment - c.pos() % f.alignment) % f.alignment;
    f.data_offset = c.pos() + pad;
    for (const auto& t : f.tensors) LAZYLLM_TRY(check_tensor_extent(f, t));
    return check_no_overlap(f.tensors);
}

}  // namespace

Result<GgufFile> GgufFile::open(const std::string& path) {
    auto map = MmapFile::open(path);
    if (!map.ok()) return map.error();
    GgufFile file;
    Impl& f = *file.impl_;
    f.path = path;
    f.map = std::move(*map);
    f.data = f.map.data();
    f.size = f.map.size();
    Status s = parse(f);
    if (!s.ok()) return s.error().with_context(fmt::format("'{}'", path));
    return file;
}

Result<GgufFile> GgufFile::from_memory(const uint8_t* data, size_t size, std::string name) {
    GgufFile file;
    Impl& f = *file.impl_;
    f.path = std::move(name);
    f.data = data;
    f.size = data ? size : 0;
    Status s = parse(f);
    if (!s.ok()) return s.error().with_context(fmt::format("'{}'", f.path));
    return file;
}

GgufFile::GgufFile() : impl_(std::make_unique<Impl>()) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

const std::string& GgufFile::path() const { return impl_->path; }
uint32_t GgufFile::version() const { return impl_->version; }
uint64_t GgufFile::alignment() const { return impl_->alignment; }
uint64_t GgufFile::file_size() const { return impl_->size; }
uint64_t GgufFile::data_offset() const { return impl_->data_offset; }

const std::vector<std::pair<std::string, GgufValue>>& GgufFile::metadata() const {
    return impl_->metadata;
}

void GgufFile::drop_array_metadata(std::string_view prefix) {
    auto& md = impl_->metadata;
    auto& index = impl_->key_index;
    std::erase_if(md, [&](const std::pair<std::string, GgufValue>& kv) {
        const bool drop = kv.first.starts_with(prefix) && kv.second.type == GgufValueType::ARRAY;
        if (drop) index.erase(std::string_view(kv.first));
        return drop;
    });
    // The index's keys are views into the file's bytes, still valid; only positions moved.
    for (size_t i = 0; i < md.size(); ++i) index.find(std::string_view(md[i].first))->second = i;
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = impl_->key_index.find(key);
    return it == impl_->key_index.end() ? nullptr : &impl_->metadata[it->second].second;
}

namespace {
Error missing_key(std::string_view key) {
    return make_error(ErrorCode::kNotFound, "missing key '{}'", key);
}
}  // namespace

Result<uint64_t> GgufFile::get_uint(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return missing_key(key);
    auto r = v->as_uint();
    if (!r.ok()) return r.error().with_context(fmt::format("key '{}'", key));
    return r;
}

Result<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return missing_key(key);
    auto r = v->as_float();
    if (!r.ok()) return r.error().with_context(fmt::format("key '{}'", key));
    return r;
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return missing_key(key);
    auto r = v->as_string();
    if (!r.ok()) return r.error().with_context(fmt::format("key '{}'", key));
    return r;
}

const std::vector<GgufTensorInfo>& GgufFile::tensors() const { return impl_->tensors; }

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    auto it = impl_->tensor_index.find(name);
    return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

const uint8_t* GgufFile::tensor_data(const GgufTensorInfo& t) const {
    return impl_->data + impl_->data_offset + t.offset;
}

void GgufFile::release_tensor_pages(const GgufTensorInfo& t) const {
    impl_->map.release(impl_->data_offset + t.offset, t.n_bytes());
}

}  // namespace lazyllm
