"""CPU benchmark for the numba backend: graphc vs numpy eager vs hand-written numba.

Run:  PYTHONPATH=. python3 benchmarks/cpu_bench.py [--quick] [--thresholds]

Every column is measured in this one run (medians), so compare ratios within the table:
runs on a shared 2-core machine vary by up to ~1.5x from one to the next.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from numba import njit, prange

import graphc as gc
import graphc.kernels.cpu.backend  # noqa: F401 - sets GOMP_SPINCOUNT before any prange runs,
#                            so the hand-written kernels below get the same threading setup
from graphc.bench.hand_numba import FASTMATH
from graphc.bench.timing import settle

# What a numba user writes for array loops, and the same standard as `graphc bench`'s
# "numba (hand)" column: prange, parallel, fast-math flags that only change rounding
# (fastmath=True measured the same here: chain 4M 146-153 vs 144-166 ms, one thread).
# The two scalar loops below stay serial: 1000 iterations cost less than a parallel region.
FM = dict(parallel=True, fastmath=FASTMATH, cache=False)


def workload_case(work):
    """(function, arguments) of the chain, softmax or layernorm workload at full size, the
    inputs every fresh-process benchmark (first call, cold compile, variants) starts from."""
    rng = np.random.default_rng(0)
    if work == "chain":
        return chain, (rng.standard_normal(10_000_000, dtype=np.float32), np.float32(1.5),
                       np.float32(0.5))
    if work == "softmax":
        return softmax, (rng.standard_normal((4096, 1024), dtype=np.float32),)
    return layernorm, (rng.standard_normal((8192, 512), dtype=np.float32),
                       rng.standard_normal(512, dtype=np.float32),
                       rng.standard_normal(512, dtype=np.float32))


def median_time(fn, *args, reps=11, min_time=0.0):
    fn(*args)
    settle()                 # background compiles done: time the compiled steady state
    fn(*args)
    settle()
    times = []
    start = time.perf_counter()
    while len(times) < reps or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# -- hand-written numba references --------------------------------------------------------

@njit(**FM)
def triad(a, b, c, s):
    for i in prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


@njit(**FM)
def hand_chain(x, a, b, out):
    for i in prange(x.shape[0]):
        v = x[i]
        out[i] = np.tanh(a * v + b) * np.exp(-v * v) + np.float32(0.5) * np.sin(v)


@njit(**FM)
def hand_softmax(x, out):
    for i in prange(x.shape[0]):
        m = -np.inf
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        s = np.float32(0)
        for j in range(x.shape[1]):
            e = np.exp(x[i, j] - m)
            out[i, j] = e
            s += e
        for j in range(x.shape[1]):
            out[i, j] /= s


@njit(**FM)
def hand_layernorm(x, g, b, out):
    n = x.shape[1]
    for i in prange(x.shape[0]):
        s = np.float32(0)
        for j in range(n):
            s += x[i, j]
        mean = s / n
        v = np.float32(0)
        for j in range(n):
            d = x[i, j] - mean
            v += d * d
        r = np.float32(1) / np.sqrt(v / n + np.float32(1e-5))
        for j in range(n):
            out[i, j] = (x[i, j] - mean) * r * g[j] + b[j]


@njit(cache=False)
def hand_while(n):
    s = np.int32(0)
    i = np.int32(0)
    while i < n:
        s += np.int32(i * i % 7)
        i += np.int32(1)
    return s


@njit(cache=False)
def hand_branchy(x):
    acc = np.float32(0)
    for i in range(1000):
        if x[i] > 0:
            acc += x[i] ** 2
        else:
            acc -= x[i]
    return acc


# -- graphc functions ---------------------------------------------------------------------

def chain(x, a, b):
    return gc.tanh(a * x + b) * gc.exp(-x * x) + 0.5 * gc.sin(x)


def softmax(x):
    e = gc.exp(x - gc.reduce_max(x, axis=-1, keepdims=True))
    return e / gc.reduce_sum(e, axis=-1, keepdims=True)


def layernorm(x, g, b):
    mean = gc.reduce_mean(x, axis=-1, keepdims=True)
    xc = x - mean
    var = gc.reduce_mean(xc * xc, axis=-1, keepdims=True)
    return xc * gc.rsqrt(var + 1e-5) * g + b


def scalar_while(n):
    s = gc.constant(0, gc.int32)
    i = gc.constant(0, gc.int32)
    while i < n:
        s += i * i % 7
        i += 1
    return s


def branchy(x):
    acc = gc.constant(0.0, gc.float32)
    for i in gc.range(1000):
        if x[i] > 0:
            acc += x[i] ** 2
        else:
            acc -= x[i]
    return acc


def np_chain(x, a, b):
    return np.tanh(a * x + b) * np.exp(-x * x) + np.float32(0.5) * np.sin(x)


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_layernorm(x, g, b):
    mean = x.mean(axis=-1, keepdims=True)
    xc = x - mean
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return xc / np.sqrt(var + np.float32(1e-5)) * g + b


def np_while(n):
    s, i = np.int32(0), np.int32(0)
    while i < n:
        s += np.int32(i * i % 7)
        i += np.int32(1)
    return s


def np_branchy(x):
    acc = np.float32(0)
    for i in range(1000):
        acc = acc + x[i] ** 2 if x[i] > 0 else acc - x[i]
    return acc


COLD_SCRIPT = """
import sys, time
t0 = time.perf_counter()
import numpy as np, graphc as gc
sys.path.insert(0, {here!r})
from cpu_bench import layernorm
import graphc.kernels.cpu.backend  # numba's import is process start-up, not part of the first call
from numba.core.registry import cpu_target
t_init = time.perf_counter()
cpu_target.target_context.refresh()   # numba's one-time init, paid by any numba program
t_init = time.perf_counter() - t_init
x = np.random.rand(256, 512).astype(np.float32)
g = np.ones(512, np.float32); b = np.zeros(512, np.float32)
f = gc.function(layernorm, backend="numba")
t1 = time.perf_counter()
f(x, g, b)
t2 = time.perf_counter()
print(t2 - t1, t_init)
"""


def first_call(cache_dir):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, GRAPHC_CACHE_DIR=cache_dir, GRAPHC_KERNEL_CHOICE="kernel")
    env["PYTHONPATH"] = os.path.dirname(here) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", COLD_SCRIPT.format(here=here)], env=env,
                         capture_output=True, text=True, check=True)
    first, init = map(float, out.stdout.split()[:2])
    return first, init


def run(quick=False):
    rng = np.random.default_rng(0)
    n = 1_000_000 if quick else 10_000_000
    rows = []

    def add(name, t_np, t_gc, t_hand, note=""):
        rows.append((name, t_np, t_gc, t_hand, note))

    a = np.empty(n, np.float32)
    b = rng.random(n, dtype=np.float32)
    c = rng.random(n, dtype=np.float32)
    t_triad = median_time(triad, a, b, c, np.float32(3))
    triad_gbs = 12 * n / t_triad / 1e9

    x = rng.standard_normal(n, dtype=np.float32)
    sa, sb = np.float32(1.5), np.float32(0.5)
    f = gc.function(chain, backend="numba")
    out = np.empty_like(x)
    t_gc = median_time(f, x, sa, sb)
    add(f"elementwise chain {n // 10**6}M f32", median_time(np_chain, x, sa, sb), t_gc,
        median_time(hand_chain, x, sa, sb, out),
        f"{8 * n / t_gc / 1e9:.1f} GB/s (triad {triad_gbs:.1f} GB/s)")

    x = rng.standard_normal((4096, 1024), dtype=np.float32)
    out = np.empty_like(x)
    add("row softmax 4096x1024", median_time(np_softmax, x),
        median_time(gc.function(softmax, backend="numba"), x), median_time(hand_softmax, x, out))

    x = rng.standard_normal((8192, 512), dtype=np.float32)
    g = rng.standard_normal(512, dtype=np.float32)
    bb = rng.standard_normal(512, dtype=np.float32)
    out = np.empty_like(x)
    add("layernorm 8192x512", median_time(np_layernorm, x, g, bb),
        median_time(gc.function(layernorm, backend="numba"), x, g, bb),
        median_time(hand_layernorm, x, g, bb, out))

    nn = gc.constant(20000, gc.int32)
    add("scalar while 20k int32", median_time(np_while, 2000, reps=3) * 10,
        median_time(gc.function(scalar_while, backend="numba"), nn, reps=201),
        median_time(hand_while, 20000, reps=201), "numpy column: Python loop (x10 of 2k)")

    xs = rng.standard_normal(1000, dtype=np.float32)
    add("branchy loop 1000", median_time(np_branchy, xs, reps=5),
        median_time(gc.function(branchy, backend="numba"), gc.constant(xs), reps=201),
        median_time(hand_branchy, xs, reps=201), "numpy column: Python loop")

    with tempfile.TemporaryDirectory() as d:
        cold, init = first_call(d)
        warm = statistics.median(first_call(d)[0] for _ in range(3))
    return rows, cold, warm, init


def show(rows, cold, warm, init):
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} "
          f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')}")
    print(f"{'workload':28s} {'numpy':>10s} {'graphc':>10s} {'numba hand':>11s} "
          f"{'vs numpy':>9s} {'vs hand':>8s}  note")
    for name, t_np, t_gc, t_hand, note in rows:
        print(f"{name:28s} {_fmt(t_np):>10s} {_fmt(t_gc):>10s} {_fmt(t_hand):>11s} "
              f"{t_np / t_gc:8.1f}x {t_gc / t_hand:7.2f}x  {note}")
    print(f"first call (trace + compile), layernorm: cold cache {_fmt(cold)}, warm disk cache "
          f"in a new process {_fmt(warm)} ({cold / warm:.1f}x faster); numba's one-time "
          f"process init, paid before either, {_fmt(init)}")


def _fmt(t):
    return f"{t * 1e3:.2f} ms" if t >= 1e-3 else f"{t * 1e6:.1f} us"


def thresholds():
    """Where fused kernels start to beat numpy, and prange starts to beat one thread.

    The backend's MIN_SIZE and PAR_MIN (graphc/kernels/groups.py) come from this table.
    """
    from graphc.kernels.cpu import groups
    os.environ.update(GRAPHC_NUMBA_MIN_SIZE="0", GRAPHC_KERNEL_CHOICE="kernel")
    fn = lambda x: gc.exp(x * 0.5) * x + 1.0    # noqa: E731 - a short typical chain
    ref = gc.function(fn, backend="numpy")
    print(f"{'elements':>9s} {'numpy':>10s} {'kernel 1 thread':>16s} {'kernel prange':>14s}")
    saved = groups.PAR_MIN
    try:
        for p in range(8, 21, 2):
            x = np.random.rand(2 ** p).astype(np.float32)
            groups.PAR_MIN = 1 << 62
            serial = median_time(gc.function(fn, backend="numba"), x, reps=51)
            groups.PAR_MIN = 0
            par = median_time(gc.function(fn, backend="numba"), x, reps=51)
            print(f"{2 ** p:9d} {_fmt(median_time(ref, x, reps=51)):>10s} {_fmt(serial):>16s} "
                  f"{_fmt(par):>14s}")
    finally:
        groups.PAR_MIN = saved


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1M-element chain instead of 10M")
    p.add_argument("--thresholds", action="store_true",
                   help="measure the size thresholds for kernels and prange instead")
    args = p.parse_args(argv)
    # Steady state of compiled code: a loop otherwise runs interpreted until it has spent
    # its interpreted-time budget (docs/backends.md, "Tiers"), which a 1000-iteration loop
    # timed 201 times barely reaches. The first-call line runs in fresh processes, unaffected.
    gc.config.set_compile_mode("sync")
    if args.thresholds:
        thresholds()
        return
    show(*run(args.quick))


if __name__ == "__main__":
    main()
