"""Device functions named by the registry's scalar templates and by `kernels.expr`: what
generated CUDA kernels call (`from graphc.kernels.cuda.scalar import *`).

- Math (`exp`, `sin`, `erf`, `floor`...) is `math.*`, which numba-cuda lowers to CUDA's
  libdevice (`__nv_expf` for float32, `__nv_exp` for float64: within 4 ulp, C99 answers
  for NaN, inf and zeros, as numpy's; tests/cuda_kernels checks the calls in the compiled
  IR). Kernels are compiled without fastmath: no flush to zero, IEEE division and sqrt.
  Under the simulator (NUMBA_ENABLE_CUDASIM=1) kernels run as Python, where `math.*`
  raises or returns an int where C returns inf, NaN or a float, so the simulated math is
  numpy's ufunc of the same name (C99 semantics, the dtype kept).
- `fmul_rn`/`dmul_rn`: float products NVVM never contracts into an fma with a later add
  (it contracts plain ones even without fastmath, which turns numpy's inf from an
  overflowing x * y - 3e38 into a finite number); generated kernels use them for every
  float `multiply`/`square` and product reduction.
- `max`/`min` propagate NaN like np.maximum/np.minimum (Python's do not).
- Integer + - * and negation wrap as numpy's do: computed in uint64 (unsigned overflow is
  defined; numba's signed adds are `nsw`, overflow undefined), the caller's cast
  (`expr.statement`) keeps the low bits of the op's width. One body for device and
  simulator: the simulator runs the same arithmetic on numpy scalars.
- Float -> int casts give numpy's x86 answer (INT_MIN) for NaN, inf and out of range.
- `ipow`/`ifloordiv`/`imod` give numpy's wrapped results; where the numpy rule raises
  (zero divisor, negative power) they give 0, and fusion never puts them in a kernel
  (`fusion.raises_on_integers`; `lowering` refuses such a group too), so that rule
  raises its located error instead.
"""
import math

import numpy as np
from numba import cuda
from numba.cuda import config as _config
from numpy import bool_, float32, float64, int32, int64, uint64  # noqa: F401 - templates

SIMULATOR = bool(_config.ENABLE_CUDASIM)
_device = cuda.jit(device=True)


@_device
def max(a, b):  # noqa: A001 - the template name
    # np.maximum: the first argument if it is NaN or strictly greater, else the second
    return a if (a > b or a != a) else b


@_device
def min(a, b):  # noqa: A001
    return a if (a < b or a != a) else b


@_device
def sign(a):
    # np.sign: +0.0 for either zero, NaN for NaN (the caller casts to the dtype)
    return 1 if a > 0 else (-1 if a < 0 else (0 if a == 0 else a))


# -- float math: libdevice on the device ---------------------------------------------------
def _libdevice_math():
    from numba.cuda import libdevice

    @_device
    def fmul_rn(a, b):
        return libdevice.fmul_rn(a, b)      # never contracted into an fma

    @_device
    def dmul_rn(a, b):
        return libdevice.dmul_rn(a, b)

    @_device
    def exp(a):
        return math.exp(a)

    @_device
    def log(a):
        return math.log(a)

    @_device
    def log1p(a):
        return math.log1p(a)

    @_device
    def sqrt(a):
        return math.sqrt(a)

    @_device
    def sin(a):
        return math.sin(a)

    @_device
    def cos(a):
        return math.cos(a)

    @_device
    def tan(a):
        return math.tan(a)

    @_device
    def tanh(a):
        return math.tanh(a)

    @_device
    def erf(a):
        return math.erf(a)

    @_device
    def floor(a):
        return math.floor(a)        # float -> float on the device (__nv_floorf)

    @_device
    def ceil(a):
        return math.ceil(a)

    @_device
    def rint(a):
        # np.rint rounds half to even; floor/ceil are exact and a - floor(a) is too
        f = math.floor(a)
        c = math.ceil(a)
        d = a - f
        r = c if (d > 0.5 or (d == 0.5 and math.fmod(f, 2.0) != 0)) else f
        return math.copysign(r, a)  # -0.3 -> -0.0, as numpy; NaN and inf pass through
    return dict(exp=exp, log=log, log1p=log1p, sqrt=sqrt, sin=sin, cos=cos, tan=tan,
                tanh=tanh, erf=erf, floor=floor, ceil=ceil, rint=rint, fmul_rn=fmul_rn,
                dmul_rn=dmul_rn)


def _simulated_math():
    """numpy's ufuncs, quiet (the simulator runs each thread as Python)."""
    from ...runtime.ops.elementwise import _erf

    def quiet(fn):
        def call(*args):
            with np.errstate(all="ignore"):
                return fn(*args)
        call.__name__ = fn.__name__
        return call
    names = ("exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh", "floor", "ceil",
             "rint")
    out = {n: quiet(getattr(np, n)) for n in names}
    out["erf"] = quiet(_erf)
    out["fmul_rn"] = out["dmul_rn"] = quiet(np.multiply)
    return out


globals().update(_simulated_math() if SIMULATOR else _libdevice_math())


# -- integers ------------------------------------------------------------------------------
@_device
def wadd(a, b):
    return int64(uint64(a) + uint64(b))


@_device
def wsub(a, b):
    return int64(uint64(a) - uint64(b))


@_device
def wmul(a, b):
    return int64(uint64(a) * uint64(b))


@_device
def wneg(a):
    return int64(uint64(0) - uint64(a))


@_device
def wabs(a):
    return int64(a) if a >= 0 else wneg(a)       # abs(INT_MIN) is INT_MIN, as in numpy


@_device
def to_int32(x):
    # NaN fails both tests; numpy's x86 cast gives INT_MIN for all of these
    return int32(x) if -2147483649.0 < x < 2147483648.0 else int32(-2147483648)


@_device
def to_int64(x):
    return (int64(x) if -9223372036854775808.0 <= x < 9223372036854775808.0
            else int64(-9223372036854775808))


@_device
def ipow(a, b):
    # square-and-multiply with wrapping products: numpy's wrapped result
    if b < 0:
        return int64(0)
    r = int64(1)
    base = int64(a)
    e = int64(b)
    while e > 0:
        if e & 1:
            r = wmul(r, base)
        base = wmul(base, base)
        e >>= 1
    return r


@_device
def ifloordiv(a, b):
    if b == 0:
        return a - a
    if b == -1:           # INT_MIN // -1 wraps to INT_MIN in numpy
        return wneg(a)
    return a // b


@_device
def imod(a, b):
    if b == 0 or b == -1:
        return a - a
    return a % b


__all__ = ["fmul_rn", "dmul_rn", "max", "min", "sign", "exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh",
           "erf", "floor", "ceil", "rint", "wadd", "wsub", "wmul", "wneg", "wabs", "to_int32",
           "to_int64", "ipow", "ifloordiv", "imod", "bool_", "float32", "float64", "int32",
           "int64", "uint64", "np", "math", "cuda"]
