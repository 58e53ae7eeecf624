"""Gradients through broadcasting whose axes are known only at run time (dims traced as
None), and tile/eye with sizes known only at run time: the same values as eagerly, where
TensorFlow decides with BroadcastGradientArgs at run time."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc

BACKENDS = ["numpy", "numba"]


def _spec(rank):
    return gc.TensorSpec([None] * rank, gc.float32)


def _eager_grads(fn, x, y):
    xt, yt = gc.constant(x), gc.constant(y)
    with gc.GradientTape(persistent=True) as t:
        t.watch(xt)
        t.watch(yt)
        z = gc.reduce_sum(fn(xt, yt) * 1.5)
    return [g.numpy() for g in t.gradient(z, [xt, yt])]


def _compiled_grads(fn, rx, ry, backend):
    @gc.function(input_signature=[_spec(rx), _spec(ry)], backend=backend)
    def grads(x, y):
        with gc.GradientTape() as t:
            t.watch([x, y])
            z = gc.reduce_sum(fn(x, y) * 1.5)
        return t.gradient(z, [x, y])
    return grads


OPS = {
    "multiply": lambda x, y: x * y,
    "subtract": lambda x, y: x - y,
    "maximum": lambda x, y: gc.maximum(x, y),
    "where": lambda x, y: gc.where(x > 0.0, x, y),
    "broadcast_to": lambda x, y: gc.broadcast_to(x, gc.shape(x + y)) + y,
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), op=st.sampled_from(sorted(OPS)), backend=st.sampled_from(BACKENDS))
def test_gradients_of_run_time_broadcasts_match_eager(data, op, backend):
    rank = data.draw(st.integers(1, 3))
    full = data.draw(st.lists(st.integers(2, 4), min_size=rank, max_size=rank))
    # each operand: every dim either the full one or 1; y may also have fewer dims
    xs = [data.draw(st.sampled_from([1, d])) for d in full]
    ry = data.draw(st.integers(1, rank))
    ys = [data.draw(st.sampled_from([1, d])) for d in full[rank - ry:]]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.standard_normal(xs).astype(np.float32)
    y = rng.standard_normal(ys).astype(np.float32)
    want = _eager_grads(OPS[op], x, y)
    got = [g.numpy() for g in _compiled_grads(OPS[op], rank, ry, backend)(x, y)]
    for g, w, a in zip(got, want, (x, y)):
        assert g.shape == a.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batched_matmul_gradient_sums_a_run_time_broadcast_batch(backend):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 2, 3)).astype(np.float32)     # batch 1 at run time
    b = rng.standard_normal((4, 3, 5)).astype(np.float32)
    fn = gc.matmul
    want = _eager_grads(fn, a, b)
    got = _compiled_grads(fn, 3, 3, backend)(a, b)
    assert got[0].shape == (1, 2, 3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)


def test_static_operands_keep_the_static_rule():
    """A batch dim unknown in both x @ w and the bias add cannot be broadcast (the other
    operand has no such dim, and matmul's matrix dims never broadcast): no run-time op.
    (Two operands that both have an unknown batch dim, `h * x`, do get one, as in TF.)"""
    @gc.function(input_signature=[gc.TensorSpec([None, 8], gc.float32)])
    def step(x):
        w = gc.constant(np.ones((8, 4), np.float32))
        b = gc.constant(np.ones(4, np.float32))
        with gc.GradientTape() as t:
            t.watch([x, w, b])
            z = gc.reduce_sum(gc.nn.relu(gc.matmul(x, w) + b) * 2.0)
        return t.gradient(z, [x, w, b])
    graph = step.get_concrete_function(gc.TensorSpec([None, 8], gc.float32)).graph
    assert "sum_to_shape" not in str(graph)
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    got = step(x)
    assert [g.shape for g in got] == [(3, 8), (8, 4), (4,)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("multiples", [[2, 3], [1, 1], [0, 2], [3, 1]])
def test_tile_with_run_time_multiples(backend, multiples):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    xv = gc.Variable(x)

    @gc.function(backend=backend)
    def f(m):
        with gc.GradientTape() as t:
            y = gc.tile(xv, m)
            z = gc.reduce_sum(y * y)
        return y, t.gradient(z, xv)
    y, g = f(np.array(multiples, np.int64))
    np.testing.assert_array_equal(y.numpy(), np.tile(x, multiples))
    np.testing.assert_allclose(g.numpy(), 2 * x * np.prod(multiples))


def test_tile_with_run_time_multiples_checks_them():
    f = gc.function(lambda x, m: gc.tile(x, m))
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="tile: multiples must be a vector of length 2"):
        f(x, np.array([2], np.int32))
    with pytest.raises(TypeError, match="tile: multiples must be int32 or int64"):
        f(x, np.array([2.0, 1.0], np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_eye_with_run_time_sizes(backend):
    f = gc.function(lambda n, m: gc.eye(n, m, dtype=gc.int32), backend=backend)
    np.testing.assert_array_equal(f(np.int32(3), np.int64(5)).numpy(),
                                  np.eye(3, 5, dtype=np.int32))
    g = gc.function(lambda n: gc.eye(n), backend=backend)
    assert g(np.int32(4)).dtype == gc.float32
    np.testing.assert_array_equal(g(np.int32(4)).numpy(), np.eye(4, dtype=np.float32))
    assert g(np.int32(0)).shape == (0, 0)
    h = gc.function(lambda x: gc.eye(gc.shape(x)[0]) * x, backend=backend)
    x = np.full((3, 3), 2.0, np.float32)
    np.testing.assert_array_equal(h(x).numpy(), 2 * np.eye(3, dtype=np.float32))
    with pytest.raises(TypeError, match="eye: num_rows must be an int scalar"):
        gc.function(lambda n: gc.eye(n), backend=backend)(np.float32(2))
