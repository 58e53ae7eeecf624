"""Shared checks for the tests of the TF ops added beside API.md's (gather_nd, einsum, sort,
segment reductions, ...): the tf_extras checks (eager, numpy and auto backends agree with
the expected values), plus TF-style weighted gradients and numerical gradients."""
import numpy as np

import graphc as gc
from tf_extras_helpers import agree, grad_agrees, grad_of, runs  # noqa: F401


def f32(v):
    return np.asarray(v, np.float32)


def i32(v):
    return np.asarray(v, np.int32)


def weights_for(shape, dtype=np.float32):
    """1, 2, 3, ... in `shape`: the weights of the TF probes' d sum(y * w) / dx."""
    return np.arange(1, int(np.prod(shape)) + 1, dtype=dtype).reshape(shape)


def tf_grad_agrees(fn, x, want, out_shape, rtol=1e-6):
    """d sum(fn(x) * [1, 2, 3, ...]) / dx is `want` (TF's literal), on every path."""
    grad_agrees(fn, x, want, weights=gc.constant(weights_for(out_shape, x.dtype)), rtol=rtol)


def numeric_grad(fn, x, w, eps=1e-6):
    """Central differences of sum(fn(x) * w) in float64, evaluated eagerly."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        hi = np.sum(fn(gc.constant(x + d)).numpy() * w)
        lo = np.sum(fn(gc.constant(x - d)).numpy() * w)
        g[i] = (hi - lo) / (2 * eps)
    return g


def forced(numba_forced, fn, want, *arrays, rtol=1e-6):
    """fn compiled on backend="auto" with kernels forced (the numba_forced fixture), around
    some arithmetic so that a kernel really runs, gives `want`."""
    f = gc.function(fn, backend="auto")
    with numba_forced.expect():
        got = f(*[np.asarray(a) for a in arrays])
    from op_helpers import assert_same
    assert_same(got, want, rtol)
