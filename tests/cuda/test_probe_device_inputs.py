"""Probe (issue 15): device arrays as inputs -- every dtype, 0-d, strided and Fortran-order
views into kernels and reductions, gc.constant of a device array (a host copy)."""
import numpy as np
import pytest
from numba import cuda

import graphc as gc


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_device_inputs_of_every_dtype_and_layout(dtype):
    x = (np.arange(24).reshape(4, 6) % 5 - 2).astype(dtype)
    f = gc.function(lambda a, b: [a == b, gc.reduce_any(a != b, axis=0)] if dtype == "bool"
                    else [a * b - a, gc.reduce_sum(a, axis=0), gc.reduce_max(a * 1, axis=-1)],
                    backend="cuda")
    for host in (x, np.asfortranarray(x)):
        got = f(cuda.to_device(host), cuda.to_device(host))
        want = f.python_function(gc.constant(host), gc.constant(host))
        for g, w in zip(got, want):
            assert g.is_on_device and g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g.numpy(), w.numpy())
        dev = cuda.to_device(x)[1:, ::2]          # a strided view of device memory
        got = f(dev, dev)
        want = f.python_function(gc.constant(x[1:, ::2]), gc.constant(x[1:, ::2]))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    scalar = gc.function(lambda a, b: a == b if dtype == "bool" else a * b - a, backend="cuda")
    got = scalar(cuda.to_device(x[2, 3]), cuda.to_device(x[2, 1]))         # 0-d
    want = scalar.python_function(gc.constant(x[2, 3]), gc.constant(x[2, 1]))
    assert got.shape == () and got.dtype == want.dtype and got.numpy() == want.numpy()


def test_constant_of_a_device_array_is_a_host_copy():
    d = cuda.to_device(np.array([1.0, 2.0], np.float32))
    c = gc.constant(d)
    d.copy_to_device(np.array([5.0, 5.0], np.float32))
    assert c.dtype == gc.float32 and c.numpy().tolist() == [1.0, 2.0]
    assert gc.constant(d, gc.float64).numpy().tolist() == [5.0, 5.0]
    f = gc.function(lambda: gc.constant(d) * 2.0, backend="cuda")   # baked in when traced
    assert f().numpy().tolist() == [10.0, 10.0]
    with pytest.raises(TypeError, match="int8 is not supported"):
        gc.constant(cuda.to_device(np.array([1], np.int8)))


@pytest.mark.parametrize("dtype", ["float64", "int64", "float32", "int32", "bool"])
def test_constant_of_a_device_array_keeps_its_dtype(dtype):
    """As for a host array: a float64 device array is not narrowed to float32."""
    x = np.array([0.1, 2**40, -3], np.float64).astype(dtype)
    c = gc.constant(cuda.to_device(x))
    assert c.dtype.name == dtype
    np.testing.assert_array_equal(c.numpy(), x)
    v = gc.Variable(cuda.to_device(x))
    assert v.dtype.name == dtype
