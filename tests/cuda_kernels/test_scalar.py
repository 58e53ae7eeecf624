"""The device bodies of the scalar library that the simulator does not run as such:
`rint` (round half to even from floor/ceil) checked as Python on finite values, and the
integer helpers' wrap-around against numpy's."""
import math

import numpy as np
import pytest

from graphc.kernels.cuda import scalar


def test_device_rint_rounds_half_to_even_and_keeps_the_sign_of_zero():
    rint = scalar._libdevice_math()["rint"].py_func
    vals = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.3, 0.3, 0.0, -0.0, 1e16 + 2, 7.49999, -7.5,
            4503599627370497.0, 123.456, -1e-300]
    for v in vals:
        got, want = float(rint(v)), float(np.rint(v))
        assert got == want and math.copysign(1, got) == math.copysign(1, want), v


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_wrapping_helpers_match_numpy(dt):
    info = np.iinfo(dt)
    vals = np.array([info.min, info.min + 1, -7, -1, 0, 1, 5, info.max - 1, info.max], dt)
    with np.errstate(over="ignore"):
        for a in vals:
            assert dt(scalar.wneg.py_func(a)) == -a
            assert dt(scalar.wabs.py_func(a)) == np.abs(a)
            for b in vals:
                assert dt(scalar.wadd.py_func(a, b)) == a + b
                assert dt(scalar.wsub.py_func(a, b)) == a - b
                assert dt(scalar.wmul.py_func(a, b)) == a * b


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_integer_division_helpers_give_numpys_wrapped_answers(dt):
    info = np.iinfo(dt)
    for a in np.array([info.min, -7, -1, 0, 5, info.max], dt):
        for b in np.array([info.min, -3, -1, 2, 7, info.max], dt):
            with np.errstate(all="ignore"):
                assert dt(scalar.ifloordiv.py_func(a, b)) == np.floor_divide(a, b), (a, b)
                assert dt(scalar.imod.py_func(a, b)) == np.mod(a, b), (a, b)
    for a in np.array([-3, -1, 0, 2, 3], dt):
        for e in range(0, 40, 7):
            with np.errstate(all="ignore"):
                assert dt(scalar.ipow.py_func(a, dt(e))) == np.power(a, dt(e)), (a, e)


def test_float_to_int_casts_give_int_min_outside_the_range():
    for x in (np.nan, np.inf, -np.inf, 3e9, -3e9, 2147483647.0, -2147483648.5, 1.9, -1.9):
        with np.errstate(invalid="ignore"):
            want = np.array([x]).astype(np.int32)[0]
        assert scalar.to_int32.py_func(x) == want, x
    for x in (np.nan, np.inf, 1e19, -9.3e18, 12.7):
        with np.errstate(invalid="ignore"):
            want = np.array([x]).astype(np.int64)[0]
        assert scalar.to_int64.py_func(x) == want, x
