#!/usr/bin/env python3
"""The multi-turn cache of `lazyllm serve`: a ~4k-token document with 5 hidden facts, asked
about in 5 turns (the document and question 1, then 4 follow-ups), over N conversations.

For each conversation and policy (full, lazy) it runs the chat with the cache (each turn sends
the whole history; the slot reuses everything before the new question), and for the first
--cold conversations it also runs every turn cold (cache_prompt false: the whole history is
prefilled again). It reports TTFT per turn, cached tokens, the share of prefill computed and
how many follow-ups each mode answers (the fact's value appears in the answer).

  python3 bench/server_cache_bench.py --lazyllm build/tools/lazyllm -n 20 --cold 3 \
      --out docs/results/server_cache.json --svg docs/images/server_cache_ttft.svg

Only 127.0.0.1 is contacted. No third-party packages.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
import urllib.request

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


class Server:
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

    def post(self, path, body):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.load(r)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


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
    r = srv.post("/v1/chat/completions", {
        "messages": messages, "max_tokens": max_tokens, "temperature": 0,
        "lazyllm": {"policy": policy}, "cache_prompt": cache})
    t = r["timings"]
    return r["choices"][0]["message"]["content"], {
        "ttft_ms": t["ttft_ms"], "cached": t["cache_n"], "prompt_n": t["prompt_n"],
        "prompt_tokens": r["usage"]["prompt_tokens"], "pct_computed": t["prefill_pct_computed"],
        "revivals": t["revivals"]}


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
            rows.append({"mode": mode, "turn": turn + 1, "n": len(runs), "ttft_ms": m, "ttft_sd": sd,
                         "cached": statistics.mean(run[turn]["cached"] for run in runs),
                         "prompt_tokens": statistics.mean(run[turn]["prompt_tokens"] for run in runs),
                         "pct_computed": statistics.mean(run[turn]["pct_computed"] for run in runs),
                         "correct": sum(run[turn]["correct"] for run in runs)})
    return rows


def svg_chart(rows, path):
    """TTFT per turn, one bar per mode, log scale; no plotting library needed."""
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    colors = {"full+cache": "#2b59c3", "lazy+cache": "#d9822b", "full cold": "#8fa8e0", "lazy cold": "#f0c08a"}
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
        out.append(f'<rect x="{left + 10 + i * 150}" y="{H - 16}" width="12" height="12" fill="{colors.get(m, "#888")}"/>'
                   f'<text x="{left + 28 + i * 150}" y="{H - 6}">{m}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lazyllm", default="build/tools/lazyllm")
    ap.add_argument("-n", "--conversations", type=int, default=20)
    ap.add_argument("--cold", type=int, default=3, help="conversations also run cold (every turn from scratch)")
    ap.add_argument("--tokens", type=int, default=4096, help="document length in tokens")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-t", "--threads", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--svg", default="")
    args = ap.parse_args()
    flags = ["--ctx-size", "8192", "--parallel", "2"] + (["-t", args.threads] if args.threads else [])
    srv = Server(args.lazyllm, flags)
    rng = random.Random(args.seed)
    results = []
    t0 = time.time()
    try:
        # Warm-up: first-touch of weights and caches.
        ask(srv, [{"role": "user", "content": "Hello"}], "full", False, 4)
        ask(srv, [{"role": "user", "content": "Hello"}], "lazy", False, 4)
        for c in range(args.conversations):
            doc, questions = make_conversation(srv, rng, args.tokens)
            r = {}
            for policy in ("full", "lazy"):
                r[f"{policy}+cache"] = run_chat(srv, doc, questions, policy, True, args.max_tokens)
                if c < args.cold:
                    r[f"{policy} cold"] = run_chat(srv, doc, questions, policy, False, args.max_tokens)
            results.append(r)
            print(f"conversation {c + 1}/{args.conversations}: "
                  + ", ".join(f"{m} {sum(t['correct'] for t in v)}/5" for m, v in r.items())
                  + f" ({time.time() - t0:.0f} s)", flush=True)
    finally:
        srv.stop()
    modes = ["full cold", "full+cache", "lazy cold", "lazy+cache"]
    rows = summarise(results, modes)
    print(f"\n{'mode':<11} {'turn':>4} {'n':>3} {'TTFT ms':>16} {'prompt':>7} {'cached':>7} {'% computed':>10} {'correct':>8}")
    for row in rows:
        print(f"{row['mode']:<11} {row['turn']:>4} {row['n']:>3} {row['ttft_ms']:>9.1f} +- {row['ttft_sd']:<5.1f}"
              f"{row['prompt_tokens']:>7.0f} {row['cached']:>7.0f} {row['pct_computed']:>10.1f} {row['correct']:>5}/{row['n']}")
    by = {(r["mode"], r["turn"]): r for r in rows}
    summary = {}
    for policy in ("full", "lazy"):
        if (f"{policy} cold", 2) in by:
            ratios = [by[(f"{policy} cold", t)]["ttft_ms"] / by[(f"{policy}+cache", t)]["ttft_ms"] for t in range(2, 6)]
            summary[f"{policy}_cold_over_cache_ttft_turns_2_5"] = ratios
            print(f"{policy}: cold / cached TTFT, turns 2-5: " + ", ".join(f"{x:.1f}x" for x in ratios))
        fu = sum(by[(f"{policy}+cache", t)]["correct"] for t in range(2, 6))
        summary[f"{policy}_cache_followups_correct"] = fu
        summary[f"{policy}_cache_turn1_correct"] = by[(f"{policy}+cache", 1)]["correct"]
        print(f"{policy}+cache: follow-ups answered {fu}/{4 * len(results)}, turn 1 {by[(f'{policy}+cache', 1)]['correct']}/{len(results)}")
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "rows": rows, "summary": summary, "conversations": results}, f, indent=1)
    if args.svg:
        svg_chart(rows, args.svg)


if __name__ == "__main__":
    main()
