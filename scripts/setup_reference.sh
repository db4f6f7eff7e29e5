#!/usr/bin/env bash
# Creates the Python virtualenv used by the reference tools around the engine (never by the
# engine or its tests): golden-file generators (transformers + gguf loading the same GGUF) and
# the llama.cpp side-by-side benchmark. Idempotent. usage: scripts/setup_reference.sh [VENV]
set -euo pipefail
VENV=${1:-${LAZYLLM_REF_VENV:-$(cd "$(dirname "$0")/.." && pwd)/.venv-ref}}
REQ="$(cd "$(dirname "$0")" && pwd)/requirements-reference.txt"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
stamp="$VENV/.requirements.sha256"
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >&2
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ" >&2
echo "$want" > "$stamp"
