"""`& | ^ ~` on tensors as in TF: logical on bool tensors, bitwise on integer ones
(tf.bitwise), with the same results eagerly, on the numpy backend and in numba kernels."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import graphc as gc

OPS = {
    "and": (lambda a, b: a & b, np.bitwise_and),
    "or": (lambda a, b: a | b, np.bitwise_or),
    "xor": (lambda a, b: a ^ b, np.bitwise_xor),
    "invert": (lambda a, b: ~a, lambda a, b: np.invert(a)),
    "mixed": (lambda a, b: (a & b) + (a | 3) * 2 - (a ^ b) + ~b,
              lambda a, b: (a & b) + (a | 3) * 2 - (a ^ b) + ~b),
}


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", sorted(OPS))
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])   # env only
@given(data=st.data())
def test_integer_operators_are_bitwise(name, dtype, data, numba_forced):
    ints = hnp.from_dtype(np.dtype(dtype))
    a = data.draw(hnp.arrays(dtype, 5, elements=ints))
    b = data.draw(hnp.arrays(dtype, 5, elements=ints))
    fn, ref = OPS[name]
    with np.errstate(over="ignore"):
        want = ref(a, b)
    eager = fn(gc.constant(a), gc.constant(b))
    assert eager.dtype == gc.as_dtype(dtype)
    np.testing.assert_array_equal(eager.numpy(), want)
    np.testing.assert_array_equal(gc.function(fn, backend="numpy")(a, b).numpy(), want)
    # a lone integer op runs numpy's rule: a second op makes it a fused kernel
    with numba_forced.expect(kernels=True):
        got = gc.function(lambda a, b: fn(a, b) - b, backend="numba")(a, b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got.numpy(), want - b)


def test_python_ints_take_the_tensor_dtype():
    a = gc.constant([5, 6], gc.int64)
    assert (7 & a).dtype == gc.int64 and (a ^ 1).dtype == gc.int64
    np.testing.assert_array_equal((7 & a).numpy(), [5, 6])
    np.testing.assert_array_equal((a | 8).numpy(), [13, 14])


def test_bool_operators_stay_logical_and_xor_exists():
    p, q = gc.constant([True, True, False]), gc.constant([True, False, False])
    np.testing.assert_array_equal((p ^ q).numpy(), [False, True, False])
    np.testing.assert_array_equal((p ^ True).numpy(), [False, False, True])
    np.testing.assert_array_equal((~p | q).numpy(), [True, False, True])
    np.testing.assert_array_equal(gc.logical_xor(p, q).numpy(), [False, True, False])
    f = gc.function(lambda p, q: (p ^ q) & ~q)
    np.testing.assert_array_equal(f(p, q).numpy(), [False, True, False])


@pytest.mark.parametrize("fn,match", [
    (lambda: gc.constant([1.0]) & 1, "logical_and: input has dtype float32 but needs bool"),
    (lambda: ~gc.constant([1.0]), "invert: input has dtype float32 but needs an integer"),
    (lambda: gc.constant([1]) | gc.constant([True]), "bitwise_or: operands have different"),
    (lambda: gc.constant([1]) ^ gc.constant([1], gc.int64), "int32 and int64"),
])
def test_bad_operands_are_type_errors(fn, match):
    with pytest.raises(TypeError, match=match):
        fn()
    with pytest.raises(TypeError, match=match):
        gc.function(fn)()
