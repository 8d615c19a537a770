"""Compares two tree profiles of the same program path by path (Proton's and
cproton's Hatchet JSON): the paths each has, the launch count on every path,
and the kernel time on every path (tests/gpu/realprograms.sh).

usage: compare_trees.py NAME PROTON.hatchet CPROTON.hatchet [TIME_TOLERANCE]

Prints RESULT lines and PASS/FAIL NAME: paths (both have the same paths with
a count), counts (equal on every path), time (the total kernel time, and every
path holding >= 1% of it, within the tolerance, default 0.25, of Proton's:
two runs of a program do not take the same time, so this catches a wrong
attribution, not noise). Frames of the profilers' own launchers and of the
runner (runpy, realprog_run.py) are dropped from python-context paths, the
rest is compared as written."""
import json
import sys

SKIP = ("/triton/profiler/", "/cproton/", "runpy.py", "realprog_run.py", "<frozen runpy>")


def _keep(name):
    return not any(s in name for s in SKIP)


def flatten(path):
    with open(path) as f:
        root = json.load(f)[0]
    out = {}

    def walk(node, prefix):
        name = node["frame"]["name"]
        here = prefix + (name,) if _keep(name) else prefix
        m = node.get("metrics", {})
        if m.get("count"):
            c, t = out.get(here, (0, 0.0))
            # a kernel reached through a dropped frame merges with its
            # sibling path, as the metrics of one frame would
            out[here] = (c + int(m["count"]), t + float(m.get("time (ns)", 0.0)))
        for ch in node["children"]:
            walk(ch, here)

    for ch in root["children"]:
        walk(ch, ("ROOT",))
    return out


def _total(tree):
    """Both profilers write count and time on kernel nodes only (frames
    carry none), so the sum over paths counts every launch once."""
    return sum(t for _, t in tree.values())


def main():
    name, a_path, b_path = sys.argv[1:4]
    tol = float(sys.argv[4]) if len(sys.argv) > 4 else 0.25
    a, b = flatten(a_path), flatten(b_path)
    only_a = sorted(set(a) - set(b))
    only_b = sorted(set(b) - set(a))
    both = sorted(set(a) & set(b))
    bad_counts = [(p, a[p][0], b[p][0]) for p in both if a[p][0] != b[p][0]]
    ta, tb = _total(a), _total(b)
    print(f"RESULT {name}: paths proton {len(a)}, cproton {len(b)}, common {len(both)}; "
          f"launches proton {sum(v[0] for p, v in a.items())}, cproton {sum(v[0] for p, v in b.items())}; "
          f"kernel time proton {ta / 1e6:.3f} ms, cproton {tb / 1e6:.3f} ms")
    for p in only_a[:8]:
        print(f"  only in proton : {' / '.join(p)} count {a[p][0]}")
    for p in only_b[:8]:
        print(f"  only in cproton: {' / '.join(p)} count {b[p][0]}")
    for p, ca, cb in bad_counts[:8]:
        print(f"  count differs  : {' / '.join(p)} proton {ca}, cproton {cb}")
    slow = []
    for p in both:
        if ta > 0 and a[p][1] >= 0.01 * ta and a[p][1] > 0:
            r = b[p][1] / a[p][1]
            if abs(r - 1) > tol:
                slow.append((p, r))
    for p, r in slow[:8]:
        print(f"  time differs   : {' / '.join(p)} cproton/proton {r:.2f}")
    ok_paths = not only_a and not only_b
    ok_counts = not bad_counts
    ok_time = ta > 0 and abs(tb / ta - 1) <= tol and not slow
    for what, ok in (("paths", ok_paths), ("counts", ok_counts), ("time", ok_time)):
        print(f"{'PASS' if ok else 'FAIL'} {name} {what}")
    return 0 if ok_paths and ok_counts and ok_time else 1


if __name__ == "__main__":
    sys.exit(main())
