"""AutoGraph's int(tensor) cast, and its errors that are also the types TF raises: each
names the user's file:line."""
import functools

import numpy as np
import pytest

import graphc as gc

from .harness import marker_line

HERE = __file__

line_of = functools.partial(marker_line, HERE)


def int_of(x):
    return int(x) + 1  # int-of


@pytest.mark.parametrize("value", [np.nan, np.inf, 3e9, -3e9])
def test_int_of_a_tensor_that_int32_cannot_hold_fails_at_run_time(value):
    # Python: ValueError/OverflowError, or an int beyond int32; TF casts and gives
    # -2147483648 silently. graphc: InvalidArgumentError at the user's line.
    f = gc.function(int_of)
    assert int(f(gc.constant(2.5))) == 3
    with pytest.raises(gc.errors.InvalidArgumentError) as e:
        f(gc.constant(np.float32(value)))
    assert "int32 range" in str(e.value) and f"{HERE}:{line_of('int-of')}" in str(e.value)


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.float32])
def test_int_of_a_tensor_at_the_int32_bounds_is_that_int(dtype):
    # -2**31 and 2**31 - 1 (float32: -2**31, the largest below 2**31) fit int32: int() gives
    # them as eagerly, no failed check
    f = gc.function(lambda x: int(x))
    top = 2 ** 31 - 128 if dtype is np.float32 else 2 ** 31 - 1
    for v in (-2 ** 31, top):
        assert int(f(gc.constant(dtype(v)))) == v


def test_int_of_a_vector_tensor_stays_an_error():
    with pytest.raises(gc.errors.OperatorNotAllowedInGraphError):
        gc.function(int_of)(gc.constant([1.5, 2.5]))


def if_on_int(x):
    n = gc.cast(x, gc.int32)
    if n:  # int-if
        return 1
    return 0


def while_on_int(n):
    while n:  # int-while
        n = n - 1
    return n


def branches_of_two_structures(x):
    if x > 0:
        return x, x
    return x


def none_in_loop(n):
    y = gc.constant(1)
    for i in range(n):
        y = None
    return y


def test_error_types_are_also_the_ones_tf_raises():
    # TF's AutoGraph: a non-bool tensor condition is a ValueError ("condition of if
    # statement expected to be `tf.bool` scalar"); branches returning different structures
    # a TypeError; None as loop state a ValueError ("'y' is None at the end of the
    # iteration"). graphc's errors are both TypeError and ValueError.
    for fn, arg, marker in ((if_on_int, 2.0, "int-if"), (while_on_int, 3, "int-while")):
        with pytest.raises(ValueError) as e:
            gc.function(fn)(gc.constant(arg))
        assert isinstance(e.value, TypeError) and f":{line_of(marker)}" in str(e.value)
    with pytest.raises(TypeError) as e:
        gc.function(branches_of_two_structures)(gc.constant(1.0))
    assert isinstance(e.value, ValueError) and "different structures" in str(e.value)
    with pytest.raises(ValueError) as e:
        gc.function(none_in_loop)(gc.constant(3))
    assert isinstance(e.value, TypeError) and "'y'" in str(e.value)
