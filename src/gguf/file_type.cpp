// general.file_type's names, llama.cpp's (llama_ftype_name in src/llama-model-loader.cpp, tag
// b11434), so that `bench` describes a model as llama-bench does.
#include <cstdint>
#include <map>
#include <string>

#include "lazyllm/gguf.h"

namespace lazyllm {
namespace {

struct FileType {
    uint32_t id;  // llama_ftype
    const char* name;
};

constexpr FileType kFileTypes[] = {
    {0, "all F32"},
    {1, "F16"},
    {2, "Q4_0"},
    {3, "Q4_1"},
    {7, "Q8_0"},
    {8, "Q5_0"},
    {9, "Q5_1"},
    {10, "Q2_K - Medium"},
    {11, "Q3_K - Small"},
    {12, "Q3_K - Medium"},
    {13, "Q3_K - Large"},
    {14, "Q4_K - Small"},
    {15, "Q4_K - Medium"},
    {16, "Q5_K - Small"},
    {17, "Q5_K - Medium"},
    {18, "Q6_K"},
    {19, "IQ2_XXS - 2.0625 bpw"},
    {20, "IQ2_XS - 2.3125 bpw"},
    {21, "Q2_K - Small"},
    {22, "IQ3_XS - 3.3 bpw"},
    {23, "IQ3_XXS - 3.0625 bpw"},
    {24, "IQ1_S - 1.5625 bpw"},
    {25, "IQ4_NL - 4.5 bpw"},
    {26, "IQ3_S - 3.4375 bpw"},
    {27, "IQ3_S mix - 3.66 bpw"},
    {28, "IQ2_S - 2.5 bpw"},
    {29, "IQ2_M - 2.7 bpw"},
    {30, "IQ4_XS - 4.25 bpw"},
    {31, "IQ1_M - 1.75 bpw"},
    {32, "BF16"},
    {36, "TQ1_0 - 1.69 bpw ternary"},
    {37, "TQ2_0 - 2.06 bpw ternary"},
    {38, "MXFP4 MoE"},
    {39, "NVFP4"},
    {40, "Q1_0"},
    {41, "Q2_0"},
};

constexpr uint32_t kGuessed = 1024;  // LLAMA_FTYPE_GUESSED

}  // namespace

std::string gguf_file_type_name(const GgufFile& f) {
    if (f.find("general.file_type") != nullptr) {
        auto id = f.get_uint("general.file_type");
        if (id.ok()) {
            const uint64_t bare = *id & ~uint64_t{kGuessed};
            const std::string guessed = (*id & kGuessed) ? " (guessed)" : "";
            for (const FileType& t : kFileTypes) {
                if (t.id == bare) return t.name + guessed;
            }
            return "file type " + std::to_string(*id);
        }
    }
    std::map<std::string, uint64_t> elements_by_type;
    for (const GgufTensorInfo& t : f.tensors()) {
        if (t.shape.size() >= 2)
            elements_by_type[std::string(ggml_type_name(t.type))] += t.n_elements();
    }
    std::string most = "?";
    uint64_t n_most = 0;
    for (const auto& [type, n] : elements_by_type) {
        if (n > n_most) {
            n_most = n;
            most = type;
        }
    }
    return most + " (guessed)";
}

}  // namespace lazyllm
