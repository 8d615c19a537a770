#!/usr/bin/env bash
# bench/native_stacks.sh APP LIB [ROUNDS] [REPS] -- the cost of native call
# stacks (issue 28 item 3) on a launch-bound C++ CUDA program
# (tests/gpu/native_app.cu: 8 small kernels per iteration from nested
# functions): fresh processes, interleaved per round, of
#   plain    the program alone
#   kernel   CUDA_INJECTION64_PATH=LIB (context shadow: kernel level)
#   native   the same with CPROTON_CONTEXT=native
# The program times its own launch loop (LOOP_S, start-up excluded). Prints
# the median of each and "RESULT native_stacks ..." with the ratios; the
# target is native <= 1.10x plain (a FAIL line above it, not an exit code:
# a benchmark, run by tests/gpu/native.sh).
set -u
app=$1 lib=$2 rounds=${3:-7} reps=${4:-5000}
tmp=$(mktemp -d)
loop() { "$@" "$app" "$reps" 2>/dev/null | awk '/^LOOP_S/ {print $2}'; }
for r in $(seq "$rounds"); do
  loop env >> "$tmp/plain"
  loop env CUDA_INJECTION64_PATH="$lib" CPROTON_NAME="$tmp/k" >> "$tmp/kernel"
  loop env CUDA_INJECTION64_PATH="$lib" CPROTON_CONTEXT=native CPROTON_NAME="$tmp/n" >> "$tmp/native"
done
med() { sort -g "$1" | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }
p=$(med "$tmp/plain") k=$(med "$tmp/kernel") n=$(med "$tmp/native")
launches=$((reps * 8))
awk -v p="$p" -v k="$k" -v n="$n" -v l="$launches" -v r="$rounds" 'BEGIN {
  printf "native_stacks: %d launches, %d rounds, medians: plain %.4f s, kernel %.4f s, native %.4f s\n", l, r, p, k, n
  printf "RESULT native_stacks kernel/plain %.3fx native/plain %.3fx native/kernel %.3fx added per launch %.2f us (native) %.2f us (kernel)\n",
         k / p, n / p, n / k, (n - p) / l * 1e6, (k - p) / l * 1e6
  if (n / p > 1.10) print "FAIL native_stacks: native/plain above the 1.10x target"
  else print "PASS native_stacks: native/plain within 1.10x"
}'
rm -rf "$tmp"
