#!/usr/bin/env bash
# Runs the Python tests: makes the test venv (scripts/venv.sh, in the cache
# folder outside the clone, scripts/cache.sh), builds and installs this
# tree's cproton package into it offline (pyproject.toml: CMake through
# scikit-build-core, building in <build>/skbuild/), and runs pytest over
# tests/python against that installed package and its tools. The package
# it tests has the test-only fake backend and _testing.c built in
# (CPROTON_TEST_BACKENDS=ON); the wheel never has them.
# usage: scripts/test-python.sh   (the C build folder argument of old is ignored)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$("$root/scripts/venv.sh")
# Proton 3.9 for the byte-compatibility test of hatchet_msgpack (skipped
# when it cannot be installed, e.g. offline).
if venv39=$("$root/scripts/venv-triton.sh" 3.9.0); then
  export CPROTON_PROTON39_VENV=$venv39
else
  echo "cproton: no Triton 3.9.0 venv; the Proton 3.9 msgpack test will skip"
fi
echo "cproton: building the Python package (log: $root/build/pip-install.log)"
mkdir -p "$root/build"
if ! "$venv/bin/pip" install --no-build-isolation --no-deps \
    --config-settings=cmake.define.CPROTON_TEST_BACKENDS=ON "$root" \
    > "$root/build/pip-install.log" 2>&1; then
  tail -40 "$root/build/pip-install.log"
  exit 1
fi
cd "$root"
"$venv/bin/python" -m pytest -q tests/python
