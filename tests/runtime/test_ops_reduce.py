"""Reductions, arg-reductions and cumsum: eager vs numpy, traced vs eager, errors, None dims."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from op_helpers import arrays, axes_for, check, raises_both, out_shape, assert_same


def _np_axes(axis, ndim):
    return None if axis is None else (axis if isinstance(axis, tuple) else (axis,))


NP_REDUCERS = {
    "reduce_sum": lambda x, a, k: np.sum(x, axis=a, keepdims=k, dtype=x.dtype),
    "reduce_prod": lambda x, a, k: np.prod(x, axis=a, keepdims=k, dtype=x.dtype),
    "reduce_max": lambda x, a, k: np.max(x, axis=a, keepdims=k, initial=-np.inf
                                         if x.dtype.kind == "f" else np.iinfo(x.dtype).min),
    "reduce_min": lambda x, a, k: np.min(x, axis=a, keepdims=k, initial=np.inf
                                         if x.dtype.kind == "f" else np.iinfo(x.dtype).max),
}


@st.composite
def array_and_axis(draw, dtype):
    x = draw(arrays(dtype))
    return x, draw(axes_for(x.ndim)), draw(st.booleans())


@pytest.mark.parametrize("name", sorted(NP_REDUCERS))
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_numeric_reductions_match_numpy(name, dtype, data):
    x, axis, keepdims = data.draw(array_and_axis(dtype))
    want = np.asarray(NP_REDUCERS[name](x, _np_axes(axis, x.ndim), keepdims)).astype(x.dtype)
    check(lambda t: getattr(gc, name)(t, axis=axis, keepdims=keepdims), want, x, rtol=1e-5)


@pytest.mark.parametrize("name,np_fn", [("reduce_all", np.all), ("reduce_any", np.any)])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_logical_reductions_match_numpy(name, np_fn, data):
    x, axis, keepdims = data.draw(array_and_axis("bool"))
    want = np.asarray(np_fn(x, axis=_np_axes(axis, x.ndim), keepdims=keepdims))
    check(lambda t: getattr(gc, name)(t, axis=axis, keepdims=keepdims), want, x)


def test_int32_sum_stays_int32_and_wraps_like_tf():
    x = np.array([2**31 - 1, 1], np.int32)
    got = gc.reduce_sum(x)
    assert got.dtype == gc.int32
    assert int(got) == -2**31


def test_empty_max_gives_lowest_value():
    assert_same(gc.reduce_max(np.zeros((0, 2), np.float32), axis=0),
                np.full((2,), -np.inf, np.float32))
    assert_same(gc.reduce_min(np.zeros((2, 0), np.int32), axis=1),
                np.full((2,), np.iinfo(np.int32).max, np.int32))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_reduce_mean_float_matches_numpy(data):
    x, axis, keepdims = data.draw(array_and_axis("float64"))
    with np.errstate(all="ignore"):
        want = np.mean(x, axis=_np_axes(axis, x.ndim), keepdims=keepdims)
    check(lambda t: gc.reduce_mean(t, axis=axis, keepdims=keepdims), np.asarray(want), x,
          rtol=1e-9, atol=1e-12)


def test_int32_reduce_mean_does_not_overflow_as_in_tf():
    # TF: reduce_mean([2**30] * 3) is 2**30 and of [2**31 - 1] * 2 is 2**31 - 1 (the int32
    # sum would wrap to -2**30 and -2); int64 means still wrap, as TF's do
    big = np.array([[2**30] * 3, [2**31 - 1, 2**31 - 1, -7]], np.int32)
    check(lambda t: gc.reduce_mean(t, axis=1), np.array([2**30, 1431655762], np.int32), big)
    check(lambda t: gc.reduce_mean(t[1:, :2], keepdims=True), np.array([[2**31 - 1]], np.int32),
          big)
    check(lambda t: gc.reduce_mean(t), np.array(0, np.int32), np.zeros((0,), np.int32))


def test_reduce_mean_on_ints_truncates_toward_zero_like_tf():
    x = np.array([[-1, -2], [3, 4], [7, 0]], np.int32)
    check(lambda t: gc.reduce_mean(t, axis=1), np.array([-1, 3, 3], np.int32), x)
    check(lambda t: gc.reduce_mean(t), np.array(1, np.int32), x)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_logsumexp_matches_naive_formula(data):
    x, axis, keepdims = data.draw(array_and_axis("float64"))
    with np.errstate(all="ignore"):
        want = np.log(np.sum(np.exp(x), axis=_np_axes(axis, x.ndim), keepdims=keepdims))
    check(lambda t: gc.reduce_logsumexp(t, axis=axis, keepdims=keepdims), np.asarray(want), x,
          rtol=1e-9, atol=1e-12)


def test_logsumexp_is_stable_and_handles_minus_inf_rows():
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [0.0, -np.inf], [np.inf, 0.0]],
                 np.float32)
    want = np.array([1000 + np.log(2), -np.inf, 0.0, np.inf], np.float32)
    check(lambda t: gc.reduce_logsumexp(t, axis=1), want, x)


@pytest.mark.parametrize("name,np_fn", [("argmax", np.argmax), ("argmin", np.argmin)])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_arg_reductions_give_int64(name, np_fn, data):
    x = data.draw(arrays("float32", min_dims=1, min_side=1))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    check(lambda t: getattr(gc, name)(t, axis=axis), np_fn(x, axis=axis).astype(np.int64), x)


def test_arg_reductions_never_pick_nan_and_take_bools_as_in_tf():
    # TF: argmax([1, nan, 3]) is 2, argmax([nan, 1]) is 1, argmax([nan, nan]) is 0,
    # argmax([nan, -inf]) is 0, argmin([nan, -inf]) is 1 (numpy picks the first NaN)
    nan, inf = np.nan, np.inf
    x = np.array([[1, nan, 3], [nan, 1, nan], [nan, nan, nan], [nan, -inf, nan],
                  [3, nan, 1], [2, nan, 2]], np.float32)
    check(lambda t: gc.argmax(t, axis=1), np.array([2, 1, 0, 0, 0, 0], np.int64), x)
    check(lambda t: gc.argmin(t, axis=1), np.array([0, 1, 0, 1, 2, 0], np.int64), x)
    check(lambda t: gc.argmax(t), np.array([4, 1, 0], np.int64), x)
    check(lambda t: gc.argmax(t), np.array(1, np.int64), np.array([False, True, True]))
    check(lambda t: gc.argmin(t), np.array(0, np.int64), np.array([False, True]))


def test_argmax_default_axis_is_zero():
    x = np.array([[1, 5], [3, 2]], np.int32)
    check(lambda t: gc.argmax(t), np.array([1, 0], np.int64), x)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_cumsum_matches_numpy(data):
    x = data.draw(arrays(data.draw(st.sampled_from(["float32", "int32"])), min_dims=1))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    check(lambda t: gc.cumsum(t, axis=axis), np.cumsum(x, axis=axis, dtype=x.dtype), x,
          rtol=1e-5, atol=1e-4)


def test_cumsum_exclusive_and_reverse():
    x = np.array([1, 2, 3, 4], np.int32)
    check(lambda t: gc.cumsum(t, exclusive=True), np.array([0, 1, 3, 6], np.int32), x)
    check(lambda t: gc.cumsum(t, reverse=True), np.array([10, 9, 7, 4], np.int32), x)
    check(lambda t: gc.cumsum(t, exclusive=True, reverse=True),
          np.array([9, 7, 4, 0], np.int32), x)


# -- errors ------------------------------------------------------------------------------
X23 = np.zeros((2, 3), np.float32)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_all",
                                  "reduce_logsumexp", "argmax", "cumsum"])
def test_bad_axis_is_a_value_error_naming_op_and_rank(name):
    x = X23.astype(bool) if name == "reduce_all" else X23
    raises_both(lambda t: getattr(gc, name)(t, axis=2), ValueError, [name, "axis 2", "rank 2"], x)


def test_repeated_axis_is_rejected():
    raises_both(lambda t: gc.reduce_sum(t, axis=(1, -1)), ValueError, ["reduce_sum", "twice"],
                X23)


@pytest.mark.parametrize("name,x,needs", [
    ("reduce_sum", np.zeros(2, bool), "numeric"), ("reduce_all", np.zeros(2, np.float32), "bool"),
    ("reduce_logsumexp", np.zeros(2, np.int32), "floating")])
def test_bad_dtype_is_a_type_error_naming_dtype(name, x, needs):
    raises_both(lambda t: getattr(gc, name)(t), TypeError, [name, x.dtype.name, needs], x)


def test_argmax_over_empty_axis_is_an_error():
    raises_both(lambda t: gc.argmax(t, axis=0), ValueError, ["argmax", "size 0"],
                np.zeros((0, 3), np.float32))


def test_axis_must_be_an_int():
    raises_both(lambda t: gc.reduce_sum(t, axis=1.5), TypeError, ["reduce_sum", "1.5"], X23)


# -- partially unknown shapes -----------------------------------------------------------
SPEC = gc.TensorSpec([None, 3])


@pytest.mark.parametrize("fn,shape", [
    (lambda x: gc.reduce_sum(x, axis=1), (None,)),
    (lambda x: gc.reduce_max(x, axis=0), (3,)),
    (lambda x: gc.reduce_mean(x, axis=0, keepdims=True), (1, 3)),
    (lambda x: gc.reduce_mean(x), ()),
    (lambda x: gc.reduce_logsumexp(x, axis=1), (None,)),
    (lambda x: gc.argmax(x, axis=1), (None,)),
    (lambda x: gc.cumsum(x, axis=0), (None, 3)),
])
def test_unknown_dims_give_right_static_shape_and_values(fn, shape):
    assert out_shape(fn, SPEC) == shape
    f = gc.function(fn, input_signature=[SPEC], backend="numpy")
    for n in (1, 4):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3) - 2.5
        assert_same(f(x), fn(gc.constant(x)).numpy(), rtol=1e-6)
