"""Probe findings (issue 15) in the cuda plan: run-time errors of device steps name the
run-time shapes (not the traced `?`), and describe() shows what the kernels did."""
import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels.cuda import backend

ANY2 = gc.TensorSpec([None, None], gc.float32)


def test_matmul_shape_error_names_runtime_shapes():
    f = gc.function(lambda a, b: gc.matmul(a, b) * 2.0, backend="cuda",
                    input_signature=[ANY2, ANY2])
    with pytest.raises(InvalidArgumentError, match=r"matmul.*on float32\[2,3\], "
                       r"float32\[4,2\]\).*test_probe_plan\.py:\d+"):
        f(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))


def test_device_input_error_names_runtime_shapes():
    from numba import cuda
    v = gc.Variable(np.zeros(3, np.float32))
    f = gc.function(lambda x: v.assign(x), backend="cuda",
                    input_signature=[gc.TensorSpec([None], gc.float32)])
    with pytest.raises(InvalidArgumentError, match=r"on Variable, "
                       r"float32\[4\]\).*test_probe_plan\.py:\d+"):
        f(cuda.to_device(np.ones(4, np.float32)))
    assert np.array_equal(v.numpy(), np.zeros(3, np.float32))


def test_describe_after_a_run_shows_the_kernels_launched():
    f = gc.function(lambda x: gc.nn.softmax(x * 2.0), backend="cuda")
    x = gc.constant(np.ones((2, 3), np.float32))
    f(x)
    text = backend.describe(f.get_concrete_function(x).graph)
    assert "not run yet" not in text
    assert "cuda row kernel over [2, 3]; launches row[" in text and "[ran 1x]" in text
