#!/usr/bin/env python3
"""Reference logits for the C++ model tests: HF transformers running the SAME GGUF as the engine.

What it does
  1. Loads SmolLM2-135M-Instruct.Q4_1.gguf with transformers (AutoModelForCausalLM and
     AutoTokenizer, gguf_file=...). transformers dequantizes every tensor to fp32 with gguf-py, so
     the reference weights are exactly the dequantized Q4_1 / Q8_0 values our engine uses.
     Two fixes over transformers 4.46.3's GGUF path, both checked below:
       - tie_word_embeddings=True: the GGUF has no output.weight (lm_head shares token_embd), and
         LlamaConfig defaults to untied, which would leave lm_head randomly initialized.
       - add_special_tokens=False: the GGUF says tokenizer.ggml.add_bos_token = false, but the
         LlamaTokenizerFast built from it prepends a BOS (and names <|im_start|> as BOS and EOS).
  2. Verifies the load: every GGUF tensor equals the model parameter bit for bit (Q/K after
     reversing llama.cpp's head permutation, convert_hf_to_gguf.py LlamaModel.permute); layer-0 Q
     recomputed from the GGUF-order weights with llama.cpp's adjacent-pair RoPE matches HF's
     rotate_half RoPE; the token ids match a tokenizer rebuilt with the smollm pre-tokenizer
     (single digits, then GPT-2 byte-level regex); the chat answer mentions Paris.
  3. Runs one fp32 forward per prompt on the CPU (attn_implementation="eager", so no SDPA kernel
     differences) and stores, at ~16 positions spread over the prompt (all when shorter), the
     top-20 (id, logit) and the logsumexp of the full row; at the last position also the full
     argmax and the top-20 log-softmax values.
  4. Greedy continuation (32 new tokens, do_sample=False, stops at <|im_end|>) for prompts 1-4,
     cross-checked against a cache-free forward over prompt + continuation; the top-1 minus top-2
     logit margin of every step is stored so a test can tell a real bug from a near tie.
  5. Debug fields for the first prompt: per-layer hidden-state norms, the first values of the
     embedding, layer-0 attn_norm output, layer-0 Q/K after RoPE (head 0, position 1) in GGUF
     row order, layer-0 attention and MLP outputs.

Prompts: tests/golden/prompts/0[1-4]_*.txt are hand-written (the prompt is the file minus its
one trailing newline; 02_chat.txt is the user message, rendered with the GGUF's chat template);
05_long.txt is written by this script from a fixed LCG seed (~2,300 tokens, passkey inside).

Re-run (CPU, 2 threads, about 4 CPU-minutes; output is deterministic, byte for byte):
    scripts/setup_reference.sh                     # creates .venv-ref from requirements
    .venv-ref/bin/python scripts/golden_logits.py  # -> tests/golden/logits_smollm2_135m_q4_1.json
Options: --model PATH (default: scripts/fetch_model.py smollm2-135m), --out PATH.
See docs/golden.md for the format and the tolerances.
"""
import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPT_DIR = os.path.join(REPO, "tests", "golden", "prompts")
DEFAULT_OUT = os.path.join(REPO, "tests", "golden", "logits_smollm2_135m_q4_1.json")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FORMAT_VERSION = 1
TOP_K = 20
N_CHECKED = 16
N_GREEDY = 32
EOS_ID = 2  # tokenizer.ggml.eos_token_id = <|im_end|>
N_THREADS = 2

# name, file, rendered with the chat template, greedy continuation
PROMPTS = [
    ("short", "01_short.txt", False, True),
    ("chat", "02_chat.txt", True, True),
    ("code", "03_code.txt", False, True),
    ("medium", "04_medium.txt", False, True),
    ("long", "05_long.txt", False, False),
]


# ----------------------------------------------------------------------------- long prompt

class Lcg:
    """32-bit LCG (Numerical Recipes constants): same text on every Python, no random module."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFF

    def pick(self, items):
        self.state = (1664525 * self.state + 1013904223) & 0xFFFFFFFF
        return items[(self.state >> 8) % len(items)]


SYLLABLES = ["bar", "cel", "dor", "fen", "gal", "hol", "ist", "kar", "lun", "mer", "nor", "pel",
             "quin", "ros", "sal", "tor", "ven", "wyn"]
RIVERS = ["Amber", "Silverrun", "Low Marsh", "Kestrel", "Greywater", "Thistle", "Old Mill"]
DIRECTIONS = ["north", "south", "east", "west", "north-east", "south-west"]
GOODS = ["wool", "smoked fish", "copper pots", "honey", "blue pottery", "apple cider", "rope",
         "linen", "cheese", "glass beads"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
TRADES = ["weavers", "fishermen", "potters", "beekeepers", "carpenters", "millers", "smiths"]
WEATHER = ["long wet winters", "dry windy summers", "morning fog in autumn", "mild springs",
           "sudden hail storms", "heavy snow in the hills"]
BUILDINGS = ["a stone bridge", "a tall clock tower", "a round granary", "an old lighthouse",
             "a covered market hall", "a ruined abbey", "a water mill"]
SENTENCES = [
    "The town of {town} lies {n} kilometres {dir} of the {river} river.",
    "Its market opens every {day} and is best known for {good}.",
    "Most families in {town} have worked as {trade} for generations.",
    "Visitors often remark on {building} that stands near the main square.",
    "The region is known for {weather}, which shapes the rhythm of the year.",
    "A road of about {n} kilometres connects {town} with its nearest neighbour.",
    "Every {day}, the {trade} of {town} gather to settle disputes and share news.",
    "Records from the town archive mention {good} being traded as early as the year {year}.",
    "Children in {town} learn to swim in the {river} river before they learn to read.",
    "The council of {town} meets in {building} once a month.",
]
N_LONG_PARAGRAPHS = 32
PASSKEY = "71432"


def build_long_prompt():
    rng = Lcg(20241121)
    paragraphs = []
    for _ in range(N_LONG_PARAGRAPHS):
        town = (rng.pick(SYLLABLES) + rng.pick(SYLLABLES) + rng.pick(SYLLABLES)).capitalize()
        sentences = []
        for k in range(4):  # the first sentence introduces the town
            template = SENTENCES[0] if k == 0 else rng.pick(SENTENCES[1:])
            sentences.append(template.format(
                town=town, n=rng.pick(range(3, 90)), dir=rng.pick(DIRECTIONS),
                river=rng.pick(RIVERS), day=rng.pick(DAYS), good=rng.pick(GOODS),
                trade=rng.pick(TRADES), weather=rng.pick(WEATHER),
                building=rng.pick(BUILDINGS), year=rng.pick(range(1150, 1850))))
        paragraphs.append(" ".join(sentences))
    # The passkey sits at ~60% depth so that pruning methods have to keep a mid-context fact.
    at = N_LONG_PARAGRAPHS * 3 // 5
    paragraphs.insert(at, f"Here is an important note. The secret passkey is {PASSKEY}. "
                          f"Remember it: {PASSKEY} is the passkey.")
    head = ("Below is a collection of notes about towns in an imaginary country. One of the notes "
            "contains a secret passkey. Read all of them carefully and remember the passkey.")
    tail = ("Question: What is the secret passkey mentioned in the notes above?\n"
            "Answer: The secret passkey is")
    return "\n\n".join([head] + paragraphs + [tail])


# ----------------------------------------------------------------------------- helpers

def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def default_model_path():
    script = os.path.join(REPO, "scripts", "fetch_model.py")
    out = subprocess.run([sys.executable, script, "smollm2-135m"], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def read_prompt(file_name):
    with open(os.path.join(PROMPT_DIR, file_name), encoding="utf-8") as f:
        text = f.read()
    return text[:-1] if text.endswith("\n") else text


def f7(x):
    """7 significant digits: float32 precision, short JSON."""
    return float(f"{float(x):.7g}")


def checked_positions(n_tokens):
    if n_tokens <= N_CHECKED:
        return list(range(n_tokens))
    return sorted({int(round(p)) for p in np.linspace(0, n_tokens - 1, N_CHECKED)})


def gguf_order(head_vec):
    """HF (rotate_half) row order -> GGUF (llama.cpp adjacent-pair) row order within one head.

    convert_hf_to_gguf.py permutes Q/K rows so GGUF row 2*i + h is HF row h * head_dim/2 + i.
    """
    half = head_vec.shape[-1] // 2
    return torch.stack([head_vec[..., :half], head_vec[..., half:]], dim=-1).flatten(-2)


# ----------------------------------------------------------------------------- checks

def check_weights(model, gguf_path, n_head, n_head_kv):
    """Every GGUF tensor must equal the loaded parameter exactly (after the Q/K un-permutation)."""
    from gguf import GGUFReader, dequantize
    params = dict(model.named_parameters())
    names = {"token_embd.weight": "model.embed_tokens.weight",
             "output_norm.weight": "model.norm.weight"}
    per_layer = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
                 "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                 "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
                 "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    reader = GGUFReader(gguf_path)
    seen = set()
    for t in reader.tensors:
        m = re.fullmatch(r"blk\.(\d+)\.(\w+)\.weight", t.name)
        hf = names[t.name] if m is None else f"model.layers.{m[1]}.{per_layer[m[2]]}.weight"
        w = torch.from_numpy(np.array(dequantize(t.data, t.tensor_type)))  # writable copy
        if m is not None and m[2] in ("attn_q", "attn_k"):
            heads = n_head if m[2] == "attn_q" else n_head_kv
            # inverse of convert_hf_to_gguf.py permute(): [heads, d/2, 2, in] -> [heads, 2, d/2, in]
            w = w.reshape(heads, w.shape[0] // heads // 2, 2, -1).transpose(1, 2).reshape(w.shape)
        if not torch.equal(w, params[hf].data):
            raise SystemExit(f"weight mismatch: GGUF {t.name} vs transformers {hf}")
        seen.add(hf)
    missing = set(params) - seen
    if missing:
        raise SystemExit(f"parameters not backed by a GGUF tensor: {sorted(missing)}")
    if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        raise SystemExit("lm_head is not tied to token_embd")
    return len(reader.tensors)


def check_tokenizer(gguf_path, texts, ids_by_text):
    """Rebuild the vocab with llama.cpp's 'smollm' pre-tokenizer (llama-vocab.cpp: \\p{N} split,
    then the GPT-2 regex) and require the same ids as transformers' GGUF tokenizer."""
    from gguf import GGUFReader
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    reader = GGUFReader(gguf_path)

    def strings(key):
        f = reader.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    tokens = strings("tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in strings("tokenizer.ggml.merges")]
    types = [int(reader.fields["tokenizer.ggml.token_type"].parts[i][0])
             for i in reader.fields["tokenizer.ggml.token_type"].data]
    tk = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges))
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False)
                           for t, ty in zip(tokens, types) if ty == 3])
    for text in texts:
        if tk.encode(text).ids != ids_by_text[text]:
            raise SystemExit(f"tokenizer mismatch on {text[:40]!r}")


def rope_adjacent_pairs(x, pos, base):
    """llama.cpp GGML_ROPE_TYPE_NORM: rotate (x[2i], x[2i+1]) by pos * base^(-2i/d), float64."""
    d = x.shape[-1]
    i = torch.arange(d // 2, dtype=torch.float64)
    ang = pos * base ** (-2.0 * i / d)
    x0, x1 = x[..., 0::2].double(), x[..., 1::2].double()
    out = torch.empty(x.shape, dtype=torch.float64)
    out[..., 0::2] = x0 * torch.cos(ang) - x1 * torch.sin(ang)
    out[..., 1::2] = x0 * torch.sin(ang) + x1 * torch.cos(ang)
    return out


# ----------------------------------------------------------------------------- reference runs

@torch.no_grad()
def logits_summary(model, ids):
    logits = model(torch.tensor([ids]), use_cache=False).logits[0].double()  # [n_tokens, n_vocab]
    lse = torch.logsumexp(logits, dim=-1)
    checked = []
    for pos in checked_positions(len(ids)):
        top = torch.topk(logits[pos], TOP_K)
        checked.append({"pos": pos, "logsumexp": f7(lse[pos]),
                        "top_ids": top.indices.tolist(),
                        "top_logits": [f7(v) for v in top.values]})
    last = len(ids) - 1
    top = torch.topk(logits[last], TOP_K)
    last_info = {"pos": last, "argmax": int(torch.argmax(logits[last])),
                 "top_ids": top.indices.tolist(),
                 "top_logprobs": [f7(v - lse[last]) for v in top.values]}
    return checked, last_info


@torch.no_grad()
def greedy(model, tok, ids, eos_id=EOS_ID, n_new=N_GREEDY):
    """Greedy continuation; tok: anything with decode(ids) (also scripts/golden_gemma3.py)."""
    prompt = torch.tensor([ids])
    out = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                         num_beams=1, max_new_tokens=n_new, eos_token_id=eos_id,
                         pad_token_id=eos_id)
    new = out[0, len(ids):].tolist()
    # Cache-free cross-check, which is what a full-prefill engine computes for each step.
    full = model(torch.tensor([ids + new[:-1]]), use_cache=False).logits[0]
    steps = full[len(ids) - 1:]  # [n_new, n_vocab]
    top2 = torch.topk(steps, 2, dim=-1)
    if top2.indices[:, 0].tolist() != new:
        raise SystemExit(f"greedy with KV cache and without disagree: {new}")
    return {"n_new": len(new), "stop": "eos" if new[-1] == eos_id else "length", "ids": new,
            "text": tok.decode(new), "margins": [f7(a - b) for a, b in top2.values.tolist()]}


@torch.no_grad()
def debug_dump(model, ids, rope_base):
    """Intermediate values for the first prompt, to bisect a mismatch in the C++ forward."""
    import transformers.models.llama.modeling_llama as llama
    captured = {}
    hooks = []

    def keep(name):
        def hook(_module, _inputs, output):
            captured[name] = (output[0] if isinstance(output, tuple) else output).detach()[0]
        return hook

    inner = model.model
    hooks.append(inner.embed_tokens.register_forward_hook(keep("embd")))
    for il, layer in enumerate(inner.layers):
        hooks.append(layer.register_forward_hook(keep(f"l_out.{il}")))
    hooks.append(inner.layers[0].input_layernorm.register_forward_hook(keep("attn_norm.0")))
    hooks.append(inner.layers[0].self_attn.register_forward_hook(keep("attn_out.0")))
    hooks.append(inner.layers[0].mlp.register_forward_hook(keep("ffn_out.0")))
    hooks.append(inner.norm.register_forward_hook(keep("result_norm")))
    original_rope = llama.apply_rotary_pos_emb

    def rope_spy(q, k, *args, **kwargs):
        q_out, k_out = original_rope(q, k, *args, **kwargs)
        if "q_rope.0" not in captured:  # first call is layer 0
            captured["q_rope.0"], captured["k_rope.0"] = q_out[0], k_out[0]  # [heads, n_tokens, d]
        return q_out, k_out

    llama.apply_rotary_pos_emb = rope_spy
    try:
        model(torch.tensor([ids]), use_cache=False)
    finally:
        llama.apply_rotary_pos_emb = original_rope
        for h in hooks:
            h.remove()

    # Cross-check the documented GGUF row order: Q from the GGUF-order weights with llama.cpp's
    # adjacent-pair RoPE must equal HF's rotate_half result permuted by gguf_order().
    attn = inner.layers[0].self_attn
    head_dim = attn.head_dim
    wq = attn.q_proj.weight[:head_dim]  # head 0, HF row order
    wq_gguf = gguf_order(wq.T).T
    q_ref = rope_adjacent_pairs(captured["attn_norm.0"][1] @ wq_gguf.T, 1, rope_base)
    q_hf = gguf_order(captured["q_rope.0"][0, 1])
    if not torch.allclose(q_hf.double(), q_ref, atol=1e-5, rtol=1e-5):
        raise SystemExit("GGUF-order RoPE cross-check failed: head permutation is not understood")

    vals = lambda t, n=8: [f7(v) for v in t[:n]]  # noqa: E731
    norms = lambda t: [f7(v) for v in t.norm(dim=-1)]  # noqa: E731
    n_layer = len(inner.layers)
    return {
        "note": "DEBUG fields: for bisecting the C++ forward, not a pass/fail target. Norms are "
                "L2 over n_embd. q/k are 'gguf_order': the row order of the GGUF attn_q/attn_k "
                "weights with llama.cpp adjacent-pair RoPE (GGUF row 2i+h = HF row h*d/2+i).",
        "prompt": PROMPTS[0][0],
        "embd_tok0_first8": vals(captured["embd"][0]),
        "attn_norm_l0_pos0_first8": vals(captured["attn_norm.0"][0]),
        "q_rope_l0_h0_pos1_gguf_order": vals(gguf_order(captured["q_rope.0"][0, 1]), head_dim),
        "k_rope_l0_h0_pos1_gguf_order": vals(gguf_order(captured["k_rope.0"][0, 1]), head_dim),
        "q_rope_l0_h0_pos1_hf_order_first8": vals(captured["q_rope.0"][0, 1]),
        "k_rope_l0_h0_pos1_hf_order_first8": vals(captured["k_rope.0"][0, 1]),
        "attn_out_l0_pos1_first8": vals(captured["attn_out.0"][1]),
        "ffn_out_l0_pos1_first8": vals(captured["ffn_out.0"][1]),
        "embd_norm": norms(captured["embd"]),
        "l_out_norm": [norms(captured[f"l_out.{il}"]) for il in range(n_layer)],
        "result_norm_norm": norms(captured["result_norm"]),
    }


# ----------------------------------------------------------------------------- output

def dump_json(obj):
    text = json.dumps(obj, indent=1)
    # One line per list of numbers keeps the file small and diffs readable.
    return re.sub(r"\[\s*([-+0-9.eE,\s]+?)\s*\]",
                  lambda m: "[" + re.sub(r"\s+", "", m[1]) + "]", text) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="path to the GGUF (default: scripts/fetch_model.py)")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()

    torch.set_num_threads(N_THREADS)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    from importlib import metadata

    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer
    transformers.logging.set_verbosity_error()

    t0 = time.time()
    path = args.model or default_model_path()
    sha = sha256_of(path)
    if sha != MODEL_SHA256:
        raise SystemExit(f"{path}: sha256 {sha}, expected {MODEL_SHA256}")
    model_dir, model_file = os.path.split(path)
    tok = AutoTokenizer.from_pretrained(model_dir, gguf_file=model_file)
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, gguf_file=model_file, torch_dtype=torch.float32,
        attn_implementation="eager", tie_word_embeddings=True)
    model.eval()
    cfg = model.config
    n_tensors = check_weights(model, path, cfg.num_attention_heads, cfg.num_key_value_heads)
    print(f"loaded and verified {n_tensors} tensors in {time.time() - t0:.1f} s", file=sys.stderr)

    long_text = build_long_prompt()
    with open(os.path.join(PROMPT_DIR, "05_long.txt"), "w", encoding="utf-8") as f:
        f.write(long_text + "\n")

    entries = []
    texts = {}
    for name, file_name, chat, _ in PROMPTS:
        raw = read_prompt(file_name)
        text = (tok.apply_chat_template([{"role": "user", "content": raw}], tokenize=False,
                                        add_generation_prompt=True) if chat else raw)
        ids = tok(text, add_special_tokens=False).input_ids
        texts[text] = ids
        entries.append({"name": name, "file": f"tests/golden/prompts/{file_name}",
                        "chat_template": chat, "text": text, "n_tokens": len(ids), "ids": ids})
    check_tokenizer(path, list(texts), texts)

    for entry, (_, _, _, do_greedy) in zip(entries, PROMPTS):
        t = time.time()
        entry["checked"], entry["last"] = logits_summary(model, entry["ids"])
        if do_greedy:
            entry["greedy"] = greedy(model, tok, entry["ids"])
        argmax = entry["last"]["argmax"]
        print(f"{entry['name']}: {entry['n_tokens']} tokens, {time.time() - t:.1f} s; "
              f"last argmax {argmax} = {tok.decode([argmax])!r}", file=sys.stderr)
        if do_greedy:
            print(f"  greedy: {entry['greedy']['text']!r}", file=sys.stderr)

    chat = next(e for e in entries if e["name"] == "chat")
    if "Paris" not in chat["greedy"]["text"]:
        raise SystemExit(f"sanity check failed, chat answer: {chat['greedy']['text']!r}")

    golden = {
        "version": FORMAT_VERSION,
        "generator": "scripts/golden_logits.py",
        "model": {"file": MODEL_FILE, "sha256": MODEL_SHA256, "n_vocab": cfg.vocab_size,
                  "n_layer": cfg.num_hidden_layers, "n_embd": cfg.hidden_size},
        "reference": {"transformers": transformers.__version__,
                      "torch": torch.__version__.split("+")[0], "gguf": metadata.version("gguf"),
                      "numpy": np.__version__, "dtype": "float32", "device": "cpu",
                      "attn_implementation": "eager", "add_bos": False, "eos_id": EOS_ID},
        "top_k": TOP_K,
        "prompts": entries,
        "debug": debug_dump(model, entries[0]["ids"], cfg.rope_theta),
    }
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(dump_json(golden))
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes) in {time.time() - t0:.1f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
