// GGUF v2/v3 reader (mmapped, every extent validated) and writer (used by tests and tools
// to build tiny models). Spec: github.com/ggml-org/ggml/blob/master/docs/gguf.md
// No model knowledge lives here.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lazyllm/ggml_type.h"
#include "lazyllm/result.h"

namespace lazyllm {

// Metadata value types, numbered as in the spec.
enum class GgufValueType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
    BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType t);

// One metadata value. Scalars are widened on read (integers to int64/uint64 by signedness,
// floats to double) but keep their declared type in `type`. Arrays hold their element type.
struct GgufValue {
    GgufValueType type = GgufValueType::UINT8;
    GgufValueType elem_type = GgufValueType::UINT8;  // for ARRAY
    std::variant<uint64_t, int64_t, double, bool, std::string,
                 std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>,
                 std::vector<bool>, std::vector<std::string>>
        data;

    // Typed accessors; each fails with an error naming the expected and actual type.
    Result<uint64_t> as_uint() const;    // any unsigned or non-negative signed integer
    Result<int64_t> as_int() const;      // any integer that fits int64
    Result<double> as_float() const;     // float32/float64 (and integers)
    Result<bool> as_bool() const;
    Result<std::string> as_string() const;
    Result<std::vector<std::string>> as_string_array() const;
    Result<std::vector<double>> as_float_array() const;   // float or integer arrays
    Result<std::vector<int64_t>> as_int_array() const;    // integer arrays
    size_t array_size() const;                             // 0 for non-arrays
    std::string to_display(size_t max_items = 8) const;   // for `lazyllm info`
};

struct GgufTensorInfo {
    std::string name;
    GgmlType type = GgmlType::F32;
    std::vector<int64_t> shape;  // ne[0] is the contiguous (innermost) dimension
    uint64_t offset = 0;         // relative to the data section
    uint64_t n_elements() const;
    uint64_t n_bytes() const;    // validated at load
};

class GgufFile {
public:
    // Opens and validates: header, metadata, tensor directory, alignment, and that every
    // tensor's bytes lie inside the file. Errors name the key / tensor / offset at fault.
    static Result<GgufFile> open(const std::string& path);
    // Same, over bytes in memory (tests, fuzzing). The buffer must outlive the object.
    static Result<GgufFile> from_memory(const uint8_t* data, size_t size, std::string name);

    GgufFile();
    GgufFile(GgufFile&&) noexcept;
    GgufFile& operator=(GgufFile&&) noexcept;
    ~GgufFile();

    const std::string& path() const;
    uint32_t version() const;
    uint64_t alignment() const;
    uint64_t file_size() const;
    uint64_t data_offset() const;  // start of the tensor data section in the file

    // Metadata in file order.
    const std::vector<std::pair<std::string, GgufValue>>& metadata() const;
    const GgufValue* find(std::string_view key) const;
    // Frees the ARRAY values of the keys that start with `prefix` once their readers have
    // copied them (the tokenizer's token, score, type and merge lists: tens of MB on a 128k
    // vocabulary); find() and metadata() no longer see those keys.
    void drop_array_metadata(std::string_view prefix);
    // Convenience: error "missing key 'llama.block_count'" when absent.
    Result<uint64_t> get_uint(std::string_view key) const;
    Result<double> get_float(std::string_view key) const;
    Result<std::string> get_string(std::string_view key) const;

    const std::vector<GgufTensorInfo>& tensors() const;
    const GgufTensorInfo* find_tensor(std::string_view name) const;
    // Pointer to a tensor's bytes inside the mapping (valid while this object lives).
    const uint8_t* tensor_data(const GgufTensorInfo& t) const;
    // Lets the pages of a tensor's bytes leave memory once they have been converted (mapped
    // files only; MmapFile::release). tensor_data stays valid: a later read faults them back.
    void release_tensor_pages(const GgufTensorInfo& t) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The file's quantization as llama.cpp names it ("Q4_K - Medium", what llama-bench's model type
// ends with): general.file_type where the file sets it; else the type of 2-D tensors holding
// the most elements, marked " (guessed)" as llama.cpp marks a type it had to guess.
std::string gguf_file_type_name(const GgufFile& f);

// Builds GGUF v3 files. Tensors are written in insertion order, aligned to `alignment`.
class GgufWriter {
public:
    explicit GgufWriter(uint64_t alignment = 32);
    void set_uint32(const std::string& key, uint32_t v);
    void set_int32(const std::string& key, int32_t v);
    void set_uint64(const std::string& key, uint64_t v);
    void set_float32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_string(const std::string& key, const std::string& v);
    void set_string_array(const std::string& key, const std::vector<std::string>& v);
    void set_float32_array(const std::string& key, const std::vector<float>& v);
    void set_int32_array(const std::string& key, const std::vector<int32_t>& v);
    // `data` must hold exactly the bytes of `type` for `shape` (ne[0] innermost).
    void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> shape,
                    std::vector<uint8_t> data);
    std::vector<uint8_t> to_bytes() const;
    Status write(const std::string& path) const;

private:
    struct Entry;
    uint64_t alignment_;
    std::vector<std::pair<std::string, std::vector<uint8_t>>> kv_;  // key, encoded type+value
    struct TensorEntry {
        std::string name;
        GgmlType type;
        std::vector<int64_t> shape;
        std::vector<uint8_t> data;
    };
    std::vector<TensorEntry> tensors_;
};

}  // namespace lazyllm
