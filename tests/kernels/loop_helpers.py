"""Shared by the compiled-loop tests: agreement of numba (loops compiled) with numpy and eager."""
import inspect

import numpy as np
from hypothesis import HealthCheck, settings

import graphc as gc
from graphc.kernels.cpu import backend as cpu
from graphc.kernels.stats import COUNTS
from agreement_helpers import assert_same, flat  # noqa: F401 - flat is used by the tests

FEW = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}


def loops_of(fast, args):
    """The plan's (op, runner, reason) for each top-level while/cond."""
    return fast.get_concrete_function(*args).graph._numba_plan.loops


def agree(fn, *arrays):
    """fn on numba (whose loops must all be compiled), on numpy and eagerly: equal results.
    Returns the numba results as numpy arrays and the plan's loop report."""
    args = [gc.constant(a) for a in arrays]
    fast = gc.function(fn, backend="numba")
    before = COUNTS.loop_calls
    got = flat(fast(*args))
    ran = COUNTS.loop_calls - before
    ref = flat(gc.function(fn, backend="numpy")(*args))
    eager = flat(fn(*args))
    report = loops_of(fast, args)
    assert report, "the function has no top-level loop to compile"
    for op, runner, reason in report:
        assert runner is not None, reason
        assert runner.fn is not None and runner.error is None, runner.error
    assert ran >= len(report), f"{ran} compiled loop runs for {len(report)} loops"
    assert_same(got, ref, eager, TOL)
    return [g.numpy() for g in got], report


def fallback_reason(fn, *arrays):
    """fn agrees on numba and numpy, and its one loop was NOT compiled: the reason."""
    args = [gc.constant(a) for a in arrays]
    fast = gc.function(fn, backend="numba")
    before = COUNTS.loop_calls
    got = flat(fast(*args))
    assert COUNTS.loop_calls == before, "a compiled loop ran"
    for g, r in zip(got, flat(gc.function(fn, backend="numpy")(*args)), strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6)
    ((op, runner, reason),) = loops_of(fast, args)
    assert runner is None and reason
    assert "interpreted, because" in cpu.describe(fast.get_concrete_function(*args).graph)
    return reason


def seeded(seed):
    return np.random.default_rng(seed)


def line_of(fn, text):
    """The file line of `fn`'s first source line containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, ln in enumerate(lines) if text in ln)
