"""One scripted profile, recorded by Proton 3.9 itself or by cproton, written
as hatchet_msgpack bytes to argv[2]. Run by test_proton39_msgpack.py: with
"proton39" under a venv holding triton==3.9.0 (its libproton runs without a
GPU on the instrumentation backend), with "cproton" under ours. Both must
write the same bytes.

Children are entered in name order (Proton 3.9 keeps first-seen order, we
keep name order); metric names carry no (exc)/(pty) suffix."""
import sys

LONG = "a_scope_whose_name_is_longer_than_sixty_four_bytes_so_proton_caches_it"

# (path of scope names, metrics added on entry)
STEPS = [
    (["a_first"], {"alpha": 1, "zeta": 2.5}),
    (["a_first", "inner"], {"bytes": 7, "neg": -70000, "big": 2 ** 40}),
    (["a_first", "inner"], {"bytes": 3, "neg": -1, "big": 1}),
    (["b_second"], {"flops": 1.0e12, "small": -5, "u8": 200, "u16": 60000}),
    (["b_second", LONG], {"x": 0.1}),
    (["c" * 40], {}),
    # vector metrics (lists): summed element by element, written as arrays
    (["d_vectors"], {"hist": [1.0, 2.5], "ids": [1, -2, 300], "empty": [], "big": [2 ** 40]}),
    (["d_vectors"], {"hist": [0.5, 0.5], "ids": [1, 1, 70000], "empty": [], "big": [1]}),
]


def run_proton39(path):
    from triton._C.libproton import proton as lp
    sid = lp.start(path + ".unused", "shadow", "tree", "instrumentation", "cuda")
    for names, metrics in STEPS:
        ids = []
        for name in names:
            scope = lp.record_scope()
            lp.enter_scope(scope, name)
            ids.append((scope, name))
        if metrics:
            lp.add_metrics(ids[-1][0], metrics)
        for scope, name in reversed(ids):
            lp.exit_scope(scope, name)
    return bytes(lp.get_data_msgpack(sid, 0))


def run_cproton(path):
    import cproton as proton
    sid = proton.start(path + ".unused", backend="none")
    for names, metrics in STEPS:
        for name in names[:-1]:
            proton.enter_scope(name)
        with proton.scope(names[-1], metrics or None):
            pass
        for name in reversed(names[:-1]):
            proton.exit_scope(name)
    data = proton.data.get_msgpack(sid)
    proton.finalize(sid)
    return data


if __name__ == "__main__":
    which, out = sys.argv[1], sys.argv[2]
    raw = run_proton39(out) if which == "proton39" else run_cproton(out)
    with open(out, "wb") as f:
        f.write(raw)
