"""gc.gather_nd, gc.scatter_nd and gc.tensor_scatter_nd_update/add as TF 2.21's: values
against TF's literal results and numpy, eagerly and compiled (numpy, auto, kernels forced),
gradients against TF's, hypothesis over shapes, and TF's error cases."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from tf_ops_helpers import agree, f32, forced, tf_grad_agrees

P = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


# -- gather_nd --------------------------------------------------------------------------
def test_gather_nd_values_as_tf():
    # TF: tf.gather_nd(P, [[0, 1], [1, 2]]) is [[4..7], [20..23]]
    agree(lambda p, i: gc.gather_nd(p, i), f32([[4, 5, 6, 7], [20, 21, 22, 23]]), P,
          np.array([[0, 1], [1, 2]], np.int32))
    agree(lambda p, i: gc.gather_nd(p, i), f32([[6.0]]), P, np.array([[[0, 1, 2]]], np.int64))
    agree(lambda p, i: gc.gather_nd(p, i), P[[1, 0]], P, np.array([[1], [0]], np.int32))
    # TF: an index depth of 0 picks all of params for every index row
    agree(lambda p, i: gc.gather_nd(p, i), np.stack([P, P]), P, np.zeros([2, 0], np.int32))
    agree(lambda p, i: gc.gather_nd(p, i), np.zeros([0, 4], np.float32), P,
          np.zeros([0, 2], np.int32))
    agree(lambda p, i: gc.gather_nd(p, i), np.array([False]), np.array([[True, False]]),
          np.array([[0, 1]], np.int32))


def test_gather_nd_batch_dims_as_tf():
    # TF: batch_dims=1, indices [[1], [0]] is [P[0, 1], P[1, 0]]
    agree(lambda p, i: gc.gather_nd(p, i, batch_dims=1), f32([[4, 5, 6, 7], [12, 13, 14, 15]]),
          P, np.array([[1], [0]], np.int32))
    agree(lambda p, i: gc.gather_nd(p, i, batch_dims=1), f32([[6.0], [15.0]]), P,
          np.array([[[1, 2]], [[0, 3]]], np.int32))


def test_gather_nd_gradient_adds_repeats_as_tf():
    # TF: d sum(gather_nd(ones([2, 2]), [[0, 1], [0, 1], [1, 0]]) * [1, 2, 3]) is [[0, 3], [3, 0]]
    tf_grad_agrees(lambda p: gc.gather_nd(p, [[0, 1], [0, 1], [1, 0]]),
                   np.ones([2, 2], np.float32), [[0, 3], [3, 0]], [3])


@pytest.mark.parametrize("idx", [[[0, 5]], [[0, -1]]])
def test_gather_nd_out_of_range_is_tf_s_error(idx):
    # TF: InvalidArgumentError "indices[0] = [0, 5] does not index into param shape [2,3,4]"
    for fn in (lambda i: gc.gather_nd(gc.constant(P), i),
               gc.function(lambda i: gc.gather_nd(gc.constant(P), i))):
        with pytest.raises(gc.errors.InvalidArgumentError,
                           match=r"indices\[0\] = \[0, -?\d\] does not index into param"):
            fn(gc.constant(idx))


def test_gather_nd_static_errors():
    with pytest.raises(ValueError, match="innermost dimension length must be <= params rank"):
        gc.gather_nd(gc.constant(P), [[0, 1, 2, 3]])
    with pytest.raises(TypeError, match="indices"):
        gc.gather_nd(gc.constant(P), [[0.0, 1.0]])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(0, 3),
       st.integers(0, 3), st.integers(0, 2 ** 31 - 1))
def test_gather_nd_matches_numpy_indexing(shape, depth, rows, seed):
    depth = min(depth, len(shape))
    r = np.random.default_rng(seed)
    p = r.standard_normal(shape).astype(np.float32)
    idx = np.stack([r.integers(0, d, rows) for d in shape[:depth]], -1).astype(np.int32) \
        if depth else np.zeros([rows, 0], np.int32)
    want = np.stack([p[tuple(i)] for i in idx]) if rows else \
        np.zeros([0] + shape[depth:], np.float32)
    agree(lambda a, b: gc.gather_nd(a, b), want, p, idx)


# -- scatter_nd -------------------------------------------------------------------------
def test_scatter_nd_values_as_tf():
    agree(lambda i, u: gc.scatter_nd(i, u, [5]), np.array([0, 9, 0, 10, 0], np.int32),
          np.array([[1], [3]], np.int32), np.array([9, 10], np.int32))
    # TF: duplicates add up: [0, 19, 0, 0, 0]
    agree(lambda i, u: gc.scatter_nd(i, u, [5]), f32([0, 19, 0, 0, 0]),
          np.array([[1], [1]], np.int32), np.array([9, 10], np.float32))
    agree(lambda i, u: gc.scatter_nd(i, u, gc.constant([2, 3], gc.int64)),
          f32([[5, 6, 7], [0, 0, 0]]), np.array([[0]], np.int32), np.array([[5, 6, 7]], np.float32))
    agree(lambda i, u: gc.scatter_nd(i, u, [3]), np.array([False, True, False]),
          np.array([[1]], np.int32), np.array([True]))


def test_scatter_nd_with_a_run_time_shape():
    def fn(i, u, like):
        return gc.scatter_nd(i, u, gc.shape(like))
    agree(fn, f32([0, 7, 0]), np.array([[1]], np.int32), np.array([7.0], np.float32),
          np.zeros(3, np.float32), signature=[gc.TensorSpec([None, 1], gc.int32),
                                              gc.TensorSpec([None]),
                                              gc.TensorSpec([None])])


def test_scatter_nd_gradient_is_a_gather_as_tf():
    # TF: d sum(scatter_nd([[1], [1], [3]], u, [5]) * [1..5]) / du is [2, 2, 4]
    tf_grad_agrees(lambda u: gc.scatter_nd([[1], [1], [3]], u, [5]), np.ones(3, np.float32),
                   [2, 2, 4], [5])


def test_scatter_nd_errors_as_tf():
    # TF: InvalidArgumentError "indices[1] = [7] does not index into shape [5]"
    f = gc.function(lambda i: gc.scatter_nd(i, gc.constant([9.0, 10.0]), [5]))
    for idx in ([[1], [7]], [[1], [-1]]):
        with pytest.raises(gc.errors.InvalidArgumentError, match=r"indices\[1\] = \[-?\d\] "
                           "does not index into shape"):
            f(gc.constant(idx))
    with pytest.raises(ValueError, match="must have shape"):
        gc.scatter_nd([[0]], [[5.0, 6.0]], [2, 3])


# -- tensor_scatter_nd_update / add ------------------------------------------------------
def test_tensor_scatter_duplicates_follow_tf():
    t = np.zeros(5, np.float32)
    # TF (CPU): of duplicate indices the last update wins
    agree(lambda t, i, u: gc.tensor_scatter_nd_update(t, i, u), f32([0, 2, 0, 3, 0]), t,
          np.array([[1], [1], [3]], np.int32), np.array([1, 2, 3], np.float32))
    agree(lambda t, i, u: gc.tensor_scatter_nd_update(t, i, u), f32([0, 3, 0, 2, 0]), t,
          np.array([[1], [3], [1]], np.int32), np.array([1, 2, 3], np.float32))
    agree(lambda t, i, u: gc.tensor_scatter_nd_add(t, i, u), f32([0, 3, 0, 3, 0]), t,
          np.array([[1], [1], [3]], np.int32), np.array([1, 2, 3], np.float32))


def test_tensor_scatter_slices_and_conversion():
    agree(lambda t: gc.tensor_scatter_nd_update(t, [[1]], [[1, 2, 3]]),
          f32([[0, 0, 0], [1, 2, 3]]), np.zeros([2, 3], np.float32))   # Python ints take t's dtype
    agree(lambda t: gc.tensor_scatter_nd_update(t, [[1]], [True]), np.array([True, True]),
          np.array([True, False]))


def test_tensor_scatter_gradients_as_tf():
    idx = [[1], [1], [3]]
    # TF: update: tensor [1, 0, 3, 0, 5], updates [2, 2, 4]; add: tensor [1..5], updates [2, 2, 4]
    tf_grad_agrees(lambda t: gc.tensor_scatter_nd_update(t, idx, gc.ones([3])),
                   np.ones(5, np.float32), [1, 0, 3, 0, 5], [5])
    tf_grad_agrees(lambda u: gc.tensor_scatter_nd_update(gc.ones([5]), idx, u),
                   np.ones(3, np.float32), [2, 2, 4], [5])
    tf_grad_agrees(lambda t: gc.tensor_scatter_nd_add(t, idx, gc.ones([3])),
                   np.ones(5, np.float32), [1, 2, 3, 4, 5], [5])
    tf_grad_agrees(lambda u: gc.tensor_scatter_nd_add(gc.ones([5]), idx, u),
                   np.ones(3, np.float32), [2, 2, 4], [5])


def test_tensor_scatter_errors_as_tf():
    f = gc.function(lambda i: gc.tensor_scatter_nd_update(gc.zeros([5]), i, [1.0, 2.0]))
    with pytest.raises(gc.errors.InvalidArgumentError, match=r"indices\[1\] = \[9\] does not"):
        f(gc.constant([[1], [9]]))
    with pytest.raises(gc.errors.InvalidArgumentError, match=r"indices\[1\] = \[-1\]"):
        gc.tensor_scatter_nd_add(gc.zeros([5]), [[1], [-1]], [1.0, 2.0])
    with pytest.raises(ValueError, match="must have shape"):
        gc.tensor_scatter_nd_update(gc.zeros([2, 3]), [[1]], [[1.0, 2.0]])
    with pytest.raises(TypeError, match="numeric"):      # TF: no bool TensorScatterAdd kernel
        gc.tensor_scatter_nd_add(gc.constant([True, False]), [[1]], [True])


def test_scatter_ops_with_kernels_forced(numba_forced):
    def fn(p, i, u):      # two elementwise ops in a row make a fused kernel
        g = gc.gather_nd(p * 2.0 + 0.0, i)
        s = gc.scatter_nd(i, u + 1.0, [2, 3, 4])
        return g + 1.0, s * 3.0, gc.tensor_scatter_nd_add(p, i, u) * 1.0 - 1.0
    i = np.array([[0, 1], [1, 2]], np.int32)
    u = np.ones([2, 4], np.float32)
    s = np.zeros([2, 3, 4], np.float32)
    s[0, 1] = s[1, 2] = 6
    t = P.copy()
    t[0, 1] += 1
    t[1, 2] += 1
    forced(numba_forced, fn, [P[[0, 1], [1, 2]] * 2 + 1, s, t - 1], P, i, u)
