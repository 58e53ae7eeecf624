"""Cold compile seconds of each workload's kernel, per variant, in fresh processes.

Each child process gets an empty GRAPHC_CACHE_DIR, compiles before running
(GRAPHC_COMPILE=sync), sees two free cores (so the first decision compiles the serial and
the prange variant) and reports the seconds numba spent in each top-level compile: the first
one includes the vector math the kernel calls (compiled once per process), the second is the
prange variant alone. `--against DIR` runs the same children on another checkout (say main
in a temporary worktree), interleaved with this one so both see the same load.
    python benchmarks/cold_compile_bench.py [--reps 3] [--workload chain] [--against DIR]
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
import json, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
import graphc as gc
import cpu_bench
import graphc.kernels.cpu.backend
from graphc.kernels.cpu import cores
from numba.core import dispatcher
from numba.core.registry import cpu_target
cpu_target.target_context.refresh()
cores.free_cores = lambda *a, **k: 2            # measure serial and prange, as on an idle machine
compiles, depth = [], [0]
orig = dispatcher.Dispatcher.compile
def timed(self, sig):
    depth[0] += 1
    t = time.perf_counter()
    try:
        return orig(self, sig)
    finally:
        depth[0] -= 1
        if depth[0] == 0 and self.py_func.__name__.startswith("fused_kernel"):
            compiles.append((self.py_func.__name__, time.perf_counter() - t))
dispatcher.Dispatcher.compile = timed
fn, args = cpu_bench.workload_case({work!r})
gc.function(fn)(*args)
print(json.dumps(compiles))
"""


def one(root, work):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, GRAPHC_CACHE_DIR=d, GRAPHC_COMPILE="sync",
                   GRAPHC_KERNEL_CHOICE="measure")
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        out = subprocess.run([sys.executable, "-c", CHILD.format(bench=HERE, work=work)],
                             env=env, capture_output=True, text=True, check=True, cwd=root)
        compiles = json.loads(out.stdout.strip().splitlines()[-1])
        return [s for _, s in compiles]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workload", action="append")
    ap.add_argument("--against", help="another checkout's root, measured interleaved")
    a = ap.parse_args()
    roots = {"this": os.path.dirname(HERE)}
    if a.against:
        roots["against"] = os.path.abspath(a.against)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; medians of "
          f"{a.reps} fresh processes, empty kernel cache; seconds")
    print(f"{'workload':10s} {'tree':8s} {'1st variant':>12s} {'2nd variant':>12s} {'total':>7s}")
    for work in a.workload or ["chain", "softmax", "layernorm"]:
        runs = {k: [] for k in roots}
        for _ in range(a.reps):
            for name, root in roots.items():
                runs[name].append(one(root, work))
        for name, rs in runs.items():
            first = statistics.median(r[0] for r in rs)
            second = statistics.median(r[1] if len(r) > 1 else 0.0 for r in rs)
            total = statistics.median(sum(r) for r in rs)
            print(f"{work:10s} {name:8s} {first:12.2f} {second:12.2f} {total:7.2f}", flush=True)


if __name__ == "__main__":
    main()
