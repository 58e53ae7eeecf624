"""exp, log, log1p and pow as branch-free range reduction + polynomial (see `vecmath`).

Each `make_*` builds the float32 or float64 variant from one body: every constant is a value of
the target dtype captured by the closure, so float32 code never widens to float64 by accident.
Special values are patched in at the end with `select`, never with `if`.
"""
import numba
import numpy as np

from . import coeffs as C
from .bits import (EXP_MAGIC, horner, inlined, log_exponent, log_mantissa, mad, scale_pow2,
                   select)

# Only FMA contraction: reassociation would break the Cody-Waite and two-sum steps, and the
# no-nan/no-inf flags would fold away the special-value selects.
# error_model="numpy": no ZeroDivisionError branch in loops. No cache=True: a cached helper
# would not notice an edit to another vecmath file that it inlines.
JIT = dict(fastmath={"contract"}, nogil=True, error_model="numpy")

_LN2 = {np.float32: (0.693359375, -2.1219444170128554e-04),  # hi has 9 bits: n*hi is exact
        np.float64: (0.6931471803691238, 1.9082149292705877e-10)}  # hi: 32 bits (ln2 truncated)
# x range kept by exp before scaling; beyond it the result is 0 or inf anyway
_EXP_CLAMP = {np.float32: (-104.0, 89.0), np.float64: (-746.0, 710.0)}
_TINY = {np.float32: (2.0 ** -126, 24.0), np.float64: (2.0 ** -1022, 54.0)}
_LOG1P_CUT = {np.float32: 25.0, np.float64: 54.0}  # k beyond which 1+x is exact enough


def make_exp_core(ft):
    """exp(x + xlo) for a small correction xlo (-0.0 for plain exp; pow passes its low part)."""
    P = C.EXP_F32 if ft is np.float32 else C.EXP_F64
    lo_clamp, hi_clamp = ft(_EXP_CLAMP[ft][0]), ft(_EXP_CLAMP[ft][1])
    ln2_hi, ln2_lo = ft(_LN2[ft][0]), ft(_LN2[ft][1])
    log2e, one, magic = ft(1 / np.log(2)), ft(1), EXP_MAGIC[ft]

    @numba.njit(**JIT)
    def exp_core(x, xlo):
        xc = select(x > hi_clamp, hi_clamp, x)      # nan compares false: it stays nan and
        xc = select(xc < lo_clamp, lo_clamp, xc)    # makes the result nan, no patch needed
        z = mad(xc, log2e, magic)                   # magic + n, n = rint(x/ln2) (bits.py)
        n = z - magic
        r = mad(n, -ln2_hi, xc)                     # exact: n*ln2_hi has spare low zero bits
        r = mad(n, -ln2_lo, r) + xlo
        p = mad(r * r, horner(r, P), r) + one       # exp(r) = 1 + r + r^2 P(r)
        return scale_pow2(p, z, n)                  # p * 2^n rounded once, denormals too
    return inlined(exp_core, 2)


def make_exp(ft):
    """exp(x) for dtype `ft`, within 1-2 ulp over the whole range (0 below, inf above)."""
    core, minus_zero = make_exp_core(ft), ft(-0.0)

    @numba.njit(**JIT)
    def exp(x):
        return core(x, minus_zero)                  # r + -0.0 is r: the add folds away
    return inlined(exp)


def _make_log1p_kernel(ft):
    """log(m) + k*ln2 + c for the split x = 2^k m (m in [sqrt(1/2), sqrt(2))), fdlibm-style."""
    P = C.LOG_F32 if ft is np.float32 else C.LOG_F64
    ln2_hi, ln2_lo = ft(_LN2[ft][0]), ft(_LN2[ft][1])
    half, one, two = ft(0.5), ft(1), ft(2)

    @numba.njit(**JIT)
    def kernel(k, m, c):
        f = m - one
        s = f / (two + f)
        z = s * s
        hfsq = half * f * f
        r = z * horner(z, P)                        # log1p(f) = f - hfsq + s*(hfsq + r)
        return mad(k, ln2_hi, f - (hfsq - (s * (hfsq + r) + mad(k, ln2_lo, c))))
    return inlined(kernel, 3)


def make_log(ft):
    """Natural log: -inf at +-0, nan below 0 and for nan, inf at inf; denormals are rescaled."""
    kernel = _make_log1p_kernel(ft)
    tiny, scale_bits = ft(_TINY[ft][0]), ft(_TINY[ft][1])
    scale, zero, inf, nan = ft(2.0 ** _TINY[ft][1]), ft(0), ft(np.inf), ft(np.nan)

    @numba.njit(**JIT)
    def log(x):
        sub = x < tiny
        xs = select(sub, x * scale, x)
        k = log_exponent(xs) - select(sub, scale_bits, zero)
        res = kernel(k, log_mantissa(xs), zero)
        res = select(x == inf, x, res)
        res = select(x == zero, -inf, res)
        return select(x >= zero, res, nan)
    return inlined(log)


def make_log1p(ft):
    """log(1 + x), accurate for tiny x: the rounding of 1 + x is added back as a correction."""
    kernel = _make_log1p_kernel(ft)
    cut, zero, one, two = ft(_LOG1P_CUT[ft]), ft(0), ft(1), ft(2)
    inf, nan = ft(np.inf), ft(np.nan)

    @numba.njit(**JIT)
    def log1p(x):
        u = one + x
        k = log_exponent(u)
        c = select(k >= two, one - (u - x), x - (u - one)) / u
        c = select(k < cut, c, zero)
        res = kernel(k, log_mantissa(u), c)
        res = select(x == zero, x, res)             # keeps -0.0
        res = select(x == inf, x, res)
        res = select(x == -one, -inf, res)
        return select(x >= -one, res, nan)
    return inlined(log1p)
