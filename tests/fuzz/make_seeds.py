#!/usr/bin/env python3
"""Writes the committed seed corpus of tests/fuzz (docs/fuzzing.md). Standard library only;
run from anywhere: python3 tests/fuzz/make_seeds.py. GGUF layout: the GGUF spec (ggml
docs/gguf.md), v3 little-endian, alignment 32."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)


def gstr(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value):
    out = gstr(key) + struct.pack("<I", vtype)
    if vtype == ARR:
        etype, items = value
        out += struct.pack("<IQ", etype, len(items))
        for it in items:
            out += scalar(etype, it)
    else:
        out += scalar(vtype, value)
    return out


def scalar(t, v):
    fmt = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
           BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
    return gstr(v) if t == STR else struct.pack(fmt[t], v)


def gguf(kvs, tensors, version=3):
    """tensors: (name, ggml type, shape, data bytes)."""
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    infos, data, off = b"", b"", 0
    for name, ttype, shape, blob in tensors:
        infos += gstr(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape)
        infos += struct.pack("<IQ", ttype, off)
        pad = (-len(blob)) % 32
        data += blob + b"\0" * pad
        off += len(blob) + pad
    body = head + infos
    body += b"\0" * ((-len(body)) % 32)
    return body + data


def byte_tokens():
    keep = set(range(33, 127)) | set(range(161, 173)) | set(range(174, 256))
    out, n = [], 0
    for b in range(256):
        if b in keep:
            out.append(chr(b))
        else:
            out.append(chr(256 + n))
            n += 1
    return out


def vocab_kvs(template):
    toks = byte_tokens() + ["he", "\u0120t", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    types = [1] * 258 + [3, 3, 3]
    return [
        kv("general.architecture", STR, "llama"),
        kv("tokenizer.ggml.model", STR, "gpt2"),
        kv("tokenizer.ggml.pre", STR, "smollm"),
        kv("tokenizer.ggml.tokens", ARR, (STR, toks)),
        kv("tokenizer.ggml.token_type", ARR, (I32, types)),
        kv("tokenizer.ggml.merges", ARR, (STR, ["h e", "\u0120 t"])),
        kv("tokenizer.ggml.eos_token_id", U32, 258),
        kv("tokenizer.chat_template", STR, template),
    ]


def write(folder, name, data):
    with open(os.path.join(CORPUS, folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def main():
    chatml = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    vocab = gguf(vocab_kvs(chatml), [])
    write("gguf_reader", "vocab.gguf", vocab)
    every_type = [
        kv("general.architecture", STR, "llama"), kv("general.alignment", U32, 32),
        kv("a.u8", U8, 7), kv("a.i8", I8, -7), kv("a.u16", U16, 700), kv("a.i16", I16, -700),
        kv("a.i32", I32, -70000), kv("a.f32", F32, 0.5), kv("a.bool", BOOL, True),
        kv("a.u64", U64, 1 << 40), kv("a.i64", I64, -(1 << 40)), kv("a.f64", F64, 2.5),
        kv("a.arr", ARR, (F32, [1.0, 2.0, 3.0])), kv("a.strs", ARR, (STR, ["x", "yz"])),
    ]
    tensors = [
        ("w.f32", 0, [4, 2], struct.pack("<8f", *range(8))),
        ("w.f16", 1, [4], struct.pack("<4e", 1, 2, 3, 4)),
        ("w.q8_0", 8, [32], struct.pack("<e", 0.1) + bytes(range(32))),
    ]
    write("gguf_reader", "tensors.gguf", gguf(every_type, tensors))
    write("gguf_reader", "v2.gguf", gguf(every_type[:3], tensors[:1], version=2))
    write("gguf_reader", "truncated.gguf", vocab[: len(vocab) // 2])

    texts = {
        "ascii.txt": "The capital of France is Paris.",
        "invalid_utf8.txt": b"a\xffb \xc3 \xe2\x82 \xf0\x9f\x99 \xed\xa0\x80 end\xc0\xaf",
        "unicode.txt": "h\u00e9llo \u65e5\u672c\u8a9e \U0001F642 caf\u00e9  \u00a0x",
        "special.txt": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<|endoftext|><|im_",
        "digits_space.txt": "12345 67,890.12\n\n\t  trailing   \r\n",
        "contractions.txt": "I'm sure you'll see they've it's don't WE'LL",
    }
    for name, t in texts.items():
        write("tokenizer", name, t)

    llama3 = "<|start_header_id|>{{ role }}<|end_header_id|>{{ content }}<|eot_id|>"
    gemma = "<start_of_turn>user\n{{ content }}<end_of_turn>"
    llama2 = "[INST] <<SYS>>{{ system }}<</SYS>> {{ content }} [/INST]"
    llama31 = llama3 + "Cutting Knowledge Date: December 2023\nToday Date: {{ strftime_now('%d') }}"
    mistral_v1 = "{{ ' [INST] ' + system_message + '\\n\\n' + content + ' [/INST]' }}"
    mistral_v3 = '[AVAILABLE_TOOLS]{{ "[INST] " + content + "[/INST]" }}'
    phi3 = "<|user|>\n{{ content }}<|end|>\n<|assistant|>\n"
    qwen3 = chatml + "{% set last_query_index = 0 %}</think>{% if enable_thinking %}{% endif %}"
    qwen25 = "{{ '<|im_start|>system\\nYou are Qwen.<|im_end|>\\n' }}" + chatml
    for name, (flag, tpl, arch) in {
        "chatml": (0, chatml, "llama"), "llama3": (1, llama3, "llama"), "gemma": (1, gemma, "gemma3"),
        "llama2": (0, llama2, "llama"), "none_llama": (0, "", "llama"), "none_qwen": (1, "", "qwen2"),
        "llama31": (1, llama31, "llama"), "mistral_v1": (0, mistral_v1, "llama"),
        "mistral_v3": (1, mistral_v3, "llama"), "phi3": (0, phi3, "phi3"),
        "qwen3": (1, qwen3, "qwen3"), "qwen25": (0, qwen25, "qwen2"),
        "unknown": (1, "{{ 'USER: ' + content }}", "mistral"),
    }.items():
        write("chat_template", name, bytes([flag]) + "\0".join([tpl, arch, "Be brief.", "Hi <|im_end|> \xff"]).encode("utf-8", "surrogateescape"))

    sched_dir = os.path.join(HERE, "..", "..", "schedules")
    for f in sorted(os.listdir(sched_dir)):
        with open(os.path.join(sched_dir, f), "rb") as src:
            write("schedule_file", f, bytes([30]) + src.read())
    good = {"layers": [9, 19, 28], "keep": [0.5, 0.25, 0.1], "keep_first": 4, "meta": {"x": 1}}
    write("schedule_file", "layers_keep.json", bytes([32]) + json.dumps(good).encode())
    write("schedule_file", "wrong_size.json", bytes([10]) + json.dumps({"layers": [9, 19], "keep": [0.5]}).encode())
    write("schedule_file", "malformed.json", bytes([30]) + b'{"layers": [9, 19, "keep": 0.5')
    write("schedule_file", "flags.txt", bytes([30]) + b"0.3,0.6,0.9\n0.5,0.25,0.1")


if __name__ == "__main__":
    main()
