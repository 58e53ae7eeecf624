"""gc.split, gc.pad and gc.reverse as TF 2.21's tf.split/tf.pad/tf.reverse: values against
numpy (np.split, np.pad, np.flip) and TF's literal results, eagerly and compiled (numpy and
auto backends), gradients against TF's, hypothesis over shapes, and TF's error cases."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphc as gc
from tf_extras_helpers import agree, grad_agrees

X12 = np.arange(12, dtype=np.float32).reshape(3, 4)
V23 = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
W28 = np.arange(28, dtype=np.float32).reshape(4, 7)


# -- split ------------------------------------------------------------------------------
def test_split_equal_pieces_and_sizes_with_minus_one():
    agree(lambda x: gc.split(x, 2, axis=1), np.split(X12, 2, axis=1), X12)
    # TF: tf.split(x, [1, -1, 1], axis=1) gives shapes [3, 1], [3, 2], [3, 1]
    agree(lambda x: gc.split(x, [1, -1, 1], axis=1), np.split(X12, [1, 3], axis=1), X12)
    agree(lambda x: gc.split(x, [0, 4], axis=-1), [X12[:, :0], X12], X12)
    agree(lambda x: gc.split(x, gc.constant([1, 2]), axis=0), [X12[:1], X12[1:]], X12)


def test_split_returns_a_list_even_for_one_piece():
    out = gc.split(gc.constant(X12), 1)
    assert type(out) is list and len(out) == 1 and out[0].shape == (3, 4)


def test_split_with_unknown_other_dims():
    sig = [gc.TensorSpec([None, 4], gc.float32)]
    agree(lambda x: gc.split(x, [3, 1], axis=1), [X12[:, :3], X12[:, 3:]], X12, signature=sig)


def test_split_gradient_is_tf_s():
    # TF: d sum(split(v, [1, 2], 1)[1] * [[1, 2], [3, 4]]) / dv
    grad_agrees(lambda v: gc.split(v, [1, 2], 1)[1] * gc.constant([[1., 2.], [3., 4.]]),
                V23, [[0, 1, 2], [0, 3, 4]])


@pytest.mark.parametrize("args, words", [
    ((3, 1), "evenly divide"),                # TF: InvalidArgumentError, Number of ways ...
    (([1, 2], 1), "do not add up"),           # TF: Determined shape must either match ...
    (([5, -1], 1), "do not add up"),
    (([-1, -1], 1), "only one -1"),           # TF: There can only be one -1 in the input
    (([-2, 6], 1), ">= 0"),                   # TF: Split size at index 0 must be >= 0
    ((2, 2), "out of range"),                 # TF: -input rank(-2) <= split_dim < input rank
    ((0, 1), "at least 1"),                   # TF: num_split of 0 must be at least minimum 1
    (([], 1), "must not be empty"),
])
def test_split_errors_as_tf(args, words):
    def call(x):
        return gc.split(x, *args)
    for fn in (call, gc.function(call)):
        with pytest.raises(ValueError, match=words) as info:
            fn(gc.constant(X12))
        assert str(info.value).startswith("split:")


def test_split_needs_the_split_dim_known_while_tracing():
    f = gc.function(lambda x: gc.split(x, 2, axis=1),
                    input_signature=[gc.TensorSpec([3, None], gc.float32)])
    with pytest.raises(ValueError, match="must be known while tracing"):
        f(X12)


def test_split_of_a_scalar_is_an_error():
    with pytest.raises(ValueError, match="scalar"):
        gc.split(gc.constant(1.0), 1)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_split_matches_numpy_on_random_shapes(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    d = shape[axis]
    cuts = sorted(data.draw(st.lists(st.integers(0, d), max_size=3)))
    sizes = np.diff([0] + cuts + [d]).tolist()
    agree(lambda t: gc.split(t, sizes, axis=axis), np.split(x, cuts, axis=axis), x)


# -- reverse ----------------------------------------------------------------------------
def test_reverse_values_as_tf():
    agree(lambda x: gc.reverse(x, [-1, 0]), X12[::-1, ::-1], X12)
    agree(lambda x: gc.reverse(x, [1]), X12[:, ::-1], X12)
    agree(lambda x: gc.reverse(x, []), X12, X12)
    b = np.array([[True, False, False]])
    agree(lambda x: gc.reverse(x, gc.constant([1])), b[:, ::-1], b)


def test_reverse_gradient_is_tf_s():
    # TF: d sum(reverse(v, [1]) * [[1, 2, 3], [4, 5, 6]]) / dv = [[3, 2, 1], [6, 5, 4]]
    grad_agrees(lambda v: gc.reverse(v, [1]) * gc.constant(V23), V23, [[3, 2, 1], [6, 5, 4]])


@pytest.mark.parametrize("axis, words", [
    ([1, 1], "more than once"),     # TF: axis 1 specified more than once
    ([1, -1], "more than once"),
    ([2], "out of range"),          # TF: 'axis'[0] = 2 is out of valid range [0, 1
    (1, "1-D"),                     # TF: 'dims' must be 1-dimension, not 0
])
def test_reverse_errors_as_tf(axis, words):
    def call(x):
        return gc.reverse(x, axis)
    for fn in (call, gc.function(call)):
        with pytest.raises(ValueError, match=words):
            fn(gc.constant(X12))


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_reverse_matches_numpy_on_random_shapes(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True)) if shape else []
    agree(lambda t: gc.reverse(t, axes), np.flip(x, axes) if axes else x, x)


# -- pad --------------------------------------------------------------------------------
def test_pad_values_as_tf():
    a = np.array([[1, 2], [3, 4]], np.int32)
    agree(lambda x: gc.pad(x, [[1, 0], [0, 2]], constant_values=9),
          np.int32([[9, 9, 9, 9], [1, 2, 9, 9], [3, 4, 9, 9]]), a)
    m = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    agree(lambda x: gc.pad(x, [[1, 1], [2, 2]], "REFLECT"),       # TF's literal result
          np.int32([[6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4],
                    [3, 2, 1, 2, 3, 2, 1]]), m)
    agree(lambda x: gc.pad(x, [[1, 1], [2, 2]], "symmetric"),     # mode case-insensitive
          np.int32([[2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2], [5, 4, 4, 5, 6, 6, 5],
                    [5, 4, 4, 5, 6, 6, 5]]), m)
    agree(lambda x: gc.pad(x, [[1, 1]]), np.array([False, True, False]), np.array([True]))
    agree(lambda x: gc.pad(x, np.zeros((0, 2), np.int32)), np.float32(3), np.float32(3))
    # TF converts constant_values to the tensor's dtype: 2 pads a float tensor with 2.0
    agree(lambda x: gc.pad(x, [[1, 1]], constant_values=2), np.float32([2, 1, 2, 2]),
          np.float32([1, 2]))


def test_pad_with_unknown_dims_keeps_them_unknown():
    sig = [gc.TensorSpec([None, 4], gc.float32)]
    f = gc.function(lambda x: gc.pad(x, [[1, 0], [2, 1]]), input_signature=sig)
    assert f.get_concrete_function().outputs[0].shape == (None, 7)
    agree(lambda x: gc.pad(x, [[1, 0], [2, 1]]), np.pad(X12, [[1, 0], [2, 1]]), X12,
          signature=sig)


# TF's gradients: d sum(pad(v, [[1, 1], [2, 2]], mode) * arange(28).reshape(4, 7)) / dv
@pytest.mark.parametrize("mode, want", [
    ("CONSTANT", [[9, 10, 11], [16, 17, 18]]),
    ("REFLECT", [[72, 102, 64], [44, 60, 36]]),
    ("SYMMETRIC", [[20, 39, 32], [76, 123, 88]]),
])
def test_pad_gradient_is_tf_s(mode, want):
    grad_agrees(lambda v: gc.pad(v, [[1, 1], [2, 2]], mode), V23, want, weights=W28)


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(paddings=[[0, 0], [-1, 1]]), ValueError, "non-negative"),     # TF: Paddings must be
    (dict(paddings=[[0, 0]]), ValueError, "rank 2"),                    # TF: first dimension
    (dict(paddings=[[0, 0, 1], [1, 1, 1]]), ValueError, "2 columns"),   # TF: matrix with 2 cols
    (dict(paddings=[[2, 0], [0, 0]], mode="REFLECT"), ValueError, "less than"),
    (dict(paddings=[[3, 0], [0, 0]], mode="SYMMETRIC"), ValueError, "no greater than"),
    (dict(paddings=[[0, 0], [1, 1]], mode="WRAP"), ValueError, "mode"),
    (dict(paddings=[[0, 0], [1, 1]], constant_values=1.5), TypeError, "int32"),
])
def test_pad_errors_as_tf(kwargs, exc, words):
    m = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    def call(x):
        return gc.pad(x, **kwargs)
    for fn in (call, gc.function(call)):
        with pytest.raises(exc, match=words) as info:
            fn(gc.constant(m))
        assert str(info.value).startswith("pad:")


def test_pad_mirror_needs_the_padded_dim_known_while_tracing():
    f = gc.function(lambda x: gc.pad(x, [[1, 1], [0, 0]], "REFLECT"),
                    input_signature=[gc.TensorSpec([None, 4], gc.float32)])
    with pytest.raises(ValueError, match="must be known while tracing"):
        f(X12)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_pad_matches_numpy_on_random_shapes(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 3.5
    mode = data.draw(st.sampled_from(["CONSTANT", "REFLECT", "SYMMETRIC"]))
    edge = 1 if mode == "REFLECT" else 0
    pads = [[data.draw(st.integers(0, d - edge if mode != "CONSTANT" else 3))
             for _ in range(2)] for d in shape]
    want = np.pad(x, pads, mode.lower()) if mode != "CONSTANT" else \
        np.pad(x, pads, constant_values=-1.0)
    agree(lambda t: gc.pad(t, pads, mode, constant_values=-1.0), want, x)
