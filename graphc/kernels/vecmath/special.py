"""tanh, sigmoid and erf built on the vectorizable exp (see `vecmath`); branch-free."""
import numba
import numpy as np

from . import coeffs as C
from .bits import EXP_MAGIC, copysign, fabs, horner, horner2, inlined, mad, pow2_bits, select
from .explog import _LN2, JIT, make_exp

_TANH_POLY_BELOW = 0.625          # |x| where tanh switches from x + x^3 P(x^2) to exp
# |x| from which tanh rounds to +-1: 2/(exp(2x) + 1) < 2**-25 (float32), 2**-54 (float64)
_TANH_TOP = {np.float32: 10.0, np.float64: 20.0}
_ERF_POLY_BELOW = 0.875           # |x| where erf switches from x + x P(x^2) to 1 - erfc
# erfc(a) = exp(-a^2) P(a - center): float32 one piece on [0.875, 4]; float64 two pieces,
# [0.875, 2.5] and [2.5, 6]; past the last edge erf rounds to +-1 (erfc < half an ulp of 1).
_ERFC_F32 = (2.4375, 4.0)
_ERFC_F64 = (1.6875, 2.5, 4.25, 6.0)


def make_tanh(ft):
    """tanh: odd polynomial near 0, 1 - 2/(exp(2|x|) + 1) beyond (saturates to +-1, keeps -0).

    The exp is inlined and cut down to what this range needs: |x| is clamped to _TANH_TOP[ft]
    (where tanh has long rounded to 1), so exp(2|x|) is at most 2**29 (float32) or 2**58
    (float64): one exact power-of-two scaling, no low clamp, and nan passes through."""
    P = C.TANH_F32 if ft is np.float32 else C.TANH_F64
    E = C.EXP_F32 if ft is np.float32 else C.EXP_F64
    ln2_hi, ln2_lo = ft(_LN2[ft][0]), ft(_LN2[ft][1])
    edge, one, two, top = ft(_TANH_POLY_BELOW), ft(1), ft(2), ft(_TANH_TOP[ft])
    two_log2e, magic = ft(2 / np.log(2)), EXP_MAGIC[ft]

    @numba.njit(**JIT)
    def tanh(x):
        a = fabs(x)
        u = x * x
        small = mad(x * u, horner(u, P), x)
        t = select(a > top, top, a)                 # nan stays nan
        z = mad(t, two_log2e, magic)                # magic + n, n = rint(2t/ln2) (bits.py)
        n = z - magic
        r = mad(n, -ln2_hi, two * t)                # exp(2t) = 2^n exp(r), as in make_exp
        r = mad(n, -ln2_lo, r)
        e = (mad(r * r, horner(r, E), r) + one) * pow2_bits(z)
        big = one - two / (e + one)
        return copysign(select(a < edge, small, big), x)      # tanh(-0.0) = -0.0
    return inlined(tanh)


def make_sigmoid(ft):
    """1 / (1 + exp(-x)), written as e/(1+e) with e = exp(x) for x < 0 so tiny results keep
    their precision (down into the denormals) instead of flushing to 0."""
    exp = make_exp(ft)
    zero, one = ft(0), ft(1)

    @numba.njit(**JIT)
    def sigmoid(x):
        e = exp(-fabs(x))
        r = one / (one + e)
        return select(x < zero, e * r, r)
    return inlined(sigmoid)


def make_erf(ft):
    """erf: x + x P(x^2) near 0; 1 - exp(-x^2) Q(|x|) beyond, with the sign of x."""
    exp = make_exp(ft)
    edge, one = ft(_ERF_POLY_BELOW), ft(1)
    if ft is np.float32:
        P, Q = C.ERF_SMALL_F32, C.ERFC_F32
        center, top = ft(_ERFC_F32[0]), ft(_ERFC_F32[1])

        @numba.njit(**JIT)
        def erfc_scaled(a):                      # erfc(a) * exp(a^2)
            return horner(select(a < top, a, top) - center, Q)
    else:
        P, Q1, Q2 = C.ERF_SMALL_F64, C.ERFC_NEAR_F64, C.ERFC_FAR_F64
        c1, split, c2, top = (ft(v) for v in _ERFC_F64)

        @numba.njit(**JIT)
        def erfc_scaled(a):
            ac = select(a < top, a, top)
            near = ac < split
            return horner2(ac - select(near, c1, c2), near, Q1, Q2)
    erfc_scaled = inlined(erfc_scaled)

    @numba.njit(**JIT)
    def erf(x):
        a = fabs(x)
        u = x * x
        small = mad(x, horner(u, P), x)
        big = one - exp(-u) * erfc_scaled(a)
        res = select(a < edge, small, copysign(big, x))
        return select(x != x, x, res)
    return inlined(erf)
