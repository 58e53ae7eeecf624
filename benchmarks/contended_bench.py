"""auto vs the numpy backend, idle and beside a CPU hog (issue 13's reproducer).

Run:  PYTHONPATH=. python3 benchmarks/contended_bench.py [--hogs N] [--seconds S]

Softmax 512x1024, layernorm 2048x512 and a trig chain over 1M float32, each called with a
little numpy work between calls (as a user's script does). Everything is compiled before
the hog starts; the hog is a busy-loop process that stops by itself after S seconds.
Modes are measured in interleaved rounds and every figure is a median of this one run:
compare ratios within a table, and read the load average printed beside it.

`--bench-sizes` runs `graphc bench`'s elementwise chain (10M float32) and layernorm
8192x512 instead, and adds an idle "auto 1 thread" column (auto with every region on one
thread, as GRAPHC_THREADS=1 runs it): on a 2-core machine with one core hogged a parallel
kernel can at best run like the single-thread kernel, so "hog/1thr" (the hogged auto
median over it) says how far the thread-count and wait-policy choices are from that.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import graphc as gc
from cpu_bench import layernorm, softmax  # the same workload code as cpu_bench's table

HOG = "import time\nt = time.time() + {s}\nwhile time.time() < t: pass\n"


def trig(x):
    return gc.sin(x) * gc.cos(2.0 * x) + gc.sin(0.5 * x) * 0.25


def workloads():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 1024), dtype=np.float32)
    y = rng.standard_normal((2048, 512), dtype=np.float32)
    g = rng.standard_normal(512, dtype=np.float32)
    b = rng.standard_normal(512, dtype=np.float32)
    t = rng.standard_normal(1 << 20, dtype=np.float32)
    return [("softmax 512x1024", softmax, (x,)), ("layernorm 2048x512", layernorm, (y, g, b)),
            ("trig chain 1M f32", trig, (t,))]


def bench_workloads():
    from graphc.bench.workloads import elementwise_chain, layernorm as bench_layernorm
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 10_000_000).astype(np.float32)
    y = rng.uniform(-3, 3, (8192, 512)).astype(np.float32)
    g = rng.uniform(0.5, 1.5, 512).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, 512).astype(np.float32)
    return [("elementwise 10M f32", elementwise_chain, (x,)),
            ("layernorm 8192x512", bench_layernorm, (y, g, b))]


def one_thread(fn):
    """`fn` with every parallel region on one thread (GRAPHC_THREADS=1, for its calls)."""
    from graphc.kernels.cpu import cores

    def call(*args):
        cores.fixed()                          # read GRAPHC_THREADS once, then override it
        saved, cores._FIXED[0] = cores._FIXED[0], 1
        try:
            return fn(*args)
        finally:
            cores._FIXED[0] = saved
    return call


def timed(fn, args, between, reps):
    """Median per call, with `between` (a little numpy work) before each call."""
    out = []
    for _ in range(reps):
        between()
        t0 = time.perf_counter()
        fn(*args)
        out.append(time.perf_counter() - t0)
    return out


def measure(rows, rounds, reps):
    scratch = np.ones(20000, np.float32)

    def between():
        np.multiply(scratch, 1.0001, out=scratch)

    res, share = {}, {}
    for r in range(rounds):
        for name, fns, args in rows:
            # the order alternates: a mode right after another that swept 16 MB through the
            # caches (eager, numpy) starts cold, one after a mode on the same data warm
            for mode, fn in list(fns.items())[::-1 if r % 2 else 1]:
                c0, t0 = time.process_time(), time.perf_counter()
                res.setdefault((name, mode), []).extend(timed(fn, args, between, reps))
                cpu, wall = share.get((name, mode), (0.0, 0.0))
                share[(name, mode)] = (cpu + time.process_time() - c0,
                                       wall + time.perf_counter() - t0)
    out = {k: statistics.median(v) for k, v in res.items()}
    # CPU seconds this process got per second of wall time while auto ran: on a shared
    # machine the other jobs' load shows here (a serial kernel on a core of its own: 1.0)
    out.update({(k[0], "cpu " + k[1]): c / w for k, (c, w) in share.items() if w})
    return out


def table(title, med, rows, single=None):
    print(f"\n{title}  (load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cpus, "
          f"affinity {len(os.sched_getaffinity(0))})")
    one_thread_column = any(m == "auto 1thr" for _, m in med)
    print(f"{'workload':22s} {'eager':>9s} {'numpy be':>9s} {'auto':>9s} {'auto/numpy':>10s} "
          f"{'auto/eager':>10s}" + (f" {'auto 1 thr':>10s}" if one_thread_column else "")
          + (f" {'hog/1thr':>9s}" if single else ""))
    for name, _, _ in rows:
        e, n, a = (med[(name, m)] * 1e3 for m in ("eager", "numpy", "auto"))
        line = f"{name:22s} {e:8.3f}m {n:8.3f}m {a:8.3f}m {a / n:10.2f} {e / a:10.2f}"
        if (name, "auto 1thr") in med:
            line += f" {med[(name, 'auto 1thr')] * 1e3:9.3f}m"
        if single:
            line += f" {a / (single[(name, 'auto 1thr')] * 1e3):9.2f}"
        line += f"  (auto got {med[(name, 'cpu auto')]:.2f} cpu/s"
        if (name, "cpu auto 1thr") in med:
            line += f", 1 thr {med[(name, 'cpu auto 1thr')]:.2f}"
        print(line + ")")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--hogs", type=int, default=1)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--assume-free", type=int, default=0,
                   help="pretend this many cores are free (e.g. the machine's count: every "
                        "parallel region uses them all, as before the free-core signal)")
    p.add_argument("--bench-sizes", action="store_true",
                   help="graphc bench's elementwise 10M and layernorm 8192x512, with an idle "
                        "single-thread auto column")
    a = p.parse_args(argv)
    if a.assume_free:
        from graphc.kernels.cpu import cores
        cores.free_cores = lambda: a.assume_free
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '')} "
          f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', '(graphc default)')} "
          f"assume_free={a.assume_free or 'no (measured)'}")
    rows = []
    for name, f, args in (bench_workloads() if a.bench_sizes else workloads()):
        fns = {"eager": f, "numpy": gc.function(f, backend="numpy"), "auto": gc.function(f)}
        if a.bench_sizes:
            fns["auto 1thr"] = one_thread(fns["auto"])
        for fn in fns.values():
            for _ in range(3):
                fn(*args)
        rows.append((name, fns, args))
    from graphc.kernels import tiers
    tiers.wait_all()                           # compiled code in place before timing
    idle = measure(rows, a.rounds, a.reps)
    table("idle", idle, rows)
    for _, fns, _ in rows:
        fns.pop("auto 1thr", None)             # the hogged table: eager, numpy, auto
    hogs = [subprocess.Popen([sys.executable, "-c", HOG.format(s=a.seconds)])
            for _ in range(a.hogs)]
    try:
        time.sleep(1.0)
        table(f"{a.hogs} hog(s)", measure(rows, a.rounds, a.reps), rows,
              single=idle if a.bench_sizes else None)
    finally:
        for h in hogs:
            h.terminate()
            h.wait()


if __name__ == "__main__":
    main()
