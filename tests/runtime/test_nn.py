"""gc.nn: activations, softmax and losses vs numpy/plain-Python formulas, eager and traced."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from op_helpers import arrays, check, raises_both, out_shape, assert_same

_erf = np.vectorize(math.erf)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


REFERENCE = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.minimum(np.maximum(x, 0), 6),
    # TF's alpha is a float32 attr: its float64 leaky_relu(-100.) is -20.000000298023224
    "leaky_relu": lambda x: np.where(x > 0, x, float(np.float32(0.2)) * x),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "softplus": lambda x: np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0),
    "softmax": _softmax,
    "log_softmax": lambda x: np.log(_softmax(x)),
}


@pytest.mark.parametrize("name", sorted(REFERENCE))
@settings(max_examples=15, deadline=None)
@given(x=arrays("float64", min_dims=1, min_side=1))
def test_activation_matches_reference(name, x):
    want = np.asarray(REFERENCE[name](x)).astype(np.float64)
    check(lambda t: getattr(gc.nn, name)(t), want, x, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["relu", "relu6", "elu", "gelu", "sigmoid", "softplus",
                                  "softmax", "log_softmax"])
def test_float32_stays_float32(name):
    x = np.linspace(-8, 8, 12, dtype=np.float32).reshape(3, 4)
    want = np.asarray(REFERENCE[name](x.astype(np.float64))).astype(np.float32)
    check(lambda t: getattr(gc.nn, name)(t), want, x, rtol=2e-6, atol=1e-6)


def test_leaky_relu_alpha_is_float32_as_in_tf():
    x = np.array([-100.0, -1.0, 3.0])
    check(gc.nn.leaky_relu, np.array([-20.000000298023224, -0.20000000298023224, 3.0]), x,
          rtol=1e-15)


def test_leaky_relu_computes_integer_features_in_float32_like_tf():
    check(gc.nn.leaky_relu, np.array([-1.0, 3.0], np.float32), np.array([-5, 3], np.int32))


def test_relu_on_ints_keeps_int_dtype():
    x = np.array([-3, 0, 4, 9], np.int32)
    check(gc.nn.relu, np.array([0, 0, 4, 9], np.int32), x)
    check(gc.nn.relu6, np.array([0, 0, 4, 6], np.int32), x)


def test_keyword_arguments_as_in_tf():
    x = np.array([-2.0, 3.0], np.float32)
    check(lambda t: gc.nn.leaky_relu(features=t, alpha=0.5), np.array([-1.0, 3.0], np.float32),
          x)
    check(lambda t: gc.nn.softmax(logits=t, axis=0), _softmax(x, 0), x)
    check(lambda t: gc.nn.relu(features=t), np.array([0.0, 3.0], np.float32), x)


def test_gelu_approximate_is_the_tanh_form():
    x = np.linspace(-4, 4, 9)
    want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    check(lambda t: gc.nn.gelu(t, approximate=True), want, x, rtol=1e-12, atol=1e-12)
    assert not np.allclose(gc.nn.gelu(x).numpy(), want, rtol=1e-6, atol=0)


def test_extreme_inputs_stay_finite():
    x = np.array([-1000.0, 1000.0, 0.0], np.float32)
    check(gc.nn.softplus, np.array([0.0, 1000.0, np.log(2)], np.float32), x)
    check(gc.nn.sigmoid, np.array([0.0, 1.0, 0.5], np.float32), x)
    check(gc.nn.softmax, np.array([0.0, 1.0, 0.0], np.float32), x)
    check(gc.nn.log_softmax, np.array([-2000.0, 0.0, -1000.0], np.float32), x)
    check(gc.nn.elu, np.array([-1.0, 1000.0, 0.0], np.float32), x)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_softmax_axis_matches_numpy(data):
    x = data.draw(arrays("float64", min_dims=1, min_side=1))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    check(lambda t: gc.nn.softmax(t, axis=axis), _softmax(x, axis), x, rtol=1e-9, atol=1e-12)
    check(lambda t: gc.nn.log_softmax(t, axis=axis), np.log(_softmax(x, axis)), x,
          rtol=1e-9, atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_cross_entropies_match_numpy(data):
    logits = data.draw(arrays("float64", min_dims=1, min_side=1))
    classes = logits.shape[-1]
    labels = np.array(data.draw(st.lists(st.integers(0, classes - 1),
                                         min_size=int(np.prod(logits.shape[:-1])),
                                         max_size=int(np.prod(logits.shape[:-1])))),
                      np.int32).reshape(logits.shape[:-1])
    log_p = np.log(_softmax(logits))
    want = -np.take_along_axis(log_p, labels[..., None], -1)[..., 0]
    check(lambda y, x: gc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
          want, labels, logits, rtol=1e-9, atol=1e-9)
    dense = (labels[..., None] == np.arange(classes)).astype(np.float64)
    check(lambda y, x: gc.nn.softmax_cross_entropy_with_logits(labels=y, logits=x),
          want, dense, logits, rtol=1e-9, atol=1e-9)


def test_soft_labels_cross_entropy():
    logits = np.array([[1.0, 2.0, 3.0]], np.float32)
    labels = np.array([[0.2, 0.3, 0.5]], np.float32)
    want = -(labels * np.log(_softmax(logits))).sum(-1)
    check(lambda y, x: gc.nn.softmax_cross_entropy_with_logits(labels=y, logits=x), want,
          labels, logits)


def test_dense_labels_of_another_dtype_are_cast_to_the_logits_dtype_as_in_tf():
    # tf.nn.softmax_cross_entropy_with_logits casts labels to the logits' dtype: float64
    # int32 and bool one-hot labels with float32 logits give float32 losses (graphc raised)
    logits = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]], np.float32)
    onehot = np.array([[0, 0, 1], [1, 0, 0]], np.int32)
    want = -(onehot * np.log(_softmax(logits.astype(np.float64)))).sum(-1).astype(np.float32)
    for labels in (onehot, onehot.astype(np.float64), onehot.astype(np.int64), onehot > 0):
        check(lambda y, x: gc.nn.softmax_cross_entropy_with_logits(labels=y, logits=x), want,
              labels, logits)
    check(lambda x: gc.nn.softmax_cross_entropy_with_logits(labels=onehot.tolist(), logits=x),
          want, logits)


# -- errors ------------------------------------------------------------------------------
L = np.zeros((2, 3), np.float32)


@pytest.mark.parametrize("fn,exc,words", [
    (lambda x: gc.nn.softmax(gc.cast(x, gc.int32)), TypeError, ["softmax", "int32"]),
    (lambda x: gc.nn.gelu(gc.cast(x, gc.int32)), TypeError, ["gelu", "int32"]),
    (lambda x: gc.nn.softmax(x, axis=2), ValueError, ["softmax", "axis 2", "rank 2"]),
    (lambda x: gc.nn.log_softmax(x, axis=-3), ValueError, ["log_softmax", "axis -3"]),
    (lambda x: gc.nn.softmax_cross_entropy_with_logits(labels=x, logits=x, axis=5), ValueError,
     ["softmax_cross_entropy_with_logits", "axis 5"]),
    (lambda x: gc.nn.relu(x > 0), TypeError, ["relu", "bool"]),
    (lambda x: gc.nn.sparse_softmax_cross_entropy_with_logits(labels=gc.zeros([3], gc.int32),
                                                              logits=x),
     ValueError, ["sparse_softmax_cross_entropy_with_logits", "[3]", "[2,3]"]),
    (lambda x: gc.nn.sparse_softmax_cross_entropy_with_logits(labels=gc.zeros([2]), logits=x),
     TypeError, ["sparse_softmax_cross_entropy_with_logits", "float32", "labels"]),
    (lambda x: gc.nn.softmax_cross_entropy_with_logits(labels=gc.zeros([2, 2]), logits=x),
     ValueError, ["softmax_cross_entropy_with_logits", "[2,2]", "[2,3]"]),
])
def test_errors_name_op_and_shapes(fn, exc, words):
    raises_both(fn, exc, words, L)


# -- partially unknown shapes -----------------------------------------------------------
@pytest.mark.parametrize("fn,shape", [
    (lambda x: gc.nn.softmax(x), (None, 3)),
    (lambda x: gc.nn.log_softmax(x, axis=0), (None, 3)),
    (lambda x: gc.nn.gelu(x), (None, 3)),
    (lambda x: gc.nn.sparse_softmax_cross_entropy_with_logits(
        labels=gc.cast(x[:, 0], gc.int32), logits=x), (None,)),
    (lambda x: gc.nn.softmax_cross_entropy_with_logits(labels=gc.nn.softmax(x), logits=x),
     (None,)),
])
def test_unknown_dims_give_right_static_shape_and_values(fn, shape):
    spec = gc.TensorSpec([None, 3])
    assert out_shape(fn, spec) == shape
    f = gc.function(fn, input_signature=[spec], backend="numpy")
    for n in (1, 3):
        x = (np.arange(3 * n, dtype=np.float32).reshape(n, 3) % 3)
        assert_same(f(x), fn(gc.constant(x)).numpy(), rtol=1e-6)


def test_sparse_labels_with_unknown_class_count():
    f = gc.function(lambda y, x: gc.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                                 logits=x),
                    input_signature=[gc.TensorSpec([None], gc.int32),
                                     gc.TensorSpec([None, None])], backend="numpy")
    x = np.array([[0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]], np.float32)
    y = np.array([3, 1], np.int32)
    want = -np.log(_softmax(x))[[0, 1], [3, 1]]
    assert_same(f(y, x), want.astype(np.float32), rtol=1e-6)
