"""The performance advisor's Python side (docs/advisor.md): Triton compile
facts read once per compiled kernel (compiled on the CPU for sm_90 and
sm_80), facts in the profile that Hatchet and Proton's viewer read without
complaint, and cproton.advise returning the C advisor's findings."""
import json
import os
import subprocess

import pytest

import cproton as proton
from cproton import _cproton as C
from cproton.hooks import facts

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "viewer", "inputs")


def _compile(kernel, signature, constexprs, arch, attrs=None, **options):
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    src = ASTSource(kernel, signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)


def _kernels():
    triton = pytest.importorskip("triton")
    tl = pytest.importorskip("triton.language")

    @triton.jit
    def dot_kernel(a, b, c, BM: tl.constexpr, PRECISION: tl.constexpr):
        offs = tl.arange(0, BM)
        x = tl.load(a + offs[:, None] * BM + offs[None, :])
        y = tl.load(b + offs[:, None] * BM + offs[None, :])
        tl.store(c + offs[:, None] * BM + offs[None, :], tl.dot(x, y, input_precision=PRECISION))

    @triton.jit
    def add_kernel(x, y, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y + offs, tl.load(x + offs) + 1.0)

    return dot_kernel, add_kernel


@pytest.mark.parametrize("arch,dtype,precision,want", [
    (90, "*fp16", "tf32", "wgmma"), (80, "*fp16", "tf32", "mma"), (90, "*fp32", "ieee", "fma")])
def test_mma_kind_from_cpu_compile(arch, dtype, precision, want):
    dot_kernel, _ = _kernels()
    k = _compile(dot_kernel, {"a": dtype, "b": dtype, "c": "*fp32", "BM": "constexpr", "PRECISION": "constexpr"},
                 {"BM": 64, "PRECISION": precision}, arch, num_warps=4, num_stages=2)
    got = facts.collect(k.metadata.name, k.metadata_group)
    assert got["triton.mma"] == want
    assert got["triton.num_warps"] == 4 and got["triton.num_stages"] == 2 and got["triton.num_ctas"] == 1
    assert got["triton.shared"] == k.metadata.shared
    assert "num_warps=4" in got["triton.config"]


@pytest.mark.parametrize("aligned,bits", [(True, 128), (False, 32)])
def test_vector_widths_and_no_dot(aligned, bits):
    """Pointers known 16-byte aligned: v4.b32 accesses; else scalar ones."""
    _, add_kernel = _kernels()
    attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]} if aligned else None
    k = _compile(add_kernel, {"x": "*fp32", "y": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 1024}, 90,
                 attrs=attrs, num_warps=4)
    got = facts.collect(k.metadata.name, k.metadata_group)
    assert got["triton.mma"] == "none" and got["triton.tma"] == 0
    assert got["triton.ld_bits"] == bits and got["triton.st_bits"] == bits
    assert got["triton.local_bytes"] == 0


def test_ptx_parsing():
    assert facts.from_ir("cp.async.cg.shared.global [ %r1 + 0 ], [ %rd2 + 0 ], 0x10, %r3;\n"
                         "cp.async.cg.shared.global [ %r1 + 0 ], [ %rd2 + 0 ], 16, %r3;", "")["triton.ld_bits"] == 128
    assert "triton.ld_bits" not in facts.from_ir("st.global.b32 [%rd1], %r1;", "")
    ptx = ("ld.global.v2.b32 {%r1, %r2}, [%rd1];\nld.global.L1::evict_last.b16 %h1, [%rd2];\n"
           "st.global.v4.b16 [%rd3], {%h1,%h2,%h3,%h4};\n.local .align 8 .b8 __local_depot0[48];\n"
           "cp.async.bulk.tensor.2d.shared::cluster.global [x], [y];\n")
    got = facts.from_ir(ptx, "tt.dot")
    assert got == {"triton.mma": "fma", "triton.tma": 1, "triton.ld_bits": 64, "triton.st_bits": 64,
                   "triton.local_bytes": 48}


def _profile(name):
    sid = proton.start(name, backend="fake", hook=None)
    C._fake_add_device(0)
    with proton.scope("fwd"):
        for _ in range(3):
            C._fake_launch("facts_kernel", 200_000)
        C._fake_launch("plain_kernel", 1000)
    with proton.scope("bwd"):
        C._fake_launch("facts_kernel", 100_000)
    proton.finalize(sid)
    return f"{name}.hatchet"


def test_facts_written_once_per_kernel_frame():
    C.kernel_fact("facts_kernel", "triton.num_warps", 4)
    C.kernel_fact("facts_kernel", "triton.num_warps", 8)  # the first value stays
    C.kernel_fact("facts_kernel", "triton.mma", "fma")
    with pytest.raises(ValueError):
        C.kernel_fact("facts_kernel", "triton.bogus", 1)
    with open(_profile("facts")) as f:
        tree = json.load(f)[0]
    seen = {}

    def walk(node, path):
        if "triton.num_warps" in node["metrics"]:
            seen["/".join(path)] = (node["metrics"]["triton.num_warps"], node["metrics"]["triton.mma"])
        for c in node["children"]:
            walk(c, path + [c["frame"]["name"]])
    walk(tree, [])
    assert seen == {"fwd/facts_kernel": (4, "fma"), "bwd/facts_kernel": (4, "fma")}


def test_facts_profile_loads_in_proton_readers(capsys):
    ht = pytest.importorskip("hatchet")
    viewer = pytest.importorskip("triton.profiler.viewer")
    C.kernel_fact("facts_kernel", "triton.n_regs", 96)
    path = _profile("readers")
    with open(path) as f:
        literal = json.load(f)
    gf = ht.GraphFrame.from_literal([literal[0]])
    row = gf.dataframe[gf.dataframe["name"] == "facts_kernel"].iloc[0]
    assert row["triton.n_regs"] == 96
    gf, inc, exc, info = viewer.read(path)
    assert "triton.n_regs" not in inc  # a per-frame fact, never summed up the tree
    metrics = viewer.derive_metrics(gf, ["time/ms"], inc, exc, info)
    viewer.print_tree(gf, metrics, depth=100, format="full", print_sorted=False)
    assert "facts_kernel" in capsys.readouterr().out


def test_advise_returns_the_viewers_findings():
    fire = [os.path.join(GOLDEN, "advise_fire.hatchet"), os.path.join(GOLDEN, "advise_fire_pcs.hatchet")]
    advice = proton.advise(fire)
    viewer = proton.advise.__globals__["_viewer"]()
    raw = json.loads(subprocess.run([viewer, "--advise", "--json", *fire], capture_output=True, text=True,
                                    check=True).stdout)
    assert [(f.rule, f.kernel, f.estimated_saving_ns) for f in advice.findings] == \
        [(f["rule"], f["kernel"], f["estimated_saving_ns"]) for f in raw["findings"]]
    # cause findings by saving, then compute_roofline's bound (docs/advisor.md, "Ranking")
    savings = [f.estimated_saving_ns for f in advice.findings if f.rule != "compute_roofline"]
    assert savings == sorted(savings, reverse=True)
    assert advice.findings[-1].rule == "compute_roofline"
    assert {f.rule for f in advice.findings} >= {"spills", "not_pipelined", "uncoalesced", "bank_conflicts"}
    assert [u.rule for u in advice.unavailable] == ["host_sync"]
    assert "launch_bound" in advice.text


def test_advise_fake_profile_and_bad_input(tmp_path):
    C.kernel_fact("facts_kernel", "triton.n_spills", 64)
    C.kernel_fact("facts_kernel", "triton.n_regs", 255)
    advice = proton.advise(_profile("adv"))
    spills = [f for f in advice.findings if f.rule == "spills"]
    assert [f.path for f in spills] == [["ROOT", "fwd", "facts_kernel"], ["ROOT", "bwd", "facts_kernel"]]
    assert spills[0].evidence["spills"] == 64
    bad = tmp_path / "bad.hatchet"
    bad.write_text("[{")
    with pytest.raises(ValueError, match="bad.hatchet"):
        proton.advise(str(bad))
    assert proton.advise([str(bad), "adv.hatchet"]).findings  # the good one still advised


class _FakeCompiledKernel:
    """Calls the load hook as Triton's CompiledKernel._init_handles does:
    n_regs and n_spills set on self just before."""

    def __init__(self, name, metadata_group):
        self.name, self.metadata_group = name, metadata_group
        self.n_regs, self.n_spills = 80, 6

    def _init_handles(self, hook):
        hook(None, None, self.name, self.metadata_group, "hash")


def test_launch_hook_records_facts_once_per_loaded_kernel():
    from cproton.hooks.launch import LaunchHook
    dot_kernel, _ = _kernels()
    k = _compile(dot_kernel, {"a": "*fp16", "b": "*fp16", "c": "*fp32", "BM": "constexpr", "PRECISION": "constexpr"},
                 {"BM": 64, "PRECISION": "tf32"}, 90, num_warps=4, num_stages=3)
    _FakeCompiledKernel("loaded_kernel", k.metadata_group)._init_handles(LaunchHook().init_handle)
    sid = proton.start("hooked", backend="fake", hook=None)
    C._fake_add_device(0)
    C._fake_launch("loaded_kernel", 1000)
    proton.finalize(sid)
    with open("hooked.hatchet") as f:
        node = json.load(f)[0]["children"][0]
    assert node["frame"]["name"] == "loaded_kernel"
    m = node["metrics"]
    assert (m["triton.mma"], m["triton.num_warps"], m["triton.num_stages"]) == ("wgmma", 4, 3)
    assert (m["triton.n_regs"], m["triton.n_spills"]) == (80, 6)


def test_no_files_no_guessed_facts():
    """A kernel whose metadata group has no PTX or metadata (another
    backend) gets no facts rather than guessed ones."""
    assert facts.collect("nothing_kernel", {}) == {}


def test_kernels_loaded_before_start_give_facts_at_start():
    """A CompiledKernel already loaded when start(hook="triton") runs never
    calls init_handle: start hands its facts over once."""
    dot_kernel, _ = _kernels()
    k = _compile(dot_kernel, {"a": "*fp16", "b": "*fp16", "c": "*fp32", "BM": "constexpr", "PRECISION": "constexpr"},
                 {"BM": 64, "PRECISION": "tf32"}, 80, num_warps=4, num_stages=2)
    k.module, k.n_regs, k.n_spills = object(), 72, 0  # as after Triton's _init_handles
    k.name = "early_kernel"
    sid = proton.start("early", backend="fake", hook="triton")
    C._fake_add_device(0)
    C._fake_launch("early_kernel", 1000)
    proton.finalize(sid)
    with open("early.hatchet") as f:
        m = json.load(f)[0]["children"][0]["metrics"]
    assert (m["triton.mma"], m["triton.n_regs"], m["triton.num_stages"]) == ("mma", 72, 2)
