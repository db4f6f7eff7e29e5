#!/usr/bin/env python3
"""Aggregate decode tokens/s of `lazyllm serve` with 1 and N concurrent streams, with the decode
steps of the generating slots batched into one forward (--batch-decode on) and one after
another (off). Each stream: a short chat prompt, `--max-tokens` tokens, end of sequence ignored,
greedy. Aggregate = tokens after each stream's first token / (last stream's end - first
stream's first token), measured at the client from the SSE chunks. Repetitions interleave the
configurations so that a noisy moment hits all alike.

  python3 bench/server_decode_bench.py --lazyllm build/tools/lazyllm --streams 1,4 -r 3

--policy lazy (or lazy:fast) sends `"lazyllm": {"policy": "lazy", ...}` with every request, and
--context N puts about N tokens of a generated document before each story request, so the
prompt step prunes (the safe preset runs prompts under 3072 tokens as full). A lazy slot joins
the batched decode step once its next step is a full one (safe preset: after its first decode
step has revived the deferred tokens); with decode steps that select (lazy:fast) it steps alone.

Only 127.0.0.1 is contacted. No third-party packages.
"""
import argparse
import concurrent.futures as cf
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import time

TOPICS = ["a lighthouse", "a robot", "the sea", "a mountain", "a city", "a library", "a train", "a garden"]


def document(n_tokens, seed):
    """About n_tokens of plain sentences (SmolLM2's tokenizer: ~1.3 tokens per word)."""
    words = ["river", "stone", "north", "quiet", "market", "lantern", "harbor", "winter", "copper", "field",
             "window", "garden", "letter", "morning", "bridge", "forest", "signal", "orchard", "valley", "engine"]
    out, i = [], seed
    while len(out) * 4 // 3 < n_tokens:
        i = (i * 1103515245 + 12345) % (1 << 31)
        out.append(words[i % len(words)])
        if i % 9 == 0:
            out[-1] += "."
    return " ".join(out)


def start_server(lazyllm, batch, slots, threads, ctx=2048):
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"lazyllm-decode-bench-{batch}.log"), "w+")
    flags = ["serve", "--port", "0", "--parallel", str(slots), "--ctx-size", str(ctx), "--batch-decode", batch]
    if threads:
        flags += ["-t", threads]
    env = dict(os.environ)  # OMP_WAIT_POLICY as the caller has it (unset: libgomp's spin, then sleep)
    proc = subprocess.Popen([lazyllm, *flags], stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        log.seek(0)
        text = log.read()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
        if m and "ready" in text:
            return proc, int(m.group(1))
        time.sleep(0.1)
    log.seek(0)
    sys.exit("server did not start:\n" + log.read())


def lazy_object(policy):
    if policy == "full":
        return {"policy": "full"}
    name, _, preset = policy.partition(":")
    return {"policy": name, **({"preset": preset} if preset else {})}


def stream(port, i, max_tokens, policy="full", context=0):
    """Returns (time of the first token, end time, tokens generated)."""
    ask = f"Write a long story about {TOPICS[i % len(TOPICS)]}."
    if context:
        ask = document(context, i + 1) + "\n\n" + ask
    body = json.dumps({"messages": [{"role": "user", "content": ask}],
                       "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True}, "lazyllm": lazy_object(policy)})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    first, n_gen, buf = None, 0, b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            data = ev.decode().removeprefix("data: ")
            if data == "[DONE]":
                continue
            j = json.loads(data)
            if j.get("usage"):
                n_gen = j["usage"]["completion_tokens"]
            if first is None and any(c.get("delta", {}).get("content") for c in j["choices"]):
                first = time.perf_counter()
    end = time.perf_counter()
    conn.close()
    return first, end, n_gen


def aggregate(port, n, max_tokens, policy="full", context=0):
    with cf.ThreadPoolExecutor(n) as ex:
        res = list(ex.map(lambda i: stream(port, i, max_tokens, policy, context), range(n)))
    t0 = min(r[0] for r in res)
    t1 = max(r[1] for r in res)
    tokens = sum(r[2] - 1 for r in res)
    return tokens / (t1 - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lazyllm", default="build/tools/lazyllm")
    ap.add_argument("--streams", default="1,4")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("-r", "--reps", type=int, default=3)
    ap.add_argument("-t", "--threads", default="")
    ap.add_argument("--policy", default="full", help="full, lazy (the safe preset) or lazy:fast")
    ap.add_argument("--context", type=int, default=0, help="about N tokens of document before each request")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    streams = [int(x) for x in args.streams.split(",")]
    ctx = max(2048, 2 * args.context + args.max_tokens + 256)
    servers = {b: start_server(args.lazyllm, b, max(streams), args.threads, ctx) for b in ("on", "off")}
    results = {(b, n): [] for b in servers for n in streams}
    try:
        for b, (_, port) in servers.items():  # warm-up
            aggregate(port, max(streams), 8, args.policy, args.context)
        for rep in range(args.reps):
            for n in streams:
                for b, (_, port) in servers.items():
                    results[(b, n)].append(aggregate(port, n, args.max_tokens, args.policy, args.context))
            print(f"rep {rep + 1}: " + ", ".join(f"batch {b} x{n}: {v[-1]:.1f}" for (b, n), v in results.items()), flush=True)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(10)
    print(f"\n{'batch decode':<13} {'streams':>7} {'aggregate tok/s':>22}")
    rows = []
    for (b, n), v in results.items():
        m, sd = statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0
        rows.append({"batch_decode": b, "streams": n, "tokens_per_s": m, "sd": sd, "reps": v})
        print(f"{b:<13} {n:>7} {m:>14.1f} +- {sd:<5.1f}")
    # Ratios within each repetition (same moment of the machine), then their median.
    ratios = {}
    for b in servers:
        for n in streams[1:]:
            per_rep = [x / y for x, y in zip(results[(b, n)], results[(b, streams[0])])]
            ratios[f"batch_{b}_{n}_over_{streams[0]}"] = per_rep
            print(f"batch {b}: {n} streams / {streams[0]}: median {statistics.median(per_rep):.2f}x "
                  f"(per repetition: {', '.join(f'{r:.2f}' for r in per_rep)})")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "rows": rows, "ratios": ratios}, f, indent=1)


if __name__ == "__main__":
    main()
