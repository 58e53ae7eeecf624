"""gc.math, gc.linalg, gc.norm, gc.clip_by_norm and gc.clip_by_global_norm as TF 2.21's:
values, dtypes, gradients (at special points too) and errors, eagerly and compiled (numpy
and auto backends). TF's results are written as literals: the tests do not import TF."""
import numpy as np
import pytest

import graphc as gc
from tf_extras_helpers import agree, grad_agrees

INF, NAN = np.inf, np.nan
M = np.array([[3, -4], [1, 2]], np.float32)
SPECIAL = np.array([1, NAN, INF, -INF, 0], np.float32)
Y = np.array([[1, 2], [3, 5]], np.float32)

# every public name of tf.math / tf.linalg in TF 2.21 that gc.math / gc.linalg may carry
TF_MATH = set("""abs add add_n argmax argmin ceil cos cumprod cumsum divide divide_no_nan equal erf
exp floor floordiv floormod greater greater_equal is_finite is_inf is_nan less less_equal log
log1p log_sigmoid log_softmax logical_and logical_not logical_or logical_xor maximum minimum
mod multiply negative not_equal pow reciprocal reduce_all reduce_any reduce_euclidean_norm
reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_std reduce_sum
reduce_variance round rsqrt sigmoid sign sin softmax softplus sqrt square squared_difference
subtract tan tanh truediv top_k segment_sum segment_mean unsorted_segment_sum
unsorted_segment_max""".split())
TF_LINALG = {"matmul", "tensordot", "eye", "norm", "global_norm", "matrix_transpose"}


def test_namespaces_hold_only_tf_names():
    assert set(gc.math.__all__) == TF_MATH
    assert set(gc.linalg.__all__) == TF_LINALG
    for name in TF_MATH:
        assert callable(getattr(gc.math, name))
    assert gc.math.reduce_sum is gc.reduce_sum and gc.linalg.matmul is gc.matmul
    assert not hasattr(gc, "is_nan") and not hasattr(gc, "reduce_variance")   # tf.math only


# -- elementwise ------------------------------------------------------------------------
def test_is_nan_is_inf_is_finite_as_tf():
    agree(gc.math.is_nan, np.array([False, True, False, False, False]), SPECIAL)
    agree(gc.math.is_inf, np.array([False, False, True, True, False]), SPECIAL)
    agree(gc.math.is_finite, np.array([True, False, False, False, True]), SPECIAL)
    agree(gc.math.is_nan, np.array([False, True]), np.array([2.0, NAN]))      # float64


@pytest.mark.parametrize("name", ["is_nan", "is_inf", "is_finite", "log_sigmoid",
                                  "reduce_variance", "reduce_std"])
def test_float_only_ops_refuse_integers_as_tf(name):
    # TF: InvalidArgumentError (is_*, log_sigmoid) / TypeError (reduce_variance, reduce_std)
    with pytest.raises(TypeError, match=name):
        getattr(gc.math, name)(gc.constant([1, 2]))


def test_divide_no_nan_as_tf():
    agree(gc.math.divide_no_nan, np.float32([0, 0, 0, 0, 0.5]),
          np.float32([1, 0, NAN, INF, 1]), np.float32([0, 0, 0, 0, 2]))
    agree(gc.math.divide_no_nan, np.float32([NAN]), np.float32([1]), np.float32([NAN]))
    agree(gc.math.divide_no_nan, np.float64([0, 1]), np.int32([1, 2]), np.int32([0, 2]))
    # TF's gradients are 0 where y == 0, for x and for y
    grad_agrees(lambda v: gc.math.divide_no_nan(v, gc.constant([0., 2.])),
                np.float32([1, 3]), [0, 0.5])
    grad_agrees(lambda v: gc.math.divide_no_nan(gc.constant([1., 3.]), v),
                np.float32([0, 2]), [0, -0.75])


def test_squared_difference_as_tf():
    agree(gc.math.squared_difference, np.int32([9, 9]), np.int32([1, 5]), np.int32([4, 2]))
    grad_agrees(lambda v: gc.math.squared_difference(v, gc.constant([4., 2.])),
                np.float32([1, 5]), [-6, 6])
    with pytest.raises(TypeError, match="squared_difference"):
        gc.math.squared_difference(gc.constant([True]), gc.constant([False]))


def test_log_sigmoid_as_tf_far_out_too():
    x = np.float32([-200, -30, -1, 0, 2, 50, 200])
    want = np.float32([-200, -30, -1.31326162815094, -0.6931471824645996,
                       -0.12692800164222717, -1.9287498933537385e-22, -0.0])
    agree(gc.math.log_sigmoid, want, x)
    grad_agrees(gc.math.log_sigmoid, x, [1, 1, 0.7310585975646973, 0.5, 0.11920291930437088,
                                         1.9287498933537385e-22, 0], rtol=2e-6)


def test_other_math_names_as_tf():
    agree(gc.math.reciprocal, np.float32([0.5, INF, -0.25]), np.float32([2, 0, -4]))
    agree(gc.math.floormod, np.int32([2, -2]), np.int32([-7, 7]), np.int32([3, -3]))
    agree(lambda m: gc.math.reduce_euclidean_norm(m, axis=1),
          np.float32([5.0, 2.2360680103302]), M)


# -- reduce_variance / reduce_std -------------------------------------------------------
def test_reduce_variance_and_std_as_tf():
    agree(gc.math.reduce_variance, np.float32(2.1875), Y)
    agree(lambda y: gc.math.reduce_variance(y, axis=1, keepdims=True),
          np.float32([[0.25], [1.0]]), Y)
    agree(lambda y: gc.math.reduce_std(y, axis=0), np.float32([1.0, 1.5]), Y)
    agree(gc.math.reduce_variance, np.float32(NAN), np.float32([1, INF]))
    agree(gc.math.reduce_std, np.float32(NAN), np.zeros(0, np.float32))
    grad_agrees(gc.math.reduce_variance, Y, [[-0.875, -0.375], [0.125, 1.125]])
    grad_agrees(gc.math.reduce_std, Y, [[-0.295803964138031, -0.1267731487751007],
                                        [0.04225769639015198, 0.38031941652297974]])
    grad_agrees(gc.math.reduce_std, np.ones(3, np.float32), [NAN] * 3)   # TF: NaN at var 0
    with pytest.raises(ValueError, match="reduce_variance"):
        gc.math.reduce_variance(gc.constant(Y), axis=2)


# -- norm -------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, want", [
    (dict(), np.float32(5.4772257804870605)),
    (dict(axis=0), np.float32([3.1622776985168457, 4.4721360206604])),
    (dict(axis=-1, keepdims=True), np.float32([[5.0], [2.2360680103302]])),
    (dict(keepdims=True), np.float32([[5.4772257804870605]])),
    (dict(ord=1), np.float32(10)),
    (dict(ord=1, axis=1), np.float32([7, 3])),
    (dict(ord=INF), np.float32(4)),
    (dict(ord=INF, axis=0), np.float32([3, 4])),
    (dict(ord=2, axis=1), np.float32([5.0, 2.2360680103302])),
    (dict(ord=3, axis=1), np.float32([4.497941493988037, 2.0800838470458984])),
    (dict(ord=0.5, axis=1), np.float32([13.928203582763672, 5.828427791595459])),
    (dict(ord="fro", axis=[0, 1]), np.float32(5.4772257804870605)),
    (dict(ord=1, axis=[0, 1]), np.float32(6)),          # max column sum
    (dict(ord=INF, axis=[0, 1]), np.float32(7)),        # max row sum
    (dict(ord=1, axis=[-1, -2]), np.float32(7)),
    (dict(ord=1, axis=(0, 1), keepdims=True), np.float32([[6]])),
])
def test_norm_values_as_tf(kwargs, want):
    agree(lambda m: gc.norm(m, **kwargs), want, M, rtol=2e-6)
    agree(lambda m: gc.linalg.norm(m, **kwargs), want, M, rtol=2e-6)


def test_norm_of_ints_with_ord_1_stays_int_as_tf():
    agree(lambda v: gc.norm(v, ord=1), np.int32(7), np.int32([3, -4]))
    with pytest.raises(TypeError, match="norm"):        # TF: euclidean norm of int32 fails
        gc.norm(gc.constant([3, 4]))


def test_norm_gradients_as_tf():
    grad_agrees(gc.norm, M, [[0.547722578048706, -0.7302967309951782],
                             [0.18257418274879456, 0.3651483654975891]])
    grad_agrees(gc.norm, np.zeros(2, np.float32), [NAN, NAN])        # TF: NaN at 0
    grad_agrees(lambda v: gc.norm(v, ord=1), np.float32([0, 2, -1]), [0, 1, -1])
    grad_agrees(lambda v: gc.norm(v, ord=INF), np.float32([0, 2, -2]), [0, 0.5, -0.5])
    grad_agrees(lambda v: gc.norm(v, ord=3), np.float32([0, 2, -1]),
                [0, 0.9244818091392517, -0.23112045228481293], rtol=2e-6)


@pytest.mark.parametrize("kwargs, words", [
    (dict(ord=0, axis=1), "supported vector norm"),
    (dict(ord=-1, axis=1), "supported vector norm"),
    (dict(ord="fro"), "supported vector norm"),
    (dict(ord=2, axis=[0, 1]), "SVD"),                  # TF: an SVD; graphc has none
    (dict(axis=[0, 1, 0]), "pair of distinct ints"),
    (dict(axis=[0, 0]), "pair of distinct ints"),
    (dict(axis=2), "out of range"),
])
def test_norm_errors_as_tf(kwargs, words):
    with pytest.raises(ValueError, match=words):
        gc.norm(gc.constant(M), **kwargs)


# -- clip_by_norm / clip_by_global_norm -------------------------------------------------
C = np.float32([[3, 4], [0, 0]])


def test_clip_by_norm_as_tf():
    agree(lambda t: gc.clip_by_norm(t, 2.0), np.float32([[1.2, 1.6], [0, 0]]), C)
    agree(lambda t: gc.clip_by_norm(t, 10.0), C, C)
    agree(lambda t: gc.clip_by_norm(t, 2.0, axes=[1]), np.float32([[1.2, 1.6], [0, 1]]),
          np.float32([[3, 4], [0, 1]]))
    agree(lambda t: gc.clip_by_norm(t, -1.0), np.zeros((2, 2), np.float32), C)  # TF: clip 0
    agree(lambda t: gc.clip_by_norm(t, gc.constant([1.0, 2.0])),
          np.float32([[0.6, 1.6], [0, 0]]), C)
    agree(lambda t: gc.clip_by_norm(t, 1.0), np.float32([NAN, 0]), np.float32([INF, 1]))
    grad_agrees(lambda t: gc.clip_by_norm(t, 2.0), C,
                [[0.06399998068809509, -0.04800000786781311], [0.4, 0.4]], rtol=1e-5)
    grad_agrees(lambda t: gc.clip_by_norm(t, 2.0), np.zeros(2, np.float32), [1, 1])  # TF's guard
    with pytest.raises(TypeError, match="clip_by_norm"):
        gc.clip_by_norm(gc.constant([3, 4]), 2)


def test_clip_by_global_norm_as_tf():
    a, b = np.float32([3, 0]), np.float32([[4]])
    agree(lambda x, y: gc.clip_by_global_norm([x, None, y], 1.0),
          ([np.float32([0.6, 0]), None, np.float32([[0.8]])], np.float32(5)), a, b)
    agree(lambda x, y: gc.clip_by_global_norm((x, y), 10.0), ([a, b], np.float32(5)), a, b)
    agree(lambda x, y: gc.clip_by_global_norm([x, y], 1.0),        # TF: inf norm -> all NaN
          ([np.float32([NAN, NAN]), np.float32([[NAN]])], np.float32(INF)),
          np.float32([INF, 1]), b)
    agree(lambda x: gc.clip_by_global_norm([x], 1.0, use_norm=gc.constant(10.0)),
          ([np.float32([0.3, 0])], np.float32(10)), a)
    out, n = gc.clip_by_global_norm([], 1.0)
    assert out == [] and n.dtype == gc.float32 and float(n) == 0.0
    # the scale depends on the tensors: TF's gradient flows through the global norm
    grad_agrees(lambda x: gc.clip_by_global_norm([x], 1.0)[0][0] * gc.constant([1., 2.]),
                np.float32([3, 4]), [-0.06399999558925629, 0.04800000786781311], rtol=1e-5)
    grad_agrees(lambda x: gc.clip_by_global_norm([x], 1.0)[0][0] * gc.constant([1., 2.]),
                np.float32([0.3, 0.4]), [1, 2])


def test_clip_by_global_norm_errors_as_tf():
    with pytest.raises(TypeError, match="sequence"):
        gc.clip_by_global_norm(gc.constant([1.0]), 1.0)
    with pytest.raises(TypeError, match="clip_by_global_norm"):     # TF: ints refused
        gc.clip_by_global_norm([gc.constant([3, 4])], 1.0)
    with pytest.raises(TypeError):                                  # TF: float32 with float64
        gc.clip_by_global_norm([gc.constant([1.0]), gc.constant([1.0], gc.float64)], 1.0)


def test_global_norm_and_linalg_helpers_as_tf():
    agree(lambda x, y: gc.linalg.global_norm([x, None, y]), np.float32(5),
          np.float32([3, 0]), np.float32([[4]]))
    agree(lambda: gc.linalg.eye(2, 3, batch_shape=[2]), np.broadcast_to(np.eye(2, 3, dtype=
          np.float32), (2, 2, 3)))
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    agree(gc.linalg.matrix_transpose, x.transpose(0, 2, 1), x)
