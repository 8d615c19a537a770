#!/usr/bin/env bash
# bench/native_stacks.sh APP LIB [ROUNDS] [REPS] -- the cost of native call
# stacks (issue 28 item 3) on a C++ CUDA program (tests/gpu/native_app.cu:
# 8 kernels per iteration launched from nested functions), fresh processes,
# interleaved per round, of
#   plain    the program alone
#   kernel   CUDA_INJECTION64_PATH=LIB (context shadow: kernel level)
#   native   the same with CPROTON_CONTEXT=native
# at two kernel sizes: 1024 floats (launch-bound: the worst case, every
# launch's cost shows) and 4M floats (kernels of some microseconds). The
# program times its own launch loop (LOOP_S, start-up excluded). Prints the
# medians and "RESULT native_stacks ..." with the ratios, then PASS/FAIL
# against the 1.10x target for each size (a benchmark: the exit status is 0;
# tests/gpu/native.sh reads the lines).
set -u
app=$1 lib=$2 rounds=${3:-7} reps=${4:-5000}
tmp=$(mktemp -d)
loop() { # n env...
  local n=$1; shift
  "$@" "$app" "$reps" "$n" 2>/dev/null | awk '/^LOOP_S/ {print $2}'
}
med() { sort -g "$1" | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }
for n in 1024 4194304; do
  for r in $(seq "$rounds"); do
    loop $n env >> "$tmp/plain.$n"
    loop $n env CUDA_INJECTION64_PATH="$lib" CPROTON_NAME="$tmp/k" >> "$tmp/kernel.$n"
    loop $n env CUDA_INJECTION64_PATH="$lib" CPROTON_CONTEXT=native CPROTON_NAME="$tmp/n" >> "$tmp/native.$n"
  done
  p=$(med "$tmp/plain.$n") k=$(med "$tmp/kernel.$n") v=$(med "$tmp/native.$n")
  awk -v p="$p" -v k="$k" -v v="$v" -v l=$((reps * 8)) -v r="$rounds" -v n="$n" 'BEGIN {
    printf "native_stacks n=%d: %d launches, %d rounds, medians: plain %.4f s, kernel %.4f s, native %.4f s\n", n, l, r, p, k, v
    printf "RESULT native_stacks n=%d kernel/plain %.3fx native/plain %.3fx native/kernel %.3fx added per launch: native %.2f us, kernel %.2f us\n",
           n, k / p, v / p, v / k, (v - p) / l * 1e6, (k - p) / l * 1e6
    if (v / p > 1.10) printf "FAIL native_stacks n=%d: native/plain above the 1.10x target\n", n
    else printf "PASS native_stacks n=%d: native/plain within 1.10x\n", n
  }'
done
rm -rf "$tmp"
