"""Checks what `cproton -n cli_native -- ./native_app` wrote: the unmodified
CUDA program profiled through the injection library the command set up."""
from common import find, load

root = load("cli_native.hatchet")[0]
loop = [n for n in find(root, "loop")]
tiny = [c for n in loop for c in n["children"] if c["frame"]["name"] == "tiny"]
assert tiny and tiny[0]["metrics"]["count"] == 1000, tiny
print("PASS cli native: 1000 kernels under the program's NVTX range 'loop'")
