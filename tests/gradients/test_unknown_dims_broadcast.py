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


# -- shape rules an op checks eagerly, left to the run time by None dims ("check_shape") --
def _logits():
    return np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)


CHECKED = [
    # (name, fn, labels, spec, the eager error's words)
    ("sparse", gc.nn.sparse_softmax_cross_entropy_with_logits, np.array([1], np.int32),
     gc.TensorSpec([None], gc.int32), r"labels of shape \[1\] must have the shape of logits "
     r"\[3,4\] without its last"),
    ("dense rows", gc.nn.softmax_cross_entropy_with_logits, np.eye(4, dtype=np.float32)[:1],
     gc.TensorSpec([None, None], gc.float32), r"labels of shape \[1,4\] and logits of shape "
     r"\[3,4\] must have the same shape"),
    ("dense classes", gc.nn.softmax_cross_entropy_with_logits, np.ones((3, 1), np.float32),
     gc.TensorSpec([None, None], gc.float32), r"labels of shape \[3,1\] and logits"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CHECKED, ids=[c[0] for c in CHECKED])
def test_cross_entropy_shapes_checked_at_run_time(case, backend):
    """Eagerly these labels raise ValueError; traced with None dims they broadcast against
    the logits and gave 3 silent losses. Now an InvalidArgumentError with the same words."""
    name, fn, labels, spec, words = case
    x = _logits()
    with pytest.raises(ValueError, match=words):
        fn(gc.constant(labels), gc.constant(x))
    f = gc.function(lambda y, z: fn(y, z), backend=backend,
                    input_signature=[spec, gc.TensorSpec([None, None], gc.float32)])
    with pytest.raises(gc.errors.InvalidArgumentError, match=words):
        f(labels, x)
    good = np.zeros((3,), np.int32) if labels.dtype == np.int32 else \
        np.full((3, 4), 0.25, np.float32)
    np.testing.assert_allclose(f(good, x).numpy(), fn(gc.constant(good), gc.constant(x)).numpy(),
                               rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_bounds_that_broadcast_t_raise_at_run_time(backend):
    t = np.array([[0.5]], np.float32)                    # [1, 1] at run time
    hi = np.array([[1.0, 2.0, 3.0]], np.float32)          # would broadcast t to [1, 3]
    with pytest.raises(ValueError, match="clip_by_value: the clip bounds would broadcast"):
        gc.clip_by_value(gc.constant(t), 0.0, gc.constant(hi))
    f = gc.function(lambda t, hi: gc.clip_by_value(t, 0.0, hi), backend=backend,
                    input_signature=[gc.TensorSpec([None, None], gc.float32)] * 2)
    with pytest.raises(gc.errors.InvalidArgumentError,
                       match=r"clip_by_value: the clip bounds would broadcast t of shape \[1,1\] "
                             r"to \[1,3\]"):
        f(t, hi)
    np.testing.assert_array_equal(f(np.array([[5.0, -1.0]], np.float32),
                                    np.array([[1.0, 2.0]], np.float32)).numpy(), [[1.0, 0.0]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_check_shape_passes_the_labels_gradient(backend):
    """The run-time check ("check_shape") is the identity for gradients: d loss / d labels
    of softmax_cross_entropy_with_logits is -log_softmax(logits), as eagerly."""
    x = _logits()
    y = np.full((3, 4), 0.25, np.float32)
    want = _eager_grads(lambda a, b: gc.nn.softmax_cross_entropy_with_logits(a, b), y, x)
    grads = _compiled_grads(lambda a, b: gc.nn.softmax_cross_entropy_with_logits(a, b), 2, 2,
                            backend)
    assert "check_shape" in str(grads.get_concrete_function().graph)
    for g, w in zip(grads(y, x), want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)


def test_static_shapes_add_no_check():
    f = gc.function(lambda y, z: gc.nn.sparse_softmax_cross_entropy_with_logits(y, z))
    cf = f.get_concrete_function(gc.TensorSpec([3], gc.int32), gc.TensorSpec([3, None],
                                                                            gc.float32))
    assert "check_shape" not in str(cf.graph)
