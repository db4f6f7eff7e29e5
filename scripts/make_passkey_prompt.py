#!/usr/bin/env python3
"""Writes a passkey-retrieval prompt (the landmark-attention format) of about N tokens.

usage: make_passkey_prompt.py [--tokens 4000] [--depth 0.5] [--key 71432] [-o FILE]
The garbage line is ~25 tokens for SmolLM2's tokenizer too; the count is approximate (the
engine reports the exact number). Standard library only.
"""
import argparse
import sys

HEAD = ("There is an important info hidden inside a lot of irrelevant text. Find it and "
        "memorize them. I will quiz you about the important information there.\n")
GARBAGE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
TOKENS_PER_GARBAGE = 24  # measured with SmolLM2's tokenizer


def make(tokens, depth, key):
    n = max(1, (tokens - 60) // TOKENS_PER_GARBAGE)
    n_prefix = int(round(n * depth))
    needle = f"The pass key is {key}. Remember it. {key} is the pass key.\n"
    return (HEAD + GARBAGE * n_prefix + "\n" + needle + GARBAGE * (n - n_prefix) + "\n"
            + "What is the pass key? The pass key is")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=4000)
    ap.add_argument("--depth", type=float, default=0.5)
    ap.add_argument("--key", type=int, default=71432)
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    if not 0.0 <= a.depth <= 1.0:
        sys.exit("make_passkey_prompt: --depth must be in [0, 1]")
    text = make(a.tokens, a.depth, a.key)
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
