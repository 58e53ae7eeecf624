"""Fixtures of the CUDA tests: they run on numba-cuda's simulator at small sizes (a child
process of the whole-suite run, see tests/conftest.py), or on a GPU with GRAPHC_TEST_CUDA=real."""
import pytest

pytest.importorskip("numba_cuda")

from cuda_helpers import CudaRuns  # noqa: E402


@pytest.fixture
def cuda_stats():
    return CudaRuns()


@pytest.fixture
def pool_bytes(monkeypatch):
    """`pool_bytes(text)` sets GRAPHC_CUDA_POOL_BYTES for this test (read once per process:
    the cached value is dropped now and again after the test)."""
    from graphc.kernels.cuda import memory

    def set_to(text):
        monkeypatch.setenv("GRAPHC_CUDA_POOL_BYTES", text)
        memory.limit.cache_clear()
    yield set_to
    memory.limit.cache_clear()      # monkeypatch restores the variable after this


class AddKernel:
    """Test-only lowering: a single `add` of two same-shape arrays, as one CUDA kernel (the
    variable-update kernel), so that the plan's kernel path runs before the real
    generators land."""

    def __init__(self, group):
        self.group = group

    def __call__(self, inputs, alloc=None):
        from graphc.kernels.cuda import updates
        a, b = inputs
        return [updates.combine(a, b, "add")]     # a new array (alloc is the plan's pool)

    def describe(self):
        return "test add kernel (grid-stride)"


def add_lowering(group):
    if len(group.ops) != 1 or group.ops[0].type != "add":
        return None
    a, b = (v.type for v in group.inputs) if len(group.inputs) == 2 else (None, None)
    if a is None or a.shape != b.shape or None in a.shape or a.dtype.name not in (
            "float32", "float64", "int32", "int64"):
        return None
    return AddKernel(group)


def fake_matmul(a, b, **attrs):
    """Test-only lowering of matmul (2-d, no transposes): a host product copied back, the
    way a real kernel would hand back a new device array."""
    from graphc.kernels.cuda import device
    import numpy as np
    if attrs.get("transpose_a") or attrs.get("transpose_b") or len(a.shape) != 2:
        raise NotImplementedError("test matmul: plain 2-d products only")
    return device.cuda.to_device(np.matmul(a.copy_to_host(), b.copy_to_host()))




@pytest.fixture
def add_lowered(monkeypatch):
    """lowering.lower_group gives single `add` groups a CUDA kernel; matmul a device result.
    The add kernel reads the process's device check flag: made here, so that its one-time
    upload is not counted by whichever test runs first."""
    from graphc.kernels.cuda import checks, lowering
    checks.guard()
    monkeypatch.setattr(lowering, "lower_group", add_lowering)
    monkeypatch.setattr(lowering, "matmul", fake_matmul)
