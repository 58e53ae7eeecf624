"""What the benchmark does for backend="cuda": inputs already in device memory, a device
synchronization closing each timed batch, and the device's copy bandwidth as the reference
for the memory-bound workloads (as the numpy triad is for the CPU)."""
import numpy as np

import graphc as gc
from . import timing


def on_device(args):
    """`args` (gc tensors) as device-backed tensors, uploaded once here: a GPU user keeps
    data on the device (as with `x.cuda()` / `jax.device_put`), so the timed calls measure
    the kernels, not the host-to-device copy of the inputs."""
    from numba import cuda
    # convert_to_tensor keeps a device array on the device (gc.constant copies it to the host)
    out = tuple(gc.convert_to_tensor(cuda.to_device(np.array(a.numpy(), order="C")))
                if isinstance(a, gc.Tensor) and not a.is_on_device else a for a in args)
    assert all(t.is_on_device for t in out if isinstance(t, gc.Tensor))
    return out


def synchronize():
    from numba import cuda
    cuda.synchronize()


def copy_gbps(n, min_time):
    """Device-to-device copy bandwidth on n float32 (numba-cuda's `copy_to_device`, one
    batch of copies then a synchronization per repeat), counting the bytes read and
    written: the convention of the workloads' GB/s, so a fused kernel reading x once and
    writing y once reaches at most about this figure."""
    from numba import cuda
    src = cuda.to_device(np.random.default_rng(0).random(n, dtype=np.float32))
    dst = cuda.device_array_like(src)

    def copy():
        dst.copy_to_device(src)

    t = timing.measure_interleaved([(copy, lambda out: out)], min_time, finish=synchronize)
    return 2 * 4 * n / t[0].median_s / 1e9
