"""Runs proton_example.py with cproton and (when it works here) with Proton,
and compares the two trees' shapes and kernel counts."""
import os
import runpy
import subprocess
import sys

from common import find, load, shape

here = os.path.dirname(os.path.abspath(__file__))
example = os.path.join(here, "proton_example.py")
runpy.run_path(example, run_name="__main__")
ours = load("add.hatchet")[0]
# 3 iterations + the launch in state "final": a launch-hook op, which states
# do not rename (as in Proton), so it merges with ROOT/add_98432
assert len(find(ours, "add_98432")) == 4
assert find(ours, "torch_add") and not find(ours, "final")
os.rename("add.hatchet", "add_cproton.hatchet")

src = open(example).read().replace("import cproton as proton  # was: import triton.profiler as proton",
                                    "import triton.profiler as proton")
with open("proton_example_proton.py", "w") as f:
    f.write(src)
env = dict(os.environ, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
r = subprocess.run([sys.executable, "proton_example_proton.py"], env=env, capture_output=True, text=True)
if r.returncode != 0:
    print("Proton run failed; skipping the comparison:\n", r.stderr[-2000:])
else:
    theirs = load("add.hatchet")[0]
    print("proton shape :", shape(theirs))
    print("cproton shape:", shape(ours))
    assert shape(theirs) == shape(ours), "tree shapes differ"
    for name in ("add_98432",):
        a = sorted(n["metrics"]["count"] for n in find(ours, name))
        b = sorted(n["metrics"]["count"] for n in find(theirs, name))
        assert a == b, (a, b)
print("PASS proton_example: same tree shape and counts as Proton" if r.returncode == 0
      else "PASS proton_example (Proton could not run here)")
