"""Fused elementwise chain tanh(a*x + b) * exp(-x*x) + 0.5*sin(x) on 10M float32, three ways.

Columns, measured side by side in one run (median of --repeat calls, after a warm-up call):
  numpy        numpy eager (one temporary per op, numpy's own SIMD exp/sin/tanh)
  numba+math   numba.njit(parallel=True) prange loop calling math.tanh/exp/sin (scalar libm)
  numba+vecmath  the same loop calling graphc.kernels.vecmath (vectorizable polynomials)
  numba+vecmath fast  the same with vm.fast_sin (no float32 huge-argument Payne-Hanek path)
plus a 2-thread stream triad (a = b + s*c) as the memory roofline. GB/s counts one float32
read and one write per element (8 bytes/element) for the chain, 12 bytes/element for the triad.
It also checks the LLVM IR of the vecmath kernel for SIMD vector types and libm calls.

    PYTHONPATH=. python3 benchmarks/vecmath_bench.py [--n 10000000] [--repeat 15]
"""
import argparse
import math
import re
import statistics
import time

import numba
import numpy as np
from numba import prange

from graphc.kernels import vecmath as vm

A, B = np.float32(0.7), np.float32(-0.3)


def chain_numpy(x):
    return np.tanh(A * x + B) * np.exp(-x * x) + np.float32(0.5) * np.sin(x)


@numba.njit(parallel=True, fastmath=True, error_model="numpy")
def chain_math(x, out):
    for i in prange(x.size):
        v = x[i]
        out[i] = math.tanh(A * v + B) * math.exp(-v * v) + np.float32(0.5) * math.sin(v)


@numba.njit(parallel=True, fastmath=True, error_model="numpy")
def chain_vecmath(x, out):
    for i in prange(x.size):
        v = x[i]
        out[i] = vm.tanh(A * v + B) * vm.exp(-v * v) + np.float32(0.5) * vm.sin(v)


@numba.njit(parallel=True, fastmath=True, error_model="numpy")
def chain_vecmath_fast(x, out):
    for i in prange(x.size):
        v = x[i]
        out[i] = vm.tanh(A * v + B) * vm.exp(-v * v) + np.float32(0.5) * vm.fast_sin(v)


@numba.njit(parallel=True, error_model="numpy")
def triad(a, b, c, s):
    for i in prange(a.size):
        a[i] = b[i] + s * c[i]


def median_ms(fns, repeat):
    """Median ms per call of each function, timed round-robin so that load changes on a shared
    machine hit every column alike."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
    return [statistics.median(ts) * 1e3 for ts in times]


def vector_report(dispatcher):
    """(vector types found in the kernel's LLVM IR, libm-style calls found)."""
    ir = "\n".join(dispatcher.inspect_llvm().values())
    vectors = sorted(set(re.findall(r"<(\d+) x (float|double)>", ir)),
                     key=lambda t: (t[1], int(t[0])))
    calls = sorted(set(re.findall(
        r"call [^@\n]*@((?:llvm\.)?(?:tanh|exp|sin|cos|log|pow)(?:f|\.v?\d*f\d+)?)\(", ir)))
    return [f"<{n} x {t}>" for n, t in vectors], calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.uniform(-4, 4, args.n).astype(np.float32)
    out_m, out_v, out_f = np.empty_like(x), np.empty_like(x), np.empty_like(x)

    ref = chain_numpy(x)
    chain_math(x, out_m)
    chain_vecmath(x, out_v)
    chain_vecmath_fast(x, out_f)
    exact = (np.tanh(0.7 * x.astype(np.float64) - 0.3) * np.exp(-x.astype(np.float64) ** 2)
             + 0.5 * np.sin(x.astype(np.float64)))
    for name, got in (("numpy", ref), ("numba+math", out_m), ("numba+vecmath", out_v),
                      ("numba+vecmath fast", out_f)):
        print(f"  max abs error vs float64 {name:18s} {np.max(np.abs(got - exact)):.2e}")

    tb, tc = rng.random(args.n, dtype=np.float32), rng.random(args.n, dtype=np.float32)
    ta = np.empty_like(tb)
    variants = [("numpy eager", lambda: chain_numpy(x), 8),
                ("numba prange + math.*", lambda: chain_math(x, out_m), 8),
                ("numba prange + vecmath", lambda: chain_vecmath(x, out_v), 8),
                ("  ... with vm.fast_sin", lambda: chain_vecmath_fast(x, out_f), 8),
                ("triad (roofline)", lambda: triad(ta, tb, tc, np.float32(3)), 12)]
    times = median_ms([fn for _, fn, _ in variants], args.repeat)
    rows = [(name, ms, nbytes) for (name, _, nbytes), ms in zip(variants, times)]
    print(f"\n{args.n:,} float32, {numba.get_num_threads()} threads, median of {args.repeat}")
    print(f"{'variant':26s} {'ms':>8s} {'GB/s':>7s} {'vs numpy':>9s}")
    for name, ms, bytes_per in rows:
        gbs = args.n * bytes_per / (ms * 1e-3) / 1e9
        print(f"{name:26s} {ms:8.2f} {gbs:7.1f} {rows[0][1] / ms:8.2f}x")
    for name, disp in (("math", chain_math), ("vecmath", chain_vecmath),
                       ("vecmath fast", chain_vecmath_fast)):
        vectors, calls = vector_report(disp)
        print(f"LLVM IR of numba+{name}: vector types {vectors or 'none'}; "
              f"libm calls {calls or 'none'}")


if __name__ == "__main__":
    main()
