#!/usr/bin/env bash
# Runs the Python tests: makes .venv (scripts/venv.sh), installs this tree's
# cproton package into it offline, and runs pytest over tests/python.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
if [ ! -f "$root/pyproject.toml" ]; then
  echo "cproton: no Python package yet; Python tests skipped"
  exit 0
fi
"$root/scripts/venv.sh"
venv=${CPROTON_VENV:-$root/.venv}
"$venv/bin/pip" install -q --no-build-isolation --no-deps "$root"
cd "$root"
CPROTON_BUILD_DIR="$root/$build" "$venv/bin/python" -m pytest -q tests/python
