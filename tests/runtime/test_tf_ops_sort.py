"""gc.sort, gc.argsort and gc.math.top_k (= gc.nn.top_k) as TF 2.21's: values and
(stable) orders against TF's literal results and numpy, eagerly and compiled (numpy, auto,
kernels forced), gradients against TF's, hypothesis over shapes, and TF's error cases."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphc as gc
from tf_ops_helpers import agree, f32, forced, i32, tf_grad_agrees

I = np.array([3, -2147483648, 2147483647, 0, 3, -1], np.int32)


def test_sort_and_argsort_ints_as_tf():
    # TF: stable both ways (the two 3s keep their order), INT_MIN/INT_MAX in place
    agree(lambda x: gc.sort(x), np.sort(I), I)
    agree(lambda x: gc.argsort(x), i32([1, 5, 3, 0, 4, 2]), I)
    agree(lambda x: gc.sort(x, direction="DESCENDING"), np.sort(I)[::-1], I)
    agree(lambda x: gc.argsort(x, direction="DESCENDING"), i32([2, 0, 4, 3, 5, 1]), I)
    agree(lambda x: gc.argsort(x, stable=True), i32([1, 5, 3, 0, 4, 2]), I)
    agree(lambda x: gc.sort(x), np.array([1, 2, 3], np.int64), np.array([3, 1, 2], np.int64))


def test_sort_along_an_axis_as_tf():
    x = f32([[3, 1], [0, 2]])
    agree(lambda v: gc.sort(v, axis=0), f32([[0, 1], [3, 2]]), x)
    agree(lambda v: gc.argsort(v, axis=0), i32([[1, 0], [0, 1]]), x)
    agree(lambda v: gc.sort(v, axis=-1, direction="DESCENDING"), f32([[3, 1], [2, 0]]), x)


def test_nan_is_the_largest_and_zeros_keep_their_order():
    # TF leaves NaN wherever its comparisons put it; graphc: largest (numpy's order)
    x = f32([3, np.nan, -1, np.inf, -0.0, 0.0, -np.inf, 3, np.nan])
    agree(lambda v: gc.argsort(v), i32([6, 2, 4, 5, 0, 7, 3, 1, 8]), x)
    agree(lambda v: gc.argsort(v, direction="DESCENDING"), i32([1, 8, 3, 0, 7, 4, 5, 2, 6]), x)
    got = gc.sort(gc.constant(x)).numpy()
    assert np.signbit(got[2]) and not np.signbit(got[3])      # -0.0 before 0.0, as given


def test_sort_gradients_as_tf():
    # TF: d sum(sort(x) * [1, 2, 3, 4]) / dx at x = [3, 1, 2, 1] is [4, 1, 3, 2]
    x = f32([3, 1, 2, 1])
    tf_grad_agrees(lambda v: gc.sort(v), x, [4, 1, 3, 2], [4])
    tf_grad_agrees(lambda v: gc.sort(v, direction="DESCENDING"), x, [1, 3, 2, 4], [4])
    tf_grad_agrees(lambda v: gc.sort(v, axis=0), f32([[3, 1], [2, 5]]), [[3, 2], [1, 4]],
                   [2, 2])


def test_top_k_as_tf():
    # TF: top_k(I, 3) is ([INT_MAX, 3, 3], [2, 0, 4]); ties: the lower index first
    agree(lambda x: tuple(gc.math.top_k(x, 3)), (i32([2147483647, 3, 3]), i32([2, 0, 4])), I)
    agree(lambda x: tuple(gc.nn.top_k(x, k=2, sorted=False)), (f32([[3, 3]]), i32([[1, 2]])),
          f32([[1, 3, 3, 2]]))
    agree(lambda x: tuple(gc.math.top_k(x, 0)), (f32([]), i32([])), f32([1, 3, 3, 2]))
    agree(lambda x: gc.math.top_k(x, gc.constant(2), index_type=gc.int64).indices,
          np.array([1, 2], np.int64), f32([1, 3, 3, 2]))
    assert gc.nn.top_k is gc.math.top_k                  # as tf.nn.top_k is tf.math.top_k
    out = gc.math.top_k(gc.constant([1.0, 2.0]), 1)
    assert out._fields == ("values", "indices")           # TF's TopKV2 namedtuple


def test_top_k_gradient_as_tf():
    # TF: d sum(top_k([3, 1, 3, 1], 2).values * [1, 2]) / dx is [1, 0, 2, 0]
    tf_grad_agrees(lambda v: gc.math.top_k(v, 2).values, f32([3, 1, 3, 1]), [1, 0, 2, 0], [2])


def test_top_k_on_a_run_time_width():
    f = gc.function(lambda x: tuple(gc.math.top_k(x, 3)),
                    input_signature=[gc.TensorSpec([None])])
    v, i = f(gc.constant([1.0, 4.0, 2.0, 3.0]))
    assert v.numpy().tolist() == [4, 3, 2] and i.numpy().tolist() == [1, 3, 2]
    # TF: InvalidArgumentError "input must have at least k columns. Had 2, needed 3"
    with pytest.raises(gc.errors.InvalidArgumentError, match="Had 2, needed 3"):
        f(gc.constant([1.0, 2.0]))


@pytest.mark.parametrize("call, error, words", [
    (lambda x: gc.math.top_k(x, 5), gc.errors.InvalidArgumentError, "Had 4, needed 5"),
    (lambda x: gc.math.top_k(x, -1), gc.errors.InvalidArgumentError, "Need k >= 0, got -1"),
    (lambda x: gc.math.top_k(x[0], 1), gc.errors.InvalidArgumentError, "must be >= 1-D"),
    (lambda x: gc.sort(x, direction="up"), ValueError, "should be one of ASCENDING"),
    (lambda x: gc.sort(x, axis=1), ValueError, "out of range"),
    (lambda x: gc.argsort(x > 1.0), TypeError, "numeric"),     # TF: no bool TopKV2
])
def test_sort_errors_as_tf(call, error, words):
    with pytest.raises(error, match=words):
        call(gc.constant([1.0, 3.0, 3.0, 2.0]))
    traced_error = ValueError if error is gc.errors.InvalidArgumentError else error
    with pytest.raises(traced_error, match=words):          # while tracing: at the call
        gc.function(call)(gc.constant([1.0, 3.0, 3.0, 2.0]))


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                  elements=st.sampled_from([-1.0, 0.0, 1.0, 2.5, np.inf])),
       st.data())
def test_sort_matches_numpy_stable_order(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    agree(lambda v: gc.argsort(v, axis=axis), np.argsort(x, axis=axis, kind="stable")
          .astype(np.int32), x)
    agree(lambda v: gc.sort(v, axis=axis, direction="DESCENDING"),
          -np.sort(-x, axis=axis), x)


def test_sort_with_kernels_forced(numba_forced):
    x = f32([[3, 1, 2], [0, -1, 5]])
    want = (np.sort(x * 2 + 1, axis=1) * 3 - 1, np.argsort(-x, axis=1).astype(np.int32),
            np.array([[3, 2], [5, 0]], np.float32) + 1)
    forced(numba_forced, lambda v: (gc.sort(v * 2.0 + 1.0) * 3.0 - 1.0,
                                    gc.argsort(v, direction="DESCENDING"),
                                    gc.math.top_k(v, 2).values * 1.0 + 1.0), want, x)
