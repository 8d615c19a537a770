"""Checks the profile `cproton -n cli_profile -k triton cli_example.py` wrote."""
from common import find, load

root = load("cli_profile.hatchet")[0]
nodes = find(root, f"cli_add_{1 << 16}")
assert len(nodes) == 2 and all(n["metrics"]["count"] == 2 for n in nodes), nodes
assert {c["frame"]["name"] for c in root["children"]} >= {"step0", "step1"}
print("PASS cli profile: 2 scopes x 2 launches, op-named by launch metadata")
