"""Tiered execution: the numpy plan runs while kernels and compiled loops compile in the
background, then the runner switches; GRAPHC_COMPILE=sync compiles first. The compile
thread is held on an Event each test controls, never timed."""
import subprocess
import sys
import threading

import numpy as np
import pytest

import graphc as gc
from graphc.cli.graph import backend_report
from graphc.kernels.cpu import groups, groups_tier, loops
from graphc.kernels.cpu import kernel as cpu_kernel
from graphc.kernels import tiers
from graphc.kernels.cpu.backend import compile_plan, describe
from graphc.kernels.stats import COUNTS

pytest.importorskip("numba")


@pytest.fixture
def background(monkeypatch, tmp_path, numba_forced):
    """Background compile mode, a fresh cache and kernel table, and the compile thread held
    on `gate` (an Event) until the test sets it."""
    monkeypatch.setenv("GRAPHC_COMPILE", "background")
    monkeypatch.setenv("GRAPHC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cpu_kernel, "_KERNELS", {})
    monkeypatch.setattr(groups_tier, "_COMPILING", {})
    gate = threading.Event()
    monkeypatch.setitem(tiers.GATE, "event", gate)
    numba_forced.gate = gate
    yield numba_forced
    gate.set()                    # never leave the worker waiting on a finished test
    tiers.wait_all(120)


def _affine_tanh(x, a):
    return gc.tanh(x * a + 1.0) - x


def _numpy(fn, *args):
    return gc.function(fn, backend="numpy")(*args).numpy()


def _runner(f, *args):
    return compile_plan(f.get_concrete_function(*args).graph).groups[0]


def test_first_calls_run_the_numpy_plan_while_the_kernel_compiles(background):
    x = np.linspace(-3, 3, 48, dtype=np.float32).reshape(6, 8)
    a = np.float32(0.75)
    want = _numpy(_affine_tanh, x, a)
    f = gc.function(_affine_tanh, backend="numba")
    with background.none("the compile thread is held: numpy rules run"):
        for _ in range(3):
            np.testing.assert_array_equal(f(x, a).numpy(), want)   # the numpy plan itself
    runner = _runner(f, x, a)
    (job,) = [j for lay in runner.layouts.values() for j in lay.jobs.values()]
    assert job.state == "pending"
    assert "numpy rules while its kernel compiles in the background" in describe(
        f.get_concrete_function(x, a).graph)
    background.gate.set()
    assert job.done.wait(120) and job.state == "ready", job.error
    with background.expect(kernels=True):
        got = f(x, a).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    report = describe(f.get_concrete_function(x, a).graph)
    assert "tier: compiled kernel" in report


@pytest.mark.parametrize("how", ["env", "config"])
def test_sync_mode_compiles_before_the_first_run(background, monkeypatch, how):
    if how == "env":
        monkeypatch.setenv("GRAPHC_COMPILE", "sync")
    else:
        monkeypatch.setitem(tiers._state, "mode", None)
        gc.config.set_compile_mode("sync")
    assert gc.config.compile_mode() == "sync"
    x = np.linspace(-2, 2, 40, dtype=np.float32).reshape(5, 8)
    f = gc.function(lambda v: gc.exp(v) * 0.5 + v, backend="numba")
    with background.expect(kernels=True):        # the gate is held: nothing waits on it
        got = f(x).numpy()
    np.testing.assert_allclose(got, np.exp(x) * np.float32(0.5) + x, rtol=1e-6)
    assert not any(lay.jobs for lay in _runner(f, x).layouts.values())


def test_compile_mode_switch_rejects_unknown_modes_and_resets(monkeypatch):
    monkeypatch.setitem(tiers._state, "mode", None)
    with pytest.raises(ValueError, match="'later'.*background.*sync"):
        gc.config.set_compile_mode("later")
    gc.config.set_compile_mode("background")
    monkeypatch.setenv("GRAPHC_COMPILE", "sync")
    assert gc.config.compile_mode() == "background"     # the switch wins over the env
    gc.config.set_compile_mode(None)
    assert gc.config.compile_mode() == "sync"


def test_a_failed_background_compile_keeps_the_numpy_plan_and_is_reported(background,
                                                                         monkeypatch):
    def broken(*_):
        raise RuntimeError("injected compile failure")
    monkeypatch.setattr(groups_tier, "compile_kernel", broken)
    x = np.linspace(-1, 1, 30, dtype=np.float32).reshape(5, 6)
    a = np.float32(1.25)
    want = _numpy(_affine_tanh, x, a)
    f = gc.function(_affine_tanh, backend="numba")
    f(x, a)
    background.gate.set()
    assert tiers.wait_all(120)
    with background.none("its kernel failed to compile"):
        for _ in range(2):
            np.testing.assert_array_equal(f(x, a).numpy(), want)
    report = describe(f.get_concrete_function(x, a).graph)
    assert "its kernel failed to compile" in report
    assert "fallback: kernel failed to compile (in the background): RuntimeError: injected" \
        in report


def test_a_kernel_on_disk_runs_on_the_first_call_of_a_new_process(background, monkeypatch):
    x = np.linspace(0, 1, 24, dtype=np.float32).reshape(4, 6)
    fn = lambda v: gc.sqrt(v * v + 2.0) * v           # noqa: E731
    f = gc.function(fn, backend="numba")
    f(x)
    background.gate.set()
    assert tiers.wait_all(120)
    f(x)                                            # switches, measures nothing (forced)
    monkeypatch.setattr(cpu_kernel, "_KERNELS", {})     # as in a new process, same disk cache
    monkeypatch.setattr(groups_tier, "_COMPILING", {})
    background.gate.clear()                         # a compile would now wait forever
    f2 = gc.function(fn, backend="numba")
    with background.expect(kernels=True):
        got = f2(x).numpy()
    np.testing.assert_allclose(got, np.sqrt(x * x + 2) * x, rtol=1e-6)


def test_only_the_variants_the_decision_needs_are_compiled(background, all_cores_free):
    small = np.linspace(-1, 1, 64, dtype=np.float64).reshape(2, 32)   # below PAR_MIN
    f = gc.function(lambda v: v * 3.0 - 1.0, backend="numba")       # forced choice
    f(small)
    background.gate.set()
    assert tiers.wait_all(120)
    (kern,) = cpu_kernel._KERNELS.values()
    with background.expect(kernels=True):
        np.testing.assert_allclose(f(small).numpy(), small * 3.0 - 1.0)
    assert kern.serial.signatures and not kern.parallel.signatures   # prange never needed


def test_a_prange_choice_compiles_serial_first_and_prange_after_it(background, all_cores_free):
    """The parallel variant runs the serial one's machine code on blocks
    (codegen_parallel.py): serial is the first job, the parallel wrapper the later one."""
    n = groups.PAR_MIN                              # big enough for prange
    x = np.linspace(-1, 1, 2 * n, dtype=np.float64).reshape(2, n)
    f = gc.function(lambda v: v * 4.0 - 1.0, backend="numba")   # forced choice: prange
    f(x)
    (lay,) = _runner(f, x).layouts.values()
    ((_, first),) = [(k, j) for k, j in lay.jobs.items() if isinstance(k, tuple)]
    ((_, later),) = [(k, j) for k, j in lay.jobs.items() if not isinstance(k, tuple)]
    background.gate.set()
    assert first.done.wait(120) and first.state == "ready", first.error
    assert first.result.serial.signatures
    assert tiers.wait_all(120) and later.state == "ready", later.error
    assert later.result.parallel.signatures
    with background.expect(kernels=True):
        np.testing.assert_allclose(f(x).numpy(), x * 4.0 - 1.0)
    (decision,) = _runner(f, x).decisions.values()
    assert decision["variant"] == "parallel"


def test_serial_variant_runs_while_the_prange_one_compiles_for_the_choice(background,
                                                                         monkeypatch,
                                                                         all_cores_free):
    monkeypatch.setenv("GRAPHC_KERNEL_CHOICE", "measure")
    prange_gate = threading.Event()
    compile_kernel = groups_tier.compile_kernel

    def held_prange(spec, label, variants, sig):
        if variants == [True]:
            prange_gate.wait()
        return compile_kernel(spec, label, variants, sig)
    monkeypatch.setattr(groups_tier, "compile_kernel", held_prange)
    n = groups.PAR_MIN
    x = np.linspace(-1, 1, 2 * n, dtype=np.float64).reshape(2, n)
    fn = lambda v: gc.exp(v * 0.5) + v            # noqa: E731
    want = np.exp(x * 0.5) + x
    f = gc.function(fn, backend="numba")
    with background.none("the compile thread is held"):
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)
    runner = _runner(f, x)
    (lay,) = runner.layouts.values()
    (first,) = [j for k, j in lay.jobs.items() if isinstance(k, tuple)]
    background.gate.set()
    assert first.done.wait(120) and first.state == "ready", first.error
    (kern,) = cpu_kernel._KERNELS.values()
    with background.expect(kernels=True):
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)
    assert kern.serial.signatures and not kern.parallel.signatures
    assert not runner.decisions                     # nothing chosen on half the facts
    prange_gate.set()
    assert tiers.wait_all(120)
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)
    (decision,) = runner.decisions.values()
    assert {"serial_s", "parallel_s", "numpy_s"} <= set(decision)


def test_calls_from_several_threads_across_the_switch_all_agree(background):
    x = np.linspace(-2, 2, 64, dtype=np.float32).reshape(8, 8)
    a = np.float32(0.5)
    want = _numpy(_affine_tanh, x, a)
    f = gc.function(_affine_tanh, backend="numba")
    errors, go = [], threading.Barrier(4)

    def calls():
        go.wait()
        for k in range(40):
            if k == 10:
                background.gate.set()               # the switch lands mid-stream
            try:
                np.testing.assert_allclose(f(x, a).numpy(), want, rtol=1e-6, atol=1e-6)
            except Exception as e:  # noqa: BLE001 - collected, asserted below
                errors.append(e)
    threads = [threading.Thread(target=calls) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert tiers.wait_all(120)
    with background.expect(kernels=True):
        np.testing.assert_allclose(f(x, a).numpy(), want, rtol=1e-6, atol=1e-6)


def _count_loop(n, x):
    i = gc.constant(0)
    acc = gc.constant(0.0, gc.float64)
    while i < n:
        acc += gc.cast(i, gc.float64) * x
        i += 1
    return acc


def test_a_loop_is_interpreted_while_it_compiles_then_switches(background):
    n, x = gc.constant(50), gc.constant(0.5, gc.float64)
    f = gc.function(_count_loop, backend="numba")
    want = sum(k * 0.5 for k in range(50))
    with background.none("the compile thread is held: the loop is interpreted"):
        assert float(f(n, x)) == want
    graph = f.get_concrete_function(n, x).graph
    assert "interpreted while it compiles in the background" in describe(graph)
    background.gate.set()
    assert tiers.wait_all(120)
    with background.expect(loops=True):
        assert float(f(n, x)) == want
    assert "tier: compiled" in backend_report(graph)


def test_a_failed_loop_compile_interprets_and_is_reported(background, monkeypatch):
    def broken(self, args):
        raise RuntimeError("injected loop failure")
    monkeypatch.setattr(loops.LoopRunner, "_compile", broken)
    n, x = gc.constant(7), gc.constant(2.0, gc.float64)
    f = gc.function(_count_loop, backend="numba")
    f(n, x)
    background.gate.set()
    assert tiers.wait_all(120)
    with background.none("the loop failed to compile"):
        assert float(f(n, x)) == sum(k * 2.0 for k in range(7))
    assert ("fell back to the interpreter: loop kernel failed to compile (in the "
            "background): RuntimeError: injected loop failure") in describe(
                f.get_concrete_function(n, x).graph)


def test_exit_during_a_background_compile_is_clean(tmp_path):
    code = ("import numpy as np, graphc as gc\n"
            "f = gc.function(lambda v: gc.exp(v) * gc.tanh(v) + 1.0)\n"
            "x = np.ones(1 << 17, np.float32)\n"
            "r = f(x).numpy()\n"
            "assert np.allclose(r, np.exp(1) * np.tanh(1) + 1)\n"
            "print('done')\n")
    env = {"GRAPHC_CACHE_DIR": str(tmp_path / "c"), "GRAPHC_COMPILE": "background",
           "PATH": "/usr/bin:/bin", "PYTHONPATH": str(__import__("pathlib").Path(
               gc.__file__).parent.parent)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done" and "Traceback" not in out.stderr


def test_no_compile_runs_beside_a_first_call(monkeypatch):
    monkeypatch.setattr(tiers, "FIRST_CALL_WAIT", None)    # wait for first calls only
    seen = []
    with tiers.first_call():
        job = tiers.submit("probe", lambda: seen.append(tiers._first_calls["n"]))
    assert job.done.wait(120) and job.state == "ready", job.error
    assert seen == [0]


def _one_free_core_then_more(monkeypatch):
    """A fake free-core count the test changes ({"n": 1} at first), at least two numba
    threads, no real thread-count switch, prange at any size, every call sampled and the
    kernel-vs-numpy choice measured."""
    from graphc.kernels.cpu import adaptive, cores, launch
    free = {"n": 1}
    monkeypatch.setattr(cores, "free_cores", lambda: free["n"])
    monkeypatch.setattr(launch.numba.config, "NUMBA_NUM_THREADS",
                        max(2, launch.numba.config.NUMBA_NUM_THREADS))
    monkeypatch.setattr(launch, "enter", lambda threads: None)
    monkeypatch.setattr(cpu_kernel, "enter", lambda threads: None)
    monkeypatch.setattr(groups, "PAR_MIN", 0)
    monkeypatch.setattr(adaptive, "SAMPLE_EVERY", 1)
    monkeypatch.setenv("GRAPHC_KERNEL_CHOICE", "measure")
    return free


def test_a_remeasure_needing_an_uncompiled_variant_compiles_it_in_the_background(
        background, monkeypatch):
    """Measured on one free core: serial only is compiled. A second core frees up, the
    choice expires, and the re-measure needs prange: it compiles on the compile thread
    while the old choice keeps running, then the variants are measured."""
    from graphc.kernels.cpu import adaptive
    free = _one_free_core_then_more(monkeypatch)
    x = np.linspace(-1, 1, 64, dtype=np.float64).reshape(8, 8)
    want = np.exp(x * 0.25) - x
    f = gc.function(lambda v: gc.exp(v * 0.25) - v, backend="numba")
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)
    background.gate.set()
    assert tiers.wait_all(120)
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)     # measures: one core
    runner = _runner(f, x)
    (decision,) = runner.decisions.values()
    assert decision["free"] == 1 and "parallel_s" not in decision
    (kern,) = cpu_kernel._KERNELS.values()
    assert kern.serial.signatures and not kern.parallel.signatures

    background.gate.clear()                     # the prange compile now waits on the test
    free["n"] = 2
    for _ in range(3 * adaptive.KEEP):          # the choice expires, its re-measure waits
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)
    assert runner.decisions[next(iter(runner.decisions))] is decision  # old choice kept
    assert not kern.parallel.signatures         # nothing compiled it on a call
    more = [j for lay in runner.layouts.values() for k, j in lay.jobs.items()
            if isinstance(k, tuple) and k[1] == "more"]
    assert [j.state for j in more] == ["pending"]

    background.gate.set()
    assert tiers.wait_all(120)
    assert kern.parallel.signatures
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)     # measures again
    (new,) = runner.decisions.values()
    assert new is not decision and new["free"] == 2
    assert {"serial_s", "parallel_s", "numpy_s"} <= set(new)
    for _ in range(3):
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)


def test_a_remeasure_in_sync_mode_compiles_the_new_variant_on_the_call(background,
                                                                       monkeypatch):
    from graphc.kernels.cpu import adaptive
    monkeypatch.setenv("GRAPHC_COMPILE", "sync")
    free = _one_free_core_then_more(monkeypatch)
    x = np.linspace(-1, 1, 64, dtype=np.float64).reshape(8, 8)
    want = np.exp(x * 0.5) - x
    f = gc.function(lambda v: gc.exp(v * 0.5) - v, backend="numba")
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)
    (kern,) = cpu_kernel._KERNELS.values()
    assert not kern.parallel.signatures
    free["n"] = 2
    for _ in range(adaptive.KEEP):              # the gate is held: nothing waits on it
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)
    (new,) = _runner(f, x).decisions.values()
    assert new["free"] == 2 and "parallel_s" in new and kern.parallel.signatures


def test_a_decision_takes_numpy_tier_times_only_when_the_kernel_is_far_faster(background,
                                                                            monkeypatch):
    """The numpy-tier calls made while the kernel compiled are timed; the first decision
    uses them for the numpy rules only when they were SEEN_MARGIN times slower than the
    kernel (they ran beside the compile: an upper bound), and measures numpy otherwise."""
    x = np.linspace(-3, 3, 48, dtype=np.float32).reshape(6, 8)
    a = np.float32(0.75)
    f = gc.function(_affine_tanh, backend="numba")
    for _ in range(2):
        f(x, a)                                    # the numpy tier: compile held
    runner = _runner(f, x, a)
    (lay,) = runner.layouts.values()
    assert len(lay.tier_numpy) == 2 and min(lay.tier_numpy) > 0
    measured = []
    monkeypatch.setattr(groups.adaptive, "median_time", lambda fn: measured.append(1) or 0.2)
    lay.tier_numpy = [0.3, 0.5]
    assert runner._numpy_time(lay, 0.3 / groups.SEEN_MARGIN, [x, a]) == 0.3 and not measured
    assert runner._numpy_time(lay, 1e-9, [x, a]) == 0.2 and measured == [1]  # used up
    lay.tier_numpy = [0.3, 0.5]
    assert runner._numpy_time(lay, 0.2, [x, a]) == 0.2 and measured == [1, 1]
