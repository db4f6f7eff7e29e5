// The public API of lazyllm: load a GGUF model, tokenize, and generate with full or pruned
// (LazyLLM and baseline) prefill. The CLI, server, bench and eval are thin tools over this.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lazyllm/conversation.h"
#include "lazyllm/result.h"
#include "lazyllm/sampling.h"
#include "lazyllm/schedule.h"
#include "lazyllm/tokenizer.h"

namespace lazyllm {

// The most threads a load takes (EngineOptions::n_threads; libgomp fails far beyond it).
inline constexpr int kMaxThreads = 1024;

struct EngineOptions {
    std::string model_path;
    int n_threads = 0;               // 0: all cores; at most kMaxThreads
    std::string precision = "auto";  // auto | f32 | bf16 (GEMM weights and activations)
    // Decode steps on the GGUF's own 4/8-bit blocks (AVX-512 VNNI); false: the GEMM weights.
    // Never used with precision f32.
    bool quantized_decode = true;
    // Weights of prefill's linear layers: auto | copy | quant. copy: bf16/fp32 copies converted
    // at load (GEMMs, exact fp32 activations); quant: the GGUF's own blocks with int8
    // activations, no copy (memory near the file size); auto: quant where the copies would take
    // more than half the memory available at load, else copy.
    std::string prefill_weights = "auto";
    // A chat format name (chat_template_from_name) in place of the GGUF's; empty: detect it.
    std::string chat_template;
};

// What `lazyllm info` and `run --verbose` print.
struct ModelSummary {
    std::string path, arch, name;
    int n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0;
    int n_ctx_train = 0;
    float rope_theta = 0.0f, rms_eps = 0.0f;
    bool tied_embeddings = false;
    std::string tokenizer;  // e.g. "gpt2 (pre: smollm)"
    std::string chat_template;  // the chat format (describe_chat_template), e.g. "llama3"
    // Where it comes from: "tokenizer.chat_template", "--chat-template", or the fallback's reason.
    std::string chat_template_source;
    std::string isa;        // kernels in use: ref | avx2 | avx512 | amx
    std::string gemm;       // prefill's linear layers: bf16 | f32 (copies) | quant (GGUF blocks)
    std::string decode;     // quant (QuantLinear, VNNI) | gemm (the prefill weights)
    std::string prefill_weights;  // the choice and why, e.g. "copy (auto: copies 520 MiB, ...)"

    // Layers that see the whole context when the model also has sliding-window layers (gemma3;
    // a pruning boundary scores on one of them); empty otherwise.
    std::vector<int> global_layers;
    int sliding_window = 0;      // the keys before a query the other layers see (0: no windows)
    int default_keep_first = 0;  // tokens the model's default pruning schedule never prunes
    int default_score_layers = 1;  // the model default schedule's score shaping (prune::Schedule)
    int default_score_pool = 1;
    int n_threads = 0;
    double load_ms = 0.0;
    uint64_t file_bytes = 0;
    uint64_t weight_bytes = 0;  // weights in memory (LlamaModel::weight_bytes)
};

// Which pruning a generation runs, as typed data (include/lazyllm/schedule.h).
struct PruneOptions {
    Policy policy = Policy::kFull;
    // The model's measured schedule when `schedule` is empty: kSafe (the default: never prunes
    // below a measured context size, protects the recent tokens, decode steps only revive) or
    // kFast (the fastest measured schedule; docs/lazyllm.md, Presets).
    Preset preset = Preset::kSafe;
    // An explicit schedule (flags, a schedule file, tune), in place of the preset's.
    std::optional<Schedule> schedule;
    ScheduleOverrides overrides;  // on top of either
    uint64_t seed = 1;            // random policy
};

struct RunOptions {
    int64_t n_ctx = 0;  // 0: prompt + max_new_tokens, capped by the model's context
    int max_new_tokens = 256;
    SamplingParams sampling;
    std::vector<std::string> stop;  // stop strings (not included in the output)
    // Tokens that end the answer when sampled (stop_reason "stop"; not in the output), as vLLM's
    // stop_token_ids and HF generate's extra eos_token_id.
    std::vector<TokenId> stop_ids;
    bool ignore_eos = false;  // never sample an end-of-generation token (llama.cpp's --ignore-eos)
    // No end-of-generation token and no stop id is sampled before this many new tokens (vLLM's
    // min_tokens, HF's min_length past the prompt; stop strings still apply).
    int min_new_tokens = 0;
    PruneOptions prune;
    bool profile = false;
    bool keep_first_logits = false;  // GenerateResult::first_logits (fidelity measurement)
};

struct OpTime {
    std::string op;
    double ms = 0.0;
    double gflops = 0.0;  // achieved, for GEMM and attention ops
};

struct GenerateResult {
    std::string text;
    std::vector<TokenId> tokens;  // generated ids
    int64_t n_prompt = 0;
    int64_t n_gen = 0;
    double ttft_ms = 0.0;         // prompt in to first token out (prefill + first sample)
    double prefill_tps = 0.0;     // prompt tokens / prefill time
    double decode_ms = 0.0;       // generation after the first token
    double decode_tps = 0.0;      // (n_gen - 1) / decode_ms
    double total_ms = 0.0;
    std::string stop_reason;      // eos | stop | length | callback
    std::string policy;
    std::string schedule;         // "layers=... keep=..." or "" for full
    double prefill_fraction_computed = 1.0;  // (prompt token, layer) pairs after prefill / all
    double fraction_computed = 1.0;          // same at the end of generation (paper Table 2)
    // Schedule::verify_margin found the pruned prefill's first token a near tie and ran the
    // repair before it: the first token came from full's logits (and TTFT includes the repair).
    bool first_token_verified = false;
    std::vector<int32_t> prefill_rows_per_layer;       // rows whose K/V each layer computed
    std::vector<int32_t> prefill_tail_rows_per_layer;  // of which ran its attention and FFN
    std::vector<int64_t> revivals_per_step;  // [n decode steps]
    // [n_gen] prompt in -> generated token i sampled, ms (token_ms[0] = ttft_ms): the
    // end-to-end latency of the first i + 1 tokens.
    std::vector<double> token_ms;
    // When RunOptions::profile: time per op kind in prefill, and over the decode steps (empty
    // when there were none). A lazy run's decode steps include its revivals.
    std::vector<OpTime> profile;
    std::vector<OpTime> decode_profile;
    std::vector<float> first_logits;         // [n_vocab] when RunOptions::keep_first_logits
};

// Called with each piece of newly complete UTF-8 text; return false to stop.
using TextCallback = std::function<bool(std::string_view)>;

// Thread safety: generate, first_token_logits and the other const members may run on several
// threads at once; each calling thread gets an OpenMP pool of n_threads workers, so concurrent
// callers share the cores (a server steps every request on one thread: conversation.h). A
// Conversation keeps the engine's model and tokenizer alive: it may outlive the Engine.
class Engine {
public:
    // Loads the model with n_threads for its steps; the calling thread's OpenMP thread count
    // (omp_get_max_threads) is as before after it.
    static Result<std::unique_ptr<Engine>> load(const EngineOptions& opts);
    // Reads hyper-parameters and tokenizer only (no weights): for `lazyllm info`.
    static Result<ModelSummary> inspect(const std::string& path);
    // The same, plus the weights a load with `opts` would keep (isa, gemm, decode,
    // prefill_weights), still without reading the weights.
    static Result<ModelSummary> inspect(const std::string& path, const EngineOptions& opts);
    // What load() refuses in `opts` before it opens the model: the threads, the precision
    // (bf16 without AVX-512-BF16), the prefill weights and LAZYLLM_ISA / LAZYLLM_GEMM (an unknown
    // value, an ISA this CPU lacks). The model path is not read.
    static Status check_options(const EngineOptions& opts);
    // Whether this CPU runs precision bf16's GEMMs (AVX-512-BF16).
    static bool cpu_runs_bf16();
    ~Engine();

    const Tokenizer& tokenizer() const;
    const ModelSummary& summary() const;
    // The chat format prompts are rendered with: the GGUF's, a fallback (chat.recognised is
    // false; chat_template_warning says which and why), or EngineOptions::chat_template.
    const ChatTemplateChoice& chat_template() const;
    // Prompt formatting: the model's chat format applied to one user message.
    std::string chat_prompt(std::string_view user_message, std::string_view system = {}) const;

    // Prompt formatting of a whole chat (system / user / assistant turns), ending with the
    // assistant turn's opening. A final assistant message, with continue_final, is left open
    // for the answer to continue (llama-server's assistant prefill): the turns before it, the
    // assistant's opening, then its text.
    std::string chat_prompt(const std::vector<ChatMessage>& messages,
                            bool continue_final = true) const;
    // A conversation (include/lazyllm/conversation.h) under a pruning policy, with a cache of
    // n_ctx tokens (0: the model's training context). Errors: bad policy or schedule.
    Result<std::unique_ptr<Conversation>> open_conversation(const PruneOptions& prune,
                                                            int64_t n_ctx = 0) const;

    // The schedule a policy would run: `prune.schedule` or the model's preset, with the
    // overrides applied and validated against the model. Errors name the field at fault.
    Result<Schedule> resolve_schedule(const PruneOptions& prune) const;
    // Checks run options against the model (sampling, policy and schedule), without running.
    Status validate(const RunOptions& opts) const;
    Result<GenerateResult> generate(std::span<const TokenId> prompt, const RunOptions& opts,
                                    const TextCallback& on_text = {}) const;
    // The first-token logits of a prompt under a policy ([n_vocab]), with the fraction of prompt
    // token-layers computed. For fidelity measurement and tests.
    Result<std::vector<float>> first_token_logits(std::span<const TokenId> prompt,
                                                  const RunOptions& opts,
                                                  double* fraction_computed = nullptr) const;

    struct Impl;

private:
    explicit Engine(std::unique_ptr<Impl> impl);
    std::shared_ptr<Impl> impl_;  // shared with the Conversations it opens
};

}  // namespace lazyllm
