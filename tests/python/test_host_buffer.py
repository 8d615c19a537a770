"""InstrumentationHook.host_buffer without a GPU: a kernel compiled through
the instrumentation hook (Triton's ptxas, CPU only) gives the layout; a
profile buffer written the way its lowered PTX writes one is re-encoded in
Proton's host-buffer layout and read back the way Proton 3.6's
test_record and test_select_ids read it."""
import struct

import pytest

pytest.importorskip("triton")

from cproton.hooks import InstrumentationHook  # noqa: E402
from cproton.hooks import instrumentation as instr  # noqa: E402

from test_language import VADD_SIG, compile_kernel, vadd  # noqa: E402

MAGIC = 0x42525043  # "CPRB"


def compile_layout(mode):
    """Compiles vadd as Proton's host-buffer tests do: enable_host_buffer set
    before the session, so the kernel keeps records."""
    InstrumentationHook.enable_host_buffer = True
    try:
        hook = instr.InstrumentationHook(mode)
        hook.activate()
        try:
            import triton.knobs as knobs
            k = compile_kernel(vadd, VADD_SIG, {"BLOCK": 256}, knobs.compilation.instrumentation_mode)
        finally:
            hook.deactivate()
    finally:
        InstrumentationHook.enable_host_buffer = False
    assert k.metadata.cproton_layout["aggregate"] == 0
    return k, k.metadata.cproton_layout


def cta_slice(layout, cta, records):
    """One CTA's slice: `records[u]` = [(scope, is_end, counter), ...] of unit u."""
    units, seg = layout["n_units"], layout["segment_bytes"]
    head = struct.pack("<IHBBII QQQQ IIII", MAGIC, 1, layout["counter"], 0, cta, 7, 1000, 5000, 2000, 2100, units,
                       seg, 4, 0)
    head += struct.pack(f"<{units}I", *(len(r) for r in records))
    head += bytes(layout["header_bytes"] - len(head))
    body = b""
    for unit in records:
        words = [(1 << 63 if end else 0) | scope << 48 | ctr for scope, end, ctr in unit]
        body += struct.pack(f"<{len(words)}Q", *words) + bytes(seg - 8 * len(words))
    assert len(head) + len(body) == layout["per_cta_bytes"]
    return head + body


def u32(buf, off):
    return int.from_bytes(bytes(buf[off:off + 4]), "little")


def test_hook_attributes_default_off():
    assert InstrumentationHook.enable_host_buffer is False
    assert InstrumentationHook.host_buffer is None


def test_record_layout_as_proton_reads_it():
    k, layout = compile_layout("default")
    assert layout["scope_names"] == ["kernel", "load", "store"]
    # the markers carry Proton's op name into the TTIR, with line info
    ttir = k.asm["ttir"]
    assert "proton.record start" in ttir and "proton.record end" in ttir
    line = next(ln for ln in ttir.splitlines() if "proton.record start" in ln)
    assert "loc(" in line
    # and each record op's counter read, with its source line, into the LLVM IR
    llir = k.asm["llir"].splitlines()
    clock = next(ln for ln in llir if "clock" in ln and "!dbg" in ln)
    dbg = clock.split("!dbg ")[1].split(",")[0].split()[0]
    loc = next(ln for ln in llir if dbg in ln and "DILocation" in ln)
    assert "line: " in loc and "line: 0" not in loc
    nested = [(0, False, 5010), (1, False, 5020), (1, True, 5090), (2, False, 5100), (2, True, 5150), (0, True, 5200)]
    data = cta_slice(layout, 0, [nested] * 4)
    host_buffer = instr._as_tensor(instr.host_buffer_bytes(layout, data, 4))
    payload_offset = u32(host_buffer, 12)
    payload = host_buffer[payload_offset:]
    assert u32(payload, 0) == 0xDEADBEEF
    metadata_size = 40 + 4 * 4
    start_tag, start_clock = u32(payload, metadata_size), u32(payload, metadata_size + 4)
    end_tag, end_clock = u32(payload, metadata_size + 8), u32(payload, metadata_size + 12)
    assert start_tag & 0xFFFFF800 == 0  # a start of scope 0
    assert start_clock == 5010
    assert end_tag & 0xFFFFF800 == ((1 << 23) | 0)  # then the start of scope 1 ("load")
    assert end_clock == 5020
    assert u32(payload, 40) == 2 * len(nested), "words written by warp 0"


def test_select_ids_as_proton_reads_them():
    _, layout = compile_layout("default:sampling_strategy=selective:sampling_options=0,2")
    assert layout["unit_warp"] == [0, 2]
    data = cta_slice(layout, 0, [[(0, False, 5001), (0, True, 5009)]] * 2)
    buf = instr.host_buffer_bytes(layout, data, 4)
    assert u32(buf, 36) == 2
    assert [u32(buf, 40), u32(buf, 44)] == [0, 2]
    assert u32(buf, 24) == 1, "one block"


def test_sums_have_no_host_buffer():
    """A kernel summed in the kernel stores no records: no host buffer."""
    hook = instr.InstrumentationHook("default")
    assert hook.sums_in_kernel()
    layout = {"kernel": "vadd", "aggregate": 1, "per_cta_bytes": 256, "header_bytes": 0, "n_units": 4,
              "segment_bytes": 0, "counter": 1, "granularity": 0, "buffer": 0, "unit_warp": [0, 1, 2, 3],
              "scope_names": ["kernel", "load", "store"], "scope_parents": [-1, 0, 0]}
    with pytest.raises(ValueError, match="records"):
        instr.host_buffer_bytes(layout, bytes(256), 4)


def test_bad_buffers_are_refused():
    _, layout = compile_layout("default")
    with pytest.raises(ValueError, match="whole number"):
        instr.host_buffer_bytes(layout, b"\0" * 7, 4)
    with pytest.raises(ValueError, match="warps"):
        instr.host_buffer_bytes(layout, bytes(layout["per_cta_bytes"]), 2)
