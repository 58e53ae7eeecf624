"""Entering parallel regions: one at a time, on the cores free now.

numba's workqueue threading layer (what numba falls back to where neither TBB nor OpenMP
loads) terminates the process when two threads are in parallel regions at once, and a
gc.function may be called from several threads. So every parallel kernel and split gemm
enters through this lock, whatever the layer: they run on 64k+ elements (tens of us and
more), so ~0.1 us for the lock is nothing, and each already uses every free core.

The thread count is chosen per region from `cores.free_cores()`: with one core free the
serial variant runs instead (no region, no workers to wake or to leave spinning), else
numba's per-thread count is set to the free cores (only when it changes: ~4 us a set).
"""
import threading

import numba

from . import cores

PARALLEL = threading.Lock()
_set = threading.local()      # the count numba.set_num_threads last got on this thread


def region_threads():
    """Threads for a parallel region starting now: free cores, capped by numba's pool."""
    return min(cores.free_cores(), numba.config.NUMBA_NUM_THREADS)


def pool_threads():
    """Every thread numba has (or GRAPHC_THREADS): for work that measures its own split."""
    n = cores.fixed()
    return min(n, numba.config.NUMBA_NUM_THREADS) if n else numba.config.NUMBA_NUM_THREADS


def enter(threads):
    """Inside PARALLEL: give this thread's next region `threads` threads."""
    if getattr(_set, "n", None) != threads:
        numba.set_num_threads(threads)
        _set.n = threads


def parallel_or_serial(parallel, serial):
    """A call that runs `parallel` on the free cores, or `serial` when only one is free."""
    def call(*args):
        threads = region_threads()
        if threads <= 1:
            return serial(*args)
        with PARALLEL:
            enter(threads)
            return parallel(*args)
    return call


def one_at_a_time(fn):
    """`fn` (a parallel kernel), entered by one thread at a time on every core numba has."""
    def call(*args):
        with PARALLEL:
            enter(numba.config.NUMBA_NUM_THREADS)
            return fn(*args)
    return call
