#!/usr/bin/env bash
# tests/gpu/graphs.sh OUT BUILD -- CUDA graphs (issue 23), a part of
# tests/gpu/run.sh: placement of every replayed kernel against Proton 3.6
# (bench/graph_check.py place: do_bench_cudagraph over 8 matmul sizes with
# cuBLAS and autotuned Triton, and compiled GPT inference; zero misplaced
# kernels, no end-of-run warning), resident memory over GRAPH_RSS_S seconds
# of graph replays (default 60), and the fresh-process overhead benchmark
# (bench/fresh_process.py: none, the CUPTI floor, Proton 3.6, cproton,
# cproton's graph-level mode; FRESH_ROUNDS rounds, default 3, within
# FRESH_BUDGET seconds, default 240). GRAPH_PARTS picks among
# "place rss fresh". Prints PASS/FAIL/RESULT lines.
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
    fresh) $py "$root/bench/fresh_process.py" --workloads gpt_graph,matmul_graph \
             --variants ${FRESH_VARIANTS:-none,floor,proton,cproton,cproton-graph} \
             --rounds "${FRESH_ROUNDS:-3}" --budget "${FRESH_BUDGET:-240}" \
             --out "$out/fresh" || status=1 ;;
  esac
done
exit $status
