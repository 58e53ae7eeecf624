"""Column reductions (over leading axes), the small-group compile tier, and in-place
variable updates on the numba backend: each compared with the numpy interpreter."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from graphc.kernels.cpu import codegen, groups, output_pool
from graphc.kernels.cpu import kernel as cpu_kernel
from graphc.kernels.cpu.codegen_columns import BLOCK
from graphc.kernels.cpu.backend import compile_plan
from graphc.kernels.stats import COUNTS
from agreement_helpers import agree

pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py


def _sources(fn, *arrays):
    f = gc.function(fn, backend="numba")
    f(*arrays)
    plan = compile_plan(f.get_concrete_function(*arrays).graph)
    return [k.source for r in plan.groups for k in r.used.values()]


def _bias_grad(m, g, b):
    """A relu-masked gradient and its bias gradient, plus max/min/prod over axis 0."""
    w = gc.where(m, g, 0.0)
    return [w, gc.reduce_sum(w, axis=0), gc.reduce_max(g * b, axis=0, keepdims=True),
            gc.reduce_min(g - b, axis=0), gc.reduce_prod(gc.tanh(g) * 0.5 + 1.0, axis=0)]


@pytest.mark.parametrize("cols", [5, BLOCK + 3])
def test_leading_axis_reductions_use_the_column_layout_and_agree(cols):
    rng = np.random.default_rng(cols)
    g = rng.standard_normal((6, cols)).astype(np.float32)
    g[2, 1] = np.nan                                     # max/min must propagate NaN
    b = rng.standard_normal(cols).astype(np.float32)
    agree(_bias_grad, g > 0, g, b)
    assert any("for blk in range(" in s and "j in range(width)" in s
               for s in _sources(_bias_grad, g > 0, g, b))


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_column_reductions_over_two_leading_axes(dtype):
    x = (np.arange(2 * 3 * 5) % 7 - 3).astype(dtype).reshape(2, 3, 5)
    fn = lambda a: [gc.reduce_sum(a * a, axis=[0, 1]),  # noqa: E731
                    gc.reduce_max(a, axis=[0, 1], keepdims=True)]
    agree(fn, x)


def test_bool_column_reductions_and_empty_rows():
    x = np.array([[True, False, True], [True, True, False]])
    agree(lambda a: [gc.reduce_all(gc.logical_not(a), axis=0),
                     gc.reduce_any(gc.logical_not(a), axis=0)], x)
    agree(lambda a: gc.reduce_sum(a * 2.0, axis=0), np.zeros((0, 4), np.float32))


def test_parallel_column_variant_agrees(monkeypatch):
    monkeypatch.setattr(groups, "PAR_MIN", 0)
    g = np.random.default_rng(1).standard_normal((9, 2 * BLOCK + 1)).astype(np.float32)
    agree(lambda a: [gc.reduce_sum(a * 3.0, axis=0), gc.reduce_max(a, axis=0)], g)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(0, 9), cols=st.integers(1, 40), keep=st.booleans())
def test_column_reductions_hypothesis(rows, cols, keep):
    x = np.random.default_rng(rows * 100 + cols).standard_normal((rows, cols))
    agree(lambda a: [gc.reduce_sum(gc.exp(a) * a, axis=0, keepdims=keep),
                     gc.reduce_min(a, axis=0, keepdims=keep)], x.astype(np.float32))


def test_row_reductions_keep_the_row_layout():
    x = np.ones((4, 6), np.float32)
    srcs = _sources(lambda a: gc.reduce_sum(a * 2.0, axis=1), x)
    assert srcs and not any("for blk" in s for s in srcs)


# -- the compile tier for small groups -------------------------------------------------------
def _small_runner(monkeypatch, tmp_path, compile_after):
    monkeypatch.setenv("GRAPHC_NUMBA_MIN_SIZE", str(1 << 20))   # every test shape is small
    monkeypatch.setenv("GRAPHC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(groups, "COMPILE_AFTER", compile_after)
    cpu_kernel._KERNELS.clear()          # kernels loaded from another test's cache directory
    fn = gc.function(lambda a: gc.reduce_sum(gc.exp(a) * 0.5 + a, axis=1), backend="numba")
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    return fn, x, lambda: compile_plan(fn.get_concrete_function(x).graph).groups[0]


def test_small_group_runs_numpy_rules_until_it_has_cost_compile_after(monkeypatch, tmp_path):
    fn, x, runner = _small_runner(monkeypatch, tmp_path, compile_after=float("inf"))
    before = COUNTS.kernel_calls
    for _ in range(3):
        fn(x)
    assert not runner().used and COUNTS.kernel_calls == before   # still the numpy rules
    monkeypatch.setattr(groups, "COMPILE_AFTER", 0.0)
    fn(x)                                                 # this call's time crosses it
    got = fn(x)
    assert runner().used, "the group never got its kernel"
    assert COUNTS.kernel_calls > before
    want = (np.exp(x) * np.float32(0.5) + x).sum(axis=1)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_small_group_whose_kernel_is_on_disk_uses_it_at_once(monkeypatch, tmp_path):
    fn, x, runner = _small_runner(monkeypatch, tmp_path, compile_after=0.0)
    fn(x)
    fn(x)
    assert runner().used
    cpu_kernel._KERNELS.clear()                               # as in a new process
    monkeypatch.setattr(groups, "COMPILE_AFTER", float("inf"))
    fn2 = gc.function(lambda a: gc.reduce_sum(gc.exp(a) * 0.5 + a, axis=1), backend="numba")
    before = COUNTS.kernel_calls
    fn2(x)
    assert compile_plan(fn2.get_concrete_function(x).graph).groups[0].used
    assert COUNTS.kernel_calls > before


# -- in-place variable updates -------------------------------------------------------------
def test_sgd_update_happens_in_place_and_earlier_reads_keep_their_values():
    w = gc.Variable(np.ones((300, 80), np.float32))
    before = w.read_value()                               # an eager read: must not change

    @gc.function(backend="numba")
    def step(g):
        w.assign_sub(0.5 * (w * g))
        return gc.reduce_sum(w)

    g = np.full((300, 80), 2.0, np.float32)
    step(g)
    np.testing.assert_array_equal(before.numpy(), 1.0)    # copy on write for the read above
    del before
    buf = w._value.__array_interface__["data"][0]
    total = step(g)                                       # nothing else holds w: in place
    assert w._value.__array_interface__["data"][0] == buf
    np.testing.assert_array_equal(w.numpy(), 0.0)
    assert float(total) == 0.0


@pytest.mark.parametrize("rows", [1, 64, 130])
def test_row_buffers_in_chunks_of_rows_agree(monkeypatch, rows):
    """Softmax keeps exp(x - max) in a row buffer allocated once per chunk of rows."""
    monkeypatch.setattr(groups, "PAR_MIN", 0)
    x = np.random.default_rng(rows).standard_normal((rows, 9)).astype(np.float32)
    got = agree(lambda a: gc.nn.softmax(a * 2.0), x)
    np.testing.assert_allclose(got[0].numpy().sum(axis=1), 1.0, rtol=1e-5)
    assert any("# row buffer" in s for s in _sources(lambda a: gc.nn.softmax(a * 2.0), x))


# -- output buffers ------------------------------------------------------------------------
def test_big_outputs_are_reused_only_once_nothing_refers_to_them(monkeypatch):
    monkeypatch.setattr(output_pool.OutputPool, "MIN_BYTES", 64)
    fn = gc.function(lambda a: gc.exp(a) * 2.0 + 1.0, backend="numba")
    x = np.linspace(0, 1, 100, dtype=np.float32)
    want = np.exp(x) * np.float32(2) + np.float32(1)
    kept = fn(x)                                   # held: its buffer must not be reused
    held = kept.numpy().copy()
    fn(x * 0)
    np.testing.assert_array_equal(kept.numpy(), held)
    addr = lambda t: t.numpy().__array_interface__["data"][0]  # noqa: E731
    first = addr(fn(x))                            # dropped at once...
    assert addr(fn(x)) == first                    # ...so the next call writes into it
    view = fn(x).numpy()[10:20]                    # a view keeps its base alive
    other = fn(x)
    np.testing.assert_allclose(view, want[10:20], rtol=1e-6)
    np.testing.assert_allclose(other.numpy(), want, rtol=1e-6)


def test_column_sweeps_compile_to_packed_adds(monkeypatch, tmp_path):
    """The bias-gradient sum over axis 0 vectorizes (packed float adds): with a block
    offset LLVM cannot see is >= 0, numba's negative-index fix-up kept it scalar."""
    import re
    monkeypatch.setenv("GRAPHC_CACHE_DIR", str(tmp_path))     # compiled here: inspectable
    rng = np.random.default_rng(5)
    g = rng.standard_normal((16, 300)).astype(np.float32)
    fn = lambda m, a: [gc.where(m, a, 0.0), gc.reduce_sum(gc.where(m, a, 0.0), axis=0)]  # noqa: E731
    agree(fn, g > 0, g)
    kernels = [k for k in cpu_kernel._KERNELS.values()
               if k.serial is not None and "for blk in range(" in k.source and "where" in k.source]
    assert kernels
    asm = "\n".join(a for k in kernels for a in k.serial.inspect_asm().values())
    assert re.search(r"\bv?addps\s+[^\n]*[xyz]mm", asm)
