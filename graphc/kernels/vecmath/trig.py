"""sin, cos, tan: reduction by pi/2 to |theta| <= pi/4, then the sin/cos polynomials by quadrant.

The reduction is Cody-Waite in float64 with FMA and pi/2 in three parts (float32 inputs: exact
up to 2**53, float64: up to 2**47); the fast float32 variants use float32 parts instead
(accurate up to 2**17, no float64 lanes), and the fast float32 sin reduces by pi rather than
pi/2, which needs one polynomial and a sign flip instead of two polynomials and quadrant
selects. float32 adds an integer Payne-Hanek reduction for |x| >= 2**47 (bits of 2/pi cut out
with variable shifts, no table gather), computed for every lane and kept by `select`, so it is
accurate over the whole range without a branch; the `fast`
variants leave it out (about 5x cheaper) and return nan from 2**17. float64 has no Payne-Hanek
path (it would need ~17 words of 2/pi per lane): from 2**47 it returns nan, not a wrong number,
and `vecmath.sin` etc. use libm for float64 instead. `make_trig_miss` flags the arguments a
polynomial variant cannot handle, so kernels can redo those rare cases with the whole-range one.
"""
from fractions import Fraction

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import coeffs as C
from .bits import (ROUND_MAGIC, fabs, flip_if_odd, floor, fma, horner, inlined, mad, rint,
                   select, to_float32, to_float64)
from .explog import JIT

F64_ACCURATE_BELOW = 2.0 ** 47
_PH_FIRST_EXPONENT = 47          # float32 |x| >= 2**47 takes the Payne-Hanek path
# floor(2/pi * 2**256) as four 64-bit words, most significant first
_WORDS = [(C.TWO_OVER_PI_2_400 >> (144 + 64 * (3 - j))) & (2 ** 64 - 1) for j in range(4)]


def _ph_codegen(builder, x):
    """Integer Payne-Hanek for float32 |x| >= 2**47: (quadrant, theta) as float64 values.

    |x| = M * 2**s (M < 2**24, 24 <= s <= 104); x*2/pi mod 4 = M * F mod 4 where F holds the
    bits of 2/pi from 2**(s+1) down. F is cut from the constant words with variable shifts
    (a 64-bit window from 2**1 to 2**-62 plus the next 32 bits) and multiplied by M with
    32x32->64 products, giving x*2/pi mod 4 in 62-bit fixed point, good to 2**-62 absolute.
    Everything stays in 64-bit lanes (int -> float by the 2**52 bit trick) to avoid shuffles.
    """
    i64, f64 = ir.IntType(64), ir.DoubleType()

    def c(v):
        return ir.Constant(i64, v)

    def as_double(bits, offset):               # bits of (2**52 [+ 2**51] + k) minus the offset
        return builder.fsub(builder.bitcast(bits, f64), ir.Constant(f64, offset))
    ix = builder.zext(builder.bitcast(x, ir.IntType(32)), i64)
    m = builder.or_(builder.and_(ix, c(0x7FFFFF)), c(0x800000))
    s = builder.sub(builder.and_(builder.lshr(ix, c(23)), c(0xFF)), c(150))
    s = builder.select(builder.icmp_signed("<", s, c(24)), c(24), s)
    s = builder.select(builder.icmp_signed(">", s, c(104)), c(104), s)
    t = builder.sub(c(194), s)                 # F * 2**62 = bits [t, t+64) of the words
    words = [c(w) for w in _WORDS]

    def window(t, q_low):                      # bits [t, t+64); t >> 6 is q_low or q_low + 1
        first = builder.icmp_unsigned("==", builder.lshr(t, c(6)), c(q_low))
        lo_word = builder.select(first, words[3 - q_low], words[2 - q_low])
        hi_word = builder.select(first, words[2 - q_low], words[1 - q_low])
        o = builder.and_(t, c(63))
        hi_part = builder.shl(builder.shl(hi_word, c(1)), builder.sub(c(63), o))
        return builder.or_(builder.lshr(lo_word, o), hi_part)
    w_hi = window(t, 1)                        # t in [90, 170]
    w_lo = builder.lshr(window(builder.sub(t, c(64)), 0), c(32))
    low32 = c(0xFFFFFFFF)
    prod = builder.shl(builder.mul(m, builder.lshr(w_hi, c(32))), c(32))
    prod = builder.add(prod, builder.mul(m, builder.and_(w_hi, low32)))
    prod = builder.add(prod, builder.lshr(builder.mul(m, w_lo), c(32)))
    n = builder.lshr(builder.add(prod, c(1 << 61)), c(62))             # nearest quadrant
    r = builder.sub(prod, builder.shl(n, c(62)))                       # in [-2**61, 2**61)
    r_hi = as_double(builder.add(builder.ashr(r, c(32)), c(0x4338000000000000)), 2.0 ** 52 * 1.5)
    r_lo = as_double(builder.or_(builder.and_(r, low32), c(0x4330000000000000)), 2.0 ** 52)
    frac = builder.fadd(builder.fmul(r_hi, ir.Constant(f64, 2.0 ** -30)),
                        builder.fmul(r_lo, ir.Constant(f64, 2.0 ** -62)))
    theta = builder.fmul(frac, ir.Constant(f64, np.pi / 2))
    return as_double(builder.or_(n, c(0x4330000000000000)), 2.0 ** 52), theta


@intrinsic
def _payne_hanek_f32(typingctx, x):
    """(quadrant, theta) in float64 for |x| (float32 >= 2**24; other inputs give garbage)."""
    if x != types.float32:
        from numba.core.errors import TypingError
        raise TypingError(f"vecmath._payne_hanek_f32: expected float32, got {x}")
    ret = types.UniTuple(types.float64, 2)

    def codegen(context, builder, sig, args):
        return context.make_tuple(builder, ret, _ph_codegen(builder, args[0]))
    return ret(x), codegen


_P1, _P2, _P3 = (np.float64(v) for v in C.PIO2_F64)
_ZERO, _QUARTER, _FOUR = (np.float64(v) for v in (0, 0.25, 4))
_TWO_OVER_PI = np.float64(2 / np.pi)


@numba.njit(**JIT)
def _cody_waite(x):
    """(n, x - n*pi/2) in float64; exact steps (FMA) keep it accurate while |n| < 2**47."""
    n = rint(x * _TWO_OVER_PI)
    r = fma(-n, _P1, x)                       # exact: the result fits in 53 bits
    r = fma(-n, _P2, r)
    return n, fma(-n, _P3, r)


_cody_waite_inline = inlined(_cody_waite)


# 2/pi split so that float32 * _C1 is exact: n = rint(x*2/pi) stays exact up to 2**53
_C1 = np.float64(float.fromhex("0x1.45f306cp-1"))          # 2/pi to 29 bits
_C2 = np.float64(Fraction(C.TWO_OVER_PI_2_400, 2 ** 400) - Fraction(float(_C1)))  # not 2/np.pi


def _float32_parts(value, count):
    """`value` (a Fraction) as a sum of `count` float32s, each the rounded remainder."""
    parts = []
    for _ in range(count):
        parts.append(np.float32(float(value)))
        value -= Fraction(float(parts[-1]))
    return tuple(parts)


# The fast float32 variants reduce in float32 alone (no float64 lanes: half the vector work,
# measured 14.8 -> 8.4 ms for sin over 10M float32): pi/2 in three float32 parts with FMA
# steps. Checked over every float32 with |x| below F32_FAST_ACCURATE_BELOW: within 4 ulp
# (test_fast_float32_trig_exhaustive_below_its_limit, run with GRAPHC_EXHAUSTIVE=1; 11 min).
_Q1, _Q2, _Q3 = _float32_parts(1 / Fraction(C.TWO_OVER_PI_2_400, 2 ** 400), 3)  # pi/2
_F32_TWO_OVER_PI = np.float32(2 / np.pi)
F32_FAST_ACCURATE_BELOW = 2.0 ** 17


@numba.njit(**JIT)
def _cody_waite_f32(x):
    """Cody-Waite for a float32 held in float64, with n computed exactly for |x| < 2**53."""
    hi = x * _C1                                  # exact (24 + 29 bits)
    n1 = rint(hi)
    n = n1 + rint((hi - n1) + x * _C2)
    r = fma(-n, _P1, x)
    r = fma(-n, _P2, r)
    return n - _FOUR * floor(n * _QUARTER), fma(-n, _P3, r)


_cody_waite_f32_inline = inlined(_cody_waite_f32)


_QUARTER32, _FOUR32 = np.float32(0.25), np.float32(4)


# fast float32 sin reduces by pi (n = rint(x/pi), sin(x) = (-1)^n sin(x - n pi), |x - n pi| <=
# pi/2) with pi in three float32 parts, like the pi/2 reduction below
_PI1, _PI2, _PI3 = _float32_parts(2 / Fraction(C.TWO_OVER_PI_2_400, 2 ** 400), 3)


@numba.njit(**JIT)
def _reduce_f32_fast(x):
    """(quadrant, theta) by Cody-Waite in float32: accurate while |x| < 2**17."""
    n = rint(x * _F32_TWO_OVER_PI)
    r = fma(-n, _Q1, x)
    r = fma(-n, _Q2, r)
    return n - _FOUR32 * floor(n * _QUARTER32), fma(-n, _Q3, r)


@numba.njit(**JIT)
def _reduce_f32(x):
    """(quadrant in {0,1,2,3}, theta) with x = quadrant*pi/2 + theta (mod 2pi), |theta| <= pi/4.

    Both reductions run for every lane and a select keeps the right one, so the loop has no
    branch; the Payne-Hanek one is integer arithmetic on the bits (no table gather).
    """
    n, r = _cody_waite_f32_inline(to_float64(x))
    qh, rh = _payne_hanek_f32(x)                  # of |x|: mirror for x < 0
    neg = x < np.float32(0)
    qh = select(neg & (qh != _ZERO), _FOUR - qh, qh)
    rh = select(neg, -rh, rh)
    big = fabs(x) >= np.float32(2.0 ** _PH_FIRST_EXPONENT)
    return to_float32(select(big, qh, n)), to_float32(select(big, rh, r))


@numba.njit(**JIT)
def _reduce_f64(x):
    n, r = _cody_waite_inline(x)
    return n - _FOUR * floor(n * _QUARTER), r


def _reducer(ft, fast):
    """(reduction intrinsic, |x| from which the result is nan) for a dtype and variant."""
    if ft is np.float64:
        return inlined(_reduce_f64), ft(F64_ACCURATE_BELOW)
    if fast:
        return inlined(_reduce_f32_fast), ft(F32_FAST_ACCURATE_BELOW)
    return inlined(_reduce_f32), ft(np.inf)


def _make_sincos(ft, want_cos, fast):
    S, K = (C.SIN_F32, C.COS_F32) if ft is np.float32 else (C.SIN_F64, C.COS_F64)
    reduce, limit = _reducer(ft, fast)
    zero, half, one, two, nan = (ft(v) for v in (0, 0.5, 1, 2, np.nan))
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
        res = select(fabs(x) < limit, res, nan)              # inf, nan, beyond the range
        return res if want_cos else select(x == zero, x, res)    # sin keeps -0.0
    return inlined(sincos)


def _make_fast_sin_f32():
    """float32 sin for |x| < F32_FAST_ACCURATE_BELOW (nan beyond): reduced by pi, so one
    polynomial (degree 11, |r| <= pi/2) and a sign flip by n's parity replace the sin and cos
    polynomials and the quadrant selects of the pi/2 reduction (about 2x cheaper on AVX2)."""
    ft = np.float32
    S, inv_pi, magic = C.SIN_PI_F32, ft(1 / np.pi), ROUND_MAGIC[ft]
    limit, zero, nan = ft(F32_FAST_ACCURATE_BELOW), ft(0), ft(np.nan)

    @numba.njit(**JIT)
    def sin(x):
        z = mad(x, inv_pi, magic)                   # magic + n, n = rint(x/pi) (bits.py)
        n = z - magic
        r = mad(n, -_PI1, x)                        # exact (as in _reduce_f32_fast)
        r = mad(n, -_PI2, r)
        r = mad(n, -_PI3, r)
        u = r * r
        s = flip_if_odd(mad(r * u, horner(u, S), r), z)     # sin(x) = (-1)^n sin(r)
        s = select(x == zero, x, s)                 # r + r^3 P(u) is +0 at r = -0
        return select(fabs(x) < limit, s, nan)      # inf, nan, beyond the range
    return inlined(sin)


def make_tan(ft, fast=False):
    """tan(x) = sin/cos of the reduced argument (-cos/sin in odd quadrants); keeps -0.0."""
    S, K = (C.SIN_F32, C.COS_F32) if ft is np.float32 else (C.SIN_F64, C.COS_F64)
    reduce, limit = _reducer(ft, fast)
    zero, half, one, two, nan = (ft(v) for v in (0, 0.5, 1, 2, np.nan))

    @numba.njit(**JIT)
    def tan(x):
        q, t = reduce(x)
        u = t * t
        s = mad(t * u, horner(u, S), t)
        c = mad(u * u, horner(u, K), mad(-half, u, one))
        odd = (q == one) | (q == two + one)
        res = select(odd, -c, s) / select(odd, s, c)
        res = select(fabs(x) < limit, res, nan)
        return select(x == zero, x, res)
    return inlined(tan)


def make_sin(ft, fast=False):
    """sin(x): nan for inf/nan, keeps -0.0. `fast` (float32): no Payne-Hanek path, float32
    reduction by pi, nan for |x| >= 2**17, about 10x cheaper."""
    if fast and ft is np.float32:
        return _make_fast_sin_f32()
    return _make_sincos(ft, False, fast)


def make_cos(ft, fast=False):
    """cos(x): nan for inf/nan; `fast` as for `make_sin`."""
    return _make_sincos(ft, True, fast)


def make_trig_miss(ft):
    """1 where |x| is finite but at or beyond the fast variants' range, else 0 (in `ft`)."""
    limit = ft(F64_ACCURATE_BELOW if ft is np.float64 else F32_FAST_ACCURATE_BELOW)
    zero, one, inf = ft(0), ft(1), ft(np.inf)

    @numba.njit(**JIT)
    def miss(x):
        a = fabs(x)
        return select((a >= limit) & (a < inf), one, zero)
    return inlined(miss)
