// Tiny random-weight Llama-family GGUF models. Names and keys follow llama.cpp
// (gguf-py/gguf/constants.py: MODEL_TENSOR names, Keys.LLM / Keys.Attention / Keys.Tokenizer).
// Deterministic from spec.seed on every standard library: std::mt19937_64's output sequence is
// fixed by the standard, and the mapping to floats below is our own.
#include "support/tiny_model.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string_view>
#include <unordered_set>

#include "base/check.h"
#include "support/quantize_ref.h"

namespace lazyllm::testing {
namespace {

// The first 128 merges of SmolLM2's tokenizer (HuggingFaceTB/SmolLM2-135M-Instruct,
// Apache-2.0): every part is a byte token or the result of an earlier merge.
constexpr std::string_view kSmolMerges[] = {
    "Ġ t",  "Ġ a",       "i n",   "h e",   "Ġ Ġ",   "r e",   "o n",    "e r",    "Ġt he", "a t",
    "Ġ s",  "Ġ o",       "e n",   "Ġ c",   "e s",   "Ġ w",   "n d",    "i t",    "o r",   "i s",
    "a l",  "Ġ p",       "in g",  "Ġ f",   "a n",   "e d",   "Ġ b",    "o u",    "a r",   "Ġ in",
    "Ġo f", "Ġ m",       "Ġa nd", "i on",  "i c",   "Ġ d",   "Ġt o",   "ĠĠ ĠĠ",  "l e",   "r o",
    "a s",  "en t",      "Ġ h",   "Ġt h",  "c t",   "Ġ e",   "Ġ re",   "e l",    "o m",   "i l",
    "s t",  "Ġ l",       "Ġ n",   "e t",   "i m",   "v e",   "o l",    "at ion", "Ġ g",   "i d",
    "Ġ T",  "s e",       "Ġ is",  "u r",   "u t",   "r a",   "l y",    "c e",    "o t",   "â Ģ",
    "c h",  "o w",       "i g",   "Ġb e",  "Ġ u",   "Ġf or", "Ġs t",   "Ġ y",    "Ġ A",   "v er",
    "a m",  "ĠĠ Ġ",      "Ġ S",   "Ġ on",  "u l",   "i r",   "Ġth at", "Ġ I",    "Ġ C",   "a y",
    "i f",  "it h",      "a d",   "Ġc on", "Ġy ou", "Ġa s",  "Ġp ro",  "he r",   "o d",   "Ġw ith",
    "t er", "ĠĠĠĠ ĠĠĠĠ", "Ġa n",  "Ġo r",  "Ġw h",  "Ġ it",  "m ent",  "Ġa re",  "Ġa l",  "g e",
    "es s", "is t",      "Ġe x",  "Ġ (",   "er s",  "Ġd e",  "at e",   "a b",    "i es",  "o p",
    "Ġ M",  "t h",       "e ct",  "re s",  "u s",   "Ġ P",   "ĠT he",  "Ġc om",
};

constexpr const char* kSpecials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
constexpr int kBosId = 1;             // <|im_start|>, as SmolLM2-Instruct
constexpr int kEosId = 2;             // <|im_end|>
constexpr int32_t kTokenNormal = 1;   // llama_token_type LLAMA_TOKEN_TYPE_NORMAL
constexpr int32_t kTokenControl = 3;  // LLAMA_TOKEN_TYPE_CONTROL

// SmolLM2-Instruct's ChatML template.
constexpr const char* kChatTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

// GPT-2's bytes_to_unicode (openai/gpt-2 encoder.py) in its list order: the printable bytes
// '!'..'~', '¡'..'¬', '®'..'ÿ' map to themselves, then the other bytes in increasing order map
// to U+0100, U+0101, ... This is also the order of the first 256 entries of GPT-2's vocab.
std::vector<std::string> byte_tokens() {
    std::vector<uint32_t> bs;
    for (uint32_t b = '!'; b <= '~'; ++b) bs.push_back(b);
    for (uint32_t b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
    for (uint32_t b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
    std::vector<uint32_t> cs = bs;
    std::vector<bool> printable(256, false);
    for (uint32_t b : bs) printable[b] = true;
    uint32_t n = 0;
    for (uint32_t b = 0; b < 256; ++b) {
        if (!printable[b]) cs.push_back(256 + n++);
    }
    std::vector<std::string> out;
    for (uint32_t cp : cs) out.push_back(utf8(cp));
    return out;
}

struct Vocab {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    std::vector<std::string> merges;
};

Vocab build_vocab(int n_vocab) {
    const int n_fixed = static_cast<int>(std::size(kSpecials)) + 256;
    LAZYLLM_CHECK_MSG(n_vocab >= n_fixed, "TinyModelSpec.n_vocab must be >= 259");
    Vocab v;
    std::unordered_set<std::string> have;
    auto add = [&](std::string tok, int32_t type) {
        LAZYLLM_CHECK(have.insert(tok).second);
        v.tokens.push_back(std::move(tok));
        v.types.push_back(type);
    };
    for (const char* s : kSpecials) add(s, kTokenControl);
    for (std::string& b : byte_tokens()) add(std::move(b), kTokenNormal);
    auto add_merge = [&](const std::string& left, const std::string& right) {
        LAZYLLM_CHECK_MSG(have.count(left) && have.count(right), "merge of unknown tokens");
        add(left + right, kTokenNormal);
        v.merges.push_back(left + " " + right);
    };
    for (std::string_view m : kSmolMerges) {
        if (static_cast<int>(v.tokens.size()) == n_vocab) break;
        size_t sp = m.find(' ');
        add_merge(std::string(m.substr(0, sp)), std::string(m.substr(sp + 1)));
    }
    // Beyond those: extend merged tokens with common letters, skipping results already there.
    constexpr std::string_view kLetters = "etaoinsrhldcum";
    for (size_t left = n_fixed; static_cast<int>(v.tokens.size()) < n_vocab; ++left) {
        for (char c : kLetters) {
            if (static_cast<int>(v.tokens.size()) == n_vocab) break;
            std::string l = v.tokens[left];
            std::string r(1, c);
            if (!have.count(l + r)) add_merge(l, r);
        }
    }
    return v;
}

uint64_t fnv1a(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    return h;
}

// Per-tensor stream: a tensor's values depend only on (seed, name, count), so tying the
// embeddings or changing the layer count leaves the other tensors unchanged.
class TensorRng {
public:
    TensorRng(uint64_t seed, std::string_view name)
        : gen_(seed * 0x9E3779B97F4A7C15ull ^ fnv1a(name)) {}
    // Uniform in [lo, hi): 53 random bits scaled, no std::uniform_real_distribution.
    float uniform(float lo, float hi) {
        double u = static_cast<double>(gen_() >> 11) * 0x1.0p-53;
        return static_cast<float>(lo + (hi - lo) * u);
    }

private:
    std::mt19937_64 gen_;
};

uint16_t fp32_to_fp16_bits(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7FFFFFFF;
    if (ax >= 0x7F800000)
        return static_cast<uint16_t>(sign | 0x7C00 | (ax > 0x7F800000 ? 0x200 : 0));
    if (ax >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // >= 65520 rounds to inf
    if (ax < 0x38800000) {
        // Below 2^-14: a half subnormal, in units of 2^-24; the scaling is exact and lrint
        // rounds to nearest even (default rounding mode).
        float v = std::bit_cast<float>(ax) * 16777216.0f;
        return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::lrint(v)));
    }
    uint32_t h = ((((ax >> 23) - 127 + 15) << 10) | ((ax & 0x7FFFFF) >> 13));
    uint32_t rem = ax & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // a carry into the exponent is right
    return static_cast<uint16_t>(sign | h);
}

uint16_t fp32_to_bf16_bits(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN
    return static_cast<uint16_t>((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

std::vector<uint8_t> encode(GgmlType type, const std::vector<float>& x) {
    std::vector<uint8_t> out;
    switch (type) {
        case GgmlType::F32:
            out.resize(x.size() * 4);
            std::memcpy(out.data(), x.data(), out.size());
            return out;
        case GgmlType::F16:
        case GgmlType::BF16:
            out.resize(x.size() * 2);
            for (size_t i = 0; i < x.size(); ++i) {
                uint16_t h =
                    type == GgmlType::F16 ? fp32_to_fp16_bits(x[i]) : fp32_to_bf16_bits(x[i]);
                std::memcpy(out.data() + 2 * i, &h, 2);
            }
            return out;
        default:
            return quantize_ref(type, x.data(), static_cast<int64_t>(x.size()));
    }
}

class Builder {
public:
    explicit Builder(const TinyModelSpec& spec) : spec_(spec) {}

    void weight(const std::string& name, int64_t ne0, int64_t ne1) {
        auto traits = ggml_type_traits(static_cast<uint32_t>(spec_.weight_type));
        LAZYLLM_CHECK_MSG(traits.has_value(), "TinyModelSpec.weight_type is not a ggml type");
        LAZYLLM_CHECK_MSG(ne0 % traits->block_size == 0,
                          "TinyModelSpec: a weight's ne[0] is not a multiple of the block size");
        std::vector<float> x = values(name, ne0 * ne1, -spec_.weight_scale, spec_.weight_scale);
        w_.add_tensor(name, spec_.weight_type, {ne0, ne1}, encode(spec_.weight_type, x));
    }
    void norm(const std::string& name, int64_t n) {
        std::vector<float> x = values(name, n, 0.95f, 1.05f);
        if (name.ends_with("attn_norm.weight") || name.ends_with("ffn_norm.weight")) {
            x[3] *= spec_.norm_outlier;
            x[n / 2 + 1] *= spec_.norm_outlier;
        }
        w_.add_tensor(name, GgmlType::F32, {n}, encode(GgmlType::F32, x));
    }
    void bias(const std::string& name, int64_t n) {
        std::vector<float> x = values(name, n, -spec_.weight_scale, spec_.weight_scale);
        w_.add_tensor(name, GgmlType::F32, {n}, encode(GgmlType::F32, x));
    }
    GgufWriter& writer() { return w_; }

private:
    std::vector<float> values(const std::string& name, int64_t n, float lo, float hi) {
        TensorRng rng(spec_.seed, name);
        std::vector<float> x(static_cast<size_t>(n));
        for (float& v : x) v = rng.uniform(lo, hi);
        return x;
    }

    const TinyModelSpec& spec_;
    GgufWriter w_{spec_.alignment};
};

GgufWriter make_writer(const TinyModelSpec& spec) {
    const std::string& a = spec.arch;
    LAZYLLM_CHECK_MSG(a == "llama" || a == "qwen2" || a == "qwen3" || a == "phi3" || a == "gemma3",
                      "TinyModelSpec.arch must be llama, qwen2, qwen3, phi3 or gemma3");
    LAZYLLM_CHECK(spec.n_layer > 0 && spec.n_head > 0 && spec.n_head_kv > 0 && spec.n_ff > 0);
    LAZYLLM_CHECK_MSG(spec.head_dim > 0 || spec.n_embd % spec.n_head == 0,
                      "n_embd must be a multiple of n_head");
    LAZYLLM_CHECK_MSG(spec.n_head % spec.n_head_kv == 0, "n_head must be a multiple of n_head_kv");
    const int64_t n_embd = spec.n_embd;
    const int64_t head_dim = spec.head_dim > 0 ? spec.head_dim : spec.n_embd / spec.n_head;
    const int64_t n_embd_q = spec.n_head * head_dim;      // [n_head * head_dim]
    const int64_t n_embd_kv = spec.n_head_kv * head_dim;  // [n_head_kv * head_dim]
    const bool qk_norm = a == "qwen3" || a == "gemma3";
    Vocab vocab = build_vocab(spec.n_vocab);

    Builder b(spec);
    GgufWriter& w = b.writer();
    w.set_string("general.architecture", a);
    // Alignment 1: a name 7 bytes longer puts the data section, and so every tensor (of even
    // size), at an odd offset.
    w.set_string("general.name", "tiny-" + a + (spec.alignment == 1 ? "-packed" : ""));
    w.set_uint32(a + ".block_count", static_cast<uint32_t>(spec.n_layer));
    w.set_uint32(a + ".context_length", static_cast<uint32_t>(spec.n_ctx));
    w.set_uint32(a + ".embedding_length", static_cast<uint32_t>(spec.n_embd));
    w.set_uint32(a + ".feed_forward_length", static_cast<uint32_t>(spec.n_ff));
    w.set_uint32(a + ".attention.head_count", static_cast<uint32_t>(spec.n_head));
    w.set_uint32(a + ".attention.head_count_kv", static_cast<uint32_t>(spec.n_head_kv));
    w.set_float32(a + ".rope.freq_base", spec.rope_theta);
    w.set_float32(a + ".attention.layer_norm_rms_epsilon", spec.rms_eps);
    w.set_uint32(a + ".vocab_size", static_cast<uint32_t>(spec.n_vocab));
    w.set_uint32(a + ".rope.dimension_count", static_cast<uint32_t>(head_dim));
    if (spec.head_dim > 0) {
        w.set_uint32(a + ".attention.key_length", static_cast<uint32_t>(head_dim));
        w.set_uint32(a + ".attention.value_length", static_cast<uint32_t>(head_dim));
    }
    if (a == "gemma3") {
        w.set_uint32(a + ".attention.sliding_window", static_cast<uint32_t>(spec.sliding_window));
        if (spec.swa_pattern > 0) {
            w.set_uint32(a + ".attention.sliding_window_pattern",
                         static_cast<uint32_t>(spec.swa_pattern));
        }
    }
    w.set_uint32("general.alignment", spec.alignment);
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "smollm");
    w.set_string_array("tokenizer.ggml.tokens", vocab.tokens);
    w.set_int32_array("tokenizer.ggml.token_type", vocab.types);
    w.set_string_array("tokenizer.ggml.merges", vocab.merges);
    w.set_uint32("tokenizer.ggml.bos_token_id", kBosId);
    w.set_uint32("tokenizer.ggml.eos_token_id", kEosId);
    w.set_uint32("tokenizer.ggml.unknown_token_id", 0);
    w.set_uint32("tokenizer.ggml.padding_token_id", kEosId);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
    if (spec.chat_template) w.set_string("tokenizer.chat_template", kChatTemplate);

    // Shapes in GGUF order, ne[0] first (the input dimension of a weight).
    b.weight("token_embd.weight", n_embd, spec.n_vocab);
    for (int il = 0; il < spec.n_layer; ++il) {
        std::string p = "blk." + std::to_string(il) + ".";
        b.norm(p + "attn_norm.weight", n_embd);
        if (a == "phi3") {
            b.weight(p + "attn_qkv.weight", n_embd, n_embd_q + 2 * n_embd_kv);
        } else {
            b.weight(p + "attn_q.weight", n_embd, n_embd_q);
            b.weight(p + "attn_k.weight", n_embd, n_embd_kv);
            b.weight(p + "attn_v.weight", n_embd, n_embd_kv);
        }
        if (a == "qwen2") {
            b.bias(p + "attn_q.bias", n_embd_q);
            b.bias(p + "attn_k.bias", n_embd_kv);
            b.bias(p + "attn_v.bias", n_embd_kv);
        }
        if (qk_norm) {
            b.norm(p + "attn_q_norm.weight", head_dim);
            b.norm(p + "attn_k_norm.weight", head_dim);
        }
        b.weight(p + "attn_output.weight", n_embd_q, n_embd);
        if (a == "gemma3") b.norm(p + "post_attention_norm.weight", n_embd);
        b.norm(p + "ffn_norm.weight", n_embd);
        if (a == "phi3") {
            b.weight(p + "ffn_up.weight", n_embd, 2 * spec.n_ff);
        } else {
            b.weight(p + "ffn_gate.weight", n_embd, spec.n_ff);
            b.weight(p + "ffn_up.weight", n_embd, spec.n_ff);
        }
        b.weight(p + "ffn_down.weight", spec.n_ff, n_embd);
        if (a == "gemma3") b.norm(p + "post_ffw_norm.weight", n_embd);
    }
    b.norm("output_norm.weight", n_embd);
    if (!spec.tied_embeddings) b.weight("output.weight", n_embd, spec.n_vocab);
    return std::move(w);
}

}  // namespace

GgufWriter tiny_model_writer(const TinyModelSpec& spec) { return make_writer(spec); }

std::vector<uint8_t> build_tiny_model(const TinyModelSpec& spec) {
    return make_writer(spec).to_bytes();
}

Status write_tiny_model(const TinyModelSpec& spec, const std::string& path) {
    return make_writer(spec).write(path);
}

Status fill_with_nan(const std::string& path, const std::string& name) {
    uint64_t offset = 0, n = 0;
    {
        LAZYLLM_ASSIGN_OR_RETURN(GgufFile g, GgufFile::open(path));
        const auto* t = g.find_tensor(name);
        if (t == nullptr || t->type != GgmlType::F32) {
            return make_error(ErrorCode::kInvalidArgument, "{}: no F32 tensor '{}'", path, name);
        }
        offset = g.data_offset() + t->offset;
        n = t->n_elements();
    }
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(offset));
    const float nan = std::nanf("");
    for (uint64_t i = 0; i < n; ++i) f.write(reinterpret_cast<const char*>(&nan), sizeof(nan));
    if (!f) return make_error(ErrorCode::kIo, "{}: cannot write '{}'", path, name);
    return {};
}

}  // namespace lazyllm::testing
