"""graphc.dask.map_blocks vs dask.array with numpy ops, on a LocalCluster of 1 and 2 workers.

Run:  PYTHONPATH=. python3 benchmarks/dask_bench.py [--total-mb 2048] [--chunk-mb 64]
      [--breakdown] [--ceiling]

The issue's workload is the elementwise chain of cpu_bench.py over a float32 array of 2 GB in
64 MB chunks. The input is generated on the workers and persisted first, chunk i on worker
i mod workers (left to dask, 32 chunks landed 17 + 15 in four of five runs: the busier worker
then caps 1 -> 2 workers at 32/17 = 1.88x for both variants), so the timing is the chain plus
a sum of each result (nothing big travels to the client). Each worker is one
process with one thread, and graphc kernels use one thread there (GRAPHC_THREADS=1), so the
worker count is the core count. Both variants alternate in every round; medians are printed,
with the per-block overhead measured on 1-element chunks (a chain task and a sum task per
block).

--breakdown adds, per variant and worker count, what dask's task stream saw in the median
round: blocks per worker (dask fuses each block's chain with its sum into one task), their
median compute time, each worker's busy time and its idle time inside the round. --ceiling
first times the same per-block work (chain + sum of one chunk) in 1 and 2 plain processes,
without dask: the scaling the machine itself allows each variant.
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


def _timed(client, arr, stream=None):
    t = time.perf_counter()
    if stream is None:
        client.compute(arr).result()
        return time.perf_counter() - t
    with distributed.get_task_stream(client) as ts:
        client.compute(arr).result()
    wall = time.perf_counter() - t
    stream.append((wall, list(ts.data)))
    return wall


def run(workers, total_mb, chunk_mb, rounds, breakdown=False):
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                       processes=True, dashboard_address=":0",
                                       memory_limit=0)
    client = distributed.Client(cluster)
    try:
        n = total_mb * 2**20 // 4
        chunk = chunk_mb * 2**20 // 4
        x = _placed_input(client, n, chunk)
        variants = {"dask+numpy": da.map_blocks(np_chain, x, dtype=np.float32).sum(),
                    "graphc.dask": gd.map_blocks(chain, x).sum()}
        for v in variants.values():          # warm-up: kernels compile, workers load graphs
            _timed(client, v)
        times = {k: [] for k in variants}
        streams = {k: [] for k in variants}
        for _ in range(rounds):
            for k, v in variants.items():
                times[k].append(_timed(client, v, streams[k] if breakdown else None))
        tiny = da.ones(400, dtype=np.float32, chunks=1)
        over = {"dask+numpy": da.map_blocks(np_chain, tiny, dtype=np.float32).sum(),
                "graphc.dask": gd.map_blocks(chain, tiny).sum()}
        per_task = {k: [] for k in over}
        for _ in range(3):
            for k, v in over.items():
                per_task[k].append(_timed(client, v) / 400)      # one chain + one sum task each
        return ({k: statistics.median(v) for k, v in times.items()},
                {k: statistics.median(v) for k, v in per_task.items()},
                {k: _median_round(v) for k, v in streams.items() if v})
    finally:
        client.close()
        cluster.close()


def _block(i, size):
    return np.random.default_rng(i).random(size, dtype=np.float32)


def _placed_input(client, n, chunk):
    """A float32 array of `n` random values in `chunk`-sized blocks, block i made and kept
    on worker i mod the worker count (keys of its own: no extra task per block)."""
    ws = sorted(client.scheduler_info()["workers"])
    blocks = -(-n // chunk)
    sizes = tuple(min(chunk, n - i * chunk) for i in range(blocks))
    name = f"bench-input-{n}-{chunk}"
    futures = {(name, i): client.submit(_block, i, size, key=(name, i),
                                        workers=[ws[i % len(ws)]])
               for i, size in enumerate(sizes)}
    x = da.Array(futures, name, chunks=(sizes,), dtype=np.float32)
    distributed.wait(x)
    return x


def _median_round(stream):
    """(wall, per-worker rows) of the round with the median wall time: each row is
    (worker, blocks, median block compute s, busy s, idle s inside the round's span)."""
    wall, tasks = sorted(stream, key=lambda r: r[0])[len(stream) // 2]
    by_worker = {}
    for t in tasks:
        name = t["key"][0] if isinstance(t["key"], tuple) else t["key"]
        block = not any(p in name for p in ("-partial-", "-aggregate-", "finalize"))
        for ss in t["startstops"]:
            if ss["action"] == "compute":
                by_worker.setdefault(t["worker"], []).append((ss["start"], ss["stop"], block))
    start = min(a for spans in by_worker.values() for a, _, _ in spans)
    stop = max(b for spans in by_worker.values() for _, b, _ in spans)
    rows = []
    for w, spans in sorted(by_worker.items()):
        blocks = [b - a for a, b, is_block in spans if is_block]
        busy = sum(b - a for a, b, _ in spans)
        rows.append((w, len(blocks), statistics.median(blocks) if blocks else 0.0, busy,
                     (stop - start) - busy))
    return wall, rows


def _print_breakdown(workers, rounds):
    for k, (wall, rows) in rounds.items():
        print(f"  {k}, median round {wall:.3f} s on {workers} worker(s): blocks "
              + " + ".join(str(r[1]) for r in rows) + ", block compute median "
              + " / ".join(f"{r[2] * 1e3:.1f}" for r in rows) + " ms, busy "
              + " / ".join(f"{r[3]:.3f}" for r in rows) + " s, idle in round "
              + " / ".join(f"{r[4]:.3f}" for r in rows) + " s")


def _block_work(kind, chunk, reps, ready, results):
    """One plain process: chain + sum of one chunk, `reps` times after `ready` (median s)."""
    from graphc.kernels import tiers
    tiers.set_mode("sync")
    x = np.random.default_rng(os.getpid()).random(chunk, dtype=np.float32)
    f = (lambda: np_chain(x).sum()) if kind == "dask+numpy" else \
        (lambda: chain(x).numpy().sum())
    for _ in range(2):
        f()
    ready.wait()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    results.put(statistics.median(ts))


def ceiling(chunk_mb, reps=8):
    """Per-block time in 1 and 2 concurrent plain processes, per variant (no dask)."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    chunk = chunk_mb * 2**20 // 4
    out = {}
    for k in ("dask+numpy", "graphc.dask"):
        for procs in (1, 2):
            ready, results = ctx.Barrier(procs + 1), ctx.Queue()
            ps = [ctx.Process(target=_block_work, args=(k, chunk, reps, ready, results))
                  for _ in range(procs)]
            for p in ps:
                p.start()
            ready.wait()
            out[k, procs] = max(results.get() for _ in ps)
            for p in ps:
                p.join()
        print(f"plain processes, chain + sum of one {chunk_mb} MB block, {k}: 1 process "
              f"{out[k, 1] * 1e3:.1f} ms, 2 processes {out[k, 2] * 1e3:.1f} ms (slower of "
              f"the two): 1 -> 2 processes {2 * out[k, 1] / out[k, 2]:.2f}x")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-mb", type=int, default=2048)
    p.add_argument("--chunk-mb", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--breakdown", action="store_true",
                   help="per-worker blocks, block times, busy and idle from the task stream")
    p.add_argument("--ceiling", action="store_true",
                   help="first time the per-block work in 1 and 2 plain processes")
    args = p.parse_args()
    if args.ceiling:
        ceiling(args.chunk_mb)
    print(f"chain over float32 {args.total_mb} MB in {args.chunk_mb} MB chunks, "
          f"{args.rounds} rounds, medians")
    res = {}
    for w in (1, 2):
        res[w] = run(w, args.total_mb, args.chunk_mb, args.rounds, args.breakdown)
        t, per, rounds = res[w]
        print(f"{w} worker(s): dask+numpy {t['dask+numpy']:.3f} s, graphc.dask "
              f"{t['graphc.dask']:.3f} s, speed-up {t['dask+numpy'] / t['graphc.dask']:.2f}x; "
              f"per-block overhead (1-element chunks) dask+numpy "
              f"{per['dask+numpy'] * 1e3:.2f} ms, graphc.dask {per['graphc.dask'] * 1e3:.2f} ms")
        _print_breakdown(w, rounds)
    for k in ("dask+numpy", "graphc.dask"):
        print(f"{k}: 1 -> 2 workers {res[1][0][k] / res[2][0][k]:.2f}x")


if __name__ == "__main__":
    main()
