#!/usr/bin/env bash
# Installs the Debian packages one part of cproton needs (idempotent).
#   scripts/deps.sh build     compiler, cmake, zlib: `make` (library + tools)
#   scripts/deps.sh test      + Criterion, jansson, pkg-config, Python headers
#                             and venv, libdw-dev and libunwind8 (native
#                             stacks), Chromium: `make test`
#   scripts/deps.sh valgrind  + valgrind: `make valgrind`
#   scripts/deps.sh clang     + the test packages, clang and its sanitizer and
#                             libFuzzer runtime: `make asan-clang msan fuzz`
# Nothing missing: prints nothing. As root it installs what is missing, logs
# apt's output to $CPROTON_DEPS_LOG (default build/deps.log) and prints one
# line per package; otherwise it prints the exact apt-get line and fails.
# Chromium (the SVG screenshot test) is optional: when it cannot be
# installed the line says so and that one test skips with a message.
# The reason for each package is in docs/dependencies.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
part=${1:-build}
build_pkgs=(build-essential cmake zlib1g-dev)
test_pkgs=(libcriterion-dev libjansson-dev pkg-config python3-dev python3-venv libdw-dev libunwind8)
optional_pkgs=()
case "$part" in
  build) pkgs=("${build_pkgs[@]}") ;;
  test) pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}"); optional_pkgs=(chromium) ;;
  valgrind) pkgs=("${build_pkgs[@]}" valgrind) ;;
  clang) pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}" clang libclang-rt-dev) ;;
  *) echo "usage: scripts/deps.sh build|test|valgrind|clang" >&2; exit 2 ;;
esac

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
# cmake may come from pip/pyenv instead of Debian: 3.20 or newer will do.
cmake_ok() {
  command -v cmake >/dev/null || return 1
  local v
  v=$(cmake --version | head -1 | awk '{print $3}')
  [ "$(printf '%s\n3.20\n' "$v" | sort -V | head -1)" = "3.20" ]
}
# Chromium counts as present when any headless-capable browser binary is.
chromium_ok() {
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null ||
    command -v google-chrome >/dev/null
}
wanted() {
  local p
  for p in "$@"; do
    case "$p" in
      cmake) cmake_ok && continue ;;
      chromium) chromium_ok && continue ;;
    esac
    installed "$p" || echo "$p"
  done
}
missing=($(wanted "${pkgs[@]}"))
optional=($(wanted ${optional_pkgs[@]+"${optional_pkgs[@]}"}))
[ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  if [ ${#missing[@]} -gt 0 ]; then
    echo "cproton: missing Debian packages for '$part'; as root run:" >&2
    echo "  apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  echo "cproton: optional chromium missing (SVG screenshot test will skip);" \
       "as root: apt-get install -y --no-install-recommends chromium" >&2
  exit 0
fi

log=${CPROTON_DEPS_LOG:-$root/build/deps.log}
mkdir -p "$(dirname "$log")"
export DEBIAN_FRONTEND=noninteractive
all=(${missing[@]+"${missing[@]}"} ${optional[@]+"${optional[@]}"})
echo "cproton: installing ${all[*]} (apt log: $log)"
apt_get() { apt-get -y -q --no-install-recommends "$@" >>"$log" 2>&1; }
if ! apt-get update -q >>"$log" 2>&1; then
  echo "cproton: apt-get update failed; see $log" >&2
  exit 1
fi
report() { # one line per package: its version, or why not
  local p
  for p in "$@"; do
    if installed "$p"; then
      echo "  installed $p $(dpkg-query -W -f='${Version}' "$p")"
    else
      echo "  NOT installed $p (see $log)"
    fi
  done
}
if [ ${#missing[@]} -gt 0 ] && ! apt_get install "${missing[@]}"; then
  report "${missing[@]}"
  echo "cproton: apt-get install failed; see $log" >&2
  exit 1
fi
[ ${#missing[@]} -gt 0 ] && report "${missing[@]}"
if [ ${#optional[@]} -gt 0 ]; then
  apt_get install "${optional[@]}" || true
  report "${optional[@]}"
fi
exit 0
