#!/usr/bin/env bash
# GPU tests of PC sampling (docs/cupti.md). usage: tests/gpu/pcsampling.sh
# OUT_DIR [BUILD_DIR]. Prints PASS/FAIL and RESULT lines; exits non-zero on
# a failure. Cases: a tiny PyTorch kernel first after start with its context
# and module loaded before (tests/gpu/pcs/torch_warm.py), a Triton kernel with hook="triton" (loaded under the
# session and before it; default and exact modes), a native nvcc -lineinfo
# program through injection (direct launches and a CUDA graph), bad modes,
# Proton's test_pcsampling repeated in a warm process (tests/gpu/pcs/
# tiny_first.py), the concurrent rule's error against exact mode
# (bench/pcsampling_contexts.py) and the overhead/accuracy benchmark
# (bench/pcsampling_overhead.py).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-out/gpu-pcs}}; mkdir -p "$out"; out=$(cd "$out" && pwd)
build=${2:-${BUILD:-$root/build}}
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-python3}
chk="$py $here/pcs/pcs_check.py"
fail=0
# PCS_CASES: the groups to run (default all): torch tiny triton native bad
# proton bench
want() { [[ " ${PCS_CASES:-torch tiny triton native bad proton bench} " == *" $1 "* ]]; }
run() { # name cmd...: PASS when the command succeeds
  local name=$1; shift
  if (cd "$out" && "$@") >"$out/$name.log" 2>&1; then echo "PASS $name"
  else echo "FAIL $name (see $name.log)"; tail -15 "$out/$name.log"; fail=1; fi
  grep -E "^(PASS|FAIL|RESULT)" "$out/$name.log" | sed "s/^/  /"
}
# A tiny library kernel as the first launch after start, its context and
# module loaded before (Proton's test_pcsampling after the rest of its file);
# Proton itself on the same program, for comparison, when asked (PCS_PROTON=1).
if want torch; then
  for when in warm cold; do
    for mode in pcsampling pcsampling:exact; do
      [ "$when" = cold ] && [ "$mode" = pcsampling:exact ] && continue
      tag=torch_${when}_${mode/:/_}
      run "$tag" env CPROTON_LOG=${CPROTON_LOG:-debug} "$py" "$here/pcs/torch_warm.py" "$out/$tag" "$mode" "$when"
    done
  done
fi
# Proton's test_pcsampling, 20 times in one warm process (a ~2 us fill
# kernel under "init" must carry samples). PCS_TINY: specs
# "tag|profiler|mode|VAR=VALUE,..." (the last field optional).
# Asserted every time: the Triton kernel's part, nothing outside the scopes,
# every sample read in the profile. The fill's part holds in about half the
# repetitions for Proton too (docs/compatibility.md): cproton's count of
# them must not fall below Proton's by more than 7 of 20 (~2.2 standard
# deviations of the difference at p = 0.55).
hits() { sed -n 's/.*: hits=\([0-9]*\)\/.*/\1/p' "$out/$1.log" | tail -1; }
if want tiny; then
  for spec in ${PCS_TINY:-tiny|cproton|pcsampling tiny_proton|proton|pcsampling}; do
    IFS='|' read -r tag prof mode envs <<<"$spec"
    run "$tag" env CPROTON_LOG=info ${envs//,/ } "$py" "$here/pcs/tiny_first.py" "$out/$tag" "$mode" "$prof" "${PCS_TINY_ITERS:-20}"
  done
  c=$(hits tiny); p=$(hits tiny_proton)
  if [ -n "$c" ] && [ -n "$p" ]; then
    if [ "$c" -ge $((p - 7)) ]; then echo "PASS tiny_vs_proton: fill sampled in $c (cproton) vs $p (Proton) repetitions"
    else echo "FAIL tiny_vs_proton: fill sampled in $c (cproton) vs $p (Proton) repetitions"; fail=1; fi
  fi
fi
want torch && [ "${PCS_PROTON:-0}" = 1 ] && run torch_warm_proton "$py" "$here/pcs/torch_warm.py" "$out/torch_warm_proton" pcsampling warm proton
if want triton; then
  for when in cold warm; do
    for mode in pcsampling pcsampling:exact; do
      tag=${when}_${mode/:/_}
      run "triton_$tag" "$py" "$here/pcs/triton_pcs.py" "$out/triton_$tag" "$mode" "$when"
      run "triton_${tag}_check" $chk "$out/triton_$tag.hatchet" "triton_$tag" --lines \
        --source "$root/bench/kernels/pcs_kernels.py" --loop-lines load,fma --under test \
        --expect-dominant "load=stalled_long_scoreboard|stalled_lg_throttle"
    done
  done
fi
if want native; then
  if nvcc -O2 -lineinfo -arch=native "$here/pcs/pcs_app.cu" -o "$out/pcs_app" >"$out/nvcc.log" 2>&1; then
    for mode in pcsampling pcsampling:exact; do
      tag=${mode/:/_}
      run "native_$tag" env CPROTON_LOG=${CPROTON_LOG:-info} CUDA_INJECTION64_PATH="$build/libcproton.so" CPROTON_MODE="$mode" \
        CPROTON_NAME="$out/native_$tag" "$out/pcs_app"
      # a crash: its backtrace, where gdb is installed
      if grep -q "Segmentation\|core dumped" "$out/native_$tag.log" 2>/dev/null || [ ! -f "$out/native_$tag.hatchet" ]; then
        command -v gdb >/dev/null && (cd "$out" && env CUDA_INJECTION64_PATH="$build/libcproton.so" CPROTON_MODE="$mode" \
          CPROTON_NAME="$out/native_${tag}_gdb" gdb -batch -ex run -ex bt "$out/pcs_app") 2>&1 | tail -40
      fi
      run "native_${tag}_check" $chk "$out/native_$tag.hatchet" "native_$tag" --lines --loop-lines 13,14 \
        --expect-dominant "13=stalled_long_scoreboard|stalled_lg_throttle"
      run "native_${tag}_graph" $chk "$out/native_$tag.hatchet" "native_${tag}_graph" --under replay --lines
    done
  else
    echo "FAIL native: nvcc failed (see nvcc.log)"; fail=1
  fi
fi
# Bad modes are refused at start, naming the valid range.
if want bad; then
  run bad_mode "$py" -c "
import cproton
for m in ('pcsampling:interval=abc', 'pcsampling:interval=7', 'pcsampling:foo'):
    try:
        cproton.start('bad', backend='cupti', mode=m); print('FAIL bad_mode: accepted', m); raise SystemExit(1)
    except Exception as e:
        assert '32..2147483648' in str(e) or 'unknown option' in str(e), e
        print('PASS bad_mode:', m, '->', e)
"
fi
# Proton's own tests, when their files are handed in (never committed):
# PROTON_TESTS=dir holding test_profile.py, test_api.py (Proton 3.6).
if want proton && [ -n "${PROTON_TESTS:-}" ] && [ -f "$PROTON_TESTS/test_profile.py" ]; then
  mkdir -p "$out/proton_tests"
  for f in test_profile.py test_api.py; do
    sed -e 's/import triton\.profiler as proton/import cproton as proton/' \
        -e 's/from triton\.profiler\./from cproton./' "$PROTON_TESTS/$f" >"$out/proton_tests/$f"
  done
  run proton_tests "$py" -m pytest -q -p no:cacheprovider "$out/proton_tests/test_profile.py::test_pcsampling" \
    "$out/proton_tests/test_api.py::test_profile_mode"
fi
want bench && [ "${PCS_BENCH:-1}" = 1 ] && run bench_contexts "$py" "$root/bench/pcsampling_contexts.py" "$out/bench_ctx" "${PCS_CTX_ROUNDS:-2}"
want bench && [ "${PCS_BENCH:-1}" = 1 ] && run bench env CPROTON_LOG=info "$py" "$root/bench/pcsampling_overhead.py" "$out/bench" "${PCS_ROUNDS:-5}"
exit $fail
