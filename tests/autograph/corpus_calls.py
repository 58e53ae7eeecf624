"""Corpus: return anywhere; helpers, closures, lambdas and methods called from converted code."""
import numpy as np

from .corpus_base import case, f32, i32, V3, V5, M23

I64, B = np.int64, np.bool_


# -- return anywhere -------------------------------------------------------------------
@case((f32(2.0),), (f32(-2.0),))
def early_return(x):
    if x < 0:
        return x * 0.0
    return x * x


@case((f32(2.0),), (f32(-2.0),), (f32(0.5),))
def return_in_elif(x):
    if x > 1.0:
        return 1.0
    elif x < -1.0:
        return -1.0
    return x


@case((V5,), (V3,))
def return_in_loop(x):
    for v in x:
        if v < 0:
            return v
    return x[0] * 0.0 + 99.0


@case((V5, i32(5)), (V3, i32(3)))
def return_index_in_loop(x, n):
    for i in range(n):
        if x[i] > 2.5:
            return i
    return -1


@case((i32(3),), (i32(10),))
def return_in_while(n):
    i = 0
    while i < 20:
        if i * i >= n:
            return i
        i += 1
    return -1


@case((M23, f32(4.5)), (M23, f32(100.0)))
def return_from_nested_loops(m, t):
    for row in m:
        for v in row:
            if v > t:
                return v
    return t


@case((f32(1.0),), (f32(-1.0),))
def return_both_branches(x):
    if x > 0:
        return x + 1.0
    else:
        return x - 1.0


@case((f32(1.0),), (f32(-1.0),))
def return_tuple_early(x):
    if x > 0:
        return x, x * 2.0
    return -x, x


@case((f32(3.0),), (f32(-3.0),))
def return_after_loop_python(x):
    for k in range(3):
        if x > k:
            return x - k
    return x


# -- helpers, closures, lambdas, methods -----------------------------------------------
def _clip_positive(v):
    if v < 0:
        return v * 0.0
    return v


def _count_down(n):
    c = 0
    while n > 0:
        n = n - 1
        c = c + 2
    return c


@case((f32(2.0),), (f32(-2.0),))
def call_helper(x):
    return _clip_positive(x) + 1.0


@case((i32(3),), (i32(0),))
def call_helper_loop(n):
    return _count_down(n) + 1


@case((V5,), (V3,))
def helper_in_loop(x):
    s = 0.0
    for v in x:
        s = s + _clip_positive(v)
    return s


@case((f32(2.0),), (f32(-2.0),))
def nested_function(x):
    def inner(v):
        if v > 0:
            return v * 3.0
        return v
    return inner(x) + inner(-x)


@case((f32(2.0), f32(1.0)), (f32(-2.0), f32(1.0)))
def closure_reads_outer(x, scale):
    def scaled(v):
        if v > 0:
            return v * scale
        return v / scale
    return scaled(x)


@case((f32(2.0),), (f32(-2.0),))
def lambda_ternary(x):
    f = lambda v: v * 2.0 if v > 0 else v * -2.0  # noqa: E731
    return f(x)


@case((f32(2.0),), (f32(-2.0),))
def recursive_helper_call(x):
    return _clip_positive(_clip_positive(x) - 1.0)


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        if x > 0:
            return x * self.k
        return x

    def __call__(self, x):
        y = x
        for _ in range(2):
            y = self.apply(y)
        return y


_SCALER = Scaler(3.0)


@case((f32(2.0),), (f32(-2.0),))
def method_call(x):
    return _SCALER.apply(x)


@case((f32(2.0),), (f32(-2.0),))
def callable_object(x):
    return _SCALER(x)


def _make_adder(k):
    def add(v):
        if v > 0:
            return v + k
        return v - k
    return add


_ADD5 = _make_adder(5.0)


@case((f32(1.0),), (f32(-1.0),))
def call_closure_factory(x):
    return _ADD5(x)


def _abs_sum(x):
    s = 0.0
    for v in x:
        s = s + (v if v > 0 else -v)
    return s


@case((V5,), (V3,))
def helper_with_loop_and_ternary(x):
    return _abs_sum(x)


# -- int() of a scalar tensor: an int32 tensor (TF's AutoGraph casts as well) -------------
@case((f32(2.75), f32(1.5)), (f32(-2.75), f32(0.5)))
def int_of_float_tensor(x, y):
    # truncation toward zero, as Python's int()
    return int(x) * 2 + int(y * 3.0)


@case((f32(3.5),), (f32(0.25),))
def range_of_int_tensor(x):
    s = 0
    for i in range(int(x)):
        s += i * 2
    return s


@case((I64(7), B(True)), (I64(-3), B(False)))
def int_of_int64_and_bool(n, b):
    return int(n) + int(b) * 10
