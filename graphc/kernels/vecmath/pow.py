"""pow(x, y) = exp(y * log|x|) with enough extra precision in the log, plus the C99 special cases.

float32 runs the core in float64 (the float64 exp/log are accurate far beyond float32 needs).
float64 carries log|x| as a double-double (hi + lo) and passes y*lo into exp as a correction,
since an error e in y*log|x| becomes a relative error e in the result and |y log x| reaches 745.
"""
import numba
import numpy as np

from . import coeffs as C
from .bits import (copysign, fabs, fma, horner, inlined, log_exponent, log_mantissa,
                           mad, rint, select, to_float32, to_float64)
from .explog import JIT, _LN2, make_exp_core, make_log

_exp64 = make_exp_core(np.float64)
_log64 = make_log(np.float64)
_LN2_HI, _LN2_LO = (np.float64(v) for v in _LN2[np.float64])


@numba.njit(**JIT)
def _log_dd(x):
    """log(x) for x >= 0 as (hi, lo) with |lo| <= ulp(hi)/2, good to about 2**-64 relative."""
    tiny, scale_bits = np.float64(2.0 ** -1022), np.float64(54.0)
    sub = x < tiny
    xs = select(sub, x * np.float64(2.0 ** 54), x)
    k = log_exponent(xs) - select(sub, scale_bits, np.float64(0))
    f = log_mantissa(xs) - np.float64(1)                  # exact
    den = np.float64(2) + f
    den_lo = f - (den - np.float64(2))                    # exact tail of 2 + f
    s = f / den
    s_lo = (fma(-s, den, f) - s * den_lo) / den           # s + s_lo = f / (2 + f)
    z = s * s
    t = mad(s, z * horner(z, C.LOG_F64), s_lo + s_lo)     # log1p(f) = 2s + s R(z) + 2 s_lo
    two_s = s + s
    h = two_s + t
    l_ = t - (h - two_s)
    kh = k * _LN2_HI                                      # exact: ln2 hi part has 32 bits
    big = kh + h                                          # two-sum of k ln2 and log(m)
    b = big - kh
    e = (kh - (big - b)) + (h - b)
    lo = e + l_ + k * _LN2_LO
    hi = big + lo
    lo = lo - (hi - big)
    special = (x == np.float64(0)) | ~(x < np.float64(np.inf))   # 0, inf, nan: plain log
    hi = select(x == np.float64(0), np.float64(-np.inf), select(special, x, hi))
    return hi, select(special, np.float64(0), lo)


_log_dd_inline = inlined(_log_dd)


@numba.njit(**JIT)
def _pow_abs_f64(ax, y):
    hi, lo = _log_dd_inline(ax)
    ph = y * hi
    pl = fma(y, hi, -ph) + y * lo
    pl = select(fabs(ph) < np.float64(746), pl, np.float64(0))  # over/underflow, inf, nan
    return _exp64(ph, pl)


@numba.njit(**JIT)
def _pow_abs_f32(ax, y):
    return to_float32(_exp64(to_float64(y) * _log64(to_float64(ax)), np.float64(-0.0)))


def make_pow(ft):
    """x**y with C99/IEEE special cases: pow(x, +-0) = 1, pow(1, y) = 1, pow(-1, +-inf) = 1,
    nan for a finite negative x with a finite non-integer y, odd integer y keeps x's sign."""
    core = inlined(_pow_abs_f32 if ft is np.float32 else _pow_abs_f64, 2)
    zero, half, one, inf, nan = (ft(v) for v in (0, 0.5, 1, np.inf, np.nan))

    @numba.njit(**JIT)
    def pow_(x, y):
        res = core(fabs(x), y)
        y_int = rint(y) == y                              # true for +-inf, false for nan
        y_odd = y_int & (rint(y * half) != y * half)
        res = select((copysign(one, x) < zero) & y_odd, -res, res)   # sign bit: -0.0 too
        res = select((x < zero) & (x > -inf) & (rint(y) != y), nan, res)
        res = select((x == -one) & (fabs(y) == inf), one, res)
        return select((y == zero) | (x == one), one, res)
    return inlined(pow_, 2)
