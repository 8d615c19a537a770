"""Fresh-process workers of the benchmarks: each measurement runs in a new
Python process (nothing a previous variant loaded, compiled or subscribed
carries over) that prints its result as JSON on a `JSON ` line.

- run_worker: one worker, `script --worker MODE OUT` (the PC sampling
  benchmarks: pcsampling_overhead.py, pcsampling_contexts.py,
  first_launch.py); dispatch is their command line.
- interleaved: `script --child VARIANT ARGS...` for every variant, round
  after round (each round runs every variant in turn, so slow drift of the
  machine falls on all of them), the results by variant (the context
  benchmarks: context_layers.py, context_layers_cpu.py,
  context_python_cpu.py); median_of reduces them.

A failed worker, or one with no result within its time limit (hung: it is
reported, never waited on for ever), prints a FAIL line and is left out."""
import json, statistics, subprocess, sys


def _run(argv, env, timeout, label):
    """The JSON a worker printed and its stderr, or None after a FAIL line."""
    try:
        p = subprocess.run([sys.executable] + argv, capture_output=True,
                           text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        print(f"FAIL {label}: no result in {e.timeout:.0f} s (hung); its stderr: {(e.stderr or b'')[-800:]!r}")
        return None
    js = [l for l in p.stdout.splitlines() if l.startswith("JSON ")]
    if p.returncode or not js:
        print(f"FAIL {label}: rc={p.returncode} {p.stderr[-800:]}")
        return None
    return json.loads(js[0][5:]), p.stderr


def run_worker(script, mode, out, env, timeout, label):
    return _run([script, "--worker", mode, out], env, timeout, label)


def dispatch(worker, driver, default_rounds):
    """The benchmarks' command line: `--worker MODE OUTDIR` runs one fresh-process
    worker, `OUTDIR [ROUNDS]` the driver. Returns the driver's exit status."""
    if sys.argv[1] == "--worker":
        return worker(sys.argv[2], sys.argv[3])
    return driver(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else default_rounds)


def interleaved(script, variants, args, rounds, timeout=600, env=None):
    """{variant: [each round's JSON result]} of `script --child VARIANT *args`."""
    got = {v: [] for v in variants}
    for r in range(rounds):
        for v in variants:
            res = _run([script, "--child", v] + [str(a) for a in args], env,
                       timeout, f"{v} round {r}")
            if res:
                got[v].append(res[0])
    return got


def median_of(got, key):
    """{variant: the median of `key` over its rounds}, for variants with any."""
    return {v: statistics.median(r[key] for r in rs) for v, rs in got.items() if rs}
