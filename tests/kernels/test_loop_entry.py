"""A compiled loop's plan step calls the loop's direct entry once it is installed, returns
only what the plan reads, and goes back to the interpreter when the kernel cannot run."""
import numpy as np
import pytest

import graphc as gc
from graphc.kernels.stats import COUNTS

pytestmark = pytest.mark.usefixtures("kernel_env")  # tests/kernels/conftest.py: compile at once


def branchy(x):
    acc = gc.constant(0.0, gc.float32)
    for i in gc.range(64):
        if x[i] > 0:
            acc += x[i] ** 2
        else:
            acc -= x[i]
    return acc


def _values():
    v = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    v[:4] = [-0.0, np.inf, 1e30, -1e-40]      # signed zero, inf, overflow to inf, a denormal
    return v


def _runner(fast, x):
    plan = fast.get_concrete_function(x).graph._numba_plan
    ((_, runner, reason),) = plan.loops
    assert runner is not None, reason
    return runner


def test_plan_step_calls_the_direct_entry_and_agrees(numba_forced):
    x = gc.constant(_values())
    fast = gc.function(branchy, backend="numba")
    want = gc.function(branchy, backend="numpy")(x).numpy()
    with numba_forced.expect(loops=True):
        got = [fast(x).numpy() for _ in range(3)]
    for g in got:
        assert g.dtype == np.float32 and g.shape == ()
        np.testing.assert_array_equal(g, want)
    np.testing.assert_array_equal(branchy(x).numpy(), want)             # eager
    runner = _runner(fast, x)
    assert runner.fn is not None and runner.error is None
    assert runner.sites and all(ns[name] is runner.direct for ns, name in runner.sites)
    assert runner.returned == [1]              # the loop counter is never read after it
    assert runner(np.array(0, np.int32), np.array(0, np.float32), x.numpy())[0] is None


def test_a_kernel_that_cannot_run_rebinds_the_step_to_the_interpreter(numba_forced):
    x = gc.constant(_values())
    fast = gc.function(branchy, backend="numba")
    want = gc.function(branchy, backend="numpy")(x).numpy()
    fast(x)
    runner = _runner(fast, x)

    def broken(*args):
        raise TypeError("no matching definition")
    runner.fn, runner.direct = broken, runner._make_direct(broken)    # as if installed so
    runner._rebind()
    cf = fast.get_concrete_function(x)
    assert cf._call_leaves is not cf._plan_call                       # inlines `broken`
    before = COUNTS.loop_calls
    np.testing.assert_array_equal(fast(x).numpy(), want)       # interpreted, same result
    assert "failed to compile: TypeError: no matching definition" in runner.error
    assert all(ns[name] is runner for ns, name in runner.sites)
    assert cf._call_leaves is cf._plan_call and fast._entry is None
    assert COUNTS.loop_calls == before + 1         # the one attempt; none after it
    for _ in range(3):
        np.testing.assert_array_equal(fast(x).numpy(), want)
    assert COUNTS.loop_calls == before + 1


def test_the_kernel_returns_only_what_the_graph_reads(numba_forced):
    x = gc.constant(_values())
    fast = gc.function(branchy, backend="numba")
    fast(x)
    runner = _runner(fast, x)
    assert runner.returned == [1] and "    return s2\n" in runner.source    # bare, no tuple
    i, acc = runner.direct(np.array(0, np.int32), np.array(0, np.float32), x.numpy())
    assert i is None and type(acc) is np.float32
    np.testing.assert_array_equal(acc, fast(x).numpy())

    def both(x):
        acc = gc.constant(0.0, gc.float32)
        n = gc.constant(0, gc.int32)
        for i in gc.range(64):
            if x[i] > 0:
                acc += x[i]
                n += 1
        return acc, n
    fast = gc.function(both, backend="numba")
    with numba_forced.expect(loops=True):
        got = fast(x)
    want = gc.function(both, backend="numpy")(x)
    for g, w in zip(got, want):
        assert type(g.numpy()) is type(w.numpy())
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    runner = _runner(fast, x)
    assert runner.returned == [1, 2] and "    return (s2, s3, )\n" in runner.source


def summed(x, acc):
    for i in gc.range(64):
        acc += x[i]
    return acc


def test_constant_start_values_are_literals_and_arguments_are_not(numba_forced):
    x = gc.constant(_values())
    fast = gc.function(branchy, backend="numba")
    with numba_forced.expect(loops=True):
        fast(x)
    runner = _runner(fast, x)
    assert runner.baked == {0, 1} and "def loop_kernel(a2):" in runner.source
    assert "a1 = float32(0.0)  # always this constant" in runner.source
    fast = gc.function(summed, backend="numba")
    for start in (0.0, -2.5, np.inf):
        acc = gc.constant(np.float32(start))
        with numba_forced.expect(loops=True):
            got = fast(x, acc).numpy()
        np.testing.assert_array_equal(got, gc.function(summed, backend="numpy")(x, acc).numpy())
    graph = fast.get_concrete_function(x, acc).graph
    runner = graph._numba_plan.loops[0][1]
    inputs = {id(v) for v in graph.inputs}
    assert fast.tracing_count == 1 and len(runner.baked) == 1      # the counter's start
    assert all(id(runner.op.inputs[k]) not in inputs for k in runner.baked)
