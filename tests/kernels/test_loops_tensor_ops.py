"""Compiled tensor loops, op by op: every elementwise op, broadcasting, reductions, matmul,
shape ops, constants, slices and gathers, each against numpy and eager (loop_helpers.agree).
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import graphc as gc
from graphc.errors import InvalidArgumentError
from loop_helpers import FEW, agree, loops_of, seeded

pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py: compile at once


FLOAT_UNARY = ["negative", "abs", "sign", "square", "exp", "log", "log1p", "sqrt", "rsqrt",
               "sin", "cos", "tan", "tanh", "floor", "ceil", "round", "erf"]
INT_UNARY = ["negative", "abs", "sign", "square"]
BINARY = ["add", "subtract", "multiply", "divide", "floordiv", "mod", "pow", "maximum",
          "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_every_elementwise_op_on_tensor_state(dtype):
    """Each op's last-iteration value is a loop variable of its own (no NaN carried over)."""
    unary = FLOAT_UNARY if dtype != "int32" else INT_UNARY

    def f(x, y):
        outs = [getattr(gc, n)(x) for n in unary] + [getattr(gc, n)(x, y[:, None])
                                                    for n in BINARY]
        outs += [gc.where(x > y, x, y), gc.cast(x, gc.float64), gc.cast(x, gc.bool)]
        for i in gc.range(3):
            xi = x + gc.cast(i, x.dtype)
            outs = ([getattr(gc, n)(xi) for n in unary] +
                    [getattr(gc, n)(xi, y[:, None]) for n in BINARY] +    # broadcasting
                    [gc.where(xi > y, xi, y), gc.cast(xi, gc.float64), gc.cast(xi, gc.bool)])
        return outs
    if dtype == "int32":
        x = np.array([-7, -1, 0, 2, 9], np.int32)
        y = np.array([3, 1, 2, 5, 4], np.int32)
    else:
        x = np.array([-2.5, -0.5, 0.0, 0.75, 3.0], dtype)
        y = np.array([1.5, 0.25, 2.0, 0.5, 1.0], dtype)
    agree(f, x, y)


@st.composite
def _broadcasting_pair(draw):
    """A state shape and a captured shape that broadcasts into it (dims dropped or set to 1)."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    lead = draw(st.integers(0, len(shape)))
    other = [1 if draw(st.booleans()) else d for d in shape[lead:]]
    return tuple(shape), tuple(other)


@FEW
@given(shapes=_broadcasting_pair(), seed=st.integers(0, 100))
def test_broadcasting_updates_of_random_shapes(shapes, seed):
    def f(v, w):
        for i in gc.range(4):
            t = gc.cast(i, v.dtype)
            v = gc.maximum(v * 0.5 - w * t, gc.tanh(w + v) * 2.0) + gc.reduce_min(w)
        return v
    rng = seeded(seed)
    agree(f, rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1]))


REDUCTIONS = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_mean"]


@FEW
@given(axis=st.sampled_from([None, 0, 1, 2, (0, 2), -1]), keepdims=st.booleans())
def test_reductions_over_axes(axis, keepdims):
    def f(x):
        accs = [gc.zeros_like(getattr(gc, k)(x, axis=axis, keepdims=keepdims))
                for k in REDUCTIONS]
        for i in gc.range(3):
            y = x * gc.cast(i + 1, gc.float32)
            accs = [a + getattr(gc, k)(y, axis=axis, keepdims=keepdims)
                    for a, k in zip(accs, REDUCTIONS)]
        return accs
    x = seeded(7).uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    x[1, 2, 3] = 3.0          # one clear maximum, one clear minimum
    x[0, 1, 0] = 0.1
    agree(f, x)


def test_bool_reductions_and_int_matmul():
    def f(x, m):
        seen = gc.zeros([3], gc.bool)
        allpos = gc.constant(True)
        p = m
        for i in gc.range(x.shape[0]):
            seen = gc.logical_or(seen, x[i] > 0)
            allpos = gc.logical_and(allpos, gc.reduce_all(x[i] > -2))
            p = gc.matmul(p, m)
        return seen, allpos, gc.reduce_any(seen, axis=0), p
    x = np.array([[-1, -1, 0], [-1, 2, -1], [0, -3, -1]], np.int32)
    agree(f, x, np.array([[1, 2], [3, -4]], np.int32))


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes_and_batches(ta, tb):
    def f(a, b, c):
        for _ in gc.range(3):
            c = c * 0.5 + gc.matmul(a, b, transpose_a=ta, transpose_b=tb)
        return c
    rng = seeded(11)
    a = rng.standard_normal((2, 3, 4) if not ta else (2, 4, 3))
    b = rng.standard_normal((1, 4, 5) if not tb else (1, 5, 4))
    agree(f, a, b, np.zeros((2, 3, 5)))


def test_shape_ops_and_tensor_constants():
    def f(v):
        k = gc.constant([[1.0, -2.0, 0.5], [np.inf, 0.0, -1.0]], gc.float32)
        for i in gc.range(4):
            m = gc.reshape(v, [2, 3]) + k * 0.0 + gc.transpose(gc.reshape(v, [3, 2]))
            m = gc.minimum(m, gc.constant(10.0))
            s = gc.squeeze(gc.expand_dims(m, 0), axis=0)
            both = gc.stack([s[0], s[1, ::-1]], axis=1)              # [3, 2]
            v = gc.reshape(both, [6]) * 0.5 + gc.broadcast_to(gc.cast(i, gc.float32), [6])
            v = gc.concat([v[3:], v[:3]], axis=0)
        return v, gc.maximum(k, v[None, :3])
    agree(f, np.arange(6, dtype=np.float32))


@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, False), (False, True),
                                               (True, True)])
def test_cumsum_cumprod_unstack_and_tile(exclusive, reverse):
    def f(m, n):
        acc = gc.zeros([3], gc.int32)
        for i in gc.range(n):
            c = gc.cumsum(m * (i + 1), axis=1, exclusive=exclusive, reverse=reverse)  # [2, 3]
            p = gc.math.cumprod(m + i, axis=0, exclusive=exclusive, reverse=reverse)
            first, second = gc.unstack(c)
            acc = acc + first - second + gc.reduce_sum(gc.tile(c, [2, 1]), axis=0)
            acc = acc + gc.reduce_sum(p, axis=0)
            x0, x1, x2 = gc.unstack(acc)               # scalars
            acc = acc + x0 * x2 - x1
        return acc
    agree(f, np.array([[1, -2, 3], [4, 5, -6]], np.int32), np.int32(5))


def test_empty_tensor_state():
    def f(v):
        top = gc.zeros([3])
        total = gc.constant(1.0)
        for _ in gc.range(3):
            v = v * 2.0 + gc.reduce_sum(v, axis=0, keepdims=True)
            top = gc.reduce_max(v, axis=0)              # the identity: -inf
            total = total + gc.reduce_sum(v) + gc.reduce_prod(v)
        return v, top, total
    (v, top, total), _ = agree(f, np.zeros((0, 3), np.float32))
    assert v.shape == (0, 3) and np.all(top == -np.inf) and total == 4.0


_bound = st.one_of(st.none(), st.integers(-6, 6))


@FEW
@given(rows=st.integers(1, 5), cols=st.integers(1, 5), start=_bound, stop=_bound,
       step=st.sampled_from([None, 1, 2, -1, -2]), row=st.integers(-1, 0))
def test_static_slices_and_negative_indices(rows, cols, start, stop, step, row):
    def f(x):
        part = x[:, start:stop:step]
        acc = gc.zeros_like(part)
        last = gc.zeros_like(x[row, ::-1][None, :])
        for i in gc.range(3):
            acc = acc + x[:, start:stop:step] * gc.cast(i, x.dtype)
            last = last + x[row, ::-1][None, :]
        return acc, last
    agree(f, seeded(rows * 10 + cols).standard_normal((rows, cols)))


def test_gathers_with_index_tensors():
    def f(v, order, table):
        rows = gc.zeros([2, 3])
        for i in gc.range(4):
            v = gc.gather(v, order) + v[[3, 3, 0, 1]] - gc.gather(v, i % 4)  # scalar read
            rows = rows + table[:, order[:3]][:, :, None][:, :, 0] + gc.gather(table, i % 2)[:3]
        return v, rows, gc.gather(table, order[1:3], axis=1)
    table = np.arange(8, dtype=np.float32).reshape(2, 4)
    agree(f, np.arange(4, dtype=np.float32), np.array([2, 0, 3, 1], np.int32), table)


def test_gather_out_of_range_raises_the_reference_error():
    @gc.function(backend="numba")
    def f(v, order):
        for _ in gc.range(2):
            v = gc.gather(v, order)
        return v
    v = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(f(v, np.array([1, 2, 0], np.int32)).numpy(), [2, 0, 1])
    ((_, runner, _),) = loops_of(f, [v, np.array([1, 2, 0], np.int32)])
    assert runner.fn is not None and runner.error is None
    with pytest.raises(InvalidArgumentError, match="gather: index 3 is out of range"):
        f(v, np.array([1, 3, 0], np.int32))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_reductions_start_from_the_dtype_extremes(dtype):
    """The accumulators of integer max/min start at the dtype's minimum/maximum (the int64
    minimum included) and sums/products wrap as numpy's do."""
    info = np.iinfo(dtype)

    def f(x):
        top = gc.reduce_max(x, axis=0)
        low = gc.reduce_min(x, axis=0)
        tot = gc.reduce_sum(x, axis=0)
        prod = gc.reduce_prod(x, axis=0)
        for _ in gc.range(2):
            top = gc.maximum(top, gc.reduce_max(x, axis=0))
            low = gc.minimum(low, gc.reduce_min(x, axis=0))
            tot = tot + gc.reduce_sum(x, axis=0)
            prod = prod * gc.reduce_prod(x, axis=0)
        return top, low, tot, prod
    x = np.array([[info.min, info.max, 3], [info.min, info.max - 1, -7]], dtype)
    agree(f, x)
