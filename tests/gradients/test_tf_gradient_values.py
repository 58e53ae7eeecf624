"""Per-op gradient values at special points (ties, zeros, +-0.0, inf, NaN, overflow), first
and second derivatives, eagerly and in gc.function on the numpy and numba backends. Every
expected value is TF 2.21's (tf.GradientTape, eager), written as a literal."""
import numpy as np
import pytest

import graphc as gc
from tf_values import RUNS, check, first_and_second, run

inf, nan = np.inf, np.nan


@pytest.mark.parametrize("backend", RUNS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_far_below_zero_has_gradient_zero_not_nan(backend, dtype):
    """exp(-x) overflows there; TF's SigmoidGrad y * (1 - y) is 0, and so is the second
    derivative. The value stays 1 / (1 + exp(-x)) bit for bit."""
    x = np.array([-inf, -800.0, -100.0, -30.0, 0.0, 30.0, inf], dtype)
    y, g, g2 = run(first_and_second(gc.sigmoid), backend, gc.constant(x))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(y, (1 / (1 + np.exp(-x))).astype(dtype))
    tiny = 3.720075976e-44 if dtype == np.float64 else 0.0     # TF's at -100
    check(g, [0, 0, tiny, 9.357623e-14, 0.25, 9.357623e-14, 0], dtype)
    check(g2, [0, 0, tiny, 9.357623e-14, 0, -9.357623e-14, 0], dtype)
    # (TF's float32 gradient at 30 is 0 and its float64 9.35918e-14: y * (1 - y) cancels;
    # e^-30 = 9.357623e-14 is the derivative, which graphc keeps)
    _, g_nn, _ = run(first_and_second(gc.nn.sigmoid), backend, gc.constant(x))
    np.testing.assert_array_equal(g_nn, g)


@pytest.mark.parametrize("backend", RUNS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softplus_second_derivative_at_zero(backend, dtype):
    """TF: softplus'' = sigmoid' = 1/4 at 0 (graphc's -|x| had a zero slope there)."""
    x = np.array([-inf, -1.0, -0.0, 0.0, 1.0, inf], dtype)
    y, g, g2 = run(first_and_second(gc.nn.softplus), backend, gc.constant(x))
    check(y, [0, 0.313261688, 0.693147181, 0.693147181, 1.313261688, inf], dtype)
    check(g, [0, 0.268941421, 0.5, 0.5, 0.731058579, 1], dtype)
    check(g2, [0, 0.196611933, 0.25, 0.25, 0.196611933, 0], dtype)


@pytest.mark.parametrize("backend", RUNS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elu_at_zero_and_nan_takes_the_identity_branch(backend, dtype):
    """TF's Elu is `x < 0 ? expm1(x) : x`: elu(-0.0) is -0.0, the gradient at 0 and NaN is
    the incoming one, and the second derivative at 0 is 0."""
    x = np.array([-1.0, -0.0, 0.0, 1.0, nan], dtype)
    y, g, g2 = run(first_and_second(gc.nn.elu), backend, gc.constant(x))
    check(y, [-0.632120559, 0, 0, 1, nan], dtype)
    assert np.signbit(np.asarray(y)[1]) and not np.signbit(np.asarray(y)[2])
    check(g, [0.367879441, 1, 1, 1, 1], dtype)
    check(g2, [0.367879441, 0, 0, 0, 0], dtype)


@pytest.mark.parametrize("backend", RUNS)
def test_rsqrt_gradient_at_signed_zeros(backend):
    """TF's RsqrtGrad -0.5 * g * y^3: +inf at -0.0 (where y = -inf), -inf at +0.0."""
    def fn(x):
        with gc.GradientTape() as tape:
            tape.watch(x)
            y = gc.rsqrt(x)
        return tape.gradient(y, x)
    g = run(fn, backend, gc.constant([-0.0, 0.0, 4.0]))
    np.testing.assert_array_equal(g, np.array([inf, -inf, -0.0625], np.float32))


PIECEWISE_CONSTANT = {
    "floor": gc.floor, "ceil": gc.ceil, "round": gc.round,
    "floordiv_x": lambda x: gc.floordiv(x, 0.7),
    "floordiv_y": lambda x: gc.floordiv(0.7, x),
    "operator //": lambda x: x // 2.0,
}


@pytest.mark.parametrize("backend", RUNS)
@pytest.mark.parametrize("name", sorted(PIECEWISE_CONSTANT))
def test_piecewise_constant_ops_have_no_gradient(backend, name):
    """TF's Floor, Ceil, Round and FloorDiv gradients are None (not zeros); a path through
    them adds nothing where the source is also reached another way."""
    op = PIECEWISE_CONSTANT[name]

    def fn(x):
        with gc.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = op(x)
            z = op(x) * x
        return (tape.gradient(y, x), tape.gradient(y, x, unconnected_gradients="zero"),
                tape.gradient(z, x), y)
    x = np.array([-1.7, -0.2, 0.4, 2.5, 3.1])
    none, zeros, through, y = run(fn, backend, gc.constant(x))
    assert none is None
    np.testing.assert_array_equal(zeros, np.zeros(5))
    np.testing.assert_array_equal(through, y)       # d(op(x) * x) = op(x) only


@pytest.mark.parametrize("backend", RUNS)
def test_mod_second_derivative_is_none(backend):
    """d mod(x, y) / dy = -floor(x / y): TF's second derivative through FloorDiv is None."""
    def fn(x, y):
        with gc.GradientTape() as outer:
            outer.watch([x, y])
            with gc.GradientTape() as inner:
                inner.watch([x, y])
                z = gc.mod(x, y)
            gx, gy = inner.gradient(z, [x, y])
            total = gc.reduce_sum(gx) + gc.reduce_sum(gy)
        return gx, gy, outer.gradient(total, [x, y])
    gx, gy, second = run(fn, backend, gc.constant([2.5, -1.0]), gc.constant([0.7, 0.7]))
    np.testing.assert_array_equal(gx, [1.0, 1.0])
    np.testing.assert_array_equal(gy, [-3.0, 2.0])
    assert second == [None, None]


@pytest.mark.parametrize("backend", RUNS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_and_relu6_give_no_gradient_at_nan(backend, dtype):
    """TF's ReluGrad / Relu6Grad pass the gradient only where x > 0 (and x < 6): 0 at NaN,
    where maximum(0, x) passed it on. TF's MaximumGrad / MinimumGrad do give a NaN operand
    the second operand the gradient when the compare is False (NaN anywhere): so
    maximum(0, NaN) gives it to the NaN, minimum(NaN, 6) to the 6; graphc's rules keep that."""
    x = np.array([nan, -1, 0, -0.0, 3, 6, 7, inf, -inf], dtype)

    def fn(x, y):
        with gc.GradientTape(persistent=True) as tape:
            tape.watch([x, y])
            outs = [gc.nn.relu(x), gc.nn.relu6(x), gc.maximum(0.0, y), gc.minimum(y, 6.0)]
        return [tape.gradient(o, x if i < 2 else y) for i, o in enumerate(outs)]
    relu, relu6, dmax, dmin = run(fn, backend, gc.constant(x),
                                  gc.constant(np.array([nan, 1], dtype)))
    check(relu, [0, 0, 0, 0, 1, 1, 1, 1, 0], dtype)
    check(relu6, [0, 0, 0, 0, 1, 0, 0, 0, 0], dtype)
    check(dmax, [1, 1], dtype)
    check(dmin, [0, 1], dtype)
