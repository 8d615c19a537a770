#!/usr/bin/env bash
# Checks cproton's Python package and instrumentation front end against each
# Triton release it supports, without a GPU and without torch: for each
# version, a venv holding only that triton (scripts/venv-triton.sh), this
# tree's cproton wheel (built once, with the test venv), and pytest over the files
# below, which import cproton as proton, run CPU sessions and the launch
# hook, and compile the instrumented test kernels ahead of time for sm_90 /
# sm_100 (GPUTarget; the PTX pass lowers the markers, Triton's ptxas
# assembles the result). Prints one RESULT line per version and exits
# non-zero when any version fails. docs/compatibility.md has the table.
# usage: scripts/triton-compat.sh [VERSION...]   (default: the list below)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# the newest patch release of each minor version, 3.6 to 3.9
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.6.0 3.7.1 3.8.0 3.9.0)
files=(test_triton_compat.py test_language.py test_instrument_ws.py test_hook.py test_tensor_metrics.py
  test_proton_ir.py test_proton_versions.py test_api_parity.py)
start=$(date +%s)
venv=$("$root/scripts/venv.sh")
out=$root/build/triton-compat
mkdir -p "$out"
rm -f "$out"/cproton-*.whl
echo "cproton: building the cproton wheel (log: $out/wheel.log)"
# with the test backends (the tests drive backend="fake"); the wheel users get
# is built without them (pyproject.toml)
if ! "$venv/bin/pip" wheel -q --no-build-isolation --no-deps \
    --config-settings=cmake.define.CPROTON_TEST_BACKENDS=ON "$root" -w "$out" > "$out/wheel.log" 2>&1; then
  tail -40 "$out/wheel.log"; exit 1
fi
wheel=$(ls "$out"/cproton-*.whl)
failed=()
for v in "${versions[@]}"; do
  t0=$(date +%s)
  tvenv=$("$root/scripts/venv-triton.sh" "$v")
  "$tvenv/bin/pip" install -q --no-deps --force-reinstall "$wheel" > "$out/install-$v.log" 2>&1 ||
    { cat "$out/install-$v.log"; exit 1; }
  args=()
  for f in "${files[@]}"; do args+=("$root/tests/python/$f"); done
  # a fresh Triton cache per version: binaries never cross versions
  rm -rf "$out/cache-$v"
  if (cd "$out" && TRITON_CACHE_DIR="$out/cache-$v" TRITON_DEFAULT_FP_FUSION=1 \
        "$tvenv/bin/python" -m pytest -q -p no:cacheprovider "${args[@]}" > "$out/pytest-$v.log" 2>&1); then
    status=pass
  else
    status=FAIL; failed+=("$v"); tail -30 "$out/pytest-$v.log"
  fi
  echo "RESULT triton=$v $status $(tail -1 "$out/pytest-$v.log" | sed 's/=//g;s/^ *//') ($(( $(date +%s) - t0 )) s)"
done
echo "cproton: Triton compatibility took $(( $(date +%s) - start )) s"
[ ${#failed[@]} -eq 0 ] || { echo "FAIL: triton ${failed[*]}"; exit 1; }
