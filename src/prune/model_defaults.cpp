#include "prune/model_defaults.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <utility>

namespace lazyllm::prune {

namespace {

// One preset's schedule as plain data (up to three boundaries; unused ones 0).
struct PresetSchedule {
    int boundaries[3];
    float keep[3];
    int keep_first;
    int keep_recent;
    int min_context;
    bool prune_decode;
    int score_layers;
    int score_pool;
    int revive_max;  // -1: no bound
    float revive_weight;
    bool repair;
    // Schedule::tiers (min_context 0: none).
    struct Tier {
        int min_context;
        int boundaries[3];
        float keep[3];
    } tiers[2] = {};
};

struct Entry {
    ModelShape shape;
    PresetSchedule safe, fast;
    std::string_view source;
};

// SmolLM2-135M (30 layers, d 576, 9 heads, vocab 49152), the first entry: the generic fast
// preset is its fast one laid out by depth (generic_fast).
// fast: schedules/smollm2-135m-instruct-fast.json, the output of
//   lazyllm tune --preset fast --tasks passkey --lengths 2048,4096,8192 --depths 8
// the cheapest of 23 schedules searched that kept every passkey full got right (predicted 40.5%
// of prefill token-layers), with the score summed over 3 layers and max-pooled over 11 positions
// (docs/lazyllm.md). The first 40 tokens (the chat template's system turn) are protected:
// without it chat-wrapped multi-document QA scored 0 (docs/lazyllm.md).
// safe: nothing below 3072 tokens of context (min_context): on prompts of 1k and 2k every
// schedule tried changed full's first token on a few prompts in 108 (the tuned late cuts
// before layers 21 and 27 keeping 0.35 and 0.1: 7, where the bf16 path against the fp32 path
// changes 2) for a TTFT gain of 1.2-1.35x (docs/lazyllm.md, "Presets").
// From 3072 to 6143 tokens (a tier) it cuts before layers 9, 15 and 27 keeping 0.4, 0.25 and 0.15
// (schedules/smollm2-135m-instruct-safe-long.json): the output of
//   lazyllm tune --lazy-min-context 256 --answer-tokens 1 --target 0.98 --depths 6
//                --max-boundaries 3 --first-boundaries 0.1,...,0.8 --later-boundaries 0.3,...,0.9
// (full's first token on 106 of 108 calibration prompts at 1k-4k, with repair), which on three
// seeds of reporting prompts gave full's first token on 54 of 54 at 4k (2.1-2.35x TTFT).
// The base schedule cuts late, before layer 21 keeping 0.35 and before layer 27 keeping 0.1:
// the output of
//   lazyllm tune --lazy-min-context 256 --lazy-repair off   (the answers objective: full's
//                   32-token greedy answers on >= 80% of 54 calibration prompts, judged with
//                   revival; schedules/smollm2-135m-instruct-safe.json),
// so that a floor lowered by --lazy-min-context gets them below 3072, where they keep more
// first tokens than the earlier cuts. From 6144 tokens (a tier) the same late cuts after a first
// one before layer 15 keeping 0.6 (schedules/smollm2-135m-instruct-safe-8k.json): at 8k full's
// first token and answer on every fidelity prompt and full's prediction on every task sample,
// where a first cut at layer 12 or earlier lost pass keys near the start of the prompt and one
// at 15 keeping 0.5 changed a first token (docs/evaluation.md, "Tiers").
// The safe preset, on every model, repairs (Schedule::repair) instead of reviving: its answer
// after the first token is full's whenever its first token is (docs/lazyllm.md, "Repair"; tune
// wrote the committed schedule with revival). The fast one keeps decode steps that select and
// revive what they select: over a whole answer it stays faster than full, where repairing
// would make it about as slow.
// The fast preset's decode steps weigh the scores of tokens they would revive by a quarter
// (Schedule::revive_weight): after a 4k prompt they revive half as many tokens and decode
// faster, with the same answers on the fidelity suite (docs/lazyllm.md, "The revival weight").
constexpr float kFastReviveWeight = 0.25f;

constexpr Entry kEntries[] = {
    {{"llama", 30, 576, 9, 49152},
     {{21, 27, 0},
      {0.35f, 0.1f, 0.0f},
      40,
      64,
      3072,
      false,
      3,
      11,
      -1,
      1.0f,
      true,
      {{3072, {9, 15, 27}, {0.4f, 0.25f, 0.15f}}, {6144, {15, 21, 27}, {0.6f, 0.35f, 0.1f}}}},
     {{9, 18, 21}, {0.2f, 0.15f, 0.1f}, 40, 0, 0, true, 3, 11, -1, kFastReviveWeight, false},
     "lazyllm eval --fidelity and lazyllm tune (docs/lazyllm.md, Presets)"},
    // Gemma 3 270M (18 layers, d 640, 4 heads, vocab 262144; global layers 5, 11, 17): a
    // boundary needs a global layer in its stage, so boundaries sit after layers 5 and 11,
    // scored there (score_layers 1). safe: one cut after layer 11 keeping 0.25, from
    //   lazyllm tune -m gemma3-270m --lengths 4096 --first-boundaries 0.3,0.7
    // and then the fidelity suite at 2k and 4k: 36 of 36 first tokens and 83% of 32-token
    // continuations as full's, where two cuts at layers 6 and 12 keeping 0.5 / 0.3 keep 92% and 58%
    // (docs/evaluation.md, Measured on Gemma 3 270M). fast keeps the two cuts, its decode
    // steps weighing the tokens they would revive by 0.5: full's 32-token answers on 87 of 216
    // fidelity prompts against 88 with the paper's rule (81 with 0.25), and the 33rd token as
    // soon as full's after 2k-4k instead of 2-14% later (docs/lazyllm.md, "The revival weight").
    {{"gemma3", 18, 640, 4, 262144},
     {{12, 0, 0}, {0.25f, 0.0f, 0.0f}, 8, 64, 1024, false, 1, 11, -1, 1.0f, true},
     {{6, 12, 0}, {0.3f, 0.15f, 0.0f}, 8, 0, 0, true, 1, 11, -1, 0.5f, false},
     "docs/evaluation.md (Gemma 3)"},
};

// The generic safe preset: one cut at 70% of the depth keeping a quarter, the shape both
// measured models' safe presets arrived at (SmolLM2-135M's tuned late cuts, used from 6144
// tokens, first cut before layer 21 of 30, where its hand-screened one cut kept 0.25; Gemma 3
// 270M cuts before layer 12 of 18), with the default model's measured window of 64 and Gemma
// 3's floor of 1024 tokens (SmolLM2's 3072 is set by first tokens it changed at 1-2k, not by
// speed; a model without its own entry is measured with `lazyllm eval --fidelity`).
constexpr double kGenericSafeDepth = 0.7;
constexpr float kGenericSafeKeep = 0.25f;
constexpr int kGenericKeepRecent = 64;
constexpr int kGenericMinContext = 1024;

// Every safe preset settles a near tie with full's logits (Schedule::verify_margin): a pruned
// prompt whose first token leads the second by less than 0.2 in logits (probabilities within a
// factor 1.22) repairs before that token. On SmolLM2 the first tokens the cuts changed led by
// 0.03-0.13 (the 8k passkey prompt at depth 0, the one that changed at 8k on every seed: 0.125),
// one by 0.63 under the earlier cuts of the 4k tier; 0.2 was under 6-7% of the gaps at 1k-4k
// (docs/lazyllm.md, "Verify").
constexpr float kSafeVerifyMargin = 0.2f;

Schedule from_entry(const PresetSchedule& p) {
    Schedule s;
    for (size_t i = 0; i < std::size(p.boundaries) && p.boundaries[i] > 0; ++i) {
        s.boundaries.push_back(p.boundaries[i]);
        s.keep.push_back(p.keep[i]);
    }
    s.keep_first = p.keep_first;
    s.keep_recent = p.keep_recent;
    s.min_context = p.min_context;
    s.prune_decode = p.prune_decode;
    s.score_layers = p.score_layers;
    s.score_pool = p.score_pool;
    s.revive_max = p.revive_max;
    s.revive_weight = p.revive_weight;
    s.repair = p.repair;
    for (const PresetSchedule::Tier& t : p.tiers) {
        if (t.min_context == 0) break;
        ScheduleTier tier;
        tier.min_context = t.min_context;
        for (size_t i = 0; i < std::size(t.boundaries) && t.boundaries[i] > 0; ++i) {
            tier.boundaries.push_back(t.boundaries[i]);
            tier.keep.push_back(t.keep[i]);
        }
        s.tiers.push_back(std::move(tier));
    }
    return s;
}

// Where a cut can go on a sliding-window model: after a global layer, never after the last.
std::vector<int> cuts_after_global_layers(const ModelShape& shape) {
    std::vector<int> allowed;
    for (int g : shape.global_layers) {
        if (g + 1 < shape.n_layer) allowed.push_back(g + 1);
    }
    return allowed;
}

// The generic fast preset: on a full-attention model, the default model's (kEntries[0]) laid
// out by depth: cuts at 30/60/70% keeping 0.2/0.15/0.1, its protected first 40 tokens, its
// shaped score and its revival weight. On SmolLM2, against the paper's layout (28/59/88% of depth,
// keep 0.5/0.25/0.1, the paper's score): 90.3% of full's first tokens against 94.4%, as many
// 32-token answers (33.3% against 29.2%), a higher task score (0.220 against 0.178, full 0.265),
// computing 40.5% of the prompt's token-layers against 51.3% (docs/lazyllm.md, "The generic fast
// preset").
Schedule generic_fast(const ModelShape& shape) {
    if (shape.global_layers.empty()) {
        const Entry& base = kEntries[0];
        Schedule s = from_entry(base.fast);
        std::vector<double> depth;
        for (int b : s.boundaries) depth.push_back(static_cast<double>(b) / base.shape.n_layer);
        Schedule laid_out = prune::depth_schedule(shape.n_layer, depth, s.keep);
        s.boundaries = std::move(laid_out.boundaries);
        s.keep = std::move(laid_out.keep);
        return s;
    }
    // A sliding-window model: the paper's keep fractions on the first three allowed cuts, each
    // scored at its global layer alone.
    constexpr float kKeep[] = {0.5f, 0.25f, 0.1f};
    const std::vector<int> allowed = cuts_after_global_layers(shape);
    Schedule s;
    s.boundaries.assign(allowed.begin(), allowed.begin() + std::min<size_t>(3, allowed.size()));
    s.keep.assign(kKeep, kKeep + s.boundaries.size());
    return s;
}

Schedule generic_safe(const ModelShape& shape) {
    std::vector<int> allowed = cuts_after_global_layers(shape);
    if (shape.global_layers.empty()) {
        for (int b = 1; b < shape.n_layer; ++b) allowed.push_back(b);
    }
    Schedule s;
    if (!allowed.empty()) {  // the allowed cut nearest the target, the earlier on a tie
        const auto target = static_cast<int>(std::lround(kGenericSafeDepth * shape.n_layer));
        int cut = allowed.front();
        for (int a : allowed) {
            if (std::abs(a - target) < std::abs(cut - target)) cut = a;
        }
        s.boundaries = {cut};
        s.keep = {kGenericSafeKeep};
    }
    s.keep_recent = kGenericKeepRecent;
    s.min_context = kGenericMinContext;
    s.prune_decode = false;
    s.repair = true;
    return s;
}

}  // namespace

Schedule model_default_schedule(const ModelShape& shape, Preset preset, std::string_view* source) {
    const Entry* entry = nullptr;
    for (const Entry& e : kEntries) {
        if (e.shape.arch == shape.arch && e.shape.n_layer == shape.n_layer &&
            e.shape.n_embd == shape.n_embd && e.shape.n_head == shape.n_head &&
            e.shape.n_vocab == shape.n_vocab) {
            entry = &e;
            break;
        }
    }
    if (source) *source = entry ? entry->source : "generic";
    if (preset == Preset::kFast) return entry ? from_entry(entry->fast) : generic_fast(shape);
    Schedule s = entry ? from_entry(entry->safe) : generic_safe(shape);
    s.verify_margin = kSafeVerifyMargin;
    return s;
}

}  // namespace lazyllm::prune

namespace lazyllm {

Result<Preset> parse_preset(std::string_view name) {
    for (Preset p : {Preset::kSafe, Preset::kFast}) {
        if (preset_name(p) == name) return p;
    }
    return make_error(ErrorCode::kInvalidArgument, "unknown preset '{}' (expected safe or fast)",
                      name);
}

std::string_view preset_name(Preset preset) { return preset == Preset::kSafe ? "safe" : "fast"; }

}  // namespace lazyllm
