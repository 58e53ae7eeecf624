"""Loops over small tensors: graphc's numpy interpreter vs the numba backend (the whole loop
compiled to one native function) vs a hand-written numba loop.

Run:  PYTHONPATH=. python3 benchmarks/loop_tensor_bench.py [--steps N]

All columns come from this one run (medians); compare ratios within the table.
"""
import argparse
import statistics
import time

import numpy as np
from numba import njit

import graphc as gc
from graphc.bench.timing import settle


def median_time(fn, *args, reps=7):
    fn(*args)
    settle()                 # background compiles done: time the compiled steady state
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# -- the loops, in graphc ---------------------------------------------------------------------
def power_iteration(a, v, n):
    for _ in gc.range(n):
        v = gc.matmul(a, v)
        v = v / gc.sqrt(gc.reduce_sum(v * v))
    return v


def rnn(w, xs, h):
    for i in gc.range(xs.shape[0]):
        h = gc.tanh(gc.matmul(w, h[:, None])[:, 0] + xs[i])
    return h


def newton_sqrt(a, x, n):
    for _ in gc.range(n):
        x = x - (x * x - a) / (2.0 * x)
    return x


# -- the same loops, hand-written in numba ----------------------------------------------------
@njit(cache=False)
def hand_power(a, v, n):
    v = v.copy()
    for _ in range(n):
        v = a @ v
        v = v / np.sqrt(np.sum(v * v))
    return v


@njit(cache=False)
def hand_power_loops(a, v, n):
    m = a.shape[0]
    v = v.copy()
    w = np.empty_like(v)
    for _ in range(n):
        s = np.float32(0)
        for i in range(m):
            acc = np.float32(0)
            for k in range(m):
                acc += a[i, k] * v[k, 0]
            w[i, 0] = acc
            s += acc * acc
        r = np.sqrt(s)
        for i in range(m):
            v[i, 0] = w[i, 0] / r
    return v


@njit(cache=False)
def hand_rnn(w, xs, h):
    h = h.copy()
    t = np.empty_like(h)
    for i in range(xs.shape[0]):
        for r in range(h.shape[0]):
            acc = np.float32(0)
            for k in range(h.shape[0]):
                acc += w[r, k] * h[k]
            t[r] = np.tanh(acc + xs[i, r])
        h[:] = t
    return h


@njit(cache=False)
def hand_newton(a, x, n):
    x = x.copy()
    for _ in range(n):
        for j in range(x.shape[0]):
            x[j] = x[j] - (x[j] * x[j] - a[j]) / (np.float32(2) * x[j])
    return x


def compiled(fn, *args):
    """The numba-backend function, called until its loop runs compiled."""
    fast = gc.function(fn, backend="numba")
    for _ in range(20):
        fast(*args)
        loops = fast.get_concrete_function(*args).graph._numba_plan.loops
        if all(runner is not None and runner.fn is not None for _, runner, _ in loops):
            return fast
    raise RuntimeError(f"{fn.__name__}: the loop was not compiled: {loops}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    steps = ap.parse_args().steps
    rng = np.random.default_rng(0)
    a = (rng.random((8, 8)) + np.eye(8) * 8).astype(np.float32)
    v = np.ones((8, 1), np.float32)
    w = (rng.standard_normal((16, 16)) * 0.3).astype(np.float32)
    xs = rng.standard_normal((steps, 16)).astype(np.float32)
    h = np.zeros(16, np.float32)
    sq = rng.uniform(1, 100, 4).astype(np.float32)
    x0 = np.full(4, 50, np.float32)
    n = gc.constant(steps)
    cases = [
        (f"power iteration [8,8], {steps} steps", power_iteration, (a, v, n),
         [("a @ v", hand_power, (a, v, steps)), ("loops", hand_power_loops, (a, v, steps))]),
        (f"RNN cell h=16, {steps} steps", rnn, (w, xs, h), [("loops", hand_rnn, (w, xs, h))]),
        (f"Newton sqrt float32[4], {steps} steps", newton_sqrt, (sq, x0, n),
         [("loops", hand_newton, (sq, x0, steps))]),
    ]
    print(f"{'workload':38} {'numpy backend':>14} {'numba backend':>14} {'hand numba':>18} "
          f"{'vs numpy':>9} {'vs hand':>8}")
    for title, fn, args, hands in cases:
        ref = gc.function(fn, backend="numpy")
        fast = compiled(fn, *args)
        want = ref(*args).numpy()
        np.testing.assert_allclose(fast(*args).numpy(), want, rtol=1e-4, atol=1e-5)
        t_ref = median_time(ref, *args, reps=3)
        t_fast = median_time(fast, *args)
        for label, hand, hargs in hands:
            np.testing.assert_allclose(hand(*hargs), want, rtol=1e-4, atol=1e-5)
            t_hand = median_time(hand, *hargs)
            print(f"{title:38} {t_ref * 1e3:11.2f} ms {t_fast * 1e6:11.1f} us "
                  f"{t_hand * 1e6:9.1f} us ({label:5}) {t_ref / t_fast:8.0f}x "
                  f"{t_hand / t_fast:7.2f}x")
            title = ""


if __name__ == "__main__":
    main()
