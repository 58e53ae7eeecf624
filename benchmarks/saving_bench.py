"""Checkpoint save/restore throughput vs numpy.save/numpy.load of the same arrays (not a test).

256 MB of float32 variables (default: 8 variables of 32 MB) are saved with
gc.train.Checkpoint.write and restored with .restore, and the same arrays written with
numpy.save (one .npy each) and read back with numpy.load, in interleaved rounds in one
process; medians and the ratio graphc/numpy are printed (target: >= 0.5 for both).
graphc's save includes the fsync that makes it durable; numpy.save does not fsync, so the
numpy row with fsync added is shown too. CPU is the process's CPU time (all threads): on a
busy machine it tells the work done better than the wall time does.

Run: python benchmarks/saving_bench.py [--mb 256] [--variables 8] [--rounds 5] [--dir DIR]
"""
import argparse
import os
import shutil
import statistics
import tempfile
import time

import numpy as np

import graphc as gc


def _numpy_save(directory, arrays, fsync):
    for i, a in enumerate(arrays):
        path = os.path.join(directory, f"a{i}.npy")
        with open(path, "wb") as f:
            np.save(f, a, allow_pickle=False)
            if fsync:
                f.flush()
                os.fsync(f.fileno())


def _numpy_load(directory, n):
    return [np.load(os.path.join(directory, f"a{i}.npy"), allow_pickle=False) for i in range(n)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--variables", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    n = args.mb * (1 << 20) // 4 // args.variables
    rng = np.random.default_rng(0)
    model = gc.Module()
    model.vs = [gc.Variable(rng.random(n, dtype=np.float32)) for _ in range(args.variables)]
    arrays = [v.numpy() for v in model.vs]
    restored = gc.Module()
    restored.vs = [gc.Variable(np.zeros(n, np.float32)) for _ in range(args.variables)]
    ckpt, ckpt2 = gc.train.Checkpoint(model=model), gc.train.Checkpoint(model=restored)
    root = tempfile.mkdtemp(dir=args.dir)
    names = ("graphc save", "numpy save", "numpy save+fsync", "graphc restore", "numpy load")
    times, cpu = {k: [] for k in names}, {k: [] for k in names}
    try:
        for _ in range(args.rounds):
            for name, fn in (
                    ("graphc save", lambda: ckpt.write(os.path.join(root, "ckpt"))),
                    ("numpy save", lambda: _numpy_save(root, arrays, False)),
                    ("numpy save+fsync", lambda: _numpy_save(root, arrays, True)),
                    ("graphc restore", lambda: ckpt2.restore(os.path.join(root, "ckpt"))),
                    ("numpy load", lambda: _numpy_load(root, args.variables))):
                t, c = time.perf_counter(), time.process_time()
                fn()
                times[name].append(time.perf_counter() - t)
                cpu[name].append(time.process_time() - c)     # all threads' CPU time
        assert all((a == v.numpy()).all() for a, v in zip(arrays, restored.vs))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    mb = args.mb
    print(f"{mb} MB of float32 in {args.variables} variables, {args.rounds} interleaved rounds "
          f"(median), {os.cpu_count()} CPUs")
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in med.items():
        print(f"  {k:18s} {v * 1e3:8.1f} ms  {mb / v / 1024:6.2f} GB/s   "
              f"CPU {statistics.median(cpu[k]) * 1e3:7.1f} ms")
    print(f"save:    graphc runs at {med['numpy save'] / med['graphc save']:.2f}x numpy.save's "
          f"speed ({med['numpy save+fsync'] / med['graphc save']:.2f}x with numpy fsyncing too)")
    print(f"restore: graphc runs at {med['numpy load'] / med['graphc restore']:.2f}x "
          "numpy.load's speed")


if __name__ == "__main__":
    main()
