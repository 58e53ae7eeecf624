"""Shared pieces of the tests that hold TF 2.21's gradient values as literals: the three
ways each case runs (eager, numpy backend, auto backend), nested-tape first and second
derivatives, and the comparison with TF's value."""
import numpy as np

import graphc as gc

RUNS = [None, "numpy", "auto"]


def run(fn, backend, *args, **kw):
    return (fn if backend is None else gc.function(fn, backend=backend, **kw))(*args)


def first_and_second(op):
    """op(x), d sum(op(x)) / dx and d sum(that) / dx (nested tapes)."""
    def fn(x):
        with gc.GradientTape() as outer:
            outer.watch(x)
            with gc.GradientTape() as inner:
                inner.watch(x)
                y = op(x)
            g = inner.gradient(y, x)
        return y, g, outer.gradient(g, x)
    return fn


def check(got, want, dtype, signed_zeros=False):
    """`got` has `dtype` and TF's values `want` to rounding (NaN where TF has NaN); with
    `signed_zeros`, the sign of every zero too (TF gives -0.0 where an odd number of -0
    meet)."""
    got = np.asarray(got)
    assert got.dtype == dtype
    want = np.asarray(want, dtype)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)
    if signed_zeros:
        zero = want == 0
        np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
