#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds examples/basic.c
# against it twice: through pkg-config and through CMake's find_package.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc "$src/examples/basic.c" $(pkg-config --cflags --libs cproton) -lpthread -o "$prefix/basic_pc"
LD_LIBRARY_PATH=$prefix/lib "$prefix/basic_pc" "$prefix/pc" > /dev/null
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
echo "install: pkg-config and find_package(cproton) both build and run"
