"""Cached calls of compiled loops: graphc against the same loop written by hand in numba.

The cpu_bench loops (branchy loop over 1000 float32, scalar while over 20k int32) in child
processes (GRAPHC_COMPILE=sync), each printing timeit medians of graphc's call and of the
hand-written loop measured beside it; `--against DIR` runs the same children on another
checkout, interleaved round by round, so both see the same load. The ratio graphc / hand
is the figure to compare (absolute times drift with the machine's load).
    python benchmarks/loop_call_bench.py [--rounds 3] [--against DIR]
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
import json, statistics, sys, timeit
import numpy as np
sys.path.insert(0, {bench!r})
import graphc as gc
import cpu_bench
from graphc.bench.timing import settle

def us(fn, *args):
    runs = timeit.repeat(lambda: fn(*args), number=2000, repeat=9)
    return float(np.median(runs)) / 2000 * 1e6

xs = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
branchy = gc.function(cpu_bench.branchy, backend="numba")
loop = gc.function(cpu_bench.scalar_while, backend="numba")
x, n = gc.constant(xs), gc.constant(20000, gc.int32)
assert branchy(x).numpy() == cpu_bench.hand_branchy(xs) and loop(n).numpy() == cpu_bench.hand_while(20000)
settle()
out = {{}}
for _ in range(3):          # alternate graphc and hand, keep each one's median
    for name, f, a, h, b in (("branchy", branchy, x, cpu_bench.hand_branchy, xs),
                             ("while", loop, n, cpu_bench.hand_while, 20000)):
        out.setdefault(name, []).append((us(f, a), us(h, b)))
print(json.dumps({{k: [statistics.median(g for g, _ in v), statistics.median(h for _, h in v)]
                  for k, v in out.items()}}))
"""


def one(root, cache):
    env = dict(os.environ, GRAPHC_CACHE_DIR=cache, GRAPHC_COMPILE="sync")
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CHILD.format(bench=HERE)], env=env,
                         capture_output=True, text=True, check=True, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--against", help="another checkout's root, measured interleaved")
    a = ap.parse_args()
    roots = {"this": os.path.dirname(HERE)}
    if a.against:
        roots["against"] = os.path.abspath(a.against)
    runs = {k: [] for k in roots}
    with tempfile.TemporaryDirectory() as d:
        caches = {k: os.path.join(d, k) for k in roots}
        for _ in range(a.rounds):
            for name, root in roots.items():
                runs[name].append(one(root, caches[name]))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; medians over "
          f"{a.rounds} rounds of fresh processes; us per call")
    print(f"{'loop':10s} {'tree':8s} {'graphc':>8s} {'hand':>8s} {'ratio':>6s}")
    for loop in ("branchy", "while"):
        for name, rs in runs.items():
            g = statistics.median(r[loop][0] for r in rs)
            h = statistics.median(r[loop][1] for r in rs)
            ratio = statistics.median(r[loop][0] / r[loop][1] for r in rs)
            print(f"{loop:10s} {name:8s} {g:8.2f} {h:8.2f} {ratio:6.2f}")


if __name__ == "__main__":
    main()
