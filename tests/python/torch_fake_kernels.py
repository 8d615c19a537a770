"""A stand-in for PyTorch's CUDA kernels on the CPU, for the tests of the
"python" context's PyTorch layers (test_torch_context.py): a dispatch mode
that launches one fake kernel ("k_<op>") inside each ATen operator that
computes (not a view: t, expand, detach launch nothing on a GPU either),
where a GPU operator launches its kernel. The tests drop this file's frames
from the context, so a fake launch sees what a C++ launch would."""
from torch.utils._python_dispatch import TorchDispatchMode

from cproton import _cproton


class FakeKernels(TorchDispatchMode):
    @classmethod
    def ignore_compile_internals(cls):
        return True  # torch.compile compiles as without this mode

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not func.is_view:
            _cproton._fake_launch("k_" + func._schema.name.split("::")[-1], release_gil=True)
        return out
