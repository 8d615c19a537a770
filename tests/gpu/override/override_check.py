"""Edits a dumped .ttgir as Proton's test_override.py does, and compares the
profiles the override gave under Proton and cproton (tests/gpu/override.sh).

usage: override_check.py edit DUMP_DIR
       override_check.py tree PROTON.hatchet CPROTON.hatchet
       override_check.py trace PROTON.chrome_trace CPROTON.chrome_trace
Prints PASS/FAIL/RESULT lines; exits non-zero on a failure."""
import collections
import json
import pathlib
import sys


def edit(dump):
    files = list(pathlib.Path(dump).rglob("*.ttgir"))
    assert len(files) == 1, files
    for f in pathlib.Path(dump).rglob("*"):
        if f.is_file() and f.suffix in (".ttir", ".llir", ".ptx", ".cubin", ".amdgcn", ".hsaco"):
            f.unlink()
    out, first = [], True
    for line in files[0].read_text().splitlines(keepends=True):
        if "tt.get_program_id x" in line:
            line = '    proton.record start "kernel" loc(#loc)\n' + line
        elif "arith.cmpi slt" in line:
            line += '    proton.record start "load_ops" loc(#loc)\n    proton.record start "load_x" loc(#loc)\n'
        elif "tt.load" in line and first:
            line += '    proton.record end "load_x" loc(#loc)\n    proton.record start "load_y" loc(#loc)\n'
            first = False
        elif "tt.load" in line:
            line += '    proton.record end "load_y" loc(#loc)\n    proton.record end "load_ops" loc(#loc)\n'
        elif "tt.return" in line:
            line = '    proton.record end "kernel" loc(#loc)\n' + line
        out.append(line)
    files[0].write_text("".join(out))
    print(f"PASS edit: {files[0].name} has {sum(s.count('proton.record') for s in out)} proton.record ops")


def scopes(node, path=()):
    """{scope path: metric names} below the kernel node, and the metrics."""
    out = {}
    for c in node["children"]:
        p = path + (c["frame"]["name"], )
        out[p] = c["metrics"]
        out.update(scopes(c, p))
    return out


def tree(proton_file, cproton_file):
    got = {}
    for who, path in (("proton", proton_file), ("cproton", cproton_file)):
        root = json.load(open(path))[0]
        kernel = root["children"][0]["children"][0]  # test_override.py's kernel_frame
        got[who] = scopes(kernel)
        load_ops = kernel["children"][0]
        # test_override.py's assertions, for both profilers
        assert "load_ops" in load_ops["frame"]["name"], (who, load_ops["frame"]["name"])
        assert {c["frame"]["name"] for c in load_ops["children"]} == {"load_x", "load_y"}, who
        for c in load_ops["children"]:
            assert c["metrics"]["cycles"] > 0 and c["metrics"]["normalized_cycles"] > 0, (who, c)
        print(f"RESULT tree {who}: " + ", ".join(f"{'/'.join(p)}={m.get('normalized_cycles', 0):.0f}"
                                                  for p, m in sorted(got[who].items())))
    assert got["proton"].keys() == got["cproton"].keys(), (sorted(got["proton"]), sorted(got["cproton"]))
    for p in got["proton"]:
        pm, cm = got["proton"][p], got["cproton"][p]
        # cproton adds count and normalized_time (ns) to every scope
        # (docs/instrumentation-runtime.md); Proton's own metrics must all be
        # there, its strings (device_id, device_type) equal.
        assert set(pm) <= set(cm), (p, pm, cm)
        assert set(cm) - set(pm) <= {"count", "normalized_time (ns)"}, (p, pm, cm)
        for k, v in pm.items():
            assert not isinstance(v, str) or cm[k] == v, (p, k, v, cm[k])
    print(f"PASS tree: the same {len(got['proton'])} scopes and Proton's metrics under both profilers")


def trace(proton_file, cproton_file):
    got = {}
    for who, path in (("proton", proton_file), ("cproton", cproton_file)):
        events = [e for e in json.load(open(path))["traceEvents"] if e.get("cat") == "add_kernel"]
        assert events, f"{who}: no add_kernel events"
        assert all(e.get("dur", 0) >= 0 for e in events), who
        got[who] = collections.Counter(e["name"] for e in events)
        lanes = len({(e["pid"], e["tid"]) for e in events})
        print(f"RESULT trace {who}: {dict(sorted(got[who].items()))} on {lanes} lanes")
    assert got["proton"] == got["cproton"], got
    print(f"PASS trace: the same events per scope under both profilers ({sum(got['proton'].values())})")


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    try:
        {"edit": edit, "tree": tree, "trace": trace}[what](*args)
    except AssertionError as e:
        print(f"FAIL {what}: {e}")
        sys.exit(1)
