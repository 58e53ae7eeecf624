"""Finite-difference checks of tape gradients, eagerly and inside @gc.function."""
import os

import numpy as np

import graphc as gc

EPS = 1e-6


def numeric_grads(fn, arrays, weights, extra=()):
    """Central differences of sum(weights * fn(*arrays, *extra)) with respect to every array."""
    def scalar(args):
        out = fn(*[gc.constant(a) for a in args], *extra)
        return float(np.sum(np.asarray(out, dtype=np.float64) * weights))
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[k][idx] += EPS
            minus[k][idx] -= EPS
            g[idx] = (scalar(plus) - scalar(minus)) / (2 * EPS)
        grads.append(g)
    return grads


def tape_grads(fn, tensors, weights, extra=()):
    """Gradients of sum(weights * fn(*tensors, *extra)) from a GradientTape (eager or traced)."""
    with gc.GradientTape() as tape:
        for t in tensors:
            tape.watch(t)
        out = fn(*tensors, *extra)
    return tape.gradient(out, list(tensors), output_gradients=gc.constant(weights))


def check_gradients(fn, arrays, rtol=1e-5, atol=1e-6, seed=0, backend=None, extra=()):
    """Compare tape gradients (eager and compiled) with central finite differences.

    `extra` arguments follow the differentiated ones; in the compiled run they are graph
    inputs (so e.g. a loop's trip count is known only at run time). The compiled run uses
    `backend`, else $GRAPHC_GRAD_BACKEND, else "numpy".
    """
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    extra = tuple(gc.constant(e) for e in extra)
    out = np.asarray(fn(*[gc.constant(a) for a in arrays], *extra))
    weights = np.random.default_rng(seed).uniform(0.5, 1.5, out.shape)
    expected = numeric_grads(fn, arrays, weights, extra)
    eager = tape_grads(fn, [gc.constant(a) for a in arrays], weights, extra)
    n = len(arrays)
    backend = backend or os.environ.get("GRAPHC_GRAD_BACKEND", "numpy")
    traced_fn = gc.function(lambda *xs: tape_grads(fn, xs[:n], weights, xs[n:]),
                            backend=backend)
    traced = traced_fn(*[gc.constant(a) for a in arrays], *extra)
    for name, got in [("eager", eager), ("traced", traced)]:
        for k, (g, e) in enumerate(zip(got, expected)):
            assert g is not None, f"{name}: no gradient for argument {k}"
            np.testing.assert_allclose(np.asarray(g), e, rtol=rtol, atol=atol,
                                       err_msg=f"{name} gradient of argument {k}")
            assert np.asarray(g).dtype == np.float64, f"{name}: gradient dtype"
    return eager
