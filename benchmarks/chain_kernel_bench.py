"""graphc's fused kernel for `tanh(1.5*x + 0.25) * exp(-x*x) + 0.5*sin(x)` against the same
chain as a hand-written numba loop over graphc.kernels.vecmath, per element.

Columns, timed round-robin in one process (median and min of --rounds calls each):
  gc.function   the whole call: plan, group runner, output pool, kernel
  kernel        the group's fast kernel called directly on preallocated outputs (the flat
                1-d layout; the strided one for --layout T)
  hand          njit loop with vm.tanh / vm.exp / vm.fast_sin and literal constants
  hand_w        the same with prefer_vector_width(GRAPHC_VECTOR_WIDTH or 512), as graphc's
                kernels ask for on AVX-512 (LLVM's own default there is 256)

One thread (GRAPHC_THREADS=1) so the figures are per core. AVX2 code on an AVX-512 machine:
NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES="" GRAPHC_VECTOR_WIDTH=256, in a fresh process
with a fresh GRAPHC_CACHE_DIR.

    GRAPHC_THREADS=1 PYTHONPATH=. python benchmarks/chain_kernel_bench.py \
        [--dtype float32] [--sizes 65536,1048576,16777216] [--layout flat|2d|T]
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("GRAPHC_COMPILE", "sync")
os.environ.setdefault("GRAPHC_KERNEL_CHOICE", "kernel")

import numba  # noqa: E402
import numpy as np  # noqa: E402

import graphc as gc  # noqa: E402
from graphc.kernels import vecmath as vm  # noqa: E402
from graphc.kernels.cpu.codegen_parallel import ALL  # noqa: E402
from graphc.kernels.vecmath.bits import prefer_vector_width  # noqa: E402

WIDTH = int(os.environ.get("GRAPHC_VECTOR_WIDTH") or 512)


def chain(x):
    return gc.tanh(1.5 * x + 0.25) * gc.exp(-x * x) + 0.5 * gc.sin(x)


def hand_loops(T):
    @numba.njit(error_model="numpy", nogil=True)
    def hand(x, out):
        a, b, h = T(1.5), T(0.25), T(0.5)
        for i in range(x.size):
            v = x[i]
            out[i] = vm.tanh(a * v + b) * vm.exp(-v * v) + h * vm.fast_sin(v)

    @numba.njit(error_model="numpy", nogil=True)
    def hand_w(x, out):
        prefer_vector_width(WIDTH)
        a, b, h = T(1.5), T(0.25), T(0.5)
        for i in range(x.size):
            v = x[i]
            out[i] = vm.tanh(a * v + b) * vm.exp(-v * v) + h * vm.fast_sin(v)
    return hand, hand_w


def kernel_call(compiled, x):
    """The fast kernel and the arguments it got (recorded on one call), to call it again."""
    plan = compiled.get_concrete_function(gc.constant(x)).graph._numba_plan
    (kern,) = [k for r in plan.groups for k in r.used.values()]
    fast, par = kern.fast
    seen = []

    def spy(*args):
        seen.append(args)
        return fast(*args)
    kern.fast = (spy, par)
    try:
        compiled(x)
    finally:
        kern.fast = (fast, par)
    args = list(seen[0][:-2])
    nin = len(kern.spec.group.inputs)
    args[nin] = np.empty_like(args[nin])          # outputs of its own
    return lambda: fast(*args, 0, ALL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--sizes", default="65536,1048576,16777216")
    ap.add_argument("--layout", default="flat", choices=["flat", "2d", "T"],
                    help="1-d; 2-d C-contiguous (n/1024 x 1024); or its transpose (strided)")
    ap.add_argument("--rounds", type=int, default=0, help="calls per column (default: by size)")
    args = ap.parse_args()
    dt = np.dtype(args.dtype)
    hand, hand_w = hand_loops(dt.type)
    compiled = gc.function(chain, backend="numba")
    print(f"{dt.name} {args.layout}, {numba.get_num_threads()} numba threads, "
          f"GRAPHC_THREADS={os.environ.get('GRAPHC_THREADS')}, "
          f"cpu={numba.config.CPU_NAME or 'host'}, vector width {WIDTH}; ns/element, "
          f"median / min")
    for n in [int(s) for s in args.sizes.split(",")]:
        x = np.random.default_rng(0).uniform(-4, 4, n).astype(dt)
        xs = x if args.layout == "flat" else x.reshape(-1, 1024)
        xs = xs.T if args.layout == "T" else xs
        ref = compiled(xs).numpy()
        out, out_w = np.empty_like(x), np.empty_like(x)
        hand(x, out)
        hand_w(x, out_w)
        same = ref.tobytes() == (out.reshape(xs.shape) if args.layout != "T"
                                 else out.reshape(-1, 1024).T).tobytes()
        cols = {"gc.function": lambda: compiled(xs), "kernel": kernel_call(compiled, xs),
                "hand": lambda: hand(x, out), "hand_w": lambda: hand_w(x, out_w)}
        rounds = args.rounds or max(15, min(300, int(3e8 // n)))
        times = {name: [] for name in cols}
        for fn in cols.values():
            fn()
        for _ in range(rounds):
            for name, fn in cols.items():
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        row = "  ".join(f"{name} {statistics.median(ts) / n * 1e9:.3f} / "
                        f"{min(ts) / n * 1e9:.3f}" for name, ts in times.items())
        print(f"n={n:>9,}  {row}  (bit-identical to hand: {same})", flush=True)


if __name__ == "__main__":
    main()
