"""Whole-loop compilation of loops whose state holds small tensors of static shape.

Each loop runs on the numba backend, on the numpy interpreter and eagerly, on the same
inputs: same dtypes, shapes and values (up to float rounding), and the plan must show the
loop really compiled (a runner that loaded its kernel with no error). Unsupported regions
must fall back with a reason that names the op and the user's line.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels import cpu, loops

pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py: compile at once
HERE = os.path.basename(__file__)
FEW = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _flat(v)]
    return [x]


def _loops(fast, args):
    return fast.get_concrete_function(*args).graph._numba_plan.loops


def agree(fn, *arrays):
    """fn on numba (whose loops must all be compiled), on numpy and eagerly: equal results."""
    args = [gc.constant(a) for a in arrays]
    fast = gc.function(fn, backend="numba")
    got = _flat(fast(*args))
    ref = _flat(gc.function(fn, backend="numpy")(*args))
    eager = _flat(fn(*args))
    report = _loops(fast, args)
    assert report, "the function has no top-level loop to compile"
    for op, runner, reason in report:
        assert runner is not None, reason
        assert runner.fn is not None and runner.error is None, runner.error
    assert len(got) == len(ref) == len(eager)
    for g, r, e in zip(got, ref, eager):
        g, r, e = g.numpy(), r.numpy(), e.numpy()
        assert g.dtype == r.dtype == e.dtype and g.shape == r.shape == e.shape
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, r, equal_nan=True, **TOL[g.dtype.name])
            np.testing.assert_allclose(e, r, equal_nan=True, **TOL[g.dtype.name])
        else:
            np.testing.assert_array_equal(g, r)
            np.testing.assert_array_equal(e, r)
    return [g.numpy() for g in got], report


def fallback_reason(fn, *arrays):
    """fn agrees on numba and numpy, and its one loop was NOT compiled: the reason."""
    args = [gc.constant(a) for a in arrays]
    fast = gc.function(fn, backend="numba")
    for g, r in zip(_flat(fast(*args)), _flat(gc.function(fn, backend="numpy")(*args))):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6)
    ((op, runner, reason),) = _loops(fast, args)
    assert runner is None and reason
    assert "interpreted, because" in cpu.describe(fast.get_concrete_function(*args).graph)
    return reason


def _rng(seed):
    return np.random.default_rng(seed)


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
    rng = _rng(n)
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
    rng = _rng(hidden * 100 + steps)
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
    rng = _rng(3)
    w, h = rng.standard_normal((4, 4)).astype(np.float32), np.zeros(4, np.float32)
    for t in (3, 7):
        xs = rng.standard_normal((t, 4)).astype(np.float32)
        want = rnn(gc.constant(w), gc.constant(xs), gc.constant(h)).numpy()
        np.testing.assert_allclose(fast(w, xs, h).numpy(), want, rtol=2e-5, atol=1e-6)
    ((_, runner, reason),) = _loops(fast, [w, xs, h])
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
    x = _rng(5).standard_normal((9, 5)).astype(np.float32)
    x[4, 2] = np.nan        # the NaN wins in maximum and argmax, as in numpy
    (best, where, top, _), _ = agree(running_max, x)
    assert np.isnan(best[2]) and int(top) == 2


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


# -- op coverage -----------------------------------------------------------------------------
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
    rng = _rng(seed)
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
    x = _rng(7).uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
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
    rng = _rng(11)
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
def test_cumsum_unstack_and_tile(exclusive, reverse):
    def f(m, n):
        acc = gc.zeros([3], gc.int32)
        for i in gc.range(n):
            c = gc.cumsum(m * (i + 1), axis=1, exclusive=exclusive, reverse=reverse)  # [2, 3]
            first, second = gc.unstack(c)
            acc = acc + first - second + gc.reduce_sum(gc.tile(c, [2, 1]), axis=0)
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
    agree(f, _rng(rows * 10 + cols).standard_normal((rows, cols)))


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
    agree(f, _rng(2).uniform(-1, 1, (5, 3)))


def test_out_of_range_row_index_raises_the_reference_error():
    @gc.function(backend="numba")
    def f(x, n):
        acc = gc.zeros([3])
        for i in gc.range(n):
            acc = acc + x[i]
        return acc
    x = np.ones((4, 3), np.float32)
    np.testing.assert_allclose(f(x, gc.constant(4)).numpy(), [4, 4, 4])
    ((_, runner, _),) = _loops(f, [x, gc.constant(4)])
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
        ((_, runner, _),) = _loops(fast, [a, a])
        keys.append(runner.key)
        assert f"range({n})" in runner.source
    assert keys[0] != keys[1]


# -- fallbacks -------------------------------------------------------------------------------
def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, ln in enumerate(lines) if text in ln)


def test_unsupported_op_falls_back_naming_op_and_line():
    def f(v, idx):
        for _ in gc.range(3):
            v = gc.gather(v, idx) * 0.5  # unsupported
        return v
    reason = fallback_reason(f, np.arange(4, dtype=np.float32), np.array([2, 0, 3, 1], np.int32))
    assert reason.startswith("gather") and f"{HERE}:{_line_of(f, 'unsupported')}" in reason
    assert "matmul" in reason          # says what is supported


def test_too_big_tensor_falls_back_with_the_limit():
    def f(v):
        for _ in gc.range(2):
            v = v * 0.5
        return v
    n = loops.MAX_LOOP_TENSOR_ELEMENTS + 1
    reason = fallback_reason(f, np.ones(n, np.float32))
    assert f"[{n}]" in reason and str(loops.MAX_LOOP_TENSOR_ELEMENTS) in reason


def test_gather_with_an_index_tensor_falls_back():
    def f(v, idx):
        for _ in gc.range(2):
            v = v[idx] + 1.0  # gather
        return v
    reason = fallback_reason(f, np.arange(4, dtype=np.float32), np.array([3, 2, 1, 0], np.int32))
    assert reason.startswith("getitem") and "index tensor" in reason
    assert f"{HERE}:{_line_of(f, '# gather')}" in reason


def test_effectful_op_falls_back():
    def f(v):
        for _ in gc.range(2):
            v = v + gc.random.uniform([3])
        return v
    args = [gc.constant(np.zeros(3, np.float32))]
    fast = gc.function(f, backend="numba")
    assert fast(*args).shape == (3,)
    ((_, runner, reason),) = _loops(fast, args)
    assert runner is None and reason.startswith("random_uniform")
