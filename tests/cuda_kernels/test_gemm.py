"""matmul on the device (the tiled shared-memory kernel under the simulator) against the
numpy rule: transposes, batch dims broadcast as numpy does, integer wrap-around, edges."""
import numpy as np
import pytest
from numba import cuda

from graphc.kernels.cuda import gemm
from graphc.kernels.cuda.lowering import matmul
from graphc.runtime.registry import REGISTRY
from cuda_kernel_helpers import assert_same

T = gemm.TILE


def _rule(a, b, **attrs):
    return REGISTRY["matmul"].numpy(a, b, **attrs)


def _run(a, b, **attrs):
    out = matmul(cuda.to_device(a), cuda.to_device(b), **attrs)
    return out.copy_to_host()


def _operands(dtype, a_shape, b_shape, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(a_shape).astype(dtype),
                rng.standard_normal(b_shape).astype(dtype))
    return (rng.integers(-9, 9, a_shape).astype(dtype),
            rng.integers(-9, 9, b_shape).astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_transposes_and_dtypes(dtype, ta, tb):
    m, k, n = T + 1, 2 * T + 3, T - 1       # not multiples of the tile
    a, b = _operands(dtype, (k, m) if ta else (m, k), (n, k) if tb else (k, n))
    got = _run(a, b, transpose_a=ta, transpose_b=tb)
    want = _rule(a, b, transpose_a=ta, transpose_b=tb)
    tol = {"float32": 1e-5, "float64": 1e-12}.get(dtype, 0)
    assert_same(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("a_shape,b_shape", [((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 2)),
                                             ((2, 1, 3, 4), (1, 3, 4, 2)),
                                             ((3, 1, 2), (3, 2, 3))])
def test_batch_dims_broadcast_as_numpy(a_shape, b_shape):
    a, b = _operands("float32", a_shape, b_shape, 1)
    assert_same(_run(a, b), _rule(a, b, transpose_a=False, transpose_b=False), rtol=1e-5,
                atol=1e-6)


def test_integer_products_and_sums_wrap():
    a = np.full((2, 3), np.iinfo(np.int32).max, np.int32)
    b = np.full((3, 2), 3, np.int32)
    assert_same(_run(a, b), _rule(a, b, transpose_a=False, transpose_b=False))


def test_nan_and_inf_propagate():
    a, b = _operands("float32", (3, 4), (4, 3), 2)
    a[0, 1], b[2, 2] = np.nan, np.inf
    assert_same(_run(a, b), _rule(a, b, transpose_a=False, transpose_b=False), rtol=1e-5,
                atol=1e-6)


def test_empty_inner_and_outer_dims():
    a, b = _operands("float64", (3, 0), (0, 2))
    assert_same(_run(a, b), _rule(a, b, transpose_a=False, transpose_b=False))
    a, b = _operands("float64", (0, 4), (4, 2))
    assert _run(a, b).shape == (0, 2)


def test_mismatched_shapes_raise_the_numpy_rules_error():
    a, b = _operands("float32", (3, 4), (5, 2))
    with pytest.raises(Exception) as want:
        _rule(a, b, transpose_a=False, transpose_b=False)
    with pytest.raises(type(want.value)) as got:
        _run(a, b)
    assert str(got.value) == str(want.value)


def test_other_dtypes_run_the_numpy_rule_on_host_copies():
    a, b = _operands("int16", (3, 4), (4, 2))
    assert_same(_run(a, b), _rule(a, b, transpose_a=False, transpose_b=False))
