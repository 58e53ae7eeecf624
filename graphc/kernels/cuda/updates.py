"""assign_add / assign_sub of a device-resident gc.Variable, on the device.

The result is a new array (never the variable's buffer updated in place): a value read
from the variable earlier in the call keeps its contents, as on the CPU backends. Same
dtype and shape on both sides (the ops' type rules and the shape check guarantee it), so
a flat grid-stride loop does it; integers wrap as numpy's do (the store truncates).
bool and float16 variables take the host path (numpy's rules: bool - bool is an error).
While a device check's failure is recorded and not yet seen by the host (checks.py), the
kernels keep the old value: the variables end as they would when the check raises.
"""
import numpy as np
from numba import cuda

from . import checks, device
from .launch import Launcher

THREADS = 256


def _add(a, b, out, guard):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    keep = guard[0] != 0
    while i < out.size:
        out[i] = a[i] if keep else a[i] + b[i]
        i += step


def _sub(a, b, out, guard):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    keep = guard[0] != 0
    while i < out.size:
        out[i] = a[i] if keep else a[i] - b[i]
        i += step


def _assign(a, b, out, guard):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    keep = guard[0] != 0
    while i < out.size:
        out[i] = a[i] if keep else b[i]
        i += step


# compiled to PTX in tests/cuda
KERNEL_SOURCES = {"add": _add, "subtract": _sub, "assign": _assign}
_KERNELS = {name: cuda.jit(fn) for name, fn in KERNEL_SOURCES.items()}
_LAUNCHERS = {}      # (kernel, blocks, threads, dtype) -> Launcher
ON_DEVICE = frozenset("bBhHiIlLqQfd")     # numpy dtype chars: ints and float32/64


def combine(a, b, name):
    """`a + b` or `a - b` ("add", "subtract"), or `b` ("assign"), for device arrays of one
    shape and dtype: a new device array; `a` itself while a device check's failure is
    unseen (checks.py: the variables keep their values, as when the check raises)."""
    out = device.alloc(a.shape, a.dtype)       # the variable's new value: never pooled
    n = out.size
    if n == 0:
        return out
    threads = min(THREADS, n) if not device.SIMULATED else min(32, n)
    blocks = 1 if device.SIMULATED else min((n + threads - 1) // threads, 4096)
    key = (name, blocks, threads, a.dtype.char)     # one overload per launcher
    run = _LAUNCHERS.get(key)
    if run is None:
        run = _LAUNCHERS[key] = Launcher(_KERNELS[name], blocks, threads)
    run([a, b, out, checks.guard()], flat=True)
    return out


def runs_on_device(dtype):
    return np.dtype(dtype).char in ON_DEVICE
