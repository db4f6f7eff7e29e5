// AMX tile helpers shared by the AMX kernels (attention_amx.cpp, gemm_amx.cpp).
//
// Linux hands out AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM,
// Documentation/arch/x86/xstate.rst); oneDNN does the same. amx_permission() asks once per
// process and says whether AMX bf16 may be used (CPU has it, and the kernel granted it).
#pragma once

#include <cstdint>

namespace lazyllm::kernels::detail {

bool amx_permission();

// The 64-byte LDTILECFG operand, palette 1.
struct alignas(64) TileConfig {
    uint8_t palette_id = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

// A config with tiles 0..7 at 16 rows x 64 bytes, the shape every AMX kernel here uses.
inline TileConfig full_tile_config() {
    TileConfig cfg;
    for (int i = 0; i < 8; ++i) {
        cfg.rows[i] = 16;
        cfg.colsb[i] = 64;
    }
    return cfg;
}

}  // namespace lazyllm::kernels::detail

// Loads a TileConfig. GCC 12's _tile_loadconfig does not tell the optimizer that it reads
// the struct, so stores into a fresh local config can be dropped as dead (measured: tile
// loads then fault with #UD); the empty asm with a memory clobber keeps them.
#define LAZYLLM_TILE_LOADCONFIG(cfg)                               \
    do {                                                           \
        asm volatile("" : : "r"(&(cfg)) : "memory");              \
        _tile_loadconfig(&(cfg));                                  \
    } while (0)
