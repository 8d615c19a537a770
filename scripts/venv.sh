#!/usr/bin/env bash
# Makes the test venv (idempotent) and prints its path: the PyPI packages the
# Python tests use: triton 3.6.0 (its triton.profiler is Proton, our
# reference), llnl-hatchet and pandas (to load our profiles the way users
# do), pytest, perfetto and protobuf (Perfetto's generated trace classes
# decode our .pftrace files). The cproton package itself is installed into it
# from the tree under test (scripts/test-python.sh). The venv lives in the
# cache folder outside the clone (scripts/cache.sh): $CPROTON_VENV, else
# <cache>/venv (~1 GB).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/cache.sh"
venv=${CPROTON_VENV:-$cproton_cache/venv}
stamp=$venv/.cproton-deps-3
if [ ! -f "$stamp" ]; then
  echo "cproton: making the test venv $venv (~1 GB, once)" >&2
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip >&2
  "$venv/bin/pip" install -q -r "$root/tests/python/requirements.txt" >&2
  touch "$stamp"
fi
# Optional: a CPU-only torch for tests/python/test_torch_context.py (the
# python context's PyTorch layers), where pip finds a "+cpu" wheel (a local
# wheel folder or index); no CUDA build is ever pulled in (--no-deps, pinned
# local version). Tried once per venv; the test skips without torch.
torch_stamp=$venv/.cproton-torch-1
if [ ! -f "$torch_stamp" ]; then
  if "$venv/bin/pip" install -q --only-binary :all: --no-deps "torch==2.13.0+cpu" >&2 2>/dev/null &&
     "$venv/bin/pip" install -q --only-binary :all: sympy networkx jinja2 filelock fsspec \
       typing-extensions >&2; then
    echo "cproton: CPU torch installed in the test venv" >&2
  else
    echo "cproton: no CPU torch wheel found; tests/python/test_torch_context.py will skip" >&2
  fi
  touch "$torch_stamp"
fi
echo "$venv"
