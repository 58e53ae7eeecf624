"""graphc.dask.map_blocks vs dask.array with numpy ops, on a LocalCluster of 1 and 2 workers.

Run:  PYTHONPATH=. python3 benchmarks/dask_bench.py [--total-mb 2048] [--chunk-mb 64]

The issue's workload is the elementwise chain of cpu_bench.py over a float32 array of 2 GB in
64 MB chunks. The input is generated on the workers and persisted first, so the timing is
the chain plus a sum of each result (nothing big travels to the client). Each worker is one
process with one thread, and graphc kernels use one thread there (GRAPHC_THREADS=1), so the
worker count is the core count. Both variants alternate in every round; medians are printed,
with the per-block overhead measured on 1-element chunks (a chain task and a sum task per
block).
"""
import argparse
import os
import statistics
import time

import numpy as np

os.environ.setdefault("GRAPHC_THREADS", "1")        # workers inherit it: one core each
import dask.array as da  # noqa: E402
import distributed  # noqa: E402

import graphc as gc  # noqa: E402
import graphc.dask as gd  # noqa: E402


@gc.function
def chain(x):
    return gc.tanh(1.5 * x + 0.25) * gc.exp(-x * x) + 0.5 * gc.sin(x)


def np_chain(x):
    return np.tanh(np.float32(1.5) * x + np.float32(0.25)) * np.exp(-x * x) \
        + np.float32(0.5) * np.sin(x)


def _timed(client, arr):
    t = time.perf_counter()
    client.compute(arr).result()
    return time.perf_counter() - t


def run(workers, total_mb, chunk_mb, rounds):
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                       processes=True, dashboard_address=":0",
                                       memory_limit=0)
    client = distributed.Client(cluster)
    try:
        n = total_mb * 2**20 // 4
        chunk = chunk_mb * 2**20 // 4
        x = da.random.default_rng(0).random(n, dtype=np.float32, chunks=chunk)
        x = client.persist(x)
        distributed.wait(x)
        variants = {"dask+numpy": da.map_blocks(np_chain, x, dtype=np.float32).sum(),
                    "graphc.dask": gd.map_blocks(chain, x).sum()}
        for v in variants.values():          # warm-up: kernels compile, workers load graphs
            _timed(client, v)
        times = {k: [] for k in variants}
        for _ in range(rounds):
            for k, v in variants.items():
                times[k].append(_timed(client, v))
        tiny = da.ones(400, dtype=np.float32, chunks=1)
        over = {"dask+numpy": da.map_blocks(np_chain, tiny, dtype=np.float32).sum(),
                "graphc.dask": gd.map_blocks(chain, tiny).sum()}
        per_task = {k: [] for k in over}
        for _ in range(3):
            for k, v in over.items():
                per_task[k].append(_timed(client, v) / 400)      # one chain + one sum task each
        return ({k: statistics.median(v) for k, v in times.items()},
                {k: statistics.median(v) for k, v in per_task.items()})
    finally:
        client.close()
        cluster.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-mb", type=int, default=2048)
    p.add_argument("--chunk-mb", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    print(f"chain over float32 {args.total_mb} MB in {args.chunk_mb} MB chunks, "
          f"{args.rounds} rounds, medians")
    res = {}
    for w in (1, 2):
        res[w] = run(w, args.total_mb, args.chunk_mb, args.rounds)
        t, per = res[w]
        print(f"{w} worker(s): dask+numpy {t['dask+numpy']:.3f} s, graphc.dask "
              f"{t['graphc.dask']:.3f} s, speed-up {t['dask+numpy'] / t['graphc.dask']:.2f}x; "
              f"per-block overhead (1-element chunks) dask+numpy "
              f"{per['dask+numpy'] * 1e3:.2f} ms, graphc.dask {per['graphc.dask'] * 1e3:.2f} ms")
    for k in ("dask+numpy", "graphc.dask"):
        print(f"{k}: 1 -> 2 workers {res[1][0][k] / res[2][0][k]:.2f}x")


if __name__ == "__main__":
    main()
