#!/usr/bin/env bash
# The whole test suite, from a fresh machine: system packages, default model, a warnings-as-errors
# release build with every unit and model test, then the ASan+UBSan build's unit tests.
#   scripts/test.sh            everything
#   LAZYLLM_SKIP_ASAN=1 ...    skip the sanitizer pass (faster local loop)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
python3 scripts/fetch_model.py >/dev/null

echo "== release build (-Wall -Wextra -Werror)"
cmake --preset release >/dev/null
cmake --build --preset release
echo "== release tests (unit + model)"
ctest --preset release -j2

if [ "${LAZYLLM_SKIP_ASAN:-0}" != "1" ]; then
  echo "== asan+ubsan build"
  cmake --preset asan >/dev/null
  cmake --build --preset asan
  echo "== asan+ubsan unit tests"
  ctest --preset asan -j2
fi
