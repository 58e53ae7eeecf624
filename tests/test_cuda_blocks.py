"""The cuda backend's block cache (graphc/kernels/cuda/blocks.py) without a GPU: numba-cuda's
real pointer classes over fake device addresses from a fake cuMemAlloc. What must hold: a
block goes back only when its last array or view is gone, comes out again for the same size
class, never while in use (threads too), and idle blocks stay within the bound.
(Runs in the main process: numba-cuda's simulator has no pointer classes.)"""
import gc as pygc
import itertools
import threading
import weakref

import numpy as np
import pytest

pytest.importorskip("numba_cuda")
from numba import cuda  # noqa: E402

if cuda.config.ENABLE_CUDASIM:
    pytest.skip("needs numba-cuda's real driver classes (not the simulator)",
                allow_module_level=True)

from numba.cuda.cudadrv.devicearray import DeviceNDArray  # noqa: E402
from numba.cuda.cudadrv.driver import AutoFreePointer, binding  # noqa: E402

from graphc.kernels.cuda import blocks  # noqa: E402
from graphc.kernels.cuda.records import STATS  # noqa: E402


class FakeDevice:
    """cuMemAlloc / cuMemFree bookkeeping as numba-cuda's memory manager does it."""

    def __init__(self):
        self.live, self.freed, self.calls = {}, [], 0
        self._addr = itertools.count(1 << 20, 1 << 20)
        self._lock = threading.Lock()

    def memalloc(self, size):
        with self._lock:
            a = next(self._addr)
            self.calls += 1

        def free():
            with self._lock:
                self.live.pop(a)
                self.freed.append(a)
        p = AutoFreePointer(weakref.proxy(self), binding.CUdeviceptr(a), size, finalizer=free)
        self.live[a] = p
        return p.own()

    def array(self, shape, dtype=np.float32):
        return blocks.device_array(blocks.as_shape(shape), dtype, self, self.memalloc)


@pytest.fixture
def dev(monkeypatch, young_heap):
    monkeypatch.delenv("GRAPHC_CUDA_POOL_BYTES", raising=False)
    blocks.limit.cache_clear()
    blocks.trim()
    yield FakeDevice()
    pygc.collect()
    blocks.trim()
    blocks.limit.cache_clear()


def addr(a):
    return a.device_ctypes_pointer.value


def test_arrays_are_c_contiguous_of_the_shape_and_dtype(dev):
    # an int shape too, as numba's cuda.device_array takes it (the reduction scratch)
    for shape, dtype in [((3, 4), np.float32), ((), np.float64), ((2, 1, 5), np.int32),
                         ((7,), np.bool_), (5, np.float64), (np.int64(3), np.int32)]:
        a = dev.array(shape, dtype)
        ref = np.empty(shape, dtype)
        assert type(a.shape) is tuple and all(type(d) is int for d in a.shape)
        assert a.shape == ref.shape and a.strides == ref.strides and a.dtype == ref.dtype
        assert a.gpu_data.size >= ref.nbytes and a.gpu_data.size % blocks.GRAIN == 0


def test_a_block_goes_back_only_after_its_last_view(dev):
    x = dev.array((3, 4))
    base = addr(x)
    flat = DeviceNDArray((12,), (4,), np.float32, gpu_data=x.gpu_data)        # as reshape
    rows = DeviceNDArray((2, 4), (16, 4), np.float32, gpu_data=x.gpu_data.view(16, 48))
    del x
    pygc.collect()
    other = dev.array((3, 4))
    assert blocks.idle_blocks() == (0, 0) and addr(other) != base
    del flat
    pygc.collect()
    assert blocks.idle_blocks() == (0, 0)
    del rows
    pygc.collect()
    assert blocks.idle_blocks() == (1, blocks.GRAIN)
    assert addr(dev.array((12,))) == base and other is not None


def test_the_same_size_class_reuses_the_block_without_a_new_cumemalloc(dev):
    x = dev.array((100,))
    base, calls, reused = addr(x), dev.calls, STATS.block_reuses
    del x
    y = dev.array((25, 4))              # same bytes
    assert addr(y) == base and dev.calls == calls and STATS.block_reuses == reused + 1
    z = dev.array((100,))               # y holds the block: a new one
    assert addr(z) != base and dev.calls == calls + 1
    assert not dev.freed


def test_idle_blocks_stay_within_the_bound_evicting_other_sizes_first(dev, monkeypatch):
    monkeypatch.setenv("GRAPHC_CUDA_POOL_BYTES", str(3 * blocks.GRAIN))
    blocks.limit.cache_clear()
    small = [dev.array((128,)) for _ in range(2)]       # 512 bytes each
    big = dev.array((256,))                               # 1024 bytes
    del small
    pygc.collect()
    assert blocks.idle_blocks() == (2, 2 * blocks.GRAIN)
    del big                             # 2 * 512 + 1024 > 1536: the small ones go first
    pygc.collect()
    assert blocks.idle_blocks() == (1, 2 * blocks.GRAIN) and len(dev.freed) == 2
    huge = dev.array((1024,))           # 4096 bytes: over the bound alone, freed on return
    del huge
    pygc.collect()
    assert blocks.idle_blocks() == (0, 0) and len(dev.freed) == 4


def test_zero_bound_keeps_nothing(dev, monkeypatch):
    monkeypatch.setenv("GRAPHC_CUDA_POOL_BYTES", "0")
    blocks.limit.cache_clear()
    a = dev.array((8,))
    del a
    pygc.collect()
    assert blocks.idle_blocks() == (0, 0) and len(dev.freed) == 1


def test_trim_frees_every_idle_block(dev):
    arrays = [dev.array((n,)) for n in (1, 200, 300)]
    del arrays
    pygc.collect()
    assert blocks.idle_blocks()[0] == 3
    blocks.trim()
    pygc.collect()
    assert blocks.idle_blocks() == (0, 0) and len(dev.freed) == 3


def test_per_thread_default_streams_keep_separate_idle_lists(dev, monkeypatch):
    monkeypatch.setattr(cuda.config, "CUDA_PER_THREAD_DEFAULT_STREAM", 1, raising=False)
    a = dev.array((16,))
    base = addr(a)
    del a
    got = []
    t = threading.Thread(target=lambda: got.append(addr(dev.array((16,)))))
    t.start()
    t.join()
    assert got[0] != base                   # another thread's stream: not this block
    assert addr(dev.array((16,))) == base   # this thread's: reused


def test_threads_never_share_a_block_in_use(dev):
    in_use, errors, lock = set(), [], threading.Lock()

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(300):
            a = dev.array((int(rng.integers(1, 400)),))
            with lock:
                if addr(a) in in_use:
                    errors.append(addr(a))
                in_use.add(addr(a))
            with lock:
                in_use.discard(addr(a))
            del a
    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and dev.calls < 4 * 300       # blocks were reused


def test_the_backend_allocates_any_shape_numba_takes_on_blocks(dev, monkeypatch):
    """memory.alloc as the plans call it: an int shape (the two-pass reduction scratch), a
    numpy int, a tuple, 0-d."""
    from graphc.kernels.cuda import memory
    monkeypatch.setattr(memory.cuda, "current_context", lambda: dev)
    for shape, want in [(5, (5,)), (np.int64(3), (3,)), ((2, 3), (2, 3)), ((), ())]:
        a = memory.alloc(shape, np.float32)
        assert a.shape == want and a.gpu_data.size == blocks.GRAIN


def test_an_array_collected_in_a_reference_cycle_returns_a_live_block(dev):
    """The cyclic GC clears weak references (numba-cuda's finalizers) of everything only
    the garbage reaches before it runs __del__: a block reachable only from a dead array
    would be freed by numba-cuda and then handed out again (seen on the H100)."""
    x = dev.array((8,))
    base = addr(x)
    cycle = [x]
    cycle.append(cycle)
    del x, cycle
    pygc.collect()
    assert blocks.idle_blocks() == (1, blocks.GRAIN) and not dev.freed
    y = dev.array((8,))                 # the block again, its memory still allocated
    assert addr(y) == base and base in dev.live
