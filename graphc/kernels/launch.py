"""One parallel region at a time across Python threads.

numba's workqueue threading layer (what numba falls back to where neither TBB nor OpenMP
loads) terminates the process when two threads are in parallel regions at once, and a
gc.function may be called from several threads. So every parallel kernel and split gemm
enters through this lock, whatever the layer: they run on 64k+ elements (tens of us and
more), so ~0.1 us for the lock is nothing, and each already uses every core.
"""
import threading

PARALLEL = threading.Lock()


def one_at_a_time(fn):
    """`fn` (a parallel kernel), entered by one thread at a time."""
    def call(*args):
        with PARALLEL:
            return fn(*args)
    return call
