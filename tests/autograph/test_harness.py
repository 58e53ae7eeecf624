"""The differential harness's comparison is exact: it must be able to fail."""
import numpy as np
import pytest

import graphc as gc
from .corpus_base import python_arg_sets
from .harness import as_expected, assert_same, python_args


def test_exact_comparison_rejects_one_ulp():
    one = np.float32(1.0)
    with pytest.raises(AssertionError, match="values"):
        assert_same(gc.constant(np.nextafter(one, np.float32(2.0))), one)


def test_exact_comparison_tells_signed_zeros_apart():
    with pytest.raises(AssertionError, match="values"):
        assert_same(gc.constant(np.float32(-0.0)), np.float32(0.0))


def test_exact_comparison_checks_dtype_shape_and_structure():
    with pytest.raises(AssertionError, match="dtype"):
        assert_same(gc.constant(np.float64(1.0)), np.float32(1.0))
    with pytest.raises(AssertionError, match="shape"):
        assert_same(gc.constant([1.0]), np.float32(1.0))
    with pytest.raises(AssertionError, match="structure"):
        assert_same((gc.constant(1.0),), (np.float32(1.0), np.float32(1.0)))
    with pytest.raises(AssertionError, match="values"):
        assert_same(gc.constant([1, 2]), np.array([1, 3], np.int32))


def test_nan_equals_nan_and_ulps_tolerance_is_explicit():
    nan = np.array([np.nan, 1.0], np.float32)
    assert_same(gc.constant(nan), nan.copy())
    near = np.nextafter(np.float32(1.0), np.float32(2.0))
    assert_same(gc.constant(near), np.float32(1.0), ulps=1)
    with pytest.raises(AssertionError):
        assert_same(gc.constant(np.float32(1.5)), np.float32(1.0), ulps=4)


def test_python_form_of_arguments():
    x = np.array([1.0], np.float32)
    assert python_args((x,)) is None
    got = python_args((np.float32(1.5), np.int32(2), np.bool_(True), x))
    assert [type(v) for v in got[:3]] == [float, int, bool] and got[3] is x
    assert as_expected(1).dtype == np.int32 and as_expected(1.5).dtype == np.float32

    def prog(a):
        return a
    assert python_arg_sets(prog, [(np.int32(1),), (np.int32(1),), (x,)]) == ((1,),)
