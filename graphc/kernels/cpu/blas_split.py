"""Big matrix products split across graphc's worker threads, each part one BLAS call.

With numpy's OpenBLAS on one thread (OPENBLAS_NUM_THREADS=1: on this 2-core VM its own
threads stalled a 0.3 ms product for up to 40 ms), a 128x784 @ 784x256 float32 product
takes 570 us. Cutting C into one block of rows (or columns) per numba thread, each block
one single-threaded gemm call inside a `prange`, took 321 us on an idle machine and
596 us with the other core busy (how numba's OpenMP workers wait matters: see cpu.py).
One of the ways a big product may run; blas_choice.py times them and picks.
"""
import ctypes
import threading

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic

from . import blas

from .. import tiers
from .cache_numba import njit     # cache=True: machine code in graphc's sealed cache only
from .launch import PARALLEL, enter

_NO_TRANS = 111


def possible(dtype, m, n, parts):
    """Can C (m x n) be cut into `parts` blocks of at least two rows or columns, each one
    call of numpy's BLAS (an ILP64 gemm for `dtype`: a 32-bit one is not bound here)?"""
    return (parts > 1 and max(m, n) >= 2 * parts and np.dtype(dtype) in blas._GEMM and
            blas._state.get("int") is ctypes.c_int64)


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


# The kernel compiles (or loads from the cache) on graphc's compile thread, never inside a
# user's call: until it is ready, products run without the split way (background tier).
_READY = threading.Event()
_JOB = []


def _compile():
    for real in (types.float32, types.float64):
        i = types.int64
        _split.compile((i, i, i, i, i, i, i, real, i, i, i, i, real, i, i, i))
    _READY.set()


def ready():
    """Is the split kernel compiled? The first call asks the compile thread for it (or, with
    GRAPHC_COMPILE=sync, compiles it now)."""
    if _READY.is_set():
        return True
    if tiers.mode() == "sync":
        _compile()
        return True
    if not _JOB:
        _JOB.append(tiers.submit("split gemm kernel", _compile, later=True))
    return False


def split(dtype, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, parts):
    """C = alpha*op(A)@op(B) + beta*C as `parts` single-threaded gemm calls in a prange, on
    `parts` numba threads (numpy's BLAS must be on one thread meanwhile: blas.FEWER)."""
    dtype = np.dtype(dtype)
    real = np.float32 if dtype == np.float32 else np.float64
    addr = ctypes.cast(blas._GEMM[dtype], ctypes.c_void_p).value
    with PARALLEL:
        enter(parts)
        _split(np.int64(addr), np.int64(dtype.itemsize), np.int64(ta), np.int64(tb),
               np.int64(m), np.int64(n), np.int64(k), real(alpha), np.int64(a.ctypes.data),
               np.int64(lda), np.int64(b.ctypes.data), np.int64(ldb), real(beta),
               np.int64(c.ctypes.data), np.int64(max(1, n)), np.int64(parts))
