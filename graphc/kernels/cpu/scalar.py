"""Scalar functions named by the registry's `scalar` templates, as numba-callable functions.

Generated kernels do `from graphc.kernels.cpu.scalar import *`. The math functions come from
`graphc.kernels.vecmath.SCALAR_FUNCS` (polynomial versions LLVM can vectorize) when that
module exists, else from `math`/numpy. max/min propagate NaN like np.maximum/np.minimum
(Python's max/min do not), and floor/ceil/rint keep the float dtype (math.floor returns int).
Integer arithmetic wraps as numpy's does (`exact.wadd`...; codegen.statement picks them).
"""
import builtins
import math

import numpy as np
from numba import njit
from numpy import bool_, float32, float64, int32, int64  # noqa: F401 - used by templates

from .exact import (block_sum, buffer_sum, cascade_push, cascade_total,  # noqa: F401
                    ifloordiv, imod, row_maximum, row_minimum, stack_array, to_int32,
                    to_int64, wabs, wadd, wmul, wneg, wsub)
from ..vecmath.bits import prefer_vector_width  # noqa: F401 - see codegen.vector_width

_INLINE = dict(error_model="numpy")

# Index arithmetic (block bounds) uses numba's own integer min/max, lowered in place: `min`
# below is an njit function of its own, a whole extra compile (~50 ms cold) in every kernel.
imin, imax = builtins.min, builtins.max


# np.maximum/np.minimum: the first argument if it is NaN or strictly beyond the second,
# else the second (so maximum(-0.0, 0.0) is 0.0 and maximum(0.0, -0.0) is -0.0)
@njit(**_INLINE)
def max(a, b):  # noqa: A001 - the template name
    return a if (a > b or a != a) else b


@njit(**_INLINE)
def min(a, b):  # noqa: A001
    return a if (a < b or a != a) else b


@njit(**_INLINE)
def sign(a):
    # np.sign: +0.0 for either zero, NaN for NaN (numba's np.sign keeps -0.0)
    return 1 if a > 0 else (-1 if a < 0 else (0 if a == 0 else a))


@njit(**_INLINE)
def floor(a):
    return np.floor(a)


@njit(**_INLINE)
def ceil(a):
    return np.ceil(a)


@njit(**_INLINE)
def rint(a):
    return np.rint(a)


@njit(**_INLINE)
def sqrt(a):
    return np.sqrt(a)


@njit(**_INLINE)
def exp(a):
    return math.exp(a)


@njit(**_INLINE)
def log(a):
    return np.log(a)


@njit(**_INLINE)
def log1p(a):
    return np.log1p(a)


@njit(**_INLINE)
def sin(a):
    return math.sin(a)


@njit(**_INLINE)
def cos(a):
    return math.cos(a)


@njit(**_INLINE)
def tan(a):
    return math.tan(a)


@njit(**_INLINE)
def tanh(a):
    return math.tanh(a)


@njit(**_INLINE)
def erf(a):
    return math.erf(a)


@njit(**_INLINE)
def ipow(a, b):
    # numba gives 0 or INT_MIN for a negative exponent where numpy raises; compiled loops
    # (serial code: no raise inside prange) catch this and rerun interpreted for numpy's error
    if b < 0:
        raise ArithmeticError("integer to a negative power")
    # square-and-multiply in int64 with wrapping products: numpy's wrapped result (the
    # caller casts to the op's dtype; the low bits do not depend on the width)
    r, base, e = np.int64(1), np.int64(a), b
    while e:
        if e & 1:
            r = wmul(r, base)
        base = wmul(base, base)
        e >>= 1
    return r


# Without vecmath the "fast" variants are the plain ones and never ask for a redo.
fast_sin, fast_cos, fast_tan = sin, cos, tan


@njit(**_INLINE)
def fast_trig_miss(a):
    return 0.0


def _use_vecmath():
    """Replace the libm-backed functions with vecmath's vectorizable ones where it has them."""
    try:
        from .. import vecmath
    except Exception:  # noqa: BLE001 - vecmath is optional; a broken one must not break kernels
        return ()
    used = []
    fast = {n: getattr(vecmath, n) for n in ("fast_sin", "fast_cos", "fast_tan", "fast_trig_miss")}
    for name, fn in dict(vecmath.SCALAR_FUNCS, **fast).items():
        if name in _REPLACEABLE:
            globals()[name] = fn
            used.append(name)
    return tuple(sorted(used))


_REPLACEABLE = {"exp", "log", "log1p", "sin", "cos", "tan", "tanh", "erf", "sqrt", "sigmoid",
                "pow", "fast_sin", "fast_cos", "fast_tan", "fast_trig_miss"}
VECMATH_USED = _use_vecmath()

__all__ = ["max", "min", "imin", "imax", "row_maximum", "row_minimum", "prefer_vector_width", "wadd", "wsub",
           "wmul", "wneg", "wabs", "to_int32", "to_int64", "stack_array", "block_sum",
           "buffer_sum", "cascade_push", "cascade_total", "sign", "floor",
           "ceil", "rint", "sqrt", "exp", "log", "log1p", "sin", "cos", "tan", "tanh", "erf",
           "ipow", "ifloordiv", "imod", "fast_sin", "fast_cos", "fast_tan", "fast_trig_miss",
           "bool_", "float32", "float64", "int32", "int64"]
