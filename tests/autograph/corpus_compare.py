"""Corpus: chained comparisons on tensors (item 4 of issue 11) and `*` on bool tensors as
logical and (item 7).

`lo <= v < hi` is a lazy `and` that evaluates each middle operand once (a call in the
middle runs once; an operand after a false comparison does not run at all).
"""
import numpy as np

import graphc as gc
from .corpus_base import case, f32, i32, V3, V5

I5 = np.array([1, 2, 0, -3, 5], np.int32)


# -- chained comparisons (item 4) --------------------------------------------------------
@case((V5, f32(0.0), f32(3.0)), (V5, f32(-1.0), f32(1.0)), (V3, f32(-2.0), f32(3.5)))
def chained_count_in_range(x, lo, hi):
    c = 0
    for v in x:
        if lo <= v < hi:
            c += 1
    return c


@case((f32(1.0), f32(2.0), f32(3.0), f32(4.0)), (f32(1.0), f32(3.0), f32(2.0), f32(4.0)),
      (f32(5.0), f32(2.0), f32(3.0), f32(4.0)))
def chained_four_operands(a, b, c, d):
    if a < b < c < d:
        return a + d
    return b - c


@case((f32(1.0),), (f32(3.0),), (f32(-1.0),))
def chained_middle_call_evaluated_once(x):
    calls = []

    def mid():
        calls.append(1)
        return x * 2.0
    if 0.0 < mid() <= 4.0:
        r = x
    else:
        r = -x
    return r, len(calls)


@case((f32(1.0),), (f32(2.0),), (f32(-1.0),))
def chained_walrus_middle(x):
    k = x
    if 0.0 < (k := k * 2.0) < 3.0:
        k = k + 100.0
    return k


@case((I5, i32(1)), (I5, i32(-10)), (I5, i32(3)))
def chained_lazy_right_operand(x, n):
    # x[n] must not be evaluated when n is out of range (-1 < n is false)
    if -1 < n < x[n] + 10:
        return x[n]
    return x[0] * 0


@case((f32(1.0),), (f32(-1.0),), (f32(150.0),))
def chained_while_condition(x):
    n = 0
    while 0.0 < x < 100.0:
        x = x * 3.0
        n += 1
    return x, n


@case((f32(1.0), f32(1.0), f32(2.0)), (f32(1.0), f32(1.0), f32(1.0)),
      (f32(1.0), f32(2.0), f32(3.0)))
def chained_equality(a, b, c):
    return 1 if a == b != c else 0


@case((f32(0.5), f32(0.0), f32(1.0)), (f32(1.0), f32(0.0), f32(1.0)),
      (f32(-0.5), f32(0.0), f32(1.0)))
def chained_returned_as_value(x, lo, hi):
    return lo < x <= hi


@case((f32(0.5),), (f32(5.0),), (f32(2.0),))
def chained_under_not_and(x):
    if not (0.0 < x < 1.0) and x != 5.0:
        return x * 2.0
    return x


@case((V5, i32(5), 3), (V3, i32(3), 1))
def chained_loop_index_python_bound(x, n, k):
    s = 0.0
    for i in range(n):
        if 0 < i <= k:
            s = s + x[i]
    return s


@case((V5,), (V3,))
def chained_on_reduction_middle(x):
    t = gc.convert_to_tensor(x)
    if -1.0 < gc.reduce_sum(t) < 3.0:
        return gc.reduce_max(t)
    return gc.reduce_min(t)


# -- `*` on bool tensors is logical and (item 7) ----------------------------------------
@case((V5,), (V3,))
def bool_mul_mask(x):
    return (x > 0) * (x < 3.0)


@case((f32(1.0), f32(2.0)), (f32(1.0), f32(-0.5)))
def bool_mul_condition(a, b):
    if (a > 0) * (b > 0):
        return a + b
    return a - b


@case((V5,), (V3,))
def bool_mul_accumulate_in_loop(x):
    ok = x[0] > -10.0
    for v in x:
        ok = ok * (v > -2.5)
    return ok


@case((V5, f32(1.0)), (V3, f32(-1.0)))
def bool_mul_scalar_and_vector(x, t):
    return (t > 0) * (x > 0)
