#!/usr/bin/env bash
# pmsampling:exact on the GPU (issue 27 item 2): per-kernel counter values
# from CUPTI's range profiler (auto range per kernel, kernel replay) for a
# Triton matmul, a cuBLAS matmul and a Triton vector add (>= 50 us each;
# tests/gpu/python/pm_kernels.py), compared with Nsight Compute on the same
# script and the same Perfworks metrics (read from
# src/backend/cupti/pm_metrics.c, the one list) at --clock-control none (the
# range profiler does not lock clocks), difference in percentage points per
# kernel and metric; then the mode's cost: wall time of the profiled region
# in fresh processes, median of RUNS, unprofiled vs kernel-level vs exact.
# Fail-soft: every step prints PASS/FAIL/RESULT and the part goes on.
# Budget: under 3 minutes on an H100.
# Usage: tests/gpu/pmexact.sh [OUT_DIR] [BUILD]   (or: tests/gpu/run.sh build pmexact)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-out/gpu-pmexact}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=${2:-${BUILD:-$root/build}}
py=${PYTHON:-python3}
runs=${RUNS:-3}
fails=0
metrics=$("$py" "$here/python/pm_compare.py" ncu-metrics)
echo "RESULT pmexact metrics=$metrics"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null |
  sed 's/^/RESULT pmexact gpu=/'

# 0. The mode's range-profiler side alone (tests/gpu/pm_exact_probe.c, linked
# with the build's libcproton.a): no CUPTI backend, no mode string; the
# real range profiler on a compute-bound and a memory-bound kernel, a
# 4-range image (decoded when full), per-node values, the launches' wall
# time with the mode on and off.
cuda_inc=$(dirname "$(ls /usr/local/cuda*/include/cupti.h /usr/local/cuda*/extras/CUPTI/include/cupti.h 2>/dev/null | head -1)")
if [ -f "$build/libcproton.a" ] &&
   gcc -std=gnu11 -O1 -I"$cuda_inc" -I/usr/local/cuda/include -I"$root/src" -I"$root/include" \
     "$here/pm_exact_probe.c" "$build/libcproton.a" -lz -lpthread -ldl -lm \
     -o "$out/pm_exact_probe" >"$out/probe_build.log" 2>&1; then
  timeout -k 5 60 "$out/pm_exact_probe" "$out/probe" >"$out/probe.log" 2>&1
  grep -E "^(RESULT|PASS|FAIL)|pmsampling:exact" "$out/probe.log"
  grep -q "^PASS pm_exact_probe$" "$out/probe.log" || fails=$((fails + 1))
  [ -s "$out/probe.hatchet" ] && { "$py" "$here/python/pm_exact_table.py" --probe "$out/probe.hatchet" 10 ||
    fails=$((fails + 1)); }
else
  echo "FAIL pm_exact_probe: not built (see $out/probe_build.log)"; tail -5 "$out/probe_build.log"; fails=$((fails + 1))
fi

# 1. cproton, pmsampling:exact (its info lines: passes, range names, counts).
if (cd "$out" && timeout -k 5 60 "$py" "$here/python/pm_exact_run.py" exact "$out/exact") \
     >"$out/exact.log" 2>&1 && [ -s "$out/exact.hatchet" ]; then
  grep -E "^RESULT|pmsampling:exact" "$out/exact.log" | head -20; echo "PASS pm_exact_run"
else
  echo "FAIL pm_exact_run (see $out/exact.log)"; tail -8 "$out/exact.log"; fails=$((fails + 1))
fi

# 2. Nsight Compute, same script, same metrics, clocks not locked.
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
if [ -z "$ncu" ]; then
  echo "FAIL pm_ncu none: no ncu"; fails=$((fails + 1))
elif (cd "$out" && timeout -k 5 80 "$ncu" --metrics "$metrics" --clock-control none \
      -k 'regex:matmul_kernel|pm_add_kernel|gemm|xmma|nvjet|cutlass' --csv --page raw \
      "$py" "$here/python/pm_exact_run.py" none "$out/ncu") >"$out/ncu_none.csv" 2>"$out/ncu_none.err"; then
  "$py" "$here/python/pm_ncu_table.py" "$out/ncu_none.csv" none >"$out/ncu_none.log" 2>&1 ||
    fails=$((fails + 1))
  grep -E "^(PASS|FAIL)" "$out/ncu_none.log"
else
  echo "FAIL pm_ncu none (see $out/ncu_none.err)"; tail -5 "$out/ncu_none.err"; fails=$((fails + 1))
fi

# 3. Both side by side, per kernel and metric (percentage points).
if [ -s "$out/exact.hatchet" ]; then
  "$py" "$here/python/pm_exact_table.py" "$out/exact.hatchet" "$out/ncu_none.log" ||
    fails=$((fails + 1))
fi

# 4. Cost: fresh processes, median wall time of the profiled region.
median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "nan")}'; }
for mode in none kernel exact; do
  n=$runs; [ "$mode" = kernel ] && n=1
  : >"$out/wall_$mode.txt"
  for i in $(seq "$n"); do
    (cd "$out" && timeout -k 5 30 "$py" "$here/python/pm_exact_run.py" "$mode" "$out/cost_${mode}_$i") \
      >"$out/cost_${mode}_$i.log" 2>&1 &&
      grep -oE "mode=$mode s=[0-9.]+" "$out/cost_${mode}_$i.log" | cut -d= -f3 >>"$out/wall_$mode.txt"
  done
  m=$(median <"$out/wall_$mode.txt"); eval "med_$mode=$m"
  echo "RESULT pm_exact_cost mode=$mode median_s=$m runs=$(wc -l <"$out/wall_$mode.txt")"
done
if awk -v a="${med_exact:-nan}" -v b="${med_none:-nan}" 'BEGIN {exit !(a + 0 > 0 && b + 0 > 0)}'; then
  awk -v a="$med_exact" -v b="$med_none" -v k="${med_kernel:-nan}" \
    'BEGIN {printf "RESULT pm_exact_cost exact_vs_unprofiled=%.2fx kernel_level_vs_unprofiled=%s\n", a / b, (k + 0 > 0 ? sprintf("%.2fx", k / b) : "nan")}'
  echo "PASS pm_exact_cost"
else
  echo "FAIL pm_exact_cost (see $out/cost_*.log)"; fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && echo "PASS pmexact" || { echo "FAIL pmexact ($fails steps)"; exit 1; }
