#!/usr/bin/env bash
# tests/gpu/graphs.sh OUT BUILD -- CUDA graphs (issue 23), a part of
# tests/gpu/run.sh: placement of every replayed kernel against Proton 3.6
# (bench/graph_check.py place: do_bench_cudagraph over 8 matmul sizes with
# cuBLAS and autotuned Triton, and compiled GPT inference; zero misplaced
# kernels, no end-of-run warning), graph-level mode on a small graph and
# the compiled GPT (graph_check.py level; "level-only" for
# CPROTON_CUPTI_GRAPHS=graph-only), resident memory over GRAPH_RSS_S seconds
# of graph replays (default 60), and the fresh-process overhead benchmark
# (bench/fresh_process.py: none, the CUPTI floor, Proton 3.6, cproton,
# cproton's graph-level mode, or FRESH_VARIANTS, e.g. "breakdown"; on
# FRESH_WORKLOADS, default both; FRESH_ROUNDS rounds, default 3, starting no
# child past FRESH_BUDGET seconds, default 360), and "crash", not run by
# default: graph-level mode on the compiled GPT beside bare CUPTI's graph
# trace, with native backtraces of any crash (bench/graph_crash.py;
# CRASH_VARIANTS picks variants). GRAPH_PARTS picks among
# "place level level-only rss fresh crash"; GRAPH_PLACE_WORKLOADS among gpt_graph and
# matmul_graph (default both). Prints PASS/FAIL/RESULT lines. A device call
# runs at most 10 minutes, so the whole run is two calls, each building
# (a machine stays warm only briefly; estimates, not yet measured: ~7 and
# ~8 minutes). Compiler caches go to GRAPH_BENCH_CACHE
# (/tmp/cproton-graph-caches), outside the packed logs.
#   PART_TIMEOUT=420 GRAPH_PARTS="place level rss" bash tests/gpu/run.sh build graphs
#   PART_TIMEOUT=420 FRESH_BUDGET=300 GRAPH_PARTS=fresh bash tests/gpu/run.sh build graphs
#   PART_TIMEOUT=450 GRAPH_PARTS=crash bash tests/gpu/run.sh build graphs
#   PART_TIMEOUT=450 GRAPH_PARTS="level level-only" bash tests/gpu/run.sh build graphs
#   PART_TIMEOUT=450 FRESH_BUDGET=380 FRESH_WORKLOADS=gpt_graph \
#     FRESH_VARIANTS=none,floor,cproton,cproton-graph,cproton-graphonly \
#     GRAPH_PARTS=fresh bash tests/gpu/run.sh build graphs
set -u
out=${1:-/tmp/cproton-graphs}
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
mkdir -p "$out"
status=0
for part in ${GRAPH_PARTS:-place level rss fresh}; do
  case $part in
    place) $py "$root/bench/graph_check.py" place --out "$out/place" \
             --workloads "${GRAPH_PLACE_WORKLOADS:-gpt_graph,matmul_graph}" || status=1 ;;
    level) $py "$root/bench/graph_check.py" level --out "$out/level" || status=1 ;;
    level-only) GRAPH_LEVEL=graph-only $py "$root/bench/graph_check.py" level \
                  --out "$out/level-only" || status=1 ;;
    rss) $py "$root/bench/graph_check.py" rss --seconds "${GRAPH_RSS_S:-60}" \
           --out "$out/rss" || status=1 ;;
    fresh) $py "$root/bench/fresh_process.py" \
             --workloads "${FRESH_WORKLOADS:-gpt_graph,matmul_graph}" \
             --variants "${FRESH_VARIANTS:-none,floor,proton,cproton,cproton-graph}" \
             --rounds "${FRESH_ROUNDS:-3}" --budget "${FRESH_BUDGET:-360}" \
             --out "$out/fresh" || status=1 ;;
    crash) $py "$root/bench/graph_crash.py" --out "$out/crash" \
             ${CRASH_VARIANTS:+--variants "$CRASH_VARIANTS"} || status=1 ;;
  esac
done
exit $status
