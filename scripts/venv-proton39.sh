#!/usr/bin/env bash
# Creates .venv-proton39 holding only triton==3.9.0 (no dependencies): its
# libproton records scopes and metrics without a GPU, so the Python tests can
# compare our hatchet_msgpack bytes with Proton 3.9's own
# (tests/python/test_proton39_msgpack.py). Kept apart from .venv, whose
# triton 3.6 is the API reference. Idempotent.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${CPROTON_PROTON39_VENV:-$root/.venv-proton39}
stamp=$venv/.cproton-proton39-1
if [ ! -f "$stamp" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --no-deps "triton==3.9.0"
  touch "$stamp"
fi
