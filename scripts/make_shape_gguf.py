#!/usr/bin/env python3
"""Write a random-weight GGUF with the exact tensor shapes, types and metadata of a named model.

Speed and memory of prefill and decode do not depend on the weights' values, so a file with a real
model's shapes, quantization types and hyper-parameters benchmarks like the real one without
downloading it (issue 23). `lazyllm bench --prompt-ids FILE` needs no real tokenizer; the files
carry one anyway (llama.cpp's vocabulary GGUFs, padded to the model's n_vocab as
convert_hf_to_gguf.py pads), so the built-in passkey prompt and `lazyllm run` work too. The output
is noise, of course.

What is exact, per SHAPES and VARIANTS below: architecture (llama; qwen2 with q/k/v biases), every
tensor's name, shape and GGML type, tied embeddings (no output.weight) where the real model ties
them, Llama 3.1/3.2's rope_freqs tensor (the llama3 factors, computed as llama.cpp's
conversion/llama.py generate_extra_tensors does), and the hyper-parameter keys its converter
writes (context length, n_embd, n_ff, head counts, rope theta, RMS eps, vocab size). Types follow
llama.cpp's llama_tensor_get_type_impl (src/llama-quant.cpp, b11434) for the file type, without
an imatrix:
  Q4_0    every 2-D weight Q4_0; output.weight Q6_K (token_embd stays Q4_0)
  Q8_0    every 2-D weight Q8_0, output and token_embd included
  Q4_K_M  Q4_K; output.weight Q6_K; token_embd Q6_K when tied (it is the output), else Q4_K;
          attn_v and ffn_down Q6_K in use_more_bits layers (the first and last n_layer/8, and
          every third in between): half the layers
  Q5_K_M  as Q4_K_M with Q5_K in the place of Q4_K
  Q3_K_M  Q3_K; attn_v Q5_K in the first two layers, else Q4_K; ffn_down Q5_K in the first
          n_layer/16 layers, else Q4_K; attn_output Q4_K; output.weight (and a tied
          token_embd) Q6_K
  IQ4_XS  IQ4_XS; attn_v Q5_K where n_head / n_head_kv >= 4; ffn_down Q5_K in the first
          n_layer/8 layers (the rule without an imatrix); output.weight (and a tied
          token_embd) Q6_K
  1-D tensors (norms, biases, rope_freqs) F32. A row length that the block size does not divide
  falls back as tensor_type_fallback does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0); none of
  the shapes here
  needs it. llama.cpp has no Qwen-specific rule for these file types (its n_gqa() rules apply to
  Q2_K/Q3_K/IQ types only).
Not exact: the vocabulary is llama.cpp's test file of the family (ggml-vocab-llama-spm for Llama
2, -llama-bpe (Llama 3's) for Llama 3.1/3.2, -qwen2 for Qwen2.5): same size and merges, but
Llama 3.1's renamed reserved tokens, Qwen2.5's added special tokens, the instruct models' eos ids
and Llama's chat templates (the files have none; lazyllm then picks one by the vocabulary) are
not there; general.* descriptive keys are not written. The configs are the -Instruct releases'
(those of the published GGUFs the sizes compare with).

Block contents: random quant bytes; every fp16 scale (d, dmin) a small normal fp16 value and the
Q6_K scales in [-32, 32], chosen so that the weights' RMS is about 0.03 as in trained models and
the forward pass stays finite (no NaN/Inf, no fp16 overflow in a K/V cache); norm weights about
1.0, biases about 0.02. numpy's generator, seeded per tensor name: the same name and version of
this script give the same bytes (checked with gguf 0.10.0 + numpy 1.26 and gguf 0.19 + numpy 2.4).

Files go to <model cache>/shapes/NAME.gguf, the model cache being $LAZYLLM_MODEL_DIR, else
$XDG_CACHE_HOME/lazyllm/models, else ~/.cache/lazyllm/models (as scripts/fetch_model.py), or to
--out-dir. They are written tensor by tensor (peak memory about the largest tensor plus 0.1 GB:
0.19 GB for llama-2-7b-q4_0, ~0.6 GB for the 8B and Qwen 7B shapes, whose Q6_K output.weight is
0.43-0.45 GB; 15 s for 3.8 GB) to a temporary name and renamed when whole, so running it again is
a no-op once the file exists (--force rewrites it). Never commit them. The 7B/8B shapes take
4-5 GB of disk each.

Needs numpy and the gguf package (pip install gguf numpy; scripts/requirements-reference.txt
pins gguf==0.10.0, which also imports sentencepiece) and llama.cpp's vocabulary GGUFs
(python3 scripts/fetch_vocab.py).

usage: make_shape_gguf.py NAME [--out-dir DIR] [--print-path] [--force]
       make_shape_gguf.py --list
  m=$(python3 scripts/make_shape_gguf.py llama-3.2-1b-q4_k_m --print-path)
  build/tools/lazyllm bench -m "$m" -p 512 -n 16
"""
import argparse
import math
import os
import struct
import sys
import zlib
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fetch_model import cache_dir as model_cache_dir  # noqa: E402
from fetch_vocab import vocab_dir  # noqa: E402

SEED = 23  # issue 23; with crc32(tensor name) seeds each tensor's generator

# The real models' hyper-parameters (HF config.json of the -Instruct releases). head_dim_keys:
# the config has "head_dim", so the converter also writes attention.key_length/value_length.
# llama3_rope: rope_scaling (factor, low_freq_factor, high_freq_factor,
# original_max_position_embeddings) of rope_type "llama3", written as the rope_freqs tensor.
SHAPES = {
    "llama-2-7b":   dict(arch="llama", vocab="llama-spm", n_vocab=32000, n_embd=4096, n_layer=32,
                         n_head=32, n_head_kv=32, n_ff=11008, n_ctx=4096, rope_theta=10000.0,
                         rms_eps=1e-5, tied=False, qkv_bias=False),
    "llama-3.1-8b": dict(arch="llama", vocab="llama-bpe", n_vocab=128256, n_embd=4096, n_layer=32,
                         n_head=32, n_head_kv=8, n_ff=14336, n_ctx=131072, rope_theta=500000.0,
                         rms_eps=1e-5, tied=False, qkv_bias=False,
                         llama3_rope=(8.0, 1.0, 4.0, 8192)),
    "llama-3.2-1b": dict(arch="llama", vocab="llama-bpe", n_vocab=128256, n_embd=2048, n_layer=16,
                         n_head=32, n_head_kv=8, n_ff=8192, n_ctx=131072, rope_theta=500000.0,
                         rms_eps=1e-5, tied=True, qkv_bias=False, head_dim_keys=True,
                         llama3_rope=(32.0, 1.0, 4.0, 8192)),
    "qwen2.5-0.5b": dict(arch="qwen2", vocab="qwen2", n_vocab=151936, n_embd=896, n_layer=24,
                         n_head=14, n_head_kv=2, n_ff=4864, n_ctx=32768, rope_theta=1000000.0,
                         rms_eps=1e-6, tied=True, qkv_bias=True),
    "qwen2.5-1.5b": dict(arch="qwen2", vocab="qwen2", n_vocab=151936, n_embd=1536, n_layer=28,
                         n_head=12, n_head_kv=2, n_ff=8960, n_ctx=32768, rope_theta=1000000.0,
                         rms_eps=1e-6, tied=True, qkv_bias=True),
    "qwen2.5-7b":   dict(arch="qwen2", vocab="qwen2", n_vocab=152064, n_embd=3584, n_layer=28,
                         n_head=28, n_head_kv=4, n_ff=18944, n_ctx=32768, rope_theta=1000000.0,
                         rms_eps=1e-6, tied=False, qkv_bias=True),
}

# NAME -> (shape, file type, the published GGUF it mirrors, that file's size in GB of 1e9 bytes).
VARIANTS = {
    "llama-3.2-1b-q4_k_m": ("llama-3.2-1b", "Q4_K_M", "bartowski Llama-3.2-1B-Instruct-Q4_K_M",
                            0.81),
    "llama-3.2-1b-q8_0": ("llama-3.2-1b", "Q8_0", "bartowski Llama-3.2-1B-Instruct-Q8_0", 1.32),
    "qwen2.5-0.5b-q8_0": ("qwen2.5-0.5b", "Q8_0", "bartowski Qwen2.5-0.5B-Instruct-Q8_0", 0.53),
    "qwen2.5-1.5b-q4_k_m": ("qwen2.5-1.5b", "Q4_K_M", "bartowski Qwen2.5-1.5B-Instruct-Q4_K_M",
                            0.99),
    "llama-2-7b-q4_0": ("llama-2-7b", "Q4_0", "TheBloke llama-2-7b.Q4_0", 3.83),
    "llama-3.1-8b-q4_k_m": ("llama-3.1-8b", "Q4_K_M", "bartowski Meta-Llama-3.1-8B-Instruct-Q4_K_M",
                            4.92),
    "qwen2.5-7b-q4_k_m": ("qwen2.5-7b", "Q4_K_M", "bartowski Qwen2.5-7B-Instruct-Q4_K_M", 4.68),
    "llama-3.2-1b-q5_k_m": ("llama-3.2-1b", "Q5_K_M", "bartowski Llama-3.2-1B-Instruct-Q5_K_M",
                            0.91),
    "llama-3.2-1b-q3_k_m": ("llama-3.2-1b", "Q3_K_M", "bartowski Llama-3.2-1B-Instruct-Q3_K_M",
                            0.69),
    "llama-2-7b-q3_k_m": ("llama-2-7b", "Q3_K_M", "TheBloke llama-2-7b.Q3_K_M", 3.30),
    # No published file of this mix (published IQ4_XS files are made with an imatrix, which
    # changes ffn_down's rule): the size is what llama-quantize's rules above give.
    "llama-3.2-1b-iq4_xs": ("llama-3.2-1b", "IQ4_XS",
                            "llama-quantize IQ4_XS of Llama-3.2-1B-Instruct, no imatrix", 0.75),
}

# File type: its default tensor type and general.file_type (llama.cpp's LLAMA_FTYPE_MOSTLY_*).
FILE_TYPES = {"Q4_0": ("Q4_0", 2), "Q8_0": ("Q8_0", 7), "Q4_K_M": ("Q4_K", 15),
              "Q5_K_M": ("Q5_K", 17), "Q3_K_M": ("Q3_K", 12), "IQ4_XS": ("IQ4_XS", 30)}

# GGML block formats (ggml-common.h): elements and bytes per block; the fp16 scale d as (byte
# offset, low, high) of a uniform draw; Q4_K's dmin as (offset, ratio to d); Q6_K's int8 scales
# as (offset, count), drawn in [-32, 32]. The ranges give a weight RMS of 0.02-0.03 with uniform
# quants (Q4_0 and Q5_0: d * (q - 8 or 16); Q5_1: d * q + m, m = -15.5 d; Q8_0: d * q; Q4_K and
# Q5_K: d * sc * q - dmin * m with 6-bit sc and m, dmin = 7.5 d or 15.5 d centring it; Q6_K:
# d * sc * (q - 32); Q3_K: d * (sc - 32) * q with random 6-bit sc and q in -4..3; IQ4_XS:
# d * (ls - 32) * grid[q], the grid values in -127..113), every d a normal fp16.
BLOCKS = {
    "F32": dict(n=1, nbytes=4),
    "F16": dict(n=1, nbytes=2),
    "Q4_0": dict(n=32, nbytes=18, d=(0, 4e-3, 8e-3)),  # d, qs[16]
    "Q5_0": dict(n=32, nbytes=22, d=(0, 2e-3, 4e-3)),  # d, qh[4], qs[16]
    "Q5_1": dict(n=32, nbytes=24, d=(0, 2e-3, 4e-3), dmin=(2, -15.5)),  # d, m, qh[4], qs[16]
    "Q8_0": dict(n=32, nbytes=34, d=(0, 2.5e-4, 5e-4)),  # d, qs[32]
    "Q4_K": dict(n=256, nbytes=144, d=(0, 6.2e-5, 1.2e-4), dmin=(2, 7.5)),  # d, dmin, sc[12], qs
    "Q5_K": dict(n=256, nbytes=176, d=(0, 3.1e-5, 6e-5), dmin=(2, 15.5)),  # ... qh[32], qs[128]
    "Q6_K": dict(n=256, nbytes=210, d=(208, 6.2e-5, 1.2e-4), scales=(192, 16)),  # ql, qh, sc, d
    "Q3_K": dict(n=256, nbytes=110, d=(108, 5e-4, 1e-3)),  # hmask[32], qs[64], scales[12], d
    "IQ4_XS": dict(n=256, nbytes=136, d=(0, 1.5e-5, 3e-5)),  # d, scales_h, scales_l[4], qs[128]
}
# llama-quant.cpp tensor_type_fallback, for a row length the block size does not divide.
FALLBACK = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0", "Q4_0": "F16", "Q5_0": "F16",
            "Q5_1": "F16", "Q8_0": "F16"}


def die(msg):
    print(f"make_shape_gguf: error: {msg}", file=sys.stderr)
    sys.exit(1)


def import_gguf():
    try:
        import gguf  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        die(f"{e}: this script needs numpy and the gguf package: pip install gguf numpy "
            "(scripts/requirements-reference.txt pins gguf==0.10.0, which also needs "
            "sentencepiece)")
    return gguf


def use_more_bits(il, n_layer):
    # llama-quant.cpp: the first and last eighth of the layers, and every third in between.
    return il < n_layer // 8 or il >= 7 * n_layer // 8 or (il - n_layer // 8) % 3 == 2


def tensor_type(ftype, role, il, n_layer, n_cols, tied, n_gqa):
    """GGML type of a 2-D weight as llama_tensor_get_type_impl picks it (no imatrix, no
    overrides)."""
    default = FILE_TYPES[ftype][0]
    if role == "output" or (role == "token_embd" and tied):
        if n_cols % BLOCKS[default]["n"] != 0:
            t = "Q8_0"
        else:
            t = default if default == "Q8_0" else "Q6_K"
    elif role in ("attn_v", "ffn_down") and ftype in ("Q4_K_M", "Q5_K_M") and \
            use_more_bits(il, n_layer):
        t = "Q6_K"
    elif ftype == "Q3_K_M" and role == "attn_v":
        t = "Q5_K" if il < 2 else "Q4_K"
    elif ftype == "Q3_K_M" and role == "ffn_down":
        t = "Q5_K" if il < n_layer // 16 else "Q4_K"
    elif ftype == "Q3_K_M" and role == "attn_output":
        t = "Q4_K"
    elif ftype == "IQ4_XS" and role == "attn_v" and n_gqa >= 4:
        t = "Q5_K"
    elif ftype == "IQ4_XS" and role == "ffn_down" and il < n_layer // 8:
        t = "Q5_K"
    else:
        t = default
    if n_cols % BLOCKS[t]["n"] != 0:
        t = FALLBACK[t]
        if n_cols % BLOCKS[t]["n"] != 0:
            t = "F16"
    return t


def llama3_rope_factors(s):
    """rope_freqs as llama.cpp's conversion/llama.py computes it for rope_type "llama3"."""
    factor, low_freq_factor, high_freq_factor, old_context_len = s["llama3_rope"]
    dim = s["n_embd"] // s["n_head"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    factors = []
    for i in range(0, dim, 2):
        freq = 1.0 / (s["rope_theta"] ** (i / dim))
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            factors.append(1.0)
        elif wavelen > low_freq_wavelen:
            factors.append(factor)
        else:
            smooth = ((old_context_len / wavelen - low_freq_factor)
                      / (high_freq_factor - low_freq_factor))
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return factors


def plan_tensors(s, ftype):
    """[(name, shape as (rows, cols) or (n,), GGML type, kind)] in llama.cpp's naming."""
    n_embd, n_layer = s["n_embd"], s["n_layer"]
    head_dim = n_embd // s["n_head"]
    n_embd_kv = head_dim * s["n_head_kv"]

    def weight(name, role, il, rows, cols):
        qtype = tensor_type(ftype, role, il, n_layer, cols, s["tied"],
                            s["n_head"] // s["n_head_kv"])
        return (name, (rows, cols), qtype, "weight")

    out = []
    if "llama3_rope" in s:
        out.append(("rope_freqs.weight", (head_dim // 2,), "F32", "rope_freqs"))
    out.append(weight("token_embd.weight", "token_embd", -1, s["n_vocab"], n_embd))
    for il in range(n_layer):
        b = f"blk.{il}."
        out.append((b + "attn_norm.weight", (n_embd,), "F32", "norm"))
        for proj, rows in (("q", n_embd), ("k", n_embd_kv), ("v", n_embd_kv)):
            out.append(weight(f"{b}attn_{proj}.weight", f"attn_{proj}", il, rows, n_embd))
            if s["qkv_bias"]:
                out.append((f"{b}attn_{proj}.bias", (rows,), "F32", "bias"))
        out.append(weight(b + "attn_output.weight", "attn_output", il, n_embd, n_embd))
        out.append((b + "ffn_norm.weight", (n_embd,), "F32", "norm"))
        out.append(weight(b + "ffn_gate.weight", "ffn_gate", il, s["n_ff"], n_embd))
        out.append(weight(b + "ffn_up.weight", "ffn_up", il, s["n_ff"], n_embd))
        out.append(weight(b + "ffn_down.weight", "ffn_down", il, n_embd, s["n_ff"]))
    out.append(("output_norm.weight", (n_embd,), "F32", "norm"))
    if not s["tied"]:
        out.append(weight("output.weight", "output", -1, s["n_vocab"], n_embd))
    return out


def row_bytes(qtype, n_cols):
    blk = BLOCKS[qtype]
    return n_cols // blk["n"] * blk["nbytes"]


def tensor_nbytes(shape, qtype):
    rows = shape[0] if len(shape) == 2 else 1
    return rows * row_bytes(qtype, shape[-1])


def make_tensor(np, name, shape, qtype, kind, s):
    """The tensor's data: float32 for F32, else uint8 blocks [rows, row bytes]."""
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
    if kind == "rope_freqs":
        return np.array(llama3_rope_factors(s), dtype=np.float32)
    if kind == "norm":
        return rng.normal(1.0, 0.02, shape).astype(np.float32)
    if kind == "bias":
        return rng.normal(0.0, 0.02, shape).astype(np.float32)
    if qtype == "F16":
        return rng.normal(0.0, 0.02, shape).astype(np.float16)
    blk = BLOCKS[qtype]
    rows, cols = shape
    n_blocks = rows * cols // blk["n"]
    size = n_blocks * blk["nbytes"]
    # Uniform random bytes, 8 at a time (several times faster than uint8 draws).
    data = rng.integers(0, 2**64, size=(size + 7) // 8, dtype=np.uint64).view(np.uint8)[:size]
    blocks = data.reshape(n_blocks, blk["nbytes"])
    off, lo, hi = blk["d"]
    d = rng.uniform(lo, hi, n_blocks).astype(np.float16)
    blocks[:, off:off + 2].view(np.float16)[:, 0] = d
    if "dmin" in blk:
        off, ratio = blk["dmin"]
        dmin = (d.astype(np.float32) * ratio).astype(np.float16)
        blocks[:, off:off + 2].view(np.float16)[:, 0] = dmin
    if "scales" in blk:
        off, n = blk["scales"]
        blocks[:, off:off + n] = rng.integers(-32, 33, (n_blocks, n), dtype=np.int8).view(np.uint8)
    return blocks.reshape(rows, row_bytes(qtype, cols))


# GGUF value types (GGUF spec) as struct formats; 8 = STRING and 9 = ARRAY are read apart.
GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
                12: "d"}
GGUF_STRING, GGUF_ARRAY, GGUF_INT32, GGUF_FLOAT32 = 8, 9, 5, 6


def read_gguf_kv(path):
    """{key: (value, GGUF value type)} of a tensor-less GGUF (llama.cpp's vocabulary files, 2-11
    MB). Read here rather than by gguf.GGUFReader, which takes ~12 s and ~0.5 GB of memory views
    on a vocabulary of 128k tokens and 280k merges. Strings stay bytes."""
    with open(path, "rb") as f:
        buf = f.read()
    magic, version, _, n_kv = struct.unpack_from("<4sIQQ", buf, 0)
    if magic != b"GGUF" or version < 2:
        die(f"{path} is not a GGUF v2/v3 file")
    pos = 24

    def string(pos):
        (n,) = struct.unpack_from("<Q", buf, pos)
        return buf[pos + 8:pos + 8 + n], pos + 8 + n

    def scalar(vtype, pos):
        fmt = "<" + GGUF_SCALARS[vtype]
        return struct.unpack_from(fmt, buf, pos)[0], pos + struct.calcsize(fmt)

    kv = {}
    for _ in range(n_kv):
        key, pos = string(pos)
        (vtype,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        if vtype == GGUF_STRING:
            val, pos = string(pos)
        elif vtype == GGUF_ARRAY:
            etype, n = struct.unpack_from("<IQ", buf, pos)
            pos += 12
            if etype == GGUF_STRING:
                val = []
                for _ in range(n):
                    s, pos = string(pos)
                    val.append(s)
            elif etype in (GGUF_INT32, GGUF_FLOAT32):  # GGUFWriter infers these from int / float
                fmt = f"<{n}{GGUF_SCALARS[etype]}"
                val = list(struct.unpack_from(fmt, buf, pos))
                pos += struct.calcsize(fmt)
            else:
                die(f"{path}: '{key.decode()}' is an array of GGUF type {etype}, not copied here")
        elif vtype in GGUF_SCALARS:
            val, pos = scalar(vtype, pos)
        else:
            die(f"{path}: '{key.decode()}' has unknown GGUF type {vtype}")
        kv[key.decode()] = (val, vtype)
    return kv


def read_vocab(path, n_vocab):
    """The tokenizer.* keys of a llama.cpp vocabulary GGUF, the token arrays padded to n_vocab with
    [PAD{i}] tokens of type UNUSED (5) and score -10000, as convert_hf_to_gguf.py pads."""
    kv = {k: v for k, v in read_gguf_kv(path).items() if k.startswith("tokenizer.")}
    tokens = kv["tokenizer.ggml.tokens"][0]
    if len(tokens) > n_vocab:
        die(f"{path} has {len(tokens)} tokens, more than the model's n_vocab {n_vocab}")
    pad = range(len(tokens), n_vocab)
    tokens += [f"[PAD{i}]".encode() for i in pad]
    kv["tokenizer.ggml.token_type"][0].extend([5] * len(pad))
    if "tokenizer.ggml.scores" in kv:
        kv["tokenizer.ggml.scores"][0].extend([-10000.0] * len(pad))
    return kv


def write_gguf(gguf, np, name, path):
    shape_name, ftype, reference, _ = VARIANTS[name]
    s = SHAPES[shape_name]
    vocab_path = os.path.join(vocab_dir(), f"ggml-vocab-{s['vocab']}.gguf")
    if not os.path.exists(vocab_path):
        die(f"{vocab_path} is missing: run python3 scripts/fetch_vocab.py "
            "(llama.cpp's vocabulary GGUFs, 75 MB)")
    tensors = plan_tensors(s, ftype)

    arch = s["arch"]
    w = gguf.GGUFWriter(None, arch)
    w.add_name(f"shape:{name} (random weights)")
    w.add_description(f"random weights with the tensor shapes and types of {reference}; "
                      "written by lazyllm.cpp scripts/make_shape_gguf.py")
    w.add_file_type(FILE_TYPES[ftype][1])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_block_count(s["n_layer"])
    w.add_context_length(s["n_ctx"])
    w.add_embedding_length(s["n_embd"])
    w.add_feed_forward_length(s["n_ff"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_rope_freq_base(s["rope_theta"])
    w.add_layer_norm_rms_eps(s["rms_eps"])
    head_dim = s["n_embd"] // s["n_head"]
    if s.get("head_dim_keys"):
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if arch == "llama":
        w.add_vocab_size(s["n_vocab"])
        w.add_rope_dimension_count(head_dim)
    for key, (val, vtype) in read_vocab(vocab_path, s["n_vocab"]).items():
        w.add_key_value(key, val, gguf.GGUFValueType(vtype))

    for tname, shape, qtype, _ in tensors:
        nbytes = tensor_nbytes(shape, qtype)
        if qtype in ("F32", "F16"):
            dtype = np.float32 if qtype == "F32" else np.float16
            w.add_tensor_info(tname, shape, np.dtype(dtype), nbytes)
        else:
            byte_shape = (shape[0], row_bytes(qtype, shape[1]))
            w.add_tensor_info(tname, byte_shape, np.dtype(np.uint8), nbytes,
                              raw_dtype=gguf.GGMLQuantizationType[qtype])

    w.write_header_to_file(Path(path))
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    total = sum(tensor_nbytes(shape, qtype) for _, shape, qtype, _ in tensors)
    done, next_report = 0, 0.0
    for tname, shape, qtype, kind in tensors:
        data = make_tensor(np, tname, shape, qtype, kind, s)
        w.write_tensor_data(data)
        done += data.nbytes
        del data
        if done >= next_report * total:
            print(f"make_shape_gguf: {name}: {done / 1e9:.2f} / {total / 1e9:.2f} GB",
                  file=sys.stderr)
            next_report += 0.25
    w.close()


def out_path(name, out_dir):
    return os.path.join(out_dir or os.path.join(model_cache_dir(), "shapes"), f"{name}.gguf")


def type_mix(name):
    """{type: (tensors, bytes)} of a variant's plan."""
    shape_name, ftype, _, _ = VARIANTS[name]
    mix = {}
    for _, shape, qtype, _ in plan_tensors(SHAPES[shape_name], ftype):
        n, b = mix.get(qtype, (0, 0))
        mix[qtype] = (n + 1, b + tensor_nbytes(shape, qtype))
    return mix


def describe(name):
    mix = type_mix(name)
    total = sum(b for _, b in mix.values())
    types = ", ".join(f"{t} x{n} ({b / 1e9:.2f} GB)" for t, (n, b) in
                      sorted(mix.items(), key=lambda kv: -kv[1][1]))
    _, _, reference, size_gb = VARIANTS[name]
    return (f"{name}: tensor data {total / 1e9:.2f} GB: {types}; mirrors {reference} "
            f"({size_gb:.2f} GB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", nargs="?", choices=sorted(VARIANTS), metavar="NAME",
                    help="one of: " + ", ".join(VARIANTS))
    ap.add_argument("--out-dir", help="folder for the file (default: <model cache>/shapes)")
    ap.add_argument("--print-path", action="store_true",
                    help="print only the file's path on stdout (made first if missing)")
    ap.add_argument("--force", action="store_true", help="write the file even if it exists")
    ap.add_argument("--list", action="store_true",
                    help="list the names, their type mixes and files")
    args = ap.parse_args()
    if args.list:
        for name in VARIANTS:
            path = out_path(name, args.out_dir)
            state = "made" if os.path.exists(path) else "not made"
            print(f"{describe(name)}\n    {path} ({state})")
        return
    if args.name is None:
        ap.error("NAME is required (or --list)")

    path = out_path(args.name, args.out_dir)
    if args.force or not os.path.exists(path):
        gguf = import_gguf()
        import numpy as np
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}"
        print(f"make_shape_gguf: writing {path}", file=sys.stderr)
        try:
            write_gguf(gguf, np, args.name, tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    if args.print_path:
        print(path)
    else:
        print(f"{describe(args.name)}\n{path} ({os.path.getsize(path) / 1e9:.2f} GB)")


if __name__ == "__main__":
    main()
