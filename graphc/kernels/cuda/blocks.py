"""The device memory under every array the cuda backend makes: blocks reused once their
last array is gone (a caching allocator, as PyTorch's and CuPy's), and the bound that the
plan pools (memory.py) share with it.

Why: a cuMemAlloc per result, and the cuMemFree that numba-cuda later runs for it (which
synchronizes the device), cost more than the kernels of a small call; on the lent H100 VM a
one-element cuda.device_array took 44 us. A steady-state call asks for the same sizes
every time, so blocks are kept by size class (bytes rounded up to 512) and handed out
again.

How: an array's gpu_data is a BlockPointer (numba-cuda's MemoryPointer without its
finalizer objects, which cost more than the rest of a small call): every view of the
array holds a reference to it, and when the last one is gone its `__del__` returns the
raw block to the idle list instead of queueing a cuMemFree. Safe reuse: the launches that used the block were enqueued before
its last array died, on the legacy default stream, which runs them before any later launch
(with per-thread default streams, idle lists are per thread). Work on other streams that
reads a graphc result must be synchronized before the result is dropped, as with CuPy's
pool. Idle blocks and idle plan buffers together stay within GRAPHC_CUDA_POOL_BYTES; a
block that would go over evicts idle blocks of other sizes first, else it is freed.
"""
import functools
import math
import os
import threading

import numpy as np

from .records import STATS

DEFAULT_LIMIT = 1 << 30
LOCK = threading.RLock()       # reentrant: a finalizer may run under it (GC in this thread)
IDLE = [0]                     # idle bytes: plan pools (memory.Pool) and blocks here
_BLOCKS = {}                   # (size class, stream key) -> idle raw blocks
GRAIN = 512


@functools.lru_cache(maxsize=None)
def limit():
    """The idle-bytes bound, GRAPHC_CUDA_POOL_BYTES, read once (an environment read costs
    ~1.7 us, more than a pool operation); `limit.cache_clear()` reads it again."""
    text = os.environ.get("GRAPHC_CUDA_POOL_BYTES")
    if text is None:
        return DEFAULT_LIMIT
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"GRAPHC_CUDA_POOL_BYTES={text!r} is not a byte count: set it to "
                         "a whole number >= 0 (0 turns buffer reuse off), or unset it")
    return n


def stream_key():
    if not _CONFIG:
        from numba import cuda
        _CONFIG.append(cuda.config)
    per_thread = getattr(_CONFIG[0], "CUDA_PER_THREAD_DEFAULT_STREAM", 0)
    return threading.get_ident() if per_thread else None


_CONFIG = []


def size_class(nbytes):
    return -(-nbytes // GRAIN) * GRAIN


def c_strides(shape, itemsize):
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def as_shape(shape):
    """`shape` as a tuple of ints (an int shape too, as numba's cuda.device_array takes)."""
    if type(shape) is tuple and all(type(d) is int for d in shape):
        return shape
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)


def device_array(shape, dtype, context, memalloc):
    """A C-contiguous DeviceNDArray of `shape` (a tuple of ints with no zero: `as_shape`)
    and `dtype` on memory from the idle blocks, else from `memalloc(size)` (the context's
    cuMemAlloc; it raises for lack of memory)."""
    dtype = np.dtype(dtype)
    gpu_data = pointer(size_class(math.prod(shape) * dtype.itemsize), context, memalloc)
    return _array(shape, dtype, gpu_data)


_TEMPLATES = {}         # (shape, dtype) -> a DeviceNDArray's fields but its memory


def _array(shape, dtype, gpu_data):
    """DeviceNDArray(shape, C strides, dtype, gpu_data=gpu_data), its fields copied from
    the first array of that shape and dtype (numba-cuda's constructor builds its layout
    descriptor anew each time; the descriptor is never changed after, so it is shared)."""
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    key = (shape, dtype)
    fields = _TEMPLATES.get(key)
    if fields is None:
        a = DeviceNDArray(shape, c_strides(shape, dtype.itemsize), dtype, gpu_data=gpu_data)
        if len(_TEMPLATES) >= 4096:
            _TEMPLATES.clear()
        _TEMPLATES[key] = {k: v for k, v in a.__dict__.items() if k != "gpu_data"}
        return a
    a = DeviceNDArray.__new__(DeviceNDArray)
    a.__dict__.update(fields)
    a.gpu_data = gpu_data
    return a


def pointer(size, context, memalloc):
    """gpu_data of `size` bytes whose last reference returns its block here."""
    key = (size, stream_key())
    raw = None
    with LOCK:
        free = _BLOCKS.get(key)
        if free:
            raw = free.pop()
            IDLE[0] -= size
    if raw is None:
        raw = memalloc(size)
    else:
        STATS.add("block_reuses")
    return _block_pointer()(context, raw, size, key)


_CLASS = []
_HELD = {}              # id(BlockPointer) -> its raw block


def _block_pointer():
    """BlockPointer, made on first use (numba-cuda is imported only with the backend)."""
    if _CLASS:
        return _CLASS[0]
    from numba.cuda.cudadrv.driver import MemoryPointer

    class BlockPointer(MemoryPointer):
        """numba-cuda's MemoryPointer over a cached block `raw` (which it keeps alive),
        without MemoryPointer's finalizer objects: the block goes back to the idle list
        when this pointer dies, i.e. when the last array or view on it is gone (views
        hold it: `view` below)."""
        device_ctypes_pointer = None        # an attribute here (a property above)

        def __init__(self, context, raw, size, key):    # MemoryPointer's fields
            self.context = context
            self.device_pointer = self.handle = raw.device_pointer
            self.device_ctypes_pointer = raw.device_ctypes_pointer
            self.size = self._cuda_memsize_ = size
            self.is_managed, self.refct, self._owner = False, 1, None
            self._key = key
            # raw stays reachable from here, not only from this pointer: when the cyclic
            # GC collects an array, it first runs the weakref finalizers of everything
            # reachable only from the garbage -- numba-cuda would free raw's memory
            # before __del__ below could keep it.
            _HELD[id(self)] = raw

        def view(self, start, stop=None):
            v = MemoryPointer.view(self, start, stop)
            v._graphc_block = self          # numba's view holds only a weak proxy
            return v

        def own(self):
            raise RuntimeError("a graphc block pointer is owned by its arrays")

        def __del__(self):
            try:
                keep(self._key, _HELD.pop(id(self)))
            except Exception:  # noqa: BLE001,S110 - interpreter exit: numba frees it
                pass
    _CLASS.append(BlockPointer)
    return BlockPointer


def keep(key, raw):
    """Idle `raw` for a later allocation of its size class, unless over the bound."""
    size, cap = key[0], limit()
    with LOCK:
        if IDLE[0] + size <= cap:       # the usual case: nothing to evict (every free)
            _BLOCKS.setdefault(key, []).append(raw)
            IDLE[0] += size
            return
        for other in [k for k in list(_BLOCKS) if k != key]:
            if IDLE[0] + size <= cap:
                break
            IDLE[0] -= other[0] * len(_BLOCKS.pop(other, ()))
        if IDLE[0] + size > cap:
            return                      # dropped: numba-cuda frees it
        _BLOCKS.setdefault(key, []).append(raw)
        IDLE[0] += size


def trim():
    """Free every idle block (after an out-of-memory error)."""
    with LOCK:
        for key in list(_BLOCKS):
            IDLE[0] -= key[0] * len(_BLOCKS.pop(key, ()))


def idle_blocks():
    """(idle blocks, their bytes)."""
    with LOCK:
        counts = [(k[0], len(v)) for k, v in list(_BLOCKS.items())]
    return sum(n for _, n in counts), sum(s * n for s, n in counts)

