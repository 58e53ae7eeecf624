"""Shape ops: eager vs numpy, traced vs eager, every error path, and None-dim static shapes."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from op_helpers import arrays, check, raises_both, out_shape, assert_same


def _factor_shapes(n):
    """All 2-D shapes with n elements, plus ones with a -1."""
    out = []
    for a in range(1, n + 1):
        if n % a == 0:
            out += [[a, n // a], [a, -1], [-1, n // a]]
    return out or [[0], [0, 5]]


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_reshape_matches_numpy(data):
    x = data.draw(arrays("float32"))
    target = data.draw(st.sampled_from(_factor_shapes(x.size) + [[-1]]))
    check(lambda t: gc.reshape(t, target), x.reshape(target), x)


def test_reshape_with_tensor_shapes():
    x = np.arange(6, dtype=np.int32)
    check(lambda t: gc.reshape(t, gc.constant([3, 2])), x.reshape(3, 2), x)
    check(lambda t: gc.reshape(t, [gc.size(t) // 2, -1]), x.reshape(3, 2), x)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_transpose_matches_numpy(data):
    x = data.draw(arrays("int32"))
    perm = data.draw(st.permutations(list(range(x.ndim))))
    check(lambda t: gc.transpose(t, perm), np.transpose(x, perm), x)
    check(lambda t: gc.transpose(t), x.T, x)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_expand_dims_and_squeeze_match_numpy(data):
    x = data.draw(arrays("float32", max_side=2))
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    check(lambda t: gc.expand_dims(t, axis), np.expand_dims(x, axis), x)
    check(lambda t: gc.squeeze(t), np.squeeze(x), x)
    ones = tuple(i for i, d in enumerate(x.shape) if d == 1)
    if ones:
        check(lambda t: gc.squeeze(t, ones[-1]), np.squeeze(x, ones[-1]), x)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_concat_stack_unstack_match_numpy(data):
    x = data.draw(arrays("float32", min_dims=1))
    y = data.draw(arrays("float32", shape=st.just(x.shape)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    check(lambda a, b: gc.concat([a, b, a], axis), np.concatenate([x, y, x], axis), x, y)
    saxis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    check(lambda a, b: gc.stack([a, b], saxis), np.stack([x, y], saxis), x, y)
    check(lambda a: gc.unstack(a, axis=axis), list(np.moveaxis(x, axis, 0)), x)


def test_stack_of_python_numbers_and_tensors():
    check(lambda t: gc.stack([t, 2.0, 3.0]), np.array([1, 2, 3], np.float32),
          np.float32(1.0))
    check(lambda t: gc.convert_to_tensor([[t, 1], [2, 3]]), np.array([[5, 1], [2, 3]], np.int32),
          np.int32(5))


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_gather_matches_numpy(data):
    x = data.draw(arrays("float32", min_dims=1, min_side=1))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=5)), np.int64)
    check(lambda a, i: gc.gather(a, i, axis=axis), np.take(x, idx, axis=axis), x, idx)


def test_one_hot_matches_numpy():
    idx = np.array([[0, 2], [3, -1]], np.int32)   # 3 and -1 are out of range: all-zero rows
    want = (idx[..., None] == np.arange(3)).astype(np.float32)
    check(lambda i: gc.one_hot(i, 3), want, idx)
    check(lambda i: gc.one_hot(i, 3, axis=0), np.moveaxis(want, -1, 0), idx)
    check(lambda i: gc.one_hot(i, 3, on_value=5, off_value=-1),
          np.where(want > 0, 5, -1).astype(np.int32), idx)
    check(lambda i: gc.one_hot(i, 3, dtype=gc.float64), want.astype(np.float64), idx)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_shape_size_broadcast_tile_match_numpy(data):
    x = data.draw(arrays("int64"))
    check(lambda t: gc.shape(t), np.array(x.shape, np.int32), x)
    check(lambda t: gc.size(t), np.array(x.size, np.int32), x)
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = lead + [data.draw(st.integers(1, 3)) if d == 1 else d for d in x.shape]
    check(lambda t: gc.broadcast_to(t, target), np.broadcast_to(x, target), x)
    reps = data.draw(st.lists(st.integers(0, 3), min_size=x.ndim, max_size=x.ndim))
    check(lambda t: gc.tile(t, reps), np.tile(x, reps), x)


def test_zeros_like_and_fill_with_dynamic_shapes():
    f = gc.function(lambda x: (gc.zeros_like(x), gc.ones([gc.shape(x)[0], 2], gc.int32),
                               gc.fill([gc.shape(x)[1]], 7.0)),
                    input_signature=[gc.TensorSpec([None, 3])], backend="numpy")
    assert [tuple(o.shape) for o in f.get_concrete_function().outputs] == [
        (None, 3), (None, 2), (None,)]
    z, o, s = f(np.ones((4, 3), np.float32))
    assert_same(z, np.zeros((4, 3), np.float32))
    assert_same(o, np.ones((4, 2), np.int32))
    assert_same(s, np.full((3,), 7.0, np.float32))


# -- errors ------------------------------------------------------------------------------
X23 = np.zeros((2, 3), np.float32)


@pytest.mark.parametrize("fn,exc,words", [
    (lambda t: gc.reshape(t, [4, 2]), ValueError, ["reshape", "[2,3]", "[4,2]"]),
    (lambda t: gc.reshape(t, [4, -1]), ValueError, ["reshape", "[2,3]", "[4,-1]"]),
    (lambda t: gc.reshape(t, [-1, -1]), ValueError, ["reshape", "one -1"]),
    (lambda t: gc.reshape(t, [2.5, 2]), TypeError, ["reshape", "2.5"]),
    (lambda t: gc.transpose(t, [0, 0]), ValueError, ["transpose", "[0, 0]", "[2,3]"]),
    (lambda t: gc.expand_dims(t, 3), ValueError, ["expand_dims", "axis 3"]),
    (lambda t: gc.squeeze(t, 0), ValueError, ["squeeze", "axis 0", "[2,3]"]),
    (lambda t: gc.concat([t, gc.transpose(t)], 0), ValueError, ["concat", "[2,3]", "[3,2]"]),
    (lambda t: gc.concat([t, gc.cast(t, gc.int32)], 0), TypeError,
     ["concat", "float32", "int32"]),
    (lambda t: gc.concat([t, t], 2), ValueError, ["concat", "axis 2"]),
    (lambda t: gc.stack([t, gc.transpose(t)]), ValueError, ["stack", "[2,3]", "[3,2]"]),
    (lambda t: gc.stack([t, gc.cast(t, gc.int64)]), TypeError, ["stack", "float32", "int64"]),
    (lambda t: gc.unstack(t, axis=-3), ValueError, ["unstack", "axis -3"]),
    (lambda t: gc.unstack(t, num=3), ValueError, ["unstack", "[2,3]", "3 pieces"]),
    (lambda t: gc.gather(t, [0.5]), TypeError, ["gather", "float32", "integer"]),
    (lambda t: gc.gather(t, [0], axis=2), ValueError, ["gather", "axis 2"]),
    (lambda t: gc.one_hot(t, 3), TypeError, ["one_hot", "float32"]),
    (lambda t: gc.broadcast_to(t, [3, 3]), ValueError, ["broadcast_to", "[2,3]", "[3,3]"]),
    (lambda t: gc.broadcast_to(t, [3]), ValueError, ["broadcast_to", "[2,3]", "[3]"]),
    (lambda t: gc.broadcast_to(t, [2, -3]), ValueError, ["broadcast_to", "negative"]),
    (lambda t: gc.tile(t, [2]), ValueError, ["tile", "[2]", "[2,3]"]),
    (lambda t: gc.shape(t, out_type=gc.float32), TypeError, ["shape", "float32"]),
])
def test_errors_name_op_and_shapes(fn, exc, words):
    raises_both(fn, exc, words, X23)


def test_gather_out_of_range_is_invalid_argument():
    raises_both(lambda t: gc.gather(t, [0, 5]), gc.errors.InvalidArgumentError,
                ["gather", "index 5", "[0, 2)"], X23)


def test_runtime_shape_mismatch_in_compiled_function():
    f = gc.function(lambda x: gc.reshape(x, [4, -1]), input_signature=[gc.TensorSpec([None, 3])],
                    backend="numpy")
    assert_same(f(np.zeros((4, 3), np.float32)), np.zeros((4, 3), np.float32))
    with pytest.raises(gc.errors.InvalidArgumentError, match="reshape"):
        f(np.zeros((3, 3), np.float32))


# -- partially unknown shapes -----------------------------------------------------------
SPEC = gc.TensorSpec([None, 3])


@pytest.mark.parametrize("fn,shape", [
    (lambda x: gc.reshape(x, [-1]), (None,)),
    (lambda x: gc.reshape(x, [-1, 6]), (None, 6)),
    (lambda x: gc.reshape(x, [gc.shape(x)[0], 3, 1]), (None, 3, 1)),
    (lambda x: gc.transpose(x), (3, None)),
    (lambda x: gc.expand_dims(x, 1), (None, 1, 3)),
    (lambda x: gc.squeeze(gc.expand_dims(x, 0), 0), (None, 3)),
    (lambda x: gc.concat([x, x], 0), (None, 3)),
    (lambda x: gc.concat([x, x], 1), (None, 6)),
    (lambda x: gc.stack([x, x], 1), (None, 2, 3)),
    (lambda x: gc.gather(x, [0, 0], axis=1), (None, 2)),
    (lambda x: gc.one_hot(gc.cast(x, gc.int32), 2), (None, 3, 2)),
    (lambda x: gc.shape(x), (2,)),
    (lambda x: gc.size(x), ()),
    (lambda x: gc.broadcast_to(x, [2, gc.shape(x)[0], 3]), (2, None, 3)),
    (lambda x: gc.tile(x, [2, 2]), (None, 6)),
])
def test_unknown_dims_give_right_static_shape_and_values(fn, shape):
    assert out_shape(fn, SPEC) == shape
    f = gc.function(fn, input_signature=[SPEC], backend="numpy")
    for n in (2, 4):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        assert_same(f(x), fn(gc.constant(x)).numpy())


def test_unstack_needs_a_known_size():
    f = gc.function(lambda x: gc.unstack(x), input_signature=[SPEC], backend="numpy")
    with pytest.raises(ValueError, match=r"unstack.*\[\?,3\].*num="):
        f(np.zeros((2, 3), np.float32))
    g = gc.function(lambda x: gc.unstack(x, axis=1), input_signature=[SPEC], backend="numpy")
    assert [tuple(o.shape) for o in g.get_concrete_function().outputs] == [(None,)] * 3


def test_runtime_errors_of_dynamic_shapes_are_invalid_argument():
    spec = [gc.TensorSpec([None, 3])]
    f = gc.function(lambda x: gc.reshape(x, [gc.shape(x)[0], 5]), input_signature=spec,
                    backend="numpy")
    with pytest.raises(gc.errors.InvalidArgumentError,
                       match=r"reshape.*\[2,3\].*into shape \[2,5\]"):
        f(np.zeros((2, 3), np.float32))
    g = gc.function(lambda x, y: gc.concat([x, y], 0), backend="numpy",
                    input_signature=[gc.TensorSpec([2, None]), gc.TensorSpec([2, None])])
    with pytest.raises(gc.errors.InvalidArgumentError, match="concat"):
        g(np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32))


@pytest.mark.parametrize("args,dtype,values", [
    ((gc.constant(0), gc.constant(2.5)), gc.float32, [0.0, 1.0, 2.0]),
    ((gc.constant(0), gc.constant(2.5, dtype=gc.float64)), gc.float64, [0.0, 1.0, 2.0]),
    ((gc.constant(0), gc.constant(3, dtype=gc.int64)), gc.int64, [0, 1, 2]),
    ((0.5, gc.constant(3)), gc.float32, [0.5, 1.5, 2.5]),
    ((0, 1, 0.25), gc.float32, [0.0, 0.25, 0.5, 0.75]),
    ((2**40, 2**40 + 2), gc.int64, [2**40, 2**40 + 1]),
    ((5,), gc.int32, [0, 1, 2, 3, 4]),
])
def test_range_infers_the_widest_dtype_of_its_arguments(args, dtype, values):
    """tf.range takes the widest of start/limit/delta's dtypes (int32 < int64 < float32 <
    float64); graphc took the first tensor's, so range(int tensor 0, float tensor 2.5) gave
    int32 [0, 1] (2.5 truncated) instead of float32 [0, 1, 2]."""
    for r in (gc.range(*args),
              gc.function(lambda *a: gc.range(*a), backend="numpy")(*args)):
        assert r.dtype is dtype
        np.testing.assert_array_equal(r.numpy(), values)


@pytest.mark.parametrize("args", [(5, 0), (0, 10, -1), (10, None, -2)])
def test_range_with_delta_pointing_away_from_limit_is_an_error_as_in_tf(args):
    """tf.range(5, 0) raises 'Requires start <= limit when delta > 0' (Python's range gives
    []); graphc returned an empty tensor. start == limit is still an empty range."""
    with pytest.raises(ValueError, match="range: start .* delta"):
        gc.range(*args)
    f = gc.function(lambda *a: gc.range(*a), backend="numpy")
    with pytest.raises(gc.errors.InvalidArgumentError, match="range: start .* delta"):
        f(*[gc.constant(a) for a in args if a is not None])
    assert gc.range(3, 3).numpy().shape == (0,) and gc.range(3, 3, -1).numpy().shape == (0,)


def test_reshape_infers_minus_one_beside_a_zero_as_in_tf():
    # TF leaves zeros out when a 0 is among the sizes: reshape(zeros([0, 3]), [0, -1]) is
    # [0, 3] and reshape(zeros([2, 0, 3]), [-1, 0]) is [6, 0]; graphc raised 'not a multiple
    # of 0'. [2, 3] -> [-1, 0] still fails (6 elements into 0)
    check(lambda t: gc.reshape(t, [0, -1]), np.zeros((0, 3), np.float32),
          np.zeros((0, 3), np.float32))
    check(lambda t: gc.reshape(t, [-1, 0]), np.zeros((6, 0), np.float32),
          np.zeros((2, 0, 3), np.float32))
    raises_both(lambda t: gc.reshape(t, [-1, 0]), ValueError, ["reshape", "[2,3]"],
                np.zeros((2, 3), np.float32))
    f = gc.function(lambda x: gc.reshape(x, [0, -1]), backend="numpy",
                    input_signature=[gc.TensorSpec([None, 3])])
    assert f(np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_tf_argument_forms_of_shape_ops():
    # all accepted by TF: a numpy shape, a one-element axis list, squeeze(x, []) squeezing
    # every size-1 axis, and concat of a single tensor (not a list) giving it back
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda t: gc.reshape(t, np.array([3, 2])), x.reshape(3, 2), x)
    check(lambda t: gc.expand_dims(t, [0]), x[None], x)
    check(lambda t: gc.squeeze(t, []), np.zeros((3,), np.float32), np.zeros((1, 3, 1), np.float32))
    check(lambda t: gc.concat(t, 0), x, x)


def test_stack_of_python_numbers_takes_their_common_dtype_as_in_tf():
    # tf.stack([1, 2.5]) is float32 [1., 2.5] (the numbers convert together); graphc raised
    assert_same(gc.stack([1, 2.5]), np.array([1.0, 2.5], np.float32))
    assert_same(gc.stack([1, 2]), np.array([1, 2], np.int32))
    assert_same(gc.function(lambda: gc.stack([True, False]), backend="numpy")(),
                np.array([True, False]))


def test_empty_stack_and_repeated_squeeze_axes_as_tf():
    # TF 2.21: tf.stack([]) is float32 [] of shape (0,); tf.squeeze(x, [0, 0]) and
    # tf.squeeze(x, [0, -2]) squeeze axis 0 once (an axis named twice is not an error)
    for run in (lambda fn: fn(), lambda fn: gc.function(fn, backend="numpy")()):
        assert_same(run(lambda: gc.stack([])), np.zeros(0, np.float32))
        assert_same(run(lambda: gc.stack([], axis=-1)), np.zeros(0, np.float32))
    x = np.arange(3, dtype=np.float32).reshape(1, 3)
    check(lambda t: gc.squeeze(t, [0, 0]), x[0], x)
    check(lambda t: gc.squeeze(t, [0, -2]), x[0], x)
    check(lambda t: gc.squeeze(t, gc.constant([0, 0])), x[0], x)
    with pytest.raises(ValueError, match="stack: axis 1 is out of range for stacking no "):
        gc.stack([], axis=1)                    # TF fails too (an IndexError inside it)
    with pytest.raises(ValueError, match="squeeze: cannot squeeze axis 1"):
        gc.squeeze(x, [0, 1, 0])
