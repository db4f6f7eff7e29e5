// The Llama-family model (llama: Llama 2/3, SmolLM2, Mistral; qwen2: QKV biases; qwen3:
// QK-norm; phi3: fused QKV and gate|up; gemma3: QK-norm, sandwich norms, GeGLU, sliding-window
// layers): weights converted
// once at load into the GEMM's layout, and a forward pass over a dense block of rows that each
// carry an absolute position. The pruning runtime hands it any subset of tokens per stage;
// the model knows nothing of pruning (design.md 2).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/scratch.h"
#include "kernels/attention.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"
#include "kernels/qgemv.h"
#include "kernels/quant.h"
#include "kernels/workspace.h"
#include "lazyllm/gguf.h"
#include "lazyllm/result.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/profile.h"

namespace lazyllm {

// The weights prefill's linear layers run on (--prefill-weights).
enum class PrefillWeights {
    // kQuant where the copies would take more than half the memory available, would be fp32
    // copies over kFp32CopyLimit, or bf16 copies over kBf16CopyLimit where the blocks run on
    // AMX tiles or, on a CPU without AMX, on AVX-512 VNNI (LlamaModel::plan_weights); else
    // kCopy.
    kAuto,
    // Copies converted at load for the GEMM (bf16 or fp32, GemmPrecision), beside the GGUF's
    // blocks for decode steps.
    kCopy,
    // The GGUF's own blocks (QuantLinear) for every step: no copy, memory near the file size;
    // int8 activations, or with AMX bf16 tiles for prompt steps of kernels::kTileMinRows
    // tokens or more. Needs the quantized decode weights.
    kQuant,
};

// Past this many bytes of fp32 copies (no bf16 GEMM on the CPU; the layers' only, the LM head
// has none there), kAuto takes the blocks (about 335M layer parameters: Qwen2.5-0.5B, with 358M,
// and the larger models on their blocks, within the big-models issue's memory bound; the
// default model, 106M, and Gemma 3 270M, 100M, keep their exact fp32 prefill).
inline constexpr double kFp32CopyLimit = 1.25 * 1024 * 1024 * 1024;
// Past this many bytes of bf16 copies, kAuto takes the blocks where they run on AMX tiles or,
// without AMX, on AVX-512 VNNI (about 270M layer parameters; the default model, 106M, and
// Gemma 3 270M, 100M, stay below).
inline constexpr double kBf16CopyLimit = 512.0 * 1024 * 1024;

struct ModelLoadOptions;

// Which weights a load keeps, decided from the config and options alone (no weights read).
struct WeightPlan {
    bool quantized_decode = false;  // QuantLinear copies for decode steps
    bool prefill_quant = false;     // every step on them, no GEMM copies
    std::string prefill_choice;     // e.g. "quant (auto: copies 4900 MiB, memory available ...)"
};

struct ModelLoadOptions {
    kernels::KernelContext ctx;
    kernels::GemmPrecision precision = kernels::GemmPrecision::kAuto;
    PrefillWeights prefill_weights = PrefillWeights::kAuto;
    // The memory kAuto weighs the copies against, in bytes; 0: MemAvailable at load.
    uint64_t available_memory = 0;
    // Decode steps (few rows) through QuantLinear: integer dot products on the GGUF's own 4/8-bit
    // blocks, where the CPU has AVX-512 VNNI or AVX2. Never with --precision f32, which stays
    // exact (auto on a CPU without bf16 GEMMs: fp32 prefill GEMMs, quantized decode).
    bool quantized_decode = true;
};

// Steps of up to kQuantMaxRows new tokens (decode) run on the quantized weights, for up to
// LlamaModel::quant_max_rows() rows (the step's own, and rows revived into it at a LazyLLM
// boundary); steps of more new tokens (a prefill longer than kQuantMaxRows) run on the GEMM
// weights.
// Beside oneDNN's GEMMs, 8 covers decode and short revival steps.
inline constexpr int64_t kQuantMaxRows = 8;
// With our AMX GEMM: the measured crossover with the weights coming from memory is above 32
// rows for every shape of the default model (bench/qgemv_bench.cpp), but within L2 it is about
// 3 rows for the small attention matrices, 8 for down and 16 for gate/up. In decode steps, whose
// weights stream from memory between their few rows, 16 measured best: `--lazy=fast` decoded
// the 32 steps after 2k / 4k / 8160 tokens at 0.85-0.97x / 0.81-0.88x / 0.80-0.86x full's rate
// against 0.77-0.82x / 0.78-0.82x / 0.70-0.72x with 8 (five rounds; 32 and 64 no better than
// 16; docs/benchmarks/amx_xeon.md, "Decode after a lazy prefill").
inline constexpr int64_t kQuantMaxRowsAmx = 16;
// With our AVX2 fp32 GEMM (Zen 3, 2 threads, bench/qgemv_bench.cpp many_rows): the AVX2
// QuantLinear took 0.47x the GEMM's time at 8 rows, 0.69x at 32, 0.82x at 128 and 256 summed
// over the four layer shapes with the weights from memory, and 0.94x at 1024 with them in
// cache; 256 covers the revivals of a decode step after a long prompt. (Beside oneDNN's bf16
// GEMM without AMX, Zen 4: the VNNI QuantLinear took 0.74-0.83x its time at 8 to 1024 rows,
// but lazy decode over the default model was 2-7% slower with revived rows on the blocks up
// to 256 rows, so those stay at kQuantMaxRows; docs/benchmarks/zen4.md.)
inline constexpr int64_t kQuantMaxRowsWide = 256;

// The path a run's linear layers take, chosen once per run (forward.cpp): decode-sized steps
// of generated tokens on the GGUF's own blocks (kQuant), prompt rows on them (prefill_quant():
// kQuantPrompt, and for q|k|v and gate|up kQuantOutliers, each row's outlier channels exact;
// every linear layer of a prompt step of kernels::kTileMinRows tokens or more kQuantTiles where
// the blocks run on AMX tiles; kernels::QuantRows; a decode step's rows, its own and those
// LazyLLM revives into it, as kQuantPrompt, on the tiles in calls of kTileMinRows rows or more),
// else the prefill GEMM weights, bf16 or fp32 as converted at load; kQuant: the LM head.
enum class LinearPath { kQuant, kQuantPrompt, kQuantOutliers, kQuantTiles, kBf16, kF32 };

// (kF32: fp32 activations into the GEMM weights, which convert them where those are bf16.)
// A linear layer's input on its path: fp32 rows (kQuant, kF32) or bf16 rows (kBf16).
struct LinearInput {
    const float* f32 = nullptr;
    const uint16_t* bf16 = nullptr;
};

// One linear layer: the prefill GEMM weights (bf16 or fp32, fixed at load) and the same matrix
// as QuantLinear for decode steps (empty when LlamaModel::quantized_decode() is false).
struct Linear {
    kernels::PackedLinear gemm;
    kernels::QuantLinear quant;

    // y[n, :] = x W^T (accumulate: y += x W^T), leading dimensions ldx / ldy (0: dense). On the
    // bf16 path `done` runs on finished rows where the GEMM can; returns whether it did.
    // The kernels' scratch comes from ws.
    bool forward(kernels::Workspace& ws, LinearPath path, LinearInput x, int64_t n, float* y,
                 int64_t ldx = 0, int64_t ldy = 0, bool accumulate = false,
                 const kernels::RowsDone* done = nullptr) const;
    size_t weight_bytes() const { return gemm.weight_bytes() + quant.weight_bytes(); }
};

struct LayerWeights {
    std::vector<float> attn_norm;  // [n_embd]
    std::vector<float> ffn_norm;   // [n_embd]
    std::vector<float> q_norm, k_norm;  // [head_dim] QK-norm (qwen3, gemma3), else empty
    std::vector<float> post_attn_norm, post_ffn_norm;  // [n_embd] gemma3, else empty
    Linear qkv;      // [n_qkv, n_embd]: q, k, v rows fused (+ qwen2 biases)
    Linear wo;       // [n_embd, n_embd_q]
    Linear gate_up;  // [2*n_ff, n_embd]: gate rows then up rows
    Linear down;     // [n_embd, n_ff]
};

// Working buffers of one forward, grown on demand and reused (no allocation in steady state).
// Cache-line aligned (base/scratch.h): the AMX GEMM stores and accumulates its output rows
// with tile instructions. Not zeroed when grown: every op writes its output rows before the
// next one reads them.
struct ForwardScratch {
    // [n_rows, max(n_embd, n_embd_q)] normed input (fp32 GEMMs, quantized steps), and also
    // attention's output ([n_rows, n_embd_q]): the two are never live at the same time
    ScratchVector<float> x;
    ScratchVector<uint16_t> x16;      // [n_rows, n_embd] bf16 GEMM input (bf16 path)
    ScratchVector<uint16_t> act16;    // [n_rows, n_ff] bf16 SwiGLU output, the down GEMM's input
    ScratchVector<float> qkv;         // [n_rows, n_qkv]
    ScratchVector<uint16_t> attn16;   // [n_rows, n_embd_q] attention output in bf16 (bf16 path)
    ScratchVector<float> gate_up;     // [n_rows, 2*n_ff]
    ScratchVector<float> act;         // [n_rows, n_ff]
    ScratchVector<float> y;           // [n_rows, n_embd] a sublayer's output (post-norms)
    ScratchVector<float> logits_row;  // [n_embd] normed last row
    ScratchVector<float> score_row;   // [n_keys] one layer's scores when LayerRun sums several
    kernels::Workspace kernels;       // the kernels' own scratch (GEMM inputs, attention states)
};

// Rows that run a layer's attention, Wo and FFN once its K/V are stored (LayerRun::cut):
// h [n_rows, n_embd] their hidden states at the layer's input, updated in place to its output;
// q [n_rows, q_stride] their queries at that layer (RoPE applied); pos [n_rows] their absolute
// positions, strictly increasing. Buffers owned by the caller.
struct TailRows {
    float* h = nullptr;
    const float* q = nullptr;
    int64_t q_stride = 0;
    const int32_t* pos = nullptr;
    int64_t n_rows = 0;
};

// LayerRun::cut: called with the run's rows' q|k|v at its last layer ([n_rows, qkv_stride], q
// in the first n_embd_q columns, RoPE applied), the rows' h still at that layer's input.
using RowCut = std::function<TailRows(const float* qkv, int64_t qkv_stride)>;

// One call runs layers [il_begin, il_end) over n_rows live rows.
struct LayerRun {
    float* h = nullptr;              // [n_rows, n_embd] hidden states, updated in place
    const int32_t* pos = nullptr;    // [n_rows] absolute positions, strictly increasing
    int64_t n_rows = 0;
    // Key set S (sorted positions, includes every live row). nullptr: the contiguous prefix
    // [0, n_keys), read straight from the cache with no gather.
    const int32_t* key_pos = nullptr;
    int64_t n_keys = 0;
    int il_begin = 0;
    int il_end = 0;
    // If set: LazyLLM importance (head-mean softmax of the LAST live row's query over S) at
    // layer il_end - 1, [n_keys]; with score_layers > 1, its sum over layers
    // [max(il_begin, il_end - score_layers), il_end).
    float* scores = nullptr;
    int score_layers = 1;
    // If set and the run ends at the model's last layer: that layer runs QKV on every row and
    // stores their K/V, but attention, Wo and the FFN for the last row only (the other rows'
    // h are left at the layer's input). For a step whose only output is the last row's logits:
    // the skipped work is useless there (llama.cpp skips it the same way).
    bool last_row_out = false;
    // If set: at layer il_end - 1, once the K/V of every row are stored and `scores` is final,
    // the rest of that layer (attention over the same keys, Wo, FFN) runs on the rows this
    // returns instead: some of the run's rows and any others with a stored K/V and query at
    // that layer (LazyLLM's boundary: the rows about to be cut only need their K/V here, and
    // revived rows finish the layer they stopped in; runtime/session.cpp). The run's own h
    // rows are left at that layer's input. Not with last_row_out at the model's last layer.
    RowCut cut = nullptr;
    // New tokens of the step this run belongs to (0: n_rows). A decode-sized step (at most
    // kQuantMaxRows) of generated tokens runs on the quantized weights where
    // quantized_decode(), also when its cut brings in more rows, up to quant_max_rows(); a
    // longer step, or one of prompt tokens, runs on the GEMM weights.
    int64_t step_rows = 0;
    // The step's tokens are prompt text (a new turn, the rest of a cached prompt): the GEMM
    // weights whatever their count (on the blocks: with every row's outlier channels exact,
    // chosen from the row alone; with AMX tiles, on them from kernels::kTileMinRows tokens),
    // so a prompt's logits do not depend on how much of it a cache held (on the tiles: when
    // the steps fall on the same side of kTileMinRows).
    bool prompt = false;
};

class LlamaModel {
public:
    static Result<std::unique_ptr<LlamaModel>> load(const std::string& path,
                                                    const ModelLoadOptions& opts);
    // What load() would keep for this config and these options: quantized decode copies where
    // the options allow them, QuantLinear has a fast path (or kQuant asks for them) and every
    // n_in is a multiple of 32; prefill on them when asked (kQuant, an error where there are
    // none) or, with kAuto, when the GEMM copies would take more than half the memory
    // available now, be fp32 copies over kFp32CopyLimit or bf16 copies over kBf16CopyLimit
    // where the blocks run on AMX tiles or (no AMX) AVX-512 VNNI int8 kernels.
    static Result<WeightPlan> plan_weights(const ModelConfig& c, const ModelLoadOptions& opts);

    const ModelConfig& config() const { return config_; }
    const GgufFile& gguf() const { return gguf_; }
    // Frees the tokenizer's lists in the file's metadata, once a Tokenizer has been built from
    // them: the model reads nothing else from them.
    void release_tokenizer_metadata() { gguf_.drop_array_metadata("tokenizer.ggml."); }
    const kernels::KernelContext& ctx() const { return opts_.ctx; }
    bool gemm_bf16() const;
    // The KV cache element type that goes with the weights: f16 (half the cache, half the
    // bytes a decode step reads) except on the exact path, precision f32 with the copies.
    kernels::KvType kv_type() const;
    // Whether decode steps (<= kQuantMaxRows new tokens) use the QuantLinear copies of the
    // weights, and for up to how many rows (kQuantMaxRowsWide over our AVX2 fp32 GEMM or
    // with prefill on the blocks, kQuantMaxRowsAmx over our AMX GEMM, else kQuantMaxRows; also
    // the most sessions one batched decode forward takes, Session::max_batch).
    bool quantized_decode() const { return quantized_decode_; }
    int64_t quant_max_rows() const { return quant_max_rows_; }
    // Whether every step, prefill included, runs on the QuantLinear weights (PrefillWeights
    // kQuant, or kAuto's choice); then there are no GEMM copies. prefill_choice() says why.
    bool prefill_quant() const { return prefill_quant_; }
    // Whether sessions give memory back as soon as it is idle (where the weights are the
    // GGUF's blocks, the path chosen to fit memory): a prompt step's cut the row buffers' idle
    // pages, so that the Aux slots take their place instead of adding to the peak, and a
    // finished session its Aux slots. With the copies (memory to spare) both stay resident for
    // the next prompt: faulting them in again cost about 5% of the fast preset's TTFT at 4k
    // tokens on the default model (AMX Xeon), for 5-7% more peak memory.
    bool lean_memory() const { return prefill_quant_; }
    const std::string& prefill_choice() const { return prefill_choice_; }
    // Weights held in memory: the converted ones, and the LM head's blocks where the logits read
    // them in place (head_rows_).
    size_t weight_bytes() const;
    // The first layer in [begin, end) whose attention a LazyLLM score may sum, or -1: on a
    // sliding-window model only global layers score (a local layer's query sees only its
    // window, so every older token would score 0).
    int first_scored_layer(int begin, int end) const;
    double load_ms() const { return load_ms_; }

    // h[i, :] = embedding of ids[i]  (h: [n, n_embd]); ids must be < n_vocab (checked).
    Status embed(const int32_t* ids, int64_t n, float* h, Profile* prof = nullptr) const;
    // Runs layers on the rows of `run`, writing KV[il][pos] for every live row.
    void forward_layers(const LayerRun& run, KvCache& kv, ForwardScratch& s,
                        Profile* prof = nullptr) const;
    // One decode step of several sessions at once (continuous batching; forward_batch.cpp):
    // row i is a new token at position pos[i] over the contiguous prefix [0, pos[i]] of its own
    // cache kvs[i]. The GEMVs run once on all rows (the weights are streamed once), attention
    // per row on its cache. h [n, n_embd] is updated in place; logits [n, n_vocab]. Needs
    // quantized_decode() and n <= quant_max_rows(): the same weights and kernels as a
    // one-token step of each session alone.
    void forward_decode_batch(float* h, const int32_t* pos, KvCache* const* kvs, int64_t n,
                              float* logits, ForwardScratch& s) const;
    // Final RMSNorm and LM head of one hidden row: logits [n_vocab]. `step_rows`, `prompt`: the
    // step this row ends (LayerRun). Decode-sized steps of generated tokens take the QuantLinear
    // copy where quantized_decode(), as their layers do; a prefill or a prompt step takes the
    // prefill weights, as its layers did, so its first token does not carry int8 activation
    // rounding.
    void logits(const float* h_row, int64_t step_rows, bool prompt, float* out, ForwardScratch& s,
                Profile* prof = nullptr) const;
    // Whether a step of `step_rows` new tokens (LayerRun) runs on the QuantLinear copies: a
    // decode-sized step of generated tokens, where quantized_decode().
    bool decode_weights_step(int64_t step_rows, bool prompt) const {
        return quantized_decode_ && !prompt && step_rows <= kQuantMaxRows;
    }

private:
    class LayerPass;  // one forward_layers call (forward.cpp)

    LlamaModel() = default;
    // The attention arguments every layer shares: its K/V cache, head counts and scale (the
    // keys, queries and outputs are the caller's).
    kernels::AttentionArgs attention_args(const KvCache& kv, int il) const;
    const kernels::RopeTable& rope_table(int il) const;  // the local or the global table
    // The model's kernel context with s's Workspace as the kernels' scratch.
    kernels::KernelContext kernel_ctx(ForwardScratch& s) const;
    // Post-norm residual (gemma3): y = rmsnorm(y, w); h += y, over n rows.
    void post_norm_add(const std::vector<float>& w, float* y, float* h, int64_t n) const;
    // logits = c tanh(logits / c) where the model has a final soft cap, over n rows.
    void softcap(float* logits, int64_t n_rows) const;

    Status load_weights();
    Status load_layer(int il);  // layers_[il] from the GGUF
    // One GGUF matrix of a (possibly fused) linear layer: its name and its rows ([n_in, rows]
    // in GGUF order).
    struct MatrixPart {
        std::string name;
        int64_t rows;
    };
    // `out` from the GGUF matrices `parts` stacked along n_out (fused q|k|v, gate|up), each
    // checked to be [n_in, rows]: the GEMM weights unless prefill_quant_, and the QuantLinear
    // copy where quantized_decode_ (from the GGUF's blocks where QuantLinear takes their type,
    // else requantized from fp32). fp32 is read only where one of them needs it. Errors name
    // `what`. Without `gemm_copy` no GEMM weights are made (the caller reads the blocks in
    // place), else the parts' pages are released from memory afterwards.
    Status make_linear(std::string_view what, std::initializer_list<MatrixPart> parts, int64_t n_in,
                       const float* bias, kernels::GemmLayout layout, Linear& out,
                       bool gemm_copy = true) const;
    // The LM head's prefill weights: the fp32 and bf16 paths read the GGUF's blocks in place
    // (head_rows_), the blocks path QuantLinear (load_head).
    Status load_head();

    GgufFile gguf_;
    ModelConfig config_;
    ModelLoadOptions opts_;
    kernels::RopeTable rope_;      // every layer, or the global layers of a sliding-window model
    kernels::RopeTable rope_swa_;  // the local (sliding-window) layers
    std::vector<LayerWeights> layers_;
    std::vector<float> output_norm_;  // [n_embd]
    Linear lm_head_;                  // [n_vocab, n_embd]
    // The head's GGUF blocks (in the mmap) where the fp32 path's logits read them in place
    // (kernels::gemv_rows_f32) instead of an fp32 copy; data null otherwise.
    kernels::BlockRows head_rows_;
    bool quantized_decode_ = false;
    bool prefill_quant_ = false;
    bool prefill_tiles_ = false;   // prefill_quant_ on AMX tiles (QuantLinear::has_tile_path)
    bool bf16_attention_ = false;  // AttentionArgs::bf16: the linear layers' precision is bf16
    std::string prefill_choice_;
    int64_t quant_max_rows_ = kQuantMaxRows;
    const uint8_t* token_embd_ = nullptr;  // quantized rows in the mmap
    GgmlType token_embd_type_ = GgmlType::F32;
    size_t token_embd_row_bytes_ = 0;
    double load_ms_ = 0.0;
};

}  // namespace lazyllm
