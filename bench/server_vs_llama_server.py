#!/usr/bin/env python3
"""The conversation of bench/server_cache_bench.py (a ~4k-token document, 5 questions in 5
turns) against `lazyllm serve` (full and lazy) and llama.cpp's `llama-server`, both keeping
their prompt cache (llama-server: cache_prompt, its default), on the same GGUF and threads.
TTFT per turn is measured at the client (request sent -> first streamed content), the same way
for both servers; each server's own prompt timing is recorded too.

  python3 bench/server_vs_llama_server.py --lazyllm build/tools/lazyllm \
      --llama-server /path/to/llama-server -n 3 -t 2 --out docs/results/server_vs_llama_server.json

Only 127.0.0.1 is contacted. No third-party packages.
"""
import argparse
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_cache_bench import Server, make_conversation  # noqa: E402

MODEL = os.path.expanduser("~/.cache/lazyllm/models/SmolLM2-135M-Instruct.Q4_1.gguf")


class LlamaServer:
    def __init__(self, binary, model, threads, port=18080):
        self.log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "llama-server-bench.log"), "w+")
        self.port = port
        self.proc = subprocess.Popen([binary, "-m", model, "-c", "8192", "-np", "1", "-t", str(threads),
                                      "--host", "127.0.0.1", "--port", str(port), "--jinja"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.log.seek(0)
        sys.exit("llama-server did not start:\n" + self.log.read()[-3000:])

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def stream_chat(port, messages, extra, max_tokens):
    """(client TTFT ms, answer, server timings)."""
    body = json.dumps({"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True}, **extra})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    ttft, text, timings, buf = None, "", {}, b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            data = ev.decode().strip().removeprefix("data: ")
            if not data or data == "[DONE]":
                continue
            j = json.loads(data)
            timings = j.get("timings", timings)
            for c in j.get("choices", []):
                piece = (c.get("delta") or {}).get("content")
                if piece:
                    if ttft is None:
                        ttft = 1000 * (time.perf_counter() - t0)
                    text += piece
    conn.close()
    return ttft if ttft is not None else 1000 * (time.perf_counter() - t0), text, timings


def run_conversation(port, doc, questions, extra, max_tokens):
    messages, out = [], []
    for i, (q, code) in enumerate(questions):
        messages.append({"role": "user", "content": (doc + "\n\n" + q) if i == 0 else q})
        ttft, answer, t = stream_chat(port, messages, extra, max_tokens)
        messages.append({"role": "assistant", "content": answer})
        out.append({"ttft_ms": ttft, "correct": code in answer, "answer": answer,
                    "server_prompt_ms": t.get("prompt_ms"), "server_prompt_n": t.get("prompt_n")})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lazyllm", default="build/tools/lazyllm")
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("-m", "--model", default=MODEL)
    ap.add_argument("-n", "--conversations", type=int, default=3)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    lz = Server(args.lazyllm, ["-m", args.model, "--ctx-size", "8192", "--parallel", "2", "-t", str(args.threads)])
    rng = random.Random(args.seed)
    convs = [make_conversation(lz, rng, args.tokens) for _ in range(args.conversations)]
    results = {"lazyllm full": [], "lazyllm lazy": [], "llama-server": []}
    try:
        stream_chat(lz.port, [{"role": "user", "content": "Hello"}], {"lazyllm": {"policy": "full"}}, 4)
        for doc, qs in convs:
            for policy in ("full", "lazy"):
                results[f"lazyllm {policy}"].append(
                    run_conversation(lz.port, doc, qs, {"lazyllm": {"policy": policy}}, args.max_tokens))
    finally:
        lz.stop()
    ls = LlamaServer(args.llama_server, args.model, args.threads)
    try:
        stream_chat(ls.port, [{"role": "user", "content": "Hello"}], {}, 4)
        for doc, qs in convs:
            results["llama-server"].append(run_conversation(ls.port, doc, qs, {"cache_prompt": True}, args.max_tokens))
    finally:
        ls.stop()
    print(f"\n{'server':<14}" + "".join(f"{'turn ' + str(t + 1):>16}" for t in range(5)) + f"{'correct':>9}")
    rows = {}
    for name, runs in results.items():
        cells, means = [], []
        for t in range(5):
            xs = [r[t]["ttft_ms"] for r in runs]
            m, sd = statistics.mean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0
            means.append(m)
            cells.append(f"{m:>9.0f} +- {sd:<4.0f}")
        correct = sum(r[t]["correct"] for r in runs for t in range(5))
        rows[name] = {"ttft_ms_per_turn": means, "correct": correct, "of": 5 * len(runs)}
        print(f"{name:<14}" + "".join(cells) + f"{correct:>6}/{5 * len(runs)}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "rows": rows, "runs": results}, f, indent=1)


if __name__ == "__main__":
    main()
