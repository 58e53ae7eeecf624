"""Helpers of the CUDA tests: what ran where, and agreement of backend="cuda" with the numpy
backend and eager execution."""
import contextlib

import numpy as np

import graphc as gc
from graphc.bench.workloads import make_mlp_step

TOL = {"float32": dict(rtol=2e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-14)}


class CudaRuns:
    """What ran where in a block: `kernels`, `fallbacks`, `views`, `device_ops`,
    `cpu_loops`, `allocations`, `reuses` (see
    graphc.kernels.cuda.backend.STATS) and host<->device copies `h2d`, `d2h`."""

    @contextlib.contextmanager
    def count(self):
        from graphc.kernels.cuda.backend import STATS
        from graphc.kernels.cuda.device import TRANSFERS
        before, (h0, d0) = STATS.snapshot(), TRANSFERS.snapshot()
        yield self
        for k, v in STATS.snapshot().items():
            setattr(self, k, v - before[k])
        h1, d1 = TRANSFERS.snapshot()
        self.h2d, self.d2h = h1 - h0, d1 - d0


def flat(x):
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in flat(v)]
    return [x]


def agree(fn, *arrays, kernels=0, tol=TOL):
    """`fn` on backend="cuda", on backend="numpy" and eagerly: same dtypes, shapes, values up
    to rounding. `kernels`: the fewest CUDA kernel launches expected (0 while
    lowering.lower_group returns None; raise it once the generators are merged)."""
    tensors = [gc.constant(a) for a in arrays]
    ref = flat(gc.function(fn, backend="numpy")(*tensors))
    runs = CudaRuns()
    with runs.count():
        got = flat(gc.function(fn, backend="cuda")(*tensors))
    assert all(g.is_on_device for g in got)
    assert runs.kernels >= kernels, f"{runs.kernels} kernel launches, expected {kernels}+"
    assert runs.kernels + runs.fallbacks + runs.views + runs.device_ops + runs.cpu_loops > 0
    eager = flat(fn(*tensors))
    assert len(got) == len(ref) == len(eager)
    for g, r, e in zip(got, ref, eager):
        g, r, e = np.asarray(g.numpy()), np.asarray(r.numpy()), np.asarray(e.numpy())
        assert g.dtype == r.dtype == e.dtype and g.shape == r.shape == e.shape
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, r, equal_nan=True, **tol[g.dtype.name])
            assert np.array_equal(np.signbit(g[g == 0]), np.signbit(r[r == 0]))   # -0.0
        else:
            np.testing.assert_array_equal(g, r)
    return runs


def bench_mlp(backend, opt, n_in, **function_kw):
    """The bench's relu MLP step (graphc.bench.workloads.make_mlp_step), n_in-6-3, with `opt`:
    (the gc.function, its four variables). `function_kw` goes to gc.function."""
    rng = np.random.default_rng(0)
    params = [gc.Variable(rng.standard_normal((n_in, 6)).astype(np.float32) * 0.5),
              gc.Variable(np.zeros(6, np.float32)),
              gc.Variable(rng.standard_normal((6, 3)).astype(np.float32) * 0.5),
              gc.Variable(np.zeros(3, np.float32))]
    return gc.function(make_mlp_step(params, opt), backend=backend, **function_kw), params


def mlp_step(backend):
    """A momentum-SGD step of a 4-8-3 relu MLP (w1, b1, w2): (the function, its variables)."""
    rng = np.random.default_rng(0)
    w1 = gc.Variable(rng.standard_normal((4, 8)).astype(np.float32) * 0.5)
    b1 = gc.Variable(np.zeros(8, np.float32))
    w2 = gc.Variable(rng.standard_normal((8, 3)).astype(np.float32) * 0.5)
    opt = gc.optimizers.SGD(0.1, momentum=0.9)
    params = [w1, b1, w2]

    @gc.function(backend=backend)
    def step(x, y):
        with gc.GradientTape() as tape:
            h = gc.nn.relu(gc.matmul(x, w1) + b1)
            loss = gc.reduce_mean(gc.nn.sparse_softmax_cross_entropy_with_logits(
                y, gc.matmul(h, w2)))
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss
    return step, params
