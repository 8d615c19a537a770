"""tests/gpu/native_check.py PROFILE REPS -- checks a native-stack profile of
tests/gpu/native_app.cu (tests/gpu/native.sh): every k_a / k_b kernel lies
under the NVTX range "train" (after the warm-up launches, which are outside
it) with app::forward / app::layer1 (k_a) or app::backward / app::layer2
(k_b) frames between, outermost first, named file:line@function with
native_app.cu lines; kernel counts are exact. Prints PASS/FAIL lines."""
import json
import sys


def walk(node, path, out):
    name = node["frame"]["name"]
    kids = node.get("children", [])
    if not kids and ("k_a" in name or "k_b" in name):
        out.append((path, name, node["metrics"].get("count", 0)))
    for c in kids:
        walk(c, path + [name], out)


def main():
    prof, reps = sys.argv[1], int(sys.argv[2])
    root = json.load(open(prof))[0]
    leaves = []
    walk(root, [], leaves)
    ok = True
    counts = {"k_a": 0, "k_b": 0}
    for path, name, count in leaves:
        kind = "k_a" if "k_a" in name else "k_b"
        counts[kind] += count
        print("path", " / ".join(path[1:] + [name]))
        if "train" not in path:
            continue  # the warm-up launch, outside the range
        want = (["app::forward", "app::layer1"] if kind == "k_a"
                else ["app::backward", "app::layer2"])
        idx = []
        for w in want:
            hits = [i for i, p in enumerate(path) if "@" + w + "(" in p]
            idx.append(hits[0] if hits else -1)
        if -1 in idx or idx != sorted(idx) or idx[0] < path.index("train"):
            print(f"FAIL native frames of {kind}: want {want} below 'train' in order")
            ok = False
        elif not all("native_app.cu:" in path[i] for i in idx):
            print(f"FAIL native frames of {kind} lack native_app.cu:line")
            ok = False
    want_a, want_b = 4 * reps + 4, 4 * reps
    if counts != {"k_a": want_a, "k_b": want_b}:
        print(f"FAIL kernel counts {counts}, want k_a {want_a}, k_b {want_b}")
        ok = False
    print("PASS native frames" if ok else "FAIL native frames")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
