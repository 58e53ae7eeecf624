"""Host time of a cached backend="cuda" call of a small function (issue 15: "a cached call
of a small cuda function <= 30 us"), for this tree and, side by side, another revision.

Cases: `x + y` (one fused kernel) on device-resident inputs (300 float32, and 0-d), and on
host numpy inputs (each call copies them to the device); the bench's relu MLP train step
(4-6-3, batch 5, SGD; the general path: ~13 kernels, 5 matrix products, variable updates)
on device inputs, traced with static shapes and with input_signature [None, 4].

- On a real GPU: real calls, one device synchronization per timed batch.
- On numba-cuda's simulator (NUMBA_ENABLE_CUDASIM=1): kernel launches are STUBBED OUT.
  Each launcher's first launch runs the simulated kernel (the first call's result is
  checked against backend="numpy"); later launches take graphc's own launch path
  (argument packing included) with cuLaunchKernel replaced by nothing. Kernels numba-cuda
  launches itself (the tiled matmul) return at once once every case has run (numba's
  configuration and argument checks kept). The MLP step launches some kernels more than
  once per call, so its check (two steps against backend="numpy") runs before any stub,
  on functions of its own. The figures are
  graphc's host Python per call plus the simulator's array objects (their dtype, shape,
  size, ndim and strides made plain attributes, as numba-cuda's DeviceNDArray has them)
  -- not a GPU's.

`--against REV` times REV (a git revision, exported to a temporary folder) and this
working tree in two worker processes, in interleaved rounds (medians): on a noisy shared
machine both see the same mix of quiet and busy moments.
Run: `python benchmarks/cuda_host_bench.py [--against REV] [--min-time S] [--json FILE]`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = ("x + y, device inputs", "x + y, 0-d device inputs", "x + y, host numpy inputs",
         "MLP step, device inputs", "MLP step [None, 4], device inputs")


def simulated():
    from numba import cuda
    return bool(cuda.config.ENABLE_CUDASIM)


class _Pointer:
    def __init__(self, value):
        self.value = value


def stub_launches():
    """Simulator only: after a launcher's first (simulated) launch, its later launches go
    through graphc's packing and a no-op instead of cuLaunchKernel."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray, FakeShape
    from graphc.kernels.cuda import launch
    # the simulator's arrays have no device pointer: their id() stands in for one
    FakeCUDAArray.device_ctypes_pointer = property(lambda a: _Pointer(id(a)))
    init = FakeCUDAArray.__init__

    def plain_fields(self, ary, stream=0):
        """numba-cuda's DeviceNDArray keeps these as plain attributes; the simulator's
        array reads each through __getattr__ (~1 us here): not graphc's time."""
        init(self, ary, stream)
        self.__dict__.update(dtype=ary.dtype, size=ary.size, ndim=ary.ndim,
                             strides=ary.strides, shape=FakeShape(ary.shape))

    FakeCUDAArray.__init__ = plain_fields
    del FakeCUDAArray.shape         # (a property: the attribute above would not be seen)

    def build(self, arrays, ints, flat):
        self.dtypes = [a.dtype for a in arrays]
        self.n = len(launch.pack(arrays, ints, flat))
        self.fast, self.why = (lambda params: None), "stubbed (simulator)"

    launch.Launcher._build = build
    launch.mode = lambda: "direct"


def stub_numba_launches():
    """Simulator only: kernels launched by numba-cuda itself (not a Launcher) return at
    once from now on."""
    from numba.cuda.simulator import kernel
    kernel.FakeCUDAKernel.__call__ = lambda self, *args: None


def add(x, y):
    return x + y


def mlp_calls(out, check=False):
    """The MLP step cases; `check`: two steps' losses against backend="numpy" (unstubbed)."""
    import numpy as np
    import graphc as gc
    from graphc.bench import gpu
    from graphc.bench.workloads import make_mlp_step
    rng = np.random.default_rng(0)
    init = [rng.standard_normal((4, 6)).astype(np.float32) * 0.5, np.zeros(6, np.float32),
            rng.standard_normal((6, 3)).astype(np.float32) * 0.5, np.zeros(3, np.float32)]
    x = rng.standard_normal((5, 4)).astype(np.float32)
    y = rng.integers(0, 3, 5).astype(np.int32)
    sig = [gc.TensorSpec([None, 4], gc.float32), gc.TensorSpec([None], gc.int32)]
    for label, kw in zip(CASES[3:], ({}, {"input_signature": sig})):
        fns = [gc.function(make_mlp_step([gc.Variable(v.copy()) for v in init],
                                         gc.optimizers.SGD(0.1)), backend=b, **kw)
               for b in ("cuda", "numpy")]
        args = gpu.on_device((gc.constant(x), gc.constant(y)))
        for _ in range(2 if check else 0):
            got, want = float(fns[0](*args)), float(fns[1](x, y))
            if not np.isclose(got, want, rtol=1e-5):
                raise SystemExit(f"{label}: cuda loss {got} != numpy backend's {want}")
        out[label] = (lambda f=fns[0], a=args: f(*a))


def forget_shared_launchers():
    """The module-wide launchers the unstubbed check made (numba's path on the simulator):
    made again, stubbed, by the timed functions."""
    from graphc.kernels.cuda import checks, shaped, updates
    for holder in (getattr(checks, "_S", None), shaped, updates):
        for name in ("launchers", "_LAUNCHERS"):
            table = getattr(holder, name, None)
            if isinstance(table, dict):
                table.clear()


def calls():
    """{case: call()} of a compiled `add`, each checked against backend="numpy" first."""
    import numpy as np
    import graphc as gc
    from graphc.bench import gpu
    x = np.arange(1, 301, dtype=np.float32)
    y = np.full(300, 0.5, np.float32)
    inputs = {CASES[0]: gpu.on_device((gc.constant(x), gc.constant(y))),
              CASES[1]: gpu.on_device((gc.constant(np.float32(1.25)),
                                       gc.constant(np.float32(2.5)))),
              CASES[2]: (x, y)}
    out = {}
    for label, args in inputs.items():
        f = gc.function(add, backend="cuda")
        want = gc.function(add, backend="numpy")(*args).numpy()
        if not np.array_equal(f(*args).numpy(), want):     # (stubbed: only this one runs)
            raise SystemExit(f"{label}: cuda disagrees with the numpy backend")
        for _ in range(3):
            f(*args)                # the hot entry and the settled plan
        out[label] = (lambda f=f, a=args: f(*a))
    mlp_calls(out, check=not simulated())
    for fn in out.values():
        fn()                        # every launcher has launched once
    if simulated():
        stub_numba_launches()
    return out


def worker():
    """Reads `case batch` lines, answers each with the seconds per call of one batch."""
    if simulated():
        mlp_calls({}, check=True)
        forget_shared_launchers()
        stub_launches()
    from graphc.bench import gpu
    fns = calls()
    print("ready", flush=True)
    for line in sys.stdin:
        label, n = line.rsplit(" ", 1)
        fn = fns[label]
        fn()
        t0 = time.perf_counter()
        for _ in range(int(n)):
            fn()
        gpu.synchronize()
        print((time.perf_counter() - t0) / int(n), flush=True)


class Worker:
    def __init__(self, name, pythonpath):
        env = dict(os.environ, PYTHONPATH=pythonpath)
        self.name = name
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                  text=True, cwd=HERE)
        line = self.p.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"{name}: worker failed to start ({line!r})")

    def sample(self, label, n):
        self.p.stdin.write(f"{label} {n}\n")
        self.p.stdin.flush()
        return float(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def export(rev):
    """The tree of `rev`, written to a temporary folder (its graphc imported from there)."""
    out = tempfile.mkdtemp(prefix="cuda_host_bench_")
    tar = subprocess.run(["git", "-C", ROOT, "archive", rev, "graphc"], check=True,
                         capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", out], input=tar, check=True)
    return out


def measure(workers, min_time, batch_s=0.05):
    """{case: {worker name: median seconds per call}} over interleaved rounds."""
    rows = {}
    for label in CASES:
        n = {w.name: max(1, int(batch_s / max(w.sample(label, 20), 1e-9))) for w in workers}
        samples = {w.name: [] for w in workers}
        start = time.perf_counter()
        while time.perf_counter() - start < min_time * len(workers) or \
                min(len(s) for s in samples.values()) < 5:
            for w in workers:
                samples[w.name].append(w.sample(label, n[w.name]))
        rows[label] = {k: statistics.median(v) for k, v in samples.items()}
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--against", metavar="REV", help="also time this git revision")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds per case and tree")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        return worker()
    sim = simulated()
    what = ("SIMULATOR, kernel launches stubbed out: graphc's host Python per call"
            if sim else "real GPU: whole calls, one synchronization per batch")
    print(f"cuda_host_bench ({what})", flush=True)
    workers = [Worker("this tree", ROOT)]
    if a.against:
        workers.insert(0, Worker(a.against, export(a.against)))
    try:
        rows = measure(workers, a.min_time)
    finally:
        for w in workers:
            w.close()
    for label, r in rows.items():
        print(f"{label:28s} " + "   ".join(f"{k}: {v * 1e6:7.2f} us" for k, v in r.items()),
              flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"simulated_launches_stubbed": sim, "rows": rows,
                       "launch": os.environ.get("GRAPHC_CUDA_LAUNCH", "direct")}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
