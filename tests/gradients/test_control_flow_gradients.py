"""Gradients through cond, while_loop (trip count known only at run time), converted
if/for, loops with break, TensorArray loops, against finite differences; effects in
differentiated loops run once."""
import io

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from grad_check import check_gradients, numeric_grads

X = np.array([0.3, -1.2, 0.7])


def branchy(x):
    return gc.cond(gc.reduce_sum(x) > 0, lambda: gc.sin(x) * x, lambda: gc.exp(x) - x * x)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_both_branches(sign):
    check_gradients(branchy, [X * sign + 0.1 * sign])


def test_nested_cond():
    def fn(x, y):
        def inner():
            return gc.cond(gc.reduce_max(y) > 0.5, lambda: x * y, lambda: x / (1.0 + y * y))
        return gc.cond(gc.reduce_min(x) < 0, inner, lambda: gc.tanh(x + y))
    check_gradients(fn, [X, np.array([0.9, 0.2, -0.4])])
    check_gradients(fn, [X, np.array([0.1, 0.2, -0.4])])
    check_gradients(fn, [np.abs(X), np.array([0.1, 0.2, -0.4])])


def rnn_loop(x, n):
    """h <- tanh(h * x[i mod 3] + h); a loop whose trip count is a graph input."""
    def body(i, h):
        return i + 1, gc.tanh(h * x[i % 3] + x)
    _, h = gc.while_loop(lambda i, h: i < n, body, [gc.constant(0), x * 0.5])
    return h


@pytest.mark.parametrize("n", [0, 1, 4])
def test_while_with_runtime_trip_count(n):
    check_gradients(rnn_loop, [X], extra=(n,))


def test_one_trace_serves_every_trip_count():
    @gc.function
    def grad(x, n):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.reduce_sum(rnn_loop(x, n))
        return tape.gradient(y, x)
    for n in (2, 5):
        want = numeric_grads(lambda x, n: gc.reduce_sum(rnn_loop(x, n)), [X.copy()],
                             np.ones(()), (gc.constant(n),))[0]
        np.testing.assert_allclose(grad(gc.constant(X), gc.constant(n)), want, rtol=1e-6)
    assert grad.tracing_count == 1


def test_while_inside_cond_and_cond_inside_while():
    def fn(x, n):
        def body(i, h):
            h = gc.cond(gc.reduce_sum(h) > 0, lambda: h * x, lambda: h - gc.sin(h))
            return i + 1, h
        looped = lambda: gc.while_loop(lambda i, h: i < n, body, [0, x])[1]  # noqa: E731
        return gc.cond(gc.reduce_sum(x) > -5.0, looped, lambda: x)
    check_gradients(fn, [X], extra=(3,))
    check_gradients(fn, [np.abs(X)], extra=(3,))


def test_nested_while_loops():
    def fn(x, n):
        def outer(i, acc):
            _, inner = gc.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, gc.sin(a) + x),
                                     [0, acc])
            return i + 1, inner * 0.9
        return gc.while_loop(lambda i, a: i < n, outer, [0, x])[1]
    check_gradients(fn, [X], extra=(3,))


def test_loop_with_break_flag():
    """`while i < n: h = f(h); if sum(h) > 2: break`, written with a done flag."""
    def fn(x, n):
        def body(i, h, done):
            h = h * 1.5 + x
            return i + 1, h, gc.reduce_sum(h) > 2.0
        _, h, _ = gc.while_loop(lambda i, h, done: (i < n) & ~done, body,
                                [0, x, gc.constant(False)])
        return h
    check_gradients(fn, [np.array([0.1, 0.2, 0.05])], extra=(10,))


def test_maximum_iterations():
    def fn(x):
        return gc.while_loop(lambda h: gc.reduce_sum(h) < 100.0, lambda h: h * 1.3 + x, [x],
                             maximum_iterations=4)[0]
    check_gradients(lambda x: fn(x), [np.abs(X)])


def test_converted_if_and_for():
    def fn(x, n):
        y = x
        for i in gc.range(n):
            if gc.reduce_sum(y) > 0:
                y = y * x
            else:
                y = y - gc.sin(y)
        return y
    check_gradients(fn, [np.array([0.5, 0.7])], extra=(3,))
    check_gradients(fn, [np.array([-0.5, 0.2])], extra=(3,))


def test_tensorarray_write_loop():
    def fn(x, n):
        ta = gc.TensorArray(gc.float64, size=n)

        def body(i, h, ta):
            h = gc.tanh(h * x[i % 3] + 0.5)
            return i + 1, h, ta.write(i, h)
        _, h, ta = gc.while_loop(lambda i, h, ta: i < n, body,
                                 [0, gc.constant(0.1, gc.float64), ta])
        weights = gc.cast(gc.range(1, n + 1), gc.float64)
        return gc.reduce_sum(ta.stack() * weights) + h
    check_gradients(fn, [X], extra=(4,))


def test_tensorarray_read_loop_and_gather():
    def fn(x):
        ta = gc.TensorArray(gc.float64, size=3).unstack(x)

        def body(i, acc):
            return i + 1, acc * 0.5 + gc.sin(ta.read(i))
        _, acc = gc.while_loop(lambda i, acc: i < 3, body, [0, gc.constant(0.0, gc.float64)])
        return acc + gc.reduce_sum(ta.gather([2, 2, 0]))
    check_gradients(fn, [X])


def test_random_draws_in_a_loop_are_reused_by_the_backward_pass():
    @gc.function
    def fn(x, n):
        with gc.GradientTape() as tape:
            tape.watch(x)
            ta = gc.TensorArray(gc.float64, size=n)

            def body(i, acc, ta):
                r = gc.random.normal([], dtype=gc.float64)
                return i + 1, acc + x * r, ta.write(i, r)
            _, acc, ta = gc.while_loop(lambda i, a, t: i < n, body,
                                       [0, gc.constant(0.0, gc.float64), ta])
        return tape.gradient(acc, x), ta.stack()
    g, draws = fn(gc.constant(1.0, gc.float64), gc.constant(5))
    assert np.unique(np.asarray(draws)).size == 5
    np.testing.assert_allclose(g, np.sum(np.asarray(draws)), rtol=1e-12)


def test_effects_in_a_differentiated_loop_run_once():
    out = io.StringIO()
    count = gc.Variable(0, trainable=False)
    w = gc.Variable(2.0, dtype=gc.float64)

    @gc.function
    def fn(x, n):
        with gc.GradientTape() as tape:
            def body(i, h):
                gc.print("step", i, output_stream=out)
                count.assign_add(1)
                return i + 1, h * w + x
            _, h = gc.while_loop(lambda i, h: i < n, body, [0, x])
        return tape.gradient(h, w)
    g = fn(gc.constant(1.0, gc.float64), gc.constant(3))
    # h = x w^3 + x w^2 + x w + x, so dh/dw = 3 w^2 + 2 w + 1 at x = 1
    assert float(g) == pytest.approx(3 * 4 + 2 * 2 + 1)
    assert out.getvalue().splitlines() == ["step 0", "step 1", "step 2"]
    assert int(count.numpy()) == 3


def test_cond_with_variable_in_one_branch():
    w = gc.Variable(2.0)

    @gc.function
    def fn(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.cond(x > 0, lambda: x * x * w, lambda: gc.sin(x))
        return tape.gradient(y, [x, w])
    gx, gw = fn(gc.constant(3.0))
    assert float(gx) == 12.0 and float(gw) == 9.0
    gx, gw = fn(gc.constant(-1.0))
    assert float(gx) == pytest.approx(np.cos(-1.0)) and float(gw) == 0.0


def test_second_derivative_through_compiled_loop_is_refused():
    @gc.function
    def fn(x):
        with gc.GradientTape() as outer:
            outer.watch(x)
            with gc.GradientTape() as inner:
                inner.watch(x)
                y = gc.while_loop(lambda h: gc.reduce_sum(h) < 10.0, lambda h: h * h + 1.0,
                                  [x])[0]
            dy = inner.gradient(y, x)
        return outer.gradient(dy, x)
    with pytest.raises(NotImplementedError, match="second derivatives through a while_loop"):
        fn(gc.constant(1.5))


def test_eager_second_derivative_through_loop():
    x = gc.constant(1.5)
    with gc.GradientTape() as outer:
        outer.watch(x)
        with gc.GradientTape() as inner:
            inner.watch(x)
            y = gc.while_loop(lambda i, h: i < 2, lambda i, h: (i + 1, h * x), [0, x])[1]
        dy = inner.gradient(y, x)            # y = x^3
    assert float(dy) == pytest.approx(3 * 1.5 ** 2)
    assert float(outer.gradient(dy, x)) == pytest.approx(6 * 1.5)


def test_second_derivative_through_compiled_cond_reaches_variables():
    w = gc.Variable(1.5)

    @gc.function
    def fn(x):
        with gc.GradientTape() as outer:
            with gc.GradientTape() as inner:
                inner.watch(x)
                y = gc.cond(x > 0, lambda: x * x * w, lambda: gc.sin(x) * w)
            dx = inner.gradient(y, x)
        return dx, outer.gradient(dx, w)
    dx, dxdw = fn(gc.constant(3.0))
    assert float(dx) == 9.0 and float(dxdw) == 6.0
    dx, dxdw = fn(gc.constant(-1.0))
    assert float(dx) == pytest.approx(1.5 * np.cos(-1.0)) and \
        float(dxdw) == pytest.approx(np.cos(-1.0))


def test_converted_while_with_break():
    def fn(x, n):
        h = x
        i = 0
        while i < n:
            h = h * 1.5 + x
            if gc.reduce_sum(h) > 2.0:
                break
            i += 1
        return h
    check_gradients(fn, [np.array([0.1, 0.2, 0.05])], extra=(10,))
    check_gradients(fn, [np.array([0.01, 0.02, 0.05])], extra=(3,))


def test_loop_variable_that_grows_each_iteration():
    def grow(x, n):
        def body(i, acc):
            return i + 1, gc.concat([acc, gc.sin(acc[-1:]) * x], 0)
        _, acc = gc.while_loop(lambda i, a: i < n, body, [0, gc.reshape(x, [1])],
                               shape_invariants=[[], [None]])
        return gc.reduce_sum(acc * acc)
    check_gradients(grow, [np.array(0.7)], extra=(3,))


@settings(max_examples=5, deadline=None)
@given(shapes=st.sampled_from([((3,), (3,)), ((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 1), (2, 3)),
                               ((2, 2, 2), (2,)), ((), (2,))]), n=st.integers(1, 3))
def test_loops_over_broadcasting_shapes(shapes, n):
    """A loop var of one shape and a captured tensor broadcast against it; when the capture
    is larger, the loop var takes the broadcast shape from the second iteration on, so the
    loop starts from a tensor already of that shape."""
    h_shape, c_shape = shapes
    out_shape = np.broadcast_shapes(h_shape, c_shape)

    def fn(h0, c):
        start = h0 + gc.zeros(out_shape, gc.float64)
        return gc.while_loop(lambda i, h: i < n,
                             lambda i, h: (i + 1, gc.tanh(h * c + c)), [0, start])[1]
    rng = np.random.default_rng(len(h_shape) * 10 + n)
    check_gradients(fn, [rng.uniform(-1, 1, h_shape), rng.uniform(-1, 1, c_shape)])
