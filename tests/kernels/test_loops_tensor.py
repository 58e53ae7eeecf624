"""Whole-loop compilation of loops whose state holds small tensors of static shape:
realistic loops, loop state handling, errors, fallbacks (op coverage: test_loops_tensor_ops.py).

Each loop runs on the numba backend, on the numpy interpreter and eagerly, on the same
inputs: same dtypes, shapes and values (up to float rounding), and the plan must show the
loop really compiled (a runner that loaded its kernel with no error). Unsupported regions
must fall back with a reason that names the op and the user's line.
"""
import os

import numpy as np
import pytest
from hypothesis import given, strategies as st

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels.cpu import loops
from loop_helpers import FEW, agree, fallback_reason, line_of, loops_of, seeded

pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py: compile at once
HERE = os.path.basename(__file__)


# -- the realistic loops ---------------------------------------------------------------------
def power_iteration(a, v, n):
    for _ in gc.range(n):
        v = gc.matmul(a, v)
        v = v / gc.sqrt(gc.reduce_sum(v * v))
    return v


@FEW
@given(n=st.integers(1, 8), steps=st.integers(0, 30), dtype=st.sampled_from(["float32",
                                                                             "float64"]))
def test_power_iteration_lowers_and_agrees(n, steps, dtype):
    rng = seeded(n)
    a = (rng.random((n, n)) + np.eye(n) * n).astype(dtype)
    v = np.ones((n, 1), dtype)
    (got,), ((op, runner, _),) = agree(power_iteration, a, v, np.int32(steps))
    assert "matmul" in runner.source and "np.empty" in runner.source
    if steps:
        np.testing.assert_allclose(np.linalg.norm(got), 1.0, rtol=1e-5)


def rnn(w, xs, h):
    for i in gc.range(xs.shape[0]):
        h = gc.tanh(gc.matmul(w, h[:, None])[:, 0] + xs[i])
    return h


@FEW
@given(hidden=st.integers(1, 6), steps=st.integers(1, 12))
def test_rnn_cell_over_a_range_lowers_and_agrees(hidden, steps):
    rng = seeded(hidden * 100 + steps)
    w = rng.standard_normal((hidden, hidden)).astype(np.float32)
    xs = rng.standard_normal((steps, hidden)).astype(np.float32)
    agree(rnn, w, xs, np.zeros(hidden, np.float32))


def rnn_any_length(w, xs, h):
    for i in gc.range(gc.shape(xs)[0]):
        h = gc.tanh(gc.matmul(w, h[:, None])[:, 0] + xs[i])
    return h


def test_rnn_reads_rows_of_an_input_with_unknown_length():
    """Only row reads touch `xs`, so its unknown first dim does not matter."""
    sig = [gc.TensorSpec([4, 4], gc.float32), gc.TensorSpec([None, 4], gc.float32),
           gc.TensorSpec([4], gc.float32)]
    fast = gc.function(rnn_any_length, backend="numba", input_signature=sig)
    rng = seeded(3)
    w, h = rng.standard_normal((4, 4)).astype(np.float32), np.zeros(4, np.float32)
    for t in (3, 7):
        xs = rng.standard_normal((t, 4)).astype(np.float32)
        want = rnn(gc.constant(w), gc.constant(xs), gc.constant(h)).numpy()
        np.testing.assert_allclose(fast(w, xs, h).numpy(), want, rtol=2e-5, atol=1e-6)
    ((_, runner, reason),) = loops_of(fast, [w, xs, h])
    assert runner is not None and runner.fn is not None, reason


def running_max(x):
    best = gc.fill([x.shape[1]], -np.inf)
    where = gc.zeros([x.shape[1]], gc.int32)
    top = gc.constant(0, gc.int64)
    for i in gc.range(x.shape[0]):
        row = x[i]
        where = gc.where(row > best, i, where)
        best = gc.maximum(best, row)
        top = gc.argmax(best)
    return best, where, top, gc.argmin(x[:, ::-1], axis=1)


def test_running_max_and_argmax_lower_and_agree():
    x = seeded(5).standard_normal((9, 5)).astype(np.float32)
    x[4, 2] = np.nan        # the NaN wins in maximum (as in numpy and TF), never in argmax
    (best, where, top, low), _ = agree(running_max, x)   # or argmin (TF's rule, not numpy's)
    assert np.isnan(best[2]) and int(top) == int(np.argmax(np.nan_to_num(best, nan=-np.inf)))
    assert low[4] == np.argmin(np.nan_to_num(x[4, ::-1], nan=np.inf))


def newton_sqrt(a, x):
    for _ in gc.range(25):
        x = x - (x * x - a) / (2.0 * x)
    return x


@FEW
@given(st.lists(st.floats(0.01, 1e4), min_size=1, max_size=6))
def test_newton_iteration_on_float32_vector(values):
    a = np.asarray(values, np.float32)
    (got,), ((_, runner, _),) = agree(newton_sqrt, a, np.ones_like(a) * 50)
    assert got.dtype == np.float32
    # the whole update is one loop nest: buffers only for the state and the new state
    assert runner.source.count("np.empty(") == 2
    np.testing.assert_allclose(got, np.sqrt(a), rtol=1e-4)


def test_int32_state_wraps_like_numpy():
    def f(v, n):
        i = gc.constant(0)
        while i < n:
            v = v * 7 + gc.reduce_sum(v, keepdims=True)
            i += 1
        return v
    (got,), _ = agree(f, np.array([1, 2, 3], np.int32), np.int32(40))
    assert got.dtype == np.int32


def test_tensor_cond_inside_loop_and_at_top_level():
    def f(v, flag):
        for _ in gc.range(6):
            if gc.reduce_sum(v) > 0:
                v = v * 0.5 - 1.0
            else:
                v = -v
        if flag:
            w = v + 1.0
        else:
            w = v[::-1]
        return v, w
    for flag in (True, False):
        (_, _), report = agree(f, np.array([3.0, 1.0, -0.5]), np.bool_(flag))
        assert [op.type for op, _, _ in report] == ["while", "cond"]


def test_swapped_tensor_state_is_staged():
    def fib(a, b):
        for _ in gc.range(10):
            a, b = b, a + b
        return a, b
    (a, b), ((_, runner, _),) = agree(fib, np.array([0, 1], np.int64), np.array([1, 1], np.int64))
    np.testing.assert_array_equal(a, [55, 89])
    assert "stage a swapped value" in runner.source


def test_state_buffers_trade_places_only_with_values_made_in_the_body():
    def f(v):
        acc = v
        for _ in gc.range(3):
            c = acc * 2.0
            t = gc.zeros_like(v)
            for _ in gc.range(2):
                t = c              # from the outer body: copied in, c stays intact
            acc = t + c
        return acc

    def g(v):
        acc = v
        for _ in gc.range(3):
            a, b = acc, acc * 3.0
            for _ in gc.range(2):
                x = a + b * 0.5
                a, b = x, x        # one new buffer for two states: copied into both, so
            acc = a + b            # the next entry's different a and b never share memory
        return acc
    (got,), ((_, runner, _),) = agree(f, np.array([1.0, -2.0]))
    np.testing.assert_allclose(got, [64.0, -128.0])
    assert "buffers trade places" in runner.source
    agree(g, np.array([1.0, 2.0, 3.0], np.float32))


def test_nested_loops_with_tensor_state():
    def f(m):
        acc = gc.zeros([3], gc.float64)
        for i in gc.range(m.shape[0]):
            row = m[i]
            for j in gc.range(2):
                row = row * row * 0.5 + gc.cast(j, gc.float64)
            acc = acc + row
        return acc
    agree(f, seeded(2).uniform(-1, 1, (5, 3)))


def test_out_of_range_row_index_raises_the_reference_error():
    @gc.function(backend="numba")
    def f(x, n):
        acc = gc.zeros([3])
        for i in gc.range(n):
            acc = acc + x[i]
        return acc
    x = np.ones((4, 3), np.float32)
    np.testing.assert_allclose(f(x, gc.constant(4)).numpy(), [4, 4, 4])
    ((_, runner, _),) = loops_of(f, [x, gc.constant(4)])
    assert runner.fn is not None
    with pytest.raises((InvalidArgumentError, IndexError), match="index|out of"):
        f(x, gc.constant(6))


@pytest.mark.parametrize("start", [np.int32(3), np.array([3, 1, 4], np.int32)])
def test_a_single_loop_variable_compiles(start):
    """One scalar or one tensor as the only loop variable (no counter beside it)."""
    def f(x):
        return gc.while_loop(lambda v: gc.reduce_max(v) < 1000, lambda v: v * 3 + 1, x)
    (got,), _ = agree(f, start)
    assert got.max() >= 1000


def test_static_shapes_are_part_of_the_cache_key():
    keys = []
    for n in (3, 4):
        fast = gc.function(newton_sqrt, backend="numba")
        a = np.full(n, 2.0, np.float32)
        fast(a, a)
        ((_, runner, _),) = loops_of(fast, [a, a])
        keys.append(runner.key)
        assert f"range({n})" in runner.source
    assert keys[0] != keys[1]


# -- fallbacks -------------------------------------------------------------------------------
def test_unsupported_op_falls_back_naming_op_and_line():
    def f(v):
        for _ in gc.range(2):
            gc.print(v)  # unsupported
            v = v * 0.5
        return v
    reason = fallback_reason(f, np.arange(4, dtype=np.float32))
    assert reason.startswith("print") and f"{HERE}:{line_of(f, 'unsupported')}" in reason
    assert "matmul" in reason          # says what is supported


def test_too_big_tensor_falls_back_with_the_limit():
    def f(v):
        for _ in gc.range(2):
            v = v * 0.5
        return v
    n = loops.MAX_LOOP_TENSOR_ELEMENTS + 1
    reason = fallback_reason(f, np.ones(n, np.float32))
    assert f"[{n}]" in reason and str(loops.MAX_LOOP_TENSOR_ELEMENTS) in reason


def test_slice_bounds_computed_at_run_time_fall_back():
    def f(v, n):
        acc = gc.zeros([2])
        for i in gc.range(n):
            acc = acc + gc.reduce_sum(v[i:i + 2]) * 0.5  # dynamic slice
        return acc
    reason = fallback_reason(f, np.arange(6, dtype=np.float32), np.int32(4))
    assert reason.startswith("getitem") and "run time" in reason
    assert f"{HERE}:{line_of(f, '# dynamic slice')}" in reason


def test_effectful_op_falls_back():
    def f(v):
        for _ in gc.range(2):
            v = v + gc.random.uniform([3])
        return v
    args = [gc.constant(np.zeros(3, np.float32))]
    fast = gc.function(f, backend="numba")
    assert fast(*args).shape == (3,)
    ((_, runner, reason),) = loops_of(fast, args)
    assert runner is None and reason.startswith("random_uniform")
