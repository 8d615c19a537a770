#!/usr/bin/env bash
# Installs the build into a temporary prefix and checks that what a user
# gets there runs as installed, with no LD_LIBRARY_PATH: examples/basic.c
# built through pkg-config and through CMake's find_package, and the
# installed cproton-viewer and cproton-instrument (their run path finds
# libcproton.so in the prefix).
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
unset LD_LIBRARY_PATH
cmake --install "$build" --prefix "$prefix" > /dev/null
libdir=$(dirname "$(find "$prefix" -name 'libcproton.so' | head -1)")
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc "$src/examples/basic.c" $(pkg-config --cflags --libs cproton) -lpthread -o "$prefix/basic_pc"
"$prefix/basic_pc" "$prefix/pc" > /dev/null
mkdir "$prefix/cm"
cat > "$prefix/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(use_cproton C)
find_package(cproton REQUIRED)
add_executable(basic_cm $src/examples/basic.c)
target_link_libraries(basic_cm cproton::cproton)
CM
cmake -S "$prefix/cm" -B "$prefix/cm/b" -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$prefix/cm/b" > /dev/null
"$prefix/cm/b/basic_cm" "$prefix/cm_out" > /dev/null
test -s "$prefix/pc.hatchet" && test -s "$prefix/cm_out.hatchet"
"$prefix/bin/cproton-viewer" --list "$prefix/pc.hatchet" | grep flops > /dev/null
"$prefix/bin/cproton-instrument" "$src/tests/data/instrument/scope_return.ptx" -o "$prefix/out.ptx" > /dev/null
grep -q '%cpr_' "$prefix/out.ptx"
echo "install: pkg-config and find_package(cproton) build programs that run, and the installed viewer and cproton-instrument run, all without LD_LIBRARY_PATH"
