"""Tensor indexing: ints, slices, None, Ellipsis and int tensors, eagerly and traced."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from op_helpers import arrays, check, raises_both, assert_same

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@st.composite
def basic_index(draw, shape):
    """A NumPy basic index (ints, slices, None, one optional Ellipsis) valid for `shape`."""
    items, dim = [], 0
    use_ellipsis = draw(st.booleans())
    while dim < len(shape) and draw(st.booleans()):
        kind = draw(st.sampled_from(["int", "slice", "new"]))
        n = shape[dim]
        if kind == "int" and n > 0:
            items.append(draw(st.integers(-n, n - 1)))
            dim += 1
        elif kind == "new":
            items.append(None)
        else:
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0)))
            items.append(slice(draw(bound), draw(bound), step))
            dim += 1
    if use_ellipsis:   # in the middle, the items after it would address trailing axes
        items.append(Ellipsis)
    return tuple(items)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_basic_indexing_matches_numpy(data):
    x = data.draw(arrays("int32", min_dims=1))
    index = data.draw(basic_index(x.shape))
    check(lambda t: t[index], np.asarray(x[index]), x)


def test_single_items_without_tuple():
    check(lambda t: t[1], X[1], X)
    check(lambda t: t[-1], X[-1], X)
    check(lambda t: t[::-1], X[::-1], X)
    check(lambda t: t[None], X[None], X)
    check(lambda t: t[...], X, X)
    check(lambda t: t[..., 2], X[..., 2], X)
    check(lambda t: t[1, ..., None, 1:3], X[1, ..., None, 1:3], X)


def test_scalar_int_tensor_acts_like_an_int():
    i = np.int32(1)
    check(lambda t, k: t[k], X[1], X, i)
    check(lambda t, k: t[:, k, k + 1], X[:, 1, 2], X, i)
    check(lambda t, k: t[k:], X[1:], X, i)
    check(lambda t, k: t[:, ::k + 1], X[:, ::2], X, i)


def test_int_tensor_and_list_gather_along_their_axis():
    idx = np.array([2, 0, 2], np.int64)
    check(lambda t, k: t[:, k], np.take(X, idx, axis=1), X, idx)
    check(lambda t: t[[1, 0]], X[[1, 0]], X)
    check(lambda t: t[1, :, [3, 0]], np.take(X[1], [3, 0], axis=1), X)
    two_d = np.array([[0, 1], [1, 1]], np.int32)
    check(lambda t, k: t[..., k], np.take(X, two_d, axis=2), X, two_d)


def test_symbolic_loop_index_inside_compiled_function():
    @gc.function(backend="numpy")
    def rows_sum(x):
        def body(i, acc):
            return i + 1, acc + x[i, 0]
        _, acc = gc.while_loop(lambda i, acc: i < gc.shape(x)[0], body,
                               [gc.constant(0), gc.zeros([4])])
        return acc
    got = rows_sum(gc.constant(X))
    assert_same(got, X[:, 0].sum(0))


def test_indexing_result_is_independent_of_source():
    t = gc.constant(X)
    row = t[0]
    view = row.numpy()
    view[:] = -1
    assert_same(t, X)
    assert_same(row, X[0])


# -- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,exc,words", [
    (lambda t: t[2], ValueError, ["getitem", "index 2", "[2,3,4]"]),
    (lambda t: t[0, -4], ValueError, ["getitem", "index -4", "[2,3,4]", "axis 1"]),
    (lambda t: t[0, 0, 0, 0], ValueError, ["getitem", "too many indices", "[2,3,4]"]),
    (lambda t: t[..., ...], ValueError, ["getitem", "single ellipsis"]),
    (lambda t: t[::0], ValueError, ["getitem", "step cannot be zero"]),
    (lambda t: t[1.5], TypeError, ["getitem", "1.5"]),
    (lambda t: t["a"], TypeError, ["getitem", "'a'"]),
    (lambda t: t[t > 3], TypeError, ["getitem", "boolean mask"]),
    (lambda t: t[gc.constant(1.0)], TypeError, ["getitem", "float32"]),
    (lambda t: t[[0], [1]], ValueError, ["getitem", "gc.gather"]),
    (lambda t: t[[5]], gc.errors.InvalidArgumentError, ["gather", "index 5"]),
])
def test_index_errors(fn, exc, words):
    raises_both(fn, exc, words, X)


def test_dynamic_out_of_range_index_fails_at_run_time():
    f = gc.function(lambda x, i: x[i], backend="numpy")
    assert_same(f(gc.constant(X), gc.constant(1)), X[1])
    with pytest.raises(gc.errors.InvalidArgumentError, match="getitem"):
        f(gc.constant(X), gc.constant(7))


# -- partially unknown shapes -----------------------------------------------------------
SPEC = gc.TensorSpec([None, 4])


@pytest.mark.parametrize("fn,shape", [
    (lambda x: x[0], (4,)),
    (lambda x: x[:, 0], (None,)),
    (lambda x: x[1:, 1:3], (None, 2)),
    (lambda x: x[::2, ::-1], (None, 4)),
    (lambda x: x[None, ..., None], (1, None, 4, 1)),
    (lambda x: x[:, [0, 0, 1]], (None, 3)),
    (lambda x: x[gc.shape(x)[0] - 1], (4,)),
    (lambda x: x[:, :gc.shape(x)[0]], (None, None)),
])
def test_unknown_dims_give_right_static_shape_and_values(fn, shape):
    f = gc.function(fn, input_signature=[SPEC], backend="numpy")
    assert tuple(f.get_concrete_function().outputs[0].shape) == shape
    for n in (2, 3):
        x = np.arange(4 * n, dtype=np.float32).reshape(n, 4)
        assert_same(f(x), fn(gc.constant(x)).numpy())


def test_out_of_range_int_index_is_invalid_argument_eagerly_and_at_run_time():
    x = gc.constant([1, 2])
    for index in (5, -3, gc.constant(5)):          # eagerly: bad runtime input, as TF
        with pytest.raises(gc.errors.InvalidArgumentError, match="index .* is out of range"):
            x[index]
    with pytest.raises(ValueError, match=r"out of range .*\(while tracing") as e:
        gc.function(lambda t: t[5])(x)               # a static index: a trace-time error
    assert not isinstance(e.value, gc.errors.InvalidArgumentError)
    with pytest.raises(gc.errors.InvalidArgumentError, match="out of bounds"):
        gc.function(lambda t, i: t[i])(x, gc.constant(5))
