"""The device bodies of the scalar library that the simulator does not run as such:
`rint` (round half to even from floor/ceil) checked as Python on finite values, and the
integer helpers' wrap-around against numpy's."""
import math

import numpy as np
import pytest
from numba import cuda  # the simulator swaps this module global in its kernels

from graphc.kernels.cuda import scalar


def test_device_rint_rounds_half_to_even_and_keeps_the_sign_of_zero():
    rint = scalar._libdevice_math()["rint"].py_func
    vals = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.3, 0.3, 0.0, -0.0, 1e16 + 2, 7.49999, -7.5,
            4503599627370497.0, 123.456, -1e-300]
    for v in vals:
        got, want = float(rint(v)), float(np.rint(v))
        assert got == want and math.copysign(1, got) == math.copysign(1, want), v


def _pairwise(helper, a, b, dt):
    """helper(a[i], b[i]) for every i, computed by a kernel (a device function calls other
    device functions, which only a kernel can: on a GPU they are not Python)."""
    @cuda.jit
    def kernel(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = helper(x[i], y[i])
    out = cuda.device_array(a.size, np.int64)   # helpers give int64; callers cast (wrap)
    kernel[-(-a.size // 16), 16](cuda.to_device(a), cuda.to_device(b), out)
    return out.copy_to_host().astype(dt)


def _grid(vals):
    a, b = np.meshgrid(vals, vals, indexing="ij")
    return a.ravel(), b.ravel()


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_wrapping_helpers_match_numpy(dt):
    info = np.iinfo(dt)
    vals = np.array([info.min, info.min + 1, -7, -1, 0, 1, 5, info.max - 1, info.max], dt)
    a, b = _grid(vals)
    with np.errstate(over="ignore"):
        for name, want in (("wadd", a + b), ("wsub", a - b), ("wmul", a * b)):
            np.testing.assert_array_equal(_pairwise(getattr(scalar, name), a, b, dt), want,
                                          err_msg=name)
        np.testing.assert_array_equal(_pairwise(_first(scalar.wneg), vals, vals, dt), -vals)
        np.testing.assert_array_equal(_pairwise(_first(scalar.wabs), vals, vals, dt),
                                      np.abs(vals))


def _first(helper):
    """A two-argument device function applying one-argument `helper` to the first."""
    @cuda.jit(device=True)
    def first(x, y):
        return helper(x)
    return first


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_integer_division_helpers_give_numpys_wrapped_answers(dt):
    info = np.iinfo(dt)
    a, b = _grid(np.array([info.min, -7, -1, 0, 5, info.max], dt))
    b = np.array([info.min, -3, -1, 2, 7, info.max], dt)[np.arange(a.size) % 6]
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_pairwise(scalar.ifloordiv, a, b, dt),
                                      np.floor_divide(a, b))
        np.testing.assert_array_equal(_pairwise(scalar.imod, a, b, dt), np.mod(a, b))
    base = np.repeat(np.array([-3, -1, 0, 2, 3], dt), 6)
    exps = np.tile(np.arange(0, 40, 7).astype(dt), 5)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_pairwise(scalar.ipow, base, exps, dt),
                                      np.power(base, exps))


def test_float_to_int_casts_give_int_min_outside_the_range():
    for x in (np.nan, np.inf, -np.inf, 3e9, -3e9, 2147483647.0, -2147483648.5, 1.9, -1.9):
        with np.errstate(invalid="ignore"):
            want = np.array([x]).astype(np.int32)[0]
        assert scalar.to_int32.py_func(x) == want, x
    for x in (np.nan, np.inf, 1e19, -9.3e18, 12.7):
        with np.errstate(invalid="ignore"):
            want = np.array([x]).astype(np.int64)[0]
        assert scalar.to_int64.py_func(x) == want, x
