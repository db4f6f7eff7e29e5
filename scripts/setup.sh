#!/usr/bin/env bash
# Installs every system dependency of lazyllm.cpp with apt-get (Debian 12).
# Idempotent: packages already present are not touched, and it prints nothing then.
# Runs as root, or through sudo when that is available.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3 python3-pip python3-venv unzip
  libdnnl-dev          # oneDNN: AMX / AVX-512 bf16 GEMM
  libomp-dev libgomp1  # OpenMP
  libpcre2-dev         # pre-tokenizer regexes
  nlohmann-json3-dev   # JSON
  libcpp-httplib-dev   # HTTP server
  libcli11-dev         # CLI parsing
  libfmt-dev           # formatting
  libgtest-dev libgmock-dev  # tests
  libbenchmark-dev     # micro-benchmarks
  clang libclang-rt-14-dev  # libFuzzer + ASan/UBSan runtimes for tests/fuzz (preset fuzz)
  chromium chromium-driver  # the server page's headless-browser test (selenium)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup.sh: need root to install: ${missing[*]}" >&2; exit 1
  fi
fi
echo "setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup.sh: done" >&2
