"""`v -= c * (a @ b)` as one in-place BLAS gemm call on the numba backend: same results as
the numpy interpreter, in place when nothing else holds v, and a clean fallback."""
import numpy as np
import pytest

import graphc as gc
from graphc.kernels.cpu import blas
from graphc.kernels.cpu.backend import compile_plan, describe

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


# -- big products: plain, on fewer BLAS threads, or split across numba's threads ----------
@pytest.fixture
def every_way(monkeypatch):
    """Every product gets a measured choice, as if numba had two threads; `force(way)` makes
    that way the only one."""
    from graphc.kernels.cpu import blas_choice, blas_split
    monkeypatch.setattr(blas_choice, "CHOICE_MIN", 1)
    monkeypatch.setattr(blas_choice, "pool_threads", lambda: 2)     # two numba threads
    monkeypatch.setattr(blas_split, "enter", lambda threads: None)  # numba's own count
    monkeypatch.setattr(blas_choice, "_CHOICES", {})
    real = blas_choice.ways_for

    def force(way):
        monkeypatch.setattr(blas_choice, "ways_for",
                            lambda *a: [w for w in real(*a) if w == way])
    blas_choice.force = force
    return blas_choice


def _ways(dtype, m, n):
    from graphc.kernels.cpu import blas_choice
    return blas_choice.ways_for(dtype, m, n, max(2, blas.blas_threads()), 2)


@pytest.mark.parametrize("way", ["plain", "fewer", "split"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,n", [(9, 4), (4, 9)])           # split by rows, by columns
def test_every_way_agrees_with_numpy(every_way, way, dtype, ta, tb, m, n):
    if way not in _ways(dtype, m, n):
        pytest.skip(f"{way} is not available with this BLAS")
    every_way.force(way)
    rng = np.random.default_rng(m * 10 + n)
    a = rng.standard_normal((m, 5)).astype(dtype)
    b = rng.standard_normal((5, n)).astype(dtype)
    A, B = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
    before = blas.blas_threads()
    for _ in range(every_way.BATCH + 1):                    # a first run, then one batch
        got = blas.matmul(A, B, transpose_a=ta, transpose_b=tb)
        assert got.dtype == dtype and got.shape == (m, n)
        np.testing.assert_allclose(got, a @ b, rtol=1e-5 if dtype == np.float32 else 1e-12)
    assert blas.blas_threads() == before                    # the user's count is back
    (choice,) = every_way._CHOICES.values()
    assert choice.ways == (way,) and choice.means[way]      # it ran, and was timed


def test_fewer_runs_the_call_on_fewer_blas_threads(every_way, monkeypatch):
    if not blas.can_lower():
        pytest.skip("this BLAS cannot set its thread count")
    every_way.force("fewer")
    monkeypatch.setattr(every_way.cores, "free_cores", lambda: 1)
    seen, real_call = [], blas.call_gemm

    def call(*args):
        seen.append(blas.blas_threads())
        return real_call(*args)
    monkeypatch.setattr(blas, "call_gemm", call)
    user = blas.blas_threads()
    blas.set_blas_threads(2)
    try:
        a = np.ones((8, 6), np.float32)
        np.testing.assert_array_equal(blas.matmul(a, a, transpose_b=True), a @ a.T)
        assert seen == [1] and blas.blas_threads() == 2
    finally:
        blas.set_blas_threads(user)


def test_fewer_threads_nest_across_callers(monkeypatch):
    """Calls from two threads overlapping: the first in lowers the count, the last out
    puts back the one it found (a fake BLAS records every set)."""
    count, sets = [4], []
    monkeypatch.setitem(blas._state, "blas_threads", lambda: count[0])
    monkeypatch.setitem(blas._state, "set_threads", lambda n: (sets.append(n),
                                                                count.__setitem__(0, n)))
    fewer = blas._Fewer()
    monkeypatch.setattr(blas, "FEWER", fewer)
    fewer.enter(1)
    assert count == [1] and blas.user_threads() == 4
    fewer.enter(3)                          # a second caller: the count stays lowered
    fewer.leave()
    assert count == [1]
    fewer.leave()
    assert count == [4] and sets == [1, 4] and blas.user_threads() == 4
    fewer.enter(8)                          # more than the user's count: left alone
    fewer.leave()
    assert sets == [1, 4]


def test_split_fused_update_in_a_compiled_step(every_way):
    if "split" not in _ways(np.float32, 160, 120):
        pytest.skip("this BLAS has no ILP64 gemm to split with")
    every_way.force("split")
    got, graph = _run("numba", BODIES["sub_scaled_transpose_a"], np.float32, steps=4)
    want, _ = _run("numpy", BODIES["sub_scaled_transpose_a"], np.float32, steps=4)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert [c.ways for c in every_way._CHOICES.values()] == [("split",)]


def test_fewer_from_several_threads_agrees_and_puts_the_count_back(every_way):
    """Overlapping calls on fewer BLAS threads from four threads: every product is right and
    numpy's BLAS count is the user's again once they are all out."""
    import threading
    if not blas.can_lower():
        pytest.skip("this BLAS cannot set its thread count")
    every_way.force("fewer")
    user = blas.blas_threads()
    blas.set_blas_threads(2)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((300, 300)).astype(np.float32)    # ~1 ms: calls overlap
    b = rng.standard_normal((300, 300)).astype(np.float32)
    want, bad = a @ b, []

    def work():
        for _ in range(30):
            got = blas.matmul(a, b)
            if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                bad.append(got)
    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not bad and blas.blas_threads() == 2 and blas.FEWER.depth == 0
    finally:
        blas.set_blas_threads(user)
