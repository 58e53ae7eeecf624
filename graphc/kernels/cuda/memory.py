"""Device buffers of the cuda plan: every allocation (counted), and intermediates reused
across calls.

A value the plan frees after its last use, and that never escapes to the caller, lives in a
buffer checked out of its top-level plan's `Pool` (free lists keyed by shape and dtype);
when the last slot holding it -- the buffer or a view of it, in the plan or in a nested
cond/while plan -- is dropped, it goes back. So a steady-state call allocates only what
escapes: its results and new variable values (the caller may hold them: never pooled).

Why it is safe:
- a call's checked-out buffers are its own (`CallMemory`, one per top-level call, shared
  with its nested plans); threads share only the free lists, behind a lock.
- a buffer goes back after its last reader was launched, and a later launch that gets it
  runs after that one: launches and copies share the legacy default stream, which runs
  them in order (with per-thread default streams, free lists are per thread).
- an error mid-call returns nothing: the call's buffers are dropped, never reused.
- bounded: idle buffers of all pools, and the idle blocks under them (blocks.py: every
  array's memory, results included, is reused once its last array is gone), together hold
  at most GRAPHC_CUDA_POOL_BYTES bytes (default 1 GiB; 0 turns reuse off). A buffer that
  would go over evicts its pool's idle buffers of other shapes first, else it is freed. An
  allocation that fails for lack of device memory empties every pool and idle block and
  tries once more.
"""
import threading
import weakref

import numpy as np
from numba import cuda

from . import blocks
from .blocks import DEFAULT_LIMIT, IDLE as _IDLE, LOCK as _LOCK, limit  # noqa: F401
from .blocks import stream_key as _stream_key
from .records import STATS

_POOLS = weakref.WeakSet()
_SIMULATED = bool(cuda.config.ENABLE_CUDASIM)


def alloc(shape, dtype):
    """A new device array (counted in STATS.allocations) on memory from the idle blocks
    (blocks.py) or a new cuMemAlloc; when the device is out of memory, the pools' idle
    buffers and blocks are freed and it is tried once more."""
    STATS.add("allocations")
    try:
        return _new_array(shape, dtype)
    except Exception as e:  # noqa: BLE001 - only out-of-memory is retried
        if not _out_of_memory(e):
            raise
    trim_all()
    return _new_array(shape, dtype)


def _new_array(shape, dtype):
    if _SIMULATED:
        return cuda.device_array(shape, dtype)      # the simulator's memory is host memory
    shape = blocks.as_shape(shape)
    if 0 in shape:
        return cuda.device_array(shape, dtype)      # no memory under an empty array
    ctx = getattr(_THREAD, "ctx", None)
    if ctx is None:
        ctx = _THREAD.ctx = cuda.current_context()
    return blocks.device_array(shape, dtype, ctx, ctx.memalloc)


# The context per thread: numba-cuda's current_context() asks the driver each time once
# CuPy or cuda.core made the context current (it caches only contexts it activated).
_THREAD = threading.local()


def _out_of_memory(e):
    code = getattr(e, "code", None)
    return isinstance(e, MemoryError) or "OUT_OF_MEMORY" in str(code) or code == 2


def _key(shape, dtype):
    s = _DTYPE_STR.get(dtype)
    if s is None:
        s = _DTYPE_STR[dtype] = np.dtype(dtype).str
    return tuple(shape), s, _stream_key()


_DTYPE_STR = {}         # dtype (or scalar type) -> its .str: a pool key per take and give


class Pool:
    """Idle device buffers of one top-level plan, by (shape, dtype)."""

    def __init__(self):
        self._free = {}             # key -> buffers, most recently returned last
        with _LOCK:
            _POOLS.add(self)
        weakref.finalize(self, _forget, self._free)

    def take(self, shape, dtype):
        """An idle buffer of this shape and dtype (its contents are stale), else a new one."""
        key = _key(shape, dtype)
        with _LOCK:
            free = self._free.get(key)
            if free:
                buf = free.pop()
                _IDLE[0] -= buf.nbytes
                STATS.add("reuses")
                return buf
        return alloc(shape, dtype)

    def give(self, buf):
        """Keep `buf` for a later take(), unless that would go over the bound."""
        key, n, cap = _key(buf.shape, buf.dtype), buf.nbytes, limit()
        with _LOCK:
            if _IDLE[0] + n <= cap:     # the usual case: nothing to evict (every upload)
                self._free.setdefault(key, []).append(buf)
                _IDLE[0] += n
                return
            for other in [k for k in self._free if k != key]:
                if _IDLE[0] + n <= cap:
                    break
                _IDLE[0] -= sum(b.nbytes for b in self._free.pop(other))
            if _IDLE[0] + n > cap:
                return                      # freed: not kept
            self._free.setdefault(key, []).append(buf)
            _IDLE[0] += n

    def idle(self):
        """(idle buffers, their bytes) of this pool."""
        with _LOCK:
            bufs = [b for free in self._free.values() for b in free]
        return len(bufs), sum(b.nbytes for b in bufs)

    def trim(self):
        with _LOCK:
            _forget(self._free)


def _forget(free):
    with _LOCK:
        _IDLE[0] -= sum(b.nbytes for bufs in free.values() for b in bufs)
        free.clear()


def trim_all():
    """Free every pool's idle buffers and every idle block (after an out-of-memory error)."""
    with _LOCK:
        pools = list(_POOLS)
    for p in pools:
        p.trim()
    blocks.trim()


def idle_bytes():
    return _IDLE[0]


class CallMemory:
    """The buffers one call checked out, and how many slots hold each (the buffer or a
    view of it) across the call's plans. Single-threaded: one per call."""

    __slots__ = ("pool", "_owned")

    def __init__(self, pool):
        self.pool = pool
        self._owned = {}            # id(array or view) -> (array, entry [buffer, refs, ids])

    def take(self, shape, dtype):
        buf = self.pool.take(shape, dtype)
        self._owned[id(buf)] = (buf, [buf, 0, [id(buf)]])
        return buf

    def holds_any(self):
        return bool(self._owned)

    def alias(self, view, of):
        """`view` shares `of`'s memory: the buffer stays out until the view is dropped too."""
        got = self._owned.get(id(of))
        if got is not None and id(view) not in self._owned:
            self._owned[id(view)] = (view, got[1])
            got[1][2].append(id(view))

    def ref(self, x):
        got = self._owned.get(id(x))
        if got is not None:
            got[1][1] += 1

    def unref(self, x):
        got = self._owned.get(id(x))
        if got is not None:
            entry = got[1]
            entry[1] -= 1
            if entry[1] <= 0:
                self._give_back(entry)

    def escape(self, x):
        """`x` (or the buffer it views) leaves the call: never back to the pool."""
        got = self._owned.get(id(x))
        if got is not None:
            for i in got[1][2]:
                del self._owned[i]

    def finish(self):
        """The call is over and its results escaped: every other buffer goes back."""
        if not self._owned:
            return
        entries = {id(e): e for _, e in self._owned.values()}
        for e in entries.values():
            self._give_back(e)

    def _give_back(self, entry):
        for i in entry[2]:
            del self._owned[i]
        self.pool.give(entry[0])
