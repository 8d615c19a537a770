"""One fresh-process worker of the PC sampling benchmarks (pcsampling_overhead.py,
pcsampling_contexts.py): runs `script --worker mode out` and returns the JSON it prints
on a `JSON ` line with its stderr, or None after printing why not (a failure, or no
result within the time limit: a hung worker is reported, never waited on for ever)."""
import json, subprocess, sys


def run_worker(script, mode, out, env, timeout, label):
    try:
        p = subprocess.run([sys.executable, script, "--worker", mode, out], capture_output=True,
                           text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        print(f"FAIL {label}: no result in {e.timeout:.0f} s (hung); its stderr: {(e.stderr or b'')[-800:]!r}")
        return None
    js = [l for l in p.stdout.splitlines() if l.startswith("JSON ")]
    if p.returncode or not js:
        print(f"FAIL {label}: rc={p.returncode} {p.stderr[-800:]}")
        return None
    return json.loads(js[0][5:]), p.stderr


def dispatch(worker, driver, default_rounds):
    """The benchmarks' command line: `--worker MODE OUTDIR` runs one fresh-process
    worker, `OUTDIR [ROUNDS]` the driver. Returns the driver's exit status."""
    if sys.argv[1] == "--worker":
        return worker(sys.argv[2], sys.argv[3])
    return driver(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else default_rounds)
