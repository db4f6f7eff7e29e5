#!/usr/bin/env python3
"""lazyllm vs llama.cpp: prefill and decode speed on the same GGUF and threads, llama-bench's way.

Run through scripts/bench_vs_llamacpp.sh (it builds llama.cpp's llama-bench first,
scripts/build_llamacpp.sh).

Both engines are measured by their own benchmark tool, in llama-bench's terms:
  pp<N>        prefill of N prompt tokens, ms (llama-bench `-p N -n 0`; lazyllm's pp<N> row,
               whose time is the prefill alone, as llama-bench's; its TTFT adds the sampling)
  tg<n>@d<N>   n single-token decode steps after N tokens of context, tokens/s (llama-bench
               `-p 0 -n n -d N`; lazyllm's `tg<n> @ d<N>` row, greedy after the prompt)
llama-bench evaluates random token ids (its dense compute does not depend on them); lazyllm
evaluates the built-in passkey prompt (`lazyllm bench --export-prompts`, realistic prose ending
in a question), since pruning follows attention and needs a real prompt. Each tool warms up
before its timed run: llama-bench runs the whole prompt once, lazyllm each policy once.

Repetitions alternate the engines (rep 0: llama.cpp first, rep 1: lazyllm first, ...), so slow
phases of a shared machine fall on both. One process per (repetition, length, engine): lazyllm
runs its policies (default full,lazy) interleaved; llama.cpp runs llama-bench once for pp and
once for tg at depth.

The tokenizer check: with llama-tokenize next to llama-bench, both tokenizers encode one text
file (default: the repository's README.md; special-token texts stay text) and the script
reports whether the ids are identical, or where they first differ.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import fetch_model  # noqa: E402  (the model cache folder, one definition)

FA = {-1: "auto (on for the CPU)", 0: "off", 1: "on"}  # llama-bench's flash_attn field
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_model():
    """lazyllm's default model path (scripts/fetch_model.py's cache folder)."""
    return os.path.join(fetch_model.cache_dir(), "SmolLM2-135M-Instruct.Q4_1.gguf")


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


def run(cmd, what):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"llama_cpp_compare: {what} failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-4000:]}")
    return p.stdout


def run_llama_bench(a, n_prompt, n_gen, n_depth):
    """One llama-bench process, one test, -r 1: its JSON row."""
    cmd = [a.llama_bench, "-m", a.model, "-t", str(a.threads), "-p", str(n_prompt), "-n", str(n_gen),
           "-d", str(n_depth), "-r", "1", "-b", str(a.n_batch), "-ub", str(a.n_ubatch),
           "-fa", a.flash_attn, "-o", "json"] + a.llama_args
    rows = json.loads(run(cmd, "llama-bench"))
    if len(rows) != 1:
        sys.exit(f"llama_cpp_compare: llama-bench gave {len(rows)} rows, expected 1: {' '.join(cmd)}")
    return rows[0]


def run_lazyllm(a, n, ids_file, n_gen):
    cmd = [a.lazyllm, "bench", "-m", a.model, "-t", str(a.threads), "-p", str(n), "-n", str(n_gen),
           "-r", "1", "--policy", a.policies, "-o", "jsonl", "--prompt-ids", ids_file] + a.lazyllm_args
    out = run(cmd, "lazyllm bench")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def tokenizers_agree(a):
    """(ids equal before the first difference, lazyllm count, llama.cpp count) on
    a.tokenizer_text, or None without llama-tokenize."""
    if not a.llama_tokenize or not os.path.isfile(a.tokenizer_text):
        return None
    # One file both read: `lazyllm tokenize -f` drops a trailing newline (as `run -f`) and
    # llama-tokenize -f keeps it, so the copy has none; a file, not an argument, as a text can be
    # longer than an argument may be (128 KiB).
    with open(a.tokenizer_text, encoding="utf-8") as f:
        text = f.read()
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
        f.write(text[:-1] if text.endswith("\n") else text)
        path = f.name
    try:
        out = run([a.lazyllm, "tokenize", "--no-bos", "-m", a.model, "-f", path], "lazyllm tokenize")
        start, end = out.rfind("["), out.rfind("]")
        ours = [int(x) for x in out[start + 1:end].split(",") if x.strip()]
        # --no-parse-special: special-token texts stay text, as `lazyllm tokenize` without
        # --special; --no-escape: a backslash and an n stay two characters.
        out = run([a.llama_tokenize, "-m", a.model, "-f", path, "--ids", "--no-bos",
                   "--no-parse-special", "--no-escape", "--log-disable"], "llama-tokenize")
    finally:
        os.unlink(path)
    start, end = out.rfind("["), out.rfind("]")
    theirs = [int(x) for x in out[start + 1:end].split(",") if x.strip()]
    same = next((i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y), min(len(ours), len(theirs)))
    return same, len(ours), len(theirs)


def n_ctx_train(a):
    """The model's trained context, from `lazyllm info` (lazyllm keeps to it)."""
    for line in run([a.lazyllm, "info", a.model], "lazyllm info").splitlines():
        if line.startswith("context"):
            return int(line.split()[1])
    sys.exit("llama_cpp_compare: no 'context' line in `lazyllm info`")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lazyllm", required=True, help="the lazyllm binary")
    ap.add_argument("--llama-bench", required=True, help="llama.cpp's llama-bench binary")
    ap.add_argument("--llama-tokenize", default="",
                    help="llama.cpp's llama-tokenize (default: next to llama-bench, if there)")
    ap.add_argument("--tokenizer-text", default=os.path.join(REPO, "README.md"),
                    help="text both tokenizers encode for the agreement check (default: README.md)")
    ap.add_argument("-m", "--model", default=default_model(), help="GGUF model (default: %(default)s)")
    ap.add_argument("-p", "--n-prompt", type=int_list, default=[512, 2048, 4096, 8192],
                    help="prompt lengths (default 512,2048,4096,8192)")
    ap.add_argument("-n", "--n-gen", type=int, default=32, help="decode steps (default 32; 0: none)")
    ap.add_argument("-r", "--repetitions", type=int, default=3, help="repetitions (default 3)")
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count(), help="threads (default: all)")
    ap.add_argument("--policies", default="full,lazy", help="lazyllm policies (default full,lazy)")
    ap.add_argument("--lazyllm-args", default="", help="extra `lazyllm bench` flags, e.g. schedule flags")
    ap.add_argument("--llama-args", default="", help="extra llama-bench flags")
    ap.add_argument("--n-batch", type=int, default=2048, help="llama.cpp logical batch (default 2048)")
    ap.add_argument("--n-ubatch", type=int, default=512, help="llama.cpp physical batch (default 512)")
    ap.add_argument("--flash-attn", default="auto", choices=["auto", "on", "off"],
                    help="llama.cpp flash attention (default auto, llama-bench's default)")
    ap.add_argument("--raw", help="also write every sample as jsonl to this file")
    a = ap.parse_args()
    a.lazyllm_args = a.lazyllm_args.split()
    a.llama_args = a.llama_args.split()
    if a.repetitions < 1 or a.n_gen < 0:
        sys.exit("llama_cpp_compare: -r must be >= 1 and -n >= 0")
    if not os.path.isfile(a.model):
        sys.exit(f"llama_cpp_compare: model '{a.model}' not found")
    for b in (a.lazyllm, a.llama_bench):
        if not os.access(b, os.X_OK):
            sys.exit(f"llama_cpp_compare: '{b}' is not an executable")
    if not a.llama_tokenize:
        cand = os.path.join(os.path.dirname(a.llama_bench), "llama-tokenize")
        a.llama_tokenize = cand if os.access(cand, os.X_OK) else ""

    tmp = tempfile.mkdtemp(prefix="lazyllm_vs_llama_")
    lengths = ",".join(str(n) for n in a.n_prompt)
    run([a.lazyllm, "bench", "-m", a.model, "-t", str(a.threads), "-p", lengths, "--export-prompts", tmp],
        "exporting prompts")
    # Decode only where lazyllm has room for it too (it keeps to the trained context).
    ctx = n_ctx_train(a)
    steps = {n: (a.n_gen if a.n_gen > 0 and n + a.n_gen <= ctx else 0) for n in a.n_prompt}
    agree = tokenizers_agree(a)

    llama = {n: [] for n in a.n_prompt}  # per rep: {"pp": row, "tg": row or None}
    ours = {n: [] for n in a.n_prompt}   # per rep: lazyllm jsonl rows
    raw = []
    for rep in range(a.repetitions):
        for n in a.n_prompt:
            ids_file = os.path.join(tmp, f"prompt-{n}.ids")
            order = ["llama.cpp", "lazyllm"] if rep % 2 == 0 else ["lazyllm", "llama.cpp"]
            for engine in order:
                print(f"[rep {rep + 1}/{a.repetitions}] {engine} p={n}", file=sys.stderr, flush=True)
                if engine == "llama.cpp":
                    r = {"pp": run_llama_bench(a, n, 0, 0),
                         "tg": run_llama_bench(a, 0, steps[n], n) if steps[n] else None}
                    llama[n].append(r)
                    raw.extend({"engine": "llama.cpp", "rep": rep, **row} for row in r.values() if row)
                else:
                    rows = run_lazyllm(a, n, ids_file, steps[n])
                    ours[n].append(rows)
                    raw.extend({"engine": "lazyllm", "rep": rep, **row} for row in rows)

    if a.raw:
        with open(a.raw, "w") as f:
            for r in raw:
                f.write(json.dumps(r) + "\n")

    def our_stat(n, policy, key, prompt_row=True):
        vals = [row[key] for rows in ours[n] for row in rows
                if row["policy"] == policy and (row["n_gen"] == 0) == prompt_row]
        return mean_sd(vals)

    first = llama[a.n_prompt[0]][0]["pp"]
    policies = a.policies.split(",")
    print(f"# lazyllm vs llama.cpp ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC})\n")
    print(f"- model: `{os.path.basename(a.model)}`; CPU: {cpu_model()}, {os.cpu_count()} cores; "
          f"threads: {a.threads}; repetitions: {a.repetitions}; decode steps: {a.n_gen}; "
          f"OMP_WAIT_POLICY: {os.environ.get('OMP_WAIT_POLICY', 'unset (OpenMP default)')}")
    print(f"- llama.cpp: llama-bench build {first.get('build_number')} (commit {first.get('build_commit')}), "
          f"backends {first.get('backends')}, n_batch {first.get('n_batch')}, n_ubatch "
          f"{first.get('n_ubatch')}, flash attention {FA.get(first.get('flash_attn'), first.get('flash_attn'))}, "
          f"KV cache {first.get('type_k')}/{first.get('type_v')}")
    print(f"- llama.cpp cpu_info: `{first.get('cpu_info')}`")
    if agree is None:
        print("- tokenizer check: skipped (no llama-tokenize)")
    else:
        s, t, u = agree
        verdict = "identical" if s == t == u else f"first difference at id {s}"
        print(f"- tokenizers on `{os.path.relpath(a.tokenizer_text, REPO)}`: {t} ids (lazyllm), "
              f"{u} (llama-tokenize): {verdict}")
    print()
    cols = ["prompt", "llama.cpp pp ms"]
    for pol in policies:
        cols += [f"{pol} pp ms", f"{pol} vs llama.cpp"]
    if "full" in policies:
        cols += [f"{pol} vs full" for pol in policies if pol != "full"]
    cols += ["llama.cpp tg t/s"] + [f"{pol} tg t/s" for pol in policies] + [f"{policies[0]} tg ratio"]
    print("| " + " | ".join(cols) + " |")
    print("| " + " | ".join(["---:"] * len(cols)) + " |")
    for n in a.n_prompt:
        l_pp = mean_sd([r["pp"]["avg_ns"] / 1e6 for r in llama[n]])
        cells = [f"{n}", f"{l_pp[0]:.1f} ± {l_pp[1]:.1f}"]
        pp = {}
        for pol in policies:
            o = our_stat(n, pol, "avg_ns")
            pp[pol] = (o[0] / 1e6, o[1] / 1e6)
            cells += [f"{pp[pol][0]:.1f} ± {pp[pol][1]:.1f}", f"{l_pp[0] / pp[pol][0]:.2f}x"]
        if "full" in policies:
            cells += [f"{pp['full'][0] / pp[pol][0]:.2f}x" for pol in policies if pol != "full"]
        if steps[n] > 0:
            l_tg = mean_sd([r["tg"]["avg_ts"] for r in llama[n]])
            cells.append(f"{l_tg[0]:.1f} ± {l_tg[1]:.1f}")
            tg = {pol: our_stat(n, pol, "avg_ts", prompt_row=False) for pol in policies}
            cells += [f"{tg[pol][0]:.1f} ± {tg[pol][1]:.1f}" for pol in policies]
            cells.append(f"{tg[policies[0]][0] / l_tg[0]:.2f}x")
        else:
            cells += ["-"] * (len(policies) + 2)
        print("| " + " | ".join(cells) + " |")
    print()
    print("pp ms: prefill time of the prompt (llama-bench pp<N>; lazyllm's pp<N> row). "
          "X vs llama.cpp = llama.cpp pp time / X's (above 1: X faster); tg t/s: decode tokens/s "
          f"of {a.n_gen} steps at depth N (llama-bench -d N); tg ratio = lazyllm / llama.cpp. "
          "Mean ± stddev over the repetitions.")
    if any(s == 0 for s in steps.values()) and a.n_gen > 0:
        print(f"Prompts with no room for {a.n_gen} decode steps in the model's {ctx}-token "
              "context: prefill only.")


if __name__ == "__main__":
    main()
