#!/usr/bin/env bash
# Makes a venv holding triton==<version> without its
# dependencies (no torch), plus pytest and msgpack (idempotent). Used by
#  - scripts/triton-compat.sh: cproton's package and instrumentation front
#    end checked against each Triton release from 3.6 to 3.9;
#  - tests/python/test_proton39_msgpack.py: Triton 3.9.0's libproton records
#    scopes and metrics without a GPU, so our hatchet_msgpack bytes are
#    compared with Proton 3.9's own.
# Venvs and wheels live in the cache folder outside the clone
# (scripts/cache.sh): <cache>/venv-triton-<version> (0.7-1.1 GB each) and
# <cache>/triton-wheels (~200-250 MB per wheel, or $CPROTON_TRITON_WHEELS),
# so a rerun, a venv made again or a fresh clone (CI) downloads nothing
# again. A wheel an older checkout kept in pip's cache folder
# (`pip cache dir`/cproton-triton-wheels) is taken from there.
# usage: scripts/venv-triton.sh VERSION [VENV_DIR]   prints the venv's path
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/cache.sh"
version=${1:?usage: venv-triton.sh VERSION [VENV_DIR]}
venv=${2:-$cproton_cache/venv-triton-$version}
wheels=${CPROTON_TRITON_WHEELS:-$cproton_cache/triton-wheels}
legacy=$(pip cache dir 2>/dev/null)/cproton-triton-wheels || legacy=
stamp=$venv/.cproton-triton-1
if [ ! -f "$stamp" ]; then
  mkdir -p "$wheels"
  if ! ls "$wheels"/triton-"$version"-*.whl > /dev/null 2>&1; then
    if [ -n "$legacy" ] && ls "$legacy"/triton-"$version"-*.whl > /dev/null 2>&1; then
      cp "$legacy"/triton-"$version"-*.whl "$wheels"/
    else
      echo "cproton: downloading triton $version (~200 MB, once) into $wheels" >&2
      pip download -q --no-deps "triton==$version" -d "$wheels" >&2
    fi
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --no-deps --no-index --find-links "$wheels" "triton==$version" >&2
  "$venv/bin/pip" install -q pytest msgpack >&2
  touch "$stamp"
fi
echo "$venv"
