"""Background compile: a thread in this process against a process that fills the disk cache.

While the elementwise chain's kernel compiles (empty cache), this process keeps calling the
chain on the numpy plan, as a user's first calls do. Reports, per way, the median numpy-plan
call while compiling (how much the compile slows the user's Python) and the seconds until
the compiled kernel runs. The same run measures both, interleaved, with the load average.
    python benchmarks/compile_tier_bench.py [--reps 2] [--n 1000000]
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
import json, os, statistics, subprocess, sys, time
import numpy as np
import graphc as gc
sys.path.insert(0, {here!r})
import cpu_bench
import graphc.kernels.cpu.backend
from numba.core.registry import cpu_target
cpu_target.target_context.refresh()
from graphc.kernels import tiers
from graphc.kernels.stats import COUNTS
x = np.random.default_rng(0).standard_normal({n}, dtype=np.float32)
args = (x, np.float32(1.5), np.float32(0.5))
ref = gc.function(cpu_bench.chain, backend="numpy")
ref(*args)
idle = []
for _ in range(20):
    s = time.perf_counter(); ref(*args); idle.append(time.perf_counter() - s)
busy = []
t0 = time.perf_counter()
if {way!r} == "thread":
    f = gc.function(cpu_bench.chain)                  # background mode: a compile thread
    while COUNTS.kernel_calls == 0:
        s = time.perf_counter(); f(*args); busy.append(time.perf_counter() - s)
    busy.pop()                                        # the call that switched
else:
    child = subprocess.Popen([sys.executable, "-c",
        "import sys, numpy as np, graphc as gc; sys.path.insert(0, {here!r}); import cpu_bench; "
        "x = np.zeros({n}, np.float32); gc.function(cpu_bench.chain)(x, np.float32(1.5), np.float32(0.5))"],
        env=dict(os.environ, GRAPHC_COMPILE="sync"))
    while child.poll() is None:
        s = time.perf_counter(); ref(*args); busy.append(time.perf_counter() - s)
    f = gc.function(cpu_bench.chain)                  # loads the kernel the child compiled
    f(*args)
    assert COUNTS.kernel_calls > 0
ready = time.perf_counter() - t0
print(json.dumps(dict(idle=statistics.median(idle), busy=statistics.median(busy), ready=ready)))
"""


def one(way, n):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, GRAPHC_CACHE_DIR=d, GRAPHC_COMPILE="background")
        env["PYTHONPATH"] = os.path.dirname(HERE) + os.pathsep + env.get("PYTHONPATH", "")
        out = subprocess.run([sys.executable, "-c", CHILD.format(here=HERE, way=way, n=n)],
                             env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--n", type=int, default=1_000_000)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; chain over "
          f"{a.n} float32, medians of {a.reps} fresh processes")
    res = {"thread": [], "process": []}
    for _ in range(a.reps):
        for way in res:
            res[way].append(one(way, a.n))
    for way, rs in res.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("idle", "busy", "ready")}
        print(f"{way:8s} numpy-plan call idle {med['idle'] * 1e3:6.2f} ms, while compiling "
              f"{med['busy'] * 1e3:6.2f} ms ({med['busy'] / med['idle']:.2f}x); compiled "
              f"kernel runs after {med['ready']:.2f} s")


if __name__ == "__main__":
    main()
