"""Compares two tree profiles of the same program path by path (Proton's and
cproton's Hatchet JSON): the paths each has, the launch count on every path,
and the kernel time on every path (tests/gpu/realprograms.sh).

usage: compare_trees.py NAME PROTON.hatchet CPROTON.hatchet [TIME_TOLERANCE] [--python]

Prints RESULT lines and PASS/FAIL NAME: paths (both have the same paths with
a count), counts (equal on every path), time (the total kernel time, and every
path holding >= 1% of it, within the tolerance, default 0.25, of Proton's:
two runs of a program do not take the same time, so this catches a wrong
attribution, not noise). Frames of the profilers' own launchers and of the
runner (runpy, realprog_run.py) are dropped from python-context paths, the
rest is compared as written. With --python (context="python" profiles),
three documented differences are taken out before comparing: frames name
files by base name (the cproton copy of a program lives elsewhere), torch's
own frames are dropped (cproton drops its dispatch and nn.Module plumbing
while the backward link is on, docs/python.md), and cproton's kernels under
its `<backward>` link (Proton, which has no link, puts autograd's kernels at
ROOT) are compared by kernel name: every other cproton path must be
Proton's with the same count, and each kernel's total count and time must
be Proton's."""
import json
import sys

SKIP = ("/triton/profiler/", "/cproton/", "runpy.py", "realprog_run.py", "<frozen runpy>")
TORCH = "/site-packages/torch/"


def _keep(name, python):
    return not any(s in name for s in SKIP) and not (python and TORCH in name)


def _frame(name, python):
    if python and ":" in name and "/" in name.split(":", 1)[0]:
        return name.rsplit("/", 1)[1]
    return name


def flatten(path, python=False):
    with open(path) as f:
        root = json.load(f)[0]
    out = {}

    def walk(node, prefix):
        name = node["frame"]["name"]
        if python and name == "<backward>":
            prefix = ("<backward>",)  # compared by kernel name, see above
            name = None
        here = prefix + (_frame(name, python),) if name and _keep(name, python) else prefix
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


def _show(label, rows):
    for r in rows[:8]:
        print(f"  {label:<15}: {r}")


def _verdict(name, checks):
    for what, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'} {name} {what}")
    return 0 if all(ok for _, ok in checks) else 1


def _launches(tree):
    return sum(c for c, _ in tree.values())


def _off(mine, theirs, tol):
    return theirs > 0 and abs(mine / theirs - 1) > tol


def main():
    python = "--python" in sys.argv
    argv = [x for x in sys.argv if x != "--python"]
    name, a_path, b_path = argv[1:4]
    tol = float(argv[4]) if len(argv) > 4 else 0.25
    a, b = flatten(a_path, python), flatten(b_path, python)
    ta, tb = _total(a), _total(b)
    head = (f"launches proton {_launches(a)}, cproton {_launches(b)}; "
            f"kernel time proton {ta / 1e6:.3f} ms, cproton {tb / 1e6:.3f} ms")
    if python:
        return compare_linked(name, a, b, tol, head)
    both = sorted(set(a) & set(b))
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    bad_counts = [p for p in both if a[p][0] != b[p][0]]
    slow = [p for p in both if a[p][1] >= 0.01 * ta and _off(b[p][1], a[p][1], tol)]
    print(f"RESULT {name}: paths proton {len(a)}, cproton {len(b)}, common {len(both)}; {head}")
    _show("only in proton", [f"{' / '.join(p)} count {a[p][0]}" for p in only_a])
    _show("only in cproton", [f"{' / '.join(p)} count {b[p][0]}" for p in only_b])
    _show("count differs", [f"{' / '.join(p)} proton {a[p][0]}, cproton {b[p][0]}" for p in bad_counts])
    _show("time differs", [f"{' / '.join(p)} cproton/proton {b[p][1] / a[p][1]:.2f}" for p in slow])
    return _verdict(name, [("paths", not only_a and not only_b), ("counts", not bad_counts),
                           ("time", ta > 0 and not _off(tb, ta, tol) and not slow)])


def by_kernel(tree):
    out = {}
    for p, (c, t) in tree.items():
        k = out.get(p[-1], (0, 0.0))
        out[p[-1]] = (k[0] + c, k[1] + t)
    return out


def compare_linked(name, a, b, tol, head):
    linked = {p: v for p, v in b.items() if p[0] == "<backward>"}
    forward = {p: v for p, v in b.items() if p[0] != "<backward>"}
    bad_paths = [p for p in forward if a.get(p, (None,))[0] != forward[p][0]]
    ka, kb = by_kernel(a), by_kernel(b)
    bad_counts = sorted(k for k in set(ka) | set(kb) if ka.get(k, (0,))[0] != kb.get(k, (0,))[0])
    ta, tb = _total(a), _total(b)
    slow = [k for k in ka if ka[k][1] >= 0.01 * ta and _off(kb.get(k, (0, 0.0))[1], ka[k][1], tol)]
    print(f"RESULT {name}: paths proton {len(a)}, cproton {len(b)} ({len(linked)} under <backward>, "
          f"{_launches(linked)} launches); {head}")
    _show("not Proton's", [f"{' / '.join(p)} count {forward[p][0]}, Proton {a.get(p, (0,))[0]}" for p in bad_paths])
    _show("count differs", [f"{k} proton {ka.get(k, (0,))[0]}, cproton {kb.get(k, (0,))[0]}" for k in bad_counts])
    _show("time differs", slow)
    return _verdict(name, [("paths", not bad_paths), ("counts", not bad_counts),
                           ("time", ta > 0 and not _off(tb, ta, tol) and not slow)])


if __name__ == "__main__":
    sys.exit(main())
