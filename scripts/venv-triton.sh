#!/usr/bin/env bash
# Creates .venv-triton-<version> holding triton==<version> without its
# dependencies (no torch), plus pytest and msgpack (idempotent). Used by
#  - scripts/triton-compat.sh: cproton's package and instrumentation front
#    end checked against each Triton release from 3.6 to 3.9;
#  - tests/python/test_proton39_msgpack.py: Triton 3.9.0's libproton records
#    scopes and metrics without a GPU, so our hatchet_msgpack bytes are
#    compared with Proton 3.9's own.
# Triton wheels (~200 MB each) are downloaded once into pip's cache folder
# (`pip cache dir`/cproton-triton-wheels; build/triton-wheels when pip has
# no cache; or $CPROTON_TRITON_WHEELS), so a rerun, a venv made again or a
# fresh clone (CI) does not download them again.
# usage: scripts/venv-triton.sh VERSION [VENV_DIR]   prints the venv's path
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${1:?usage: venv-triton.sh VERSION [VENV_DIR]}
venv=${2:-$root/.venv-triton-$version}
cache=$(pip cache dir 2>/dev/null) || cache=$root/build
wheels=${CPROTON_TRITON_WHEELS:-$cache/cproton-triton-wheels}
stamp=$venv/.cproton-triton-1
if [ ! -f "$stamp" ]; then
  mkdir -p "$wheels"
  if ! ls "$wheels"/triton-"$version"-*.whl > /dev/null 2>&1; then
    pip download -q --no-deps "triton==$version" -d "$wheels" >&2
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --no-deps --no-index --find-links "$wheels" "triton==$version" >&2
  "$venv/bin/pip" install -q pytest msgpack >&2
  touch "$stamp"
fi
echo "$venv"
