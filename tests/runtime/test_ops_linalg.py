"""matmul and tensordot: eager vs numpy, traced vs eager, errors, None dims."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from op_helpers import arrays, check, raises_both, out_shape, assert_same


@st.composite
def matmul_operands(draw, dtype):
    m, k, n = (draw(st.integers(0, 3)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    # each operand may drop leading batch dims or use 1s, so broadcasting is exercised
    ba = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))):]
    bb = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))):]
    ta, tb = draw(st.booleans()), draw(st.booleans())
    a = draw(arrays(dtype, shape=st.just(tuple(ba) + ((k, m) if ta else (m, k)))))
    b = draw(arrays(dtype, shape=st.just(tuple(bb) + ((n, k) if tb else (k, n)))))
    return a, b, ta, tb


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_matmul_matches_numpy(dtype, data):
    a, b, ta, tb = data.draw(matmul_operands(dtype))
    want = np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)
    check(lambda x, y: gc.matmul(x, y, transpose_a=ta, transpose_b=tb), want, a, b,
          rtol=1e-5, atol=1e-4)


def test_matmul_operator():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda x: x @ gc.transpose(x), a @ a.T, a)
    check(lambda x: a.T @ x, a.T @ a, a)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_tensordot_matches_numpy(data):
    a = data.draw(arrays("float64", max_dims=3))
    n = data.draw(st.integers(0, a.ndim))
    b_shape = a.shape[a.ndim - n:] + tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    b = data.draw(arrays("float64", shape=st.just(b_shape)))
    check(lambda x, y: gc.tensordot(x, y, n), np.tensordot(a, b, n), a, b, rtol=1e-9, atol=1e-9)


def test_tensordot_with_axis_lists():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(12, dtype=np.float32).reshape(4, 3)
    check(lambda x, y: gc.tensordot(x, y, [[2, 1], [0, 1]]), np.tensordot(a, b, [[2, 1], [0, 1]]),
          a, b)
    check(lambda x, y: gc.tensordot(x, y, [[-1], [0]]), np.tensordot(a, b, [[2], [0]]), a, b)
    check(lambda x, y: gc.tensordot(x, y, ([1], 1)), np.tensordot(a, b, ([1], [1])), a, b)


# -- errors ------------------------------------------------------------------------------
A = np.zeros((2, 3), np.float32)


@pytest.mark.parametrize("fn,exc,words", [
    (lambda a: gc.matmul(a, a), ValueError, ["matmul", "[2,3]", "3 vs 2"]),
    (lambda a: gc.matmul(a, a, transpose_a=True, transpose_b=True), ValueError,
     ["matmul", "[2,3]", "transpose_a"]),
    (lambda a: gc.matmul(a, gc.cast(gc.transpose(a), gc.int32)), TypeError,
     ["matmul", "float32", "int32"]),
    (lambda a: gc.matmul(a[0], a), ValueError, ["matmul", "rank >= 2", "[3]"]),
    (lambda a: gc.matmul(a > 0, a > 0), TypeError, ["matmul", "bool"]),
    (lambda a: gc.matmul(gc.stack([a, a, a]), gc.stack([gc.transpose(a)] * 2)), ValueError,
     ["matmul", "[3,2,3]", "[2,3,2]", "batch"]),
    (lambda a: gc.tensordot(a, a, 1), ValueError, ["tensordot", "[2,3]", "size 3", "size 2"]),
    (lambda a: gc.tensordot(a, a, 3), ValueError, ["tensordot", "axes=3"]),
    (lambda a: gc.tensordot(a, a, [[0, 1], [0]]), ValueError, ["tensordot", "2 axes", "1"]),
    (lambda a: gc.tensordot(a, a, [[2], [0]]), ValueError, ["tensordot", "axis 2"]),
])
def test_errors_name_op_and_shapes(fn, exc, words):
    raises_both(fn, exc, words, A)


def test_dynamic_inner_dim_mismatch_fails_at_run_time():
    f = gc.function(lambda a, b: gc.matmul(a, b), backend="numpy",
                    input_signature=[gc.TensorSpec([2, None]), gc.TensorSpec([None, 2])])
    assert_same(f(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)),
                np.full((2, 2), 3, np.float32))
    with pytest.raises(gc.errors.InvalidArgumentError, match="matmul"):
        f(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))


# -- partially unknown shapes -----------------------------------------------------------
@pytest.mark.parametrize("fn,shape", [
    (lambda x: gc.matmul(x, gc.ones([3, 5])), (None, 5)),
    (lambda x: gc.matmul(x, x, transpose_a=True), (3, 3)),
    (lambda x: gc.matmul(gc.expand_dims(x, 0), gc.ones([4, 3, 2])), (4, None, 2)),
    (lambda x: gc.tensordot(x, x, [[0], [0]]), (3, 3)),
    (lambda x: gc.tensordot(x, gc.ones([3, 2]), 1), (None, 2)),
    (lambda x: gc.tensordot(x, x, 0), (None, 3, None, 3)),
])
def test_unknown_dims_give_right_static_shape_and_values(fn, shape):
    spec = gc.TensorSpec([None, 3])
    assert out_shape(fn, spec) == shape
    f = gc.function(fn, input_signature=[spec], backend="numpy")
    for n in (1, 3):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        assert_same(f(x), fn(gc.constant(x)).numpy())
