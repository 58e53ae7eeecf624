"""The numba backend: wiring, kernel cache, measured choice, whole-loop compilation, describe."""
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels import cache
from graphc.kernels.cpu import backend as cpu, groups
from graphc.kernels.cpu import kernel as cpu_kernel
from graphc.kernels.stats import COUNTS
from graphc.runtime.backends import get_backend

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py


def chain(x, a, b):
    return gc.tanh(a * x + b) * gc.exp(-x * x) + 0.5 * gc.sin(x)


def chain_np(x, a, b):
    return np.tanh(a * x + b) * np.exp(-x * x) + np.float32(0.5) * np.sin(x)


def _plan(f, *args):
    return f.get_concrete_function(*args).graph._numba_plan


def test_numba_backend_is_registered_and_runs_eager_equal_results(numba_forced):
    assert get_backend("numba").name == "numba"
    x = np.linspace(-2, 2, 50, dtype=np.float32)
    a, b = np.float32(1.5), np.float32(0.25)
    f = gc.function(chain, backend="numba")
    with numba_forced.expect(kernels=True):
        got = f(x, a, b)
    eager = chain(gc.constant(x), gc.constant(a), gc.constant(b))
    assert got.dtype == gc.float32 and got.shape == (50,)
    np.testing.assert_allclose(got.numpy(), eager.numpy(), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got.numpy(), chain_np(x, a, b), rtol=2e-6, atol=1e-7)
    assert _plan(f, x, a, b).groups[0].used


def test_new_batch_size_reuses_the_kernel_without_compiling(monkeypatch):
    f = gc.function(lambda x: gc.exp(x * 2.0) - x, backend="numba")
    f(np.ones((3, 4), np.float32))
    before = dict(cache.STATS)
    built = []
    real = cpu_kernel.Kernel.load
    monkeypatch.setattr(cpu_kernel.Kernel, "load", lambda self: (built.append(self), real(self)))
    y = f(np.ones((9, 4), np.float32))          # a retrace for a new batch size
    assert f.tracing_count == 2 and not built and cache.STATS == before
    np.testing.assert_allclose(y.numpy(), np.exp(2.0) - 1, rtol=1e-6)


def test_kernel_below_the_size_threshold_is_not_compiled(monkeypatch, tmp_path):
    monkeypatch.setenv("GRAPHC_NUMBA_MIN_SIZE", "1000")
    # a small group's kernel already on disk (another test may have built this one) is
    # used at once, and one whose numpy rules cost COMPILE_AFTER is compiled: neither here
    monkeypatch.setenv("GRAPHC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(groups, "COMPILE_AFTER", float("inf"))
    f = gc.function(lambda x: gc.sqrt(x * 3.0) + 1.0, backend="numba")
    x = np.arange(10, dtype=np.float32)
    before = COUNTS.snapshot()
    np.testing.assert_allclose(f(x).numpy(), np.sqrt(x * 3) + 1, rtol=1e-6)
    assert COUNTS.snapshot() == before, "a kernel ran below the size threshold"
    assert not _plan(f, x).groups[0].used
    assert "not run yet (not in the disk cache" in cpu.describe(f.get_concrete_function(x).graph)


def _numba_cache_files(kernel):
    """numba's cached machine code for one generated kernel module: always in graphc's
    `kernels/__pycache__` (graphc/kernels/cache_numba.py), never NUMBA_CACHE_DIR."""
    stem = pathlib.Path(cache._module_path(kernel.key)).stem
    folder = pathlib.Path(kernel.serial._cache.cache_path)
    return sorted(folder.glob(stem + ".*"))


def _only_kernel(f, *args):
    """The kernel of f's one fused group, which must have run it without a fallback."""
    (runner,) = _plan(f, *args).groups
    assert not runner.fallbacks, runner.fallbacks
    (kernel,) = runner.used.values()
    return kernel


def _forget_loaded_kernels(kernel):
    """As in a new process: the kernel module is imported again (numba reads its cache)."""
    cpu_kernel._KERNELS.clear()
    sys.modules.pop("graphc_kernels_" + pathlib.Path(cache._module_path(kernel.key)).stem, None)


def test_corrupt_module_file_is_rebuilt_and_result_stays_right(numba_forced):
    fn = lambda x: gc.cos(x * 1.25) * 3.0    # noqa: E731
    x = np.linspace(0, 1, 16, dtype=np.float32)
    f = gc.function(fn, backend="numba")
    f(x)
    kernel = _only_kernel(f, x)
    target = pathlib.Path(cache._module_path(kernel.key))
    compiled = _numba_cache_files(kernel)
    assert target.is_file() and compiled, "numba cached no machine code for the kernel"
    target.write_text("this is not python (\n")
    for path in compiled:
        path.write_bytes(b"garbage")
    _forget_loaded_kernels(kernel)
    rebuilt = cache.STATS["rebuilt"]
    f = gc.function(fn, backend="numba")
    with numba_forced.expect(kernels=True):
        got = f(x)
    assert cache.STATS["rebuilt"] == rebuilt + 1
    np.testing.assert_allclose(got.numpy(), np.cos(x * 1.25) * 3, rtol=1e-6)
    assert target.read_text().startswith("# graphc kernel")
    assert _only_kernel(f, x).key == kernel.key


def test_corrupt_numba_cache_is_never_a_crash(numba_forced):
    fn = lambda x: gc.sin(x * 0.75) + x    # noqa: E731
    x = np.linspace(0, 1, 16, dtype=np.float32)
    f = gc.function(fn, backend="numba")
    f(x)
    kernel = _only_kernel(f, x)
    compiled = _numba_cache_files(kernel)
    assert compiled, "numba cached no machine code for the kernel"
    garbage = b"\x00not a numba cache"
    for path in compiled:
        path.write_bytes(garbage)
    _forget_loaded_kernels(kernel)
    got = gc.function(fn, backend="numba")(x)
    np.testing.assert_allclose(got.numpy(), np.sin(x * 0.75) + x, rtol=1e-6)
    # this process may run the numpy rules; the corrupt files are not left for the next one
    assert not any(p.exists() and p.read_bytes() == garbage for p in compiled)
    _forget_loaded_kernels(kernel)
    f = gc.function(fn, backend="numba")
    with numba_forced.expect(kernels=True):
        got = f(x)
    np.testing.assert_allclose(got.numpy(), np.sin(x * 0.75) + x, rtol=1e-6)
    assert _only_kernel(f, x).key == kernel.key


def test_cache_dir_writable_by_others_is_not_trusted(tmp_path, monkeypatch):
    bad = tmp_path / "shared"
    bad.mkdir()
    os.chmod(bad, 0o777)
    monkeypatch.setenv("GRAPHC_CACHE_DIR", str(bad))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        used = cache.cache_dir()
    assert used != str(bad) and os.path.isdir(used)
    assert any("writable by others" in str(m.message) and str(bad) in str(m.message)
               for m in w)
    assert not (os.stat(used).st_mode & 0o077)
    os.rmdir(used)                    # the fallback directory the test made (still empty)
    monkeypatch.undo()
    assert cache.cache_dir() == os.environ["GRAPHC_CACHE_DIR"]


def test_warm_disk_cache_serves_a_new_process(kernel_env):
    code = ("import numpy as np, graphc as gc\n"
            "from graphc.kernels import cache\n"
            "from graphc.kernels.stats import COUNTS\n"
            "f = gc.function(lambda x: gc.tanh(x * 0.5) * 2.0, backend='numba')\n"
            "y = f(np.ones(8, np.float32))\n"
            "assert abs(float(y.numpy()[0]) - 2 * np.tanh(0.5)) < 1e-6\n"
            "print(cache.STATS['hits'], cache.STATS['misses'], COUNTS.kernel_calls)\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    (hits1, misses1, ran1), (hits2, misses2, ran2) = (map(int, r.stdout.split()) for r in runs)
    assert hits1 + misses1 == 1 and ran1 > 0     # one kernel, built (or found) and run
    assert (hits2, misses2) == (1, 0) and ran2 > 0   # the next process finds it on disk


def test_measured_choice_is_recorded_persisted_and_described(monkeypatch, kernel_env):
    monkeypatch.setenv("GRAPHC_KERNEL_CHOICE", "measure")
    f = gc.function(lambda x: gc.exp(x * 0.5) + gc.log1p(x * x), backend="numba")
    x = np.linspace(0, 2, 64, dtype=np.float32)
    np.testing.assert_allclose(f(x).numpy(), np.exp(x * 0.5) + np.log1p(x * x), rtol=1e-6)
    runner = _plan(f, x).groups[0]
    ((key, klass), decision), = runner.decisions.items()
    assert decision["choice"] in ("kernel", "numpy")
    assert decision["kernel_s"] > 0 and decision["numpy_s"] > 0
    assert cache.get_choice(key, klass)["choice"] == decision["choice"]
    text = cpu.describe(f.get_concrete_function(x).graph)
    assert f"choice for {klass}: {decision['choice']}" in text


def test_describe_lists_groups_sources_and_cache(monkeypatch):
    # kernels are shared by every graph in the process, and a kernel's source names the
    # lines of the graph that built it: start from none, so this graph builds its own
    monkeypatch.setattr(cpu_kernel, "_KERNELS", {})
    x = np.ones((4, 6), np.float32)
    f = gc.function(lambda v: gc.nn.softmax(v * 2.0), backend="numba")
    f(x)
    text = cpu.describe(f.get_concrete_function(x).graph)
    assert "group_0" in text and "reduced axes [1]" in text
    assert "def fused_kernel(" in text and "test_cpu_backend.py" in text
    assert "kernel cache" in text and "hits" in text


def test_debug_level_3_prints_kernel_source(monkeypatch, capsys):
    monkeypatch.setenv("GRAPHC_DEBUG", "3")
    cpu_kernel._KERNELS.clear()
    gc.function(lambda v: gc.abs(v * 5.0) - v, backend="numba")(np.ones(5, np.float32))
    err = capsys.readouterr().err
    assert "// graphc kernel for group_0" in err and "abs(" in err and "test_cpu_backend.py:" in err


def test_runtime_broadcast_with_unknown_dims_matches_numpy(numba_forced):
    f = gc.function(lambda a, b: gc.exp(a * b) + b, backend="numba",
                    input_signature=[gc.TensorSpec([None, None], gc.float32),
                                     gc.TensorSpec([None, None], gc.float32)])
    rng = np.random.default_rng(0)
    for sa, sb in [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((3, 1), (3, 4)), ((1, 1), (2, 5))]:
        a = rng.random(sa, dtype=np.float32)
        b = rng.random(sb, dtype=np.float32)
        with numba_forced.expect(kernels=True):
            got = f(a, b)
        np.testing.assert_allclose(got.numpy(), np.exp(a * b) + b, rtol=1e-6)
    (runner,) = _plan(f, a, b).groups
    assert runner.used and not runner.fallbacks, runner.fallbacks


def test_op_error_at_run_time_names_the_op():
    f = gc.function(lambda a, b: gc.exp(a * 2.0) + b, backend="numba",
                    input_signature=[gc.TensorSpec([None], gc.float32),
                                     gc.TensorSpec([None], gc.float32)])
    with pytest.raises(InvalidArgumentError, match="multiply|add|broadcast"):
        f(np.ones(3, np.float32), np.ones(4, np.float32))


# -- whole-loop compilation -------------------------------------------------------------

def _loop_report(f, *args):
    return _plan(f, *args).loops


def test_scalar_while_loop_compiles_to_one_native_function(numba_forced):
    @gc.function(backend="numba")
    def f(n):
        s = gc.constant(0, gc.int32)
        i = gc.constant(0, gc.int32)
        while i < n:
            s += i * i % 7
            i += 1
        return s
    n = gc.constant(2000, gc.int32)
    with numba_forced.expect(loops=True):
        assert int(f(n)) == sum(i * i % 7 for i in range(2000))
    ((op, runner, reason),) = _loop_report(f, n)
    assert runner is not None and reason is None and "while True:" in runner.source
    assert runner.fn is not None and runner.error is None


def test_branchy_loop_over_a_tensor_compiles_and_agrees(numba_forced):
    def body(x):
        acc = gc.constant(0.0, gc.float32)
        for i in gc.range(20):
            if x[i] > 0:
                acc += x[i] ** 2
            else:
                acc -= x[i]
        return acc
    x = np.random.default_rng(1).standard_normal(20).astype(np.float32)
    fast, ref = gc.function(body, backend="numba"), gc.function(body, backend="numpy")
    with numba_forced.expect(loops=True):
        got = float(fast(x))
    np.testing.assert_allclose(got, float(ref(x)), rtol=1e-5)
    np.testing.assert_allclose(got, np.sum(np.where(x > 0, x * x, -x)), rtol=1e-5)
    ((op, runner, reason),) = _loop_report(fast, x)
    assert runner is not None and "if " in runner.source


def test_index_out_of_range_in_compiled_loop_raises_the_reference_error(numba_forced):
    @gc.function(backend="numba")
    def f(x, n):
        acc = gc.constant(0.0, gc.float32)
        for i in gc.range(n):
            acc += x[i]
        return acc
    x = np.ones(4, np.float32)
    with numba_forced.expect(loops=True):
        assert float(f(x, gc.constant(4))) == 4.0
    with numba_forced.expect(loops=True):       # the compiled loop runs, then raises
        with pytest.raises((InvalidArgumentError, IndexError), match="index|out of"):
            f(x, gc.constant(6))


def test_loop_with_unknown_shape_state_falls_back_with_reason():
    """Static-shape tensor state lowers (tests/kernels/test_loops_tensor.py); unknown dims not."""
    @gc.function(backend="numba", input_signature=[gc.TensorSpec([None], gc.float32)])
    def f(v):
        i = gc.constant(0)
        while i < 3:
            v = v * 2.0
            i += 1
        return v
    x = np.ones(4, np.float32)
    np.testing.assert_allclose(f(x).numpy(), 8 * x)
    ((op, runner, reason),) = _loop_report(f, x)
    assert runner is None and "shape [?]" in reason and "static shape" in reason
    assert "interpreted, because" in cpu.describe(f.get_concrete_function(x).graph)


def test_measured_choice_times_both_kernel_variants(monkeypatch, all_cores_free):
    monkeypatch.setenv("GRAPHC_KERNEL_CHOICE", "measure")
    monkeypatch.setattr(groups, "PAR_MIN", 0)
    f = gc.function(lambda x: gc.exp(x * 0.25) - gc.sqrt(x * x + 1.0), backend="numba")
    x = np.linspace(-3, 3, 40, dtype=np.float32).reshape(8, 5)
    np.testing.assert_allclose(f(x).numpy(), np.exp(x * 0.25) - np.sqrt(x * x + 1), rtol=1e-6,
                               atol=1e-6)
    ((_, decision),) = _plan(f, x).groups[0].decisions.items()
    assert decision["serial_s"] > 0 and decision["parallel_s"] > 0
    best = min(decision["serial_s"], decision["parallel_s"])
    assert decision["kernel_s"] == best
    assert decision["variant"] == ("serial" if decision["serial_s"] == best else "parallel")
    assert decision["choice"] == ("kernel" if best <= decision["numpy_s"] else "numpy")


def test_identical_groups_share_one_cache_entry():
    """The same group as group_0 of one graph and group_1 of another: one module, untouched."""
    y = np.ones((2, 3), np.float32)
    gc.function(lambda v: gc.exp(v * 3.0) + v, backend="numba")(y)
    rebuilt = cache.STATS["rebuilt"]
    cpu_kernel._KERNELS.clear()
    f = gc.function(lambda u, v: [gc.sqrt(u * 2.0) + 1.0, gc.exp(v * 3.0) + v], backend="numba")
    out = f(np.ones(5, np.float32), y)
    assert [r.group.name for r in _plan(f, np.ones(5, np.float32), y).groups] == \
        ["group_0", "group_1"]
    assert cache.STATS["rebuilt"] == rebuilt
    np.testing.assert_allclose(out[1].numpy(), np.exp(3.0) + 1, rtol=1e-6)


def test_top_level_scalar_cond_is_lowered_and_agrees(numba_forced):
    def f(x):
        if x > 0:
            y = x * 2.0 + 1.0
        else:
            y = -x
        return y
    fast, ref = gc.function(f, backend="numba"), gc.function(f, backend="numpy")
    for v in (3.0, -2.5, 0.0):
        x = gc.constant(v)
        with numba_forced.expect(loops=True):
            got = float(fast(x))
        assert got == float(ref(x)) == (v * 2 + 1 if v > 0 else -v)
    ((op, runner, reason),) = _loop_report(fast, gc.constant(1.0))
    assert op.type == "cond" and runner is not None and runner.fn is not None


def test_loops_are_interpreted_until_they_cost_enough(monkeypatch):
    from graphc.kernels.cpu import loops
    monkeypatch.setenv("GRAPHC_NUMBA_MIN_SIZE", "16384")
    monkeypatch.setattr(loops, "LOOP_COMPILE_AFTER", 3600.0)

    def count(n):
        s = gc.constant(0)
        i = gc.constant(0)
        while i < n:
            s += i * 3 % 5
            i += 1
        return s
    f = gc.function(count, backend="numba")
    n = gc.constant(37)
    want = sum(i * 3 % 5 for i in range(37))
    assert int(f(n)) == want and int(f(n)) == want
    ((_, runner, _),) = _loop_report(f, n)
    assert runner.fn is None and runner.interpreted_s > 0
    monkeypatch.setattr(loops, "LOOP_COMPILE_AFTER", 0.0)
    assert int(f(n)) == want and runner.fn is not None


@pytest.mark.parametrize("preset,want", [({}, "100000"), ({"GOMP_SPINCOUNT": "5"}, "5"),
                                         ({"OMP_WAIT_POLICY": "passive"}, None)])
def test_openmp_spin_count_default_leaves_the_users_setting(preset, want):
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items()
           if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env.update(preset)
    code = "import os, graphc.kernels.cpu.backend; print(os.environ.get('GOMP_SPINCOUNT'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == str(want)


def test_a_plan_of_numpy_rules_alone_runs_the_interpreters_runner(numba_forced):
    """Nothing fused, lowered or split: later calls take the reference interpreter's runner
    over the optimized graph (less per-op overhead), with the same results; a plan holding a
    fused group runs its own steps as straight-line code, with the same results."""
    import graphc as gc
    from graphc.kernels.cpu.backend import Plan
    from graphc.runtime.executor import compile_graph
    x = gc.constant(np.array([1.5, -0.0, np.inf], np.float32))
    y = gc.constant(np.array([2.0, 0.0, -np.inf], np.float32))
    single = gc.function(lambda a, b: a + b, backend="numba", autograph=False)
    with numba_forced.none("one add is not a group"):
        got = [single(x, y).numpy() for _ in range(2)]
    for g in got:
        np.testing.assert_array_equal(g, x.numpy() + y.numpy())
    plan = Plan(single.concrete_functions()[0].graph)
    assert not plan.groups and plan.runner() is compile_graph(plan.graph)
    chain = gc.function(lambda a, b: gc.exp(a * b) + a, backend="numba", autograph=False)
    with numba_forced.expect(kernels=True):
        chain(x, y)
    plan = Plan(chain.concrete_functions()[0].graph)
    run = plan.runner()
    assert plan.groups and run is not plan and run.__name__ == "run"    # straight-line steps
    with numba_forced.expect(kernels=True):
        np.testing.assert_array_equal(run([x.numpy(), y.numpy()])[0], plan([x.numpy(),
                                                                              y.numpy()])[0])
