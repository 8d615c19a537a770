#!/usr/bin/env bash
# tests/gpu/bench.sh OUT BUILD -- every GPU benchmark in bench/, in one go:
# the CUPTI launch-bound benchmark (issue 3), the Python hook/context
# overhead (issue 4), intra-kernel instrumentation overhead (issue 6), and
# the C scope pair on the GPU host's CPU, the instrumentation wall time per
# launch and the decoder's throughput (issue 12), and the real-program suite
# of issue 15 (bench/realworld.py; not in the default set: it takes minutes),
# and the python context's PyTorch layers on a GPT step (issue 28,
# bench/context_layers.py; not in the default set either: CTX_KIND eager or
# train, CTX_VARIANTS a comma list of its variants, all by default).
# Prints RESULT lines and tables. BENCH="scope instrument wall decode cupti
# launch realworld context" picks which (all but realworld and context by default); for
# realworld, WORKLOADS, VARIANTS (a list, or "ablation"), REPS (fresh
# processes per variant), RW_BLOCKS (alternating blocks per process),
# INSTR_ARGS / WALL_ARGS add flags to instrument_overhead.py / instrument_wall.py;
# RW_BUDGET (seconds: no child starts that would end later), RW_CPUS (pin
# the children), RW_STEPS and RW_WARMUP pass through to bench/realworld.py.
set -u
out=${1:-/tmp/cproton-bench}
build=${2:-${BUILD:-build}}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
py=${PYTHON:-python3}
which=${BENCH:-"scope instrument wall decode cupti launch"}
for b in $which; do
  case $b in
    scope) "$build/bench/scope_bench" 2000000 11 | sed 's/^/scope_bench: /' ;;
    instrument) $py "$root/bench/instrument_overhead.py" --reps ${REPS:-7} ${INSTR_ARGS:-} 2>&1 |
                  tee "$out/instrument_overhead.txt" ;;
    wall) $py "$root/bench/instrument_wall.py" --reps ${REPS:-3} ${WALL_ARGS:-} 2>&1 |
            tee "$out/instrument_wall.txt" ;;
    decode) "$build/bench/decode_bench" 3 | tee "$out/decode_bench.txt" ;;
    cupti) $py "$root/bench/cupti_overhead.py" --lib "$build/libcproton.so" --out "$out/cupti" \
             --steps ${STEPS:-20000} --reps ${REPS:-5} 2>&1 | tee "$out/cupti_overhead.txt" ;;
    launch) $py "$root/tests/gpu/python/launch_overhead.py" "$out" 2>&1 |
              tee "$out/launch_overhead.txt" ;;
    context) $py "$root/bench/context_layers.py" ${CTX_KIND:-eager} ${REPS:-3} "$out/context_layers" \
               ${CTX_VARIANTS:-} 2>&1 | tee "$out/context_layers.txt" ;;
    realworld) $py "$root/bench/realworld.py" --out "$out/realworld" --rounds ${REPS:-2} \
                 --blocks ${RW_BLOCKS:-6} --workloads ${WORKLOADS:-train,graph,eager,launch} \
                 ${VARIANTS:+--variants $VARIANTS} ${RW_STEPS:+--steps $RW_STEPS} \
                 ${RW_WARMUP:+--warmup $RW_WARMUP} ${RW_BUDGET:+--budget $RW_BUDGET} \
                 ${RW_CPUS:+--cpus $RW_CPUS} 2>&1 |
                 tee -a "$out/realworld.txt" ;;
  esac
done
