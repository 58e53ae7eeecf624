"""Shared checks for the TF-extras tests: one function run eagerly and compiled on the numpy
and auto backends must give the expected values, dtypes and shapes every time."""
import numpy as np

import graphc as gc
from op_helpers import assert_same as same

BACKENDS = ["numpy", "auto"]


def runs(fn, *arrays, signature=None):
    """fn's results on tensors of `arrays`: eager, then gc.function on each backend."""
    results = [fn(*[gc.constant(a) for a in arrays])]
    for backend in BACKENDS:
        f = gc.function(fn, backend=backend, input_signature=signature)
        results.append(f(*[np.asarray(a) for a in arrays]))
    return results


def agree(fn, want, *arrays, rtol=1e-6, atol=0.0, signature=None):
    """fn gives `want` on every path (eager, numpy backend, auto backend)."""
    for got in runs(fn, *arrays, signature=signature):
        same(got, want, rtol, atol)


def grad_of(fn, x, weights=None):
    """d sum(fn(x) * weights) / dx, eagerly and compiled (numpy, auto): a list of arrays."""
    def g(v):
        with gc.GradientTape() as tape:
            tape.watch(v)
            y = fn(v)
            y = y * weights if weights is not None else y
            total = gc.reduce_sum(y)
        return tape.gradient(total, v)
    return [r.numpy() for r in runs(g, x)]


def grad_agrees(fn, x, want, weights=None, rtol=1e-6, atol=0.0):
    for got in grad_of(fn, x, weights):
        np.testing.assert_allclose(got, np.asarray(want), rtol=rtol, atol=atol, equal_nan=True)
