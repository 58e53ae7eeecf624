"""Regression tests for bugs the differential fuzzer (test_fuzz.py) found outside the kernels,
each reduced from a fuzz seed to the smallest program that showed it."""
import contextlib

import numpy as np
import pytest

import graphc as gc


def _three_ways(fn):
    """fn eagerly, on the numpy backend and on the numba backend (kernels forced by the
    caller's fixture), as callables taking the same tensors."""
    return [fn, gc.function(fn, backend="numpy", autograph=False),
            gc.function(fn, backend="numba", autograph=False)]


def test_integer_to_a_negative_power_raises_invalid_argument_everywhere(numba_forced):
    """Seed 350: eagerly numpy's bare ValueError ("Integers to negative integer powers are not
    allowed", naming no op), compiled InvalidArgumentError. Now InvalidArgumentError naming
    pow on every path, like integer division by zero."""
    fn = lambda a, b: (a * 2 + 1) ** b     # noqa: E731 - a fused producer runs before pow
    x = gc.constant(np.array([1, -2, 3], np.int64))
    bad = gc.constant(np.array([2, -1, 0], np.int64))
    for i, run in enumerate(_three_ways(fn)):
        with numba_forced.expect(kernels=True) if i == 2 else contextlib.nullcontext():
            with pytest.raises(gc.errors.InvalidArgumentError, match="pow: integers to "
                                                                     "negative"):
                run(x, bad)
    ok = gc.constant(np.array([2, 3, 0], np.int64))
    want = np.array([9, -27, 1], np.int64)
    for run in _three_ways(fn):
        np.testing.assert_array_equal(run(x, ok).numpy(), want)
    # floats to negative powers stay defined
    np.testing.assert_allclose((gc.constant([2.0]) ** gc.constant([-1.0])).numpy(), [0.5])

