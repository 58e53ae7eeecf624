"""Elementwise ops with broadcasting: eager vs numpy, traced vs eager, TF dtype rules, errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphc as gc
from op_helpers import arrays, check, raises_both, out_shape, assert_same
from op_helpers import eager as eager_run, traced as traced_run

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _nonzero(y):
    return np.where(y == 0, 1, y).astype(y.dtype)


def _safe_int_exponent(y):
    return (np.abs(y) % 4).astype(y.dtype)


def _tf_floordiv(x, y):
    """TF's FloorDiv: floor(x / y) of the rounded quotient on floats (tf.math.floordiv(1.,
    0.1) is 10., numpy's floor_divide gives 9.), floored integer division on ints."""
    return np.floor(x / y) if x.dtype.kind == "f" else np.floor_divide(x, y)


# name -> (numpy reference, dtypes to try, how to make the second operand valid)
BINARY = {
    "add": (np.add, ["float32", "int32", "int64"], None),
    "subtract": (np.subtract, ["float64", "int32"], None),
    "multiply": (np.multiply, ["float32", "int64"], None),
    "divide": (np.true_divide, ["float32", "float64"], _nonzero),
    "floordiv": (_tf_floordiv, ["float32", "int32"], _nonzero),
    "mod": (np.mod, ["float64", "int32"], _nonzero),
    "pow": (np.power, ["int32"], _safe_int_exponent),
    "maximum": (np.maximum, ["float32", "int32"], None),
    "minimum": (np.minimum, ["float64", "int64"], None),
    "equal": (np.equal, ["float32", "int32", "bool"], None),
    "not_equal": (np.not_equal, ["int64", "bool"], None),
    "less": (np.less, ["float32", "int32"], None),
    "less_equal": (np.less_equal, ["float64"], None),
    "greater": (np.greater, ["int32"], None),
    "greater_equal": (np.greater_equal, ["float32"], None),
    "logical_and": (np.logical_and, ["bool"], None),
    "logical_or": (np.logical_or, ["bool"], None),
}
BINARY_CASES = [(n, d) for n, (_, ds, _) in BINARY.items() for d in ds]


@pytest.mark.parametrize("name,dtype", BINARY_CASES)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_binary_op_broadcasts_like_numpy(name, dtype, data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    x = data.draw(arrays(dtype, shape=st.just(shapes.input_shapes[0])))
    y = data.draw(arrays(dtype, shape=st.just(shapes.input_shapes[1])))
    np_fn, _, fix = BINARY[name]
    y = fix(y) if fix else y
    with np.errstate(all="ignore"):
        want = np.asarray(np_fn(x, y))
    check(lambda a, b: getattr(gc, name)(a, b), want, x, y, rtol=1e-6)


def test_float_pow_and_division_by_zero_follow_ieee():
    x = np.array([2.0, -1.0, 0.0, 4.0], np.float32)
    y = np.array([0.5, 0.5, 0.0, -1.0], np.float32)
    with np.errstate(all="ignore"):
        check(gc.pow, np.power(x, y), x, y)
        check(gc.divide, x / y, x, y)


UNARY = {
    "negative": (np.negative, ["float32", "int32"]),
    "abs": (np.abs, ["float64", "int64"]),
    "sign": (np.sign, ["float32", "int32"]),
    "square": (np.square, ["float32", "int64"]),
    "exp": (np.exp, ["float32"]), "log": (np.log, ["float64"]),
    "log1p": (np.log1p, ["float32"]), "sqrt": (np.sqrt, ["float32"]),
    "rsqrt": (lambda x: 1 / np.sqrt(x), ["float64"]),
    "sin": (np.sin, ["float32"]), "cos": (np.cos, ["float64"]), "tan": (np.tan, ["float32"]),
    "tanh": (np.tanh, ["float64"]), "floor": (np.floor, ["float32"]),
    "ceil": (np.ceil, ["float64"]), "round": (np.round, ["float32"]),
    "erf": (lambda x: _erf(x).astype(x.dtype), ["float64", "float32"]),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), ["float64"]),
    "logical_not": (np.logical_not, ["bool"]),
}
UNARY_CASES = [(n, d) for n, (_, ds) in UNARY.items() for d in ds]


@pytest.mark.parametrize("name,dtype", UNARY_CASES)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_unary_op_matches_numpy(name, dtype, data):
    x = data.draw(arrays(dtype))
    with np.errstate(all="ignore"):
        want = np.asarray(UNARY[name][0](x))
    check(lambda a: getattr(gc, name)(a), want, x, rtol=1e-6, atol=1e-7)


def test_round_returns_integers_unchanged_as_in_tf():
    # tf.math.round of an int tensor is the tensor itself (graphc raised TypeError)
    x = np.array([-7, 2**31 - 1, 0], np.int32)
    check(gc.round, x, x)
    check(gc.round, x.astype(np.int64) * 2**31, x.astype(np.int64) * 2**31)


def test_round_is_half_to_even_like_tf():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5], np.float32)
    check(gc.round, np.array([0, 2, 2, -0, -2], np.float32), x)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_where_broadcasts_three_ways(data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    c = data.draw(arrays("bool", shape=st.just(shapes.input_shapes[0])))
    x = data.draw(arrays("float32", shape=st.just(shapes.input_shapes[1])))
    y = data.draw(arrays("float32", shape=st.just(shapes.input_shapes[2])))
    check(gc.where, np.where(c, x, y), c, x, y)


@pytest.mark.parametrize("src", ["float32", "float64", "int32", "int64", "bool"])
@pytest.mark.parametrize("dst", ["float32", "float64", "int32", "int64", "bool"])
def test_cast_between_all_dtypes(src, dst):
    x = np.array([-2.7, -1.0, 0.0, 0.4, 3.9]).astype(src)
    check(lambda t: gc.cast(t, dst), x.astype(dst), x)


def test_clip_by_value():
    x = np.array([-5, 0, 3, 9], np.int32)
    check(lambda t: gc.clip_by_value(t, 0, 4), np.clip(x, 0, 4), x)
    x = np.array([[-1.0, 2.0], [0.5, 7.0]], np.float32)
    lo = np.array([0.0, 1.0], np.float32)
    check(lambda t, lo_: gc.clip_by_value(t, lo_, 3.0), np.minimum(np.maximum(x, lo), 3.0), x, lo)


def test_float_floordiv_is_floor_of_the_quotient_as_in_tf():
    # tf.math.floordiv gives inf, -inf, -0., -0., 10. here; numpy's floor_divide gives nan,
    # nan, -1., -1., 9. (it floors the exact quotient and is Python's // at the infinities)
    x = np.array([np.inf, -np.inf, -1.0, -0.0, 1.0], np.float32)
    y = np.array([2.0, 3.0, np.inf, 1.0, 0.1], np.float32)
    want = np.array([np.inf, -np.inf, -0.0, -0.0, 10.0], np.float32)
    for run in (eager_run, traced_run):
        got = run(gc.floordiv, x, y).numpy()
        np.testing.assert_array_equal(got, want)
        assert np.signbit(got[2:4]).all()


def test_clip_by_value_with_lo_above_hi_gives_lo_as_in_tf():
    # TF computes max(min(t, hi), lo): tf.clip_by_value([-1., .5, 2.], 1., 0.) is [1., 1., 1.]
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    check(lambda t: gc.clip_by_value(t, 1.0, 0.0), np.ones(3, np.float32), x)


# -- TF type rules -----------------------------------------------------------------------
def test_python_scalars_take_the_tensor_dtype():
    check(lambda t: t + 1, np.array([2, 3], np.int64), np.array([1, 2], np.int64))
    check(lambda t: 2.5 * t, np.array([2.5, 5.0], np.float64), np.array([1.0, 2.0]))
    check(lambda t: gc.maximum(t, 1), np.array([1.0, 2.0], np.float32),
          np.array([0.0, 2.0], np.float32))


def test_numpy_data_and_leading_python_scalars_take_the_op_dtype_as_in_tf():
    # TF: tf.constant([1., 4.]) * np.sqrt(2.0) and + np.ones(2) stay float32;
    # tf.add(7.0, 2) and tf.where(c, 1.0, 0) are float32 (the first value's dtype leads)
    x = np.array([1.0, 4.0], np.float32)
    check(lambda t: t * np.sqrt(2.0) + np.ones(2), x * np.float32(np.sqrt(2.0)) + 1, x)
    check(lambda t: np.array([1, 2]) + t, x + np.float32([1, 2]), x)
    check(lambda t: t + np.int64(3), np.array([4, 5], np.int32), np.array([1, 2], np.int32))
    check(lambda c: gc.where(c, 1.0, 0), np.array([1.0, 0.0], np.float32), np.array([True, False]))
    check(lambda t: gc.add(7.0, 2) + t, x + 9, x)
    # a conversion that would change the value raises (TF silently truncates or wraps)
    for bad in (lambda t: t + np.float64(2.5), lambda t: t * np.array([2**40]),
                lambda t: gc.add(7, 2.5) + t):
        raises_both(bad, TypeError, ["int32 tensor"], np.array([1, 2], np.int32))


def test_integer_true_division_gives_float64():
    check(gc.divide, np.array([0.5, -1.5]), np.array([1, -3], np.int32), np.int32(2))
    check(gc.floordiv, np.array([0, -2], np.int32), np.array([1, -3], np.int32), np.int32(2))
    check(gc.mod, np.array([1, 1], np.int32), np.array([1, -3], np.int32), np.int32(2))


# -- errors ------------------------------------------------------------------------------
F = np.zeros((2, 3), np.float32)
I = np.zeros((2, 3), np.int32)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "pow", "maximum",
                                  "equal", "less"])
def test_mixed_dtypes_name_both(name):
    raises_both(lambda a, b: getattr(gc, name)(a, b), TypeError,
                [name, "float32", "int32", "gc.cast"], F, I)


@pytest.mark.parametrize("name", ["add", "mod", "greater_equal", "logical_or"])
def test_incompatible_shapes_name_both(name):
    x = F > 0 if name == "logical_or" else F
    y = np.zeros(4, x.dtype)
    raises_both(lambda a, b: getattr(gc, name)(a, b), ValueError, [name, "[2,3]", "[4]"], x, y)


@pytest.mark.parametrize("fn,words", [
    (lambda t: gc.exp(gc.cast(t, gc.int32)), ["exp", "int32", "floating"]),
    (lambda t: gc.sqrt(gc.cast(t, gc.int64)), ["sqrt", "int64", "gc.cast"]),
    (lambda t: gc.logical_and(t, t), ["logical_and", "float32", "bool"]),
    (lambda t: gc.logical_not(t), ["logical_not", "float32"]),
    (lambda t: gc.less(t > 0, t > 0), ["less", "bool"]),
    (lambda t: gc.where(t, t, t), ["where", "condition", "float32"]),
    (lambda t: gc.where(t > 0, t, gc.cast(t, gc.int32)), ["where", "float32", "int32"]),
    (lambda t: gc.add(gc.cast(t, gc.int32), 1.5), ["add", "1.5", "int32"]),
    (lambda t: gc.negative(t > 0), ["negative", "bool"]),
])
def test_bad_dtypes_are_type_errors(fn, words):
    raises_both(fn, TypeError, words, F)


@pytest.mark.parametrize("fn,error,words", [
    (lambda t: gc.sigmoid(gc.cast(t, gc.int32)), TypeError, ["sigmoid", "int32"]),
    (lambda t: gc.nn.relu(t > 0), TypeError, ["relu", "bool"]),
    (lambda t: gc.nn.relu6(t > 0), TypeError, ["relu6", "bool"]),
    (lambda t: gc.clip_by_value(t, gc.zeros([4]), 1.0), ValueError,
     ["clip_by_value", "[2,3]", "[4]"]),
    (lambda t: gc.clip_by_value(gc.cast(t, gc.int32), 0.5, 2), TypeError,
     ["clip_by_value", "0.5", "int32"]),
    (lambda t: gc.clip_by_value(t[0], gc.zeros([4, 3]), 1.0), ValueError,
     ["clip_by_value", "[3]", "[4,3]"]),
    (lambda t: t + gc.zeros([2, -1]), ValueError, ["zeros", "negative"]),
    (lambda t: t + gc.ones([-2]), ValueError, ["ones", "negative"]),
    (lambda t: t + gc.random.normal([2, -1]), ValueError, ["random.normal", "negative"]),
    (lambda t: gc.range(0, 3, dtype=gc.bool), TypeError, ["range", "bool"]),
])
def test_composite_ops_name_themselves_in_errors(fn, error, words):
    """API.md: bad input to any op raises TypeError/ValueError naming the op -- the op the
    user called, not the primitive it is built from (sigmoid said 'exp:', relu 'maximum:',
    clip_by_value 'maximum:', zeros 'fill:'); and gc.range refuses dtype bool as TF does."""
    raises_both(fn, error, words, F)


# -- partially unknown shapes -----------------------------------------------------------
@pytest.mark.parametrize("fn,shape", [
    (lambda x: x + 1.0, (None, 3)),
    (lambda x: x * gc.ones([3]), (None, 3)),
    (lambda x: gc.expand_dims(x, 2) - gc.ones([1, 3, 4]), (None, 3, 4)),
    (lambda x: gc.maximum(x[:, :1], gc.zeros([5, 1, 3])), (5, None, 3)),
    (lambda x: gc.where(x > 0, x, gc.zeros([3])), (None, 3)),
    (lambda x: gc.cast(x, gc.int32) // 2, (None, 3)),
])
def test_unknown_dims_give_right_static_shape_and_values(fn, shape):
    spec = gc.TensorSpec([None, 3])
    assert out_shape(fn, spec) == shape
    f = gc.function(fn, input_signature=[spec], backend="numpy")
    for n in (1, 4):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3) - 3
        assert_same(f(x), fn(gc.constant(x)).numpy())


def test_dynamic_broadcast_mismatch_fails_at_run_time():
    f = gc.function(lambda a, b: a + b, backend="numpy",
                    input_signature=[gc.TensorSpec([None]), gc.TensorSpec([None])])
    assert_same(f(np.ones(3, np.float32), np.ones(1, np.float32)), np.full(3, 2, np.float32))
    with pytest.raises(ValueError):
        f(np.ones(3, np.float32), np.ones(2, np.float32))


def test_truediv_is_divide():
    check(gc.truediv, np.array([0.5, 1.5]), np.array([1, 3], np.int32), np.int32(2))


def test_dynamic_broadcast_mismatch_is_invalid_argument_naming_the_op():
    f = gc.function(lambda a, b: a * b, backend="numpy",
                    input_signature=[gc.TensorSpec([None]), gc.TensorSpec([None])])
    with pytest.raises(gc.errors.InvalidArgumentError, match="multiply"):
        f(np.ones(3, np.float32), np.ones(2, np.float32))
