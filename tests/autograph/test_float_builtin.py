"""AutoGraph's float(tensor), as TF's py_builtins.float_: a scalar tensor becomes a float
tensor (ints and bools cast to float32) instead of an error while tracing; eager, the numpy
interpreter and numba kernels agree."""
import numpy as np
import pytest

import graphc as gc


def scaled(t, x):
    return x * float(t) + x, float(t)


# TF 2.21: tf.function(lambda t: float(t)) gives float32 3.0, 1.0, 2.5, 1.0995116e+12
@pytest.mark.parametrize("value, want", [
    (np.int32(3), 3.0), (True, 1.0), (np.float32(2.5), 2.5),
    (np.int64(2 ** 40 + 1), np.float32(1.0995116e12))])
def test_float_of_a_scalar_tensor_is_tfs_float32(numba_forced, value, want):
    t, x = gc.constant(value), gc.constant([1.0, -2.0])
    eager = scaled(t, x)
    assert isinstance(eager[1], float)
    prod, as_float = gc.function(scaled, backend="numpy")(t, x)
    with numba_forced.expect(kernels=True):
        runs = [(prod, as_float), gc.function(scaled, backend="numba")(t, x)]
    for prod, as_float in runs:
        assert as_float.dtype == gc.float32 and as_float.numpy() == np.float32(want)
        np.testing.assert_array_equal(prod.numpy(), eager[0].numpy())
        np.testing.assert_array_equal(prod.numpy(), (np.float32(want) + 1) * np.float32([1, -2]))


def test_float_of_a_float64_tensor_keeps_float64():
    """TF casts to float32 (0.1 rounds); graphc keeps eager's Python float value."""
    t, y = gc.constant(np.float64(0.1)), gc.constant(np.float64(3.0))
    prod, as_float = gc.function(scaled)(t, y)
    assert as_float.dtype == gc.float64 and as_float.numpy() == 0.1
    assert prod.numpy() == 3.0 * 0.1 + 3.0 == scaled(t, y)[0].numpy()


def test_float_of_python_values_and_vectors():
    f = gc.function(lambda s: float(s) + gc.constant(1.0))
    assert float(f("2.5")) == 3.5 and float(f(2)) == 3.0
    with pytest.raises(TypeError):              # eagerly: only 0-d arrays convert
        float(gc.constant([1.0, 2.0]))
    with pytest.raises(gc.errors.OperatorNotAllowedInGraphError):   # (TF casts the vector)
        gc.function(lambda v: float(v))(gc.constant([1.0, 2.0]))
