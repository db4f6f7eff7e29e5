#!/usr/bin/env python3
"""The multi-turn cache of `lazyllm serve`: a ~4k-token document with 5 hidden facts, asked
about in 5 turns (the document and question 1, then 4 follow-ups), over N conversations.

For each conversation and policy (full, lazy) it runs the chat with the cache (each turn sends
the whole history; the slot reuses everything before the new question), and for the first
--cold conversations it also runs every turn cold (cache_prompt false: the whole history is
prefilled again). It reports TTFT per turn, cached tokens, the share of prefill computed and
how many follow-ups each mode answers (the fact's value appears in the answer).

With --llama-server PATH it also runs the same conversations (same documents, questions and
seed) against llama.cpp's llama-server on a free local port, with the same GGUF and threads, one
slot, an 8192-token context and its own prompt cache (cache_prompt, its default): the
"llama-server+cache" rows (and "llama-server cold" for the first --cold conversations).

TTFT is measured client-side for every server alike: the request streams, and TTFT is the time
from sending it to the first chunk that carries answer text; the answer time, from sending it to
the end of the stream (the whole answer, up to --max-tokens). The servers' own figures are kept
beside it (lazyllm's timings.ttft_ms, llama-server's timings.prompt_ms). Policies: full, lazy
(the safe preset), lazy:fast (the fast one).

  python3 bench/server_cache_bench.py --lazyllm build/tools/lazyllm -n 20 --cold 3 \
      --out docs/results/server_cache.json --svg docs/images/server_cache_ttft.svg
  python3 bench/server_cache_bench.py --lazyllm build/tools/lazyllm \
      --llama-server build-llama/build-11434.0.0/bin/llama-server -n 4 --cold 0

Only 127.0.0.1 is contacted. No third-party packages.
"""
import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import fetch_model  # noqa: E402  (the model cache folder, one definition)

COLORS = ["red", "blue", "green", "yellow", "purple", "orange", "silver", "golden", "black", "white"]
FILLER = [
    "The committee reviewed the quarterly figures and agreed to revisit the budget next month.",
    "Rain fell steadily over the valley while the farmers waited for the harvest to dry.",
    "A new bridge across the river shortened the trip to the market by almost an hour.",
    "The library extended its opening hours during the examination period.",
    "Engineers replaced the old pumps at the station with quieter and more efficient ones.",
    "Visitors to the museum admired the restored paintings in the eastern gallery.",
    "The bakery on the corner started selling rye bread on weekends.",
    "Several trains were delayed because of maintenance work on the northern line.",
    "The school choir rehearsed twice a week ahead of the spring concert.",
    "Fishermen reported calm seas and a good catch along the southern coast.",
]


def default_model():
    """lazyllm's default model path (where `lazyllm serve` finds it without -m)."""
    return os.path.join(fetch_model.cache_dir(), "SmolLM2-135M-Instruct.Q4_1.gguf")


class Server:
    """A lazyllm serve process on a port of its choosing."""
    kind = "lazyllm"

    def __init__(self, lazyllm, flags):
        self.log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "lazyllm-bench-serve.log"), "w+")
        env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "passive"))
        self.proc = subprocess.Popen([lazyllm, "serve", "--port", "0", *flags], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 120
        self.port = None
        while time.time() < deadline and self.proc.poll() is None:
            self.log.seek(0)
            text = self.log.read()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
            if m and "ready" in text:
                self.port = int(m.group(1))
                break
            time.sleep(0.1)
        if self.port is None:
            self.log.seek(0)
            sys.exit("server did not start:\n" + self.log.read())

    def request(self, path, body):
        return urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", json.dumps(body).encode(),
                                      {"Content-Type": "application/json"})

    def post(self, path, body):
        with urllib.request.urlopen(self.request(path, body), timeout=600) as r:
            return json.load(r)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


class LlamaServer(Server):
    """llama.cpp's llama-server: same GGUF and threads, one slot, on a free local port."""
    kind = "llama-server"

    def __init__(self, path, model, threads, ctx):
        with socket.socket() as s:  # a free port; llama-server cannot report one it picked
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "lazyllm-bench-llama-server.log"), "w+")
        env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "passive"))
        self.proc = subprocess.Popen(
            [path, "-m", model, "--host", "127.0.0.1", "--port", str(self.port), "-c", str(ctx),
             "-np", "1", "-t", str(threads), "-tb", str(threads)],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 120
        while time.time() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:  # refused while starting, 503 while loading
                pass
            time.sleep(0.2)
        self.log.seek(0)
        sys.exit("llama-server did not start:\n" + self.log.read())


def make_conversation(srv, rng, n_tokens):
    """A document of about n_tokens with 5 facts at spread positions, and the 5 questions."""
    colors = rng.sample(COLORS, 5)
    codes = [str(rng.randint(10000, 99999)) for _ in colors]
    facts = [f"Remember this: the passcode of the {c} locker is {k}." for c, k in zip(colors, codes)]
    sentences = []
    while len(srv.post("/tokenize", {"content": " ".join(sentences)})["tokens"]) < n_tokens - 150:
        sentences.extend(rng.sample(FILLER, len(FILLER)))
    slots = sorted(rng.sample(range(len(sentences)), 5))
    for pos, fact in sorted(zip(slots, facts), reverse=True):
        sentences.insert(pos, fact)
    doc = " ".join(sentences)
    order = list(range(5))
    rng.shuffle(order)
    questions = [(f"What is the passcode of the {colors[i]} locker? Answer with the number.", codes[i])
                 for i in order]
    return doc, questions


def ask(srv, messages, policy, cache, max_tokens):
    """One streamed chat turn: the answer and its stats. ttft_ms is client-side (request sent ->
    first chunk with answer text); server_ms is the server's own (lazyllm: timings.ttft_ms,
    llama-server: timings.prompt_ms)."""
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "cache_prompt": cache,
            "stream": True, "stream_options": {"include_usage": True}}
    if srv.kind == "lazyllm":
        name, _, preset = policy.partition(":")  # lazy:fast -> the lazy policy's fast preset
        body["lazyllm"] = {"policy": name, **({"preset": preset} if preset else {})}
    text, ttft_ms, timings, usage = [], None, {}, {}
    t0 = time.perf_counter()
    with urllib.request.urlopen(srv.request("/v1/chat/completions", body), timeout=600) as r:
        for line in r:
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            chunk = json.loads(data)
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    if ttft_ms is None:
                        ttft_ms = (time.perf_counter() - t0) * 1e3
                    text.append(piece)
            timings = chunk.get("timings") or timings
            usage = chunk.get("usage") or usage
    total_ms = (time.perf_counter() - t0) * 1e3
    if ttft_ms is None:  # no text at all (an immediate end of sequence): the whole request
        ttft_ms = total_ms
    lazy = srv.kind == "lazyllm"
    return "".join(text), {
        "ttft_ms": ttft_ms, "total_ms": total_ms, "generated": usage.get("completion_tokens"),
        "server_ms": timings.get("ttft_ms" if lazy else "prompt_ms"),
        "cached": timings.get("cache_n"), "prompt_n": timings.get("prompt_n"),
        "prompt_tokens": usage.get("prompt_tokens"),
        "pct_computed": timings.get("prefill_pct_computed", 100.0),
        "revivals": timings.get("revivals", 0)}


def run_chat(srv, doc, questions, policy, cache, max_tokens):
    """Turn 1: the document and question 1; turns 2-5: the other questions. Returns per turn
    (answer, correct, stats)."""
    messages, out = [], []
    for i, (q, code) in enumerate(questions):
        messages.append({"role": "user", "content": (doc + "\n\n" + q) if i == 0 else q})
        answer, st = ask(srv, messages, policy, cache, max_tokens)
        messages.append({"role": "assistant", "content": answer})
        out.append({"answer": answer, "correct": code in answer, **st})
    return out


def mean_sd(xs):
    return (statistics.mean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0)


def summarise(results, modes):
    rows = []
    for mode in modes:
        runs = [r[mode] for r in results if mode in r]
        if not runs:
            continue
        for turn in range(5):
            ttft = [run[turn]["ttft_ms"] for run in runs]
            m, sd = mean_sd(ttft)
            server = [run[turn]["server_ms"] for run in runs if run[turn]["server_ms"] is not None]
            rows.append({"mode": mode, "turn": turn + 1, "n": len(runs), "ttft_ms": m, "ttft_sd": sd,
                         "total_ms": statistics.mean(run[turn]["total_ms"] for run in runs),
                         "generated": statistics.mean(run[turn]["generated"] or 0 for run in runs),
                         "server_ms": statistics.mean(server) if server else None,
                         "cached": statistics.mean(run[turn]["cached"] for run in runs),
                         "prompt_tokens": statistics.mean(run[turn]["prompt_tokens"] for run in runs),
                         "pct_computed": statistics.mean(run[turn]["pct_computed"] for run in runs),
                         "correct": sum(run[turn]["correct"] for run in runs)})
    return rows


def svg_chart(rows, path):
    """TTFT per turn, one bar per mode, log scale; no plotting library needed."""
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    colors = {"full+cache": "#2b59c3", "lazy+cache": "#d9822b", "full cold": "#8fa8e0", "lazy cold": "#f0c08a",
              "lazy:fast+cache": "#b0303a", "lazy:fast cold": "#e39aa0",
              "llama-server+cache": "#3a9a4a", "llama-server cold": "#9fd4a8"}
    import math
    vmax = max(r["ttft_ms"] for r in rows)
    lo, hi = 1.0, 10 ** math.ceil(math.log10(vmax))
    W, H, left, bottom, top = 760, 360, 70, 40, 30
    plot_h = H - bottom - top
    y = lambda v: top + plot_h * (1 - (math.log10(max(v, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)))
    group_w = (W - left - 20) / 5
    bar_w = group_w * 0.8 / len(modes)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="14">TTFT per turn, 4k-token document, 5 questions (ms, log scale)</text>']
    d = lo
    while d <= hi:
        out.append(f'<line x1="{left}" x2="{W - 20}" y1="{y(d):.1f}" y2="{y(d):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{y(d) + 4:.1f}" text-anchor="end">{d:g}</text>')
        d *= 10
    for r in rows:
        i = modes.index(r["mode"])
        x = left + (r["turn"] - 1) * group_w + group_w * 0.1 + i * bar_w
        out.append(f'<rect x="{x:.1f}" y="{y(r["ttft_ms"]):.1f}" width="{bar_w - 2:.1f}" '
                   f'height="{H - bottom - y(r["ttft_ms"]):.1f}" fill="{colors.get(r["mode"], "#888")}"/>')
    for t in range(5):
        out.append(f'<text x="{left + (t + 0.5) * group_w:.1f}" y="{H - bottom + 16}" text-anchor="middle">turn {t + 1}</text>')
    for i, m in enumerate(modes):
        step = (W - left - 20) / len(modes)
        out.append(f'<rect x="{left + 10 + i * step:.0f}" y="{H - 16}" width="12" height="12" fill="{colors.get(m, "#888")}"/>'
                   f'<text x="{left + 28 + i * step:.0f}" y="{H - 6}">{m}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lazyllm", default="build/tools/lazyllm")
    ap.add_argument("--llama-server", default="", metavar="PATH",
                    help="also run the conversations against this llama.cpp llama-server")
    ap.add_argument("--model", default="", help="GGUF for both servers (default: lazyllm's default model)")
    ap.add_argument("--policies", default="full,lazy",
                    help="lazyllm policies to run, comma-separated: full, lazy (the safe preset), "
                         "lazy:fast (default full,lazy; empty: none)")
    ap.add_argument("-n", "--conversations", type=int, default=20)
    ap.add_argument("--cold", type=int, default=3, help="conversations also run cold (every turn from scratch)")
    ap.add_argument("--tokens", type=int, default=4096, help="document length in tokens")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-t", "--threads", default="", help="threads of both servers (default: all cores)")
    ap.add_argument("--out", default="")
    ap.add_argument("--svg", default="")
    args = ap.parse_args()
    policies = [p for p in args.policies.split(",") if p]
    model = args.model or default_model()
    threads = args.threads or str(os.cpu_count())
    flags = ["--ctx-size", "8192", "--parallel", "2", "-t", threads] + (["-m", model] if args.model else [])
    srv = Server(args.lazyllm, flags)  # lazyllm's /tokenize sizes the documents in every case
    llama = None
    rng = random.Random(args.seed)
    results = []
    t0 = time.time()
    try:
        if args.llama_server:
            llama = LlamaServer(args.llama_server, model, threads, 8192)
        # Warm-up: first-touch of weights and caches.
        for policy in policies:
            ask(srv, [{"role": "user", "content": "Hello"}], policy, False, 4)
        if llama:
            ask(llama, [{"role": "user", "content": "Hello"}], None, False, 4)
        for c in range(args.conversations):
            doc, questions = make_conversation(srv, rng, args.tokens)
            r = {}
            for policy in policies:
                r[f"{policy}+cache"] = run_chat(srv, doc, questions, policy, True, args.max_tokens)
                if c < args.cold:
                    r[f"{policy} cold"] = run_chat(srv, doc, questions, policy, False, args.max_tokens)
            if llama:
                r["llama-server+cache"] = run_chat(llama, doc, questions, None, True, args.max_tokens)
                if c < args.cold:
                    r["llama-server cold"] = run_chat(llama, doc, questions, None, False, args.max_tokens)
            results.append(r)
            print(f"conversation {c + 1}/{args.conversations}: "
                  + ", ".join(f"{m} {sum(t['correct'] for t in v)}/5" for m, v in r.items())
                  + f" ({time.time() - t0:.0f} s)", flush=True)
    finally:
        srv.stop()
        if llama:
            llama.stop()
    modes = [m for p in policies for m in (f"{p} cold", f"{p}+cache")]
    if llama:
        modes += ["llama-server cold", "llama-server+cache"]
    rows = summarise(results, modes)
    print(f"\n{'mode':<18} {'turn':>4} {'n':>3} {'TTFT ms (client)':>18} {'server ms':>10} {'answer ms':>10} "
          f"{'tokens':>6} {'prompt':>7} {'cached':>7} {'% computed':>10} {'correct':>8}")
    for row in rows:
        server = f"{row['server_ms']:.1f}" if row["server_ms"] is not None else "-"
        print(f"{row['mode']:<18} {row['turn']:>4} {row['n']:>3} {row['ttft_ms']:>9.1f} +- {row['ttft_sd']:<7.1f}"
              f"{server:>10} {row['total_ms']:>10.1f} {row['generated']:>6.1f} {row['prompt_tokens']:>7.0f} {row['cached']:>7.0f} {row['pct_computed']:>10.1f} "
              f"{row['correct']:>5}/{row['n']}")
    by = {(r["mode"], r["turn"]): r for r in rows}
    summary = {}
    for name in policies + (["llama-server"] if llama else []):
        if (f"{name} cold", 2) in by:
            ratios = [by[(f"{name} cold", t)]["ttft_ms"] / by[(f"{name}+cache", t)]["ttft_ms"] for t in range(2, 6)]
            summary[f"{name}_cold_over_cache_ttft_turns_2_5"] = ratios
            print(f"{name}: cold / cached TTFT, turns 2-5: " + ", ".join(f"{x:.1f}x" for x in ratios))
        fu = sum(by[(f"{name}+cache", t)]["correct"] for t in range(2, 6))
        summary[f"{name}_cache_followups_correct"] = fu
        summary[f"{name}_cache_turn1_correct"] = by[(f"{name}+cache", 1)]["correct"]
        print(f"{name}+cache: follow-ups answered {fu}/{4 * len(results)}, turn 1 "
              f"{by[(f'{name}+cache', 1)]['correct']}/{len(results)}")
    def compare(base, policy, summary_key):
        """base+cache's TTFT and answer time over policy+cache's, turns 1-5."""
        for what, key, tag in (("TTFT", "ttft_ms", "ttft"), ("answer time", "total_ms", "answer")):
            ratios = [by[(f"{base}+cache", t)][key] / by[(f"{policy}+cache", t)][key] for t in range(1, 6)]
            summary[f"{summary_key}_over_{policy}_cache_{tag}_turns_1_5"] = ratios
            print(f"{base}+cache / {policy}+cache {what}, turns 1-5: " + ", ".join(f"{x:.2f}x" for x in ratios))

    for policy in policies:
        if llama:
            compare("llama-server", policy, "llama_server")
    for policy in policies:
        if policy != "full" and "full" in policies:
            compare("full", policy, "full")
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "rows": rows, "summary": summary, "conversations": results}, f, indent=1)
    if args.svg:
        svg_chart(rows, args.svg)


if __name__ == "__main__":
    main()
