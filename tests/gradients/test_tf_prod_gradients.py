"""reduce_prod's gradient as TF 2.21's: the product of the other elements, never the product
divided by the element (which made [1, nan, 3] give NaN where TF gives 3), for any axes,
keepdims, float32/64, first and second derivatives, eagerly and in gc.function (numpy and
auto backends); and gc.math.cumprod, which it is built from, as tf.math.cumprod. Every
expected value is TF's (tf.GradientTape, eager), written as a literal."""
import functools

import numpy as np
import pytest

import graphc as gc
from tf_values import RUNS, first_and_second, run
from tf_values import check as _check

check = functools.partial(_check, signed_zeros=True)    # equal signs of zeros too

inf, nan = np.inf, np.nan
ROWS = [[1, nan, 3, 2], [inf, 1, -inf, 2], [-inf, 0, 5, 5], [0, 2, 3, 4], [0, 0, 3, 1],
        [inf, 0, 2, 1], [0, -0.0, 2, 1], [2, 3, 4, 0.5]]
# TF's reduce_prod(ROWS, axis=1), its gradient and the gradient of sum(gradient)
PROD = [nan, -inf, nan, 0, 0, nan, -0.0, 12]
GRAD = [[nan, 6, nan, nan], [-inf, -inf, inf, -inf], [0, -inf, nan, nan], [24, 0, 0, 0],
        [0, 0, 0, 0], [0, inf, nan, nan], [-0.0, 0, -0.0, -0.0], [6, 4, 3, 24]]
GRAD2 = [[nan, nan, nan, nan], [nan, nan, nan, nan], [nan, 0, nan, nan], [0, 12, 8, 6],
         [0, 0, 0, 0], [nan, 0, nan, nan], [0, 0, 0, 0], [15.5, 11, 8.5, 26]]


@pytest.mark.parametrize("backend", RUNS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_prod_gradient_is_the_product_of_the_others(backend, dtype):
    x = gc.constant(np.array(ROWS, dtype))
    y, g, g2 = run(first_and_second(lambda t: gc.reduce_prod(t, axis=1)), backend, x)
    check(y, PROD, dtype)
    check(g, GRAD, dtype)
    # TF's second derivative goes through cumprod's gradient, which divides with div_no_nan
    # (0 at a zero: [0, 2, 3, 4]'s first entry, though the true value is 2*(3*4+2*4+2*3))
    check(g2, GRAD2, dtype)
    # the same rows down axis 0 with keepdims
    y, g, g2 = run(first_and_second(lambda t: gc.reduce_prod(t, axis=0, keepdims=True)),
                   backend, gc.constant(np.array(ROWS, dtype).T))
    check(y, [PROD], dtype)
    check(g, np.array(GRAD).T, dtype)
    check(g2, np.array(GRAD2).T, dtype)


X3 = np.array([[[1, 2], [0, 3], [inf, 1]], [[2, 0.5], [4, -1], [1, 2]]])
# TF's values (float64) over several axes: adjacent, not adjacent, all
AXES = {
    (0, 2): ([2, -0.0, inf],
             [[[2, 1], [-12, -0.0], [2, inf]], [[1, 4], [-0.0, 0], [inf, inf]]],
             [[[6, 3.5], [0, -4], [nan, inf]], [[3.5, 8], [-3, 12], [inf, inf]]]),
    None: (nan,
           [[[nan, nan], [-inf, nan], [-0.0, nan]], [[nan, nan], [nan, nan], [nan, nan]]],
           [[[nan, nan], [0, nan], [nan, nan]], [[nan, nan], [nan, nan], [nan, nan]]]),
    (1, 2): ([nan, -8],
             [[[nan, nan], [inf, nan], [0, nan]], [[-4, -16], [-2, 8], [-8, -4]]],
             [[[nan, nan], [0, nan], [nan, nan]], [[-11, -20], [-6, 34], [-18, -11]]]),
    (0, 1): ([nan, -6],
             [[[nan, -3], [inf, -2], [0, -6]], [[nan, -12], [nan, 6], [nan, -3]]],
             [[[nan, -8.5], [0, -6], [nan, -14]], [[nan, -16], [nan, 26], [nan, -8.5]]]),
}


@pytest.mark.parametrize("backend", RUNS)
@pytest.mark.parametrize("axis", list(AXES), ids=str)
def test_prod_gradient_over_several_axes(backend, axis):
    want = AXES[axis]
    got = run(first_and_second(lambda t: gc.reduce_prod(t, axis=axis)), backend,
              gc.constant(X3))
    for g, w in zip(got, want, strict=True):
        check(g, w, np.float64)


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_prod_gradient_with_dims_unknown_while_tracing(backend):
    """The reduced axes are packed with a reshape to the run-time shape."""
    f = first_and_second(lambda t: gc.reduce_prod(t, axis=[0, 2]))
    spec = gc.TensorSpec([None, 3, None], gc.float64)
    _, g, g2 = run(f, backend, gc.constant(X3), input_signature=[spec])
    check(g, AXES[(0, 2)][1], np.float64)
    check(g2, AXES[(0, 2)][2], np.float64)


C = [[2.0, 0, 3, 4], [1, 2, 3, 4], [nan, 2, inf, 0]]
W = np.array([[1.0, 2, 3, 4]])
# TF's tf.math.cumprod(C, axis=1, exclusive, reverse) * W: value, gradient, second derivative
CUMPROD = {
    (False, False): ([[2, 0, 0, 0], [1, 4, 18, 96], [nan, nan, nan, nan]],
                     [[1, 0, 0, 0], [119, 59, 38, 24], [nan, nan, nan, 0]],
                     [[0, 0, 0, 0], [121, 90, 65, 44], [nan, nan, nan, 0]]),
    (False, True): ([[0, 0, 36, 16], [24, 48, 36, 16], [nan, nan, nan, 0]],
                    [[0, 0, 12, 13], [24, 36, 36, 31], [nan, nan, nan, 0]],
                    [[0, 0, 3, 3], [26, 33, 29, 24], [nan, nan, nan, 0]]),
    (True, False): ([[1, 4, 0, 0], [1, 2, 6, 24], [1, nan, nan, nan]],
                    [[2, 0, 0, 0], [32, 15, 8, 0], [nan, nan, nan, 0]],
                    [[0, 0, 0, 0], [23, 19, 12, 0], [nan, nan, nan, 0]]),
    (True, True): ([[0, 24, 12, 4], [24, 24, 12, 4], [nan, nan, 0, 4]],
                   [[0, 0, 8, 9], [0, 12, 16, 15], [nan, nan, nan, 0]],
                   [[0, 0, 2, 2], [0, 7, 8, 7], [nan, nan, nan, 0]]),
}


@pytest.mark.parametrize("backend", RUNS)
@pytest.mark.parametrize("exclusive,reverse", list(CUMPROD))
def test_cumprod_values_and_gradients_as_tf(backend, exclusive, reverse):
    f = first_and_second(lambda t: gc.math.cumprod(t, axis=1, exclusive=exclusive,
                                                   reverse=reverse) * W)
    for g, w in zip(run(f, backend, gc.constant(np.array(C))), CUMPROD[exclusive, reverse],
                    strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w, np.float64), rtol=1e-12)


@pytest.mark.parametrize("backend", RUNS)
def test_cumprod_integers_wrap_and_empty_axes(backend):
    f = lambda a, b, e: (gc.math.cumprod(a, axis=0), gc.math.cumprod(b),   # noqa: E731
                         gc.math.cumprod(e, axis=1, exclusive=True))
    a, b, e = run(f, backend, gc.constant(np.array([[2, 3], [4, 5]], np.int32)),
                  gc.constant(np.array([70000, 70000, 3], np.int32)),
                  gc.constant(np.zeros((0, 3), np.float32)))
    np.testing.assert_array_equal(a, np.array([[2, 3], [8, 15]], np.int32))   # TF's
    np.testing.assert_array_equal(b, np.array([70000, 605032704, 1815098112], np.int32))
    assert np.asarray(e).shape == (0, 3) and np.asarray(e).dtype == np.float32
    assert not hasattr(gc, "cumprod")            # tf.math.cumprod only, as in TF
