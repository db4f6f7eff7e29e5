#!/usr/bin/env python3
"""Golden data for lazyllm's dequantizers (tests/kernels/quant_test.cpp, suite QuantGolden).

An independent reference: gguf-py's numpy dequantizers (gguf.quants, pinned gguf==0.10.0 in
scripts/requirements-reference.txt) decode fixed, seeded random blocks of every type lazyllm
dequantizes. Quant fields are random bytes; the fp16 scale fields (d, m, dmin) are overwritten
with finite values so every output is finite. It also records gguf-py's fp32 -> bf16 rounding
(BF16.quantize_blocks, the same as ggml's ggml_compute_fp32_to_bf16) and numpy's fp32 -> fp16
rounding on hand-picked edge cases (ties, subnormals, overflow, inf, NaN).

Re-run (only needed when this script changes; the output is deterministic):
    scripts/setup_reference.sh            # creates .venv-ref with gguf + numpy
    .venv-ref/bin/python scripts/golden_quant.py
which rewrites tests/golden/quant_golden.json. Byte arrays are stored as lowercase hex
(little-endian, as in memory): inputs as the raw GGUF tensor bytes, outputs as fp32 / uint16.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize, quantize

SEED = 20240611
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden",
                   "quant_golden.json")

# type -> (number of blocks, byte offsets of fp16 scale fields), from ggml-common.h.
CASES = {
    T.Q4_0: (8, [0]),
    T.Q4_1: (8, [0, 2]),
    T.Q5_0: (8, [0]),
    T.Q5_1: (8, [0, 2]),
    T.Q8_0: (8, [0]),
    T.Q4_K: (2, [0, 2]),
    T.Q5_K: (2, [0, 2]),
    T.Q6_K: (2, [208]),
}
# Types added later draw from their own generator (seed SEED + 1), so that the cases above and
# the rounding inputs keep their bytes.
LATER_CASES = {
    T.Q3_K: (2, [108]),
    T.IQ4_XS: (2, [0]),
    T.IQ4_NL: (8, [0]),
}


def random_scales(rng: np.random.Generator, count: int) -> np.ndarray:
    # Finite fp16 of either sign over several binades, with the odd zero and subnormal.
    mags = np.exp2(rng.uniform(-16.0, 2.0, size=count))
    vals = (mags * rng.choice([-1.0, 1.0], size=count)).astype(np.float16)
    vals[rng.random(count) < 0.05] = np.float16(0.0)
    return vals


def quant_case(rng: np.random.Generator, qtype: T, n_blocks: int, offsets: list[int]) -> dict:
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for off in offsets:
        raw[:, off:off + 2] = random_scales(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    out = dequantize(raw.reshape(-1), qtype).astype(np.float32)
    assert out.size == n_blocks * block_size and np.all(np.isfinite(out))
    return {"type": qtype.name, "type_id": int(qtype), "n": int(out.size),
            "input_hex": raw.tobytes().hex(), "expected_f32_hex": out.tobytes().hex()}


def plain_cases(rng: np.random.Generator) -> list[dict]:
    f32 = np.concatenate([rng.standard_normal(56).astype(np.float32),
                          np.array([0.0, -0.0, 1e-40, -3e-39, np.inf, -np.inf, 3.4e38, 1.0],
                                   dtype=np.float32)])
    # F16: random finite bit patterns (exponent field < 31) plus inf and subnormals.
    f16_bits = rng.integers(0, 0x7c00, size=60, dtype=np.uint16)
    f16_bits |= rng.choice([0, 0x8000], size=60).astype(np.uint16)
    f16_bits = np.concatenate([f16_bits, np.array([0x7c00, 0xfc00, 0x0001, 0x83ff],
                                                  dtype=np.uint16)])
    # BF16: random non-NaN bit patterns (exponent < 255) plus inf.
    bf16_bits = rng.integers(0, 0x7f80, size=62, dtype=np.uint16)
    bf16_bits |= rng.choice([0, 0x8000], size=62).astype(np.uint16)
    bf16_bits = np.concatenate([bf16_bits, np.array([0x7f80, 0xff80], dtype=np.uint16)])
    cases = []
    for qtype, raw in ((T.F32, f32.view(np.uint8)), (T.F16, f16_bits.view(np.uint8)),
                       (T.BF16, bf16_bits.view(np.uint8))):
        out = dequantize(raw, qtype).astype(np.float32)
        cases.append({"type": qtype.name, "type_id": int(qtype), "n": int(out.size),
                      "input_hex": raw.tobytes().hex(), "expected_f32_hex": out.tobytes().hex()})
    return cases


def rounding_inputs(rng: np.random.Generator) -> np.ndarray:
    edge = np.array([
        0x00000000, 0x80000000, 0x3f800000, 0xbf800000,  # +-0, +-1
        0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff,  # bf16 ties to even (down, up), near
        0x00000001, 0x80000001, 0x00008000, 0x00018000, 0x007fffff, 0x00800000,  # subnormals
        0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f7f7fff,  # overflow to inf, largest finite
        0x7f800000, 0xff800000,                          # inf
        0x477fe000, 0x477ff000, 0x477fefff, 0x47800000,  # fp16 max, tie to inf, below, 2^16
        0x38800000, 0x387fe000, 0x33800000, 0x33000000, 0x33000001, 0x33400000,  # fp16 subnormals
        0x3f801000, 0x3f803000, 0x3f800fff,              # fp16 ties (even down / up), below
    ], dtype=np.uint32)
    rand = rng.integers(0, 2**32, size=64, dtype=np.uint64).astype(np.uint32)
    rand = rand[(rand & 0x7fffffff) <= 0x7f800000]  # NaNs are covered by the C++ tests
    return np.concatenate([edge, rand])


def main() -> int:
    rng = np.random.default_rng(SEED)
    dequant = plain_cases(rng)
    for qtype, (n_blocks, offsets) in CASES.items():
        dequant.append(quant_case(rng, qtype, n_blocks, offsets))

    rng_later = np.random.default_rng(SEED + 1)
    for qtype, (n_blocks, offsets) in LATER_CASES.items():
        dequant.append(quant_case(rng_later, qtype, n_blocks, offsets))

    f32_in = rounding_inputs(rng)
    nan_in = np.array([0x7fc00000, 0xffc00001, 0x7f800001, 0xff812345, 0x7fffffff],
                      dtype=np.uint32)
    bf16_in = np.concatenate([f32_in, nan_in])
    bf16_out = quantize(bf16_in.view(np.float32), T.BF16).view(np.uint16)
    with np.errstate(over="ignore"):
        f16_out = f32_in.view(np.float32).astype(np.float16).view(np.uint16)

    golden = {
        "generator": "scripts/golden_quant.py",
        "gguf_version": importlib.metadata.version("gguf"),
        "numpy_version": np.__version__,
        "seed": SEED,
        "dequant": dequant,
        "fp32_to_bf16": {"input_f32_hex": bf16_in.tobytes().hex(),
                         "expected_u16_hex": bf16_out.tobytes().hex()},
        "fp32_to_fp16": {"input_f32_hex": f32_in.tobytes().hex(),
                         "expected_u16_hex": f16_out.tobytes().hex()},
    }
    with open(OUT, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
