"""The gc.nn functions TF training code uses beyond API.md's list, as TF 2.21's:
sigmoid_cross_entropy_with_logits, moments, l2_loss, silu/swish, bias_add and dropout.
Values and gradients (at large |x| too) are TF's, written as literals; every check runs
eagerly and compiled (numpy and auto backends)."""
import numpy as np
import pytest

import graphc as gc
from tf_extras_helpers import BACKENDS, agree, grad_agrees

X = np.float32([[1, 2, 4], [3, 5, 9]])


# -- sigmoid_cross_entropy_with_logits ---------------------------------------------------
Z = np.float64([0, 1, 1, 0, 0.5])
LOGITS = np.float64([-100, 100, -3, 0, 1e-3])


def _sce(z, x):
    return gc.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)


def test_sigmoid_cross_entropy_as_tf_at_large_logits():
    # TF: max(x, 0) - x * z + log1p(exp(-|x|)), finite at |x| = 100
    agree(_sce, np.float64([3.7200759760208356e-44, 3.7200759760208356e-44,
                            3.048587351573742, 0.6931471805599453, 0.6931473055599401]),
          Z, LOGITS, rtol=1e-12)
    # TF's float32 kernel flushes exp(-100) (a denormal, 3.8e-44) to 0; graphc keeps it
    agree(_sce, np.float32([0, 0, 0.9740769863128662]), np.float32([0, 1, 1]),
          np.float32([-100, 100, -0.5]), atol=1e-40)


def test_sigmoid_cross_entropy_gradients_as_tf():
    # at x = 100, z = 1 the gradient is 1 - 1 - exp(-100) / (1 + exp(-100)): TF sums the
    # two 1s first (-3.7e-44), graphc's tape the tiny term first (0); atol covers that
    grad_agrees(lambda x: _sce(gc.constant(Z), x), LOGITS,
                [3.7200759760208356e-44, -3.7200759760208356e-44, -0.9525741268224333, 0.5,
                 0.0002499999791666929], rtol=1e-12, atol=1e-40)
    grad_agrees(lambda z: _sce(z, gc.constant(LOGITS)), Z, [100, -100, 3, -0.0, -0.001])


def test_sigmoid_cross_entropy_errors_as_tf():
    with pytest.raises(ValueError, match="same shape"):
        _sce(gc.constant([0., 1.]), gc.constant([[1., 2.]]))
    with pytest.raises(TypeError):                   # TF: int labels with float logits
        _sce(gc.constant([0, 1]), gc.constant([1., 2.]))
    with pytest.raises(TypeError):                   # TF: int logits refused
        _sce(gc.constant([0, 1]), gc.constant([1, 2]))


# -- moments / l2_loss --------------------------------------------------------------------
def test_moments_as_tf():
    agree(lambda x: gc.nn.moments(x, [0]),
          (np.float32([2, 3.5, 6.5]), np.float32([1, 2.25, 6.25])), X)
    agree(lambda x: gc.nn.moments(x, [1], keepdims=True),
          (np.float32([[2.3333332538604736], [5.666666507720947]]),
           np.float32([[1.5555557012557983], [6.222222805023193]])), X)
    agree(lambda x: gc.nn.moments(x, [0, 1], shift=100.0),     # TF 2 ignores shift
          (np.float32(4), np.float32(6.666666507720947)), X)
    agree(lambda x: gc.nn.moments(x, [0]), (np.int32(2), np.int32(1)), np.int32([1, 2, 4]))
    grad_agrees(lambda x: gc.nn.moments(x, [0, 1])[1], X,
                [[-1, -0.6666666865348816, 0], [-0.3333333432674408, 0.3333333432674408,
                                                1.6666667461395264]])
    with pytest.raises(ValueError, match="moments"):
        gc.nn.moments(gc.constant(X), [2])


def test_l2_loss_as_tf():
    agree(gc.nn.l2_loss, np.float32(68), X)
    grad_agrees(gc.nn.l2_loss, X, X)
    with pytest.raises(TypeError, match="l2_loss"):
        gc.nn.l2_loss(gc.constant([1, 2]))


# -- silu / swish ------------------------------------------------------------------------
XS = np.float32([-30, -1, 0, 2, 50])


def test_silu_and_swish_as_tf():
    assert gc.nn.swish is not None
    agree(gc.nn.silu, np.float32([-2.807286954981114e-12, -0.2689414322376251, 0,
                                  1.7615941762924194, 50]), XS, rtol=2e-6)
    agree(lambda x: gc.nn.swish(x, beta=0.5), np.float32(
        [-9.177066203847062e-06, -0.3775406777858734, 0, 1.4621171951293945, 50]), XS,
        rtol=2e-6)
    with pytest.raises(TypeError, match="silu"):
        gc.nn.silu(gc.constant([1, 2]))


def test_silu_gradient_as_tf_far_out_too():
    grad_agrees(gc.nn.silu, XS, [-2.7137105496760627e-12, 0.07232948392629623, 0.5,
                                 1.0907841920852661, 1], rtol=2e-6)
    # at -30 with beta 2, sigmoid(-60) * (1 - 60 * sigmoid(60)): TF's custom gradient keeps
    # it (a plain 1 / (1 + exp(-u)) loses it to an underflow and gives a positive value)
    grad_agrees(lambda x: gc.nn.silu(x, 2.0), XS, [-5.1663412803345725e-25,
                                                   -0.09078425168991089, 0.5,
                                                   1.0526646375656128, 1], rtol=2e-6)


# -- bias_add ----------------------------------------------------------------------------
def test_bias_add_as_tf():
    b = np.float32([1, 2, 3])
    agree(gc.nn.bias_add, X + b, X, b)
    ones = np.ones((1, 3, 2), np.float32)
    for fmt in ("NCHW", "NCW", "NC..."):
        agree(lambda v, c: gc.nn.bias_add(v, c, data_format=fmt), ones + b[:, None], ones, b)
    agree(lambda v, c: gc.nn.bias_add(v, c, data_format="NHWC"), ones.reshape(1, 2, 3) + b,
          ones.reshape(1, 2, 3), b)
    agree(gc.nn.bias_add, np.int32([[2, 3, 4]]), np.int32([[1, 1, 1]]), np.int32([1, 2, 3]))
    w = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    grad_agrees(lambda c: gc.nn.bias_add(gc.ones([2, 3, 2]), c, data_format="NC...") * w, b,
                [14, 22, 30])


@pytest.mark.parametrize("value, bias, fmt, exc, words", [
    ((2, 2), (3,), None, ValueError, "one value per channel"),   # TF: as many biases as ...
    ((2, 3), (3,), "XYZ", ValueError, "data_format"),
    ((2, 3), (1, 3), None, ValueError, "1-D"),                   # TF: Biases must be 1D
    ((3,), (3,), None, ValueError, "at least 2-D"),              # TF: must be at least 2D
])
def test_bias_add_errors_as_tf(value, bias, fmt, exc, words):
    with pytest.raises(exc, match=words):
        gc.nn.bias_add(gc.ones(value), gc.ones(bias), data_format=fmt)


def test_bias_add_unknown_channels_checked_when_run():
    f = gc.function(gc.nn.bias_add, input_signature=[gc.TensorSpec([2, None], gc.float32),
                                                     gc.TensorSpec([3], gc.float32)])
    assert f(np.ones((2, 3), np.float32), np.ones(3, np.float32)).shape == (2, 3)
    with pytest.raises(ValueError, match="bias_add"):     # 1 channel would broadcast to 3
        f(np.ones((2, 1), np.float32), np.ones(3, np.float32))


# -- dropout -----------------------------------------------------------------------------
def test_dropout_rate_zero_returns_x_itself():
    x = gc.constant(X)
    assert gc.nn.dropout(x, 0.0) is x and gc.nn.dropout(x, 0) is x


@pytest.mark.parametrize("backend", [None] + BACKENDS)
def test_dropout_keeps_and_scales_as_tf(backend):
    def drop(x):
        return gc.nn.dropout(x, 0.75)
    fn = drop if backend is None else gc.function(drop, backend=backend)
    x = np.ones((200, 50), np.float32)
    a, b = fn(x).numpy(), fn(x).numpy()
    assert set(np.unique(a)) <= {0.0, 4.0}          # kept values scaled by 1 / (1 - rate)
    assert 0.2 < (a != 0).mean() < 0.3               # about 1 - rate kept
    assert (a != b).any()                            # a fresh mask on every call


def test_dropout_noise_shape_broadcasts_the_mask():
    def drop(x):
        return gc.nn.dropout(x, 0.5, noise_shape=[40, 1])
    for fn in (drop, gc.function(drop, backend="numpy"), gc.function(drop)):
        out = fn(np.ones((40, 3), np.float32)).numpy()
        assert (out == out[:, :1]).all() and set(np.unique(out)) <= {0.0, 2.0}


def test_dropout_with_unknown_dims_and_a_rate_tensor():
    f = gc.function(lambda x, r: gc.nn.dropout(x, r),
                    input_signature=[gc.TensorSpec([None, 4], gc.float32),
                                     gc.TensorSpec([], gc.float32)])
    out = f(np.ones((500, 4), np.float32), np.float32(0.5)).numpy()
    assert out.shape == (500, 4) and set(np.unique(out)) == {0.0, 2.0}
    assert (f(np.ones((3, 4), np.float32), np.float32(0.0)).numpy() == 1).all()


def test_dropout_gradient_flows_through_the_mask():
    def step(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.nn.dropout(x, 0.75)
            total = gc.reduce_sum(y)
        return y, tape.gradient(total, x)
    for fn in (step, gc.function(step, backend="numpy"), gc.function(step)):
        y, g = fn(gc.ones([30, 20]))
        # TF: the gradient is the scale where kept, 0 where dropped (the same mask)
        np.testing.assert_array_equal(g.numpy(), y.numpy())


@pytest.mark.parametrize("x, rate, words", [
    (X, 1.0, r"\[0, 1\)"), (X, -0.1, r"\[0, 1\)"),              # TF: ValueError, same words
    (np.int32([1, 2]), 0.5, "floating point"),                    # TF: x.dtype must be floating
    (X, gc.constant(0.5, gc.float64), "dtype"),                   # TF: not compatible
    (X, gc.constant([0.5]), "scalar"),
])
def test_dropout_errors_as_tf(x, rate, words):
    with pytest.raises(ValueError, match=words):
        gc.nn.dropout(gc.constant(x), rate)
