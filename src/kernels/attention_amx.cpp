// AMX bf16 attention tile kernel (queries in lanes, see attention_isa.h).
//
// With queries as the N dimension of the tile products, both products take their A operand
// from a once-per-call packed copy and their B operand from a per-tile buffer:
//   S^T[32 keys][16 q] = K_blk[32][D] . Q^T        A = K rows (bf16), B = Q^T (pair-interleaved)
//   O^T[D][16 q]      += V^T[D][32 keys] . P^T     A = V^T rows (bf16), B = P^T (pair-interleaved)
// so the softmax between them works on rows of 16 lanes = 16 queries and is purely vertical.
// O^T stays in tile registers across key blocks: probabilities are taken relative to a
// reference max m_ref that is only raised (and O^T rescaled through memory) when a block's max
// exceeds it by more than kRescaleLog2, so P <= 2^kRescaleLog2 always and the rescale is rare
// (the conditional rescaling of FlashAttention-4; exact in real arithmetic).
// The tile unit runs one block ahead and one behind the softmax (next S^T, previous P.V).
// Tiles: tmm0-3 O^T (16 dims each); tmm4-5 S^T (16 keys each) in Q.K^T; tmm6 its A operand
// (K), tmm7 its B operand (Q^T); in P.V the V^T operands rotate over tmm4-6 and P^T is tmm7.
// head_dim is processed in passes of 64 output dims (S recomputed per pass).
// K and V^T come packed as bf16 once per call (pack_kv_bf16, attention_bf16_avx512.cpp).
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "kernels/amx_tiles.h"
#include "kernels/attention_bf16_inl.h"
#include "kernels/attention_isa.h"
#include "kernels/ops_simd_avx512.h"

namespace lazyllm::kernels::detail {

namespace {

constexpr int kKeyBlock = kBf16KeyBlock;
constexpr float kRescaleLog2 = 8.0f;
using AmxHeadDims = std::integer_sequence<int, 64, 128, 256>;  // instantiated

// O^T of one pass (64 dims x 16 lanes) in tmm0-3: zeroed, or moved to and from memory (rows
// of 64 bytes).
inline void zero_o() {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
}
inline void load_o(const float* o) {
    _tile_loadd(0, o, 64);
    _tile_loadd(1, o + 16 * kAttnLanes, 64);
    _tile_loadd(2, o + 32 * kAttnLanes, 64);
    _tile_loadd(3, o + 48 * kAttnLanes, 64);
}
inline void store_o(float* o) {
    _tile_stored(0, o, 64);
    _tile_stored(1, o + 16 * kAttnLanes, 64);
    _tile_stored(2, o + 32 * kAttnLanes, 64);
    _tile_stored(3, o + 48 * kAttnLanes, 64);
}

// P^T = 2^(S^T - m_ref) of a block's kRows key pairs as bf16 pairs; returns the lanes' sums.
template <int kRows>
inline __m512 block_p(const float (*s)[kAttnLanes], __m512 m_ref, uint32_t (*p)[kAttnLanes]) {
    __m512 p_sum = _mm512_setzero_ps();
    for (int kk = 0; kk < kRows; ++kk) {
        const __m512 p0 =
            simd512::exp2_bf16_finite(_mm512_sub_ps(_mm512_load_ps(s[2 * kk]), m_ref));
        const __m512 p1 =
            simd512::exp2_bf16_finite(_mm512_sub_ps(_mm512_load_ps(s[2 * kk + 1]), m_ref));
        p_sum = _mm512_add_ps(p_sum, _mm512_add_ps(p0, p1));
        _mm512_store_si512(p[kk], simd512::interleave_bf16(p0, p1));
    }
    return p_sum;
}

// Step i of the Q.K^T part of the pipeline (tile_kernel): S^T of the key block at k_blk into
// tmm4 (keys 0-15) and tmm5 (16-31), A operand (K rows) in tmm6, B operand (Q^T) in tmm7.
template <int D>
inline void qk_step(const uint16_t* k_blk, const uint32_t (&qb)[D / 32][16][kAttnLanes], int i) {
    if (i == 0) {
        _tile_zero(4);
    } else if (i == 1) {
        _tile_zero(5);
    } else {
        const int c = (i - 2) / 5;
        switch ((i - 2) % 5) {
            case 0: _tile_loadd(7, qb[c], 64); break;
            case 1: _tile_loadd(6, k_blk + 32 * c, D * 2); break;
            case 2: _tile_dpbf16ps(4, 6, 7); break;
            case 3: _tile_loadd(6, k_blk + 16 * D + 32 * c, D * 2); break;
            default: _tile_dpbf16ps(5, 6, 7); break;
        }
    }
}

// Step i (of 2) storing S^T from tmm4-5.
inline void store_s(float (*dst)[kAttnLanes], int i) {
    if (i == 0) {
        _tile_stored(4, dst[0], 64);
    } else {
        _tile_stored(5, dst[16], 64);
    }
}

// Step i (of 9) of O^T += V^T . P^T for one pass's 64 dims: P^T in tmm7, the V^T operands
// rotating over tmm4-6.
inline void pv_step(const uint16_t* vt_blk, const uint32_t (*p)[kAttnLanes], int i) {
    switch (i) {
        case 0: _tile_loadd(7, p, 64); break;
        case 1: _tile_loadd(4, vt_blk, 64); break;
        case 2: _tile_dpbf16ps(0, 4, 7); break;
        case 3: _tile_loadd(5, vt_blk + 16 * kKeyBlock, 64); break;
        case 4: _tile_dpbf16ps(1, 5, 7); break;
        case 5: _tile_loadd(6, vt_blk + 32 * kKeyBlock, 64); break;
        case 6: _tile_dpbf16ps(2, 6, 7); break;
        case 7: _tile_loadd(4, vt_blk + 48 * kKeyBlock, 64); break;
        default: _tile_dpbf16ps(3, 4, 7); break;
    }
}

// The lanes that see key jj of a block (kv_pos: the block's first key's position): none for
// keys outside [lo, nj) (block padding, another call's keys), else the lanes at or after the
// key's position and, with a window, within it (-kp <= q_lo, window_threshold).
inline __mmask16 visible_lanes(const int32_t* kv_pos, int jj, int lo, int nj, bool windowed,
                               __m512i q_pos, __m512i q_lo) {
    const int32_t kp = jj >= lo && jj < nj ? kv_pos[jj] : INT32_MAX;
    const __mmask16 causal = _mm512_cmple_epi32_mask(_mm512_set1_epi32(kp), q_pos);
    return windowed ? _mm512_mask_cmple_epi32_mask(causal, _mm512_set1_epi32(-kp), q_lo) : causal;
}

// Raises m_ref to the block max s_max in the lanes `up` and rescales l and, where it holds
// sums (o_live), O^T in tmm0-3 through obuf by alpha = 2^(m_old - m_new); the other lanes'
// alpha is exactly 1.
inline void raise_m_ref(__mmask16 up, __m512 s_max, bool o_live, __m512& m_ref, __m512& l,
                        float (*obuf)[kAttnLanes]) {
    const __m512 m_new = _mm512_mask_max_ps(m_ref, up, m_ref, s_max);
    const __m512 alpha = simd512::exp2(_mm512_sub_ps(m_ref, m_new));
    l = _mm512_mul_ps(l, alpha);
    m_ref = m_new;
    if (!o_live) return;
    store_o(obuf[0]);
    for (int d = 0; d < 64; ++d) {
        _mm512_store_ps(obuf[d], _mm512_mul_ps(_mm512_load_ps(obuf[d]), alpha));
    }
    load_o(obuf[0]);
}

template <int D>
void tile_kernel(const AttentionArgs& a, const PackedKvBf16& packed, const AttnTile& t,
                 int64_t j_begin, int64_t j_end, AttnState& st, bool resume) {
    static_assert(D % 64 == 0);
    constexpr int kChunks = D / 32;                         // K-steps of the S product
    alignas(64) uint32_t qb[kChunks][16][kAttnLanes];       // Q^T as bf16 pairs: [chunk][kk][lane]
    alignas(64) float sbuf[2][kKeyBlock][kAttnLanes];       // S^T of a block, by block parity
    alignas(64) uint32_t pb[2][kKeyBlock / 2][kAttnLanes];  // P^T as bf16 pairs, by parity
    alignas(64) float obuf[64][kAttnLanes];                 // O^T of one pass, for raise_m_ref
    pack_q_bf16(a, t, qb[0][0]);

    const TileConfig cfg = full_tile_config();
    LAZYLLM_TILE_LOADCONFIG(cfg);

    const __m512i q_pos = _mm512_loadu_si512(t.pos);
    alignas(64) int32_t lo_thr[kAttnLanes];  // window_threshold per lane
    for (int lane = 0; lane < kAttnLanes; ++lane) lo_thr[lane] = window_threshold(a, t.pos[lane]);
    const __m512i q_lo = _mm512_load_si512(lo_thr);
    const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
    const __m512 masked = _mm512_set1_ps(kMaskedScore);
    const uint16_t* k_head = packed.k.data() + t.kv_head * packed.n_kv_pad * D;
    // V^T blocks of 32 keys: [D][32] each, contiguous (64-byte rows: a strided [D][n_kv]
    // layout would put all 16 rows of a tile load in one L1 set at 4 KiB strides).
    const uint16_t* vt_head =
        packed.vt.data() + static_cast<int64_t>(t.kv_head) * D * packed.n_kv_pad;

    // The tile work is software-pipelined one block deep on each side of the softmax: while
    // the vector units turn block b's S^T into P^T, the tile unit computes block b + 1's S^T
    // (into tmm4-5, stored to the other sbuf) and then block b - 1's P.V (its P^T in the
    // other pb). Nothing the softmax of b reads or writes is touched by a tile instruction
    // issued during it, so neither unit waits for the other's results inside a block.
    // The tile steps are issued a few at a time between the softmax rows: one that waits for
    // a tile register stalls the front end, and the vector work behind it with it.
    //   Q.K^T(j0), steps [0, kQkSteps): S^T into tmm4 (keys j0..j0+15) and tmm5 (j0+16..).
    //   then 2 steps: tmm4-5 -> sbuf[next].
    //   then P.V(j0 - 32), kPvSteps: O^T += V^T . P^T with V^T operands rotating over tmm4-6.
    constexpr int kQkSteps = 2 + 5 * kChunks;
    constexpr int kPvSteps = 9;
    constexpr int kRows = kKeyBlock / 2;  // softmax rows per block (key pairs)
    // The pipeline's step sequence, spread over the softmax rows, its three parts back to back
    // (gaps between them, to let a part's results land before the next one waits for them, do
    // not pay).
    constexpr int kStoreStep = kQkSteps;
    constexpr int kPvStep = kStoreStep + 2;
    constexpr int kSteps = kPvStep + kPvSteps;

    // Blocks start at multiples of kKeyBlock (the V^T blocks); keys before j_begin are masked.
    const int64_t j_first = j_begin / kKeyBlock * kKeyBlock;
    // Every pass sees the same scores, so it raises m_ref at the same blocks and ends with
    // the same m_ref and l (stored once, after the last pass).
    __m512 m_ref = _mm512_set1_ps(kAttnMaxInit);
    __m512 l = _mm512_setzero_ps();
    for (int pass = 0; pass < D / 64; ++pass) {
        float* o_pass = st.o + 64 * pass * kAttnLanes;
        if (resume) {
            m_ref = _mm512_load_ps(st.m);
            l = _mm512_load_ps(st.l);
            load_o(o_pass);
        } else {
            m_ref = _mm512_set1_ps(kAttnMaxInit);
            l = _mm512_setzero_ps();
            zero_o();
        }
        if (j_first < j_end) {
            for (int i = 0; i < kQkSteps; ++i) qk_step<D>(k_head + j_first * D, qb, i);
            store_s(sbuf[0], 0);
            store_s(sbuf[0], 1);
        }
        const int64_t vt_pass = 64 * pass * kKeyBlock;
        int cur = 0;  // parity of the block at j0
        for (int64_t j0 = j_first; j0 < j_end; j0 += kKeyBlock, cur ^= 1) {
            const bool has_next = j0 + kKeyBlock < j_end;
            const bool has_prev = j0 > j_first;  // a P.V of this call is in flight
            float (*s_cur)[kAttnLanes] = sbuf[cur];
            const uint16_t* vt_prev =
                has_prev ? vt_head + (j0 - kKeyBlock) * D + vt_pass : nullptr;
            auto pipeline_step = [&](int i) {
                if (i < kQkSteps) {
                    if (has_next) qk_step<D>(k_head + (j0 + kKeyBlock) * D, qb, i);
                } else if (i >= kStoreStep && i < kStoreStep + 2) {
                    if (has_next) store_s(sbuf[cur ^ 1], i - kStoreStep);
                } else {
                    if (has_prev) pv_step(vt_prev, pb[cur ^ 1], i - kPvStep);
                }
            };

            // One pass: P = 2^(S - m_ref), and the block max that says whether a lane's scores
            // exceed m_ref + margin (one vmaxps per row, one compare per block).
            // Keys [lo, nj) of the block are this call's; the others (block padding, another
            // call's keys), those after a lane's position and those before its sliding window
            // are masked.
            const int lo = static_cast<int>(std::max<int64_t>(0, j_begin - j0));
            const int nj = static_cast<int>(std::min<int64_t>(kKeyBlock, j_end - j0));
            const bool windowed = j0 < t.n_lo_max;
            const bool mask = lo > 0 || nj < kKeyBlock || j0 + kKeyBlock > t.n_vis_min || windowed;
            const __m512 limit = _mm512_add_ps(m_ref, _mm512_set1_ps(kRescaleLog2));
            __m512 s_max = neg_inf;  // compared with limit once, after the rows
            __m512 p_sum = _mm512_setzero_ps();
#pragma GCC unroll 16
            for (int kk = 0; kk < kRows; ++kk) {
                __m512 s0 = _mm512_load_ps(s_cur[2 * kk]);
                __m512 s1 = _mm512_load_ps(s_cur[2 * kk + 1]);
                if (mask) {
                    const int32_t* kv_pos = a.kv_pos + j0;
                    s0 = _mm512_mask_mov_ps(
                        masked, visible_lanes(kv_pos, 2 * kk, lo, nj, windowed, q_pos, q_lo), s0);
                    s1 = _mm512_mask_mov_ps(
                        masked, visible_lanes(kv_pos, 2 * kk + 1, lo, nj, windowed, q_pos, q_lo),
                        s1);
                    _mm512_store_ps(s_cur[2 * kk], s0);
                    _mm512_store_ps(s_cur[2 * kk + 1], s1);
                }
                s_max = _mm512_max_ps(s_max, _mm512_max_ps(s0, s1));
                const __m512 p0 = simd512::exp2_bf16_finite(_mm512_sub_ps(s0, m_ref));
                const __m512 p1 = simd512::exp2_bf16_finite(_mm512_sub_ps(s1, m_ref));
                p_sum = _mm512_add_ps(p_sum, _mm512_add_ps(p0, p1));
                _mm512_store_si512(pb[cur][kk], simd512::interleave_bf16(p0, p1));
                // After row kk, steps [ceil(kk n / rows), ceil((kk + 1) n / rows)) of the
                // n = kSteps: all of them by the last row.
                for (int i = (kk * kSteps + kRows - 1) / kRows;
                     i < ((kk + 1) * kSteps + kRows - 1) / kRows; ++i) {
                    pipeline_step(i);
                }
            }
            const __mmask16 up = _mm512_cmp_ps_mask(s_max, limit, _CMP_GT_OQ);
            if (up != 0) {
                // Rare (first block of a tile, or a jump in the scores): raise m_ref to the
                // block max in the lanes past the limit, rescale what was accumulated (P.V up
                // to the previous block, whose steps were all issued above), and redo this
                // block's P. The other lanes keep theirs (alpha exactly 1, the same P): a
                // lane's values do not depend on its tile-mates (AttentionArgs::row_invariant).
                raise_m_ref(up, s_max, /*o_live=*/has_prev || resume, m_ref, l, obuf);
                p_sum = block_p<kRows>(s_cur, m_ref, pb[cur]);
            }
            l = _mm512_add_ps(l, p_sum);
            if (!has_next) {
                // The last block's P.V (the loop's pipeline drains here).
                const uint16_t* vt_last = vt_head + j0 * D + vt_pass;
                for (int i = 0; i < kPvSteps; ++i) pv_step(vt_last, pb[cur], i);
            }
        }
        store_o(o_pass);
    }
    _tile_release();
    _mm512_store_ps(st.m, m_ref);
    _mm512_store_ps(st.l, l);
}

}  // namespace

bool amx_attention_usable(const AttentionArgs& a) {
    return head_dim_in(AmxHeadDims{}, a.head_dim) && amx_permission();
}

void attention_tile_amx(const AttentionArgs& a, const PackedKvBf16& packed, const AttnTile& t,
                        int64_t j_begin, int64_t j_end, AttnState& st, bool resume) {
    const bool ran = with_value(a.head_dim, AmxHeadDims{}, [&]<int D>() {
        tile_kernel<D>(a, packed, t, j_begin, j_end, st, resume);
    });
    if (!ran) __builtin_trap();  // amx_attention_usable() admits only these
}

}  // namespace lazyllm::kernels::detail
