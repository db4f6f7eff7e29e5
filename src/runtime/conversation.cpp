// Conversation: a Session kept across turns (include/lazyllm/conversation.h). A turn is the
// generate loop of engine.cpp cut into calls: start_turn (prefix reuse, truncation, one step
// over the new suffix, first sample), then next() once per token.
#include "lazyllm/conversation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/check.h"
#include "runtime/conversation_impl.h"

namespace lazyllm {

namespace {

// The log-softmax of `logits` at `id`, and the k largest (ties to the lower id; NaN as -inf).
TokenLogprob logprob_of(std::span<const float> logits, TokenId id, int k,
                        std::vector<int32_t>& order) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    auto at = [&](size_t i) { return std::isnan(logits[i]) ? kNegInf : logits[i]; };
    float max = kNegInf;
    for (size_t i = 0; i < logits.size(); ++i) max = std::max(max, at(i));
    double sum = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) sum += std::exp(static_cast<double>(at(i) - max));
    const auto lse = static_cast<float>(max + std::log(sum));
    TokenLogprob r;
    r.id = id;
    r.logprob = at(static_cast<size_t>(id)) - lse;
    const auto n_top = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), logits.size());
    if (n_top == 0) return r;
    order.resize(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(
        order.begin(), order.begin() + static_cast<ptrdiff_t>(n_top), order.end(),
        [&](int32_t a, int32_t b) { return at(a) > at(b) || (at(a) == at(b) && a < b); });
    for (size_t i = 0; i < n_top; ++i)
        r.top.emplace_back(order[i], at(static_cast<size_t>(order[i])) - lse);
    return r;
}

// The tokens the next sample may not be (banned_tokens: ignore_eos, min_new_tokens).
std::vector<TokenId> banned_now(const Conversation::Impl& c) {
    return banned_tokens(*c.tok, c.opts.ignore_eos, c.opts.stop_ids, c.opts.min_new_tokens,
                         static_cast<int64_t>(c.generated.size()));
}

// Samples `next` from the last step's logits (and its log-probabilities when asked).
void sample_next(Conversation::Impl& c) {
    // The bans change once, when min_new_tokens are out.
    if (static_cast<int64_t>(c.generated.size()) == c.opts.min_new_tokens)
        c.sampler->ban(banned_now(c));
    // JSON mode samples from the logits of the tokens that keep the answer JSON (all of them,
    // should none be left).
    std::span<const float> logits = c.logits;
    if (c.json) {
        c.masked.assign(c.logits.begin(), c.logits.end());
        if (c.json_mask->apply(*c.json, c.masked)) logits = c.masked;
    }
    c.next = c.sampler->sample(logits, c.history);
    if (c.opts.logprobs >= 0)
        c.next_logprob = logprob_of(c.logits, c.next, c.opts.logprobs, c.top_order);
}

// The logits of c's last step are finite (check_logits_finite), or the turn ends with its error.
Status finite_logits(Conversation::Impl& c) {
    Status st = check_logits_finite(c.logits, static_cast<int64_t>(c.generated.size()));
    if (!st.ok()) c.in_turn = false;
    return st;
}

// JSON mode's state after the text the answer continues (TurnOptions::json_prefix).
Result<JsonPrefix> json_state_after(std::string_view text) {
    JsonPrefix json;
    if (json.feed(text) && !json.complete()) return json;
    return make_error(
        ErrorCode::kInvalidArgument, "JSON mode: the text the answer continues ({} bytes) {}",
        text.size(),
        json.complete() ? "holds a whole JSON object" : "is not the start of a JSON object");
}

// A turn's prompt and options, checked before anything of the conversation changes.
Status check_turn(const Conversation::Impl& c, std::span<const TokenId> prompt,
                  const TurnOptions& opts) {
    if (prompt.empty()) return make_error(ErrorCode::kInvalidArgument, "empty prompt");
    if (opts.max_new_tokens < 0) {
        return make_error(ErrorCode::kInvalidArgument, "max_new_tokens must be >= 0, got {}",
                          opts.max_new_tokens);
    }
    LAZYLLM_TRY(validate(opts.sampling));
    if (opts.logprobs < -1 || opts.logprobs > 20) {
        return make_error(ErrorCode::kInvalidArgument,
                          "logprobs must be in [0, 20] (-1: off), got {}", opts.logprobs);
    }
    const auto n_prompt = static_cast<int64_t>(prompt.size());
    if (n_prompt + opts.max_new_tokens > c.session.n_ctx()) {
        return make_error(ErrorCode::kOutOfRange,
                          "the prompt has {} tokens and {} new tokens were asked for, over the "
                          "context of {}",
                          n_prompt, opts.max_new_tokens, c.session.n_ctx());
    }
    const int32_t n_vocab = c.tok->n_vocab();
    for (TokenId id : prompt) {
        if (id < 0 || id >= n_vocab) {
            return make_error(ErrorCode::kInvalidArgument,
                              "token id {} is outside the vocabulary [0, {})", id, n_vocab);
        }
    }
    return check_stop_rules(opts.stop_ids, opts.min_new_tokens, opts.max_new_tokens, n_vocab);
}

}  // namespace

Conversation::Conversation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Conversation::~Conversation() = default;

std::span<const TokenId> Conversation::tokens() const { return impl_->session.tokens(); }
int64_t Conversation::n_past() const { return impl_->session.n_past(); }
int64_t Conversation::n_ctx() const { return impl_->session.n_ctx(); }
bool Conversation::in_turn() const { return impl_->in_turn; }
const TurnStats& Conversation::stats() const { return impl_->stats; }
const std::vector<TokenId>& Conversation::generated() const { return impl_->generated; }
const std::string& Conversation::policy() const { return impl_->policy; }
const std::string& Conversation::schedule() const { return impl_->schedule; }

int64_t Conversation::common_prefix(std::span<const TokenId> prompt) const {
    const auto& cached = impl_->session.tokens();
    const size_t n = std::min(cached.size(), prompt.size());
    size_t i = 0;
    while (i < n && cached[i] == prompt[i]) ++i;
    return static_cast<int64_t>(i);
}

Status Conversation::truncate(int64_t n) {
    if (impl_->in_turn) {
        return Error(ErrorCode::kInvalidArgument,
                     "truncate() during a turn (end it first: abandon())");
    }
    if (n < 0 || n > n_past()) {
        return make_error(ErrorCode::kOutOfRange, "truncate({}) outside [0, n_past {}]", n,
                          n_past());
    }
    impl_->session.truncate(n);
    if (n < impl_->prompt_logits_n) impl_->prompt_logits_n = 0;
    return {};
}

void Conversation::abandon() { impl_->in_turn = false; }

Status check_json_prefix(std::string_view text) {
    auto json = json_state_after(text);
    if (!json.ok()) return json.error();
    return {};
}

Result<TurnDelta> Conversation::start_turn(std::span<const TokenId> prompt,
                                           const TurnOptions& opts) {
    Impl& c = *impl_;
    std::optional<JsonPrefix> json;
    if (opts.json_object) {
        LAZYLLM_ASSIGN_OR_RETURN(json, json_state_after(opts.json_prefix));
    }
    LAZYLLM_TRY(check_turn(c, prompt, opts));
    const auto n_prompt = static_cast<int64_t>(prompt.size());
    c.in_turn = false;
    c.turn_timer.reset();
    c.stats = TurnStats{};
    c.opts = opts;
    c.generated.clear();
    c.history.assign(prompt.begin(), prompt.end());
    c.sampler.emplace(opts.sampling);
    c.sampler->ban(banned_now(c));  // ignore_eos as llama-server's, and min_new_tokens
    c.stream.emplace(*c.tok);
    c.stops.emplace(opts.stop);
    c.json.reset();
    if (opts.json_object) {
        if (!c.json_mask) c.json_mask = std::make_shared<JsonTokenMask>(*c.tok);
        c.json = json;
    }
    c.pending_logprobs.clear();
    c.decoded_bytes = 0;
    c.released_bytes = 0;

    c.stats.n_prompt = n_prompt;
    const int64_t common = common_prefix(prompt);
    const bool again = common >= n_prompt && c.prompt_logits_n == n_prompt;
    if (again && c.session.first_revived_since_prompt() >= n_prompt) {
        // The prompt of an earlier step again, still cached as that step left it: its logits
        // were kept, so the first sample is a cold run's (a one-token step over the cache would
        // round differently from the last row of the prompt step, and may flip a near-tie).
        if (n_past() > n_prompt) c.session.truncate(n_prompt);
        c.logits = c.prompt_logits;
        c.stats.n_cached = n_prompt;
    } else {
        // Keep the common prefix, but always run at least the last prompt token: its logits
        // give the first sample. The same prompt whose tokens decode steps revived since
        // (LazyLLM without repair) runs again whole, as cold.
        const int64_t keep = again ? 0 : std::min(common, n_prompt - 1);
        if (keep < n_past()) c.session.truncate(keep);
        c.prompt_logits_n = 0;
        const std::span<const TokenId> suffix = prompt.subspan(static_cast<size_t>(keep));
        c.logits.resize(static_cast<size_t>(c.tok->n_vocab()));
        LAZYLLM_ASSIGN_OR_RETURN(StepStats st,
                                 c.session.step(suffix, c.logits.data(), StepTokens::kPrompt));
        LAZYLLM_TRY(finite_logits(c));
        c.prompt_logits = c.logits;
        c.prompt_logits_n = n_prompt;
        const int L = c.model->config().n_layer;
        int64_t suffix_pairs = 0;
        for (int64_t t = keep; t < n_prompt; ++t) suffix_pairs += c.session.depth()[t];
        c.stats.n_cached = keep;
        c.stats.prompt_ms = st.ms;
        c.stats.revived = st.revived;
        // The depths say L after the repair: count its pairs, less an earlier step's repair.
        if (st.verified) suffix_pairs = st.token_layers - st.earlier_repair_token_layers;
        c.stats.verified = st.verified;
        c.stats.prefill_fraction_computed =
            static_cast<double>(suffix_pairs) / (static_cast<double>(suffix.size()) * L);
    }
    sample_next(c);
    c.stats.ttft_ms = c.turn_timer.elapsed_ms();
    c.decode_timer.reset();
    c.in_turn = true;
    c.step_due = false;
    return TurnDelta{};
}

// next() in two halves around the decode step, so that next_batch can run the steps of several
// conversations together: the step on the token emitted last (when step_due), then emit(): the
// token sampled goes out at once; true when the turn goes on and needs a step on c.next.
// after_step(): samples the next token.
namespace {

// Moves into d the pending logprob entries whose text is out: those it ends while the turn
// goes on; at its end, every one (or, after a stop string, those whose text starts before it).
void release_logprobs(Conversation::Impl& c, TurnDelta& d, bool at_end) {
    auto& pending = c.pending_logprobs;
    while (!pending.empty()) {
        const auto& front = pending.front();
        const bool out = at_end ? !c.stops->matched() || front.start < c.released_bytes
                                : front.end <= c.released_bytes;
        if (!out) break;
        d.logprobs.push_back(std::move(pending.front().entry));
        pending.pop_front();
    }
    if (at_end) pending.clear();
}

// Text past the stop strings into d.
void release_text(Conversation::Impl& c, TurnDelta& d, const std::string& text) {
    c.released_bytes += static_cast<int64_t>(text.size());
    d.text += text;
}

bool emit(Conversation::Impl& c, TurnDelta& d) {
    auto finish = [&](const char* reason, bool flush) {
        if (flush) {
            release_text(c, d, c.stops->push(c.stream->flush()));
            if (!c.stops->matched()) release_text(c, d, c.stops->flush());
        }
        release_logprobs(c, d, true);
        if (c.stops->matched()) reason = "stop";
        c.stats.stop_reason = reason;
        c.stats.n_gen = static_cast<int64_t>(c.generated.size());
        c.stats.decode_ms = c.decode_timer.elapsed_ms();
        c.in_turn = false;
        d.done = true;
        return false;
    };
    if (c.opts.max_new_tokens == 0) return finish("length", true);
    if (!c.opts.ignore_eos && c.tok->is_end_of_generation(c.next)) return finish("eos", true);
    if (std::find(c.opts.stop_ids.begin(), c.opts.stop_ids.end(), c.next) != c.opts.stop_ids.end())
        return finish("stop", true);
    c.generated.push_back(c.next);
    c.history.push_back(c.next);
    const std::string decoded = c.stream->push(c.next);
    if (c.opts.logprobs >= 0) {
        const int64_t start = c.decoded_bytes;
        c.pending_logprobs.push_back(
            {std::move(c.next_logprob), start, start + static_cast<int64_t>(decoded.size())});
    }
    c.decoded_bytes += static_cast<int64_t>(decoded.size());
    release_text(c, d, c.stops->push(decoded));
    if (c.stops->matched()) return finish("stop", false);
    release_logprobs(c, d, false);
    if (c.json && c.json->feed(c.json_mask->piece(c.next)) && c.json->complete()) {
        return finish("stop", true);
    }
    if (static_cast<int>(c.generated.size()) >= c.opts.max_new_tokens) return finish("length", true);
    if (c.session.n_past() >= c.session.n_ctx()) return finish("context", true);
    return true;
}

void after_step(Conversation::Impl& c, int64_t revived) {
    c.stats.revived += revived;
    sample_next(c);
    c.stats.n_gen = static_cast<int64_t>(c.generated.size());
}

}  // namespace

Result<TurnDelta> Conversation::next() {
    Impl& c = *impl_;
    if (!c.in_turn) {
        return Error(ErrorCode::kInvalidArgument,
                     "next() outside a turn (start_turn() first; the turn is done or abandoned)");
    }
    if (c.step_due) {
        if (auto st = next_step_alone(); !st.ok()) return st.error();
    }
    TurnDelta d;
    c.step_due = emit(c, d);
    return d;
}

Status Conversation::next_batch(std::span<Conversation* const> convs,
                                std::vector<TurnDelta>& deltas) {
    deltas.resize(convs.size());
    for (TurnDelta& d : deltas) d = TurnDelta{};
    if (convs.empty()) return {};
    // Every conversation once, in a turn, of one model: checked before any of them steps.
    for (size_t i = 0; i < convs.size(); ++i) {
        if (convs[i] == nullptr) {
            return make_error(ErrorCode::kInvalidArgument, "next_batch(): conversation {} is null",
                              i);
        }
        if (!convs[i]->impl_->in_turn) {
            return make_error(ErrorCode::kInvalidArgument,
                              "next_batch(): conversation {} is not in a turn", i);
        }
        if (convs[i]->impl_->model != convs[0]->impl_->model) {
            return make_error(ErrorCode::kInvalidArgument,
                              "next_batch(): conversation {} is of another engine than 0", i);
        }
        for (size_t j = 0; j < i; ++j) {
            if (convs[j] == convs[i]) {
                return make_error(ErrorCode::kInvalidArgument,
                                  "next_batch(): conversation {} is conversation {} again", i, j);
            }
        }
    }
    // The conversations whose turn goes on and whose step can be batched (scratch: the first's).
    Impl& first = *convs[0]->impl_;
    std::vector<Impl*>& batch = first.batch;
    std::vector<TokenId>& tokens = first.batch_tokens;
    std::vector<Session*>& sessions = first.batch_sessions;
    batch.clear();
    tokens.clear();
    sessions.clear();
    for (size_t i = 0; i < convs.size(); ++i) {
        Impl& c = *convs[i]->impl_;
        if (!c.step_due) continue;
        if (c.session.batchable()) {
            batch.push_back(&c);
            tokens.push_back(c.next);
            sessions.push_back(&c.session);
            continue;
        }
        auto r = convs[i]->next_step_alone();
        if (!r.ok()) return r.error();
    }
    if (batch.size() == 1) {
        auto r = batch[0]->session.step(std::span<const TokenId>(&tokens[0], 1), batch[0]->logits.data());
        if (!r.ok()) return r.error();
        LAZYLLM_TRY(finite_logits(*batch[0]));
        after_step(*batch[0], r->revived);
    } else if (!batch.empty()) {
        // In forwards of at most max_batch() sessions (a server's --parallel may be larger).
        const size_t V = batch[0]->logits.size();
        const auto most = static_cast<size_t>(batch[0]->session.max_batch());
        std::vector<float>& logits = batch[0]->batch_logits;
        logits.resize(std::min(batch.size(), most) * V);
        for (size_t b0 = 0; b0 < batch.size(); b0 += most) {
            const size_t n = std::min(most, batch.size() - b0);
            LAZYLLM_TRY(Session::step_batch(std::span(sessions).subspan(b0, n),
                                            std::span(tokens).subspan(b0, n), logits.data()));
            for (size_t i = 0; i < n; ++i) {
                Impl& c = *batch[b0 + i];
                std::copy_n(logits.begin() + static_cast<int64_t>(i * V), V, c.logits.begin());
                LAZYLLM_TRY(finite_logits(c));
                after_step(c, 0);
            }
        }
    }
    for (size_t i = 0; i < convs.size(); ++i) {
        Impl& c = *convs[i]->impl_;
        c.step_due = emit(c, deltas[i]);
    }
    return {};
}

Status Conversation::next_step_alone() {
    Impl& c = *impl_;
    const TokenId cur = c.next;
    auto st = c.session.step(std::span<const TokenId>(&cur, 1), c.logits.data());
    if (!st.ok()) {
        c.in_turn = false;
        return st.error();
    }
    LAZYLLM_TRY(finite_logits(c));
    after_step(c, st->revived);
    return {};
}

}  // namespace lazyllm
