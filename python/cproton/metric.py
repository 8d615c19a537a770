"""Tensor metrics, as in Triton 3.9's ``triton.profiler.metric``: a metric
value given as a tensor (``scope(..., metrics={"x": t})``, ``enter_scope`` /
``exit_scope(metrics=...)``, ``add_metrics``, or a ``launch_metadata`` value
under ``hook="triton"``).

* A CPU tensor is read at once (``item()``) and added like a number.
* A device (CUDA) tensor is never read by the host while profiling: a small
  Triton kernel, launched on the current stream, copies its value into a
  profiler-owned device buffer as a record {slot, one 64-bit word per
  element}; a slot (``_cproton.tensor_metric_slot``, C:
  ``cproton_tensor_metric_slot_vector``) names the node, metric, type and,
  for a vector, its length. Launched during CUDA graph
  capture, the copy kernel is captured and appends one record per replay.
  The host drains the buffer when it flushes (deactivate, finalize,
  ``cproton.data`` calls): one device synchronisation and one D2H copy per
  device, whatever the number of records, folded into the tree with the
  usual metric rules (summed; ``(exc)`` exclusive; ``(pty)`` last wins).

A plain number given while the current stream captures a CUDA graph takes
the device path too, through a copy kernel that carries the value as its
argument: each replay adds it, as Proton 3.9's scalar metric kernel does.

Types follow Proton 3.9: ``flops``, ``flops8/16/32/64`` are doubles,
``bytes`` is int64; other metrics are doubles for floating-point tensors,
int64 otherwise. A tensor of more than one element is a *vector* metric, as
in Proton 3.9 (``numel() > 1``): its elements are summed element by element
and written as an array. docs/tensor-metrics.md has the design.
"""
import sys
import threading
from typing import Any, Optional

from . import _compat, _config, _cproton
from ._log import warn as _warn

FLOPS_WIDTHS = (8, 16, 32, 64)
_FLOPS_WIDTHS = FLOPS_WIDTHS
# Proton 3.9's roofline metrics keep their type whatever the tensor's dtype.
ROOFLINE_IS_DOUBLE = {"flops": True, **{f"flops{w}": True for w in _FLOPS_WIDTHS}, "bytes": False}

HEADER_WORDS = 2  # [0]: words reserved by records so far, [1]: records dropped
RECORD_WORDS = _cproton.TENSOR_METRIC_RECORD_WORDS  # a scalar's record
# Written where a record that does not fit would start: no record from here
# on (CPROTON_TENSOR_METRIC_PAD, all bits set, as a signed int64 word).
PAD = -1
METADATA_STATE = "__proton_launch_metadata"


def capacity_words() -> int:
    """Record words per device buffer: CPROTON_TENSOR_METRIC_WORDS (default
    65536, 512 KiB). A full buffer drops records and the drain reports how
    many."""
    text = _config.get("CPROTON_TENSOR_METRIC_WORDS", "65536")
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"CPROTON_TENSOR_METRIC_WORDS={text!r} is not an integer") from None
    if n < RECORD_WORDS or n % RECORD_WORDS:
        raise ValueError(f"CPROTON_TENSOR_METRIC_WORDS={n}: must be a positive multiple of {RECORD_WORDS}")
    return n


def is_tensor(value: Any) -> bool:
    return hasattr(value, "data_ptr") and hasattr(value, "device")


def is_double(name: str, tensor: Any) -> bool:
    if name in ROOFLINE_IS_DOUBLE:
        return ROOFLINE_IS_DOUBLE[name]
    return bool(tensor.is_floating_point())


def n_values(name: str, tensor: Any) -> int:
    """0 for a scalar (one element), else the length of a vector metric."""
    n = int(tensor.numel())
    if n == 0:
        raise ValueError(f"tensor metric '{name}' has no elements")
    if n > _cproton.METRIC_MAX_VECTOR:
        raise ValueError(f"tensor metric '{name}' has {n} elements, more than {_cproton.METRIC_MAX_VECTOR}")
    return 0 if n == 1 else n


def _host_value(name: str, tensor: Any):
    """A CPU tensor's value: a number, or a list for a vector metric."""
    value = tensor.item() if tensor.numel() == 1 else tensor.reshape(-1).tolist()
    if name in ROOFLINE_IS_DOUBLE:
        convert = float if ROOFLINE_IS_DOUBLE[name] else int
        return [convert(v) for v in value] if isinstance(value, list) else convert(value)
    return value


def _bits(value, double: bool) -> int:
    """A value as the signed 64-bit word a record holds."""
    import struct
    return struct.unpack("<q", struct.pack("<d", float(value)))[0] if double else int(value)


def _words(value: Any, double: bool) -> list:
    """The record's value words for a tensor or a number (host side)."""
    if not is_tensor(value):
        return [_bits(value, double)]
    values = value.reshape(-1).tolist() if value.numel() > 1 else [value.item()]
    return [_bits(v, double) for v in values]


# A number is passed to the scalar copy kernel as three 22-bit pieces:
# Triton types a Python int argument by its range (i32, u32, i64), so the
# word itself could need a compile of its own in the middle of a capture.
_PIECE_BITS = 22


def _pieces(bits: int) -> tuple:
    u = bits & ((1 << 64) - 1)
    mask = (1 << _PIECE_BITS) - 1
    return u & mask, (u >> _PIECE_BITS) & mask, u >> (2 * _PIECE_BITS)


# ---- device buffers ----------------------------------------------------------------


class FakeDeviceBuffer:
    """A test double for one device's buffer: the copy "kernel" runs at
    once on the host (the value is read when recorded), with the device
    kernel's layout, capacity and dropping rules. Used without a GPU."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.words = [0] * (HEADER_WORDS + capacity)

    def record(self, slot: int, tensor: Any, double: bool) -> None:
        size = 1 + (int(tensor.numel()) if is_tensor(tensor) else 1)
        off = self.words[0]
        self.words[0] = off + size
        if off + size > self.capacity:
            self.words[1] += 1
            if off < self.capacity:  # the first record that does not fit
                self.words[HEADER_WORDS + off] = PAD
            return
        self.words[HEADER_WORDS + off] = slot
        self.words[HEADER_WORDS + off + 1:HEADER_WORDS + off + size] = _words(tensor, double)

    def drain(self):
        used = min(self.words[0], self.capacity)
        out = (self.words[HEADER_WORDS:HEADER_WORDS + used], self.words[1])
        self.words[0] = self.words[1] = 0
        return out


class CudaDeviceBuffer:
    """One CUDA device's buffer: int64 words in device memory, written by
    `_record_kernel` on the launching stream (no host sync), read back by
    `drain` in one copy between device synchronisations."""

    def __init__(self, capacity: int, device):
        import torch
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError("tensor metrics: the first device tensor metric on a device was given "
                               "during CUDA graph capture, when cproton cannot allocate its buffer; "
                               "call cproton.metric.prepare() (or record one tensor metric) before capturing")
        self.capacity = capacity
        self.device = device
        # Zeroed on the host and copied (a memcpy, not a kernel): whatever
        # cproton does at a flush point must not add a kernel to the
        # profile being recorded (the buffer is made inside a session).
        self._zero_header = torch.zeros(HEADER_WORDS, dtype=torch.int64)
        self.words = torch.zeros(HEADER_WORDS + capacity, dtype=torch.int64).to(device)

    def record(self, slot: int, tensor: Any, double: bool) -> None:
        if not is_tensor(tensor):  # a number during graph capture: the value is an argument
            lo, mid, hi = _pieces(_bits(tensor, double))
            _record_kernel()[(1, )](self.words, self.capacity, slot, self.words, 1, lo, mid, hi, IS_DOUBLE=double,
                                    FROM_ARGS=True, num_warps=1)
            return
        n = int(tensor.numel())
        _record_kernel()[(1, )](self.words, self.capacity, slot, tensor, n, 0, 0, 0, IS_DOUBLE=double,
                                FROM_ARGS=False, num_warps=1)

    def drain(self):
        import torch
        if torch.cuda.is_current_stream_capturing():
            # A flush point inside a capture: synchronising would break it.
            _warn("tensor metrics: not drained during CUDA graph capture; the next flush drains them")
            return [], 0
        torch.cuda.synchronize(self.device)
        host = self.words.cpu()  # the one D2H copy
        self.words[:HEADER_WORDS].copy_(self._zero_header)  # H2D, no fill kernel (see __init__)
        # Before any later copy kernel, on whatever stream, reserves a record.
        torch.cuda.synchronize(self.device)
        used = min(int(host[0]), self.capacity)
        return host[HEADER_WORDS:HEADER_WORDS + used].tolist(), int(host[1])


_kernel = None


def _record_kernel():
    """The copy kernel, defined on first use (Triton only when needed)."""
    global _kernel
    if _kernel is None:
        import triton
        import triton.language as tl

        # Specialised on nothing but the value's dtype and where the value
        # comes from: one compiled kernel per dtype and kind whatever the
        # slot, the number of values (Triton would make 1 a constant) or the
        # value's alignment (t[3] of a float32 tensor), so prepare() can
        # compile everything a later graph capture launches.
        # Its name is CP_COMPAT_METRIC_KERNEL (src/core/compat.h): under
        # Proton 3.9 its frames are named "<metric>", as Proton's are.
        @triton.jit(do_not_specialize=["capacity", "slot", "n", "lo", "mid", "hi"],
                    do_not_specialize_on_alignment=["buf_ptr", "value_ptr"])
        def _cproton_tensor_metric(buf_ptr, capacity, slot, value_ptr, n, lo, mid, hi, IS_DOUBLE: tl.constexpr,
                                   FROM_ARGS: tl.constexpr):
            # Reserve the whole record {slot, n values} atomically: graph
            # replays on several streams may append at once. A record that
            # does not fit is counted as dropped; the first such one writes
            # the padding word at its offset, so the drain stops there.
            size = n.to(tl.int64) + 1
            off = tl.atomic_add(buf_ptr, size, sem="relaxed")
            if off + size <= capacity:
                tl.store(buf_ptr + 2 + off, slot.to(tl.int64))
                if FROM_ARGS:  # a number given during capture: _pieces() of its bits
                    bits = lo.to(tl.int64) | (mid.to(tl.int64) << 22) | (hi.to(tl.int64) << 44)
                    tl.store(buf_ptr + 3 + off, bits)
                else:
                    for start in range(0, n, 128):
                        idx = start + tl.arange(0, 128)
                        value = tl.load(value_ptr + idx, mask=idx < n)
                        if IS_DOUBLE:
                            bits = value.to(tl.float64).to(tl.int64, bitcast=True)
                        else:
                            bits = value.to(tl.int64)
                        tl.store(buf_ptr + 3 + off + idx, bits, mask=idx < n)
            else:
                tl.atomic_add(buf_ptr + 1, 1, sem="relaxed")
                if off < capacity:
                    tl.store(buf_ptr + 2 + off, -1)

        _kernel = _cproton_tensor_metric
    return _kernel


def _cuda_capturing() -> bool:
    import torch
    return torch.cuda.is_current_stream_capturing()


def _capturing() -> bool:
    """Whether a device tensor's record is being captured into a CUDA graph
    (its slot is then a captured one: under Proton 3.9 each replay's record
    lands at that replay's place, see docs/tensor-metrics.md)."""
    if _recorder.fake_capture:
        return True
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    return bool(cuda is not None and cuda.is_available() and cuda.is_current_stream_capturing())


class _Recorder:
    """The buffers, one per device, and the records queued by metric calls
    until the C layer launches them (outside any launch-hook op)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.buffers = {}
        self.factory = None  # None: CUDA buffers; else callable(capacity, device)
        self.fake_capture = False
        self.pending = threading.local()

    def buffer(self, device):
        key = (device.type, device.index)
        with self.lock:
            buf = self.buffers.get(key)
            if buf is None:
                buf = self._make(device)
                self.buffers[key] = buf
        return buf

    def _make(self, device):
        if self.factory is not None:
            return self.factory(capacity_words(), device)
        if device.type != "cuda":
            raise TypeError(f"tensor metrics: a tensor on device '{device.type}' cannot be recorded "
                            "(cproton records CPU tensors and CUDA tensors)")
        try:
            import torch
            import triton  # noqa: F401
        except ImportError as e:
            raise RuntimeError(f"tensor metrics on a CUDA tensor need torch and triton: {e}") from None
        if not torch.cuda.is_available():
            raise RuntimeError("tensor metrics: a CUDA tensor was given but no CUDA device is available")
        buf = CudaDeviceBuffer(capacity_words(), device)
        _cproton.set_capture_probe(_cuda_capturing)  # from now on numbers check for a capture
        return buf


_recorder = _Recorder()


def use_fake_device(enabled: bool = True) -> None:
    """Tests: record device tensors into FakeDeviceBuffer (no GPU)."""
    with _recorder.lock:
        _recorder.buffers.clear()
        _recorder.factory = (lambda capacity, device: FakeDeviceBuffer(capacity)) if enabled else None
    fake_capture(False)


class _FakeDevice:
    type, index = "cuda", 0


def fake_capture(active: bool) -> None:
    """Tests: behave as if the current stream were capturing a CUDA graph
    (numbers go to the fake device's buffer) until fake_capture(False)."""
    _recorder.fake_capture = active
    _cproton.set_capture_probe((lambda: True) if active else None)


def _capture_device():
    """The device whose buffer records numbers given during a capture."""
    if _recorder.fake_capture:
        return _FakeDevice()
    import torch
    return torch.device("cuda", torch.cuda.current_device())


def prepare(device=None, dtypes=()) -> None:
    """Readies tensor metrics for a CUDA graph capture, where nothing may
    be allocated or compiled: allocates the buffer of `device` (default:
    torch's current CUDA device), compiles the copy kernel for each torch
    dtype in `dtypes` (both value kinds) and the kernel that records numbers
    given during a capture."""
    import torch
    if device is None:
        device = torch.device("cuda", torch.cuda.current_device())
    buf = _recorder.buffer(torch.device(device))
    for dtype in dtypes:
        value = torch.zeros((), dtype=dtype, device=device)
        for double in (False, True):
            _record_kernel().warmup(buf.words, buf.capacity, 0, value, 1, 0, 0, 0, IS_DOUBLE=double,
                                    FROM_ARGS=False, grid=(1, ), num_warps=1)
    for double in (False, True):  # numbers given during a capture
        _record_kernel().warmup(buf.words, buf.capacity, 0, buf.words, 1, 0, 0, 0, IS_DOUBLE=double,
                                FROM_ARGS=True, grid=(1, ), num_warps=1)


def _current_cuda_device():
    """torch's current CUDA device when torch is imported and has initialised
    CUDA, else None: a session's start must not import torch or make a
    CUDA context for a program that has none."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_initialized() or cuda.is_current_stream_capturing():
        return None
    return torch.device("cuda", cuda.current_device())


def reserve_for_capture() -> None:
    """At start and activate, while cproton follows Proton 3.9: allocates
    the current CUDA device's buffer. Proton 3.9 reserves its metric buffer
    when a stream capture begins (a CUPTI callback, before the capture), so
    a graph's first tensor metric may be given during the capture, where
    nothing can be allocated. cproton has no such callback in Python:
    allocating when a session starts or activates covers a capture made
    while it is active. A failure is a CprotonWarning (the first metric
    outside a capture allocates the buffer then)."""
    if not _compat.is_39():
        return
    device = _current_cuda_device()
    if device is None:
        return
    try:
        _recorder.buffer(device)
    except (ImportError, RuntimeError, TypeError) as e:
        _warn(f"tensor metrics: no buffer reserved for CUDA graph captures: {e}")


def _record_number(scope_id: int, name: str, value, as_double: bool) -> bool:
    """A number given during a graph capture: queued like a tensor's copy,
    on the current device's buffer, with the type it would have on the host
    (an int is int64, a float double; every launch-metadata value double)."""
    double = as_double or isinstance(value, float)
    if not double and not -2**63 <= value < 2**63:
        raise ValueError(f"metric '{name}' does not fit in 64 bits")
    buf = _recorder.buffer(_capture_device())
    slot = _cproton.tensor_metric_slot(scope_id, name, double, 0, True)
    if slot == _cproton.TENSOR_METRIC_NONE:
        return False
    _queue(buf, slot, value, double)
    return True


def _queue(buf, slot: int, value, double: bool) -> None:
    queue = getattr(_recorder.pending, "queue", None)
    if queue is None:
        queue = _recorder.pending.queue = []
    queue.append((buf, slot, value, double))


def record(scope_id: int, name: str, tensor: Any, as_double: bool = False) -> bool:
    """Called by the C layer for a tensor metric value, or for a number
    given while a CUDA graph is being captured. A CPU tensor is added at
    once; a device tensor (or such a number) gets its slot now (the node is
    the one a number would land on now) and its copy kernel queued; True
    when a launch is queued (the C layer then calls launch_pending).
    `as_double`: the launch hook's rule, every value a double (so that a
    key cannot change type between launches)."""
    if not is_tensor(tensor):
        return _record_number(scope_id, name, tensor, as_double)
    n = n_values(name, tensor)
    if tensor.device.type == "cpu":
        value = _host_value(name, tensor)
        if as_double:
            value = [float(v) for v in value] if isinstance(value, list) else float(value)
        _cproton.add_metrics(scope_id, {name: value})
        return False
    double = as_double or is_double(name, tensor)
    if n and not getattr(tensor, "is_contiguous", lambda: True)():
        tensor = tensor.contiguous()  # the copy kernel reads n elements in a row
    buf = _recorder.buffer(tensor.device)
    slot = _cproton.tensor_metric_slot(scope_id, name, double, n, _capturing())
    if slot == _cproton.TENSOR_METRIC_NONE:  # no active session
        return False
    _queue(buf, slot, tensor, double)
    return True


def launch_pending(state: Optional[str] = None) -> None:
    """Launches the queued copy kernels under the launch-metadata state, as
    Proton launches its metric kernels (their own time lands there):
    `state`, or ``__proton_launch_metadata`` (the launch hook passes Proton
    3.9's per-kernel state, ``__proton_launch_metadata:<kernel>``)."""
    queue = getattr(_recorder.pending, "queue", None)
    if not queue:
        return
    _recorder.pending.queue = []
    _cproton.enter_state(state or METADATA_STATE)
    try:
        for buf, slot, tensor, double in queue:
            # a captured slot's copy kernel: its graph node is tagged with
            # the slot, so that each replay's record finds its place
            _cproton.tensor_metric_tag(slot)
            try:
                device = getattr(buf, "device", None)
                if device is not None:
                    import torch
                    with torch.cuda.device(device):
                        buf.record(slot, tensor, double)
                else:
                    buf.record(slot, tensor, double)
            finally:
                _cproton.tensor_metric_tag(_cproton.TENSOR_METRIC_NONE)
    finally:
        _cproton.exit_state()


def flush() -> None:
    """drain() at a flush point (start, deactivate, finalize, cproton.data):
    a failure is reported as a CprotonWarning and the flush goes on."""
    try:
        drain()
    except (ValueError, RuntimeError, TypeError) as e:
        _warn(f"tensor metrics: {e}")


def drain() -> int:
    """Folds every device buffer's records into the active sessions; the
    number of records folded. Called at each flush point."""
    with _recorder.lock:
        buffers = list(_recorder.buffers.values())
    folded = any_dropped = 0
    for buf in buffers:
        words, dropped = buf.drain()
        if words:
            import array
            folded += _cproton.tensor_metric_fold(array.array("q", words).tobytes())
        if dropped:
            any_dropped = 1
            _warn(f"tensor metrics: {dropped} records dropped, the device buffer ({buf.capacity} words) was "
                  "full; drain more often (deactivate/data.get) or raise CPROTON_TENSOR_METRIC_WORDS")
    if any_dropped:
        # A dropped record of a metric captured in a CUDA graph leaves its
        # replay's place queued: forget those, or later records of the same
        # metric would land one replay late.
        _cproton.tensor_metric_forget_places()
    return folded


# ---- Proton 3.9's metric functions -----------------------------------------------


def _convert(value: Any, convert) -> Any:
    if is_tensor(value):
        value = value.reshape(-1).tolist() if value.numel() > 1 else value.item()
    if isinstance(value, (list, tuple)):
        return [convert(v) for v in value]
    return convert(value)


def _roofline_value(key: str, value: Any) -> Any:
    """A host value with the roofline metrics' fixed types (flops*: float,
    bytes: int); other metrics as given (a CPU tensor: its number or list)."""
    if key in ROOFLINE_IS_DOUBLE:
        return _convert(value, float if ROOFLINE_IS_DOUBLE[key] else int)
    if is_tensor(value):
        return _convert(value, lambda v: v)
    return value


def transform_tensor_metrics(metrics: dict) -> tuple:
    """Proton 3.9's split of a metrics dict into (host metrics, device
    tensor metrics): CPU tensors and plain values become host values, the
    roofline metrics with their fixed types (flops*: float, bytes: int);
    CUDA tensors go to the second dict, converted to the type they are
    recorded with (double or int64, as Proton 3.9). cproton's own metric
    calls do the same split in C: this function is for code written against
    Proton 3.9's API; its device dict holds tensors (Proton's holds
    libproton TensorMetric objects)."""
    scalars, tensors = {}, {}
    for key, value in metrics.items():
        if is_tensor(value) and value.device.type != "cpu":
            tensors[key] = value.double() if is_double(key, value) else value.long()
        else:
            scalars[key] = _roofline_value(key, value)
    return scalars, tensors


def set_metric_kernels() -> None:
    """Proton 3.9 compiles its metric-copy kernels and hands them to
    libproton here; cproton compiles its copy kernel on first use (or in
    prepare(), before a CUDA graph capture), so there is nothing to do."""


_cproton.set_tensor_metric_handler(record, launch_pending)
