"""sin and cos: reduction by pi/2 to |theta| <= pi/4, then the sin or cos polynomial by quadrant.

Both use a three-part Cody-Waite reduction in float64 with FMA, exact while |x| < 2**47.
float32 adds a Payne-Hanek reduction for the larger exponents (computed for every lane, kept by
`select`), so it is accurate over the whole range without a branch. float64 has no such path
(it would need a ~60-entry table per lane): for |x| >= 2**47 it returns nan rather than a
wrong number (see `vecmath`).
"""
import numba
import numpy as np

from . import vecmath_coeffs as C
from .vecmath_bits import (binary_exponent, fabs, floor, fma, horner, inlined, mad, pick, pow2i,
                           rint, select, to_float32, to_float64)
from .vecmath_explog import JIT

F64_ACCURATE_BELOW = 2.0 ** 47


_PH_FIRST_EXPONENT = 47          # float32 |x| >= 2**47 takes the Payne-Hanek path
_PH_GROUP = 16                   # exponents per table entry (the rest is a power-of-2 shift)


def _payne_hanek_table():
    """2**s * 2/pi mod 4 for s = 24, 40, ..., 104 as three float64 chunks each.

    A float32 |x| >= 2**47 is m * 2**s with an integer m < 2**24 and s = 24 + 16a + b
    (0 <= b < 16), and x*2/pi mod 4 = m * (2**b * table[a] mod 4) mod 4. The chunks have 29,
    29 and 53 bits (fixed point from 2**1 down to 2**-109), so after the 2**b shift m times each
    of the first two is still exact in float64; 16 spare bits absorb the shift.
    """
    bits, k = C.TWO_OVER_PI_2_400, 400
    chunks = ([], [], [])
    for s in range(24, 105, _PH_GROUP):
        shift = s + 109 - k                       # keep 111 bits: 2**1 .. 2**-109
        fixed = (bits << shift if shift >= 0 else bits >> -shift) & ((1 << 111) - 1)
        chunks[0].append(np.float64((fixed >> 82) * 2.0 ** -27))
        chunks[1].append(np.float64(((fixed >> 53) & ((1 << 29) - 1)) * 2.0 ** -56))
        chunks[2].append(np.float64((fixed & ((1 << 53) - 1)) * 2.0 ** -109))
    return tuple(tuple(c) for c in chunks)


_G0, _G1, _G2 = _payne_hanek_table()
_P1, _P2, _P3 = (np.float64(v) for v in C.PIO2_F64)
_ZERO, _QUARTER, _ONE, _FOUR, _SIXTEENTH = (np.float64(v) for v in (0, 0.25, 1, 4, 1 / 16))
_GROUP, _LO_S, _HI_S, _MANT = (np.float64(v) for v in (_PH_GROUP, 24, 104, 23))
_FIRST = np.float64(_PH_FIRST_EXPONENT)
_TWO_OVER_PI, _PIO2 = np.float64(2 / np.pi), np.float64(np.pi / 2)


@numba.njit(**JIT)
def _cody_waite(x):
    """(n, x - n*pi/2) in float64; exact steps (FMA) keep it accurate while |n| < 2**47."""
    n = rint(x * _TWO_OVER_PI)
    r = fma(-n, _P1, x)                       # exact: the result fits in 53 bits
    r = fma(-n, _P2, r)
    return n, fma(-n, _P3, r)


_cody_waite_inline = inlined(_cody_waite)


@numba.njit(**JIT)
def _reduce_f32(x):
    """(quadrant in {0,1,2,3}, theta) with x = quadrant*pi/2 + theta (mod 2pi), |theta| <= pi/4.

    Both reductions run for every lane and a select keeps the right one, so the loop has no
    branch; the Payne-Hanek table is read with selects too (no gather).
    """
    xd = to_float64(x)
    n, r = _cody_waite_inline(xd)
    e = to_float64(binary_exponent(x))
    s = e - _MANT
    s = select(s > _LO_S, s, _LO_S)
    s = select(s < _HI_S, s, _HI_S)               # inf/nan: any entry, fixed later
    a = floor((s - _LO_S) * _SIXTEENTH)
    shift = pow2i(s - _LO_S - _GROUP * a)
    m = xd * pow2i(-s)                                    # integer when |x| >= 2**47
    f0 = pick(a, _G0) * shift
    f0 = f0 - _FOUR * floor(f0 * _QUARTER)        # exact
    p0 = m * f0                                           # exact
    q0 = p0 - _FOUR * rint(p0 * _QUARTER)         # exact, in [-2, 2]
    p1 = m * (pick(a, _G1) * shift)                       # exact
    t = q0 + p1                                           # two-sum keeps the low bits
    b = t - q0
    err = (q0 - (t - b)) + (p1 - b)
    nh = rint(t)
    rh = ((t - nh) + (err + m * (pick(a, _G2) * shift))) * _PIO2
    big = e >= _FIRST
    n = select(big, nh, n)
    r = select(big, rh, r)
    quadrant = n - _FOUR * floor(n * _QUARTER)
    return to_float32(quadrant), to_float32(r)


_reduce_f32_inline = inlined(_reduce_f32)


@numba.njit(**JIT)
def _reduce_f64(x):
    n, r = _cody_waite_inline(x)
    return n - _FOUR * floor(n * _QUARTER), r


_reduce_f64_inline = inlined(_reduce_f64)


def _make_sincos(ft, want_cos):
    S, K = (C.SIN_F32, C.COS_F32) if ft is np.float32 else (C.SIN_F64, C.COS_F64)
    reduce = _reduce_f32_inline if ft is np.float32 else _reduce_f64_inline
    zero, half, one, two, nan = (ft(v) for v in (0, 0.5, 1, 2, np.nan))
    limit = ft(np.inf if ft is np.float32 else F64_ACCURATE_BELOW)
    shift = one if want_cos else zero          # cos(x) = sin(x + pi/2): one quadrant on

    @numba.njit(**JIT)
    def sincos(x):
        q, t = reduce(x)
        u = t * t
        s = mad(t * u, horner(u, S), t)                      # sin(t) = t + t^3 P(u)
        c = mad(u * u, horner(u, K), mad(-half, u, one))     # cos(t) = 1 - u/2 + u^2 Q(u)
        q = q + shift
        q = select(q < two + two, q, q - two - two)
        odd = (q == one) | (q == two + one)
        res = select(odd, c, s)
        res = select(q >= two, -res, res)
        res = select(fabs(x) < limit, res, nan)        # inf, nan (float64: |x| >= 2**47)
        return res if want_cos else select(x == zero, x, res)    # sin keeps -0.0
    return inlined(sincos)


def make_tan(ft):
    """tan(x) = sin/cos of the reduced argument (-cos/sin in odd quadrants); keeps -0.0."""
    S, K = (C.SIN_F32, C.COS_F32) if ft is np.float32 else (C.SIN_F64, C.COS_F64)
    reduce = _reduce_f32_inline if ft is np.float32 else _reduce_f64_inline
    zero, half, one, two, nan = (ft(v) for v in (0, 0.5, 1, 2, np.nan))
    limit = ft(np.inf if ft is np.float32 else F64_ACCURATE_BELOW)

    @numba.njit(**JIT)
    def tan(x):
        q, t = reduce(x)
        u = t * t
        s = mad(t * u, horner(u, S), t)
        c = mad(u * u, horner(u, K), mad(-half, u, one))
        odd = (q == one) | (q == two + one)
        res = select(odd, -c, s) / select(odd, s, c)
        res = select(fabs(x) < limit, res, nan)        # inf, nan (float64: |x| >= 2**47)
        return select(x == zero, x, res)
    return inlined(tan)


def make_sin(ft):
    """sin(x): nan for inf/nan, keeps -0.0."""
    return _make_sincos(ft, False)


def make_cos(ft):
    """cos(x): nan for inf/nan."""
    return _make_sincos(ft, True)
