"""Big matrix products split across graphc's worker threads, each part one BLAS call.

With numpy's OpenBLAS on one thread (OPENBLAS_NUM_THREADS=1: on this 2-core VM its own
threads stalled a 0.3 ms product for up to 40 ms), a 128x784 @ 784x256 float32 product
takes 570 us. Cutting C into one block of rows (or columns) per numba thread, each block
one single-threaded gemm call inside a `prange`, took 321 us on an idle machine and
596 us with the other core busy (how numba's OpenMP workers wait matters: see cpu.py).
Only used when numpy's BLAS reports one thread, numba has several, and the product has at
least SPLIT_MIN multiply-adds; otherwise the caller makes one ordinary call.
"""
import ctypes
import statistics
import time
from collections import deque

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic

from . import blas
from .cache_numba import njit     # cache=True: machine code in graphc's sealed cache only
from .launch import PARALLEL, enter, pool_threads

SPLIT_MIN = 1 << 22          # multiply-adds (x@W1 of the MLP step: 25.7M)
_NO_TRANS = 111


def applies(dtype, m, n, k, threads=None):
    """Worth splitting over `threads` (default: numba's pool, launch.py)?"""
    if m * n * k < SPLIT_MIN:
        return False
    threads = pool_threads() if threads is None else threads
    return (threads > 1 and max(m, n) >= 2 * threads and blas.blas_threads() == 1 and
            _kernel(dtype) is not None)


def _kernel(dtype):
    """The split kernel if numpy's BLAS has an ILP64 gemm for `dtype` (None otherwise)."""
    dtype = np.dtype(dtype)
    fn = blas._GEMM.get(dtype)
    if fn is None or blas._state.get("int") is not ctypes.c_int64:
        return None          # a 32-bit-integer BLAS: not worth a second binding
    return _split


@intrinsic
def _call_gemm(typingctx, addr, ta, tb, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc):
    """cblas_?gemm(RowMajor, ...) through its address: pointers and sizes are int64, alpha
    and beta float32 (sgemm) or float64 (dgemm). An address argument, not a global, keeps
    the kernel cacheable on disk."""
    sig = types.void(addr, ta, tb, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc)

    def codegen(context, builder, signature, args):
        i32, i64 = ir.IntType(32), ir.IntType(64)
        real = ir.FloatType() if alpha == types.float32 else ir.DoubleType()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, real, i64, i64,
                                               i64, i64, real, i64, i64])
        ptr = builder.inttoptr(args[0], fnty.as_pointer())
        ints = [builder.trunc(a, i32) for a in args[1:3]]
        builder.call(ptr, [ir.Constant(i32, 101)] + ints + list(args[3:]))
        return context.get_dummy_value()
    return sig, codegen


@njit(parallel=True, nogil=True, cache=True)
def _split(addr, item, ta, tb, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc, parts):
    by_rows = m >= n
    for p in prange(parts):
        if by_rows:
            lo, hi = p * m // parts, (p + 1) * m // parts
            a_off = lo * (lda if ta == _NO_TRANS else 1) * item
            _call_gemm(addr, ta, tb, hi - lo, n, k, alpha, pa + a_off, lda, pb, ldb, beta,
                       pc + lo * ldc * item, ldc)
        else:
            lo, hi = p * n // parts, (p + 1) * n // parts
            b_off = lo * (1 if tb == _NO_TRANS else ldb) * item
            _call_gemm(addr, ta, tb, m, hi - lo, k, alpha, pa, lda, pb + b_off, ldb, beta,
                       pc + lo * item, ldc)


class _Choice:
    """Split or not, per product shape, from the medians of recent timings of both: a split
    only pays while the other cores are free (on a busy 2-core machine it cost 5% more), so
    every PROBE_EVERY-th call runs the other variant and the lower median wins. Medians, not
    running means: on a shared machine one call in a few takes several times longer, and a
    mean follows those outliers back and forth."""

    __slots__ = ("split", "samples", "calls", "warm")

    def __init__(self):
        self.split, self.calls, self.warm = True, 0, [False, False]
        self.samples = [deque(maxlen=KEEP), deque(maxlen=KEEP)]

    @property
    def avg(self):
        """Per variant (index False/True): the median of its recent timings, or None."""
        return [statistics.median(s) if s else None for s in self.samples]

    def pick(self):
        self.calls += 1
        if not self.samples[self.split]:
            return self.split
        if not self.samples[not self.split] or self.calls % PROBE_EVERY == 0:
            return not self.split
        return self.split

    def record(self, split, seconds):
        if not self.warm[split]:          # a first run may include compiling: not a sample
            self.warm[split] = True
            return
        self.samples[split].append(seconds)
        single, parts = self.avg
        if single is not None and parts is not None:
            self.split = parts < single


KEEP = 15               # timings kept per variant
PROBE_EVERY = 32
_CHOICES = {}


def run(dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c):
    """C = alpha*op(A)@op(B) + beta*C, in parts when that is faster; False (nothing done)
    when the caller should make one ordinary call."""
    # every thread, not just the free cores: a long product gains a bigger share of a busy
    # machine from a second thread (128x784 @ 784x256 beside a busy-loop process: the MLP
    # step 1.8 ms split vs 6 ms single), and the medians below stop splits that lose
    threads = pool_threads()
    if not applies(dtype, m, n, k, threads):
        return False
    key = (np.dtype(dtype), ta, tb, m, n, k, threads)   # timings per thread count
    choice = _CHOICES.get(key)
    if choice is None:
        choice = _CHOICES[key] = _Choice()
    split = choice.pick()
    t0 = time.perf_counter()
    if split:
        real = np.float32 if key[0] == np.float32 else np.float64
        addr = ctypes.cast(blas._GEMM[key[0]], ctypes.c_void_p).value
        with PARALLEL:
            enter(threads)
            _split(np.int64(addr), np.int64(key[0].itemsize), np.int64(ta), np.int64(tb),
                   np.int64(m), np.int64(n), np.int64(k), real(alpha),
                   np.int64(a.ctypes.data), np.int64(lda), np.int64(b.ctypes.data),
                   np.int64(ldb), real(beta), np.int64(c.ctypes.data), np.int64(max(1, n)),
                   np.int64(threads))
    else:
        blas._GEMM[key[0]](101, ta, tb, m, n, k, alpha, a.ctypes.data, lda, b.ctypes.data, ldb,
                           beta, c.ctypes.data, max(1, n))
    choice.record(split, time.perf_counter() - t0)
    return True
