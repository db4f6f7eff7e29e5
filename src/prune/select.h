// Keep-set selection at a pruning boundary (design.md 1.2): the n_keep highest-scoring candidate
// positions, ties to the lower position, with protected positions (the last token, the first
// keep_first positions) always kept. Deterministic; no SIMD.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "prune/schedule.h"

namespace lazyllm::prune {

// How many tokens survive a boundary whose schedule entry is keep_fraction: keep fractions are
// cumulative fractions of the whole context (design.md 1.2), so this is
// ceil(keep_fraction * n_context), clamped to [1, n_candidates] (sets are nested within a step, and
// the last token always survives). A product within 1e-6 (relative) of an integer counts as that
// integer, so a float keep such as 0.1f on 30 tokens gives 3, not 4. Returns 0 when
// n_candidates <= 0.
int64_t keep_count(double keep_fraction, int64_t n_context, int64_t n_candidates);

// The first position of the protected recent window (keep_recent), and how many positions it
// adds on top of a boundary's keep count: none when keep_recent <= 1 (the last token is kept
// anyway).
struct RecentWindow {
    int64_t from = 0;
    int64_t extra = 0;
};
RecentWindow recent_window(const Schedule& schedule, int64_t n_total);

// Reusable buffers for select_top, so a generation loop allocates nothing after warm-up.
struct SelectScratch {
    std::vector<int32_t> order;  // [n_candidates], indices into positions of unprotected ones
    std::vector<int32_t> protected_sorted;
    std::vector<float> keys, nth;  // positions in order: the candidates' keys, a copy to select on
};

// scores[i] is the importance of positions[i] (distinct positions, any order). Returns the kept
// positions sorted ascending: every protected position present in `positions` (they count toward
// n_keep; when they alone exceed n_keep, all of them are kept), then the highest scores among the
// rest, ties broken toward the lower position. NaN scores rank as -inf. n_keep >= |positions|
// keeps all. O(n) average (nth_element) plus O(k log k) for the output sort.
std::vector<int32_t> select_top(std::span<const float> scores, std::span<const int32_t> positions,
                                int64_t n_keep, std::span<const int32_t> protected_positions);
// Same, writing into `kept` (cleared first) and reusing `scratch`.
void select_top(std::span<const float> scores, std::span<const int32_t> positions, int64_t n_keep,
                std::span<const int32_t> protected_positions, SelectScratch& scratch,
                std::vector<int32_t>& kept);

// Max-pooling of scores over positions (Schedule::score_pool, SnapKV-style): out[i] is the
// largest scores[j] over the candidates j with |positions[j] - positions[i]| <= window / 2, so a
// high-scoring token lifts its neighbours and a kept span is not cut into pieces. `positions` must
// be strictly increasing (the candidate set S); window must be odd and >= 1 (1 copies). NaN
// scores count as -inf. O(n) (over contiguous positions blocks of the window, else a monotone
// deque), `out` resized to scores.size().
void pool_scores(std::span<const float> scores, std::span<const int32_t> positions, int window,
                 std::vector<float>& out);

// Buffers of select_kept and bound_revivals, reused across boundaries and steps.
struct CutScratch {
    SelectScratch select;
    std::vector<float> pooled;       // [|S|] pooled scores
    std::vector<int32_t> protect;    // protected positions (sorted)
    std::vector<int32_t> cand_pos;   // revival candidates (sorted) and their scores
    std::vector<float> cand_scores;
    std::vector<int32_t> chosen;     // the candidates that revive
};

// The tokens of S that a cut at `layer` would have to revive: deferred there (depth[t] ==
// layer: prefill or an earlier step left them in their Aux slots) and not live (computed this
// step; sorted). Their scores count times `weight` (Schedule::revive_weight).
struct DeferredWeight {
    std::span<const int32_t> live;
    std::span<const int16_t> depth;
    int layer = 0;
    float weight = 1.0f;
};

// A kSelect boundary under `schedule` (docs/design.md 1.2): the positions of S (sorted) that
// survive a cut to the cumulative fraction `keep` of a context of n_total tokens, written
// sorted into `kept`. With score_pool > 1, `scores` ([|S|]) is replaced by its pooled values,
// then (given `deferred`) the deferred tokens' scores by their weighted values: the ones
// selected on. Protected: the first keep_first positions (they count toward the kept amount)
// and the last max(1, keep_recent) (the last token always; the window comes on top of the kept
// amount, so the question and the answer do not displace the context they ask about).
void select_kept(const Schedule& schedule, std::span<const int32_t> S, std::vector<float>& scores,
                 float keep, int64_t n_total, CutScratch& scratch, std::vector<int32_t>& kept,
                 const DeferredWeight* deferred = nullptr);

// Schedule::revive_max: drops from `kept` (a sorted subset of S) all but the `max`
// highest-scored revival candidates: kept tokens at depth `layer` that are not live. Protected
// positions (sorted: select_kept's keep_first and recent window, scratch.protect) are no
// candidates: they always revive. `scores` is indexed as S; `live` is sorted; depth[t] is
// token t's depth.
void bound_revivals(std::span<const int32_t> S, std::span<const float> scores,
                    std::span<const int32_t> live, std::span<const int16_t> depth, int layer,
                    int max, std::span<const int32_t> protected_positions, CutScratch& scratch,
                    std::vector<int32_t>& kept);

}  // namespace lazyllm::prune
