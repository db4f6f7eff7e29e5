// Attention driver: validates the arguments, cuts the work into tiles of 16 query vectors
// sharing a KV head (attention_isa.h), and runs them over ctx.n_threads with OpenMP.
//
// Paths by ctx.isa:
// - bf16 (AttentionArgs::bf16) on a call with enough queries to pay for the one-off bf16
//   packing of K and V (prefill): kAmx runs AMX tiles (attention_amx.cpp) and kAvx512 with
//   AVX-512-BF16 VDPBF16PS tiles (attention_bf16_avx512.cpp), over bf16 copies of K and V
//   made once per call;
// - kAvx512, kAvx2: the fp32 kernels (attention_inl.h, entered through isa_dispatch): queries
//   in lanes for full tiles, over fp32 copies of K and V made once per call, keys in lanes
//   for tiles with few real lanes; with AVX2 a tile's 16 lanes are two 8-wide halves and keys
//   in lanes takes 8 keys per vector;
// - on both prefill paths, tiles that see more keys than fit a quarter of L2 take them in
//   chunks, 16 tiles per chunk (run_tiles_chunked);
// - decode (up to 48 query vectors per KV head: a step's row, the rows a lazy step revives) on
//   every fast path: keys in lanes, tiles of up to 6 lanes, every tile over each key chunk, so
//   each K/V row comes from memory once for all rows, contiguously when the keys are a prefix;
// - kRef, or a head_dim without a kernel: the reference, parallel over query rows.
// Keys visible to a query are a prefix of the (sorted) key set, so each tile only scans keys
// below its largest visible count: the causal half of the work, never the masked half.
// Few tiles with many keys (decode) are also split along the keys and merged
// (flash-decoding), so both threads work on a single query.
// The fast kernels run with denormals flushed (fp_env.h): masked scores underflow in exp2.
#include "kernels/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"
#include "kernels/attention_isa.h"
#include "kernels/fp_env.h"
#include "kernels/gemm_convert.h"
#include "kernels/workspace.h"

namespace lazyllm::kernels {

namespace {

using detail::AttnState;
using detail::AttnTile;
using detail::kAttnLanes;

// out = o / l of a tile: the AVX-512 finalize where the AVX-512 kernels (or AMX) ran.
using FinalizeFn = void (*)(const AttentionArgs&, const AttnTile&, const AttnState&);
template <Isa I>
constexpr FinalizeFn kFinalize =
    I == Isa::kAvx512 ? detail::attention_finalize_avx512 : detail::attention_finalize_scalar;

constexpr int kMaxHeadDim = 256;
// Calls of at most this many query vectors per KV head (n_q * group) that need not be
// row-invariant run keys in lanes (run_decode): a decode step's row and the rows a lazy step
// revives. 3 to 16 rows at 9/3 heads over 1k-8k keys: 1.05-2.0x the 16-lane tiles over packed
// K/V (BM_AttentionFewRows, AMX Xeon), even at 17-24 rows, behind them at 33 over 1k.
constexpr int64_t kDecodeMaxLanes = 48;
// The bf16 kernels need this many query vectors per KV head (n_q * group) to beat the fp32
// kernel once the K/V packing is paid for (measured with AMX).
constexpr int64_t kBf16MinQueryVectors = 64;
// Key-split granularity: a multiple of the AMX key block, and big enough to amortize a tile's
// setup.
constexpr int64_t kSplitAlign = 64;
constexpr int64_t kMinSplitKeys = 256;
// L2 blocking of a prefill (run_tiles_chunked): tiles per group, and the bytes of the packed K
// and V per key chunk.
constexpr int kChunkGroupTiles = 16;
constexpr int64_t kChunkBytes = 512 * 1024;

// The keys each query row sees: [lo[i], hi[i]) of the sorted key set (lo empty without a
// sliding window: 0).
struct KeyRanges {
    std::vector<int64_t> hi;  // [n_q] keys at or before the row's position
    std::vector<int64_t> lo;  // [n_q] keys outside its window (AttentionArgs::window > 0)
};

// Tiles per KV head: its (row, head-in-group) pairs, kAttnLanes to a tile.
int64_t tiles_per_head(const AttentionArgs& a) {
    return (a.n_q * (a.n_head / a.n_head_kv) + kAttnLanes - 1) / kAttnLanes;
}

// Tile `tile_idx` of KV head g: flattened (row, head-in-group) pairs [width * tile_idx,
// + width), width at most 16.
AttnTile make_tile(const AttentionArgs& a, const KeyRanges& keys, int g, int64_t tile_idx,
                   int width = kAttnLanes) {
    const int group = a.n_head / a.n_head_kv;
    const int64_t f0 = tile_idx * width;
    AttnTile t;
    t.kv_head = g;
    t.n_lanes = static_cast<int>(std::min<int64_t>(width, a.n_q * group - f0));
    t.n_vis_min = a.n_kv;
    t.n_vis_max = 0;
    t.n_lo_min = keys.lo.empty() ? 0 : a.n_kv;
    t.n_lo_max = 0;
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        const int64_t f = f0 + (lane < t.n_lanes ? lane : 0);
        const int64_t row = f / group;
        t.row[lane] = row;
        t.head[lane] = g * group + static_cast<int>(f % group);
        t.pos[lane] = a.q_pos[row];
        if (lane < t.n_lanes) {
            t.n_vis_min = std::min(t.n_vis_min, keys.hi[row]);
            t.n_vis_max = std::max(t.n_vis_max, keys.hi[row]);
            if (!keys.lo.empty()) {
                t.n_lo_min = std::min(t.n_lo_min, keys.lo[row]);
                t.n_lo_max = std::max(t.n_lo_max, keys.lo[row]);
            }
        }
    }
    return t;
}

// Merges key-split partial states parts[0], parts[stride], ... into `dst` (FlashDecoding's
// log-sum-exp combination). Lanes innermost: each row of O^T is 16 contiguous lanes.
void merge_states(const AttnState* parts, int n_parts, int64_t stride, int head_dim,
                  AttnState& dst) {
    float m[kAttnLanes], l[kAttnLanes], w[kAttnLanes];
    for (int lane = 0; lane < kAttnLanes; ++lane) {
        m[lane] = detail::kAttnMaxInit;
        for (int p = 0; p < n_parts; ++p) m[lane] = std::max(m[lane], parts[p * stride].m[lane]);
        l[lane] = 0.0f;
    }
    std::fill(dst.o, dst.o + static_cast<int64_t>(head_dim) * kAttnLanes, 0.0f);
    for (int p = 0; p < n_parts; ++p) {
        const AttnState& part = parts[p * stride];
        for (int lane = 0; lane < kAttnLanes; ++lane) {
            w[lane] = std::exp2(part.m[lane] - m[lane]);
            l[lane] += w[lane] * part.l[lane];
        }
        for (int c = 0; c < head_dim; ++c) {
            float* o = dst.o + c * kAttnLanes;
            const float* po = part.o + c * kAttnLanes;
            for (int lane = 0; lane < kAttnLanes; ++lane) o[lane] += w[lane] * po[lane];
        }
    }
    std::copy(m, m + kAttnLanes, dst.m);
    std::copy(l, l + kAttnLanes, dst.l);
}

// Part `part` of [0, n) cut into n_split aligned chunks (the last ones may be empty).
void split_range(int64_t n, int64_t n_split, int64_t part, int64_t& j0, int64_t& j1) {
    const int64_t per = (n + n_split - 1) / n_split;
    const int64_t step = (per + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
    j0 = std::min(part * step, n);
    j1 = std::min(j0 + step, n);
}

void clear_state(int head_dim, AttnState& st) {
    std::fill(st.m, st.m + kAttnLanes, detail::kAttnMaxInit);
    std::fill(st.l, st.l + kAttnLanes, 0.0f);
    std::fill(st.o, st.o + head_dim * kAttnLanes, 0.0f);
}

// Number of key chunks for `n_tasks` independent tasks over up to max_vis keys: split only
// when the tasks alone cannot keep the threads busy.
int64_t key_splits(int n_threads, int64_t n_tasks, int64_t max_vis) {
    if (n_threads <= 1 || n_tasks >= 2 * n_threads) return 1;
    const int64_t want = (4 * n_threads + n_tasks - 1) / n_tasks;
    return std::clamp<int64_t>(max_vis / kMinSplitKeys, 1, want);
}

// detail::attention_lanes over keys [j0, j1) for the n_tiles tiles, one KV head after the
// other (each head's keys in address order in the model's cache; a head's later tiles find
// the chunk's rows in cache), each tile over the part of the chunk its lanes see.
template <Isa I>
void lanes_heads(const AttentionArgs& a, const AttnTile* tiles, int n_tiles, int64_t j0, int64_t j1,
                 AttnState* states, int head_dim, const detail::LaneLogits* logits = nullptr) {
    for (int i = 0; i < n_tiles; ++i) {
        const int64_t lo = std::max(j0, tiles[i].n_lo_min), hi = std::min(j1, tiles[i].n_vis_max);
        if (lo < hi) {
            detail::attention_lanes<I>(a, tiles[i], lo, hi, states[i], logits);
        } else {
            clear_state(head_dim, states[i]);
        }
    }
}

// Scratch of one decode call: per (key chunk, tile) a tile state. Grow-only, the caller's
// Workspace part (decode runs this once per layer and token).
struct DecodeScratch {
    std::vector<AttnTile> tiles;   // [n_head_kv][tiles per KV head]
    std::vector<AttnState> parts;  // [n_split][n_tiles]
    std::vector<float> o;          // [n_split][n_tiles][head_dim][16]
    std::vector<float> logits;     // [n_head][n_keys]: the score's (AttentionArgs::scores)
};

// Decode: each KV head's (row, head) pairs in tiles of at most kAttnFewLanes lanes (one for a
// step's own row), keys in lanes. Each work item runs every tile over one chunk of keys;
// chunks are merged per tile. With a.scores (attention_scores_from_pass) the lanes of the last
// row also write its score logits, which the same threads then turn into the score.
template <Isa I>
void run_decode(const KernelContext& ctx, const AttentionArgs& a, const KeyRanges& keys) {
    const int n_threads = std::max(1, ctx.n_threads);
    const int d = a.head_dim;
    const int64_t lanes = a.n_q * (a.n_head / a.n_head_kv);  // per KV head
    const int per_head =
        static_cast<int>((lanes + detail::kAttnFewLanes - 1) / detail::kAttnFewLanes);
    const int n_tiles = a.n_head_kv * per_head;
    DecodeScratch& sc = ctx.ws->caller<DecodeScratch>();
    sc.tiles.resize(n_tiles);
    int64_t first = a.n_kv, end = 0;  // the keys any tile sees: [first, end)
    for (int i = 0; i < n_tiles; ++i) {
        AttnTile& t = sc.tiles[i];
        t = make_tile(a, keys, i / per_head, i % per_head, detail::kAttnFewLanes);
        first = std::min(first, std::min(t.n_lo_min, t.n_vis_max));
        end = std::max(end, t.n_vis_max);
    }
    first = std::min(first, end);
    const int64_t n_keys = end - first;
    const int64_t n_split = key_splits(n_threads, 1, n_keys);
    sc.parts.resize(n_split * n_tiles);
    const int64_t o_size = static_cast<int64_t>(d) * kAttnLanes;
    if (static_cast<int64_t>(sc.o.size()) < n_split * n_tiles * o_size) {
        sc.o.resize(n_split * n_tiles * o_size);
    }
    for (int64_t i = 0; i < n_split * n_tiles; ++i) sc.parts[i].o = sc.o.data() + i * o_size;
    detail::LaneLogits logits;  // the score's: keys [first, first + n_keys), first == 0
    const detail::LaneLogits* lane_logits = nullptr;
    if (a.scores != nullptr && n_keys > 0) {
        LAZYLLM_CHECK(first == 0 && end == keys.hi[a.n_q - 1]);
        grow(sc.logits, a.n_head * n_keys);
        logits = {sc.logits.data(), n_keys, first, a.n_q - 1};
        lane_logits = &logits;
    }
    const ScopedFlushDenormals ftz;  // this thread; each worker below sets its own
    if (n_keys == 0) {
        for (int i = 0; i < n_tiles; ++i) clear_state(d, sc.parts[i]);
        if (a.scores != nullptr) std::fill(a.scores, a.scores + a.n_kv, 0.0f);
    } else if (n_split == 1) {
        lanes_heads<I>(a, sc.tiles.data(), n_tiles, first, end, sc.parts.data(), d, lane_logits);
        if (lane_logits != nullptr) {
            detail::head_mean_from_logits(ctx, a.n_head, n_keys, a.n_kv, logits.base, a.scores);
        }
    } else {
#pragma omp parallel num_threads(static_cast <int>(std::min <int64_t>(n_threads, n_split)))
        {
            const ScopedFlushDenormals worker_ftz;
#pragma omp for schedule(dynamic, 1)
            for (int64_t part = 0; part < n_split; ++part) {
                int64_t j0 = 0, j1 = 0;
                split_range(n_keys, n_split, part, j0, j1);
                lanes_heads<I>(a, sc.tiles.data(), n_tiles, first + j0, first + j1,
                               sc.parts.data() + part * n_tiles, d, lane_logits);
            }
            if (lane_logits != nullptr) {
                detail::head_mean_from_logits(ctx, a.n_head, n_keys, a.n_kv, logits.base, a.scores);
            }
        }
    }
    alignas(64) float o_buf[kMaxHeadDim * kAttnLanes];
    for (int i = 0; i < n_tiles; ++i) {
        if (n_split == 1) {
            kFinalize<I>(a, sc.tiles[i], sc.parts[i]);
            continue;
        }
        AttnState merged;
        merged.o = o_buf;
        merge_states(sc.parts.data() + i, static_cast<int>(n_split), n_tiles, d, merged);
        kFinalize<I>(a, sc.tiles[i], merged);
    }
}

KeyRanges key_ranges(const AttentionArgs& a) {
    KeyRanges r;
    r.hi.resize(a.n_q);
    for (int64_t i = 0; i < a.n_q; ++i) {
        r.hi[i] = std::upper_bound(a.kv_pos, a.kv_pos + a.n_kv, a.q_pos[i]) - a.kv_pos;
    }
    if (a.window > 0) {
        r.lo.resize(a.n_q);
        for (int64_t i = 0; i < a.n_q; ++i) {
            // Keys at positions <= q_pos - window are outside the window.
            const int64_t last_hidden = static_cast<int64_t>(a.q_pos[i]) - a.window;
            r.lo[i] = last_hidden < 0 ? 0
                                      : std::upper_bound(a.kv_pos, a.kv_pos + a.n_kv,
                                                         static_cast<int32_t>(last_hidden)) -
                                            a.kv_pos;
        }
    }
    return r;
}

// finalize: the ISA's attention_finalize_* (out = o / l).
template <typename TileFn>
void run_tiles(const KernelContext& ctx, const AttentionArgs& a, const KeyRanges& keys,
               TileFn&& tile_fn, FinalizeFn finalize) {
    const int n_threads = std::max(1, ctx.n_threads);
    const int d = a.head_dim;
    const int64_t n_head_tiles = tiles_per_head(a);
    const int64_t n_tasks = n_head_tiles * a.n_head_kv;
    const int64_t max_vis = *std::max_element(keys.hi.begin(), keys.hi.end());

    const int64_t n_split = a.row_invariant ? 1 : key_splits(n_threads, n_tasks, max_vis);

    if (n_split == 1) {
        // Heaviest tiles first (queries usually come in position order, so the last tiles
        // see the most keys) for a better dynamic schedule.
#pragma omp parallel num_threads(n_threads)
        {
            const ScopedFlushDenormals ftz;
            alignas(64) float o_buf[kMaxHeadDim * kAttnLanes];
            AttnState st;
            st.o = o_buf;
#pragma omp for schedule(dynamic, 1)
            for (int64_t idx = 0; idx < n_tasks; ++idx) {
                const int64_t tile_idx = n_head_tiles - 1 - idx % n_head_tiles;
                const int g = static_cast<int>(idx / n_head_tiles);
                const AttnTile t = make_tile(a, keys, g, tile_idx);
                if (t.n_vis_max > t.n_lo_min) {
                    tile_fn(t, t.n_lo_min, t.n_vis_max, st);
                } else {
                    clear_state(d, st);
                }
                finalize(a, t, st);
            }
        }
        return;
    }

    // Key-split path (few tiles, long context): n_tasks * n_split partial states.
    const int64_t n_items = n_tasks * n_split;
    std::vector<float> o_parts(n_items * d * kAttnLanes);  // [n_items][d][16]
    std::vector<AttnState> parts(n_items);
#pragma omp parallel num_threads(n_threads)
    {
        const ScopedFlushDenormals ftz;
#pragma omp for schedule(dynamic, 1)
        for (int64_t item = 0; item < n_items; ++item) {
            const int64_t task = item / n_split;
            const int64_t part = item % n_split;
            const AttnTile t =
                make_tile(a, keys, static_cast<int>(task % a.n_head_kv), task / a.n_head_kv);
            AttnState& st = parts[item];
            st.o = o_parts.data() + item * d * kAttnLanes;
            const int64_t first = std::min(t.n_lo_min, t.n_vis_max);
            int64_t j0 = 0, j1 = 0;
            split_range(t.n_vis_max - first, n_split, part, j0, j1);
            if (j1 > j0) {
                tile_fn(t, first + j0, first + j1, st);
            } else {
                clear_state(d, st);
            }
        }
#pragma omp for schedule(static)
        for (int64_t task = 0; task < n_tasks; ++task) {
            alignas(64) float o_buf[kMaxHeadDim * kAttnLanes];
            AttnState merged;
            merged.o = o_buf;
            merge_states(parts.data() + task * n_split, static_cast<int>(n_split), 1, d, merged);
            const AttnTile t =
                make_tile(a, keys, static_cast<int>(task % a.n_head_kv), task / a.n_head_kv);
            finalize(a, t, merged);
        }
    }
}

// A prefill over long key ranges, blocked for L2: a group of kChunkGroupTiles consecutive
// tiles of one KV head walks the keys in chunks, and every tile of the group takes a chunk
// before the next chunk starts (the tile kernels resume their state), so each chunk's packed
// K and V come from L2 for all of the group's tiles instead of from L3 for each tile.
// Heaviest groups first, dynamic schedule, as run_tiles.
// A worker's tile states of run_tiles_chunked (a Workspace part).
struct ChunkedTileStates {
    AlignedVector<float> o;  // [kChunkGroupTiles][head_dim][kAttnLanes]
};

template <typename TileFn>
void run_tiles_chunked(const KernelContext& ctx, const AttentionArgs& a, const KeyRanges& keys,
                       int64_t chunk_keys, TileFn&& tile_fn, FinalizeFn finalize) {
    const int n_threads = std::max(1, ctx.n_threads);
    const int d = a.head_dim;
    const int64_t n_head_tiles = tiles_per_head(a);
    const int64_t groups_per_head = (n_head_tiles + kChunkGroupTiles - 1) / kChunkGroupTiles;
    const int64_t n_tasks = groups_per_head * a.n_head_kv;
    ctx.ws->workers(n_threads);
#pragma omp parallel num_threads(n_threads)
    {
        const ScopedFlushDenormals ftz;
        // Grow-only: once per worker of the workspace, not per call.
        AlignedVector<float>& o_vec = ctx.ws->worker<ChunkedTileStates>(omp_get_thread_num()).o;
        float* o_buf = grow(o_vec, static_cast<int64_t>(kChunkGroupTiles) * d * kAttnLanes);
        AttnTile tiles[kChunkGroupTiles];
        AttnState states[kChunkGroupTiles];
        for (int k = 0; k < kChunkGroupTiles; ++k) states[k].o = o_buf + k * d * kAttnLanes;
#pragma omp for schedule(dynamic, 1)
        for (int64_t idx = 0; idx < n_tasks; ++idx) {
            const int g = static_cast<int>(idx / groups_per_head);
            const int64_t first = (groups_per_head - 1 - idx % groups_per_head) * kChunkGroupTiles;
            const int n_tiles =
                static_cast<int>(std::min<int64_t>(kChunkGroupTiles, n_head_tiles - first));
            int64_t j_lo = a.n_kv, n_keys = 0;  // the keys any tile of the group sees
            for (int k = 0; k < n_tiles; ++k) {
                tiles[k] = make_tile(a, keys, g, first + k);
                j_lo = std::min(j_lo, tiles[k].n_lo_min);
                n_keys = std::max(n_keys, tiles[k].n_vis_max);
            }
            j_lo = j_lo / chunk_keys * chunk_keys;
            for (int64_t j0 = j_lo; j0 < n_keys; j0 += chunk_keys) {
                for (int k = 0; k < n_tiles; ++k) {
                    const int64_t jb = std::max(j0, tiles[k].n_lo_min);
                    const int64_t j1 = std::min(j0 + chunk_keys, tiles[k].n_vis_max);
                    if (jb < j1)
                        tile_fn(tiles[k], jb, j1, states[k], /*resume=*/jb > tiles[k].n_lo_min);
                }
            }
            for (int k = 0; k < n_tiles; ++k) {
                if (tiles[k].n_vis_max <= tiles[k].n_lo_min) clear_state(d, states[k]);
                finalize(a, tiles[k], states[k]);
            }
        }
    }
}

// A prefill's tiles (tile_fn(t, j0, j1, st, resume)) over packed K and V of key_bytes a key:
// run_tiles_chunked where tiles see more keys than a chunk of a quarter of a 2 MiB L2 (a
// multiple of the split alignment) and need no key split, else run_tiles. (With AMX, 256 KiB,
// 512 KiB and 1 MiB chunks measured alike at 8k keys, all 10-15% faster than no chunking on
// one thread.)
template <typename TileFn>
void run_tiles_blocked(const KernelContext& ctx, const AttentionArgs& a, const KeyRanges& keys,
                       int64_t key_bytes, TileFn&& tile_fn, FinalizeFn finalize) {
    const int64_t chunk_keys =
        std::max<int64_t>(kSplitAlign, kChunkBytes / key_bytes / kSplitAlign * kSplitAlign);
    const int64_t max_vis = *std::max_element(keys.hi.begin(), keys.hi.end());
    const int64_t n_tasks = tiles_per_head(a) * a.n_head_kv;
    if (max_vis > chunk_keys &&
        (a.row_invariant || key_splits(ctx.n_threads, n_tasks, max_vis) == 1)) {
        run_tiles_chunked(ctx, a, keys, chunk_keys, tile_fn, finalize);
        return;
    }
    run_tiles(
        ctx, a, keys,
        [&tile_fn](const AttnTile& t, int64_t j0, int64_t j1, AttnState& st) {
            tile_fn(t, j0, j1, st, false);
        },
        finalize);
}

// The bf16 prefill: AMX tiles, or VDPBF16PS tiles; false where neither applies.
bool run_bf16(const KernelContext& ctx, const AttentionArgs& a, const KeyRanges& keys) {
    if (!a.bf16 || (!a.row_invariant && a.n_q * (a.n_head / a.n_head_kv) < kBf16MinQueryVectors)) {
        return false;
    }
    const bool amx = ctx.isa == Isa::kAmx && detail::amx_attention_usable(a);
    if (!amx &&
        !(ctx.isa >= Isa::kAvx512 && cpu_has_avx512_bf16() && detail::bf16_attention_usable(a))) {
        return false;
    }
    // The caller's Workspace part, grow-only: a prefill runs this once per layer, and a fresh
    // zero-filled copy of K and V each time costs page faults and a memset.
    detail::PackedKvBf16& packed = ctx.ws->caller<detail::PackedKvBf16>();
    detail::pack_kv_bf16(ctx, a, packed);
    const auto tile_fn = [&packed, &a, amx](const AttnTile& t, int64_t j0, int64_t j1,
                                            AttnState& st, bool resume) {
        if (amx) {
            detail::attention_tile_amx(a, packed, t, j0, j1, st, resume);
        } else {
            detail::attention_tile_bf16(a, packed, t, j0, j1, st, resume);
        }
    };
    // bf16 K and V^T: 4 bytes a key and head dim.
    run_tiles_blocked(ctx, a, keys, 4 * a.head_dim, tile_fn, detail::attention_finalize_avx512);
    return true;
}

// Whether run_fast takes a call keys in lanes (run_decode): a decode step's few query vectors
// per KV head, not row-invariant.
bool decode_path(const AttentionArgs& a) {
    return a.n_q * (a.n_head / a.n_head_kv) <= kDecodeMaxLanes && !a.row_invariant;
}

// The fp32 kernels of target I (simd.h), or the bf16 ones on a bf16 prefill.
template <Isa I>
void run_fast(const KernelContext& ctx, const AttentionArgs& a, const KeyRanges& keys) {
    if (decode_path(a)) {
        run_decode<I>(ctx, a, keys);
        return;
    }
    if (I == Isa::kAvx512 && run_bf16(ctx, a, keys)) return;
    detail::PackedKvF32& packed = ctx.ws->caller<detail::PackedKvF32>();
    detail::pack_kv_f32<I>(ctx, a, packed);
    // A tile of few lanes (the last of a KV head) takes all its keys with keys in lanes on its
    // first chunk, and skips the later ones: one kernel and order for every key. Row-invariant
    // calls run every tile with queries in lanes, whatever its lanes.
    const auto tile_fn = [&](const AttnTile& t, int64_t j0, int64_t j1, AttnState& st,
                             bool resume) {
        if (t.n_lanes > detail::kAttnFewLanes || a.row_invariant) {
            detail::attention_tile<I>(a, packed, t, j0, j1, st, resume);
        } else if (!resume) {
            detail::attention_lanes<I>(a, t, j0, t.n_vis_max, st);
        }
    };
    // fp32 K and V: 8 bytes a key and head dim.
    run_tiles_blocked(ctx, a, keys, 8 * a.head_dim, tile_fn, kFinalize<I>);
}

// The SIMD kernels (run_fast) rather than the reference.
bool fast_path(const KernelContext& ctx, const AttentionArgs& a) {
    return ctx.isa >= Isa::kAvx2 && a.head_dim <= kMaxHeadDim &&
           detail::fp32_attention_head_dim_supported(a.head_dim);
}

}  // namespace

// Keys in lanes (run_decode) with at most kAttnFewLanes query heads per KV head, keys from the
// first (no window), as attention_scores_head_mean's vectorized path reads them, and the score
// row (the last) the latest, so that the keys any row sees are the ones it scores.
bool attention_scores_from_pass(const KernelContext& ctx, const AttentionArgs& a) {
    if (!fast_path(ctx, a) || a.n_q == 0 || a.n_kv == 0 || !decode_path(a) || a.window != 0 ||
        a.n_head / a.n_head_kv > detail::kAttnFewLanes) {
        return false;
    }
    const int32_t last = a.q_pos[a.n_q - 1];
    return std::all_of(a.q_pos, a.q_pos + a.n_q, [last](int32_t p) { return p <= last; });
}

void attention(const KernelContext& ctx_in, const AttentionArgs& a) {
    detail::validate_attention(a);
    if (a.n_q == 0) return;
    Workspace local;
    KernelContext ctx = ctx_in;
    if (ctx.ws == nullptr) ctx.ws = &local;
    if (a.scores != nullptr && !attention_scores_from_pass(ctx, a)) {
        const int64_t last = a.n_q - 1;
        attention_scores_head_mean(ctx, a, a.q + last * a.q_stride, a.q_pos[last], a.scores);
        AttentionArgs rest = a;
        rest.scores = nullptr;
        attention(ctx, rest);
        return;
    }
    if (!fast_path(ctx, a) || a.n_kv == 0) {
        ref::attention_parallel(ctx, a);
        return;
    }
    const KeyRanges keys = key_ranges(a);
    isa_dispatch(ctx.isa, [&]<Isa I>() {
        if constexpr (I != Isa::kRef) run_fast<I>(ctx, a, keys);
    });
}

void kv_store_rows(const KernelContext& ctx, KvType type, const float* src, int64_t src_stride,
                   int64_t n_rows, int64_t width, const int32_t* rows, void* dst,
                   int64_t dst_stride) {
    isa_dispatch(ctx.isa, [&]<Isa I>() {
        if constexpr (I == Isa::kAvx512) {
            detail::kv_store_rows_avx512(type, src, src_stride, n_rows, width, rows, dst,
                                         dst_stride);
        } else {
            ref::kv_store_rows(type, src, src_stride, n_rows, width, rows, dst, dst_stride);
        }
    });
}

namespace detail {

void validate_attention(const AttentionArgs& a) {
    LAZYLLM_CHECK(a.n_q >= 0 && a.n_kv >= 0);
    LAZYLLM_CHECK(a.kv_type == KvType::kF32 || a.kv_type == KvType::kF16);
    LAZYLLM_CHECK(a.n_head > 0 && a.n_head_kv > 0 && a.n_head % a.n_head_kv == 0);
    LAZYLLM_CHECK(a.head_dim > 0);
    LAZYLLM_CHECK(a.q_stride >= static_cast<int64_t>(a.n_head) * a.head_dim);
    LAZYLLM_CHECK(a.out_stride >= static_cast<int64_t>(a.n_head) * a.head_dim);
    LAZYLLM_CHECK(a.out != nullptr || a.out16 != nullptr);
    LAZYLLM_CHECK(a.n_kv == 0 ||
                  (kv_heads_in_rows(a)
                       ? a.kv_stride >= static_cast<int64_t>(a.n_head_kv) * a.head_dim
                       : a.kv_stride == a.head_dim && a.kv_head_stride >= a.head_dim));
#ifndef NDEBUG
    for (int64_t j = 1; j < a.n_kv; ++j) LAZYLLM_CHECK(a.kv_pos[j - 1] < a.kv_pos[j]);
#endif
}

// O(head_dim * 16) per tile against O(head_dim * 16 * keys) for the kernels: a plain strided
// loop, bf16 rounding by the reference conversion.
void attention_finalize_scalar(const AttentionArgs& a, const AttnTile& t, const AttnState& st) {
    const int d = a.head_dim;
    alignas(64) float row[kMaxHeadDim];  // one output head row
    for (int lane = 0; lane < t.n_lanes; ++lane) {
        const float inv = st.l[lane] > 0.0f ? 1.0f / st.l[lane] : 0.0f;
        const int64_t off = t.row[lane] * a.out_stride + static_cast<int64_t>(t.head[lane]) * d;
        float* dst = a.out16 != nullptr ? row : a.out + off;
        for (int c = 0; c < d; ++c) dst[c] = st.o[c * kAttnLanes + lane] * inv;
        if (a.out16 != nullptr) convert_rows_to_bf16_ref(row, 1, d, d, a.out16 + off, d);
    }
}

}  // namespace detail

}  // namespace lazyllm::kernels
