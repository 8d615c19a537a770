#!/usr/bin/env python3
"""cupti_check.py -- checks the profiles written by tests/gpu/cupti_app.cu.

  cupti_check.py tree  PROFILE.hatchet EXPECTED.json EVENTS.json NAME
  cupti_check.py trace PROFILE.chrome_trace EXPECTED.json EVENTS.json NAME

Prints "PASS <name>: ..." / "FAIL <name>: why" lines; exits 1 on a failure.
Standard library only."""
import gzip
import json
import sys

failed = False


def result(ok, name, why=""):
    global failed
    failed |= not ok
    print(("PASS " if ok else "FAIL ") + name + (": " + why if why else ""))


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def find(root, path):
    node = root
    for name in path.split("/"):
        kids = [c for c in node.get("children", []) if c["frame"]["name"] == name]
        if not kids:
            return None
        node = kids[0]
    return node


def totals_by_name(node, acc):
    for c in node.get("children", []):
        m = c.get("metrics", {})
        if "device_id" in m:  # a kernel node
            acc[c["frame"]["name"]] = acc.get(c["frame"]["name"], 0) + m.get("count", 0)
        totals_by_name(c, acc)
    return acc


def check_tree(path, expected, events, tag):
    prof = load(path)
    root = prof[0]
    for where, count in expected:
        node = find(root, where)
        got = node["metrics"].get("count") if node else None
        result(got == count, f"{tag} count {where}", f"expected {count}, got {got}")
    want = {}
    for where, count in expected:
        want[where.split("/")[-1]] = want.get(where.split("/")[-1], 0) + count
    got = totals_by_name(root, {})
    for name, count in sorted(want.items()):
        result(got.get(name) == count, f"{tag} total {name}",
               f"expected {count}, got {got.get(name)}")
    spin = find(root, "timed/spin")
    if spin:
        t, e = spin["metrics"]["time (ns)"], sum(events)
        result(abs(t - e) <= 0.05 * e, f"{tag} spin time",
               f"profile {t} ns vs CUDA events {e:.0f} ns")
    dev = prof[1].get("CUDA", {}).get("0") if len(prof) > 1 else None
    ok = bool(dev) and dev.get("num_sms", 0) > 0 and dev.get("arch") and \
        dev.get("clock_rate", 0) > 0 and dev.get("bus_width", 0) > 0
    result(ok, f"{tag} device info", json.dumps(dev))


def check_trace(path, expected, events, tag):
    try:
        trace = load(path)
    except Exception as e:  # noqa: BLE001 -- report any parse failure
        result(False, f"{tag} valid json", str(e))
        return
    result(True, f"{tag} valid json")
    ev = trace.get("traceEvents", [])
    lanes = {(e["pid"], e["tid"]) for e in ev if e.get("ph") == "M" and
             e.get("name") == "thread_name"}
    gpu = {l for l in lanes if l[0] >= 1}
    cpu = {l for l in lanes if l[0] == 0}
    result(len(gpu) >= 4, f"{tag} gpu stream lanes", f"{sorted(gpu)}")
    result(len(cpu) >= 3, f"{tag} cpu thread lanes", f"{sorted(cpu)}")
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    want = sum(c for _, c in expected)
    result(len(kernels) == want, f"{tag} kernel events", f"{len(kernels)} vs {want}")
    starts = sum(1 for e in ev if e.get("ph") == "s")
    finishes = sum(1 for e in ev if e.get("ph") == "f")
    result(starts == finishes and starts >= want * 0.99, f"{tag} flow events",
           f"{starts} starts, {finishes} finishes, {want} kernels")
    spins = sorted((e for e in kernels if e["name"] == "spin"), key=lambda e: e["ts"])
    result(len(spins) == len(events), f"{tag} spin kernels", f"{len(spins)}")
    for i, (k, e) in enumerate(zip(spins, events)):
        d = k["dur"] * 1000.0
        result(abs(d - e) <= 0.05 * e, f"{tag} spin {i} time",
               f"trace {d:.0f} ns vs CUDA events {e:.0f} ns")
    scopes = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "scope"]
    result(any(s["name"] == "inner" for s in scopes), f"{tag} scope events")


def main():
    kind, path, exp_path, events_path, tag = sys.argv[1:6]
    with open(exp_path) as f:
        expected = json.load(f)
    with open(events_path) as f:
        events = json.load(f)
    try:
        (check_tree if kind == "tree" else check_trace)(path, expected, events, tag)
    except FileNotFoundError as e:
        result(False, f"{tag} profile", str(e))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
