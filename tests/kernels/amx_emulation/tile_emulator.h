// A software model of the AMX tile instructions the AMX kernels use (palette 1 with every
// tile at 16 rows x 64 bytes, as full_tile_config() sets them), so that their code runs on
// CPUs without AMX: include it before a kernel source and the _tile_* intrinsics become
// calls into it. TDPBF16PS is modelled as C[m][n] += sum over k of the two bf16 products in
// fp32, one pair at a time; the hardware's internal rounding differs, so results are
// compared with a reference within a tolerance, never bit for bit with an AMX machine.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace lazyllm::tile_emulator {

// Each thread has its own tile registers, as each core does.
inline thread_local uint8_t g_tiles[8][16][64];

inline float bf16_to_float(uint16_t h) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
}

inline float bf16_value(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, sizeof(h));
    return bf16_to_float(h);
}

inline void load(int t, const void* base, int64_t stride) {
    for (int r = 0; r < 16; ++r) {
        std::memcpy(g_tiles[t][r], static_cast<const char*>(base) + r * stride, 64);
    }
}

inline void store(int t, void* base, int64_t stride) {
    for (int r = 0; r < 16; ++r)
        std::memcpy(static_cast<char*>(base) + r * stride, g_tiles[t][r], 64);
}

inline void zero(int t) { std::memset(g_tiles[t], 0, sizeof(g_tiles[t])); }

// C (16 x 16 fp32) += A (16 x 32 bf16) . B (16 rows of 16 bf16 pairs: B[k][n] = the pair of
// rows 2k and 2k + 1 of column n).
inline void dpbf16ps(int c, int a, int b) {
    for (int m = 0; m < 16; ++m) {
        for (int n = 0; n < 16; ++n) {
            float acc;
            std::memcpy(&acc, &g_tiles[c][m][4 * n], sizeof(acc));
            for (int k = 0; k < 16; ++k) {
                acc +=
                    bf16_value(&g_tiles[a][m][4 * k]) * bf16_value(&g_tiles[b][k][4 * n]) +
                    bf16_value(&g_tiles[a][m][4 * k + 2]) * bf16_value(&g_tiles[b][k][4 * n + 2]);
            }
            std::memcpy(&g_tiles[c][m][4 * n], &acc, sizeof(acc));
        }
    }
}

}  // namespace lazyllm::tile_emulator

#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbf16ps
#undef _tile_release
#undef _tile_loadconfig
#define _tile_loadd(t, base, stride) ::lazyllm::tile_emulator::load(t, base, stride)
#define _tile_stored(t, base, stride) ::lazyllm::tile_emulator::store(t, base, stride)
#define _tile_zero(t) ::lazyllm::tile_emulator::zero(t)
#define _tile_dpbf16ps(c, a, b) ::lazyllm::tile_emulator::dpbf16ps(c, a, b)
#define _tile_release() ((void)0)
#define _tile_loadconfig(cfg) ((void)(cfg))
