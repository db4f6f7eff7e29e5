#!/usr/bin/env python3
"""Dump reference token ids of the default model's tokenizer for lazyllm's tokenizer tests.

Loads the SAME GGUF that the C++ test loads and tokenizes a fixed set of varied strings two ways:

  1. `tokenizers` (HF's Rust library) with the vocabulary and merges read from the GGUF and the
     pre-tokenizer of SmolLM2's own tokenizer.json on the HF hub:
         Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False)]
     (llama.cpp maps tokenizer.ggml.pre = "smollm" to the same two splits: "\\p{N}" then the
     GPT-2 regex; see LLAMA_VOCAB_PRE_TYPE_SMOLLM in llama-vocab.cpp). This is the reference
     written to the golden file.
  2. transformers' GGUF loader (AutoTokenizer.from_pretrained(dir, gguf_file=name)), which in
     4.46 rebuilds the tokenizer through GGUFLlamaConverter: a plain ByteLevel pre-tokenizer
     *without* the Digits split, byte_fallback, and add_bos_token forced on. Its ids are compared
     (with add_special_tokens=False) and every disagreement is reported on stderr; the golden
     file never takes them.

Outputs: tests/golden/tokenizer_smollm2_chat.json (the GGUF's chat template rendered by
transformers on a few conversations, with their ids) and tests/golden/tokenizer_smollm2.jsonl,
one JSON object per line:
    {"text": str, "parse_special": bool, "ids": [int, ...], "roundtrip": bool}
parse_special=false means special-token texts are encoded as plain text
(tokenizers: encode_special_tokens=True); true means they become their ids. roundtrip says
whether the reference decodes the ids back to the text (false only where a byte has no token).

With --gemma PATH it also writes tests/golden/tokenizer_gemma3.jsonl: the Gemma 3 270M GGUF's
SentencePiece vocabulary run through the sentencepiece library (see write_gemma_golden).

usage: .venv-ref/bin/python scripts/golden_tokenizer.py [--model PATH] [--out PATH]
           [--gemma ~/.cache/lazyllm/models/gemma-3-270m-q4_k_m.gguf]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def default_model_path():
    out = subprocess.run([sys.executable, os.path.join(HERE, "fetch_model.py")],
                         check=True, capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1]


def gguf_tokenizer_fields(path):
    from gguf import GGUFReader

    r = GGUFReader(path)

    def strings(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    def ints(key):
        f = r.fields[key]
        return [int(f.parts[i][0]) for i in f.data]

    def string(key):
        return strings(key)[0]

    return {
        "model": string("tokenizer.ggml.model"),
        "pre": string("tokenizer.ggml.pre"),
        "tokens": strings("tokenizer.ggml.tokens"),
        "token_type": ints("tokenizer.ggml.token_type"),
        "merges": strings("tokenizer.ggml.merges"),
    }


def build_reference(fields):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    assert fields["model"] == "gpt2" and fields["pre"] == "smollm", fields["pre"]
    vocab = {t: i for i, t in enumerate(fields["tokens"])}
    merges = [tuple(m.split(" ", 1)) for m in fields["merges"]]
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    specials = [t for t, ty in zip(fields["tokens"], fields["token_type"]) if ty == 3]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return tok


def test_strings():
    s = []
    # English prose
    s += [
        "Hello world",
        "Hello, world!",
        " Hello world",
        "Hello world ",
        "  Hello   world  ",
        "The quick brown fox jumps over the lazy dog.",
        "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
        "It was the best of times, it was the worst of times, it was the age of wisdom, it was "
        "the age of foolishness, it was the epoch of belief, it was the epoch of incredulity.",
        "Call me Ishmael. Some years ago - never mind how long precisely - having little or no "
        "money in my purse, and nothing particular to interest me on shore, I thought I would "
        "sail about a little and see the watery part of the world.",
        "A LazyLLM step prunes tokens at boundary layers; pruned tokens can be revived later.",
        "Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that they were "
        "perfectly normal, thank you very much.",
        "e.g. i.e. etc. vs. Dr. St. No. 5",
        "\"Quoted,\" she said. 'Single quotes' and `backticks`.",
        "Semicolons; colons: dashes - en \u2013 em \u2014 ellipsis\u2026",
        "What?! Really?? Yes!!! No...",
        "(parentheses) [brackets] {braces} <angles>",
        "a",
        "I",
        "",
        " ",
        "!",
        "hello",
        "HELLO",
        "HeLLo WoRLD",
        "camelCaseIdentifier and PascalCaseType and snake_case_name and SCREAMING_CASE",
        "supercalifragilisticexpialidocious antidisestablishmentarianism",
        "pneumonoultramicroscopicsilicovolcanoconiosis",
    ]
    # Contractions
    s += [
        "I'm sure it's fine, they're here, we've seen it, you'll see, he'd know, don't worry.",
        "IT'S I'M THEY'RE WE'VE YOU'LL HE'D DON'T",
        "It'S wE'Ve tHeY'rE",
        "'s 't 're 've 'm 'll 'd",
        "rock'n'roll o'clock y'all ma'am",
        "the dog's bone, the dogs' bones",
        "\u2019s curly apostrophe: it\u2019s, don\u2019t",
    ]
    # Numbers
    s += [
        "0",
        "7",
        "42",
        "123",
        "1234",
        "12345",
        "1234567890",
        "3.14159265358979323846",
        "1,000,000",
        "1 000 000",
        "-42 +17 =-25",
        "0x1F 0b1010 0o777 1e-9 6.02e23",
        "2024-01-15T10:30:00Z",
        "Call 555-0123 or +1 (800) 555-0199.",
        "v1.2.3-rc4",
        "$19.99 \u20ac5 \u00a3100 \u00a5300",
        "50% off, 3/4 cup, 1\u00bd cups",
        "The year 1984 and 2001: A Space Odyssey.",
        "abc123def456",
        " 1 2 3",
        "   99 bottles",
        "\u0661\u0662\u0663 Arabic-Indic digits, \u0967\u0968\u0969 Devanagari digits",
        "\u2460\u2461\u2462 circled, \u2167 roman numeral eight, \u00b2 superscript",
        "\uff11\uff12\uff13 fullwidth digits",
    ]
    s += ["9" * n for n in (5, 16, 33, 100)]
    s += ["31415926535897932384626433832795028841971693993751058209749445923078164062862089"]
    # Whitespace
    s += [
        "a  b",
        "a   b",
        "a    b",
        "a\tb",
        "a\t\tb",
        "a\nb",
        "a\n\nb",
        "a\r\nb",
        "a \n b",
        "a\n \n b",
        "\n",
        "\n\n\n",
        "\t",
        "\t\t\t",
        "    ",
        "        indented",
        "\t\tindented with tabs",
        "trailing spaces   ",
        "trailing newline\n",
        "trailing tab\t",
        "   leading spaces",
        "\nleading newline",
        " \t \n mixed \r\n whitespace \t",
        "line1\nline2\nline3\n",
        "word \n\n\n  word",
        "end.  Two spaces after period.  Again.",
        "\u00a0non-breaking\u00a0space",
        "ideographic\u3000space",
        "em\u2003space and thin\u2009space",
        "zero\u200bwidth\u200bspace",
        "line\u2028separator and para\u2029separator",
        "vertical\x0btab and form\x0cfeed",
        "next\x85line",
        "mongolian\u180evowel separator",
        "file\x1cgroup\x1drecord\x1eunit\x1fseparators",
        "bytes\x04without\x06tokens\x13\x14\x16 dropped",
    ]
    # Code
    s += [
        "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
        "for i in range(10):\n\tprint(i ** 2, end=' ')\n",
        "import numpy as np\nx = np.zeros((3, 4), dtype=np.float32)  # [3, 4]\n",
        "class Foo:\n    def __init__(self, x: int = 0) -> None:\n        self._x = x\n",
        "#include <stdio.h>\n\nint main(void) {\n    printf(\"Hello, %s!\\n\", \"world\");\n"
        "    return 0;\n}\n",
        "template <typename T>\nstd::vector<T> f(const std::vector<T>& v) { return {v.rbegin(), "
        "v.rend()}; }",
        "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n"
        "    println!(\"{:?}\", v);\n}\n",
        "func main() {\n\tfmt.Println(\"hi\")\n\tfor i := 0; i < 3; i++ {\n"
        "\t\tdefer fmt.Print(i)\n\t}\n}",
        "const add = (a, b) => a + b;\nconsole.log(`sum: ${add(1, 2)}`);\n",
        "SELECT id, name FROM users WHERE age >= 18 AND name LIKE 'A%' ORDER BY id DESC;",
        "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do echo \"$f\"; done\n",
        "<html>\n  <body>\n    <p class=\"x\">Hi &amp; bye</p>\n  </body>\n</html>",
        "public static void main(String[] args) { System.out.println(args.length); }",
        "x += 1; y -= 2; z *= 3; w /= 4; a <<= 1; b >>= 2; c &&= d; e ||= f; g ??= h;",
        "if (a != b && c == d || !e) { return a->b.c[0]; }",
        "    \n        \n",
        "// comment\n/* block\n   comment */\n# hash comment\n-- sql comment",
        "@decorator\ndef f(*args, **kwargs): ...",
        "matrix = [[1, 2], [3, 4]]\nprint(matrix[0][1])",
        "\\documentclass{article}\n\\begin{equation} E = mc^2 \\end{equation}",
        "$ ls -la | grep '\\.cpp$' | wc -l",
        "a_b_c __dunder__ _private x1y2z3",
        "::std::unique_ptr<Impl> impl_; // [n_tokens, n_embd]",
        "{{ variable }} {% if x %}y{% endif %}",
        "0xDEADBEEF 0xdeadbeef 0XCAFE",
        "===== ----- ***** ##### ~~~~~ _____",
        "-> => <= >= != == === !== ** // %% ^^ ||",
    ]
    # JSON / URLs / markup
    s += [
        "{\"name\": \"lazyllm\", \"version\": \"0.1.0\", \"tags\": [\"llm\", \"cpu\"], "
        "\"n\": 42, \"ok\": true, \"x\": null}",
        "[{\"a\":1},{\"b\":[2,3]},{\"c\":{\"d\":\"e\"}}]",
        "{\n  \"key\": \"value\",\n  \"nested\": {\n    \"k\": [1, 2.5, -3e4]\n  }\n}",
        "https://github.com/ggml-org/llama.cpp/blob/master/src/llama-vocab.cpp#L123",
        "http://example.com/path?query=1&other=two#fragment",
        "mailto:someone@example.com and user.name+tag@sub.domain.org",
        "ftp://ftp.example.org/pub/file-1.2.3.tar.gz",
        "www.example.co.uk/index.html",
        "C:\\Users\\Name\\Documents\\file.txt",
        "/usr/local/lib/python3.11/site-packages/",
        "| col1 | col2 |\n|------|------|\n| a    | b    |",
        "# Heading\n\n**bold** _italic_ `code` [link](http://x.y)\n\n- item 1\n- item 2",
        "> quoted text\n>> nested quote",
        "key1=value1;key2=value2",
        "<tag attr='v'/> </closing>",
        "@user #hashtag $cashtag",
        "192.168.0.1:8080 and [::1]:443",
        "SHA256: 3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b",
        "base64: SGVsbG8gV29ybGQhIFRoaXMgaXMgYmFzZTY0Lg==",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
    ]
    # Emoji
    s += [
        "\U0001F600",
        "\U0001F600\U0001F603\U0001F604",
        "Hello \U0001F44B world \U0001F30D!",
        "\U0001F999.cpp",
        "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 family",
        "\U0001F3F3\uFE0F\u200D\U0001F308 rainbow flag",
        "\U0001F44D\U0001F3FD thumbs up medium skin tone",
        "\U0001F1FA\U0001F1F8 \U0001F1EF\U0001F1F5 \U0001F1EB\U0001F1F7 flags",
        "\u2764\uFE0F heart with variation selector",
        "1\uFE0F\u20E3 keycap",
        "\U0001F9D1\u200D\U0001F4BB technologist",
        "\U0001F525\U0001F525\U0001F525 fire x3",
        "emoji at end \U0001F680",
        "\u2603 \u2614 \u2615 \u263A",
    ]
    # CJK and other scripts
    s += [
        "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
        "\u6211\u7231\u81ea\u7136\u8bed\u8a00\u5904\u7406\u3002",
        "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002\u30ab\u30bf\u30ab\u30ca\u3068"
        "\u3072\u3089\u304c\u306a\u3002",
        "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4.",
        "\u4e2d\u6587 English \u6df7\u5408 mixed 123 \u6587\u672c",
        "\u3053\u3093\u306b\u3061\u306f\u4e16\u754c",
        "\u0417\u0434\u0440\u0430\u0432\u0441\u0442\u0432\u0443\u0439, \u043c\u0438\u0440! "
        "\u041a\u0430\u043a \u0434\u0435\u043b\u0430?",
        "\u043d\u0435\u0449\u043e \u043d\u0430 \u0411\u044a\u043b\u0433\u0430\u0440\u0441\u043a"
        "\u0438",
        "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5",
        "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
        "\u0627\u0644\u0633\u0644\u0627\u0645 \u0639\u0644\u064a\u0643\u0645 123",
        "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
        "\u05e2\u05d1\u05e8\u05d9\u05ea and English mixed \u05d1\u05d9\u05d7\u05d3",
        "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
        "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",
        "\u1018\u102c\u101e\u102c\u1005\u1000\u102c\u1038",
        "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0",
        "\u0532\u0561\u0580\u0565\u0582",
        "Tiếng Việt có dấu",
        "\u1780\u1798\u17d2\u1796\u17bb\u1787\u17b6",
    ]
    # Accents, combining marks, normalization forms
    s += [
        "caf\u00e9 na\u00efve r\u00e9sum\u00e9 fa\u00e7ade",
        "cafe\u0301 nai\u0308ve (combining)",
        "\u00c5ngstr\u00f6m vs A\u030angstro\u0308m",
        "Stra\u00dfe \u00fcber \u00c4rger \u00d6l",
        "\u0131\u0130 dotless i, dotted I",
        "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a"
        "\u032f\u031e\u0320\u034dalgo",
        "\ufb01 ligature \ufb02 and \u01c6 digraph",
        "\u212b angstrom sign, \u2126 ohm sign, \u212a kelvin",
        "\u00bfQu\u00e9 tal? \u00a1Muy bien!",
        "\u00e0\u00e8\u00ec\u00f2\u00f9 \u00e1\u00e9\u00ed\u00f3\u00fa \u00e2\u00ea\u00ee"
        "\u00f4\u00fb",
        "\u00f1\u00d1 \u00e7\u00c7 \u00f8\u00d8 \u00e5\u00c5 \u00e6\u00c6 \u0153\u0152",
        "\u00a9 \u00ae \u2122 \u00a7 \u00b6 \u2020 \u2021 \u2022",
        "\u2200x\u2208\u211d: x\u00b2 \u2265 0 \u2227 \u221a4 = 2 \u2260 \u221e",
        "\u03b1\u03b2\u03b3 \u0394\u03a3\u03a9 \u03bb-calculus",
        "\u2190 \u2191 \u2192 \u2193 \u21d2 \u21d4",
        "\u250c\u2500\u2510\n\u2502x\u2502\n\u2514\u2500\u2518",
        "\u2588\u2593\u2592\u2591 blocks \u2581\u2582\u2583",
        "\u0000null byte",
        "control\x01\x02\x07\x1b[0m chars",
        "\x7f delete",
        "\ufeffBOM at start",
        "\ufffd replacement char",
        "\U00010348 gothic, \U0001D400 math bold A, \U00020000 CJK ext B",
        "private use \ue000\uf8ff",
    ]
    # Text that looks like special tokens (encoded both ways below)
    special_like = [
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
        "text<|im_end|>more text",
        "<|im_start|><|im_start|><|im_end|>",
        " <|im_start|> spaced ",
        "<|im_start",
        "im_start|>",
        "<|IM_START|>",
        "<|im_start|x>",
        "<<|im_end|>>",
        "<repo_name>lazyllm<file_sep>src/main.cpp<filename>x.py<gh_stars>100",
        "<jupyter_start><jupyter_code>print(1)<jupyter_output>1<empty_output>",
        "<issue_start>title<issue_comment>body<issue_closed>",
        "<|endoftext|><|endoftext|>",
        "a<|endoftext|>b",
        "<s> </s> [INST] [/INST] <<SYS>> <</SYS>>",
        "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
        "<start_of_turn>user\nhi<end_of_turn>",
    ]
    # Mixed / long
    s += [
        "The price is $1,234.56 (incl. 20% VAT) \u2014 order #A-7781 by 2024-12-31!",
        "Q: What's 12*34? A: 408.\nQ: And 999+1? A: 1000.",
        "User: hi\nAssistant: Hello! How can I help?\nUser: tell me a joke \U0001F602",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
        "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
        "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "ab" * 40,
        "!" * 30,
        " " * 50 + "x",
        "\n" * 20,
        "-" * 60,
        "na" * 16 + " batman",
        "The The The the the THE tHe",
        "Ⅰ Ⅱ Ⅲ Ⅳ roman numerals",
        "mixed\ttabs and    spaces\n\tand newlines  \n",
        "x" + "\u0301" * 10,
        "word." * 10,
        "\U0001F600" * 8,
        "\u4e00" * 20,
    ]
    return s, special_like


CONVERSATIONS = [
    [{"role": "user", "content": "Hi"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}],
    [{"role": "user", "content": "Hello! "},
     {"role": "assistant", "content": " Hi, how can I help?"},
     {"role": "user", "content": "Tell me a joke about \U0001F999 and 123 numbers.\n"}],
    [{"role": "system", "content": "You answer in JSON."}, {"role": "user", "content": "x"},
     {"role": "assistant", "content": "{\"a\": 1}"}],
]


def write_chat_golden(hf, ref, path):
    """Renders the GGUF's own tokenizer.chat_template (Jinja, via transformers) on a few
    conversations; the C++ test compares apply_chat_template(kChatMl) and its ids."""
    out = []
    for msgs in CONVERSATIONS:
        for gen in (True, False):
            text = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=gen)
            ref.encode_special_tokens = False
            ids = ref.encode(text, add_special_tokens=False).ids
            out.append({"messages": msgs, "add_generation_prompt": gen, "text": text,
                        "ids": ids})
    with open(path, "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=True) for c in out) + "\n]\n")
    print(f"wrote {len(out)} chat cases to {path}", file=sys.stderr)


def gemma_sentencepiece(gguf_path):
    """SentencePiece reference for the Gemma 3 GGUF (tokenizer.ggml.model = "llama"): a BPE
    ModelProto rebuilt from the GGUF's pieces, scores and types, run by the sentencepiece
    library. Settings are Gemma's tokenizer.model: byte_fallback, split_digits, no dummy prefix,
    no whitespace folding. llama.cpp's converter writes Gemma's user-defined whitespace pieces
    ("\u2581\u2581") with plain spaces; they are escaped back here."""
    import sentencepiece as spm
    from gguf import GGUFReader
    from sentencepiece import sentencepiece_model_pb2 as pb

    r = GGUFReader(gguf_path)
    field = r.fields
    toks = [bytes(field["tokenizer.ggml.tokens"].parts[i]).decode("utf-8")
            for i in field["tokenizer.ggml.tokens"].data]
    types = [int(field["tokenizer.ggml.token_type"].parts[i][0])
             for i in field["tokenizer.ggml.token_type"].data]
    scores = [float(field["tokenizer.ggml.scores"].parts[i][0])
              for i in field["tokenizer.ggml.scores"].data]
    unk = int(field["tokenizer.ggml.unknown_token_id"].parts[-1][0])
    sp_type = {1: pb.ModelProto.SentencePiece.NORMAL, 2: pb.ModelProto.SentencePiece.UNKNOWN,
               3: pb.ModelProto.SentencePiece.CONTROL,
               4: pb.ModelProto.SentencePiece.USER_DEFINED,
               5: pb.ModelProto.SentencePiece.UNUSED, 6: pb.ModelProto.SentencePiece.BYTE}
    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.split_digits = True
    m.trainer_spec.unk_id = unk
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = False
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    for i, (t, sc, ty) in enumerate(zip(toks, scores, types)):
        p = m.pieces.add()
        p.piece = t.replace(" ", "\u2581") if ty == 4 else t
        p.score = sc
        p.type = pb.ModelProto.SentencePiece.UNKNOWN if i == unk else sp_type[ty]
    return spm.SentencePieceProcessor(model_proto=m.SerializeToString())


def write_gemma_golden(gguf_path, texts, path):
    """tests/golden/tokenizer_gemma3.jsonl from gemma_sentencepiece. Texts holding a literal
    U+2581 are left out: sentencepiece cannot tell it from an escaped space, so it may match a
    user-defined whitespace piece there, which llama.cpp and lazyllm (matching on raw text)
    do not."""
    sp = gemma_sentencepiece(gguf_path)
    with open(path, "w", encoding="utf-8") as f:
        n = 0
        for text in texts:
            if "\u2581" in text:
                continue
            ids = sp.encode(text)
            row = {"text": text, "parse_special": False, "ids": ids,
                   "roundtrip": sp.decode(ids) == text}
            f.write(json.dumps(row, ensure_ascii=True) + "\n")
            n += 1
    print(f"wrote {n} cases to {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="GGUF path (default: scripts/fetch_model.py's)")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "golden",
                                                  "tokenizer_smollm2.jsonl"))
    ap.add_argument("--no-transformers", action="store_true",
                    help="skip the comparison with transformers' GGUF loader")
    ap.add_argument("--gemma", help="also write tests/golden/tokenizer_gemma3.jsonl from this "
                    "Gemma 3 GGUF (scripts/fetch_model.py gemma3-270m)")
    args = ap.parse_args()
    model = args.model or default_model_path()

    fields = gguf_tokenizer_fields(model)
    ref = build_reference(fields)
    plain, special_like = test_strings()

    cases = [(t, False) for t in plain]
    cases += [(t, False) for t in special_like] + [(t, True) for t in special_like]
    # A few plain strings with parse_special on too: must not change anything.
    cases += [(t, True) for t in plain[:10]]

    hf = None
    if not args.no_transformers:
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(os.path.dirname(model),
                                           gguf_file=os.path.basename(model))

    rows = []
    n_disagree = 0
    for text, parse_special in cases:
        ref.encode_special_tokens = not parse_special
        ids = ref.encode(text, add_special_tokens=False).ids
        decoded = ref.decode(ids, skip_special_tokens=False)
        # False when the vocabulary lacks a byte's token: the byte-level BPE then drops it
        # (SmolLM2 has no token for bytes 0x04 0x06 0x13 0x14 0x16 0x1d and some lead bytes).
        roundtrip = decoded == text
        if not roundtrip:
            print(f"note: reference decode(encode(s)) != s for {text!r}", file=sys.stderr)
        if hf is not None:
            hf.backend_tokenizer.encode_special_tokens = not parse_special
            hf_ids = hf.backend_tokenizer.encode(text, add_special_tokens=False).ids
            if hf_ids != ids:
                n_disagree += 1
                print(f"transformers-gguf differs (parse_special={parse_special}) on {text!r}:\n"
                      f"  tokenizers:   {ids}\n  transformers: {hf_ids}", file=sys.stderr)
        rows.append({"text": text, "parse_special": parse_special, "ids": ids,
                     "roundtrip": roundtrip})

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=True) + "\n")

    if hf is not None:
        write_chat_golden(hf, ref, args.out.replace(".jsonl", "_chat.json"))
    if args.gemma:
        write_gemma_golden(args.gemma, plain + special_like,
                           os.path.join(os.path.dirname(args.out), "tokenizer_gemma3.jsonl"))
    print(f"wrote {len(rows)} cases to {args.out} "
          f"({os.path.getsize(args.out)} bytes); transformers-gguf disagreed on {n_disagree}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
