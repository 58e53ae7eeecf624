"""`v -= c * (a @ b)` as one in-place BLAS gemm call on the numba backend: same results as
the numpy interpreter, in place when nothing else holds v, and a clean fallback."""
import numpy as np
import pytest

import graphc as gc
from graphc.kernels import blas
from graphc.kernels.cpu import compile_plan, describe

pytestmark = [pytest.mark.usefixtures("kernel_env"),
              pytest.mark.skipif(not blas.available(), reason="numpy's BLAS exports no gemm")]

SHAPES = {"w": (160, 120), "a": (200, 160), "g": (200, 120)}


def _run(backend, body, dtype, steps=2):
    rng = np.random.default_rng(7)
    w = gc.Variable(rng.standard_normal(SHAPES["w"]).astype(dtype))
    a = rng.standard_normal(SHAPES["a"]).astype(dtype)
    g = rng.standard_normal(SHAPES["g"]).astype(dtype)
    fn = gc.function(lambda a, g: body(w, a, g), backend=backend)
    for _ in range(steps):
        fn(a, g)
    return w.numpy(), fn.get_concrete_function(a, g).graph


BODIES = {
    "sub_scaled_transpose_a": lambda w, a, g: w.assign_sub(
        0.01 * gc.matmul(a, g, transpose_a=True)),
    "add_scaled_right": lambda w, a, g: w.assign_add(
        gc.matmul(gc.transpose(a), g) * 0.5),
    "sub_unscaled_transpose_b": lambda w, a, g: w.assign_sub(
        gc.matmul(gc.transpose(a), gc.transpose(g), transpose_b=True)),
    # the operand is the variable's own array: the update must go to a copy
    "reads_itself": lambda w, a, g: w.assign_sub(
        0.001 * gc.matmul(w, gc.matmul(w, w, transpose_a=True))),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(BODIES))
def test_fused_update_agrees_with_the_interpreter(name, dtype):
    got, graph = _run("numba", BODIES[name], dtype)
    want, _ = _run("numpy", BODIES[name], dtype)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got, want, **tol)
    assert compile_plan(graph).blas, "the update was not fused"
    assert "into one in-place BLAS gemm call" in describe(graph)


def test_update_of_a_variable_read_in_the_same_step_uses_it_before_the_update():
    def body(w, a, g):
        before = gc.reduce_sum(w * 1.0)
        w.assign_sub(0.5 * gc.matmul(a, g, transpose_a=True))
        return before
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal(SHAPES["w"]).astype(np.float32)
    for backend in ("numba", "numpy"):
        w = gc.Variable(w0)
        a = rng.standard_normal(SHAPES["a"]).astype(np.float32)
        g = rng.standard_normal(SHAPES["g"]).astype(np.float32)
        out = gc.function(lambda a, g: body(w, a, g), backend=backend)(a, g)
        np.testing.assert_allclose(out.numpy(), w0.sum(), rtol=1e-4)
        np.testing.assert_allclose(w.numpy(), w0 - 0.5 * a.T @ g, rtol=1e-4, atol=1e-4)


def test_small_updates_and_missing_blas_keep_the_plain_ops(monkeypatch):
    small = lambda w, a, g: w.assign_sub(0.1 * gc.matmul(a, g, transpose_a=True))  # noqa: E731
    monkeypatch.setitem(SHAPES, "w", (4, 3))
    monkeypatch.setitem(SHAPES, "a", (5, 4))
    monkeypatch.setitem(SHAPES, "g", (5, 3))
    got, graph = _run("numba", small, np.float32)
    assert not compile_plan(graph).blas                     # below MIN_ELEMENTS
    np.testing.assert_allclose(got, _run("numpy", small, np.float32)[0], rtol=1e-5)
    monkeypatch.setattr(blas, "_GEMM", {})
    monkeypatch.setattr(blas, "MIN_ELEMENTS", 0)
    got, graph = _run("numba", small, np.float32)
    assert not compile_plan(graph).blas
    np.testing.assert_allclose(got, _run("numpy", small, np.float32)[0], rtol=1e-5)


def test_gemm_declines_operands_it_cannot_take():
    w = gc.Variable(np.zeros((3, 2), np.float32))
    a = np.ones((3, 4), np.float32)
    assert not blas.gemm_update(w, a, np.ones((4, 2), np.float64), 1.0, -1.0, False, False)
    assert not blas.gemm_update(w, a, np.ones((5, 2), np.float32), 1.0, -1.0, False, False)
    assert blas.gemm_update(w, a, np.ones((4, 2), np.float32), 2.0, -1.0, False, False)
    np.testing.assert_array_equal(w.numpy(), -8.0)
