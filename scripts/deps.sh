#!/usr/bin/env bash
# Installs the Debian packages cproton needs to build and test (idempotent).
# As root it runs apt-get; otherwise it prints the exact command to run.
# The list and the reason for each package are in docs/dependencies.md.
set -euo pipefail
pkgs=(build-essential cmake pkg-config zlib1g-dev libjansson-dev
      libcriterion-dev python3-venv python3-dev valgrind)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
# cmake may come from pip/pyenv instead of Debian: a new enough one will do.
if [ ${#missing[@]} -gt 0 ] && command -v cmake >/dev/null; then
  v=$(cmake --version | head -1 | awk '{print $3}')
  if [ "$(printf '%s\n3.20\n' "$v" | sort -V | head -1)" = "3.20" ]; then
    missing=("${missing[@]/cmake}")
  fi
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "cproton: missing packages; run as root:" >&2
  echo "  apt-get install -y ${missing[*]}" >&2
  exit 1
fi
