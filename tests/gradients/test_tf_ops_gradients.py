"""The primitives behind gather_nd, scatter_nd, tensor_scatter_nd_update/add
("gather_nd", "scatter_nd", "tensor_scatter_nd"), the segment reductions
("segment_reduce"), "ensure_shape" and "check_numerics" against finite differences, eagerly
and inside @gc.function; and each scatter/gather rule differentiated again with respect
to the upstream gradient (second order: the rules are each other)."""
import numpy as np
import pytest

import graphc as gc
from grad_check import check_gradients


def data(shape, seed=0):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, shape)


IDX = np.array([[0, 1], [1, 2], [0, 1]])        # a repeat: its gradients add


def test_gather_nd():
    check_gradients(lambda p: gc.gather_nd(p, IDX), [data((2, 3, 4), 1)])
    check_gradients(lambda p: gc.gather_nd(p, [[[1, 2]], [[0, 3]]], batch_dims=1),
                    [data((2, 3, 4), 2)])


def test_scatter_nd():
    check_gradients(lambda u: gc.scatter_nd(IDX, u, [2, 3, 4]), [data((3, 4), 3)])


@pytest.mark.parametrize("op", [gc.tensor_scatter_nd_update, gc.tensor_scatter_nd_add])
def test_tensor_scatter_nd(op):
    check_gradients(lambda t, u: op(t, [[1], [3], [0]], u), [data((5, 2), 4), data((3, 2), 5)])


def test_gather_nd_and_scatter_nd_second_order():
    x, v = data((2, 3, 4), 6), data((2, 3, 4), 7)

    def scatter(w):                    # the gradient of gather_nd is a scatter of w
        p = gc.constant(x)
        with gc.GradientTape() as tape:
            tape.watch(p)
            y = gc.reduce_sum(gc.gather_nd(p, IDX) * w)
        return tape.gradient(y, p) * gc.constant(v)
    check_gradients(scatter, [data((3, 4), 8)])


@pytest.mark.parametrize("fn", [
    lambda d: gc.math.segment_sum(d, [0, 0, 2, 2]),
    lambda d: gc.math.segment_mean(d, [0, 0, 0, 1]),
    lambda d: gc.math.unsorted_segment_sum(d, [2, -1, 0, 2], 3),
    lambda d: gc.math.unsorted_segment_max(d, [1, 1, 0, 1], 2),
])
def test_segment_reduce(fn):
    check_gradients(fn, [data((4, 3), 9)])


def test_ensure_shape_and_check_numerics():
    check_gradients(lambda x: gc.ensure_shape(x, [None, 3]) * x, [data((2, 3), 10)])
    check_gradients(lambda x: gc.debugging.check_numerics(x, "m") * x, [data((2, 3), 11)])


def test_sort_top_k_einsum_composites():
    check_gradients(lambda x: gc.sort(x, axis=0), [data((3, 2), 12)])
    check_gradients(lambda x: gc.math.top_k(x, 2).values, [data((2, 4), 13)])
    check_gradients(lambda a, b: gc.einsum("bij,bkj->bik", a, b),
                    [data((2, 2, 3), 14), data((2, 4, 3), 15)])
