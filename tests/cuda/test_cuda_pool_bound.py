"""The buffer pool itself (graphc/kernels/cuda/memory.py): keyed by shape and dtype, its
bound on idle bytes, and what an out-of-memory allocation does."""
import numpy as np
import pytest
from numba import cuda

from graphc.kernels.cuda import memory

from cuda_helpers import CudaRuns


@pytest.fixture
def pool():
    memory.trim_all()           # other tests' pools hold idle bytes: start from none
    return memory.Pool()


def test_a_buffer_comes_back_only_for_its_shape_and_dtype(pool):
    f64 = cuda.device_array(4, np.float64)
    pool.give(f64)
    runs = CudaRuns()
    with runs.count():
        other = [pool.take((4,), np.float32), pool.take((2, 2), np.float64)]
        same = pool.take((4,), np.float64)
    assert same is f64 and all(o is not f64 for o in other)
    assert (runs.allocations, runs.reuses) == (2, 1)
    assert pool.idle() == (0, 0)


def test_idle_bytes_stay_within_the_bound(pool, pool_bytes):
    pool_bytes("200")
    bufs = [cuda.device_array(10, np.float64) for _ in range(3)]    # 80 bytes each
    for b in bufs:
        pool.give(b)
    assert pool.idle() == (2, 160) and memory.idle_bytes() == 160   # the third: freed
    assert pool.take((10,), np.float64) is bufs[1]                   # last returned first


def test_a_new_shape_evicts_idle_buffers_of_other_shapes(pool, pool_bytes):
    pool_bytes("160")
    for _ in range(2):
        pool.give(cuda.device_array(10, np.float64))
    big = cuda.device_array(15, np.float64)                          # 120 bytes
    pool.give(big)
    assert pool.idle() == (1, 120) and pool.take((15,), np.float64) is big


def test_a_dead_pool_no_longer_counts(pool):
    import gc
    from graphc.kernels.cuda import blocks

    def pools_idle():               # idle blocks (a real GPU: arrays that gc frees) aside
        return memory.idle_bytes() - blocks.idle_blocks()[1]
    dying = memory.Pool()           # a plan's, when its function is collected
    dying.give(cuda.device_array(8, np.float32))
    assert pools_idle() == 32
    del dying
    gc.collect()
    assert pools_idle() == 0


class OutOfMemory(Exception):
    code = "CUresult.CUDA_ERROR_OUT_OF_MEMORY"      # as numba-cuda's CudaAPIError says it


@pytest.mark.parametrize("error", [OutOfMemory, MemoryError])
def test_out_of_memory_frees_idle_buffers_and_tries_again(pool, monkeypatch, error):
    pool.give(cuda.device_array(4, np.float64))
    real, failed = memory._new_array, []

    def flaky(shape, dtype):
        if not failed:
            failed.append(shape)
            raise error("out of memory")
        return real(shape, dtype)
    monkeypatch.setattr(memory, "_new_array", flaky)    # the device allocation itself
    out = memory.alloc((3,), np.float32)
    assert out.shape == (3,) and out.dtype == np.float32 and failed == [(3,)]
    assert pool.idle() == (0, 0)


def test_other_allocation_errors_propagate_and_keep_the_pool(pool, monkeypatch):
    pool.give(cuda.device_array(4, np.float64))

    def broken(shape, dtype):
        raise RuntimeError("invalid device context")
    monkeypatch.setattr(memory, "_new_array", broken)
    with pytest.raises(RuntimeError, match="invalid device context"):
        memory.alloc((3,), np.float32)
    assert pool.idle() == (1, 32)
