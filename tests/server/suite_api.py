"""The API through the official `openai` package (chat, completions, streaming, models) and raw
HTTP for every malformed case, the API key, the body limit, tokenize / detokenize, metrics and
cancellation on disconnect."""
import gzip
import http.client
import json
import os
import re
import socket
import subprocess
import time

import openai

from server_harness import Server, expect_error

KEY = "test-key-123"
CTX = 2048
MAX_BODY = 65536
AUTH = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
CHAT = "/v1/chat/completions"
MSG = [{"role": "user", "content": "What is the capital of France?"}]


def client(srv):
    return openai.OpenAI(base_url=srv.base + "/v1", api_key=KEY, max_retries=0, timeout=60)


def chat_basic(srv):
    r = client(srv).chat.completions.create(model="any", messages=MSG, max_tokens=12, temperature=0)
    assert r.object == "chat.completion"
    assert r.choices[0].message.role == "assistant"
    assert "Paris" in r.choices[0].message.content, r.choices[0].message.content
    assert r.choices[0].finish_reason in ("stop", "length")
    u = r.usage
    assert u.prompt_tokens > 10 and 0 < u.completion_tokens <= 12
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens
    t = r.model_extra["timings"]
    for k in ("prompt_n", "prompt_ms", "prompt_per_second", "predicted_n", "predicted_ms",
              "predicted_per_second", "ttft_ms", "prefill_pct_computed", "revivals", "cache_n"):
        assert k in t, k
    assert t["predicted_n"] == u.completion_tokens and t["ttft_ms"] > 0
    # Both rates are over the decode steps after the first token, in predicted_ms.
    if t["predicted_n"] > 1 and t["predicted_ms"] > 0:
        steps = t["predicted_n"] - 1
        assert abs(t["predicted_per_token_ms"] * steps - t["predicted_ms"]) < 1e-6 * t["predicted_ms"] + 1e-9, t
        assert abs(t["predicted_per_second"] * t["predicted_per_token_ms"] - 1000.0) < 1e-6, t


def chat_stream(srv):
    stream = client(srv).chat.completions.create(
        model="any", messages=MSG, max_tokens=10, temperature=0, stream=True,
        stream_options={"include_usage": True})
    text, finish, usage, n = "", None, None, 0
    for chunk in stream:
        n += 1
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            text += c.delta.content or ""
            finish = c.finish_reason or finish
    assert n >= 3 and "Paris" in text, (n, text)
    assert finish in ("stop", "length") and usage and usage.completion_tokens > 0


def logprobs(srv):
    """logprobs through the openai package: chat's content entries (with top_logprobs), streamed
    and not, and completions' tokens / token_logprobs / top_logprobs / text_offset; greedy picks
    each position's most likely token, and the entries spell the answer."""
    c = client(srv)
    r = c.chat.completions.create(model="any", messages=MSG, max_tokens=8, temperature=0,
                                  logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens, (len(content), r.usage)
    assert "".join(e.token for e in content) == r.choices[0].message.content
    for e in content:
        assert len(e.top_logprobs) == 3 and e.top_logprobs[0].token == e.token, e
        assert e.logprob <= 0 and e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob
        assert bytes(e.bytes).decode("utf-8", "replace") == e.token
    streamed = []
    for chunk in c.chat.completions.create(model="any", messages=MSG, max_tokens=8, temperature=0,
                                           logprobs=True, top_logprobs=3, stream=True):
        for ch in chunk.choices:
            streamed += (ch.logprobs.content or []) if ch.logprobs else []
    assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in content]
    plain = c.chat.completions.create(model="any", messages=MSG, max_tokens=4, temperature=0)
    assert plain.choices[0].logprobs is None
    t = c.completions.create(model="any", prompt="The capital of France is", max_tokens=5,
                             temperature=0, logprobs=2).choices[0]
    lp = t.logprobs
    assert "".join(lp.tokens) == t.text and len(lp.token_logprobs) == len(lp.tokens)
    assert lp.text_offset == [sum(len(x) for x in lp.tokens[:i]) for i in range(len(lp.tokens))]
    assert all(len(top) <= 2 and max(top.values()) == v for top, v in zip(lp.top_logprobs, lp.token_logprobs))
    # A stop string's tokens have no entries: they spell the returned text, streamed or not.
    args = dict(model="any", prompt="1, 2, 3, 4,", max_tokens=20, temperature=0, stop=[" 7"], logprobs=1)
    t = c.completions.create(**args).choices[0]
    assert t.finish_reason == "stop" and "".join(t.logprobs.tokens) == t.text, (t.text, t.logprobs.tokens)
    chunks = [ch.choices[0] for ch in c.completions.create(**args, stream=True) if ch.choices]
    assert "".join(x for ch in chunks if ch.logprobs for x in ch.logprobs.tokens) == t.text


def completions(srv):
    c = client(srv)
    r = c.completions.create(model="any", prompt="The capital of France is", max_tokens=6, temperature=0)
    assert r.object == "text_completion" and r.choices[0].text.strip(), r
    assert r.usage.completion_tokens == 6 and r.choices[0].finish_reason == "length"
    text = "".join(ch.choices[0].text for ch in c.completions.create(
        model="any", prompt="The capital of France is", max_tokens=6, temperature=0, stream=True) if ch.choices)
    assert text == r.choices[0].text, (text, r.choices[0].text)


def stop_and_seed(srv):
    c = client(srv)
    r = c.completions.create(model="any", prompt="1, 2, 3, 4,", max_tokens=20, temperature=0, stop=[" 7"])
    assert " 7" not in r.choices[0].text and r.choices[0].finish_reason == "stop", r.choices[0].text
    # cache_prompt false: both run the whole prompt as one step (a cached prefix would run the
    # last token alone, on the decode weights, whose rounding differs from prefill's).
    seeded = dict(model="any", prompt="Once upon a time", max_tokens=12, temperature=1.0, seed=7,
                  extra_body={"cache_prompt": False})
    a = c.completions.create(**seeded)
    b = c.completions.create(**seeded)
    assert a.choices[0].text == b.choices[0].text


def lazy_extension(srv):
    doc = " ".join(f"Item {i} is stored in box {i * 7 % 13}." for i in range(60))
    msgs = [{"role": "user", "content": doc + " Where is item 5?"}]
    c = client(srv)
    full = c.chat.completions.create(model="any", messages=msgs, max_tokens=4, temperature=0,
                                     extra_body={"lazyllm": {"policy": "full"}})
    lazy = c.chat.completions.create(model="any", messages=msgs, max_tokens=4, temperature=0,
                                     extra_body={"lazyllm": {"policy": "lazy", "preset": "fast", "keep_first": 4}})
    tf, tl = full.model_extra["timings"], lazy.model_extra["timings"]
    assert tf["policy"] == "full" and tf["prefill_pct_computed"] == 100.0, tf
    assert tl["policy"] == "lazy" and tl["prefill_pct_computed"] < 60.0, tl
    sched = c.chat.completions.create(
        model="any", messages=msgs, max_tokens=2, temperature=0,
        extra_body={"lazyllm": {"schedule": {"layers": [10, 20], "keep": [0.5, 0.25], "keep_first": 0}}})
    ts = sched.model_extra["timings"]
    assert ts["schedule"].startswith("layers=10,20 keep=0.5,0.25"), ts
    status, body, _ = srv.request("POST", CHAT, {"messages": MSG, "lazyllm": {"policy": "lazy", "layers": [40], "keep": [0.5]}}, AUTH)
    expect_error(status, body, 400, param="lazyllm")
    status, body, _ = srv.request("POST", CHAT, {"messages": MSG, "lazyllm": {"policy": "sloppy"}}, AUTH)
    expect_error(status, body, 400, param="lazyllm")
    status, body, _ = srv.request("POST", CHAT, {"messages": MSG, "lazyllm": {"policy": "lazy", "preset": "turbo"}}, AUTH)
    expect_error(status, body, 400, param="lazyllm")
    # The safe preset cuts nothing under its floor of 3072 tokens; with a lower floor it cuts.
    safe = c.chat.completions.create(model="any", messages=msgs, max_tokens=2, temperature=0,
                                     extra_body={"lazyllm": {"policy": "lazy"}})
    assert safe.model_extra["timings"]["prefill_pct_computed"] == 100.0, safe.model_extra["timings"]
    low = c.chat.completions.create(model="any", messages=msgs, max_tokens=2, temperature=0,
                                    extra_body={"lazyllm": {"policy": "lazy", "min_context": 256}})
    assert low.model_extra["timings"]["prefill_pct_computed"] < 100.0, low.model_extra["timings"]


def models_and_tokens(srv):
    m = client(srv).models.list()
    assert len(m.data) == 1 and m.data[0].id
    status, body, _ = srv.request("POST", "/tokenize", {"content": "Hello world", "with_pieces": True}, AUTH)
    assert status == 200, body
    toks = json.loads(body)["tokens"]
    assert "".join(t["piece"] for t in toks) == "Hello world", toks
    status, body, _ = srv.request("POST", "/detokenize", {"tokens": [t["id"] for t in toks]}, AUTH)
    assert status == 200 and json.loads(body)["content"] == "Hello world", body
    # A character split over tokens: its pieces come as bytes, as llama-server sends them.
    toks = json.loads(srv.request("POST", "/tokenize", {"content": "\U0001F642 ok", "with_pieces": True}, AUTH)[1])["tokens"]
    raw = b"".join(bytes(t["piece"]) if isinstance(t["piece"], list) else t["piece"].encode() for t in toks)
    assert raw == "\U0001F642 ok".encode() and any(isinstance(t["piece"], list) for t in toks), toks
    expect_error(*srv.request("POST", "/detokenize", {"tokens": [1, 10 ** 7]}, AUTH)[:2], 400, param="tokens[1]")
    expect_error(*srv.request("POST", "/tokenize", {"text": "x"}, AUTH)[:2], 400, param="text")


def clients_fields(srv):
    """What OpenAI, vLLM and llama-server clients send: a model by id, a final assistant message
    to continue, hint fields, vLLM's repetition_penalty, unsigned seeds, a batch of one prompt of
    token ids, the sampled token among completions' top_logprobs, vLLM's stop_token_ids and
    min_tokens; 405 for a wrong method."""
    c = client(srv)
    model = c.models.list().data[0].id
    assert c.models.retrieve(model).id == model
    try:
        c.models.retrieve("no-such-model")
        raise AssertionError("an unknown model id was found")
    except openai.NotFoundError as e:
        assert e.body["code"] == "model_not_found", e.body
    start = "The capital of France is"
    r = c.chat.completions.create(model="any", max_tokens=6, temperature=0,
                                  messages=MSG + [{"role": "assistant", "content": start}])
    text = r.choices[0].message.content
    assert "Paris" in text and not text.startswith("The capital"), text
    fresh = c.chat.completions.create(model="any", max_tokens=6, temperature=0,
                                      messages=MSG + [{"role": "assistant", "content": start}],
                                      extra_body={"continue_final_message": False})
    assert fresh.usage.prompt_tokens > r.usage.prompt_tokens, (fresh.usage, r.usage)
    hints = c.chat.completions.create(model="any", messages=MSG, max_tokens=2, temperature=0, seed=2 ** 64 - 1,
                                      extra_body={"prompt_cache_key": "k", "safety_identifier": "u",
                                                  "verbosity": "low", "repetition_penalty": 1.1,
                                                  "stream_options": None})
    assert hints.choices[0].message.content, hints
    ids = json.loads(srv.request("POST", "/tokenize", {"content": start}, AUTH)[1])["tokens"]
    a = c.completions.create(model="any", prompt=[ids], max_tokens=4, temperature=0)
    b = c.completions.create(model="any", prompt=ids, max_tokens=4, temperature=0)
    assert a.choices[0].text == b.choices[0].text, (a.choices[0].text, b.choices[0].text)
    lp = c.completions.create(model="any", prompt=start, max_tokens=3, temperature=0, logprobs=0).choices[0].logprobs
    assert all(list(top) == [tok] for top, tok in zip(lp.top_logprobs, lp.tokens)), lp
    # vLLM's stop_token_ids end the answer before the token; min_tokens holds the end back.
    comma = [t["id"] for t in json.loads(srv.request("POST", "/tokenize", {"content": ",", "with_pieces": True},
                                                     AUTH)[1])["tokens"] if t["piece"] == ","][0]
    cut = c.completions.create(model="any", prompt="1, 2, 3, 4,", max_tokens=10, temperature=0,
                               extra_body={"stop_token_ids": [comma]}).choices[0]
    assert cut.text == " 5" and cut.finish_reason == "stop", (cut.text, cut.finish_reason)
    short = c.chat.completions.create(model="any", messages=MSG, max_tokens=40, temperature=0)
    assert short.choices[0].finish_reason == "stop" and short.usage.completion_tokens < 20, short.usage
    held = c.chat.completions.create(model="any", messages=MSG, max_tokens=40, temperature=0,
                                     extra_body={"min_tokens": 20})
    assert held.usage.completion_tokens >= 20, held.usage
    expect_error(*srv.request("POST", CHAT, {"messages": MSG, "max_tokens": 4, "min_tokens": 5}, AUTH)[:2],
                 400, param="min_tokens")
    # JSON mode: the answer is a JSON object (the turn ends when it closes).
    closed = 0
    for seed in (1, 2, 3):
        r = c.chat.completions.create(model="any", max_tokens=120, temperature=0.7, seed=seed,
                                      response_format={"type": "json_object"},
                                      messages=[{"role": "user", "content":
                                                 "Give the name and the capital of France as JSON."}])
        text = r.choices[0].message.content
        if r.choices[0].finish_reason == "stop":
            assert isinstance(json.loads(text), dict), text
            closed += 1
        else:
            assert r.choices[0].finish_reason == "length" and text.lstrip().startswith("{"), text
    assert closed >= 1, "no answer in JSON mode closed its object"  # 3 of 3 on Zen 3
    # JSON mode continuing a final assistant message: the answer goes on from its text (once it
    # opened a second object after it); text that starts no object is a 400.
    start = '{"name": "Bo'
    ask = [{"role": "user", "content": "Give a name and an age as JSON."}]
    for seed in (1, 2):
        r = c.chat.completions.create(model="any", max_tokens=120, temperature=0.7, seed=seed,
                                      response_format={"type": "json_object"},
                                      messages=ask + [{"role": "assistant", "content": start}])
        text = start + r.choices[0].message.content
        if r.choices[0].finish_reason == "stop":
            assert isinstance(json.loads(text), dict), text
        else:
            assert "{" not in r.choices[0].message.content.lstrip()[:1], text
    status, body, _ = srv.request("POST", CHAT, {"messages": ask + [{"role": "assistant", "content": "Sure:"}],
                                                 "response_format": {"type": "json_object"}}, AUTH)
    expect_error(status, body, 400, param="messages")
    status, body, h = srv.request("GET", CHAT, None, AUTH)
    expect_error(status, body, 405, code="method_not_allowed")
    assert h["allow"].startswith("POST"), h
    expect_error(*srv.request("POST", "/v1/models", {}, AUTH)[:2], 405)
    # A body the library cannot read (a malformed chunk, an encoding it lacks): a POST route asked
    # with PUT is a 405 too (the library's bare 400 was), and a POST is a 400 that says why.
    for enc in ("Transfer-Encoding: chunked\r\n\r\nzz\r\n", "Content-Encoding: br\r\nContent-Length: 2\r\n\r\n{}"):
        head = f" {CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nConnection: close\r\n"
        expect_error(*raw(srv, "PUT" + head + enc), 405)
        err = expect_error(*raw(srv, "POST" + head + enc), 400)
        assert "could not be read" in err["message"], err
    # 404s and 405s are counted (under "other" for a path no route serves).
    srv.request("GET", "/v1/nowhere", None, AUTH)
    text = srv.request("GET", "/metrics", None, AUTH)[1]
    assert 'endpoint="other",status="404"' in text and 'status="405"' in text, text[:2000]


def timeout_not_retried(lazyllm):
    """A request past --timeout is a 408 that OpenAI's SDKs do not send again."""
    with Server(lazyllm, "--ctx-size", "512", "--parallel", "1", "--timeout", "1", log_name="timeout") as one:
        body = {"messages": MSG, "max_tokens": 400, "ignore_eos": True, "temperature": 0}
        status, text, h = one.request("POST", CHAT, body, {"Content-Type": "application/json"})
        expect_error(status, text, 408, code="timeout")
        assert h.get("x-should-retry") == "false", h
        # Streamed, the 200 goes out first and the timeout comes as an error in the stream; the
        # metrics count the request by how it ended.
        status, text, _ = one.request("POST", CHAT, dict(body, stream=True), {"Content-Type": "application/json"})
        assert status == 200 and '"code":"timeout"' in text.replace(" ", "") and text.endswith("data: [DONE]\n\n"), text[-300:]
        t0 = time.time()  # a stream counts once its connection's handler is done with it
        want = 'endpoint="/v1/chat/completions",status="408"} 2'
        while want not in (m := one.request("GET", "/metrics")[1]):
            assert time.time() - t0 < 3.0, [l for l in m.splitlines() if "requests_total" in l]
            time.sleep(0.05)
        assert 'endpoint="/v1/chat/completions",status="200"}' not in m, m
    r = subprocess.run([lazyllm, "serve", "--port", "0", "-c", "1"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "-c 1" in r.stderr, (r.returncode, r.stderr)


def malformed(srv):
    cases = [
        (b"{not json", None, "invalid_json"),
        (b"[1, 2]", None, "invalid_json"),
        ({"messages": "hi"}, "messages", None),
        ({"messages": []}, "messages", None),
        ({"messages": [{"role": "user"}]}, "messages[0].content", None),
        ({"messages": [{"role": "user", "content": None}]}, "messages[0].content", None),
        ({"messages": [{"role": "pirate", "content": "x"}]}, "messages[0].role", None),
        ({"messages": MSG, "max_tokens": "ten"}, "max_tokens", None),
        ({"messages": MSG, "max_tokens": 0}, "max_tokens", None),
        ({"messages": MSG, "temperature": -1}, "temperature", None),
        ({"messages": MSG, "top_p": 2}, "top_p", None),
        ({"messages": MSG, "top_k": 1.5}, "top_k", None),
        ({"messages": MSG, "stop": {"a": 1}}, "stop", None),
        ({"messages": MSG, "stream": 1}, "stream", None),
        ({"messages": MSG, "frobnicate": True}, "frobnicate", "unknown_field"),
        ({"messages": MSG, "n": 2}, "n", "unsupported"),
        ({"messages": MSG, "tools": [{"type": "function", "function": {"name": "f"}}]}, "tools", "unsupported"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]},
         "messages[0].content[0]", "unsupported"),
        ({"messages": MSG, "max_tokens": CTX + 1}, "max_tokens", None),
        ({"messages": MSG, "max_completion_tokens": CTX - 5}, "max_completion_tokens", "context_length_exceeded"),
        ({"messages": [{"role": "user", "content": "word " * (CTX + 100)}]}, "messages", "context_length_exceeded"),
        # A byte SmolLM2's vocabulary has no token for (the tokenizer would drop it).
        ({"messages": [MSG[0], {"role": "assistant", "content": "ok"},
                       {"role": "user", "content": "a\u0004b"}]}, "messages[2].content", None),
    ]
    for body, param, code in cases:
        status, text, _ = srv.request("POST", CHAT, body, AUTH)
        expect_error(status, text, 400, param=param, code=code)
    status, text, _ = srv.request("POST", "/v1/completions", {"prompt": "x " * (CTX + 10)}, AUTH)
    expect_error(status, text, 400, param="prompt", code="context_length_exceeded")
    status, text, _ = srv.request("POST", "/v1/completions", {"prompt": "x\u001dy"}, AUTH)
    expect_error(status, text, 400, param="prompt")
    assert "byte 0x1D at offset 1" in text, text
    status, text, _ = srv.request("POST", "/v1/completions", {"prompt": "x", "echo": True}, AUTH)
    expect_error(status, text, 400, param="echo", code="unsupported")
    # Through the openai package: a BadRequestError carrying the same object.
    try:
        client(srv).chat.completions.create(model="any", messages=MSG, n=3)
        raise AssertionError("n=3 was accepted")
    except openai.BadRequestError as e:
        assert e.status_code == 400 and e.body["param"] == "n", e.body


def auth_and_limits(srv):
    status, body, _ = srv.request("POST", CHAT, {"messages": MSG}, {"Content-Type": "application/json"})
    expect_error(status, body, 401, code="invalid_api_key")
    status, body, _ = srv.request("GET", "/v1/models", None, {"Authorization": "Bearer wrong"})
    expect_error(status, body, 401)
    for near in (KEY[:-1], KEY + "x", ""):  # a prefix, a longer key, none
        status, body, _ = srv.request("GET", "/v1/models", None, {"Authorization": f"Bearer {near}"})
        expect_error(status, body, 401)
    # The scheme's case is free and spaces may repeat (RFC 9110, 11.1); X-Api-Key works too.
    for header in ({"Authorization": f"bearer {KEY}"}, {"Authorization": f"BEARER   {KEY}"},
                   {"X-Api-Key": KEY}):
        assert srv.request("GET", "/v1/models", None, header)[0] == 200, header
    try:
        openai.OpenAI(base_url=srv.base + "/v1", api_key="wrong", max_retries=0).models.list()
        raise AssertionError("a wrong key was accepted")
    except openai.AuthenticationError:
        pass
    assert srv.request("GET", "/health")[0] == 200  # open without the key
    status, page, headers = srv.request("GET", "/")
    assert status == 200 and "<html" in page and "text/html" in headers["content-type"]
    big = json.dumps({"messages": [{"role": "user", "content": "x" * (MAX_BODY + 10)}]})
    status, body, _ = srv.request("POST", CHAT, big, AUTH)
    expect_error(status, body, 413)
    # The limit holds for a body without a Content-Length (chunked) and for a gzip body by its
    # inflated size: both were once read whole (a 29 KB gzip of 30 MB was inflated and parsed).
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    try:
        pieces = (big[i:i + 4096].encode() for i in range(0, len(big), 4096))
        conn.request("POST", CHAT, body=pieces, headers=AUTH, encode_chunked=True)
        r = conn.getresponse()
        expect_error(r.status, r.read().decode(), 413)
    finally:
        conn.close()
    status, body, _ = srv.request("POST", CHAT, gzip.compress(big.encode()),
                                  {**AUTH, "Content-Encoding": "gzip"})
    expect_error(status, body, 413)
    small = json.dumps({"content": "word " * 50}).encode()
    status, body, _ = srv.request("POST", "/tokenize", gzip.compress(small),
                                  {**AUTH, "Content-Encoding": "gzip"})
    assert status == 200 and len(json.loads(body)["tokens"]) >= 50, (status, body[:200])
    status, body, _ = srv.request("GET", "/v1/nothing", None, AUTH)
    expect_error(status, body, 404)
    # JSON over 8 KiB sent as curl -d sends it (form-urlencoded): read as JSON, not refused.
    form = {"Authorization": AUTH["Authorization"], "Content-Type": "application/x-www-form-urlencoded"}
    status, body, _ = srv.request("POST", "/tokenize", json.dumps({"content": "word " * 2000}), form)
    assert status == 200 and len(json.loads(body)["tokens"]) >= 2000, (status, body[:200])
    # A path nobody is authorized for is not a metrics label (it once wrote into /metrics).
    status, body, _ = srv.request("GET", "/x%22%7D%201e9%0Afake_metric%7Ba%3D%22b")
    expect_error(status, body, 401)
    status, text, _ = srv.request("GET", "/metrics", None, AUTH)
    assert "fake_metric" not in text and 'endpoint="other",status="401"' in text, text[:2000]


def metrics(srv):
    status, text, _ = srv.request("GET", "/metrics", None, AUTH)
    assert status == 200, text
    for name in ("lazyllm_requests_total{", "lazyllm_prompt_tokens_total", "lazyllm_generated_tokens_total",
                 "lazyllm_prompt_tokens_cached_total", "lazyllm_ttft_seconds_bucket{le=\"+Inf\"}",
                 "lazyllm_prefill_computed_ratio", "lazyllm_queue_depth", "lazyllm_slots_busy"):
        assert name in text, name
    gen = [l for l in text.splitlines() if l.startswith("lazyllm_generated_tokens_total ")]
    assert float(gen[0].split()[1]) > 0, gen


def raw(srv, text):
    """One request written as raw bytes (the server closes after it): (status, body)."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    try:
        s.sendall(text.encode())
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    finally:
        s.close()
    head, _, body = got.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode("utf-8", "replace")


def count_499(srv):
    m = srv.request("GET", "/metrics", None, AUTH)[1]
    key = 'lazyllm_requests_total{endpoint="/v1/chat/completions",status="499"} '
    return sum(int(l[len(key):]) for l in m.splitlines() if l.startswith(key))


def disconnect_cancels(srv):
    """A streaming client that goes away frees its slot long before its 1000 tokens are made;
    the metrics count it (and the non-streamed one) as 499, not as the 200 its headers said."""
    t0 = time.time()
    while json.loads(srv.request("GET", "/health")[1])["slots_busy"] != 0:  # earlier checks' streams
        assert time.time() - t0 < 10.0
        time.sleep(0.05)
    time.sleep(0.3)
    gone_before = count_499(srv)
    body = json.dumps({"messages": MSG, "max_tokens": 1000, "ignore_eos": True, "stream": True, "temperature": 0})
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall((f"POST {CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
    got = b""
    while got.count(b"data: ") < 3:
        got += s.recv(4096)
    assert json.loads(srv.request("GET", "/health")[1])["slots_busy"] == 1
    s.close()
    t0 = time.time()
    while json.loads(srv.request("GET", "/health")[1])["slots_busy"] != 0:
        assert time.time() - t0 < 3.0, "the slot is still busy 3 s after the client left"
        time.sleep(0.05)
    t0 = time.time()
    while count_499(srv) < gone_before + 1:
        assert time.time() - t0 < 3.0, (gone_before, count_499(srv))
        time.sleep(0.05)
    # The same for a non-streaming request.
    body = json.dumps({"messages": MSG, "max_tokens": 1000, "ignore_eos": True, "temperature": 0})
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall((f"POST {CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
    t0 = time.time()
    while json.loads(srv.request("GET", "/health")[1])["slots_busy"] != 1:
        assert time.time() - t0 < 5.0
        time.sleep(0.02)
    s.close()
    t0 = time.time()
    while json.loads(srv.request("GET", "/health")[1])["slots_busy"] != 0:
        assert time.time() - t0 < 3.0, "the slot is still busy 3 s after the client left"
        time.sleep(0.05)
    t0 = time.time()
    while count_499(srv) < gone_before + 2:
        assert time.time() - t0 < 3.0, (gone_before, count_499(srv))
        time.sleep(0.05)


def batched_equals_alone(srv):
    """Two streams decoding together (one batched forward per step) answer as each alone."""
    import concurrent.futures as cf
    c = client(srv)
    prompts = ["Write a poem about the sea.", "List some fruits."]

    def ask(p):
        r = c.chat.completions.create(model="any", messages=[{"role": "user", "content": p}], max_tokens=24,
                                      temperature=0, extra_body={"ignore_eos": True, "cache_prompt": False})
        return r.choices[0].message.content
    alone = [ask(p) for p in prompts]
    with cf.ThreadPoolExecutor(2) as ex:
        together = list(ex.map(ask, prompts))
    assert together == alone, (together, alone)


def cors(srv, lazyllm):
    """Pages of other origins: any by default (as llama-server), a listed few, or none."""
    pre = {"Origin": "http://page.example", "Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "authorization,content-type"}
    status, _, h = srv.request("OPTIONS", CHAT, headers=pre)  # no key: browsers never send it here
    assert status == 204 and h.get("access-control-allow-origin") == "*", (status, h)
    assert "POST" in h["access-control-allow-methods"], h
    assert h["access-control-allow-headers"] == "authorization,content-type", h
    # The 401 and the answer reach the page too.
    status, _, h = srv.request("GET", "/v1/models", headers={"Origin": "http://page.example"})
    assert status == 401 and h.get("access-control-allow-origin") == "*", (status, h)
    status, _, h = srv.request("POST", CHAT, {"messages": MSG, "max_tokens": 1},
                               {**AUTH, "Origin": "http://page.example"})
    assert status == 200 and h.get("access-control-allow-origin") == "*", (status, h)
    status, _, h = srv.request("GET", "/v1/models", headers=AUTH)  # no Origin: no CORS headers
    assert status == 200 and "access-control-allow-origin" not in h, h
    with Server(lazyllm, "--ctx-size", "512", "--parallel", "1", "--api-key", KEY,
                "--cors-origins", "http://localhost:3000, https://chat.example", log_name="cors") as one:
        status, _, h = one.request("OPTIONS", CHAT, headers={**pre, "Origin": "https://chat.example"})
        assert status == 204 and h.get("access-control-allow-origin") == "https://chat.example", h
        assert h.get("vary") == "Origin", h
        status, body, h = one.request("OPTIONS", CHAT, headers=pre)
        expect_error(status, body, 403)
        assert "http://page.example" in body and "access-control-allow-origin" not in h, (body, h)
        status, _, h = one.request("GET", "/v1/models", headers={**AUTH, "Origin": "http://page.example"})
        assert status == 200 and "access-control-allow-origin" not in h, h  # the browser keeps it out
    r = subprocess.run([lazyllm, "serve", "--port", "0", "--cors-origins", "localhost:3000"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "'localhost:3000' is not an origin" in r.stderr, (r.returncode, r.stderr)


def flags_under_fields(lazyllm):
    """A request's lazyllm fields go on top of serve's pruning flags, field by field."""
    doc = " ".join(f"Item {i} is stored in box {i * 7 % 13}." for i in range(60))  # ~700 tokens
    msgs = [{"role": "user", "content": doc + " Where is item 5?"}]
    with Server(lazyllm, "--ctx-size", "2048", "--parallel", "1", "--lazy", "--lazy-min-context", "256",
                log_name="flags") as one:
        c = client(one)

        def computed(extra):
            r = c.chat.completions.create(model="any", messages=msgs, max_tokens=1, temperature=0,
                                          extra_body={**extra, "cache_prompt": False})
            return r.model_extra["timings"]["prefill_pct_computed"]
        assert computed({}) < 100.0  # the server's default: its floor of 256, not the preset's
        assert computed({"lazyllm": {"policy": "lazy"}}) < 100.0  # the floor kept
        assert computed({"lazyllm": {"keep_recent": 16}}) < 100.0
        assert computed({"lazyllm": {"min_context": 4096}}) == 100.0  # the request's own floor
        assert computed({"lazyllm": {"policy": "full"}}) == 100.0


def one_openmp_pool(srv):
    """Generation's parallel regions have the cores to themselves: the OpenMP workers are the
    scheduler's (named after it), and none is left from the load or the main thread. A pool
    left from the load made libgomp stop spin-waiting and decode at a quarter of the rate."""
    n_threads = int(re.search(r"loaded in \d+ ms \([^,]+, (\d+) threads\)", srv.read_log()).group(1))
    task = f"/proc/{srv.proc.pid}/task"
    names = []
    for tid in os.listdir(task):
        try:
            with open(f"{task}/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # a connection thread that just retired
    assert names.count("lazyllm") == 1, names  # the main thread alone
    assert "lazyllm-load" not in names, names
    assert 1 <= names.count("lazyllm-sched") <= n_threads, (n_threads, names)
    assert set(names) <= {"lazyllm", "lazyllm-sched", "lazyllm-http", "lazyllm-listen", "lazyllm-signal"}, names


def port_taken(srv, lazyllm):
    """A second server on a port another one listens on exits with an error naming the port,
    instead of sharing the port (cpp-httplib's default SO_REUSEPORT) and its clients."""
    cmd = [lazyllm, "serve", "--host", "127.0.0.1", "--port", str(srv.port)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"a second server on port {srv.port} kept running")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"cannot listen on 127.0.0.1:{srv.port}: Address already in use" in r.stderr, r.stderr


def run(lazyllm, checks):
    with Server(lazyllm, "--ctx-size", str(CTX), "--parallel", "2", "--queue", "8", "--api-key", KEY,
                "--max-body", str(MAX_BODY), log_name="api") as srv:
        for name, check in (("chat (openai package)", chat_basic),
                            ("chat streaming with include_usage", chat_stream),
                            ("completions, streamed and not", completions),
                            ("logprobs, chat and completions, streamed and not", logprobs),
                            ("stop strings and seeds", stop_and_seed),
                            ("lazyllm extension: policy, schedule, errors", lazy_extension),
                            ("models, tokenize, detokenize", models_and_tokens),
                            ("what OpenAI, vLLM and llama-server clients send", clients_fields),
                            ("malformed requests: 400 naming the field", malformed),
                            ("api key 401, body limit 413, 404, page", auth_and_limits),
                            ("batched decode of two streams equals each alone", batched_equals_alone),
                            ("client disconnect frees the slot", disconnect_cancels),
                            ("metrics", metrics),
                            ("one OpenMP pool, the scheduler's", one_openmp_pool)):
            checks.run(name, check, srv)
        checks.run("CORS: any origin by default, a listed few, preflight without the key", cors, srv, lazyllm)
        checks.run("a second server on the same port: an error naming it", port_taken, srv, lazyllm)
        checks.run("a request's lazyllm fields over serve's pruning flags", flags_under_fields, lazyllm)
        checks.run("--timeout: 408 not retried; -c 1 refused", timeout_not_retried, lazyllm)
        assert srv.alive(), srv.read_log()
