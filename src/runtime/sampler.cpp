#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "base/check.h"

namespace lazyllm {

float top_two_gap(std::span<const float> logits) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    float first = kNegInf, second = kNegInf;
    for (float x : logits) {
        if (std::isnan(x)) x = kNegInf;
        if (x > first) {
            second = first;
            first = x;
        } else if (x > second) {
            second = x;
        }
    }
    if (first == kNegInf || first == second) return 0.0f;
    if (second == kNegInf) return std::numeric_limits<float>::infinity();
    return first - second;
}

Status validate(const SamplingParams& params) {
    // Negated comparisons so that NaN fails every check.
    if (!(params.temperature >= 0.0f) || std::isinf(params.temperature)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "temperature must be >= 0 and finite (0 means greedy), got {}",
                          params.temperature);
    }
    if (params.top_k < 0) {
        return make_error(ErrorCode::kInvalidArgument, "top_k must be >= 0 (0 means off), got {}",
                          params.top_k);
    }
    if (!(params.top_p > 0.0f && params.top_p <= 1.0f)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "top_p must be in (0, 1] (1 means off), got {}", params.top_p);
    }
    if (!(params.min_p >= 0.0f && params.min_p < 1.0f)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "min_p must be in [0, 1) (0 means off), got {}", params.min_p);
    }
    if (!(params.repetition_penalty > 0.0f) || std::isinf(params.repetition_penalty)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "repetition_penalty must be > 0 and finite (1 means off), got {}",
                          params.repetition_penalty);
    }
    for (const auto& [name, v] : {std::pair{"presence_penalty", params.presence_penalty},
                                  std::pair{"frequency_penalty", params.frequency_penalty}}) {
        if (!std::isfinite(v)) {
            return make_error(ErrorCode::kInvalidArgument,
                              "{} must be finite (0 means off), got {}", name, v);
        }
    }
    if (params.repeat_last_n < 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "repeat_last_n must be >= 0 (0 means off), got {}", params.repeat_last_n);
    }
    return {};
}

namespace {

uint64_t draw_seed() {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd());
}

}  // namespace

Status check_logits_finite(std::span<const float> logits, int64_t n_gen) {
    for (size_t i = 0; i < logits.size(); ++i) {
        if (!std::isfinite(logits[i])) {
            return make_error(
                ErrorCode::kCorrupt,
                "the model's logits are not finite ({} for token {}) after {}; its "
                "weights may hold NaN or Inf",
                logits[i], i,
                n_gen == 0 ? std::string("the prompt") : fmt::format("{} generated tokens", n_gen));
        }
    }
    return {};
}

Status check_stop_rules(std::span<const TokenId> stop_ids, int min_new_tokens, int max_new_tokens,
                        int32_t n_vocab) {
    for (TokenId id : stop_ids) {
        if (id < 0 || id >= n_vocab) {
            return make_error(ErrorCode::kInvalidArgument,
                              "stop token id {} is outside the vocabulary [0, {})", id, n_vocab);
        }
    }
    if (min_new_tokens < 0 || min_new_tokens > max_new_tokens) {
        return make_error(ErrorCode::kInvalidArgument,
                          "min_new_tokens must be in [0, max_new_tokens {}], got {}",
                          max_new_tokens, min_new_tokens);
    }
    return {};
}

std::vector<TokenId> banned_tokens(const Tokenizer& tok, bool ignore_eos,
                                   std::span<const TokenId> stop_ids, int min_new_tokens,
                                   int64_t n_generated) {
    const bool early = n_generated < min_new_tokens;
    std::vector<TokenId> ids;
    if (ignore_eos || early) ids = tok.end_of_generation_ids();
    if (early) ids.insert(ids.end(), stop_ids.begin(), stop_ids.end());
    return ids;
}

Sampler::Sampler(SamplingParams params) : params_(params) {
    Status status = validate(params_);
    LAZYLLM_CHECK_MSG(status.ok(), status.error().message().c_str());
    seed_ = params_.seed ? *params_.seed : draw_seed();
    rng_.seed(seed_);
}

double Sampler::next_uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

void Sampler::apply_penalties(std::span<const TokenId> history) {
    const float penalty = params_.repetition_penalty;
    const float presence = params_.presence_penalty, frequency = params_.frequency_penalty;
    if ((penalty == 1.0f && presence == 0.0f && frequency == 0.0f) || params_.repeat_last_n == 0 ||
        history.empty()) {
        return;
    }
    const auto n_vocab = static_cast<TokenId>(cands_.size());
    const size_t n_last = std::min(history.size(), static_cast<size_t>(params_.repeat_last_n));
    std::span<const TokenId> last = history.last(n_last);
    for (TokenId id : last) {
        if (id >= 0 && id < n_vocab) ++count_[id];
    }
    // cands_ is still in id order here, so cands_[id] is token id. Each distinct token of the
    // window once: the repeat penalty whatever its count (llama.cpp; HF's gather/scatter by id
    // too), then the frequency penalty per occurrence and the presence penalty.
    for (TokenId id : last) {
        if (id < 0 || id >= n_vocab || count_[id] == 0) continue;
        float& logit = cands_[id].logit;
        const float before = logit;
        const auto n = static_cast<float>(count_[id]);
        count_[id] = 0;
        if (std::isinf(before)) continue;  // a banned (or NaN) token stays out
        logit = before > 0.0f ? before / penalty : before * penalty;
        logit -= n * frequency + presence;
        if (!std::isfinite(logit)) {
            // Penalties near the float range overflowed: the same terms in double, clamped to a
            // finite logit (an infinite one would make the softmax NaN).
            const double v = (before > 0.0f ? double{before} / penalty : double{before} * penalty) -
                             (double{n} * frequency + presence);
            logit = static_cast<float>(std::clamp(v, double{std::numeric_limits<float>::lowest()},
                                                  double{std::numeric_limits<float>::max()}));
        }
    }
}

TokenId Sampler::argmax() const {
    // Strict > keeps the first (lowest id) of equal maxima.
    size_t best = 0;
    for (size_t i = 1; i < cands_.size(); ++i) {
        if (cands_[i].logit > cands_[best].logit) best = i;
    }
    return cands_[best].id;
}

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Total order: higher logit first, then lower id. Deterministic whatever the algorithm.
template <typename C>
bool by_logit(const C& a, const C& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

}  // namespace

TokenId Sampler::sample(std::span<const float> logits, std::span<const TokenId> history) {
    load_candidates(logits, history);
    if (params_.temperature <= 0.0f) return argmax();
    Survivors s = top_k();
    if (!softmax(s)) {
        // Every candidate is masked: fall back to the lowest id, as greedy would.
        return s.sorted ? cands_[0].id : argmax();
    }
    min_p(s);
    top_p(s);
    return draw(s);
}

// cands_ in id order: the logits (NaN as -inf), the banned ids masked, the penalties applied.
void Sampler::load_candidates(std::span<const float> logits, std::span<const TokenId> history) {
    LAZYLLM_CHECK(!logits.empty());
    LAZYLLM_CHECK(logits.size() <= static_cast<size_t>(std::numeric_limits<TokenId>::max()));
    const size_t n_vocab = logits.size();
    if (cands_.size() != n_vocab) {
        cands_.resize(n_vocab);
        count_.assign(n_vocab, 0);
    }
    for (size_t i = 0; i < n_vocab; ++i) {
        const float l = logits[i];
        cands_[i] = {std::isnan(l) ? kNegInf : l, 0.0f, static_cast<TokenId>(i)};
    }
    for (TokenId id : banned_) {
        if (id >= 0 && static_cast<size_t>(id) < n_vocab)
            cands_[static_cast<size_t>(id)].logit = kNegInf;
    }
    apply_penalties(history);
}

Sampler::Survivors Sampler::top_k() {
    const size_t n_vocab = cands_.size();
    if (params_.top_k <= 0 || static_cast<size_t>(params_.top_k) >= n_vocab)
        return {n_vocab, false};
    const auto k = static_cast<size_t>(params_.top_k);
    std::partial_sort(cands_.begin(), cands_.begin() + static_cast<ptrdiff_t>(k), cands_.end(),
                      by_logit<Candidate>);
    return {k, true};
}

// Softmax with temperature over the survivors: p_i ~ exp((l_i - l_max) / T).
bool Sampler::softmax(Survivors& s) {
    float max_logit = cands_[0].logit;
    if (!s.sorted) {
        for (size_t i = 1; i < s.n; ++i) max_logit = std::max(max_logit, cands_[i].logit);
    }
    if (max_logit == kNegInf) return false;
    const float inv_temp = 1.0f / params_.temperature;
    double sum = 0.0;
    for (size_t i = 0; i < s.n; ++i) {
        // Explicit cases keep extreme temperatures finite: 0 * inf and -inf * 0 would be NaN.
        const float d = cands_[i].logit - max_logit;
        const float p = d == 0.0f ? 1.0f : (d == kNegInf ? 0.0f : std::exp(d * inv_temp));
        cands_[i].p = p;
        sum += p;
    }
    const auto inv_sum = static_cast<float>(1.0 / sum);
    for (size_t i = 0; i < s.n; ++i) cands_[i].p *= inv_sum;
    s.p_max = inv_sum;  // the top candidate had exp(0) = 1
    return true;
}

// min-p keeps p_i >= min_p * p_max. Applied before top-p here, but with the same result as the
// chain's top-p -> min-p: both keep a prefix of the (logit desc, id asc) order, min-p's test is
// invariant under renormalization, and top-p below still uses the probabilities normalized over
// the pre-min-p set. Filtering first makes the top-p sort small when top-k is off (full
// 49152-entry vocabularies).
void Sampler::min_p(Survivors& s) {
    if (params_.min_p <= 0.0f) return;
    const float threshold = params_.min_p * s.p_max;
    size_t n_keep = 0;
    for (size_t i = 0; i < s.n; ++i) {
        if (cands_[i].p >= threshold) cands_[n_keep++] = cands_[i];  // keeps order
    }
    s.n = n_keep;
}

// top-p: the smallest prefix of the sorted survivors whose cumulative probability reaches top_p
// (llama.cpp llama_sampler_top_p_apply; at least one token).
void Sampler::top_p(Survivors& s) {
    if (params_.top_p >= 1.0f) return;
    if (!s.sorted) {
        std::sort(cands_.begin(), cands_.begin() + static_cast<ptrdiff_t>(s.n),
                  by_logit<Candidate>);
        s.sorted = true;
    }
    double cum = 0.0;
    for (size_t i = 0; i < s.n; ++i) {
        cum += cands_[i].p;
        if (cum >= params_.top_p) {
            s.n = i + 1;
            return;
        }
    }
}

// Draws from the renormalized survivors: the first candidate whose running sum exceeds
// u * total. Zero-probability candidates are never picked.
TokenId Sampler::draw(const Survivors& s) {
    double total = 0.0;
    for (size_t i = 0; i < s.n; ++i) total += cands_[i].p;
    const double target = next_uniform() * total;
    double acc = 0.0;
    size_t last_positive = 0;
    for (size_t i = 0; i < s.n; ++i) {
        if (cands_[i].p <= 0.0f) continue;
        acc += cands_[i].p;
        last_positive = i;
        if (acc > target) return cands_[i].id;
    }
    return cands_[last_positive].id;  // rounding: target at the very top of the range
}

}  // namespace lazyllm
