#!/usr/bin/env python3
"""lazyllm vs llama.cpp: prefill (TTFT) and decode speed on the same GGUF, threads and token ids.

Run through scripts/bench_vs_llamacpp.sh (it builds llama-cpp-python into .venv-llama first).

For each prompt length the token ids come from `lazyllm bench --export-prompts` (the built-in
passkey prompt, realistic prose ending in a question) and both engines evaluate exactly those ids:
llama.cpp through llama-cpp-python's Llama.eval, lazyllm through `lazyllm bench --prompt-ids`.
The script also re-tokenizes the prompt text with llama.cpp's tokenizer and reports how many ids
agree, as a check that the two tokenizers see the same text the same way.

Timing, both engines, after one warm-up per length and engine:
  TTFT   prompt in -> first greedy token out (llama.cpp: eval(prompt) + argmax of the logits;
         lazyllm: GenerateResult::ttft_ms, prefill + sampling)
  tg     n single-token greedy decode steps after the prompt (end of sequence ignored), tokens/s
Repetitions alternate the engines (rep 0: llama.cpp first, rep 1: lazyllm first, ...), so slow
phases of a shared machine fall on both. One lazyllm process per (repetition, length) runs its
policies (default full,lazy) interleaved, after its own warm-up.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import llama_cpp
    from llama_cpp import Llama
except ImportError:  # pragma: no cover - the shell wrapper installs it
    sys.exit("llama_cpp_compare: llama-cpp-python is missing; run scripts/bench_vs_llamacpp.sh")


def default_model():
    d = os.environ.get("LAZYLLM_MODEL_DIR")
    if not d:
        xdg = os.environ.get("XDG_CACHE_HOME")
        d = os.path.join(xdg, "lazyllm", "models") if xdg else os.path.expanduser("~/.cache/lazyllm/models")
    return os.path.join(d, "SmolLM2-135M-Instruct.Q4_1.gguf")


def int_list(s):
    try:
        v = [int(x) for x in s.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {s!r}")
    if not v or any(x <= 0 for x in v):
        raise argparse.ArgumentTypeError(f"need positive integers: {s!r}")
    return v


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mean_sd(v):
    if not v:
        return float("nan"), float("nan")
    return statistics.fmean(v), (statistics.stdev(v) if len(v) > 1 else 0.0)


class LlamaCppRunner:
    def __init__(self, model, n_ctx, threads, n_batch, n_ubatch, flash_attn):
        self.llm = Llama(model_path=model, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                         n_batch=n_batch, n_ubatch=n_ubatch, flash_attn=flash_attn, n_gpu_layers=0,
                         logits_all=False, verbose=False)
        self.n_vocab = self.llm.n_vocab()

    def _argmax_last(self):
        ptr = llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return int(np.argmax(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))))

    def run(self, ids, n_gen):
        """One prompt and n_gen decode steps from an empty cache: TTFT ms, decode s, perf data."""
        llm = self.llm
        llm.reset()
        llm._ctx.kv_cache_clear()
        llama_cpp.llama_perf_context_reset(llm.ctx)
        t0 = time.perf_counter()
        llm.eval(ids)
        tok = self._argmax_last()
        ttft_ms = (time.perf_counter() - t0) * 1e3
        t1 = time.perf_counter()
        for _ in range(n_gen):
            llm.eval([tok])
            tok = self._argmax_last()
        decode_s = time.perf_counter() - t1
        perf = llama_cpp.llama_perf_context(llm.ctx)
        return {"ttft_ms": ttft_ms, "decode_s": decode_s, "t_p_eval_ms": perf.t_p_eval_ms,
                "t_eval_ms": perf.t_eval_ms, "n_p_eval": perf.n_p_eval, "n_eval": perf.n_eval}


def tokenizers_agree(a, llm, ids, tmp):
    """Both tokenizers on the prompt's text: (same ids, lazyllm count, llama.cpp count).

    The prompt ids are built piecewise (instruction, prose, pass key, question), so they need
    not equal a whole-text tokenization; this checks the tokenizers, not the prompt."""
    text = llm.detokenize(ids)
    path = os.path.join(tmp, "prompt.txt")
    with open(path, "wb") as f:
        f.write(text)
    p = subprocess.run([a.lazyllm, "tokenize", a.model, "-f", path, "--no-bos"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"llama_cpp_compare: lazyllm tokenize failed:\n{p.stderr}")
    start, end = p.stdout.rfind("["), p.stdout.rfind("]")
    ours = [int(x) for x in p.stdout[start + 1:end].split(",") if x.strip()]
    theirs = llm.tokenize(text, add_bos=False, special=False)
    same = sum(1 for x, y in zip(ours, theirs) if x == y)
    return same, len(ours), len(theirs)


def run_lazyllm(a, n, ids_file, n_gen):
    cmd = [a.lazyllm, "bench", "-m", a.model, "-t", str(a.threads), "-p", str(n), "-n", str(n_gen),
           "-r", "1", "--policy", a.policies, "-o", "jsonl", "--prompt-ids", ids_file] + a.lazyllm_args
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"llama_cpp_compare: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lazyllm", required=True, help="the lazyllm binary")
    ap.add_argument("-m", "--model", default=default_model(), help="GGUF model (default: %(default)s)")
    ap.add_argument("-p", "--n-prompt", type=int_list, default=[512, 2048, 4096, 8192],
                    help="prompt lengths (default 512,2048,4096,8192)")
    ap.add_argument("-n", "--n-gen", type=int, default=32, help="decode steps (default 32)")
    ap.add_argument("-r", "--repetitions", type=int, default=3, help="repetitions (default 3)")
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count(), help="threads (default: all)")
    ap.add_argument("--policies", default="full,lazy", help="lazyllm policies (default full,lazy)")
    ap.add_argument("--lazyllm-args", default="", help="extra `lazyllm bench` flags, e.g. schedule flags")
    ap.add_argument("--n-batch", type=int, default=2048, help="llama.cpp logical batch (default 2048)")
    ap.add_argument("--n-ubatch", type=int, default=512, help="llama.cpp physical batch (default 512)")
    ap.add_argument("--flash-attn", action="store_true", help="llama.cpp flash attention (default off)")
    ap.add_argument("--raw", help="also write every sample as jsonl to this file")
    a = ap.parse_args()
    a.lazyllm_args = a.lazyllm_args.split()
    if a.repetitions < 1 or a.n_gen < 0:
        sys.exit("llama_cpp_compare: -r must be >= 1 and -n >= 0")
    if not os.path.isfile(a.model):
        sys.exit(f"llama_cpp_compare: model '{a.model}' not found")

    tmp = tempfile.mkdtemp(prefix="lazyllm_vs_llama_")
    lengths = ",".join(str(n) for n in a.n_prompt)
    p = subprocess.run([a.lazyllm, "bench", "-m", a.model, "-t", str(a.threads), "-p", lengths,
                        "--export-prompts", tmp], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"llama_cpp_compare: exporting prompts failed:\n{p.stderr}")
    prompts = {}
    for n in a.n_prompt:
        with open(os.path.join(tmp, f"prompt-{n}.ids")) as f:
            prompts[n] = [int(x) for x in f.read().split()]

    max_len = max(a.n_prompt)
    n_ctx = (max_len + a.n_gen + 1 + 255) // 256 * 256
    print(f"llama_cpp_compare: loading llama.cpp (n_ctx {n_ctx})", file=sys.stderr)
    runner = LlamaCppRunner(a.model, n_ctx, a.threads, a.n_batch, a.n_ubatch, a.flash_attn)
    n_ctx_train = runner.llm._model.n_ctx_train()
    # Decode only where lazyllm has room for it too (it keeps to the trained context).
    steps = {n: (a.n_gen if n + a.n_gen + 1 <= n_ctx_train else 0) for n in a.n_prompt}

    agree = {n: tokenizers_agree(a, runner.llm, ids, tmp) for n, ids in prompts.items()}

    for n in a.n_prompt:  # llama.cpp warm-up (lazyllm warms up inside each of its runs)
        print(f"llama_cpp_compare: llama.cpp warm-up p={n}", file=sys.stderr)
        runner.run(prompts[n], min(steps[n], 2))

    llama = {n: [] for n in a.n_prompt}
    ours = {n: [] for n in a.n_prompt}  # lists of jsonl rows
    raw = []
    for rep in range(a.repetitions):
        for n in a.n_prompt:
            ids_file = os.path.join(tmp, f"prompt-{n}.ids")
            order = ["llama.cpp", "lazyllm"] if rep % 2 == 0 else ["lazyllm", "llama.cpp"]
            for engine in order:
                print(f"[rep {rep + 1}/{a.repetitions}] {engine} p={n}", file=sys.stderr, flush=True)
                if engine == "llama.cpp":
                    r = runner.run(prompts[n], steps[n])
                    llama[n].append(r)
                    raw.append({"engine": "llama.cpp", "rep": rep, "n_prompt": n, "n_gen": steps[n], **r})
                else:
                    rows = run_lazyllm(a, n, ids_file, steps[n])
                    ours[n].append(rows)
                    raw.extend({"engine": "lazyllm", "rep": rep, **row} for row in rows)

    if a.raw:
        with open(a.raw, "w") as f:
            for r in raw:
                f.write(json.dumps(r) + "\n")

    def our_stat(n, policy, key, prompt_row=True):
        vals = []
        for rows in ours[n]:
            for row in rows:
                if row["policy"] == policy and (row["n_gen"] == 0) == prompt_row:
                    vals.append(row[key])
        return mean_sd(vals)

    policies = a.policies.split(",")
    print(f"# lazyllm vs llama.cpp ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC})\n")
    print(f"- model: `{os.path.basename(a.model)}`; CPU: {cpu_model()}, {os.cpu_count()} cores; "
          f"threads: {a.threads}; repetitions: {a.repetitions}; decode steps: {a.n_gen}")
    print(f"- llama.cpp: llama-cpp-python {llama_cpp.__version__}, n_batch {a.n_batch}, "
          f"n_ubatch {a.n_ubatch}, flash_attn {'on' if a.flash_attn else 'off'}")
    print(f"- llama.cpp system info: `{llama_cpp.llama_print_system_info().decode().strip()}`")
    print("- both engines evaluate the same token ids; tokenizers on the prompt text: "
          + ", ".join(f"{s} of {t} / {u} ids agree (p={n})" for n, (s, t, u) in agree.items()))
    print()
    cols = ["prompt", "llama.cpp TTFT ms"]
    for pol in policies:
        cols += [f"{pol} TTFT ms", f"{pol} speedup"]
    cols += ["llama.cpp tg t/s"] + [f"{pol} tg t/s" for pol in policies] + [f"{policies[0]} tg ratio"]
    print("| " + " | ".join(cols) + " |")
    print("| " + " | ".join(["---:"] * len(cols)) + " |")
    for n in a.n_prompt:
        l_ttft = mean_sd([r["ttft_ms"] for r in llama[n]])
        cells = [f"pp{n}", f"{l_ttft[0]:.1f} ± {l_ttft[1]:.1f}"]
        for pol in policies:
            o = our_stat(n, pol, "ttft_ms")
            cells += [f"{o[0]:.1f} ± {o[1]:.1f}", f"{l_ttft[0] / o[0]:.2f}x"]
        if steps[n] > 0:
            l_tg = mean_sd([steps[n] / r["decode_s"] for r in llama[n]])
            cells.append(f"{l_tg[0]:.1f} ± {l_tg[1]:.1f}")
            tg = {pol: our_stat(n, pol, "avg_ts", prompt_row=False) for pol in policies}
            cells += [f"{tg[pol][0]:.1f} ± {tg[pol][1]:.1f}" for pol in policies]
            cells.append(f"{tg[policies[0]][0] / l_tg[0]:.2f}x")
        else:
            cells += ["-"] * (len(policies) + 2)
        print("| " + " | ".join(cells) + " |")
    print()
    print("speedup = llama.cpp TTFT / lazyllm TTFT (above 1: lazyllm first token sooner); tg ratio = "
          "lazyllm decode t/s / llama.cpp decode t/s. Mean ± stddev over the repetitions.")
    if any(s == 0 for s in steps.values()) and a.n_gen > 0:
        print(f"Prompts with no room for {a.n_gen} decode steps in the model's {n_ctx_train}-token "
              "context: prefill only.")


if __name__ == "__main__":
    main()
