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


# -- big products split across threads -----------------------------------------------------
@pytest.fixture
def split_everything(monkeypatch):
    """Split even small products, as if numpy's BLAS ran one thread on a 2-thread numba."""
    from graphc.kernels import blas_split
    monkeypatch.setattr(blas_split, "SPLIT_MIN", 1)
    monkeypatch.setattr(blas, "blas_threads", lambda: 1)
    monkeypatch.setattr(blas_split, "pool_threads", lambda: 2)      # two numba threads
    monkeypatch.setattr(blas_split, "enter", lambda threads: None)  # numba's own count
    monkeypatch.setattr(blas_split, "_CHOICES", {})
    return blas_split


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,n", [(9, 4), (4, 9)])           # split by rows, by columns
def test_split_products_agree_with_numpy(split_everything, dtype, ta, tb, m, n):
    rng = np.random.default_rng(m * 10 + n)
    a = rng.standard_normal((m, 5)).astype(dtype)
    b = rng.standard_normal((5, n)).astype(dtype)
    A, B = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
    for _ in range(5):                            # split twice, single twice, then the faster
        got = blas.matmul(A, B, transpose_a=ta, transpose_b=tb)
        assert got.dtype == dtype and got.shape == (m, n)
        np.testing.assert_allclose(got, a @ b, rtol=1e-5 if dtype == np.float32 else 1e-12)
    choice = next(iter(split_everything._CHOICES.values()))
    assert None not in choice.avg                           # both variants were timed


def test_split_fused_update_in_a_compiled_step(split_everything):
    got, graph = _run("numba", BODIES["sub_scaled_transpose_a"], np.float32, steps=4)
    want, _ = _run("numpy", BODIES["sub_scaled_transpose_a"], np.float32, steps=4)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert split_everything._CHOICES


def test_split_choice_follows_the_faster_average(split_everything):
    c = split_everything._Choice()
    assert c.pick() is True                                 # first: split
    c.record(True, 50.0)                                    # (compiling: not counted)
    assert c.pick() is True
    c.record(True, 2.0)
    assert c.pick() is False                                # then the single call
    c.record(False, 9.0)
    assert c.pick() is False
    c.record(False, 1.0)
    assert c.split is False and c.avg == [1.0, 2.0]
    picks = [c.pick() for _ in range(split_everything.PROBE_EVERY * 2)]
    assert picks.count(True) == 2                           # probes the other side now and then


def test_split_choice_is_not_flipped_by_an_outlier(split_everything):
    c = split_everything._Choice()
    for split in (True, False):
        c.record(split, 99.0)                               # first runs: not samples
    for t in (1.0, 1.1, 0.9, 1.0):
        c.record(True, t)
    for t in (2.0, 2.1, 1.9):
        c.record(False, t)
    c.record(True, 100.0)                                   # one call on a busy machine
    assert c.split is True and c.avg == [2.0, 1.0]
