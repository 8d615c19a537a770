# Sourced by the test scripts: where the test venvs and the downloaded Triton
# wheels live. Outside the clone (so a clone stays small and `git clean`
# keeps them), shared by every clone of the same user, so a fresh clone (CI)
# makes nothing again: $CPROTON_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/cproton.
#   venv/                   test venv (scripts/venv.sh; $CPROTON_VENV overrides)
#   venv-triton-<version>/  one Triton each, no torch (scripts/venv-triton.sh)
#   triton-wheels/          the Triton wheels (~920 MB; $CPROTON_TRITON_WHEELS overrides)
# Two `make test` runs at once on one cache share these venvs: give each its
# own CPROTON_CACHE.
cproton_cache=${CPROTON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cproton}
