"""A bounded load test: 16 concurrent clients x 25 requests, mixed prompt lengths, streaming and
not, some clients disconnecting mid-stream. Every response is well-formed (200 or 503 with
Retry-After), the server never crashes, and its resident memory stays flat after warm-up.
Also: a full queue answers 503 with Retry-After."""
import concurrent.futures as cf
import json
import random
import signal
import socket
import threading
import time

from server_harness import Server

CLIENTS, REQUESTS = 16, 25
TIME_LIMIT_S = 480  # the whole run (about 1 min on an idle 2-core machine); each request has its own timeout too
CTX = 1024
CHAT = "/v1/chat/completions"


def body_for(rng, i):
    n_words = rng.choice([5, 40, 150, 400])
    text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "cpu", "cache"]) for _ in range(n_words))
    return {"messages": [{"role": "user", "content": f"{i}: {text}. Summarise."}],
            "max_tokens": rng.randint(1, 8), "temperature": rng.choice([0, 0.7]), "seed": i,
            "stream": rng.random() < 0.5, "stream_options": {"include_usage": True}}


def check_stream(text):
    events = [e for e in text.split("\n\n") if e.strip()]
    assert events and events[-1] == "data: [DONE]", events[-3:]
    finish = None
    for e in events[:-1]:
        assert e.startswith("data: "), e
        j = json.loads(e[6:])
        assert "error" not in j, j
        for c in j["choices"]:
            finish = c["finish_reason"] or finish
    assert finish in ("stop", "length"), finish


def one_request(srv, rng, i, stats):
    body = body_for(rng, i)
    if rng.random() < 0.1:
        disconnect(srv, body)
        stats["disconnects"] += 1
        return
    status, text, headers = srv.request("POST", CHAT, body, {"Content-Type": "application/json"}, timeout=120)
    if status == 503:
        err = json.loads(text)["error"]
        assert err["code"] == "queue_full" and headers.get("retry-after") == "1", (err, headers)
        stats["503"] += 1
        time.sleep(0.2)
        return
    assert status == 200, (status, text)
    if body["stream"]:
        check_stream(text)
    else:
        j = json.loads(text)
        assert j["choices"][0]["finish_reason"] in ("stop", "length") and "usage" in j, j
    stats["200"] += 1


def disconnect(srv, body):
    """Sends a streaming request and closes the socket after the first bytes (or at once)."""
    body = dict(body, stream=True, max_tokens=64)
    data = json.dumps(body)
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    try:
        s.sendall((f"POST {CHAT} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(data)}\r\n\r\n{data}").encode())
        s.recv(256)
    finally:
        s.close()


def client(srv, k, n_requests, deadline, stats, lock):
    rng = random.Random(1000 * n_requests + k)
    local = {"200": 0, "503": 0, "disconnects": 0}
    for r in range(n_requests):
        assert time.time() < deadline, "the load test ran past its time limit"
        one_request(srv, rng, k * REQUESTS + r, local)
    with lock:
        for key, v in local.items():
            stats[key] += v


def run_clients(srv, n_clients, n_requests, deadline):
    stats, lock = {"200": 0, "503": 0, "disconnects": 0}, threading.Lock()
    with cf.ThreadPoolExecutor(n_clients) as ex:
        for f in [ex.submit(client, srv, k, n_requests, deadline, stats, lock) for k in range(n_clients)]:
            f.result()
    return stats


def warm_up(srv):
    """Fills both slots' caches to about the context (their KV pages are then resident)."""
    long = " ".join(["alpha beta gamma"] * 300)
    for i in range(2):
        status, text, _ = srv.request("POST", CHAT, {"messages": [{"role": "user", "content": f"{i} {long}"}],
                                                     "max_tokens": 4, "cache_prompt": False})
        assert status == 200, text


def load(srv):
    deadline = time.time() + TIME_LIMIT_S
    warm_up(srv)
    stats = run_clients(srv, CLIENTS, 4, deadline)  # warm-up: allocator pools, threads
    rss0 = srv.rss_kib()
    stats2 = run_clients(srv, CLIENTS, REQUESTS, deadline)
    rss1 = srv.rss_kib()
    print(f"        warm-up: {stats}; {CLIENTS} x {REQUESTS}: {stats2}; RSS {rss0 / 1024:.0f} -> {rss1 / 1024:.0f} MiB", flush=True)
    assert srv.alive(), srv.read_log()
    assert stats["200"] + stats2["200"] > 40, (stats, stats2)
    assert rss1 - rss0 < 48 * 1024, f"resident memory grew from {rss0} to {rss1} KiB"
    status, body, _ = srv.request("GET", "/health")
    assert status == 200 and json.loads(body)["status"] == "ok", body


SLOW = {"messages": [{"role": "user", "content": "Count to a thousand."}], "max_tokens": 200,
        "ignore_eos": True, "temperature": 0}


def wait_health(srv, field, value, t0):
    """Polls /health until its `field` reads `value` (10 s from t0 at most)."""
    while json.loads(srv.request("GET", "/health")[1])[field] != value:
        assert time.time() - t0 < 10, field
        time.sleep(0.02)


def queue_full(srv):
    """1 slot, queue of 1: a third concurrent request is refused with 503 and Retry-After."""
    slow = SLOW
    with cf.ThreadPoolExecutor(2) as ex:
        first = ex.submit(srv.request, "POST", CHAT, slow, None, 120)
        t0 = time.time()
        wait_health(srv, "slots_busy", 1, t0)
        second = ex.submit(srv.request, "POST", CHAT, slow, None, 120)
        wait_health(srv, "queue_depth", 1, t0)
        status, body, headers = srv.request("POST", CHAT, slow)
        assert status == 503 and headers.get("retry-after") == "1", (status, headers)
        assert json.loads(body)["error"]["code"] == "queue_full"
        assert first.result()[0] == 200 and second.result()[0] == 200


def queue_zero(srv):
    """1 slot, queue of 0: a request still runs on the free slot; one more while it runs is refused."""
    slow = SLOW
    status, body, _ = srv.request("POST", CHAT, {"messages": slow["messages"], "max_tokens": 2})
    assert status == 200, body
    with cf.ThreadPoolExecutor(1) as ex:
        first = ex.submit(srv.request, "POST", CHAT, slow, None, 120)
        wait_health(srv, "slots_busy", 1, time.time())
        status, body, _ = srv.request("POST", CHAT, slow)
        assert status == 503 and json.loads(body)["error"]["code"] == "queue_full", (status, body)
        assert first.result()[0] == 200


def more_slots_than_a_batch(srv):
    """20 slots decoding at once, more than one batched forward takes (8 beside oneDNN's GEMMs,
    16 beside our AMX GEMM): every request answers 200 (all 12 of an earlier 12-slot check once
    got a 500 naming step_batch's limit)."""
    body = {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 24,
            "ignore_eos": True, "temperature": 0}
    with cf.ThreadPoolExecutor(20) as ex:
        results = list(ex.map(lambda _: srv.request("POST", CHAT, body, None, 120), range(20)))
    for status, text, _ in results:
        assert status == 200, text
        assert json.loads(text)["usage"]["completion_tokens"] == 24, text
    assert len({json.loads(t)["choices"][0]["message"]["content"] for _, t, _ in results}) == 1


def idle_connections(srv):
    """64 silent connections and 8 sending a header a byte at a time (more than the 17 threads the
    server keeps) leave other clients served at once. The 64 connect at once: a listen backlog of
    5 (cpp-httplib's) dropped some of them, which the client's kernel retried a second later."""
    t0 = time.time()
    held = [socket.create_connection(("127.0.0.1", int(srv.port))) for _ in range(64)]
    assert time.time() - t0 < 0.9, f"64 connections took {time.time() - t0:.1f} s"
    for s in held[:8]:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    try:
        t0 = time.time()
        status, body, _ = srv.request("GET", "/health", timeout=10)
        assert status == 200, body
        status, body, _ = srv.request("POST", CHAT, {"messages": [{"role": "user", "content": "Hi"}],
                                                     "max_tokens": 2}, timeout=30)
        assert status == 200, body
        assert time.time() - t0 < 5, f"served after {time.time() - t0:.1f} s"
    finally:
        for s in held:
            s.close()
    assert srv.alive(), srv.read_log()


def large_texts_at_once(srv):
    """Twelve clients each send /tokenize a 7 MiB word at once (tokenizer scratch up to 55 bytes a
    byte: about 400 MB each, 4.6 GB together): the server's text budget (16 MiB at once) keeps its
    peak memory to a few of them, and every request is answered."""
    body = json.dumps({"content": "a" * (7 << 20)})
    peak0 = srv.rss_kib("VmHWM")
    t0 = time.time()
    with cf.ThreadPoolExecutor(12) as ex:
        results = list(ex.map(lambda _: srv.request("POST", "/tokenize", body, timeout=300), range(12)))
    for status, text, _ in results:
        assert status == 200, (status, text[:200])
        assert len(json.loads(text)["tokens"]) > 0
    grew = (srv.rss_kib("VmHWM") - peak0) / 1024
    print(f"        12 x 7 MiB in {time.time() - t0:.1f} s, peak RSS +{grew:.0f} MiB", flush=True)
    assert grew < 2048, f"peak RSS grew by {grew:.0f} MiB"
    assert srv.alive(), srv.read_log()


def stop_beside_idle_connection(srv):
    """SIGINT stops the server at once beside an idle keep-alive connection (a browser tab's),
    which held its thread, and the process, for the keep-alive time (30 s here)."""
    s = socket.create_connection(("127.0.0.1", int(srv.port)))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert s.recv(64).startswith(b"HTTP/1.1 200"), "no answer"
    t0 = time.time()
    srv.proc.send_signal(signal.SIGINT)
    srv.proc.wait(12)
    assert srv.proc.returncode == 0, (srv.proc.returncode, srv.read_log())
    print(f"        stopped in {time.time() - t0:.1f} s", flush=True)
    s.close()


def run(lazyllm, checks):
    with Server(lazyllm, "--ctx-size", str(CTX), "--parallel", "2", "--queue", "4", log_name="load") as srv:
        checks.run(f"{CLIENTS} clients x {REQUESTS} requests: 200/503 only, RSS flat", load, srv)
        assert srv.alive(), srv.read_log()
    with Server(lazyllm, "--ctx-size", "512", "--parallel", "1", "--queue", "1", log_name="queue") as srv:
        checks.run("a full queue answers 503 with Retry-After", queue_full, srv)
    # --keep-alive 30: connections held idle outlast the checks below (by default they close
    # after 5 s, which would hide threads held by them).
    with Server(lazyllm, "--ctx-size", "512", "--parallel", "1", "--queue", "0", "--keep-alive", "30",
                log_name="queue0") as srv:
        checks.run("--queue 0: a free slot takes a request", queue_zero, srv)
        checks.run("idle and slow connections do not hold up other clients", idle_connections, srv)
        checks.run("large texts at once stay within the text budget", large_texts_at_once, srv)
    with Server(lazyllm, "--ctx-size", "256", "--parallel", "20", log_name="slots20") as srv:
        checks.run("20 slots decoding at once: batched 8 or 16 at a time, all 200", more_slots_than_a_batch, srv)
    with Server(lazyllm, "--ctx-size", "512", "--parallel", "1", "--keep-alive", "30", log_name="stop") as srv:
        checks.run("SIGINT beside an idle keep-alive connection stops at once", stop_beside_idle_connection, srv)
