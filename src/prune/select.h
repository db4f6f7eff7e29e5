// Keep-set selection at a pruning boundary (design.md 1.2): the n_keep highest-scoring candidate
// positions, ties to the lower position, with protected positions (the last token, the first
// keep_first positions) always kept. Deterministic; no SIMD.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lazyllm::prune {

// How many tokens survive a boundary whose schedule entry is keep_fraction: keep fractions are
// cumulative fractions of the whole context (design.md 1.2), so this is
// ceil(keep_fraction * n_context), clamped to [1, n_candidates] (sets are nested within a step, and
// the last token always survives). A product within 1e-6 (relative) of an integer counts as that
// integer, so a float keep such as 0.1f on 30 tokens gives 3, not 4. Returns 0 when
// n_candidates <= 0.
int64_t keep_count(double keep_fraction, int64_t n_context, int64_t n_candidates);

// Reusable buffers for select_top, so a generation loop allocates nothing after warm-up.
struct SelectScratch {
    std::vector<int32_t> order;  // [n_candidates], indices into positions of unprotected ones
    std::vector<int32_t> protected_sorted;
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
// scores count as -inf. O(n) (monotone deque), `out` resized to scores.size().
void pool_scores(std::span<const float> scores, std::span<const int32_t> positions, int window,
                 std::vector<float>& out);

}  // namespace lazyllm::prune
