"""The agreement check shared by the kernel tests: eager, numpy backend, numba backend."""
import numpy as np

import graphc as gc
from graphc.kernels.stats import COUNTS

TOL = {"float32": dict(rtol=2e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-14)}


def agree(fn, *arrays):
    """fn eagerly, on the numpy backend and on the numba backend: same dtypes, shapes, values."""
    tensors = [gc.constant(a) for a in arrays]
    ref = flat(gc.function(fn, backend="numpy")(*tensors))
    fast = gc.function(fn, backend="numba")
    before = COUNTS.kernel_calls
    got = flat(fast(*tensors))
    ran = COUNTS.kernel_calls - before
    plan = fast.get_concrete_function(*tensors).graph._numba_plan
    assert plan.groups, "nothing was fused: the harness would not test any kernel"
    for runner in plan.groups:     # every group really ran its compiled kernel
        assert runner.used and not runner.fallbacks, runner.fallbacks
    assert ran >= len(plan.groups), f"{ran} kernel runs for {len(plan.groups)} groups"
    assert_same(got, ref, flat(fn(*tensors)))
    return got


def assert_same(got, ref, eager, tol=TOL):
    """Three lists of tensors: same dtypes and shapes, values equal up to float rounding."""
    assert len(got) == len(ref) == len(eager)
    for g, r, e in zip(got, ref, eager):
        g, r, e = g.numpy(), r.numpy(), e.numpy()
        assert g.dtype == r.dtype == e.dtype and g.shape == r.shape == e.shape
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, r, equal_nan=True, **tol[g.dtype.name])
            np.testing.assert_allclose(e, r, equal_nan=True, **tol[g.dtype.name])
        else:
            np.testing.assert_array_equal(g, r)
            np.testing.assert_array_equal(e, r)


def flat(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in flat(v)]
    return [x]
