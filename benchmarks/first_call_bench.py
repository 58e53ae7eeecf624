"""First call with an empty kernel cache, in fresh processes: numpy backend vs auto.

For each workload (elementwise chain 10M f32, row softmax 4096x1024, layernorm 8192x512),
runs a new Python process with a new GRAPHC_CACHE_DIR, times its first call (trace +
whatever compiling the backend does before returning) and, for `auto`, the time from the
first call's start until a call runs at the compiled steady-state speed (within 1.3x of the
median of calls made once everything is compiled). Medians of --reps processes each, side
by side in one run, with the load average: numpy backend, auto with GRAPHC_COMPILE=sync
(compile before the first run) and auto with background compile (the default). Usage:
    python benchmarks/first_call_bench.py [--reps 3] [--workload chain] [--follow 6]
                                          [--against DIR]
(GRAPHC_COMPILE=sync is what every first call did before tiered execution.) `--against`
runs the same children on another checkout too (say main in a temporary worktree),
interleaved, and prints its rows below this one's.
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
import graphc as gc
sys.path.insert(0, {here!r})
import cpu_bench
import graphc.kernels.cpu.backend   # numba's import is process start-up, not the first call
from numba.core.registry import cpu_target
cpu_target.target_context.refresh()
fn, args = cpu_bench.workload_case({work!r})
f = gc.function(fn, backend={backend!r})
t0 = time.perf_counter()
f(*args)
first = time.perf_counter() - t0
calls = []          # (end time since t0, duration)
deadline = t0 + {follow}
while not calls or time.perf_counter() < deadline:
    s = time.perf_counter()
    f(*args)
    e = time.perf_counter()
    calls.append((e - t0, e - s))
tiers = None
try:
    from graphc.kernels import tiers as _t
    _t.wait_all(60)
except ImportError:
    pass
steady = []
for _ in range(7):
    s = time.perf_counter()
    f(*args)
    steady.append(time.perf_counter() - s)
steady = sorted(steady)[3]
reached = next((t for t, d in calls if d <= 1.3 * steady), None)
print(json.dumps(dict(first=first, steady=steady, reached=reached)))
"""


def one(work, backend, follow, compile_mode, root=None):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, GRAPHC_CACHE_DIR=d)
        if compile_mode:
            env["GRAPHC_COMPILE"] = compile_mode
        root = root or os.path.dirname(HERE)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        out = subprocess.run([sys.executable, "-c", CHILD.format(
            here=HERE, work=work, backend=backend, follow=follow)],
            env=env, capture_output=True, text=True, check=True, cwd=root)  # `-c`: cwd first
        return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workload", action="append")
    ap.add_argument("--follow", type=float, default=6.0,
                    help="seconds of calls after the first, to see when compiled speed comes")
    ap.add_argument("--against", help="another checkout's root, measured interleaved")
    a = ap.parse_args()
    roots = {"": None}
    if a.against:
        roots["against "] = os.path.abspath(a.against)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; medians of "
          f"{a.reps} fresh processes per cell, each with an empty kernel cache")
    print(f"{'workload':10s} {'numpy 1st':>10s} {'sync 1st':>10s} {'bg 1st':>10s} "
          f"{'bg/numpy':>8s} {'steady':>9s} {'compiled speed at: sync':>24s} {'bg':>8s}")
    for work in a.workload or ["chain", "softmax", "layernorm"]:
        runs = {(t, k): [] for t in roots for k in ("numpy", "sync", "background")}
        for _ in range(a.reps):     # interleaved, so all see the same load
            for tag, root in roots.items():
                runs[tag, "numpy"].append(one(work, "numpy", 0, None, root))
                runs[tag, "sync"].append(one(work, "auto", 0, "sync", root))  # compiled first
                runs[tag, "background"].append(one(work, "auto", a.follow, "background",
                                                   root))
        for tag in roots:
            _row(tag + work, {k: v for (t, k), v in runs.items() if t == tag})


def _row(label, runs):
    med = {k: {f: statistics.median(r[f] if r[f] is not None else float("inf")
                                    for r in v) for f in ("first", "steady", "reached")}
           for k, v in runs.items()}
    print(f"{label:10s} {med['numpy']['first']:9.3f}s {med['sync']['first']:9.3f}s "
          f"{med['background']['first']:9.3f}s "
          f"{med['background']['first'] / med['numpy']['first']:7.1f}x "
          f"{med['background']['steady'] * 1e3:7.2f}ms "
          f"{med['sync']['reached']:23.2f}s {med['background']['reached']:7.2f}s", flush=True)


if __name__ == "__main__":
    main()
