"""MLP train step (784-256-10, batch 128, relu, softmax cross-entropy, SGD): eager graphc vs
compiled graphc per backend vs a hand-written numpy forward/backward step, medians of one run.

Run: `python benchmarks/train_step_bench.py [--min-time S] [--backends numpy,numba]
[--contended]`. numpy's BLAS threads are left as numpy set them (its default: one per core);
`--contended` times everything a second time beside a busy-loop process on every core but
one (graphc.bench.contention: pinned, stops by itself).
"""
import argparse
import os
import time

import numpy as np

import graphc as gc

BATCH, N_IN, N_HID, N_OUT, LR = 128, 784, 256, 10, 0.01


def init(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((N_IN, N_HID)) * np.sqrt(2 / N_IN)).astype(np.float32),
            np.zeros(N_HID, np.float32),
            (rng.standard_normal((N_HID, N_OUT)) * np.sqrt(2 / N_HID)).astype(np.float32),
            np.zeros(N_OUT, np.float32)]


def data(seed=1):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((BATCH, N_IN)).astype(np.float32),
            rng.integers(0, N_OUT, BATCH).astype(np.int32))


def graphc_step(params):
    """The train step in graphc; `params` are gc.Variables."""
    w1, b1, w2, b2 = params
    opt = gc.optimizers.SGD(LR)

    def step(x, y):
        with gc.GradientTape() as tape:
            h = gc.nn.relu(x @ w1 + b1)
            logits = h @ w2 + b2
            loss = gc.reduce_mean(gc.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, params)
        opt.apply_gradients(zip(grads, params))
        return loss
    return step


def numpy_step(params):
    """The same step written by hand in numpy (forward, backward, update in place)."""
    w1, b1, w2, b2 = params
    rows = np.arange(BATCH)

    def step(x, y):
        z = x @ w1 + b1
        h = np.maximum(z, 0)
        logits = h @ w2 + b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(s[:, 0]) - shifted[rows, y])
        d = e / s
        d[rows, y] -= 1
        d /= BATCH
        gw2, gb2 = h.T @ d, d.sum(axis=0)
        dz = (d @ w2.T) * (z > 0)
        gw1, gb1 = x.T @ dz, dz.sum(axis=0)
        for p, g in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
            p -= LR * g
        return loss
    return step


def timed(calls, min_time):
    """{name: (median ms, fastest ms)} for zero-argument calls timed in interleaved rounds
    (graphc.bench.timing), so the shared machine's drift hits every column alike."""
    from graphc.bench.timing import Series, sample_interleaved
    series = {name: Series(call, lambda out: out) for name, call in calls.items()}
    sample_interleaved(list(series.values()), min_time)
    return {name: (1e3 * x.timing().median_s, 1e3 * min(x.samples))
            for name, x in series.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-time", type=float, default=1.0,
                        help="seconds of timed calls per column (default 1)")
    parser.add_argument("--backends", default="numpy,auto,numba")
    parser.add_argument("--contended", action="store_true",
                        help="also time every column beside a busy-loop process")
    args = parser.parse_args()
    x, y = data()
    calls, rows = {}, []
    hand = numpy_step(init())
    calls["hand-written numpy"] = lambda: hand(x, y)
    xt, yt = gc.constant(x), gc.constant(y)
    eager = graphc_step([gc.Variable(p) for p in init()])
    calls["graphc eager"] = lambda: eager(xt, yt)
    for backend in args.backends.split(","):
        name = f"graphc compiled ({backend})"
        try:
            fn = gc.function(graphc_step([gc.Variable(p) for p in init()]), backend=backend)
            fn(xt, yt)
        except Exception as e:  # noqa: BLE001 - a missing backend is reported, not fatal
            rows.append((name, f"unavailable: {e}"))
            continue
        calls[name] = (lambda f: lambda: f(xt, yt))(fn)
    for _ in range(3):                                  # warm every column first
        for call in calls.values():
            call()
    from graphc.kernels import tiers
    tiers.wait_all()                                    # compiled code in place
    tables = [("no hog started", list(timed(calls, args.min_time).items()) + rows)]
    if args.contended:
        from graphc.bench.contention import Contention
        plan = Contention()
        with plan.hogs(deadline_s=60 + 10 * args.min_time * len(calls)):
            time.sleep(0.3)                             # the hog is running, and seen
            tables.append((plan.note, list(timed(calls, args.min_time).items()) + rows))
    # the steps must agree: one step from the same start, compared with numpy
    ref = init()
    loss_np = numpy_step(ref)(x, y)
    for backend in ("numpy", "numba"):
        check = [gc.Variable(p) for p in init()]
        loss_gc = float(gc.function(graphc_step(check), backend=backend)(xt, yt))
        assert abs(loss_np - loss_gc) < 1e-4 and all(
            np.allclose(a, b.numpy(), atol=1e-5) for a, b in zip(ref, check)), \
            f"the {backend} backend's step disagrees with the numpy step"
    from graphc.kernels.cpu import blas
    print(f"MLP train step {N_IN}-{N_HID}-{N_OUT}, batch {BATCH}, columns timed in "
          f"interleaved rounds, {args.min_time:g} s each (median and fastest of ~5 ms batches); "
          f"numpy BLAS threads {blas.blas_threads() or 'unknown'}, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus:")
    for title, rows in tables:
        print(f"  {title:32s} {'median':>11s} {'fastest':>11s}")
        for name, value in rows:
            shown = (f"{value[0]:8.3f} ms  {value[1]:8.3f} ms" if isinstance(value, tuple)
                     else value)
            print(f"  {name:32s} {shown}")


if __name__ == "__main__":
    main()
