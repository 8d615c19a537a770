#!/usr/bin/env bash
# Creates .venv with the PyPI packages the Python tests use (idempotent):
# triton 3.6.0 (its triton.profiler is Proton, our reference), llnl-hatchet
# and pandas (to load our profiles the way users do), pytest, perfetto and
# protobuf (Perfetto's generated trace classes decode our .pftrace files).
# The cproton package itself is installed into it from this tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${CPROTON_VENV:-$root/.venv}
stamp=$venv/.cproton-deps-3
if [ ! -f "$stamp" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r "$root/tests/python/requirements.txt"
  touch "$stamp"
fi
