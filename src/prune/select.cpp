#include "prune/select.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "base/check.h"

namespace lazyllm::prune {

RecentWindow recent_window(const Schedule& schedule, int64_t n_total) {
    const int64_t n_first = std::min<int64_t>(schedule.keep_first, n_total);
    const int64_t from = std::max(n_first, n_total - std::max<int64_t>(1, schedule.keep_recent));
    return {from, schedule.keep_recent > 1 ? n_total - from : 0};
}

int64_t keep_count(double keep_fraction, int64_t n_context, int64_t n_candidates) {
    if (n_candidates <= 0) return 0;
    if (!(keep_fraction > 0.0) || n_context <= 0) return 1;  // also NaN
    const double x = keep_fraction * static_cast<double>(n_context);
    if (!(x < static_cast<double>(n_candidates))) return n_candidates;  // also +inf
    // Snap near-integers: keep fractions are stored as float, and 0.1f * 30 = 3.0000000447.
    const double nearest = std::nearbyint(x);
    const double count = std::abs(x - nearest) <= 1e-6 * std::max(1.0, x) ? nearest : std::ceil(x);
    return std::clamp(static_cast<int64_t>(count), int64_t{1}, n_candidates);
}

namespace {

// NaN as -inf, so that the selection's order stays a strict weak order (select_top, and the
// pooled scores it ranks).
float rank_key(float s) { return std::isnan(s) ? -std::numeric_limits<float>::infinity() : s; }

// select_top over positions in ascending order (the session's key sets), in linear time and
// with the same result: the n_rest-th best key value t by nth_element over the keys alone;
// then one pass in position order keeps the protected positions, every key above t, and the
// first keys equal to t (the lower positions) up to n_rest. prot: sorted.
void select_top_sorted(std::span<const float> scores, std::span<const int32_t> positions,
                       int64_t n_keep, const std::vector<int32_t>& prot, SelectScratch& scratch,
                       std::vector<int32_t>& kept) {
    const auto n = static_cast<int64_t>(positions.size());
    std::vector<float>& keys = scratch.keys;  // of the unprotected positions
    keys.clear();
    int64_t n_prot = 0;
    size_t pi = 0;
    for (int64_t i = 0; i < n; ++i) {
        while (pi < prot.size() && prot[pi] < positions[i]) ++pi;
        if (pi < prot.size() && prot[pi] == positions[i]) {
            ++n_prot;
        } else {
            keys.push_back(rank_key(scores[i]));
        }
    }
    const int64_t n_rest =
        std::min<int64_t>(std::max<int64_t>(n_keep, 0) - n_prot, static_cast<int64_t>(keys.size()));
    float t = std::numeric_limits<float>::infinity();
    int64_t n_equal = 0;  // keys equal to t that are kept
    if (n_rest > 0) {
        std::vector<float>& sorted = scratch.nth;
        sorted.assign(keys.begin(), keys.end());
        std::nth_element(sorted.begin(), sorted.begin() + (n_rest - 1), sorted.end(),
                         std::greater<float>());
        t = sorted[n_rest - 1];
        n_equal = n_rest;
        for (float k : keys) n_equal -= k > t ? 1 : 0;
    }
    pi = 0;
    size_t ki = 0;
    for (int64_t i = 0; i < n; ++i) {
        while (pi < prot.size() && prot[pi] < positions[i]) ++pi;
        if (pi < prot.size() && prot[pi] == positions[i]) {
            kept.push_back(positions[i]);
            continue;
        }
        const float k = keys[ki++];
        if (k > t || (k == t && n_equal-- > 0)) kept.push_back(positions[i]);
    }
}

// pool_scores over contiguous positions, where the window is an index range: van Herk /
// Gil-Werman. In blocks of `window` elements g holds each block's prefix maxima and h its
// suffix maxima, so a full window [i - r, i + r], which spans at most two blocks, has the max
// of h[i - r] and g[i + r]; the clipped windows at either end are taken directly. Three
// comparisons per element whatever the window (max is exact: the general path's values).
void pool_contiguous(std::span<const float> scores, int window, std::vector<float>& out) {
    const auto n = static_cast<int64_t>(scores.size());
    const int64_t r = window / 2;
    constexpr float kLowest = -std::numeric_limits<float>::infinity();
    std::vector<float> g(static_cast<size_t>(n)), h(static_cast<size_t>(n));
    for (int64_t b0 = 0; b0 < n; b0 += window) {
        const int64_t b1 = std::min<int64_t>(n, b0 + window);
        float m = kLowest;
        for (int64_t i = b0; i < b1; ++i) g[i] = m = std::max(m, rank_key(scores[i]));
        m = kLowest;
        for (int64_t i = b1 - 1; i >= b0; --i) h[i] = m = std::max(m, rank_key(scores[i]));
    }
    for (int64_t i = r; i + r < n; ++i) out[i] = std::max(h[i - r], g[i + r]);
    auto direct = [&](int64_t i) {
        float m = kLowest;
        for (int64_t j = std::max<int64_t>(0, i - r); j <= std::min(n - 1, i + r); ++j) {
            m = std::max(m, rank_key(scores[j]));
        }
        out[i] = m;
    };
    for (int64_t i = 0; i < std::min(r, n); ++i) direct(i);
    for (int64_t i = std::max(r, n - r); i < n; ++i) direct(i);
}

}  // namespace

void select_top(std::span<const float> scores, std::span<const int32_t> positions, int64_t n_keep,
                std::span<const int32_t> protected_positions, SelectScratch& scratch,
                std::vector<int32_t>& kept) {
    LAZYLLM_CHECK(scores.size() == positions.size());
    const auto n = static_cast<int64_t>(positions.size());
    kept.clear();
    if (n_keep >= n) {
        kept.assign(positions.begin(), positions.end());
        std::sort(kept.begin(), kept.end());
        return;
    }

    std::vector<int32_t>& prot = scratch.protected_sorted;
    prot.assign(protected_positions.begin(), protected_positions.end());
    std::sort(prot.begin(), prot.end());
    if (std::is_sorted(positions.begin(), positions.end())) {
        select_top_sorted(scores, positions, n_keep, prot, scratch, kept);
        return;
    }
    std::vector<int32_t>& order = scratch.order;  // [n_rest] indices into positions
    order.clear();
    for (int64_t i = 0; i < n; ++i) {
        if (!prot.empty() && std::binary_search(prot.begin(), prot.end(), positions[i])) {
            kept.push_back(positions[i]);
        } else {
            order.push_back(static_cast<int32_t>(i));
        }
    }

    const int64_t n_rest =
        std::min<int64_t>(std::max<int64_t>(n_keep, 0) - static_cast<int64_t>(kept.size()),
                          static_cast<int64_t>(order.size()));
    if (n_rest > 0) {
        // Total order: higher score first, then lower position (design.md 1.2), NaN as -inf so
        // the comparator stays a strict weak order.
        auto key = [&](int32_t i) { return rank_key(scores[i]); };
        auto better = [&](int32_t a, int32_t b) {
            const float ka = key(a), kb = key(b);
            return ka > kb || (ka == kb && positions[a] < positions[b]);
        };
        if (n_rest < static_cast<int64_t>(order.size())) {
            std::nth_element(order.begin(), order.begin() + n_rest, order.end(), better);
        }
        for (int64_t j = 0; j < n_rest; ++j) kept.push_back(positions[order[j]]);
    }
    std::sort(kept.begin(), kept.end());
}

void pool_scores(std::span<const float> scores, std::span<const int32_t> positions, int window,
                 std::vector<float>& out) {
    LAZYLLM_CHECK(scores.size() == positions.size());
    LAZYLLM_CHECK(window >= 1 && window % 2 == 1);
    const size_t n = scores.size();
    out.resize(n);
    auto value = [&](size_t j) { return rank_key(scores[j]); };
    if (window == 1) {
        for (size_t i = 0; i < n; ++i) out[i] = value(i);
        return;
    }
    // S = [p0, p0 + n), as at a decode step's first cut (the first test skips the scan).
    const bool contiguous =
        n > 0 &&
        static_cast<int64_t>(positions[n - 1]) - positions[0] == static_cast<int64_t>(n) - 1 &&
        std::adjacent_find(positions.begin(), positions.end(),
                           [](int32_t a, int32_t b) { return b != a + 1; }) == positions.end();
    if (contiguous) {
        pool_contiguous(scores, window, out);
        return;
    }
    const int64_t r = window / 2;
    // Sliding window over positions [p_i - r, p_i + r]: `hi` is one past the last candidate in
    // range, `dq` holds indices in [lo, hi) with decreasing values (the front is the max).
    std::vector<size_t> dq(n);  // a ring is not needed: indices only move forward
    size_t head = 0, tail = 0, hi = 0;
    for (size_t i = 0; i < n; ++i) {
        LAZYLLM_CHECK(i == 0 || positions[i] > positions[i - 1]);
        while (hi < n && static_cast<int64_t>(positions[hi]) <= positions[i] + r) {
            const float v = value(hi);
            while (tail > head && value(dq[tail - 1]) <= v) --tail;
            dq[tail++] = hi++;
        }
        while (static_cast<int64_t>(positions[dq[head]]) < positions[i] - r) ++head;
        out[i] = value(dq[head]);
    }
}

void select_kept(const Schedule& schedule, std::span<const int32_t> S, std::vector<float>& scores,
                 float keep, int64_t n_total, CutScratch& scratch, std::vector<int32_t>& kept,
                 const DeferredWeight* deferred) {
    if (schedule.score_pool > 1) {
        pool_scores(std::span<const float>(scores.data(), S.size()), S, schedule.score_pool,
                    scratch.pooled);
        scores.swap(scratch.pooled);
    }
    if (deferred != nullptr && deferred->weight != 1.0f) {
        size_t li = 0;  // S and live are sorted
        for (size_t i = 0; i < S.size(); ++i) {
            const int32_t t = S[i];
            while (li < deferred->live.size() && deferred->live[li] < t) ++li;
            const bool is_live = li < deferred->live.size() && deferred->live[li] == t;
            if (!is_live && deferred->depth[t] == deferred->layer) scores[i] *= deferred->weight;
        }
    }
    const int64_t n_first = std::min<int64_t>(schedule.keep_first, n_total);
    const RecentWindow recent = recent_window(schedule, n_total);
    const int64_t recent_from = recent.from;
    const int64_t n_keep =
        std::min<int64_t>(static_cast<int64_t>(S.size()),
                          keep_count(keep, n_total, static_cast<int64_t>(S.size())) + recent.extra);
    std::vector<int32_t>& protect = scratch.protect;
    protect.clear();
    for (int32_t p = 0; p < n_first; ++p) protect.push_back(p);
    for (auto p = static_cast<int32_t>(recent_from); p < n_total; ++p) protect.push_back(p);
    select_top(std::span<const float>(scores.data(), S.size()), S, n_keep, protect,
               scratch.select, kept);
}

void bound_revivals(std::span<const int32_t> S, std::span<const float> scores,
                    std::span<const int32_t> live, std::span<const int16_t> depth, int layer,
                    int max, std::span<const int32_t> protected_positions, CutScratch& scratch,
                    std::vector<int32_t>& kept) {
    // Candidates in kept's order (kept and live are sorted subsets of S).
    std::vector<int32_t>& cand_pos = scratch.cand_pos;
    std::vector<float>& cand_scores = scratch.cand_scores;
    cand_pos.clear();
    cand_scores.clear();
    size_t si = 0, li = 0, pi = 0;
    for (int32_t t : kept) {
        while (S[si] < t) ++si;
        while (li < live.size() && live[li] < t) ++li;
        while (pi < protected_positions.size() && protected_positions[pi] < t) ++pi;
        const bool is_live = li < live.size() && live[li] == t;
        const bool is_protected = pi < protected_positions.size() && protected_positions[pi] == t;
        if (!is_live && !is_protected && depth[t] == layer) {
            cand_pos.push_back(t);
            cand_scores.push_back(scores[si]);
        }
    }
    if (static_cast<int64_t>(cand_pos.size()) <= max) return;
    // The `max` best, in select_top's order (the selection's: ties to the lower position, NaN
    // as -inf); every other candidate leaves `kept` (cand_pos is a subsequence of kept, and
    // chosen of cand_pos, all sorted).
    std::vector<int32_t>& chosen = scratch.chosen;
    select_top(cand_scores, cand_pos, max, {}, scratch.select, chosen);
    size_t ci = 0, ri = 0;
    std::erase_if(kept, [&](int32_t t) {
        if (ci == cand_pos.size() || cand_pos[ci] != t) return false;  // not a candidate
        ++ci;
        if (ri < chosen.size() && chosen[ri] == t) {
            ++ri;
            return false;
        }
        return true;
    });
}

std::vector<int32_t> select_top(std::span<const float> scores, std::span<const int32_t> positions,
                                int64_t n_keep, std::span<const int32_t> protected_positions) {
    SelectScratch scratch;
    std::vector<int32_t> kept;
    select_top(scores, positions, n_keep, protected_positions, scratch, kept);
    return kept;
}

}  // namespace lazyllm::prune
