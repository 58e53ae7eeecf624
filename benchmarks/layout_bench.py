"""Fused kernels on inputs that are not C-contiguous: transposed (F-ordered), sliced with a
step, reversed. numpy eager vs graphc's numpy backend vs the default (auto) backend.

Run:  PYTHONPATH=. python3 benchmarks/layout_bench.py [--size 1024] [--rounds 5]

Medians of interleaved rounds in this one run; compare ratios within the table. A flat
group (the chain) runs its kernel over F-ordered memory as it is and on a C-contiguous
copy of any other layout; a group with reductions (softmax) on copies, where its measured
choice (one per mix of input layouts) keeps the numpy rules when the copy costs more than
the kernel saves (numpy's copy of a transposed array does not tile: ~5 ms for 4 MB).
"""
import argparse
import statistics
import time

import numpy as np

import graphc as gc
from graphc.bench.timing import settle


def chain(x):
    return gc.tanh(gc.sin(x) * 2.0 + gc.exp(-x)) * x


def softmax(x):
    e = gc.exp(x - gc.reduce_max(x, axis=1, keepdims=True))
    return e / gc.reduce_sum(e, axis=1, keepdims=True)


def chain_np(x):
    return np.tanh(np.sin(x) * np.float32(2.0) + np.exp(-x)) * x


def softmax_np(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layouts(n, rng):
    base = rng.standard_normal((n, n), dtype=np.float32)
    wide = rng.standard_normal((n, 2 * n), dtype=np.float32)
    return {"C": base, "transposed": base.T, "sliced ::2": wide[:, ::2],
            "reversed": base[::-1, ::-1]}


def _time(fn, x, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(x)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024, help="n of the n x n float32 input")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=11)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"{args.size}x{args.size} float32, medians (ms) of {args.rounds} interleaved rounds")
    print(f"{'workload':<9} {'layout':<11} {'numpy eager':>11} {'numpy backend':>13} "
          f"{'auto':>8} {'auto/numpy backend':>18}")
    for name, fn, ref in (("chain", chain, chain_np), ("softmax", softmax, softmax_np)):
        for lname, x in layouts(args.size, rng).items():
            runs = {"eager": ref, "numpy": gc.function(fn, backend="numpy"),
                    "auto": gc.function(fn)}
            for f in runs.values():
                f(x)
            settle()                      # background compiles done: the steady state
            for f in runs.values():
                for _ in range(3):
                    f(x)
            settle()
            got = {k: [] for k in runs}
            for _ in range(args.rounds):
                for k, f in runs.items():
                    got[k].append(_time(f, x, args.reps))
            ms = {k: statistics.median(v) * 1e3 for k, v in got.items()}
            print(f"{name:<9} {lname:<11} {ms['eager']:>11.2f} {ms['numpy']:>13.2f} "
                  f"{ms['auto']:>8.2f} {ms['auto'] / ms['numpy']:>18.2f}")


if __name__ == "__main__":
    main()
