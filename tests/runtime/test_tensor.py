"""gc.Tensor: operators, conversions, repr, TF dtype rules, immutability and gc.as_dtype."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphc as gc
from op_helpers import arrays, check, assert_same

ARITH = [(operator.add, np.add), (operator.sub, np.subtract), (operator.mul, np.multiply),
         (operator.truediv, np.true_divide), (operator.floordiv, np.floor_divide),
         (operator.mod, np.mod), (operator.pow, np.power)]
COMPARE = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("op,np_op", ARITH, ids=lambda f: getattr(f, "__name__", ""))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_arithmetic_operators_match_numpy(op, np_op, data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    x = data.draw(arrays("float64", shape=st.just(shapes.input_shapes[0])))
    y = data.draw(arrays("float64", shape=st.just(shapes.input_shapes[1])))
    y = np.where(y == 0, 1.0, y)
    with np.errstate(all="ignore"):
        want = np.asarray(np_op(x, y))
    check(op, want, x, y)
    # reflected forms: numpy array / Python scalar on the left
    check(lambda b: op(x, b), want, y)
    with np.errstate(all="ignore"):
        check(lambda a: op(2.0, a), np.asarray(np_op(2.0, x)), x)


@pytest.mark.parametrize("op", COMPARE, ids=lambda f: f.__name__)
def test_comparisons_are_elementwise_bool(op):
    x = np.array([1, 2, 3], np.int32)
    y = np.array([3, 2, 1], np.int32)
    check(op, op(x, y), x, y)
    check(lambda a: op(a, 2), op(x, 2), x)


def test_unary_and_logical_operators():
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    check(operator.neg, -x, x)
    check(abs, np.abs(x), x)
    check(operator.pos, x, x)
    a = np.array([True, True, False])
    b = np.array([True, False, False])
    check(operator.and_, a & b, a, b)
    check(operator.or_, a | b, a, b)
    check(operator.invert, ~a, a)
    check(lambda p: p & True, a, a)


def test_matmul_operator():
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda a: a @ gc.transpose(a), m @ m.T, m)


def test_getitem_operator():
    m = np.arange(6, dtype=np.int32).reshape(2, 3)
    check(lambda a: a[1, ::-1], m[1, ::-1], m)


def test_python_conversions_eagerly():
    assert float(gc.constant(2.5)) == 2.5
    assert int(gc.constant(7)) == 7
    assert bool(gc.constant(True)) is True and bool(gc.constant(0)) is False
    assert [10, 20, 30][gc.constant(1)] == 20          # __index__
    assert len(gc.constant([[1, 2], [3, 4], [5, 6]])) == 3
    assert [int(r[0]) for r in gc.constant([[1, 2], [3, 4]])] == [1, 3]


def test_python_conversions_of_symbolic_tensors_are_refused():
    @gc.function(autograph=False)
    def f(x):
        if x > 0:
            return x
        return -x
    with pytest.raises(gc.errors.OperatorNotAllowedInGraphError, match="gc.cond") as info:
        f(gc.constant(1.0))
    assert "test_tensor.py:" in str(info.value)   # names the user's line
    with pytest.raises(TypeError, match="float"):   # (AutoGraph converts float(x): a cast)
        gc.function(lambda x: float(x), autograph=False)(gc.constant(1.0))


def test_numpy_interop():
    t = gc.constant([[1.0, 2.0]], gc.float64)
    a = np.asarray(t)
    assert a.dtype == np.float64 and a.shape == (1, 2)
    np.testing.assert_array_equal(a, [[1.0, 2.0]])
    assert np.asarray(t, dtype=np.int32).dtype == np.int32
    assert_same(np.ones(2) + t, np.array([[2.0, 3.0]]))   # ndarray + Tensor -> Tensor


def test_repr_shows_value_shape_and_dtype():
    r = repr(gc.constant([1, 2]))
    assert "shape=(2,)" in r and "dtype=int32" in r and "[1, 2]" in r
    r = repr(gc.constant(3.5))
    assert "shape=()" in r and "dtype=float32" in r and "3.5" in r
    assert str(gc.constant([5, 6])) == "[5 6]"
    seen = []
    gc.function(lambda x: seen.append(repr(x)) or x)(gc.constant([1.0]))
    assert "symbolic" in seen[0] and "float32" in seen[0] and "(1,)" in seen[0]


def test_metadata():
    t = gc.constant(np.zeros((2, 3), np.int64))
    assert t.shape == (2, 3) and t.ndim == 2 and t.dtype == gc.int64 and t.dtype is gc.int64
    with pytest.raises(TypeError, match="gc.constant"):
        gc.Tensor([1, 2])


def test_tf_type_rules():
    with pytest.raises(TypeError) as info:
        gc.constant(1) + gc.constant(1.0)
    assert "int32" in str(info.value) and "float32" in str(info.value)
    assert (gc.constant(1) + 1).dtype == gc.int32
    assert (gc.constant(1.0) + 1).dtype == gc.float32         # scalar takes the tensor's dtype
    assert (gc.constant(1.0, gc.float64) * 2).dtype == gc.float64
    assert (gc.constant(np.int64(3)) - 1).dtype == gc.int64
    half = gc.constant(1) / gc.constant(2)
    assert half.dtype == gc.float64 and float(half) == 0.5
    assert gc.constant(1.5).dtype == gc.float32 and gc.constant(True).dtype == gc.bool
    assert gc.constant(np.float64(1.5)).dtype == gc.float64   # numpy data keeps its dtype
    assert gc.constant(2**40).dtype == gc.int64
    with pytest.raises(TypeError, match="1.5"):
        gc.constant(1) + 1.5


def test_immutability():
    source = np.array([1.0, 2.0], np.float32)
    t = gc.constant(source)
    source[0] = 99.0                 # the tensor copied its input
    a = t.numpy()
    a[1] = -1.0                      # .numpy() is a copy
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(t), [1.0, 2.0])
    with pytest.raises((AttributeError, TypeError)):
        t.shape = (1, 2)


@pytest.mark.parametrize("form,want", [
    (gc.float32, gc.float32), ("float64", gc.float64), (np.int32, gc.int32),
    (np.dtype("int64"), gc.int64), ("bool", gc.bool), (bool, gc.bool), (np.bool_, gc.bool),
    (float, gc.float32), (int, gc.int32), (np.float64, gc.float64),
])
def test_as_dtype_forms(form, want):
    assert gc.as_dtype(form) is want


def test_as_dtype_rejects_unsupported_types():
    for bad in ("complex64", np.uint8, "float16", object):
        with pytest.raises(TypeError, match="float32, float64, int32, int64, bool"):
            gc.as_dtype(bad)


def test_dtype_equality_and_names():
    assert gc.float32 == "float32" and gc.float32 == np.float32 and gc.float32 != gc.float64
    assert repr(gc.int32) == "gc.int32" and str(gc.int64) == "int64"
    assert gc.float32.is_floating and gc.int64.is_integer and gc.bool.is_bool
    assert gc.float64.as_numpy_dtype is np.float64


def test_dtype_limits_and_sizes_as_tf():
    assert gc.int32.min == -2**31 and gc.int32.max == 2**31 - 1 and gc.int32.size == 4
    assert gc.int64.limits == (-2**63, 2**63 - 1) and gc.int64.size == 8
    assert gc.float32.max == np.finfo(np.float32).max and gc.float32.min == -gc.float32.max
    assert gc.float64.size == 8 and gc.bool.min is False and gc.bool.max is True
    assert gc.float32.base_dtype is gc.float32 and not gc.int32.is_unsigned
    assert gc.constant(gc.int32.max).dtype == gc.int32      # a limit fits its own dtype


@pytest.mark.parametrize("traced", [False, True])
def test_constant_shape_fills_or_reshapes_as_tf(traced):
    def make():
        return (gc.constant(0, shape=[2, 3]), gc.constant([1, 2, 3, 4], shape=[2, 2]),
                gc.constant([1.0, 2.0], gc.float64, [2, 1]), gc.constant([7], shape=3))
    out = gc.function(make)() if traced else make()
    np.testing.assert_array_equal(out[0].numpy(), np.zeros((2, 3), np.int32))
    np.testing.assert_array_equal(out[1].numpy(), [[1, 2], [3, 4]])
    assert out[2].dtype == gc.float64 and out[2].shape == (2, 1)
    np.testing.assert_array_equal(out[3].numpy(), [7, 7, 7])
    with pytest.raises(TypeError, match=r"3 elements .* cannot take shape \[2, 2\]"):
        gc.constant([1, 2, 3], shape=[2, 2])
    with pytest.raises(ValueError, match="negative dimension"):
        gc.constant(1, shape=[-1])


def test_comparing_with_none_is_a_python_bool_as_tf():
    t = gc.constant([1, 2])
    assert (t == None) is False and (t != None) is True       # noqa: E711
    f = gc.function(lambda x: x * 2 if x != None else x)   # noqa: E711
    np.testing.assert_array_equal(f(t).numpy(), [2, 4])
    np.testing.assert_array_equal((t == 2).numpy(), [False, True])


def test_operator_eq_of_shapes_that_cannot_broadcast_is_false_as_tf():
    # TF 2.21: tf.constant([1, 2, 3]) == tf.constant([1, 2]) is a scalar False (and != True),
    # eagerly and in tf.function; tf.equal raises, as gc.equal does
    a, b = gc.constant([1, 2, 3]), gc.constant([1, 2])
    f = gc.function(lambda x, y: (x == y, x != y, x == [1, 2],
                                  np.ones((3, 2)) == gc.cast(x, gc.float64)[:, None]),
                    backend="numpy")
    for eq, ne, eq_list, eq_np in (((a == b), (a != b), (a == [1, 2]),
                                    np.ones((3, 2)) == gc.cast(a, gc.float64)[:, None]), f(a, b)):
        assert eq.dtype == gc.bool and eq.shape == () and not bool(eq)
        assert ne.shape == () and bool(ne) and eq_list.shape == () and not bool(eq_list)
        assert eq_np.shape == (3, 2)                        # broadcastable: elementwise
    assert not bool(gc.ones([2, 3]) == gc.ones([3, 2]))
    assert not bool(gc.ones([2, 3]) == np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="equal: incompatible shapes"):
        gc.equal(a, b)
    with pytest.raises(TypeError, match="different dtypes"):      # TF raises for dtypes too
        gc.constant([1, 2, 3]) == gc.constant([1.0, 2.0])
    # with None dims the shapes are not decided while tracing: the run-time error stays
    g = gc.function(lambda x, y: x == y, backend="numpy",
                    input_signature=[gc.TensorSpec([None], gc.int32)] * 2)
    with pytest.raises(gc.errors.InvalidArgumentError, match="equal"):
        g(a, b)
    h = gc.function(lambda x, y: x == y, backend="numpy",       # decided by the static 3 vs 2
                    input_signature=[gc.TensorSpec([None, 3], gc.int32),
                                     gc.TensorSpec([None, 2], gc.int32)])
    assert not bool(h(np.ones((1, 3), np.int32), np.ones((1, 2), np.int32)))


def test_numpy_functions_on_concrete_tensors_as_tf_eager_tensors():
    t = gc.constant([1.0, 4.0])
    assert np.sum(t) == 5.0 and np.max(t) == 4.0 and np.mean(t) == 2.5
    np.testing.assert_array_equal(np.sqrt(t), [1.0, 2.0])
    np.testing.assert_array_equal(np.isnan(gc.constant([np.nan, 1.0])), [True, False])
    assert np.max(np.abs(t - np.array([1.0, 3.0], np.float32))) == 1.0
    acc = np.zeros(2, np.float32)
    acc += t                                   # into the caller's array
    np.testing.assert_array_equal(acc, [1.0, 4.0])
    with pytest.raises(TypeError, match="gc.Tensor is immutable"):
        np.add(np.ones(2, np.float32), 1, out=t)


def test_numpy_functions_and_operators_on_variables_as_on_tensors():
    """A gc.Variable is usable wherever a tensor is (API.md), numpy's ufuncs included, as
    with TF variables: np.exp(v) / np.max(v) / np.isnan(v) raised 'operand Variable does not
    support ufuncs' while np.sum(t) and np.exp(t) worked on tensors."""
    v = gc.Variable([1.0, 4.0])
    assert np.max(v) == 4.0 and np.sum(v) == 5.0
    np.testing.assert_array_equal(np.sqrt(v), [1.0, 2.0])
    np.testing.assert_array_equal(np.isnan(v), [False, False])
    np.testing.assert_array_equal(np.abs(v), [1.0, 4.0])
    for got, want in [(np.ones(2, np.float32) + v, [2.0, 5.0]), (np.add(v, v), [2.0, 8.0]),
                      (np.full(2, 2.0, np.float32) < v, [False, True])]:
        assert type(got) is gc.Tensor
        np.testing.assert_array_equal(got.numpy(), want)
    v.assign([9.0, 16.0])
    np.testing.assert_array_equal(np.sqrt(v), [3.0, 4.0])          # the current value
    with pytest.raises(TypeError, match="v.assign"):
        np.exp(np.ones(2, np.float32), out=v)


def test_numpy_operators_with_a_tensor_stay_tensor_ops():
    t = gc.constant([1.0, 4.0])
    for got, want in [(np.ones(2, np.float32) + t, [2.0, 5.0]),
                      (np.float32(2) * t, [2.0, 8.0]),
                      (np.full(2, 2.0, np.float32) < t, [False, True]),
                      (np.array([1, 6], np.int32) ^ gc.constant([3, 3]), [2, 5])]:
        assert type(got) is gc.Tensor
        np.testing.assert_array_equal(got.numpy(), want)
    # numpy data adopts the tensor's dtype as in TF (np.ones(2) + tf.constant([1., 4.]) is a
    # float32 [2., 5.]), never numpy's promotion to float64; a value it would change raises
    got = np.ones(2) + t
    assert got.dtype == gc.float32 and got.numpy().tolist() == [2.0, 5.0]
    with pytest.raises(TypeError, match="numpy value .*int32 tensor.*fractional"):
        np.float64(2.5) * gc.constant([1, 2])   # TF would truncate 2.5 to 2: never silently
    f = gc.function(lambda x: np.ones(2, np.float32) * x + 1.0)
    np.testing.assert_array_equal(f(t).numpy(), [2.0, 5.0])
    with pytest.raises(gc.errors.OperatorNotAllowedInGraphError):
        gc.function(lambda x: np.exp(x))(t)    # numpy functions are not converted


def test_format_spec_formats_the_value():
    assert f"{gc.constant(1.5):.2f}" == "1.50" and f"{gc.constant(3):4d}" == "   3"
    assert f"{gc.constant([1.0, 2.0])}" == "[1. 2.]" and "{:>4}".format(gc.constant(7)) == "   7"
    seen = []
    gc.function(lambda x: seen.append(f"{x}") or x)(gc.constant(1.0))
    assert "symbolic" in seen[0]                # while tracing: no value to format


def test_python_ints_beyond_int64_are_an_out_of_range_error():
    for value in (-2**63 - 1, [1, 2**64], 2**63):
        with pytest.raises(ValueError, match="out of range|out of the int64 range"):
            gc.constant(value)
    with pytest.raises(TypeError, match="string data"):
        gc.constant([1, "a"])
