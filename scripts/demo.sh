#!/usr/bin/env bash
# The main job, from a fresh machine: install dependencies, build, fetch the default model,
# show it, then answer a long (~4k-token) passkey prompt with full and LazyLLM prefill side by
# side (the safe preset, then the fast one), printing both answers, TTFT and the speedup
# (each policy's fastest of three alternating rounds: `run --compare`).
#   scripts/demo.sh [TOKENS]     (default 4000)
set -euo pipefail
cd "$(dirname "$0")/.."
TOKENS=${1:-4000}
# OpenMP workers that spin collapse when another process holds one of the 2 cores; sleeping
# workers keep the timings sane on a shared machine (README, "Using it").
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

bash scripts/setup.sh
echo "== build"
cmake --preset release >/dev/null
cmake --build --preset release --target lazyllm
MODEL=$(python3 scripts/fetch_model.py)
LAZYLLM=build/tools/lazyllm

echo; echo "== lazyllm info"
$LAZYLLM info -m "$MODEL"

echo; echo "== lazyllm tokenize"
$LAZYLLM tokenize "$MODEL" "LazyLLM prunes tokens layer by layer: 1234 tokens, café, 日本語." --verbose

PROMPT=$(mktemp /tmp/lazyllm-passkey-XXXXXX.txt)
trap 'rm -f "$PROMPT"' EXIT
python3 scripts/make_passkey_prompt.py --tokens "$TOKENS" --depth 0.4 --key 71432 -o "$PROMPT"
echo; echo "== a ${TOKENS}-token passkey prompt (the key is 71432): full vs lazy prefill (--lazy, the safe preset)"
$LAZYLLM run -m "$MODEL" -f "$PROMPT" --lazy --compare -n 8
echo; echo "== the same prompt: full vs --lazy=fast (faster, less often full's answer)"
$LAZYLLM run -m "$MODEL" -f "$PROMPT" --lazy=fast --compare -n 8
