"""Every differentiable primitive (and the composites users call) against finite differences,
eagerly and inside @gc.function, with hypothesis choosing the shapes."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import array_shapes

import graphc as gc
from grad_check import check_gradients, tape_grads

SETTINGS = settings(max_examples=6, deadline=None)
shapes = array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)


def data(shape, seed=0, lo=-2.0, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def away_from_ints(shape, seed=0):
    return np.floor(data(shape, seed, -3, 3)) + 0.5 + data(shape, seed + 1, -0.3, 0.3)


UNARY = {
    "negative": (gc.negative, data), "abs": (gc.abs, lambda s: away_from_zero(s)),
    "sign": (gc.sign, lambda s: away_from_zero(s)), "square": (gc.square, data),
    "exp": (gc.exp, data), "log": (gc.log, lambda s: data(s, lo=0.5, hi=3)),
    "log1p": (gc.log1p, lambda s: data(s, lo=-0.5, hi=3)),
    "sqrt": (gc.sqrt, lambda s: data(s, lo=0.5, hi=3)),
    "rsqrt": (gc.rsqrt, lambda s: data(s, lo=0.5, hi=3)), "sin": (gc.sin, data),
    "cos": (gc.cos, data), "tan": (gc.tan, lambda s: data(s, lo=-1, hi=1)),
    "tanh": (gc.tanh, data), "erf": (gc.erf, data), "sigmoid": (gc.sigmoid, data),
    "relu": (gc.nn.relu, lambda s: away_from_zero(s)),
    "relu6": (gc.nn.relu6, lambda s: away_from_zero(s)),
    "leaky_relu": (gc.nn.leaky_relu, lambda s: away_from_zero(s)),
    "elu": (gc.nn.elu, lambda s: away_from_zero(s)), "gelu": (gc.nn.gelu, data),
    "gelu_tanh": (lambda x: gc.nn.gelu(x, approximate=True), data),
    "softplus": (gc.nn.softplus, data),
}


def away_from_zero(shape, seed=0):
    x = data(shape, seed, 0.2, 2.0)
    return x * np.where(data(shape, seed + 7) > 0, 1, -1)


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(shape=shapes)
def test_unary(name, shape):
    fn, make = UNARY[name]
    check_gradients(fn, [make(shape)])


BINARY = {
    "add": gc.add, "subtract": gc.subtract, "multiply": gc.multiply,
    "divide": gc.divide, "maximum": gc.maximum, "minimum": gc.minimum,
    "pow": gc.pow, "mod": gc.mod,
}   # floor, ceil, round and floordiv have no gradient (None): test_tf_gradient_values.py


@st.composite
def broadcastable_pair(draw):
    shape = draw(array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    other = [1 if draw(st.booleans()) else d for d in shape]
    drop = draw(st.integers(0, len(other)))
    other = other[drop:]
    return (shape, tuple(other)) if draw(st.booleans()) else (tuple(other), shape)


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(shapes=broadcastable_pair())
def test_binary_with_broadcasting(name, shapes):
    a = data(shapes[0], 1, 0.5, 2.0)
    b = data(shapes[1], 2, 0.5, 2.0)
    if name in ("maximum", "minimum"):
        b = b + 0.05 * np.sign(b - 1.25)  # keep a != b so the kink is not probed
    if name == "mod":
        b = np.full(shapes[1], 0.7)
        a = np.floor(a / 0.7) * 0.7 + 0.35   # away from the jumps of mod
    check_gradients(BINARY[name], [a, b])


@SETTINGS
@given(shapes=broadcastable_pair())
def test_where_and_clip(shapes):
    a, b = data(shapes[0], 3), data(shapes[1], 4)
    check_gradients(lambda x, y: gc.where(x > y, x * y, x - y), [a, b + 0.01])
    check_gradients(lambda x: gc.clip_by_value(x, -0.5, 0.5), [away_from_ints(shapes[0]) / 3])


def axes_for(shape, draw):
    ndim = len(shape)
    choice = draw(st.sampled_from(["none", "int", "tuple"]))
    if choice == "none" or ndim == 0:
        return None
    if choice == "int":
        return draw(st.integers(-ndim, ndim - 1))
    return tuple(sorted(draw(st.sets(st.integers(0, ndim - 1), min_size=1))))


REDUCTIONS = {"reduce_sum": gc.reduce_sum, "reduce_mean": gc.reduce_mean,
              "reduce_prod": gc.reduce_prod, "reduce_max": gc.reduce_max,
              "reduce_min": gc.reduce_min, "reduce_logsumexp": gc.reduce_logsumexp}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@SETTINGS
@given(shape=shapes, keepdims=st.booleans(), data_=st.data())
def test_reductions(name, shape, keepdims, data_):
    axis = axes_for(shape, data_.draw)
    x = data(shape, 5, 0.5, 2.0)
    check_gradients(lambda t: REDUCTIONS[name](t, axis=axis, keepdims=keepdims), [x])


def test_reduce_prod_with_zeros_and_ties():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 5.0]])
    g = check_gradients(lambda t: gc.reduce_prod(t, axis=1), [x])
    assert np.asarray(g[0])[0, 0] != 0      # only zero in its row: product of the others
    ties = np.array([[1.0, 3.0, 3.0]])
    with gc.GradientTape() as tape:
        t = gc.constant(ties)
        tape.watch(t)
        y = gc.reduce_max(t)
    np.testing.assert_allclose(tape.gradient(y, t), [[0.0, 0.5, 0.5]])


@SETTINGS
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3),
       exclusive=st.booleans(), reverse=st.booleans(), data_=st.data())
def test_cumsum(shape, exclusive, reverse, data_):
    axis = data_.draw(st.integers(-len(shape), len(shape) - 1))
    check_gradients(lambda t: gc.cumsum(t, axis, exclusive=exclusive, reverse=reverse),
                    [data(shape)])


@SETTINGS
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), data_=st.data())
def test_shape_ops(shape, data_):
    x = data(shape, 6)
    n = len(shape)
    perm = data_.draw(st.permutations(range(n)))
    axis = data_.draw(st.integers(0, n - 1))
    check_gradients(lambda t: gc.reshape(t, [-1]) * gc.range(1.0, x.size + 1.0, dtype=gc.float64),
                    [x])
    check_gradients(lambda t: gc.transpose(t, perm), [x])
    check_gradients(lambda t: gc.squeeze(gc.expand_dims(t, axis), axis) * t, [x])
    check_gradients(lambda t: gc.concat([t, t * t, t], axis), [x])
    check_gradients(lambda a, b: gc.stack([a, b * a], axis), [x, data(shape, 7)])
    check_gradients(lambda t: gc.unstack(t, axis=axis)[0] * 2.0, [x])
    check_gradients(lambda t: gc.tile(t, [2] + [1] * (n - 2) + [3] if n > 1 else [3]), [x])
    check_gradients(lambda t: gc.broadcast_to(t, (2,) + shape), [x])
    idx = data_.draw(st.lists(st.integers(0, shape[axis] - 1), min_size=1, max_size=4))
    check_gradients(lambda t: gc.gather(t, idx, axis=axis), [x])


def test_squeeze_all_and_fill():
    check_gradients(lambda t: gc.squeeze(t), [data((1, 3, 1))])
    check_gradients(lambda t: gc.fill([2, 3], t) * gc.constant(data((2, 3), 9)), [np.array(0.7)])


INDEXES = [
    (1,), (slice(None, None, -1),), (Ellipsis, 0), (None, 1, slice(0, 2)),
    (slice(1, None), None), ([0, 0, 2],), (slice(None), [1, 1]), (-1, slice(None, None, 2)),
]


@pytest.mark.parametrize("index", INDEXES, ids=repr)
def test_getitem(index):
    check_gradients(lambda t: t[index], [data((3, 4), 8)])


def test_getitem_with_tensor_index_traced():
    x = data((4, 3), 9)

    @gc.function
    def grad_row(t, i):
        with gc.GradientTape() as tape:
            tape.watch(t)
            y = gc.reduce_sum(t[i] * t[i])
        return tape.gradient(y, t)
    got = np.asarray(grad_row(gc.constant(x), gc.constant(2)))
    want = np.zeros_like(x)
    want[2] = 2 * x[2]
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((2, 2, 3), (3, 4)),
                                    ((1, 2, 3), (2, 3, 2)), ((3, 2), (2, 2, 3))])
def test_matmul(ta, tb, shapes):
    a_shape, b_shape = list(shapes[0]), list(shapes[1])
    if ta:
        a_shape[-1], a_shape[-2] = a_shape[-2], a_shape[-1]
    if tb:
        b_shape[-1], b_shape[-2] = b_shape[-2], b_shape[-1]
    check_gradients(lambda a, b: gc.matmul(a, b, transpose_a=ta, transpose_b=tb),
                    [data(a_shape, 1), data(b_shape, 2)])


def test_tensordot_and_losses():
    check_gradients(lambda a, b: gc.tensordot(a, b, [[0, 2], [1, 0]]),
                    [data((2, 3, 4), 1), data((4, 2, 2), 2)])
    check_gradients(lambda x: gc.nn.softmax(x), [data((3, 4))])
    check_gradients(lambda x: gc.nn.log_softmax(x, axis=0), [data((3, 4))])
    labels = np.array([0, 3, 1])
    check_gradients(lambda x: gc.nn.sparse_softmax_cross_entropy_with_logits(labels, x),
                    [data((3, 4))])
    dense = np.eye(4)[labels]
    check_gradients(lambda x: gc.nn.softmax_cross_entropy_with_logits(dense, x),
                    [data((3, 4))])


def test_cast_passes_gradient_and_ints_get_none():
    x = gc.constant([1.5, -2.0], gc.float64)
    with gc.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gc.reduce_sum(gc.cast(gc.cast(x, gc.float32), gc.float64) * 3.0)
        n = gc.cast(x, gc.int32)
        z = gc.reduce_sum(gc.cast(n, gc.float64) * x)
    g = tape.gradient(y, x)
    assert g.dtype == gc.float64
    np.testing.assert_array_equal(g, [3.0, 3.0])
    # the path through int32 carries no gradient; only the direct factor x does
    np.testing.assert_array_equal(tape.gradient(z, x), [1.0, -2.0])
    assert tape.gradient(z, n) is None


def test_second_derivative_through_indexing():
    """The scatter that undoes x[idx] (getitem_grad) is differentiable too."""
    def fn(x):
        with gc.GradientTape() as outer:
            outer.watch(x)
            with gc.GradientTape() as inner:
                inner.watch(x)
                y = gc.reduce_sum(x[[0, 0, 2]] ** 3.0)
            first = inner.gradient(y, x)
            total = gc.reduce_sum(first)
        return first, outer.gradient(total, x)
    x = np.array([0.5, -1.0, 2.0])
    for run in (fn, gc.function(fn)):
        first, second = run(gc.constant(x))
        np.testing.assert_allclose(first, [6 * 0.25, 0.0, 3 * 4.0])
        np.testing.assert_allclose(second, [12 * 0.5, 0.0, 6 * 2.0])


@pytest.mark.parametrize("axis,batch_dims", [(1, 1), (2, 1), (2, 2)])
def test_batch_gather(axis, batch_dims):
    """gather with batch_dims ("batch_gather"), and its scatter ("batch_gather_grad")
    differentiated in turn with respect to the upstream gradient."""
    x = data((2, 3, 4), 11)
    idx = np.array([[0, 2, 2], [1, 0, 1]]) if batch_dims == 1 else \
        np.array([[0, 3, 3], [1, 1, 2]])          # batch dims [2, 3]: one index each
    check_gradients(lambda t: gc.gather(t, idx, axis=axis, batch_dims=batch_dims), [x])
    up_shape = np.shape(gc.gather(x, idx, axis=axis, batch_dims=batch_dims))

    def scatter(w):
        p = gc.constant(x)
        with gc.GradientTape() as tape:
            tape.watch(p)
            y = gc.reduce_sum(gc.gather(p, idx, axis=axis, batch_dims=batch_dims) * w)
        return tape.gradient(y, p) * gc.constant(data((2, 3, 4), 12))
    check_gradients(scatter, [data(up_shape, 13)])


def test_only_needed_gradients_reach_the_graph():
    """Gradients toward unwatched inputs (data, constants) are neither computed by matmul's
    rule nor left behind as dead ops."""
    w = gc.Variable(np.ones((4, 3)))

    @gc.function
    def grad(x):
        with gc.GradientTape() as tape:
            y = gc.reduce_sum(gc.nn.relu(x @ w))
        return tape.gradient(y, w)
    x = data((2, 4))
    g = grad(gc.constant(x))
    np.testing.assert_allclose(g, x.T @ ((x @ np.ones((4, 3))) > 0))
    types = [op.type for op in grad.concrete_functions()[0].graph.operations]
    assert types.count("matmul") == 2            # forward, and dL/dw only
    # relu's kink (no gradient for its 0) and its NaN (maximum(x, -inf): none, as TF)
    assert types.count("where") == 2


DYNAMIC = {
    "reduce_sum": lambda x: gc.reduce_sum(x, axis=0),
    "reduce_mean": lambda x: gc.reduce_mean(x * x),
    "reduce_max": lambda x: gc.reduce_max(x, axis=1),
    "reduce_prod": lambda x: gc.reduce_prod(x, axis=0),
    "reshape": lambda x: gc.reshape(x, [-1]) * gc.reshape(x, [-1]),
    "concat": lambda x: gc.concat([x, x * x], 0),
    "tile": lambda x: gc.tile(x, [2, 1]),
    "matmul": lambda x: x @ gc.constant(np.ones((3, 2))),
    "broadcast": lambda x: x * gc.constant(np.arange(3.0)),
    "getitem": lambda x: x[1:, ::2],
    "gather": lambda x: gc.gather(x, [0, 0], axis=0),
    "batch_gather": lambda x: gc.gather(x, gc.cast(x[:, :2] * 0.0, gc.int32) + [2, 0],
                                        batch_dims=1),
    "transpose": lambda x: gc.transpose(x) * gc.transpose(x),
    "squeeze": lambda x: gc.squeeze(gc.expand_dims(x, 0), 0) ** 2.0,
    "softmax": lambda x: gc.nn.softmax(x, axis=0),
    "logsumexp": lambda x: gc.reduce_logsumexp(x, axis=0),
}


@pytest.mark.parametrize("name", sorted(DYNAMIC))
def test_gradients_with_dimensions_known_only_at_run_time(name):
    fn = DYNAMIC[name]

    @gc.function(input_signature=[gc.TensorSpec([None, 3], gc.float64)])
    def grad(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x)
    for rows in (2, 4):
        x = data((rows, 3), rows, 0.5, 1.5)
        check_gradients(fn, [x])                     # eager and static shapes vs differences
        ones = np.ones(np.shape(fn(gc.constant(x))))
        eager = tape_grads(fn, [gc.constant(x)], ones)[0]
        np.testing.assert_allclose(grad(gc.constant(x)), eager, rtol=1e-10)
    assert grad.tracing_count == 1


@pytest.mark.parametrize("backend", [None, "numpy", "auto"])
def test_activation_gradients_at_their_kinks_as_tf(backend):
    """At the kinks the gradient is TF's one-sided choice: relu has 0 at 0 (ReluGrad: x > 0),
    relu6 0 at 0 and 6, softplus sigmoid(0) = 0.5. Expected values are TF 2.21's."""
    def grads(x):
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            ys = gc.nn.relu(x), gc.nn.relu6(x), gc.nn.softplus(x), gc.abs(x)
        return [tape.gradient(y, x) for y in ys]
    run = grads if backend is None else gc.function(grads, backend=backend)
    x = gc.constant(np.array([-1.0, 0.0, 3.0, 6.0, 7.0, -np.inf, np.inf], np.float32))
    relu, relu6, softplus, abs_ = run(x)
    np.testing.assert_array_equal(relu, [0, 0, 1, 1, 1, 0, 1])
    np.testing.assert_array_equal(relu6, [0, 0, 1, 0, 0, 0, 0])
    np.testing.assert_allclose(softplus, [0.26894143, 0.5, 0.95257413, 0.99752736, 0.99908894,
                                          0, 1], rtol=1e-6)
    np.testing.assert_array_equal(abs_, [-1, 0, 1, 1, 1, -1, 1])
    # the values keep TF's: relu(-0.0) is -0.0, softplus(-inf) 0 and softplus(inf) inf
    y = gc.nn.relu(gc.constant(np.float32(-0.0)))
    assert np.signbit(y.numpy())
    np.testing.assert_array_equal(gc.nn.softplus(gc.constant([-np.inf, np.inf])), [0, np.inf])


@pytest.mark.parametrize("backend", [None, "numpy", "auto"])
def test_sqrt_and_rsqrt_pass_a_zero_gradient_as_zero_as_tf(backend):
    """TF's SqrtGrad/RsqrtGrad give 0 where the incoming gradient is 0, so the masked
    where(x > 0, sqrt(x), 0) has gradient 0 (not NaN) where x <= 0; unmasked, the gradient
    at 0 and below is still inf/NaN. Expected values are TF 2.21's."""
    def grads(x):
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            masked = [gc.where(x > 0, f(x), gc.zeros_like(x)) for f in (gc.sqrt, gc.rsqrt)]
            plain = gc.sqrt(x)
        return [tape.gradient(y, x) for y in masked] + [tape.gradient(plain, x)]
    run = grads if backend is None else gc.function(grads, backend=backend)
    sqrt, rsqrt, plain = run(gc.constant([-1.0, 0.0, 4.0]))
    np.testing.assert_array_equal(sqrt, [0.0, 0.0, 0.25])
    np.testing.assert_array_equal(rsqrt, [0.0, 0.0, -0.0625])
    np.testing.assert_array_equal(plain, [np.nan, np.inf, 0.25])
