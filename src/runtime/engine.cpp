// Engine: model + tokenizer, and the generate loop (prefill step, then one decode step per
// token) over a Session. Timing: TTFT runs from the start of prefill to the first sampled token.
#include "lazyllm/engine.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <utility>

#include "base/timer.h"
#include "kernels/cpu.h"
#include "kernels/gemm.h"
#include "kernels/qgemv.h"
#include "lazyllm/memory.h"
#include "model/llama_model.h"
#include "prune/model_defaults.h"
#include "prune/schedule.h"
#include "prune/select.h"
#include "runtime/conversation_impl.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/stop_strings.h"

namespace lazyllm {

namespace {
ModelSummary make_summary(const std::string& path, const ModelConfig& c, const Tokenizer& tok,
                          uint64_t file_bytes);

// The GGUF's chat format, or the one EngineOptions::chat_template names.
Result<ChatTemplateChoice> choose_chat_template(const EngineOptions& opts, const Tokenizer& tok,
                                                const ModelConfig& c) {
    if (opts.chat_template.empty()) return detect_chat_template(tok, c.arch_name);
    LAZYLLM_ASSIGN_OR_RETURN(ChatTemplate t, chat_template_from_name(opts.chat_template));
    return ChatTemplateChoice{std::move(t), true, {}};
}

// The layers that see the whole context on a sliding-window model; empty on others.
std::vector<int> global_layers(const ModelConfig& c) {
    std::vector<int> out;
    for (int il = 0; c.sliding_window > 0 && il < c.n_layer; ++il) {
        if (!c.is_swa(il)) out.push_back(il);
    }
    return out;
}

// The schedule `--lazy` uses when none is given (src/prune/model_defaults.cpp).
prune::Schedule default_schedule(const ModelConfig& c, prune::Preset preset) {
    prune::ModelShape shape{c.arch_name, c.n_layer, c.n_embd, c.n_head, c.n_vocab};
    shape.global_layers = global_layers(c);
    return prune::model_default_schedule(shape, preset);
}
}  // namespace

struct Engine::Impl {
    std::unique_ptr<LlamaModel> model;
    Tokenizer tokenizer;
    ModelSummary summary;
    ChatTemplateChoice chat;

    // The last finished generate's session, whose buffers the next one takes (Session::create's
    // donor), as llama.cpp keeps a context's buffers between prompts: a run after the first
    // finds its KV cache and scratch resident, and a process holds one session's memory, not
    // one per run (its Aux slots freed where the model is lean on memory, LlamaModel::
    // lean_memory). Taken by one caller at a time; concurrent callers create their own.
    std::mutex idle_mu;
    std::optional<Session> idle;

    // A session for `so` on the idle one's buffers where there is one.
    Result<Session> new_session(const SessionOptions& so) {
        std::optional<Session> donor;
        {
            std::lock_guard<std::mutex> lock(idle_mu);
            donor.swap(idle);
        }
        return Session::create(*model, so, donor ? &*donor : nullptr);  // the rest freed here
    }
    void keep_idle(Session&& s) {
        if (model->lean_memory()) s.free_aux_slots();  // every policy takes the rest
        std::optional<Session> old;  // freed outside the lock
        std::lock_guard<std::mutex> lock(idle_mu);
        old = std::move(idle);
        idle.emplace(std::move(s));
    }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;
const Tokenizer& Engine::tokenizer() const { return impl_->tokenizer; }
const ModelSummary& Engine::summary() const { return impl_->summary; }
const ChatTemplateChoice& Engine::chat_template() const { return impl_->chat; }

namespace {

// The model's load options from the engine's (kernels from LAZYLLM_ISA, LAZYLLM_GEMM and the
// CPU).
Result<ModelLoadOptions> model_options(const EngineOptions& opts) {
    LAZYLLM_ASSIGN_OR_RETURN(kernels::Isa isa, kernels::isa_from_env());
    LAZYLLM_ASSIGN_OR_RETURN(kernels::GemmKernels gemm, kernels::gemm_kernels_from_env());
    kernels::cap_onednn_isa(isa);
    ModelLoadOptions mo;
    mo.ctx.isa = isa;
    mo.ctx.gemm = gemm;
    const int hw = usable_cores();
    if (opts.n_threads < 0 || opts.n_threads > kMaxThreads) {
        return make_error(ErrorCode::kInvalidArgument, "threads must be in [0, {}], got {}",
                          kMaxThreads, opts.n_threads);
    }
    mo.ctx.n_threads = opts.n_threads > 0 ? opts.n_threads : hw;
    if (opts.precision == "auto") {
        mo.precision = kernels::GemmPrecision::kAuto;
    } else if (opts.precision == "f32") {
        mo.precision = kernels::GemmPrecision::kF32;
    } else if (opts.precision == "bf16") {
        // As kernels::PackedLinear decides bf16: by the CPU, whatever LAZYLLM_ISA says.
        if (!Engine::cpu_runs_bf16()) {
            return make_error(ErrorCode::kUnsupported,
                              "precision bf16 needs AVX-512-BF16, which this CPU lacks: use auto "
                              "or f32");
        }
        if (isa < kernels::Isa::kAvx512) {  // oneDNN is held to the ISA too (cap_onednn_isa)
            return make_error(ErrorCode::kInvalidArgument,
                              "precision bf16 needs AVX-512-BF16, which LAZYLLM_ISA={} leaves "
                              "out: use auto or f32",
                              kernels::isa_name(isa));
        }
        mo.precision = kernels::GemmPrecision::kBf16;
    } else {
        return make_error(ErrorCode::kInvalidArgument,
                          "precision '{}' is not one of auto, f32, bf16", opts.precision);
    }
    if (opts.prefill_weights == "auto") {
        mo.prefill_weights = PrefillWeights::kAuto;
    } else if (opts.prefill_weights == "copy") {
        mo.prefill_weights = PrefillWeights::kCopy;
    } else if (opts.prefill_weights == "quant") {
        mo.prefill_weights = PrefillWeights::kQuant;
    } else {
        return make_error(ErrorCode::kInvalidArgument,
                          "prefill weights '{}' is not one of auto, copy, quant",
                          opts.prefill_weights);
    }
    mo.quantized_decode = opts.quantized_decode;
    return mo;
}

// The summary's weight fields for a load with `mo` that keeps `plan`.
void describe_weights(const ModelLoadOptions& mo, const WeightPlan& plan, ModelSummary& s) {
    s.isa = std::string(kernels::isa_name(mo.ctx.isa));
    s.gemm = plan.prefill_quant                              ? "quant"
             : kernels::gemm_uses_bf16(mo.ctx, mo.precision) ? "bf16"
                                                             : "f32";
    s.decode = plan.quantized_decode ? "quant" : "gemm";
    s.prefill_weights = plan.prefill_choice;
    if (plan.prefill_quant && kernels::QuantLinear::has_tile_path(mo.ctx)) {
        s.prefill_weights +=
            fmt::format("; prompts of {} tokens or more on AMX bf16 tiles", kernels::kTileMinRows);
    }
    s.n_threads = mo.ctx.n_threads;
}

}  // namespace

namespace {

// The tokenizer's ids index the embedding and the logits: their counts must agree, as llama.cpp
// requires (a file with fewer tokens than rows would be given logits past its vocabulary).
Status check_vocab(const Tokenizer& tok, const ModelConfig& config) {
    if (tok.n_vocab() != config.n_vocab) {
        return make_error(ErrorCode::kCorrupt,
                          "tokenizer.ggml.tokens holds {} tokens but token_embd.weight has {} "
                          "rows",
                          tok.n_vocab(), config.n_vocab);
    }
    return {};
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::load(const EngineOptions& opts) {
    LAZYLLM_ASSIGN_OR_RETURN(ModelLoadOptions mo, model_options(opts));
    // oneDNN and our kernels share OpenMP's pool. The caller's thread count comes back after
    // the load (every parallel region names its threads; gemm.cpp sets them for oneDNN's calls).
    struct RestoreOmpThreads {
        int n = omp_get_max_threads();
        ~RestoreOmpThreads() { omp_set_num_threads(n); }
    } restore_omp_threads;
    omp_set_num_threads(mo.ctx.n_threads);

    auto impl = std::make_unique<Impl>();
    LAZYLLM_ASSIGN_OR_RETURN(impl->model, LlamaModel::load(opts.model_path, mo));
    {
        auto tok = Tokenizer::from_gguf(impl->model->gguf());
        if (!tok.ok()) return tok.error().with_context(opts.model_path);
        if (auto st = check_vocab(*tok, impl->model->config()); !st.ok()) {
            return st.error().with_context(opts.model_path);
        }
        impl->tokenizer = std::move(tok).value();
        impl->model->release_tokenizer_metadata();
    }
    LAZYLLM_ASSIGN_OR_RETURN(impl->chat,
                             choose_chat_template(opts, impl->tokenizer, impl->model->config()));
    impl->summary = make_summary(opts.model_path, impl->model->config(), impl->tokenizer,
                                 impl->model->gguf().file_size());
    ModelSummary& s = impl->summary;
    if (!opts.chat_template.empty()) {
        s.chat_template = describe_chat_template(impl->chat.tmpl);
        s.chat_template_source = "--chat-template";
    }
    const LlamaModel& model = *impl->model;
    describe_weights(mo, {model.quantized_decode(), model.prefill_quant(), model.prefill_choice()},
                     s);
    const prune::Schedule dflt = default_schedule(impl->model->config(), prune::Preset::kSafe);
    s.default_keep_first = dflt.keep_first;
    s.default_score_layers = dflt.score_layers;
    s.default_score_pool = dflt.score_pool;
    s.load_ms = impl->model->load_ms();
    s.weight_bytes = impl->model->weight_bytes();
    return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

namespace {

// What info and run --verbose show, from a parsed config and tokenizer (no weights needed).
ModelSummary make_summary(const std::string& path, const ModelConfig& c, const Tokenizer& tok,
                          uint64_t file_bytes) {
    ModelSummary s;
    s.path = path;
    s.arch = c.arch_name;
    s.name = c.name;
    s.n_layer = c.n_layer;
    s.n_embd = c.n_embd;
    s.n_head = c.n_head;
    s.n_head_kv = c.n_head_kv;
    s.head_dim = c.head_dim;
    s.n_ff = c.n_ff;
    s.n_vocab = c.n_vocab;
    s.n_ctx_train = c.n_ctx_train;
    s.rope_theta = c.rope_theta;
    s.rms_eps = c.rms_eps;
    s.tied_embeddings = c.tied_embeddings;
    s.global_layers = global_layers(c);
    s.sliding_window = c.sliding_window;
    s.file_bytes = file_bytes;
    s.tokenizer = fmt::format("{} (pre: {})", tok.kind_name(), tok.pre().empty() ? "-" : tok.pre());
    const ChatTemplateChoice chat = detect_chat_template(tok, c.arch_name);
    s.chat_template = describe_chat_template(chat.tmpl);
    s.chat_template_source = chat.recognised ? "tokenizer.chat_template" : chat.reason;
    return s;
}

}  // namespace

namespace {

// The summary of the model at `path` without its weights, and its config.
Result<std::pair<ModelSummary, ModelConfig>> read_summary(const std::string& path) {
    LAZYLLM_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::open(path));
    auto config = ModelConfig::from_gguf(gguf);
    if (!config.ok()) return config.error().with_context(path);
    auto tok = Tokenizer::from_gguf(gguf);
    if (!tok.ok()) return tok.error().with_context(path);
    if (auto st = check_vocab(*tok, *config); !st.ok()) return st.error().with_context(path);
    return std::pair{make_summary(path, *config, *tok, gguf.file_size()), std::move(*config)};
}

}  // namespace

Result<ModelSummary> Engine::inspect(const std::string& path) {
    LAZYLLM_ASSIGN_OR_RETURN(auto summary, read_summary(path));
    return std::move(summary.first);
}

bool Engine::cpu_runs_bf16() { return kernels::cpu_has_avx512_bf16(); }

Status Engine::check_options(const EngineOptions& opts) {
    LAZYLLM_TRY(model_options(opts));
    return {};
}

Result<ModelSummary> Engine::inspect(const std::string& path, const EngineOptions& opts) {
    LAZYLLM_ASSIGN_OR_RETURN(ModelLoadOptions mo, model_options(opts));
    LAZYLLM_ASSIGN_OR_RETURN(auto summary, read_summary(path));
    LAZYLLM_ASSIGN_OR_RETURN(WeightPlan plan, LlamaModel::plan_weights(summary.second, mo));
    describe_weights(mo, plan, summary.first);
    return std::move(summary.first);
}

std::string Engine::chat_prompt(std::string_view user_message, std::string_view system) const {
    std::vector<ChatMessage> msgs;
    if (!system.empty()) msgs.push_back({"system", std::string(system)});
    msgs.push_back({"user", std::string(user_message)});
    return apply_chat_template(impl_->chat.tmpl, msgs, true);
}

namespace {

Result<Schedule> resolve_schedule(const LlamaModel& model, const PruneOptions& p) {
    Schedule s = p.schedule ? *p.schedule : default_schedule(model.config(), p.preset);
    apply(p.overrides, s);
    if (p.policy != Policy::kLazy) s.tiers.clear();  // the baselines cut at the schedule's own
    // Checked with the rest of the schedule by Session::create too.
    LAZYLLM_TRY(validate_schedule(s, model.config().n_layer));
    return s;
}

Result<SessionOptions> session_options(const LlamaModel& model, const RunOptions& ro,
                                       int64_t n_prompt) {
    const ModelConfig& c = model.config();
    SessionOptions so;
    if (ro.n_ctx < 0) return make_error(ErrorCode::kInvalidArgument, "context size must be >= 0");
    if (static_cast<unsigned>(ro.prune.policy) > static_cast<unsigned>(Policy::kGemFilter) ||
        static_cast<unsigned>(ro.prune.preset) > static_cast<unsigned>(Preset::kFast)) {
        return make_error(ErrorCode::kInvalidArgument, "unknown policy {} or preset {}",
                          static_cast<int>(ro.prune.policy), static_cast<int>(ro.prune.preset));
    }
    if (ro.max_new_tokens < 0) {
        return make_error(ErrorCode::kInvalidArgument, "max new tokens must be >= 0, got {}",
                          ro.max_new_tokens);
    }
    so.n_ctx = ro.n_ctx > 0 ? ro.n_ctx
                            : std::min<int64_t>(c.n_ctx_train, n_prompt + std::max(1, ro.max_new_tokens));
    if (n_prompt > so.n_ctx) {
        return make_error(ErrorCode::kOutOfRange,
                          "the prompt has {} tokens but the context holds {} (model context {}); "
                          "shorten it or use middle truncation", n_prompt, so.n_ctx, c.n_ctx_train);
    }
    so.profile = ro.profile;
    so.seed = ro.prune.seed;
    so.policy = ro.prune.policy;
    if (so.policy == Policy::kFull) {
        if (ro.prune.schedule) {
            return make_error(ErrorCode::kInvalidArgument,
                              "a schedule was given but the policy is 'full' (use --lazy or --policy)");
        }
        return so;
    }
    LAZYLLM_ASSIGN_OR_RETURN(so.schedule, resolve_schedule(model, ro.prune));
    // A preset with no boundary, on a model with no layer to cut after (one layer, or a
    // sliding-window model whose only global layer is the last), prunes nothing: a full run.
    if (so.schedule.boundaries.empty() && !ro.prune.schedule) {
        so.policy = Policy::kFull;
        so.schedule = Schedule{};
    }
    return so;
}

// The ops of `p` less those already in `before` (the profile at an earlier point of the run).
std::vector<OpTime> op_times(const Profile& p, const Profile& before = {}) {
    std::vector<OpTime> out;
    for (size_t i = 0; i < p.ns.size(); ++i) {
        const int64_t ns = p.ns[i] - before.ns[i];
        if (ns <= 0) continue;
        const double flops = p.flops[i] - before.flops[i];
        OpTime t;
        t.op = std::string(op_kind_name(static_cast<OpKind>(i)));
        t.ms = static_cast<double>(ns) / 1e6;
        t.gflops = flops > 0 ? flops / static_cast<double>(ns) : 0.0;
        out.push_back(t);
    }
    return out;
}

// The text still held back when generation ends, to the answer and the callback: the start of
// a stop string that did not follow, or an unfinished UTF-8 sequence. Only where the answer
// goes on to its end (`to_answer`): the end of generation, the length limit, or the caller
// stopping it (Ctrl-C: the text made so far is part of its answer); a matched stop string
// drops what follows it.
void flush_held_text(StreamDecoder& stream, StopStringMatcher& stops, bool to_answer,
                     std::string& text, const TextCallback& on_text) {
    if (!to_answer) return;
    std::string rest = stops.push(stream.flush());
    if (!stops.matched()) rest += stops.flush();
    text += rest;
    if (!rest.empty() && on_text) on_text(rest);
}

std::vector<TokenId> banned_after(const Tokenizer& tok, const RunOptions& opts,
                                  int64_t n_generated) {
    return banned_tokens(tok, opts.ignore_eos, opts.stop_ids, opts.min_new_tokens, n_generated);
}

Status check_stop_options(const Tokenizer& tok, const RunOptions& opts) {
    if (opts.max_new_tokens < 0) {  // named before the rules that compare with it
        return make_error(ErrorCode::kInvalidArgument, "max new tokens must be >= 0, got {}",
                          opts.max_new_tokens);
    }
    return check_stop_rules(opts.stop_ids, opts.min_new_tokens, opts.max_new_tokens, tok.n_vocab());
}

// The wall time of a phase that no timed op covers (row copies at a cut, allocation, sampling),
// as the last row of a profile that has any, so that its rows add up to the phase's time.
void add_untimed(std::vector<OpTime>& ops, double wall_ms) {
    if (ops.empty()) return;
    double timed = 0.0;
    for (const OpTime& o : ops) timed += o.ms;
    ops.push_back(OpTime{"other", std::max(0.0, wall_ms - timed), 0.0});
}

// The result's counts, rates and profiles once generation ended.
void finish_result(GenerateResult& r, const Session& session, const Profile& prefill_profile,
                   double prefill_ms, double decode_ms, double total_ms, bool profile) {
    r.n_gen = static_cast<int64_t>(r.tokens.size());
    r.token_ms.resize(r.tokens.size());  // the last one sampled may be an end of generation
    r.decode_ms = decode_ms;
    r.decode_tps = r.n_gen > 1 ? 1000.0 * static_cast<double>(r.n_gen - 1) / r.decode_ms : 0.0;
    r.total_ms = total_ms;
    r.fraction_computed = session.prompt_fraction_computed();
    if (profile) {
        r.profile = op_times(prefill_profile);
        add_untimed(r.profile, prefill_ms);
        r.decode_profile = op_times(session.profile(), prefill_profile);
        add_untimed(r.decode_profile, decode_ms);
    }
}

}  // namespace

Result<Schedule> Engine::resolve_schedule(const PruneOptions& prune) const {
    return lazyllm::resolve_schedule(*impl_->model, prune);
}

Status Engine::validate(const RunOptions& opts) const {
    LAZYLLM_TRY(lazyllm::validate(opts.sampling));
    LAZYLLM_TRY(check_stop_options(impl_->tokenizer, opts));
    LAZYLLM_ASSIGN_OR_RETURN(SessionOptions so, session_options(*impl_->model, opts, 1));
    so.n_ctx = 1;  // validates the schedule against the model without a real cache
    auto session = Session::create(*impl_->model, so);
    if (!session.ok()) return session.error();
    return {};
}

Result<std::vector<float>> Engine::first_token_logits(std::span<const TokenId> prompt,
                                                      const RunOptions& opts,
                                                      double* fraction_computed) const {
    if (prompt.empty()) return make_error(ErrorCode::kInvalidArgument, "empty prompt");
    RunOptions ro = opts;
    ro.max_new_tokens = 1;
    LAZYLLM_ASSIGN_OR_RETURN(SessionOptions so, session_options(*impl_->model, ro, static_cast<int64_t>(prompt.size())));
    LAZYLLM_ASSIGN_OR_RETURN(Session session, impl_->new_session(so));
    std::vector<float> logits(static_cast<size_t>(impl_->model->config().n_vocab));
    LAZYLLM_TRY(session.step(prompt, logits.data(), StepTokens::kPrompt));
    if (fraction_computed) *fraction_computed = session.prompt_fraction_computed();
    impl_->keep_idle(std::move(session));
    return logits;
}

Result<GenerateResult> Engine::generate(std::span<const TokenId> prompt, const RunOptions& opts,
                                        const TextCallback& on_text) const {
    if (prompt.empty()) return make_error(ErrorCode::kInvalidArgument, "empty prompt");
    LAZYLLM_TRY(lazyllm::validate(opts.sampling));
    const LlamaModel& model = *impl_->model;
    const Tokenizer& tok = impl_->tokenizer;
    LAZYLLM_TRY(check_stop_options(tok, opts));
    LAZYLLM_ASSIGN_OR_RETURN(SessionOptions so, session_options(model, opts, static_cast<int64_t>(prompt.size())));
    LAZYLLM_ASSIGN_OR_RETURN(Session session, impl_->new_session(so));

    GenerateResult r;
    r.n_prompt = static_cast<int64_t>(prompt.size());
    r.policy = std::string(prune::policy_name(so.policy));
    if (so.policy != prune::Policy::kFull) r.schedule = prune::to_string(so.schedule);
    std::vector<float> logits(static_cast<size_t>(model.config().n_vocab));
    Sampler sampler(opts.sampling);
    sampler.ban(banned_after(tok, opts, 0));
    StreamDecoder stream(tok);
    StopStringMatcher stops(opts.stop);
    std::vector<TokenId> history(prompt.begin(), prompt.end());

    Timer total;
    bool keep_going = true;
    auto emit = [&](const std::string& piece) {
        if (piece.empty() || !keep_going) return;
        const std::string out = stops.push(piece);
        r.text += out;
        if (!out.empty() && on_text && !on_text(out)) {
            keep_going = false;
            r.stop_reason = "callback";
        }
        if (stops.matched()) {
            keep_going = false;
            r.stop_reason = "stop";
        }
    };

    LAZYLLM_ASSIGN_OR_RETURN(StepStats prefill,
                             session.step(prompt, logits.data(), StepTokens::kPrompt));
    r.prefill_rows_per_layer = prefill.rows_per_layer;
    r.prefill_tail_rows_per_layer = prefill.tail_rows_per_layer;
    r.prefill_fraction_computed = session.prompt_fraction_computed();
    r.first_token_verified = prefill.verified;
    LAZYLLM_TRY(check_logits_finite(logits, 0));
    TokenId next = sampler.sample(logits, history);
    r.ttft_ms = total.elapsed_ms();
    r.token_ms.push_back(r.ttft_ms);
    if (opts.keep_first_logits) r.first_logits = logits;
    r.prefill_tps = 1000.0 * static_cast<double>(r.n_prompt) / prefill.ms;
    const Profile prefill_profile = session.profile();

    Timer decode;
    while (true) {
        if (opts.max_new_tokens == 0) {
            r.stop_reason = "length";
            break;
        }
        if (!opts.ignore_eos && tok.is_end_of_generation(next)) {
            r.stop_reason = "eos";
            break;
        }
        if (std::find(opts.stop_ids.begin(), opts.stop_ids.end(), next) != opts.stop_ids.end()) {
            r.stop_reason = "stop";
            break;
        }
        r.tokens.push_back(next);
        if (std::ssize(r.tokens) == opts.min_new_tokens)
            sampler.ban(banned_after(tok, opts, opts.min_new_tokens));
        history.push_back(next);
        emit(stream.push(next));
        if (!keep_going) break;
        if (static_cast<int>(r.tokens.size()) >= opts.max_new_tokens) {
            r.stop_reason = "length";
            break;
        }
        if (session.n_past() >= session.n_ctx()) {
            r.stop_reason = "context";
            break;
        }
        const TokenId cur = next;
        LAZYLLM_ASSIGN_OR_RETURN(StepStats st, session.step(std::span<const TokenId>(&cur, 1), logits.data()));
        r.revivals_per_step.push_back(st.revived);
        LAZYLLM_TRY(check_logits_finite(logits, static_cast<int64_t>(r.tokens.size())));
        next = sampler.sample(logits, history);
        r.token_ms.push_back(total.elapsed_ms());
    }
    if (keep_going) emit(stream.flush());
    flush_held_text(stream, stops, keep_going || r.stop_reason == "callback", r.text, on_text);
    finish_result(r, session, prefill_profile, prefill.ms, decode.elapsed_ms(), total.elapsed_ms(),
                  opts.profile);
    impl_->keep_idle(std::move(session));
    return r;
}

// Conversations for servers (include/lazyllm/conversation.h, src/runtime/conversation.cpp).
std::string Engine::chat_prompt(const std::vector<ChatMessage>& messages,
                                bool continue_final) const {
    if (continue_final && !messages.empty() && messages.back().role == "assistant") {
        // The turns before it, the assistant's opening, then its text with no end of turn.
        const std::vector<ChatMessage> before(messages.begin(), messages.end() - 1);
        return apply_chat_template(impl_->chat.tmpl, before, true) + messages.back().content;
    }
    return apply_chat_template(impl_->chat.tmpl, messages, true);
}

Result<std::unique_ptr<Conversation>> Engine::open_conversation(const PruneOptions& prune,
                                                                int64_t n_ctx) const {
    const LlamaModel& model = *impl_->model;
    if (n_ctx < 0) {
        return make_error(ErrorCode::kInvalidArgument, "context size must be >= 0, got {}", n_ctx);
    }
    RunOptions ro;
    ro.prune = prune;
    ro.n_ctx = n_ctx > 0 ? n_ctx : model.config().n_ctx_train;
    LAZYLLM_ASSIGN_OR_RETURN(SessionOptions so, session_options(model, ro, 1));
    LAZYLLM_ASSIGN_OR_RETURN(Session session, Session::create(model, so));
    auto impl = std::make_unique<Conversation::Impl>(model, impl_->tokenizer, std::move(session));
    impl->owner = impl_;
    impl->policy = std::string(prune::policy_name(so.policy));
    if (so.policy != prune::Policy::kFull) impl->schedule = prune::to_string(so.schedule);
    return std::make_unique<Conversation>(std::move(impl));
}

}  // namespace lazyllm
