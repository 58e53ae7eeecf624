"""Steady-state speed of each kernel variant (serial, parallel) of the cpu_bench workloads,
this checkout against another one, in child processes interleaved round by round.

A child compiles (GRAPHC_COMPILE=sync, a kernel cache shared by the rounds of its tree),
forces the kernel (GRAPHC_KERNEL_CHOICE=kernel) and its variant (one free core: serial;
two: parallel, on two threads) and prints the median of 21 calls; the table shows the
median over rounds of each tree and the ratio this/against (below 1: this is faster).
    python benchmarks/kernel_variants_bench.py --against DIR [--rounds 3] [--workload chain]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, statistics, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
import graphc as gc
import cpu_bench
from graphc.kernels.cpu import cores, launch
cores.free_cores = lambda *a, **k: {free}
fn, args = cpu_bench.workload_case({work!r})
f = gc.function(fn, backend="numba")
for _ in range(3):
    f(*args)
times = []
for _ in range(21):
    t = time.perf_counter()
    f(*args)
    times.append(time.perf_counter() - t)
print(json.dumps(statistics.median(times)))
"""


def one(root, cache, work, free):
    env = dict(os.environ, GRAPHC_CACHE_DIR=cache, GRAPHC_COMPILE="sync",
               GRAPHC_KERNEL_CHOICE="kernel")
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CHILD.format(bench=HERE, work=work, free=free)],
                         env=env, capture_output=True, text=True, check=True, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", required=True, help="another checkout's root")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workload", action="append")
    a = ap.parse_args()
    roots = {"this": os.path.dirname(HERE), "against": os.path.abspath(a.against)}
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; medians of "
          f"{a.rounds} rounds (each the median of 21 calls); ms")
    print(f"{'workload':10s} {'variant':9s} {'this':>8s} {'against':>8s} {'ratio':>6s}")
    with tempfile.TemporaryDirectory() as d:
        caches = {k: os.path.join(d, k) for k in roots}
        for work in a.workload or ["chain", "softmax", "layernorm"]:
            for variant, free in (("serial", 1), ("parallel", 2)):
                runs = {k: [] for k in roots}
                for _ in range(a.rounds):
                    for name, root in roots.items():
                        runs[name].append(one(root, caches[name], work, free))
                med = {k: statistics.median(v) * 1e3 for k, v in runs.items()}
                print(f"{work:10s} {variant:9s} {med['this']:8.2f} {med['against']:8.2f} "
                      f"{med['this'] / med['against']:6.2f}", flush=True)


if __name__ == "__main__":
    main()
