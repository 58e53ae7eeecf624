"""gc.random against TF 2.21's reproducibility rules and argument handling.

graphc's generator is not TF's, so the values differ; what is compared is which calls
repeat, what broadcasts, what raises and where gradients flow (TF's answers as literals).
"""
import numpy as np
import pytest

import graphc as gc

R = gc.random


def eq(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b))


def test_op_seed_streams_are_per_op_and_dtype_as_tf():
    # TF 2.21: after set_seed(1), uniform(seed=5) or a float64 normal(seed=5) leaves the
    # float32 normal(seed=5) stream where it was; another shape or mean shares it
    R.set_seed(1)
    a = R.normal([2], seed=5)
    for other in (lambda: R.uniform([2], seed=5), lambda: R.normal([2], seed=5, dtype=gc.float64),
                  lambda: R.uniform([2], 0, 9, dtype=gc.int32, seed=5)):
        R.set_seed(1)
        other()
        assert eq(R.normal([2], seed=5), a)
    R.set_seed(1)
    R.normal([3], mean=2.0, seed=5)
    assert not eq(R.normal([2], seed=5), a)
    R.set_seed(1)
    R.normal([2])                                   # unseeded draws never touch it
    assert eq(R.normal([2], seed=5), a)


def test_seed_values_tf_accepts():
    # TF 2.21 accepts set_seed(None), negative seeds, int tensors, and truncates float op
    # seeds (normal(seed=1.5) == normal(seed=1)); each is reproducible after set_seed again
    def twice(draw, seed=1):
        R.set_seed(seed)
        a = draw()
        R.set_seed(seed)
        return a, draw()
    for draw in (lambda: R.normal([2], seed=-3), lambda: R.normal([2], seed=2**40)):
        a, b = twice(draw)
        assert eq(a, b)
    assert eq(*twice(lambda: R.normal([2]), seed=-1))
    assert eq(twice(lambda: R.normal([2], seed=gc.constant(3)))[0],
              twice(lambda: R.normal([2], seed=3))[0])
    assert eq(twice(lambda: R.normal([2], seed=1.5))[0], twice(lambda: R.normal([2], seed=1))[0])
    assert eq(twice(lambda: R.normal([2]), seed=gc.constant(4))[0],
              twice(lambda: R.normal([2]), seed=4)[0])
    R.set_seed(None)                      # forgets the global seed: op seeds still repeat
    a = R.normal([2], seed=5)
    R.set_seed(None)
    assert eq(R.normal([2], seed=5), a)
    assert not eq(R.normal([2]), R.normal([2]))


def test_parameters_broadcast_against_the_shape_as_tf():
    R.set_seed(0)
    # TF 2.21: normal([2], mean=[0., 100.]) -> shape (2,), the second near 100;
    # stddev=[1., 0.] gives exactly the mean where it is 0
    x = R.normal([2], mean=gc.constant([0.0, 100.0]))
    assert x.shape == (2,) and 90 < float(x[1]) < 110
    assert float(R.normal([2], mean=3.0, stddev=[1.0, 0.0])[1]) == 3.0
    # uniform([2, 2], minval=[[0.], [10.]], maxval=[[1.], [11.]]) -> row i in [10i, 10i+1)
    u = R.uniform([2, 2], minval=[[0.0], [10.0]], maxval=[[1.0], [11.0]]).numpy()
    assert u.shape == (2, 2) and np.all((u[0] >= 0) & (u[0] < 1)) and np.all(u[1] >= 10)
    # TF: a parameter that cannot broadcast fails (Mul: Incompatible shapes), and the integer
    # uniform takes only scalar bounds
    with pytest.raises(ValueError, match="random.uniform.*broadcast"):
        R.uniform([3], minval=[0.0, 10.0])
    with pytest.raises(ValueError, match="scalars"):
        R.uniform([2], minval=[0, 10], maxval=[1, 11], dtype=gc.int32)
    with pytest.raises(TypeError, match="float64"):
        R.normal([2], mean=gc.constant(1.0, gc.float64))


@pytest.mark.parametrize("backend", [None, "numpy", "auto"])
def test_gradients_flow_to_mean_stddev_and_bounds_as_tf(backend):
    """TF 2.21: d sum(normal([3], mean=m, stddev=s)) / dm == 3.0 and / ds == sum(z); for
    uniform the two bound gradients sum to 3 (1.79 + 1.21 in one TF run). graphc gave None."""
    m, s, lo, hi = gc.Variable(1.0), gc.Variable(2.0), gc.Variable(0.0), gc.Variable(2.0)

    def grads():
        with gc.GradientTape() as t:
            y = R.normal([3], mean=m, stddev=s, seed=1)
            u = R.uniform([3], lo, hi, seed=1)
            loss = gc.reduce_sum(y) + gc.reduce_sum(u)
        return [y, u] + t.gradient(loss, [m, s, lo, hi])
    run = grads if backend is None else gc.function(grads, backend=backend)
    R.set_seed(3)
    y, u, gm, gs, glo, ghi = [v.numpy() for v in run()]
    assert gm == 3.0
    np.testing.assert_allclose(gs, np.sum((y - 1.0) / 2.0), rtol=1e-5)
    np.testing.assert_allclose([glo, ghi], [np.sum(1 - u / 2.0), np.sum(u / 2.0)], rtol=1e-5)
    if backend is not None:                 # the compiled draws are eager's, in the same state
        R.set_seed(3)
        assert eq(grads()[0], y)


def test_float_dims_raise_as_tf():
    # TF 2.21: tf.zeros([2.5]) / tf.random.normal([2.0]): "Cannot convert ... to int32" /
    # "Value for attr 'T' of float is not in the list": graphc truncated 2.5 to 2
    for make in (lambda: gc.zeros([2.5]), lambda: gc.ones((2.0, 3)),
                 lambda: R.normal([2.0]), lambda: R.uniform(np.array([2.0]))):
        with pytest.raises(TypeError, match="shape must be a list of ints"):
            make()
    assert gc.zeros((np.int64(2), gc.constant(3))).shape == (2, 3)
