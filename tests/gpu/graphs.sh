#!/usr/bin/env bash
# tests/gpu/graphs.sh OUT BUILD -- CUDA graphs (issue 23), a part of
# tests/gpu/run.sh: placement of every replayed kernel against Proton 3.6
# (bench/graph_check.py place: do_bench_cudagraph over 8 matmul sizes with
# cuBLAS and autotuned Triton, and compiled GPT inference; zero misplaced
# kernels, no end-of-run warning), resident memory over GRAPH_RSS_S seconds
# of graph replays (default 60), and the fresh-process overhead benchmark
# (bench/fresh_process.py: none, the CUPTI floor, Proton 3.6, cproton,
# cproton's graph-level mode, or FRESH_VARIANTS, e.g. "breakdown"; on
# FRESH_WORKLOADS, default both; FRESH_ROUNDS rounds, default 3, within
# FRESH_BUDGET seconds, default 400). GRAPH_PARTS picks among
# "place rss fresh". Prints PASS/FAIL/RESULT lines. One device call (10 min)
# fits the build with place and rss, or one workload's fresh benchmark:
#   PART_TIMEOUT=420 GRAPH_PARTS="place rss" bash tests/gpu/run.sh build graphs
#   PART_TIMEOUT=480 GRAPH_PARTS=fresh FRESH_WORKLOADS=gpt_graph bash tests/gpu/run.sh graphs
set -u
out=${1:-/tmp/cproton-graphs}
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
mkdir -p "$out"
status=0
for part in ${GRAPH_PARTS:-place rss fresh}; do
  case $part in
    place) $py "$root/bench/graph_check.py" place --out "$out/place" || status=1 ;;
    rss) $py "$root/bench/graph_check.py" rss --seconds "${GRAPH_RSS_S:-60}" \
           --out "$out/rss" || status=1 ;;
    fresh) $py "$root/bench/fresh_process.py" \
             --workloads "${FRESH_WORKLOADS:-gpt_graph,matmul_graph}" \
             --variants "${FRESH_VARIANTS:-none,floor,proton,cproton,cproton-graph}" \
             --rounds "${FRESH_ROUNDS:-3}" --budget "${FRESH_BUDGET:-400}" \
             --out "$out/fresh" || status=1 ;;
  esac
done
exit $status
