// build_tiny_model output: parses, has llama.cpp's keys, tensors and shapes, a consistent
// byte-level BPE vocabulary, and is deterministic.
#include "support/tiny_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "lazyllm/gguf.h"

namespace lazyllm {
namespace {

using testing::build_tiny_model;
using testing::TinyModelSpec;

struct Parsed {
    std::vector<uint8_t> bytes;
    GgufFile file;
};

Parsed parse(const TinyModelSpec& spec) {
    Parsed p;
    p.bytes = build_tiny_model(spec);
    auto f = GgufFile::from_memory(p.bytes.data(), p.bytes.size(), "tiny.gguf");
    EXPECT_TRUE(f.ok()) << f.error().message();
    if (f.ok()) p.file = std::move(*f);
    return p;
}

void expect_tensor(const GgufFile& f, const std::string& name, GgmlType type,
                   std::vector<int64_t> shape) {
    const GgufTensorInfo* t = f.find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, type) << name;
    EXPECT_EQ(t->shape, shape) << name;
}

float f16_to_f32(uint16_t h) {
    uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    float v = exp == 0 ? std::ldexp(static_cast<float>(mant), -24)
                       : std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
    return sign ? -v : v;
}

std::vector<float> read_f32(const GgufFile& f, const std::string& name) {
    const GgufTensorInfo* t = f.find_tensor(name);
    std::vector<float> out(t->n_elements());
    std::memcpy(out.data(), f.tensor_data(*t), out.size() * 4);
    return out;
}

void check_model(const TinyModelSpec& spec) {
    Parsed p = parse(spec);
    const GgufFile& f = p.file;
    const std::string a = spec.arch;
    const int64_t e = spec.n_embd, kv = spec.n_head_kv * (spec.n_embd / spec.n_head);
    EXPECT_EQ(*f.get_string("general.architecture"), a);
    EXPECT_TRUE(f.get_string("general.name").ok());
    EXPECT_EQ(*f.get_uint(a + ".block_count"), static_cast<uint64_t>(spec.n_layer));
    EXPECT_EQ(*f.get_uint(a + ".context_length"), static_cast<uint64_t>(spec.n_ctx));
    EXPECT_EQ(*f.get_uint(a + ".embedding_length"), static_cast<uint64_t>(e));
    EXPECT_EQ(*f.get_uint(a + ".feed_forward_length"), static_cast<uint64_t>(spec.n_ff));
    EXPECT_EQ(*f.get_uint(a + ".attention.head_count"), static_cast<uint64_t>(spec.n_head));
    EXPECT_EQ(*f.get_uint(a + ".attention.head_count_kv"), static_cast<uint64_t>(spec.n_head_kv));
    EXPECT_EQ(static_cast<float>(*f.get_float(a + ".rope.freq_base")), spec.rope_theta);
    EXPECT_EQ(static_cast<float>(*f.get_float(a + ".attention.layer_norm_rms_epsilon")),
              spec.rms_eps);
    EXPECT_EQ(*f.get_uint(a + ".vocab_size"), static_cast<uint64_t>(spec.n_vocab));
    EXPECT_EQ(*f.get_uint("general.alignment"), 32u);
    EXPECT_EQ(f.find("general.alignment")->type, GgufValueType::UINT32);
    EXPECT_EQ(f.find(a + ".block_count")->type, GgufValueType::UINT32);
    EXPECT_EQ(f.find(a + ".rope.freq_base")->type, GgufValueType::FLOAT32);

    const GgmlType wt = spec.weight_type;
    expect_tensor(f, "token_embd.weight", wt, {e, spec.n_vocab});
    for (int il = 0; il < spec.n_layer; ++il) {
        std::string p = "blk." + std::to_string(il) + ".";
        expect_tensor(f, p + "attn_norm.weight", GgmlType::F32, {e});
        expect_tensor(f, p + "attn_q.weight", wt, {e, e});
        expect_tensor(f, p + "attn_k.weight", wt, {e, kv});
        expect_tensor(f, p + "attn_v.weight", wt, {e, kv});
        expect_tensor(f, p + "attn_output.weight", wt, {e, e});
        expect_tensor(f, p + "ffn_norm.weight", GgmlType::F32, {e});
        expect_tensor(f, p + "ffn_gate.weight", wt, {e, spec.n_ff});
        expect_tensor(f, p + "ffn_up.weight", wt, {e, spec.n_ff});
        expect_tensor(f, p + "ffn_down.weight", wt, {spec.n_ff, e});
        if (a == "qwen2") {
            expect_tensor(f, p + "attn_q.bias", GgmlType::F32, {e});
            expect_tensor(f, p + "attn_k.bias", GgmlType::F32, {kv});
            expect_tensor(f, p + "attn_v.bias", GgmlType::F32, {kv});
        } else {
            EXPECT_EQ(f.find_tensor(p + "attn_q.bias"), nullptr);
        }
        for (float x : read_f32(f, p + "attn_norm.weight")) {
            EXPECT_GT(x, 0.9f);
            EXPECT_LT(x, 1.1f);
        }
    }
    expect_tensor(f, "output_norm.weight", GgmlType::F32, {e});
    if (spec.tied_embeddings) {
        EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
    } else {
        expect_tensor(f, "output.weight", wt, {e, spec.n_vocab});
    }
    size_t expected_count = 3 + static_cast<size_t>(spec.n_layer) * (a == "qwen2" ? 12 : 9) -
                            (spec.tied_embeddings ? 1 : 0);
    EXPECT_EQ(f.tensors().size(), expected_count);
}

TEST(GgufTinyModel, LlamaUntied) { check_model(TinyModelSpec{}); }

TEST(GgufTinyModel, LlamaTied) {
    TinyModelSpec spec;
    spec.tied_embeddings = true;
    spec.n_layer = 3;
    check_model(spec);
}

TEST(GgufTinyModel, Qwen2Untied) {
    TinyModelSpec spec;
    spec.arch = "qwen2";
    spec.n_head = 8;
    spec.n_head_kv = 4;
    check_model(spec);
}

TEST(GgufTinyModel, Qwen2Tied) {
    TinyModelSpec spec;
    spec.arch = "qwen2";
    spec.tied_embeddings = true;
    check_model(spec);
}

TEST(GgufTinyModel, HalfPrecisionWeights) {
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16}) {
        TinyModelSpec spec;
        spec.weight_type = t;
        check_model(spec);
    }
}

TEST(GgufTinyModel, F16AndBf16EncodeTheSameValuesAsF32) {
    // 1e-6 puts the f16 values in the subnormal range (below 2^-14).
    for (float scale : {0.08f, 1e-6f}) {
        SCOPED_TRACE(scale);
        TinyModelSpec spec;
        spec.weight_scale = scale;
        Parsed f32 = parse(spec);
        spec.weight_type = GgmlType::F16;
        Parsed f16 = parse(spec);
        spec.weight_type = GgmlType::BF16;
        Parsed bf16 = parse(spec);
        const std::string name = "blk.1.ffn_down.weight";
        std::vector<float> ref = read_f32(f32.file, name);
        const GgufTensorInfo* th = f16.file.find_tensor(name);
        const GgufTensorInfo* tb = bf16.file.find_tensor(name);
        ASSERT_EQ(th->n_elements(), ref.size());
        double max_abs = 0;
        for (size_t i = 0; i < ref.size(); ++i) {
            uint16_t h, b;
            std::memcpy(&h, f16.file.tensor_data(*th) + 2 * i, 2);
            std::memcpy(&b, bf16.file.tensor_data(*tb) + 2 * i, 2);
            uint32_t bits = static_cast<uint32_t>(b) << 16;
            float bf;
            std::memcpy(&bf, &bits, 4);
            // Round to nearest: half an ulp (2^-11 relative for f16 normals, 2^-25 absolute
            // for f16 subnormals, 2^-8 relative for bf16).
            EXPECT_LE(std::fabs(f16_to_f32(h) - ref[i]), std::fabs(ref[i]) * 0x1p-11f + 0x1p-25f);
            EXPECT_LE(std::fabs(bf - ref[i]), std::fabs(ref[i]) * 0x1p-8f);
            max_abs = std::max(max_abs, std::fabs(static_cast<double>(ref[i])));
        }
        EXPECT_LE(max_abs, scale);
        EXPECT_GT(max_abs, scale * 0.9);
    }
}

TEST(GgufTinyModel, QuantizedWeights) {
    // Needs tests/support/quantize_ref.cpp. K-quants need ne[0] % 256 == 0 on every weight.
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::IQ4_NL}) {
        TinyModelSpec spec;
        spec.weight_type = t;
        check_model(spec);
    }
    TinyModelSpec k;
    k.n_embd = 256;
    k.n_ff = 512;
    k.n_layer = 1;
    for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::IQ4_XS}) {
        k.weight_type = t;
        check_model(k);
    }
}

TEST(GgufTinyModel, DeterministicFromSeed) {
    TinyModelSpec spec;
    EXPECT_EQ(build_tiny_model(spec), build_tiny_model(spec));
    TinyModelSpec other = spec;
    other.seed = 2;
    EXPECT_NE(build_tiny_model(spec), build_tiny_model(other));
    // Tying the embeddings leaves every other tensor's values unchanged.
    TinyModelSpec tied = spec;
    tied.tied_embeddings = true;
    Parsed a = parse(spec);
    Parsed b = parse(tied);
    EXPECT_EQ(read_f32(a.file, "blk.1.attn_q.weight"), read_f32(b.file, "blk.1.attn_q.weight"));
    // Pin one value so a change in the generator is noticed (same on every standard library).
    std::vector<float> norm = read_f32(a.file, "output_norm.weight");
    EXPECT_GT(norm[0], 0.95f);
    EXPECT_LT(norm[0], 1.05f);
}

TEST(GgufTinyModel, TokenizerMetadataIsConsistent) {
    for (int n_vocab : {259, 300, 387, 1000}) {
        SCOPED_TRACE(n_vocab);
        TinyModelSpec spec;
        spec.n_vocab = n_vocab;
        Parsed p = parse(spec);
        const GgufFile& f = p.file;
        EXPECT_EQ(*f.get_string("tokenizer.ggml.model"), "gpt2");
        EXPECT_EQ(*f.get_string("tokenizer.ggml.pre"), "smollm");
        EXPECT_EQ(*f.get_uint("tokenizer.ggml.bos_token_id"), 1u);
        EXPECT_EQ(*f.get_uint("tokenizer.ggml.eos_token_id"), 2u);
        EXPECT_FALSE(*f.find("tokenizer.ggml.add_bos_token")->as_bool());
        std::string tmpl = *f.get_string("tokenizer.chat_template");
        EXPECT_NE(tmpl.find("<|im_start|>"), std::string::npos);

        auto tokens = *f.find("tokenizer.ggml.tokens")->as_string_array();
        auto types = *f.find("tokenizer.ggml.token_type")->as_int_array();
        auto merges = *f.find("tokenizer.ggml.merges")->as_string_array();
        EXPECT_EQ(f.find("tokenizer.ggml.token_type")->elem_type, GgufValueType::INT32);
        ASSERT_EQ(tokens.size(), static_cast<size_t>(n_vocab));
        ASSERT_EQ(types.size(), tokens.size());
        EXPECT_EQ(tokens[0], "<|endoftext|>");
        EXPECT_EQ(tokens[1], "<|im_start|>");
        EXPECT_EQ(tokens[2], "<|im_end|>");
        EXPECT_EQ(tokens[3], "!");  // bytes_to_unicode order starts at '!'
        EXPECT_EQ(tokens[3 + 93], "~");
        EXPECT_EQ(tokens[3 + 188], "Ā");       // byte 0x00 -> U+0100
        EXPECT_EQ(tokens[3 + 188 + 32], "Ġ");  // byte 0x20 (space) -> U+0120
        for (int i = 0; i < n_vocab; ++i) EXPECT_EQ(types[i], i < 3 ? 3 : 1) << i;
        std::map<std::string, size_t> id;
        for (size_t i = 0; i < tokens.size(); ++i) id.emplace(tokens[i], i);
        EXPECT_EQ(id.size(), tokens.size()) << "duplicate tokens";
        EXPECT_EQ(merges.size(), static_cast<size_t>(n_vocab - 259));
        for (size_t m = 0; m < merges.size(); ++m) {
            size_t sp = merges[m].find(' ');
            ASSERT_NE(sp, std::string::npos) << merges[m];
            EXPECT_EQ(merges[m].find(' ', sp + 1), std::string::npos) << merges[m];
            std::string l = merges[m].substr(0, sp), r = merges[m].substr(sp + 1);
            // Both parts exist before the merge that uses them.
            ASSERT_TRUE(id.count(l) && id.count(r)) << merges[m];
            EXPECT_LT(id[l], 259 + m) << merges[m];
            EXPECT_LT(id[r], 259 + m) << merges[m];
            EXPECT_EQ(tokens[259 + m], l + r);  // merge results follow the bytes in rank order
        }
        if (n_vocab > 260) {
            EXPECT_EQ(merges[0], "Ġ t");
        }
    }
}

TEST(GgufTinyModel, WriteTinyModelMatchesBytes) {
    TinyModelSpec spec;
    auto path = std::filesystem::temp_directory_path() /
                ("lazyllm_tiny_" + std::to_string(::getpid()) + ".gguf");
    ASSERT_TRUE(testing::write_tiny_model(spec, path.string()).ok());
    auto f = GgufFile::open(path.string());
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_EQ(f->file_size(), build_tiny_model(spec).size());
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace lazyllm
