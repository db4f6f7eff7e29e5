// The fp32 attention kernels (attention_isa.h) written once against Vec<I> (simd.h): queries in
// lanes for full tiles, keys in lanes for tiles with few real lanes (decode). Included only by
// attention_avx2.cpp and attention_avx512.cpp, which instantiate them with
// LAZYLLM_ATTENTION_INSTANTIATE.
//
// A tile's 16 lanes are kHalves = 16 / kWidth vectors. K/V rows are fp32 or IEEE half
// (converted exactly by Vec::load), at row j or kv_row[j]; queries in lanes reads them from
// fp32 copies made once per call (pack_kv_f32), head-major, a block's rows at constant
// offsets. Kernels are instantiated per head_dim D and element type T (float, or uint16_t for
// half bits). How a target blocks the work for its register file is AttnPlan<I>; every plan
// computes each output element with the same operations in the same order for its target.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/attention_isa.h"

namespace lazyllm::kernels::detail {

// Register blocking per target.
template <Isa I>
struct AttnPlan;
// 16 ymm registers: every inner loop keeps at most 8 accumulators (8 independent FMA chains:
// 2 FMA ports x 4 cycles latency on Zen 3) plus its operands; S^T of a block goes through L1.
template <>
struct AttnPlan<Isa::kAvx2> {
    static constexpr int kKeyGroup = 4;        // keys per S^T register block (x 2 halves)
    static constexpr int kDimGroup = 4;        // head dims per O^T register block (x 2 halves)
    static constexpr bool kPadKeys = false;    // blocks past the last key stop at nj keys
    static constexpr bool kMulFirst = false;   // keys in lanes: dot products start at 0
    static constexpr bool kLanePairs = false;  // keys in lanes, P.V: one FMA chain per O element
    static constexpr int kChains = 1;
    static constexpr int kRegisters = 16;  // keys in lanes: vectors it may hold
};
// 32 zmm registers: S^T of a whole block of 16 keys stays in registers; P.V four O^T rows at a
// time (four FMA chains; one chain per row is slower, eight spill).
template <>
struct AttnPlan<Isa::kAvx512> {
    static constexpr int kKeyGroup = 16;
    static constexpr int kDimGroup = 4;
    static constexpr bool kPadKeys = true;    // padding keys run masked (p = 0)
    static constexpr bool kMulFirst = true;
    static constexpr bool kLanePairs = true;  // keys in lanes, P.V: lane pairs, a chain each,
    static constexpr int kChains = 2;         // and two (even/odd keys) for a lane alone
    static constexpr int kRegisters = 32;
};

namespace {

constexpr int kTileKeys = 16;  // keys per block, queries in lanes
// Keys in lanes: states[i].o holds the lanes' O rows ([lane][D]) and then their P sums.
template <int D>
constexpr int kLaneSumOffset = kAttnFewLanes* D;
// Keys in lanes: probabilities are taken relative to a running reference max that is raised
// only when a score exceeds it by more than this (log2 domain), so P <= 2^8 and the rescale
// (a horizontal max, an exp2, a pass over O) is rare (as in attention_amx.cpp).
constexpr float kRescaleLog2 = 8.0f;

// Queries in lanes. Per block of 16 keys:
//   S^T[16 keys][16 lanes] = K_blk . Q^T, kKeyGroup keys x kHalves vectors in registers
//     (broadcast K element x Q^T row: no horizontal sums);
//   mask by position, then the online softmax (FlashAttention-2, Dao 2023, Alg. 1) vertically
//     per lane in the log2 domain, P^T overwriting S^T;
//   O^T[D][16] = alpha * O^T + sum_j V[j][d] * P^T[j], kDimGroup dims x kHalves vectors in
//     registers over the whole block, so O^T (in st.o, L1) is read and written once per block.
template <Isa I, int D>
void tile_kernel(const AttentionArgs& a, const PackedKvF32& packed, const AttnTile& t,
                 int64_t j_begin, int64_t j_end, AttnState& st, bool resume) {
    using V = Vec<I>;
    using F = typename V::F;
    using P = AttnPlan<I>;
    constexpr int W = V::kWidth, kHalves = kAttnLanes / W;
    constexpr int KG = P::kKeyGroup, DG = P::kDimGroup;
    static_assert(D % DG == 0 && D % W == 0 && kTileKeys % KG == 0);
    alignas(64) float qt[D * kAttnLanes];  // [D][16] Q^T, prescaled by scale * log2(e)
    const float q_scale = a.scale * kLog2e;
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        const float* q = a.q + t.row[lane] * a.q_stride + static_cast<int64_t>(t.head[lane]) * D;
        for (int d = 0; d < D; ++d) qt[d * kAttnLanes + lane] = q[d] * q_scale;
    }
    float* ot = st.o;  // [D][16]
    if (!resume) std::memset(ot, 0, sizeof(float) * D * kAttnLanes);
    F m[kHalves], l[kHalves], alpha[kHalves];
    typename V::Ints q_pos[kHalves], q_lo[kHalves];
    alignas(64) int32_t lo_thr[kAttnLanes];  // window_threshold per lane
    for (int lane = 0; lane < kAttnLanes; ++lane) lo_thr[lane] = window_threshold(a, t.pos[lane]);
    for (int h = 0; h < kHalves; ++h) {
        m[h] = resume ? V::load_aligned(st.m + h * W) : V::set1(kAttnMaxInit);
        l[h] = resume ? V::load_aligned(st.l + h * W) : V::zero();
        q_pos[h] = V::load_i32(t.pos + h * W);
        q_lo[h] = V::load_i32(lo_thr + h * W);
    }
    const int64_t head_off = static_cast<int64_t>(t.kv_head) * packed.n_kv_pad * D;

    // Blocks start at multiples of kTileKeys, keys before j_begin hidden: where a window sets
    // j_begin (the tile's first key in some lane's window), a lane's blocks, and so its online
    // softmax, do not depend on its tile-mates (AttentionArgs::row_invariant).
    for (int64_t j0 = j_begin / kTileKeys * kTileKeys; j0 < j_end; j0 += kTileKeys) {
        const int nj = static_cast<int>(std::min<int64_t>(kTileKeys, j_end - j0));
        const int n_keys = P::kPadKeys ? kTileKeys : nj;
        // The block's rows, D apart (constant offsets); rows past the keys are zeros.
        const float* k_blk = packed.k.data() + head_off + j0 * D;
        const float* v_blk = packed.v.data() + head_off + j0 * D;
        const auto k_row = [&](int jj) { return k_blk + jj * D; };
        const auto v_row = [&](int jj) { return v_blk + jj * D; };

        // S^T for keys [0, n_keys) rounded up to the key group (extra rows repeat a row).
        F s[kTileKeys][kHalves];
        for (int jg = 0; jg < n_keys; jg += KG) {
            F acc[KG][kHalves];
#pragma GCC unroll 16
            for (int k = 0; k < KG; ++k) {
                for (int h = 0; h < kHalves; ++h) acc[k][h] = V::zero();
            }
#pragma GCC unroll 4
            for (int d = 0; d < D; ++d) {
                F q[kHalves];
                for (int h = 0; h < kHalves; ++h)
                    q[h] = V::load_aligned(qt + d * kAttnLanes + h * W);
#pragma GCC unroll 16
                for (int k = 0; k < KG; ++k) {
                    const F kb = V::broadcast(k_row(jg + k) + d);
                    for (int h = 0; h < kHalves; ++h) acc[k][h] = V::fmadd(kb, q[h], acc[k][h]);
                }
            }
#pragma GCC unroll 16
            for (int k = 0; k < KG; ++k) {
                for (int h = 0; h < kHalves; ++h) s[jg + k][h] = acc[k][h];
            }
        }
        // Some key not visible to every lane: hide it (padding keys and keys before j_begin at
        // INT32_MAX).
        if (nj < n_keys || j0 + n_keys > t.n_vis_min || j0 < j_begin) {
#pragma GCC unroll 16
            for (int jj = 0; jj < n_keys; ++jj) {
                const auto kp =
                    V::set1_i32(jj < nj && j0 + jj >= j_begin ? a.kv_pos[j0 + jj] : INT32_MAX);
                for (int h = 0; h < kHalves; ++h) s[jj][h] = V::hide_after(s[jj][h], kp, q_pos[h]);
            }
        }
        // Keys before some lane's sliding window (only with AttentionArgs::window).
        if (j0 < t.n_lo_max) {
            for (int jj = 0; jj < nj; ++jj) {
                const auto neg_kp = V::set1_i32(-a.kv_pos[j0 + jj]);
                for (int h = 0; h < kHalves; ++h) s[jj][h] = V::hide_after(s[jj][h], neg_kp, q_lo[h]);
            }
        }
        for (int h = 0; h < kHalves; ++h) {
            F block_max = s[0][h];
#pragma GCC unroll 16
            for (int jj = 1; jj < n_keys; ++jj) block_max = V::max(block_max, s[jj][h]);
            const F m_new = V::max(m[h], block_max);
            alpha[h] = V::exp2(V::sub(m[h], m_new));
            m[h] = m_new;
            F p_sum = V::zero();
#pragma GCC unroll 16
            for (int jj = 0; jj < n_keys; ++jj) {
                s[jj][h] = V::exp2(V::sub(s[jj][h], m_new));
                p_sum = V::add(p_sum, s[jj][h]);
            }
            l[h] = V::fmadd(l[h], alpha[h], p_sum);
        }
        for (int c = 0; c < D; c += DG) {
            F acc[DG][kHalves];
#pragma GCC unroll 4
            for (int i = 0; i < DG; ++i) {
                for (int h = 0; h < kHalves; ++h) {
                    acc[i][h] = V::mul(V::load(ot + (c + i) * kAttnLanes + h * W), alpha[h]);
                }
            }
#pragma GCC unroll 16
            for (int jj = 0; jj < n_keys; ++jj) {
#pragma GCC unroll 4
                for (int i = 0; i < DG; ++i) {
                    const F vb = V::broadcast(v_row(jj) + c + i);
                    for (int h = 0; h < kHalves; ++h) acc[i][h] = V::fmadd(vb, s[jj][h], acc[i][h]);
                }
            }
#pragma GCC unroll 4
            for (int i = 0; i < DG; ++i) {
                for (int h = 0; h < kHalves; ++h)
                    V::store(ot + (c + i) * kAttnLanes + h * W, acc[i][h]);
            }
        }
    }
    for (int h = 0; h < kHalves; ++h) {
        V::store_aligned(st.m + h * W, m[h]);
        V::store_aligned(st.l + h * W, l[h]);
    }
}

// Largest divisor of n that is at most cap (>= 1): vectors of a row held in registers at once.
constexpr int row_chunk(int n, int cap) {
    for (int c = cap; c > 1; --c) {
        if (n % c == 0) return c;
    }
    return 1;
}

// O rows of NL lanes (o + l * D) = alpha[l] * O + sum_jj p[l][jj] * V[jj] over n_keys keys
// (padding keys have p = 0). Each V row (v_rows[jj] + head_off, fp32 or half) is loaded, and
// converted, once into registers for all lanes; the lanes' O rows stay in registers, kChunk
// vectors of each at a time. Every O element is one FMA chain over the keys in order, except
// where the plan splits a lane into even and odd keys (two chains added at the end, so that
// the FMA latency does not bound a lane that has no partner): the odd lane left over by lane
// pairs (AVX-512, rows of at most 8 vectors).
template <Isa I, int D, typename T, int NL>
inline void pv_block(float* o, const float (*p)[Vec<I>::kWidth], const float* alpha,
                     const T* const* v_rows, int64_t head_off, int n_keys) {
    using V = Vec<I>;
    using F = typename V::F;
    using P = AttnPlan<I>;
    constexpr int W = V::kWidth, kVec = D / W;
    constexpr bool kPairs = P::kLanePairs && kVec <= 8;
    constexpr bool kSplit = P::kChains == 2 && kVec <= 8 && (!kPairs || NL % 2 == 1);
    static_assert(!kSplit || kPairs || NL == 1, "two chains for one lane only");
    static_assert(!kSplit || P::kPadKeys, "split chains take the keys in pairs");
    constexpr int kAcc = NL + (kSplit ? 1 : 0);  // acc[NL]: the odd keys of lane NL - 1
    constexpr int kChunk = row_chunk(kVec, (P::kRegisters - 2) / (kAcc + 1));
    constexpr int kStep = kSplit ? 2 : 1;
    for (int c0 = 0; c0 < kVec; c0 += kChunk) {
        F acc[kAcc][kChunk];
#pragma GCC unroll 8
        for (int c = 0; c < kChunk; ++c) {
#pragma GCC unroll 6
            for (int l = 0; l < NL; ++l) {
                acc[l][c] = V::mul(V::load(o + l * D + W * (c0 + c)), V::set1(alpha[l]));
            }
            if constexpr (kSplit) acc[NL][c] = V::zero();
        }
        for (int jj = 0; jj < n_keys; jj += kStep) {
#pragma GCC unroll 2
            for (int h = 0; h < kStep; ++h) {
                const T* vr = v_rows[jj + h] + head_off + W * c0;
                F v[kChunk];
#pragma GCC unroll 8
                for (int c = 0; c < kChunk; ++c) v[c] = V::load(vr + W * c);
#pragma GCC unroll 6
                for (int l = 0; l < NL; ++l) {
                    const int chain = kSplit && l == NL - 1 && h == 1 ? NL : l;
                    const F pb = V::set1(p[l][jj + h]);
#pragma GCC unroll 8
                    for (int c = 0; c < kChunk; ++c)
                        acc[chain][c] = V::fmadd(pb, v[c], acc[chain][c]);
                }
            }
        }
#pragma GCC unroll 8
        for (int c = 0; c < kChunk; ++c) {
            if constexpr (kSplit) acc[NL - 1][c] = V::add(acc[NL - 1][c], acc[NL][c]);
#pragma GCC unroll 6
            for (int l = 0; l < NL; ++l) V::store(o + l * D + W * (c0 + c), acc[l][c]);
        }
    }
}

// One block of kWidth keys for one tile of NL lanes (lanes_kernel): rows k_rows/v_rows of the
// block (+ the tile's head offset), positions key_pos (neg_key_pos for a sliding window).
// Scores: each key's K row is loaded, and converted, once into registers and dotted with every
// lane's query into one partial vector per (lane, key), which Vec::transpose_sum reduces to a
// vector of kWidth scores per lane. Then the online-softmax update against a lazily raised
// reference max (kRescaleLog2), then O += P . V (pv_block).
template <Isa I, int D, typename T, int NL>
void lanes_block(const AttentionArgs& a, const AttnTile& t, AttnState& st, const T* const* k_rows,
                 const T* const* v_rows, int n_keys, typename Vec<I>::Ints key_pos,
                 typename Vec<I>::Ints neg_key_pos, bool windowed, float* logits, int64_t ld,
                 int64_t logits_row, int nj) {
    using V = Vec<I>;
    using F = typename V::F;
    using P = AttnPlan<I>;
    constexpr int kKeys = V::kWidth, kVec = D / kKeys;
    constexpr int kQk = row_chunk(kVec, P::kRegisters - NL - 2);
    const int64_t head_off = kv_head_offset(a, t.kv_head);
    const float* q[NL];
#pragma GCC unroll 6
    for (int l = 0; l < NL; ++l) {
        q[l] = a.q + t.row[l] * a.q_stride + static_cast<int64_t>(t.head[l]) * D;
    }
    alignas(64) float part[NL][kKeys][kKeys];  // per lane and key: the partial dot product
    for (int jj = 0; jj < kKeys; ++jj) {       // padding keys repeat a row; masked below
        const T* kr = k_rows[jj] + head_off;
        F acc[NL];
#pragma GCC unroll 16
        for (int c0 = 0; c0 < kVec; c0 += kQk) {
            F k[kQk];
#pragma GCC unroll 16
            for (int c = 0; c < kQk; ++c) k[c] = V::load(kr + kKeys * (c0 + c));
#pragma GCC unroll 6
            for (int l = 0; l < NL; ++l) {
#pragma GCC unroll 16
                for (int c = 0; c < kQk; ++c) {
                    const F qv = V::load(q[l] + kKeys * (c0 + c));
                    if (c0 + c == 0) {
                        acc[l] = P::kMulFirst ? V::mul(qv, k[c]) : V::fmadd(qv, k[c], V::zero());
                    } else {
                        acc[l] = V::fmadd(qv, k[c], acc[l]);
                    }
                }
            }
        }
#pragma GCC unroll 6
        for (int l = 0; l < NL; ++l) V::store_aligned(part[l][jj], acc[l]);
    }
    const float q_scale = a.scale * kLog2e;
    alignas(64) float p_buf[NL][kKeys];  // probabilities
    float alpha[NL];                     // per lane O rescale of this block
    for (int l = 0; l < NL; ++l) {
        F acc[kKeys];
#pragma GCC unroll 16
        for (int jj = 0; jj < kKeys; ++jj) acc[jj] = V::load_aligned(part[l][jj]);
        const F dot = V::transpose_sum(acc);
        if (logits != nullptr && t.row[l] == logits_row) {  // group_logits' products, order
            float* out = logits + t.head[l] * ld;
            const F logit = V::mul(dot, V::set1(a.scale));
            if (nj == kKeys) {
                V::store(out, logit);
            } else {
                V::store(out, V::tail(nj), logit);
            }
        }
        F s = V::mul(dot, V::set1(q_scale));
        s = V::hide_after(s, key_pos, V::set1_i32(t.pos[l]));
        if (windowed) s = V::hide_after(s, neg_key_pos, V::set1_i32(window_threshold(a, t.pos[l])));
        float* l_acc = st.o + kLaneSumOffset<D> + l * kKeys;
        float m = st.m[l];
        alpha[l] = 1.0f;
        if (V::any_gt(s, V::set1(m + kRescaleLog2))) {
            const float block_max = V::reduce_max(s);
            alpha[l] = std::exp2(m - block_max);
            m = block_max;
            st.m[l] = m;
            V::store(l_acc, V::mul(V::load(l_acc), V::set1(alpha[l])));
        }
        const F p = V::exp2(V::sub(s, V::set1(m)));
        V::store(l_acc, V::add(V::load(l_acc), p));
        V::store_aligned(p_buf[l], p);
    }
    pv_block<I, D, T, NL>(st.o, p_buf, alpha, v_rows, head_off, n_keys);
}

// Software prefetch into L2 of the K and V rows of keys [j, j + n) (k, v: the head's first
// elements; lanes_kernel): a decode step streams every layer's cache, far more than L2.
template <int D, typename T>
inline void prefetch_kv_rows(const AttentionArgs& a, const T* k, const T* v, int64_t j, int n) {
    constexpr int kRowBytes = D * static_cast<int>(sizeof(T));
    for (int jj = 0; jj < n; ++jj) {
        const int64_t off = kv_row_of(a, j + jj) * a.kv_stride;
        const char* kr = reinterpret_cast<const char*>(k + off);
        const char* vr = reinterpret_cast<const char*>(v + off);
#pragma GCC unroll 8
        for (int b = 0; b < kRowBytes; b += 64) {
            __builtin_prefetch(kr + b, 0, 2);
            __builtin_prefetch(vr + b, 0, 2);
        }
    }
}

// Keys in lanes (few lanes: decode, a GQA group of 1-6 query heads per KV head). Per block of
// kWidth keys: the block's rows are found, then lanes_block reads each K and V row of the
// tile's KV head once (no converted copy is stored). Over the model's cache (each KV head's rows
// in a block) the reads go in address order, and the rows of a block at least 4 KiB ahead are
// prefetched while the kernel computes (docs/benchmarks/amx_xeon.md, "Decode attention (AMX
// Xeon)").
// While running, st.o holds O as [lane][D] and then the P sums as [lane][kWidth]; O is
// transposed to [D][16] and the sums reduced into st.l at the end. With `logits`, each lane of
// query row logits->row also stores its scaled q . k of key j to logits->base[head * ld + j -
// j_first].
template <Isa I, int D, typename T>
void lanes_kernel(const AttentionArgs& a, const AttnTile& t, int64_t j_begin, int64_t j_end,
                  AttnState& st, const LaneLogits* logits) {
    using V = Vec<I>;
    using P = AttnPlan<I>;
    constexpr int kKeys = V::kWidth;  // keys per block
    const T* k_base = static_cast<const T*>(a.k);
    const T* v_base = static_cast<const T*>(a.v);
    static_assert(kAttnFewLanes * (D + kKeys) <= kAttnLanes * D);
    const int64_t lo_max = t.n_lo_max;  // keys before this may be outside a lane's window
    std::fill(st.m, st.m + kAttnLanes, kAttnMaxInit);
    std::memset(st.o, 0, sizeof(float) * kAttnFewLanes * (D + kKeys));
    // Prefetch distance: whole blocks, at least one, about 4 KiB of K rows (and of V rows).
    constexpr int64_t kAheadKeys =
        std::max<int64_t>(1, 4096 / (kKeys * D * static_cast<int64_t>(sizeof(T)))) * kKeys;
    const int64_t head_off = kv_head_offset(a, t.kv_head);
    for (int64_t j0 = j_begin; j0 < j_end; j0 += kKeys) {
        const int nj = static_cast<int>(std::min<int64_t>(kKeys, j_end - j0));
        if (j0 + kAheadKeys < j_end) {
            prefetch_kv_rows<D>(
                a, k_base + head_off, v_base + head_off, j0 + kAheadKeys,
                static_cast<int>(std::min<int64_t>(kKeys, j_end - j0 - kAheadKeys)));
        }
        const int n_keys = P::kPadKeys ? kKeys : nj;
        const auto key_pos = V::load_i32(a.kv_pos + j0, nj, INT32_MAX);
        alignas(64) int32_t neg_kp[kKeys];  // -kv_pos for the window's test
        const bool windowed = j0 < lo_max;
        if (windowed) {
            for (int jj = 0; jj < kKeys; ++jj) neg_kp[jj] = jj < nj ? -a.kv_pos[j0 + jj] : -INT32_MAX;
        }
        const auto neg_key_pos = V::load_i32(neg_kp, windowed ? kKeys : 0, -INT32_MAX);
        const T* k_rows[kKeys];  // rows jj >= nj repeat row nj - 1
        const T* v_rows[kKeys];
        for (int jj = 0; jj < kKeys; ++jj) {
            const int64_t off = kv_row_of(a, j0 + std::min(jj, nj - 1)) * a.kv_stride;
            k_rows[jj] = k_base + off;
            v_rows[jj] = v_base + off;
        }
        // The tile's lane count, 1 to kAttnFewLanes, as the template argument.
        float* block_logits = logits != nullptr ? logits->base + (j0 - logits->j_first) : nullptr;
        with_value(t.n_lanes, OneTo<kAttnFewLanes>{}, [&]<int NL>() {
            lanes_block<I, D, T, NL>(a, t, st, k_rows, v_rows, n_keys, key_pos, neg_key_pos,
                                     windowed, block_logits, logits != nullptr ? logits->ld : 0,
                                     logits != nullptr ? logits->row : -1, nj);
        });
    }
    // [lane][D] -> [D][16], the AttnState layout; padding lanes are zero.
    alignas(64) float tmp[kAttnFewLanes * D];
    const int n_lanes = std::min(t.n_lanes, kAttnFewLanes);
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        st.l[lane] =
            lane < n_lanes ? V::reduce_add(V::load(st.o + kLaneSumOffset<D> + lane * kKeys)) : 0.0f;
    }
    std::memcpy(tmp, st.o, sizeof(float) * n_lanes * D);
    std::memset(st.o, 0, sizeof(float) * D * kAttnLanes);
    for (int lane = 0; lane < n_lanes; ++lane) {
        for (int c = 0; c < D; ++c) st.o[c * kAttnLanes + lane] = tmp[lane * D + c];
    }
}

}  // namespace

template <Isa I>
void attention_lanes(const AttentionArgs& a, const AttnTile& t, int64_t j_begin, int64_t j_end,
                     AttnState& st, const LaneLogits* logits) {
    with_kernel_types(
        a, [&]<int D, typename T>() { lanes_kernel<I, D, T>(a, t, j_begin, j_end, st, logits); });
}

template <Isa I>
void attention_tile(const AttentionArgs& a, const PackedKvF32& packed, const AttnTile& t,
                    int64_t j_begin, int64_t j_end, AttnState& st, bool resume) {
    with_kernel_types(a, [&]<int D, typename T>() {
        tile_kernel<I, D>(a, packed, t, j_begin, j_end, st, resume);
    });
}

// The LazyLLM score's logits (group_logits, attention_isa.h): kWidth keys at a time, each K row
// read once for every query head of its KV head, one partial-sum vector per (head, key) reduced
// by Vec::transpose_sum. head_dim a multiple of kWidth.
template <Isa I, typename T>
void group_logits_kernel(const AttentionArgs& a, const float* q_group, int group, int kv_head,
                         int64_t j_begin, int64_t j_end, float* logits, int64_t ld) {
    using V = Vec<I>;
    using F = typename V::F;
    constexpr int W = V::kWidth;
    static_assert(W == kVecWidth<I>);  // the driver's head_dim test (attention.cpp)
    constexpr int kHeads = 4;          // query heads per pass over the keys
    const int d = a.head_dim;
    const T* k_head = static_cast<const T*>(a.k) + kv_head_offset(a, kv_head);
    for (int g0 = 0; g0 < group; g0 += kHeads) {
        const int ng = std::min(kHeads, group - g0);
        for (int64_t j0 = j_begin; j0 < j_end; j0 += W) {
            const int nj = static_cast<int>(std::min<int64_t>(W, j_end - j0));
            F acc[kHeads][W];
            for (int jj = 0; jj < W; ++jj) {
                for (int g = 0; g < kHeads; ++g) acc[g][jj] = V::zero();
                if (jj >= nj) continue;
                const T* k = k_head + kv_row_of(a, j0 + jj) * a.kv_stride;
                for (int c = 0; c < d; c += W) {
                    const F kc = V::load(k + c);
                    for (int g = 0; g < ng; ++g) {
                        acc[g][jj] = V::fmadd(V::load(q_group + (g0 + g) * d + c), kc, acc[g][jj]);
                    }
                }
            }
            for (int g = 0; g < ng; ++g) {
                const F s = V::mul(V::transpose_sum(acc[g]), V::set1(a.scale));
                float* out = logits + (g0 + g) * ld + j0;
                if (nj == W) {
                    V::store(out, s);
                } else {
                    V::store(out, V::tail(nj), s);
                }
            }
        }
    }
}

template <Isa I>
void group_logits(const AttentionArgs& a, const float* q_group, int group, int kv_head,
                  int64_t j_begin, int64_t j_end, float* logits, int64_t ld) {
    if (a.kv_type == KvType::kF16) {
        group_logits_kernel<I, uint16_t>(a, q_group, group, kv_head, j_begin, j_end, logits, ld);
    } else {
        group_logits_kernel<I, float>(a, q_group, group, kv_head, j_begin, j_end, logits, ld);
    }
}

// Softmax of n logits in place; masked loads and stores for the last vector only
// (for_vectors). The max is exact in any order; the tail's lanes are added as zeros.
template <Isa I>
void softmax_in_place(float* probs, int64_t n) {
    using V = Vec<I>;
    using F = typename V::F;
    constexpr int W = V::kWidth;
    const int64_t n_full = n / W * W;
    F mv = V::set1(-__builtin_inff());
    for (int64_t j = 0; j < n_full; j += W) mv = V::max(mv, V::load(probs + j));
    float max_s = V::reduce_max(mv);
    for (int64_t j = n_full; j < n; ++j) max_s = std::max(max_s, probs[j]);
    const F max_v = V::set1(max_s);
    F sum_v = V::zero();
    for_vectors<I>(n, [&]<bool kFull>(int64_t j, typename V::Mask mask) {
        const F e = V::exp(V::sub(load_part<I, kFull>(probs + j, mask), max_v));
        sum_v = V::add(sum_v, kFull ? e : V::keep(e, mask));
        store_out<I, kFull>(probs + j, mask, e);
    });
    const F inv = V::set1(1.0f / V::reduce_add(sum_v));
    for_vectors<I>(n, [&]<bool kFull>(int64_t j, typename V::Mask mask) {
        store_out<I, kFull>(probs + j, mask, V::mul(load_part<I, kFull>(probs + j, mask), inv));
    });
}

template <Isa I>
void pack_kv_f32(const KernelContext& ctx, const AttentionArgs& a, PackedKvF32& packed) {
    using V = Vec<I>;
    // Rows past n_kv: a block that starts at the last key reads kTileKeys - 1 more.
    const int64_t n_pad = (a.n_kv + 2 * kTileKeys - 1) / kTileKeys * kTileKeys;
    packed.n_kv_pad = n_pad;
    const int64_t size = static_cast<int64_t>(a.n_head_kv) * n_pad * a.head_dim;
    grow(packed.k, size);
    grow(packed.v, size);
    with_kernel_types(a, [&]<int D, typename T>() {
        const T* k_src = static_cast<const T*>(a.k);
        const T* v_src = static_cast<const T*>(a.v);
#pragma omp parallel for num_threads(std::max(1, ctx.n_threads)) schedule(static)
        for (int64_t j = 0; j < n_pad; ++j) {
            for (int g = 0; g < a.n_head_kv; ++g) {
                float* k_dst = packed.k.data() + (g * n_pad + j) * D;
                float* v_dst = packed.v.data() + (g * n_pad + j) * D;
                if (j >= a.n_kv) {
                    std::fill(k_dst, k_dst + D, 0.0f);
                    std::fill(v_dst, v_dst + D, 0.0f);
                    continue;
                }
                const int64_t off = kv_row_of(a, j) * a.kv_stride + kv_head_offset(a, g);
#pragma GCC unroll 16
                for (int c = 0; c < D; c += V::kWidth) {
                    V::store_aligned(k_dst + c, V::load(k_src + off + c));
                    V::store_aligned(v_dst + c, V::load(v_src + off + c));
                }
            }
        }
    });
}

}  // namespace lazyllm::kernels::detail

#define LAZYLLM_ATTENTION_INSTANTIATE(I)                                                     \
    template void lazyllm::kernels::detail::attention_tile<I>(                               \
        const AttentionArgs&, const detail::PackedKvF32&, const detail::AttnTile&, int64_t,  \
        int64_t, detail::AttnState&, bool);                                                  \
    template void lazyllm::kernels::detail::pack_kv_f32<I>(                                  \
        const KernelContext&, const AttentionArgs&, detail::PackedKvF32&);                   \
    template void lazyllm::kernels::detail::group_logits<I>(                                 \
        const AttentionArgs&, const float*, int, int, int64_t, int64_t, float*, int64_t);    \
    template void lazyllm::kernels::detail::softmax_in_place<I>(float*, int64_t);            \
    template void lazyllm::kernels::detail::attention_lanes<I>(                              \
        const AttentionArgs&, const detail::AttnTile&, int64_t, int64_t, detail::AttnState&, \
        const detail::LaneLogits*)
