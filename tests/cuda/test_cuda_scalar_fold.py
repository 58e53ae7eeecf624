"""Scalar folds (kernels/cuda/folding.py): a scalar group that only later groups read (Adam's
bias-corrected rate, from the step counter) is computed by each of their kernels instead of
a launch of its own, and a 0-d update by a value made earlier (`iterations += 1`) is
written by one thread of the kernel before it. Results are the unfolded kernels' bit for
bit (the same statements), and the numpy backend's up to float rounding: even the
simulator's float32 pow is numpy's scalar `**`, which can differ from np.power on arrays
by an ulp (0.9 ** 4: 0.6560999 vs 0.6561)."""
import numpy as np
import pytest
from numba import cuda

import graphc as gc
from graphc.kernels.cuda import folding
from cuda_helpers import TOL, CudaRuns

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")    # numpy's, edge values


def _step(dtype):
    """A rate from a 0-d int64 counter read by an elementwise update, a column sum's update
    and a row max; the counter's `+= 1` between the first two (the later kernels must use
    the old count, as numpy does), another 0-d update after the row kernel."""
    dt = np.dtype(dtype)
    t = gc.Variable(np.int64(3))
    u = gc.Variable(np.zeros((), dt))
    w = gc.Variable(np.arange(24, dtype=dt).reshape(4, 6))
    b = gc.Variable(np.ones(6, dt))

    def step(x, g, k):
        n = gc.cast(t + np.int64(1), dt)
        r = gc.sqrt(1 - 0.9 ** n) / (1 - 0.999 ** n) if dt.kind == "f" else n * 3 - 1
        w.assign_sub(g * r)
        t.assign_add(np.int64(1))
        b.assign_add(gc.reduce_sum(x, axis=0) * r)
        out = gc.reduce_max(x * r, axis=1) + k * r
        u.assign_sub(np.ones((), dt))
        return out
    return step, [t, u, w, b]


def _run(backend, dtype, calls=3):
    step, variables = _step(dtype)
    f = gc.function(step, backend=backend)
    rng = np.random.default_rng(5)
    outs, counts = [], []
    for _ in range(calls):
        # small integers: the column sums are exact in any order
        x, g = (rng.integers(-4, 5, (4, 6)).astype(dtype) for _ in range(2))
        k = rng.integers(-4, 5, 4).astype(dtype)
        if backend == "cuda":
            x, g, k = (cuda.to_device(a) for a in (x, g, k))
        runs = CudaRuns()
        with runs.count():
            out = f(x, g, k)
        counts.append((runs.launches, runs.d2h))
        outs.append(np.asarray(out.numpy()))
    return outs + [v.numpy() for v in variables], counts


def _close(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, **TOL[g.dtype.name])
        else:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_scalar_and_counter_folds_agree_with_numpy(dtype, monkeypatch):
    want, _ = _run("numpy", dtype)
    got, counts = _run("cuda", dtype)
    _close(got, want)
    assert got[-4] == 6        # the counter: three calls
    # one launch per group: the rate in all three, the counter in the first
    assert counts == [(3, 0)] * 3, counts
    monkeypatch.setattr(folding, "fold", lambda graph, steps: steps)     # unfolded
    unfolded, counts = _run("cuda", dtype)
    for g, u in zip(got, unfolded):
        np.testing.assert_array_equal(g, u)
        assert np.array_equal(np.signbit(g), np.signbit(u))
    # the rate; w's product and update; the counter; the column sum, its scale and b's
    # update; the row max and its epilogue; u's update
    assert counts[1][0] == 10, counts


def test_a_scalar_read_by_other_steps_stays_a_kernel():
    """The rate is also a result: its group runs (one launch), the update kernel reads it."""
    t = gc.Variable(np.int64(1))
    w = gc.Variable(np.ones(5, np.float32))

    def step(g):
        r = gc.sqrt(1 - 0.9 ** gc.cast(t + np.int64(1), gc.float32))
        w.assign_sub(g * r)
        t.assign_add(np.int64(1))
        return r
    g = np.linspace(-1, 1, 5).astype(np.float32)
    want = [np.asarray(gc.function(step, backend="numpy")(g).numpy()), w.numpy(), t.numpy()]
    t.assign(np.int64(1))
    w.assign(np.ones(5, np.float32))
    f = gc.function(step, backend="cuda")
    f(g)
    t.assign(np.int64(1))
    w.assign(np.ones(5, np.float32))
    runs = CudaRuns()
    with runs.count():
        r = f(cuda.to_device(g))
    _close([np.asarray(r.numpy()), w.numpy(), t.numpy()], want)
    assert runs.launches == 2


def test_a_zero_d_update_kept_by_a_failed_check():
    """A bad class id: the kernel writing the counter keeps its old value, as the unfolded
    update kernel did (checks.py), and the error comes at the next read."""
    from graphc.errors import InvalidArgumentError
    t = gc.Variable(np.int64(7))
    w = gc.Variable(np.zeros(3, np.float32))

    @gc.function(backend="cuda")
    def step(logits, labels):
        loss = gc.reduce_mean(gc.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        w.assign_sub(gc.ones([3]) * loss)
        t.assign_add(np.int64(1))
        return loss
    logits = np.zeros((2, 3), np.float32)
    step(cuda.to_device(logits), cuda.to_device(np.array([0, 2], np.int32)))
    assert t.numpy() == 8
    step(cuda.to_device(logits), cuda.to_device(np.array([0, 3], np.int32)))
    with pytest.raises(InvalidArgumentError):
        t.numpy()
    assert t.numpy() == 8
