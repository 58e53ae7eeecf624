"""gc.linspace, gc.roll, gc.repeat, gc.sequence_mask, gc.ensure_shape and
gc.nn.embedding_lookup as TF 2.21's: values against TF's literal results and numpy,
eagerly and compiled (numpy, auto, kernels forced), gradients against TF's, hypothesis
over shapes, and TF's error cases."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphc as gc
from tf_ops_helpers import agree, f32, forced, i32, tf_grad_agrees

E = np.arange(12, dtype=np.float32).reshape(4, 3)


# -- linspace ---------------------------------------------------------------------------
def test_linspace_values_as_tf():
    agree(lambda: gc.linspace(0.0, 1.0, 5), f32([0, 0.25, 0.5, 0.75, 1]))
    # TF's float32 values bit for bit (start + delta * i, the last exactly stop)
    agree(lambda: gc.linspace(-1.0, 2.3, 11), f32(
        [-1.0, -0.6700000166893005, -0.3400000333786011, -0.010000050067901611,
         0.31999993324279785, 0.6499998569488525, 0.9799998998641968, 1.309999942779541,
         1.6399998664855957, 1.9699997901916504, 2.299999952316284]), rtol=0)
    agree(lambda: gc.linspace(0, 10, 4), np.array([0, 10 / 3, 20 / 3, 10]))  # ints: float64
    agree(lambda: gc.linspace(1.0, 0.0, 1), f32([1]))
    agree(lambda: gc.linspace(1.0, 0.0, 0), f32([]))
    agree(lambda a, b: gc.linspace(a, b, 3), f32([[0, 1], [0.5, 2], [1, 3]]), f32([0, 1]),
          f32([1, 3]))
    agree(lambda a, b: gc.linspace(a, b, 3, axis=1), f32([[0, 0.5, 1], [1, 2, 3]]),
          f32([0, 1]), f32([1, 3]))


def test_linspace_gradient_as_tf():
    # TF: d sum(linspace(a, 3, 4) * [1, 2, 3, 4]) / da at a = 1 is 3.3333333
    tf_grad_agrees(lambda a: gc.linspace(a, 3.0, 4), np.float32(1.0), 10 / 3, [4], rtol=1e-6)
    tf_grad_agrees(lambda b: gc.linspace(1.0, b, 4), np.float32(3.0), 20 / 3, [4], rtol=1e-6)


def test_linspace_errors():
    with pytest.raises(ValueError, match="num must be >= 0"):   # TF: InvalidArgumentError
        gc.linspace(0.0, 1.0, -1)
    with pytest.raises(TypeError, match="num"):                 # TF: must be of type integer
        gc.linspace(0.0, 1.0, 2.5)


# -- roll -------------------------------------------------------------------------------
def test_roll_values_as_tf():
    r5 = np.arange(5, dtype=np.int32)
    m = np.arange(6, dtype=np.int32).reshape(2, 3)
    agree(lambda x: gc.roll(x, 2, 0), i32([3, 4, 0, 1, 2]), r5)
    agree(lambda x: gc.roll(x, -7, 0), i32([2, 3, 4, 0, 1]), r5)
    agree(lambda x: gc.roll(x, [1, 1], [0, 1]), i32([[5, 3, 4], [2, 0, 1]]), m)
    agree(lambda x: gc.roll(x, [1, 1], [1, 1]), i32([[1, 2, 0], [4, 5, 3]]), m)  # shifts add
    agree(lambda x: gc.roll(x, 2, 0), f32([]), f32([]))


def test_roll_with_run_time_shift_and_dims():
    sig = [gc.TensorSpec([None], gc.float32), gc.TensorSpec([], gc.int32)]
    x = f32([0, 1, 2, 3, 4])
    for s in (2, -7, 0, 5):
        agree(lambda v, k: gc.roll(v, k, 0), np.roll(x, s), x, np.int32(s), signature=sig)


def test_roll_takes_shifts_as_int32_known_or_not():
    # TF 2.21: an int64 shift 2**40 + 1 rolls range(5) by 1 (its int32 value), 2**32 + 2 by 2
    r5 = np.arange(5, dtype=np.int32)
    sig = [gc.TensorSpec([None], gc.int32), gc.TensorSpec([], gc.int64)]
    for s, want in ((2**40 + 1, [4, 0, 1, 2, 3]), (2**32 + 2, [3, 4, 0, 1, 2]),
                    (-2**40 - 1, [1, 2, 3, 4, 0])):
        agree(lambda v, k: gc.roll(v, k, 0), i32(want), r5, np.int64(s), signature=sig)
        agree(lambda v: gc.roll(v, s, 0), i32(want), r5)


def test_roll_gradient_as_tf():
    # TF: d sum(roll(x, [1, -1], [0, 1]) * [[1, 2, 3], [4, 5, 6]]) / dx
    tf_grad_agrees(lambda x: gc.roll(x, [1, -1], [0, 1]), E[:2], [[6, 4, 5], [3, 1, 2]], [2, 3])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.data())
def test_roll_matches_numpy(shape, data):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    shift = data.draw(st.integers(-9, 9))
    agree(lambda v: gc.roll(v, shift, axis), np.roll(x, shift, axis), x)


def test_roll_errors_as_tf():
    with pytest.raises(ValueError, match="out of range"):          # TF: axis 1 is out of range
        gc.roll(gc.range(5), 2, 1)
    with pytest.raises(ValueError, match="shift and axis must have the same size"):
        gc.roll(gc.range(5), [1, 2], [0])
    with pytest.raises(TypeError, match="shift"):                  # TF: Tshift int32/int64
        gc.roll(gc.range(5), 2.0, 0)
    with pytest.raises(ValueError, match="1-D or higher"):
        gc.roll(gc.constant(3), 1, 0)


# -- repeat -----------------------------------------------------------------------------
def test_repeat_values_as_tf():
    m = i32([[1, 2], [3, 4]])
    agree(lambda x: gc.repeat(x, 2), i32([1, 1, 2, 2, 3, 3]), i32([1, 2, 3]))
    agree(lambda x: gc.repeat(x, [1, 2], axis=0), i32([[1, 2], [3, 4], [3, 4]]), m)
    agree(lambda x: gc.repeat(x, 2, axis=1), i32([[1, 1, 2, 2], [3, 3, 4, 4]]), m)
    agree(lambda x: gc.repeat(x, 2), i32([1, 1, 2, 2, 3, 3, 4, 4]), m)
    agree(lambda x: gc.repeat(x, [-1, 2], axis=0), i32([[3, 4], [3, 4]]), m)  # TF: -1 is 0
    agree(lambda x: gc.repeat(x, [0, 0]), i32([]), i32([1, 2]))
    agree(lambda: gc.repeat(3, 2), i32([3, 3]))


def test_repeat_with_run_time_counts():
    sig = [gc.TensorSpec([None, 2], gc.int32), gc.TensorSpec([None], gc.int32)]
    m = i32([[1, 2], [3, 4], [5, 6]])
    agree(lambda x, r: gc.repeat(x, r, axis=0), np.repeat(m, [2, 0, 1], axis=0), m,
          i32([2, 0, 1]), signature=sig)
    agree(lambda x, r: gc.repeat(x, r[0], axis=1), np.repeat(m, 3, axis=1), m, i32([3]),
          signature=sig)


def test_repeat_gradient_as_tf():
    # TF: d sum(repeat(x, [2, 0, 1], 0) * [1, 2, 3]) / dx is [3, 0, 3]
    tf_grad_agrees(lambda x: gc.repeat(x, [2, 0, 1], 0), f32([1, 2, 3]), [3, 0, 3], [3])


def test_repeat_errors_as_tf():
    with pytest.raises(ValueError, match="Dimensions 2 and 3 are not compatible"):
        gc.repeat(gc.constant([[1, 2], [3, 4]]), [1, 2, 3], axis=0)
    with pytest.raises(ValueError, match="must have rank at most 1"):
        gc.repeat(gc.constant([1.0, 2.0]), [[2]], axis=0)


def test_repeat_counts_of_another_length_known_at_run_time_raise():
    # eagerly (and TF) 2 counts for 3 rows are an error; compiled with both lengths unknown
    # they once repeated rows 0 and 1 and dropped row 2
    f = gc.function(lambda x, r: gc.repeat(x, r, axis=0), input_signature=[
        gc.TensorSpec([None, 2], gc.int32), gc.TensorSpec([None], gc.int32)])
    m = i32([[1, 2], [3, 4], [5, 6]])
    with pytest.raises(gc.errors.InvalidArgumentError):
        f(m, i32([1, 2]))
    np.testing.assert_array_equal(f(m, i32([2])).numpy(), np.repeat(m, 2, axis=0))


# -- sequence_mask ----------------------------------------------------------------------
def test_sequence_mask_as_tf():
    T, F = True, False
    agree(lambda n: gc.sequence_mask(n, 5), np.array(
        [[T, F, F, F, F], [T, T, T, F, F], [T, T, F, F, F]]), i32([1, 3, 2]))
    agree(lambda n: gc.sequence_mask(n), np.array([[T, F, F], [T, T, T], [T, T, F]]),
          i32([1, 3, 2]))
    agree(lambda n: gc.sequence_mask(n), np.array(
        [[[T, F, F], [T, T, T]], [[T, T, F], [F, F, F]]]), i32([[1, 3], [2, 0]]))
    agree(lambda n: gc.sequence_mask(n, 2, dtype=gc.float32), f32([[1, 0], [1, 1], [1, 1]]),
          i32([1, 3, 2]))
    agree(lambda n: gc.sequence_mask(n), np.array([[T, F], [F, F], [T, T]]), i32([1, -3, 2]))
    agree(lambda n: gc.sequence_mask(n), np.array([[T, F, F], [T, T, T]]), f32([1, 3]))
    agree(lambda: gc.sequence_mask(2, 3), np.array([T, T, F]))
    agree(lambda n: gc.sequence_mask(n, 3), np.array([[T, F, F], [T, T, F]]),
          np.array([1, 2], np.int64))


def test_sequence_mask_with_a_run_time_maxlen():
    f = gc.function(lambda n: gc.sequence_mask(n), input_signature=[gc.TensorSpec([None],
                                                                                  gc.int32)])
    assert f.get_concrete_function().outputs[0].shape == (None, None)
    np.testing.assert_array_equal(f(i32([2, 0])).numpy(), [[True, True], [False, False]])


def test_sequence_mask_error_as_tf():
    with pytest.raises(ValueError, match="`maxlen` must be scalar"):
        gc.sequence_mask([1, 2], [3])


# -- embedding_lookup -------------------------------------------------------------------
def test_embedding_lookup_as_tf():
    agree(lambda p: gc.nn.embedding_lookup(p, [[0, 3], [1, 1]]), E[[[0, 3], [1, 1]]], E)
    agree(lambda p: gc.nn.embedding_lookup(p, 2), E[2], E)
    agree(lambda p: gc.nn.embedding_lookup([p], [1]), E[[1]], E)
    # TF 2 shards by 'div': [E[:2], E[2:3]] is the concatenation
    agree(lambda p: gc.nn.embedding_lookup([p[:2], p[2:3]], [0, 1, 2]), E[:3], E)
    # TF: each looked-up row clipped to norm 5
    agree(lambda p: gc.nn.embedding_lookup(p, [1, 2], max_norm=5.0), f32(
        [[2.1213202476501465, 2.8284270763397217, 3.535533905029297],
         [2.457695722579956, 2.867311716079712, 3.2769277095794678]]), E)


def test_embedding_lookup_gradient_and_errors():
    tf_grad_agrees(lambda p: gc.nn.embedding_lookup(p, [2, 0, 2]), f32([1, 2, 3]), [2, 0, 4],
                   [3])
    with pytest.raises(gc.errors.InvalidArgumentError, match="out of range"):
        gc.nn.embedding_lookup(gc.constant(E), [4])              # TF: indices[0] = 4 ...
    with pytest.raises(ValueError, match="'div'"):
        gc.nn.embedding_lookup([gc.ones([1, 3]), gc.zeros([2, 3])], [0])


# -- ensure_shape -----------------------------------------------------------------------
def test_ensure_shape_refines_and_checks():
    agree(lambda x: gc.ensure_shape(x, [4, None]), E, E)
    agree(lambda x: gc.ensure_shape(x, None), E, E)
    f = gc.function(lambda x: gc.ensure_shape(x, [4, 3]),
                    input_signature=[gc.TensorSpec([None, 3])])
    assert f.get_concrete_function().outputs[0].shape == (4, 3)      # as TF's static shape
    np.testing.assert_array_equal(f(E).numpy(), E)
    # TF: InvalidArgumentError when the graph runs ("Shape of tensor ... is not compatible")
    with pytest.raises(gc.errors.InvalidArgumentError, match=r"Shape of tensor \[2,3\] is not "
                       r"compatible with expected shape \[4,3\]") as info:
        f(E[:2])
    assert "test_tf_ops_array.py" in str(info.value)                # the user's line


def test_ensure_shape_static_errors():
    for shape in ([3, None], [4]):
        with pytest.raises(gc.errors.InvalidArgumentError, match="not compatible"):
            gc.ensure_shape(gc.constant(E), shape)                   # eagerly: as TF
        with pytest.raises(ValueError, match="not compatible"):     # tracing: at the call
            gc.function(lambda x: gc.ensure_shape(x, shape))(E)


def test_ensure_shape_gradient_passes_through():
    tf_grad_agrees(lambda x: gc.ensure_shape(x, [None]), f32([1, 2]), [1, 2], [2])


def test_array_ops_with_kernels_forced(numba_forced):
    x = f32([0, 1, 2, 3, 4])
    want = (np.roll(x, 2) * 2 + 1, np.repeat(x, 2) * 2 - 1,
            np.linspace(0, 1, 5, dtype=np.float32) * 2 + x,
            np.array([2, 3, 4, 5, 6], np.float32))
    forced(numba_forced, lambda v: (gc.roll(v, 2, 0) * 2.0 + 1.0,
                                    gc.repeat(v, 2) * 2.0 - 1.0,
                                    gc.linspace(0.0, 1.0, 5) * 2.0 + v,
                                    gc.cast(gc.sequence_mask(5, 5), gc.float32) * 2.0 + v),
           want, x)
