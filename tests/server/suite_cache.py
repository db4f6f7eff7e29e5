"""The multi-turn cache: turn 2 of a chat reuses turn 1's session (the response's cached-token
count says so) and answers as a replay of the session on a fresh server does (and, under the
full policy, as a cold run of the turn-2 prompt); a request that diverges truncates at the
common prefix; requests go to the slot with the longest common prefix."""
import openai

from server_harness import Server

FACTS = [("Mira", "violin"), ("Tomas", "chess"), ("Aiko", "rowing"), ("Lena", "pottery"),
         ("Ravi", "astronomy"), ("Olga", "fencing")]


def document():
    lines = []
    for i in range(24):
        name, hobby = FACTS[i % len(FACTS)]
        lines.append(f"Note {i}: the weather on day {i} was mild, and the market sold {i * 3} apples.")
        if i % 4 == 1:
            lines.append(f"Fact: {name}'s favourite hobby is {hobby}.")
    return "\n".join(lines)


def chat(c, messages, policy, cache=True, max_tokens=24):
    r = c.chat.completions.create(model="any", messages=messages, max_tokens=max_tokens, temperature=0,
                                  extra_body={"lazyllm": {"policy": policy}, "cache_prompt": cache})
    return r.choices[0].message.content, r.usage, r.model_extra["timings"]


def turns(policy):
    doc = document()
    m1 = [{"role": "user", "content": doc + "\n\nWhat is Mira's favourite hobby?"}]
    return m1, lambda a1, q: m1 + [{"role": "assistant", "content": a1}, {"role": "user", "content": q}]


FLAGS = ("--ctx-size", "4096", "--parallel", "2", "--decode-weights", "gemm")


def second_turn_reuses(c, policy, exact, lazyllm):
    m1, follow = turns(policy)
    a1, u1, _ = chat(c, m1, policy)
    m2 = follow(a1, "And what is Ravi's favourite hobby?")
    a2, u2, t2 = chat(c, m2, policy)
    cached = u2.prompt_tokens_details.cached_tokens
    # Turn 1's prompt and its answer (all but tokens the re-tokenized text may split otherwise).
    assert cached >= u1.prompt_tokens + u1.completion_tokens - 2, (cached, u1)
    assert t2["cache_n"] == cached and t2["prompt_n"] == u2.prompt_tokens - cached, t2
    cold, uc, tc = chat(c, m2, policy, cache=False)
    assert uc.prompt_tokens_details.cached_tokens == 0 and tc["prompt_n"] == uc.prompt_tokens
    print(f"        {policy}: turn 1 {u1.prompt_tokens} tokens; turn 2 {u2.prompt_tokens} tokens, "
          f"{cached} cached, TTFT {t2['ttft_ms']:.0f} ms vs cold {tc['ttft_ms']:.0f} ms; "
          f"answers {'equal' if a2 == cold else 'differ'}: {a2!r} / {cold!r}", flush=True)
    if exact:
        assert a2 == cold, (a2, cold)
    # Replaying the session cold, on a fresh server (turn 1 from an empty cache, then turn 2
    # over it), gives the same answers: nothing else a slot held leaks into a turn.
    with Server(lazyllm, *FLAGS, log_name="cache-replay") as fresh:
        f = openai.OpenAI(base_url=fresh.base + "/v1", api_key="none", max_retries=0, timeout=120)
        b1, _, _ = chat(f, m1, policy)
        assert b1 == a1, (b1, a1)
        b2, ub2, _ = chat(f, m2, policy)
        assert ub2.prompt_tokens_details.cached_tokens == cached, (ub2, cached)
        assert b2 == a2, (b2, a2)


def divergent_truncates(c):
    m1, follow = turns("full")
    a1, u1, _ = chat(c, m1, "full")
    chat(c, follow(a1, "And what is Ravi's favourite hobby?"), "full")
    m3 = follow(a1, "Which hobby does Tomas have?")  # same prefix, different question
    a3, u3, _ = chat(c, m3, "full")
    cached = u3.prompt_tokens_details.cached_tokens
    assert u1.prompt_tokens <= cached < u3.prompt_tokens - 3, (cached, u1.prompt_tokens, u3.prompt_tokens)
    cold, _, _ = chat(c, m3, "full", cache=False)
    assert a3 == cold, (a3, cold)
    # A shorter prompt that is a prefix of the cache: truncated, still answered.
    a4, u4, _ = chat(c, m1, "full")
    assert a4 == a1 and u4.prompt_tokens_details.cached_tokens == u4.prompt_tokens - 1, u4


def routes_to_longest_prefix(c):
    """Two conversations interleaved on two slots: each follow-up finds its own cache."""
    convs = []
    for who in ("Aiko", "Lena"):
        m1 = [{"role": "user", "content": document() + f"\n\nWhat is {who}'s favourite hobby? ({who})"}]
        a1, u1, _ = chat(c, m1, "full", max_tokens=8)
        convs.append((m1, a1, u1))
    for m1, a1, u1 in convs:
        m2 = m1 + [{"role": "assistant", "content": a1}, {"role": "user", "content": "Are you sure?"}]
        _, u2, _ = chat(c, m2, "full", max_tokens=4)
        assert u2.prompt_tokens_details.cached_tokens >= u1.prompt_tokens, (u2, u1)


def shared_prefix_answers_as_cold(lazyllm):
    """On the default decode weights (the GGUF's blocks): a prompt that continues another
    request's prompt, here the same question about another number, answers as that prompt run
    cold, log-probabilities to the bit: the suffix's step gives its rows a cold prefill's
    values (the row-invariant prompt step). Before, the bf16 tiles took the cold prompt's
    attention and fp32 kernels the short suffix's, which turned one answer's 8th token."""
    with Server(lazyllm, "--ctx-size", "2048", "--parallel", "1", log_name="cache-prefix") as srv:
        c = openai.OpenAI(base_url=srv.base + "/v1", api_key="none", max_retries=0, timeout=120)

        def ask(n, cache):
            r = c.chat.completions.create(
                model="any", max_tokens=16, temperature=0, logprobs=True,
                messages=[{"role": "user", "content": f"Write a short sentence about the number {n}."}],
                extra_body={"cache_prompt": cache})
            return [(t.token, t.logprob) for t in r.choices[0].logprobs.content], r.usage

        cold, _ = ask(2, False)
        ask(1, True)
        warm, usage = ask(2, True)
        cached = usage.prompt_tokens_details.cached_tokens
        assert 0 < cached < usage.prompt_tokens - 1, usage
        assert warm == cold, (warm, cold)


def run(lazyllm, checks):
    # Decode steps on the GEMM weights, as prefill: the answer tokens' KV, made by turn 1's
    # decode steps, is then the same arithmetic as a cold prefill of them (on the 4-bit decode
    # weights it differs by rounding, which may flip a greedy token).
    with Server(lazyllm, *FLAGS, log_name="cache") as srv:
        c = openai.OpenAI(base_url=srv.base + "/v1", api_key="none", max_retries=0, timeout=120)
        checks.run("full: turn 2 reuses turn 1, equals a cold run and a fresh replay", second_turn_reuses, c, "full", True, lazyllm)
        checks.run("lazy: turn 2 reuses turn 1 (revival) and equals a fresh replay", second_turn_reuses, c, "lazy", False, lazyllm)
        checks.run("a divergent request truncates at the common prefix", divergent_truncates, c)
        checks.run("requests go to the slot with the longest prefix", routes_to_longest_prefix, c)
        assert srv.alive(), srv.read_log()
    checks.run("a prompt over another's cached prefix answers as cold (4-bit decode weights)",
               shared_prefix_answers_as_cold, lazyllm)
