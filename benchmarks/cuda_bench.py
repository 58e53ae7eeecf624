"""backend="cuda" on a real GPU: the figures issue 15 asks for, in one run.

- memory-bound workloads (elementwise chain, softmax, layernorm) at graphc bench's sizes
  and at sizes that fill the device, as GB/s next to a device-to-device copy of the same
  bytes measured in the same run;
- the MLP train step (graphc bench's 784-256-10, batch 128, and a larger 4096-batch one) on
  cuda against the numba CPU backend of the same machine;
- a cached call of a small function (`x + y` on two scalars) and its floor: one empty
  numba-cuda launch, and one launch plus a synchronization.

Every cuda result is checked against backend="numpy" first. Inputs live on the device
before timing; each timed batch ends with a device synchronization. Run:
`python benchmarks/cuda_bench.py [--min-time S] [--json FILE] [--profile]`.
"""
import argparse
import cProfile
import io
import json
import pstats
import sys

import numpy as np
from numba import cuda  # a module global: the simulator swaps it in kernels

import graphc as gc
from graphc.bench import gpu, timing, workloads


SIZES = [("elementwise", {"n": 10_000_000}), ("elementwise", {"n": 50_000_000}),
         ("softmax", {"rows": 4096, "cols": 1024}), ("softmax", {"rows": 32768, "cols": 1024}),
         ("layernorm", {"rows": 8192, "cols": 512}), ("layernorm", {"rows": 65536, "cols": 512})]
MLP_SIZES = [{"in": 784, "hidden": 256, "out": 10, "batch": 128},
             {"in": 784, "hidden": 1024, "out": 10, "batch": 4096}]
SMALL = [("elementwise", {"n": 300}), ("softmax", {"rows": 4, "cols": 40}),
         ("layernorm", {"rows": 4, "cols": 24})]
SMALL_MLP = [{"in": 12, "hidden": 8, "out": 3, "batch": 4}]


def _case(name, sizes):
    return workloads.WORKLOADS[name].build(sizes, 0)


def _check(got, want, rtol, atol, what):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        bad = np.abs(got - want).max()
        raise SystemExit(f"{what}: cuda disagrees with the numpy backend (max diff {bad})")


def memory_bound(name, sizes, min_time):
    w = workloads.WORKLOADS[name]
    case = _case(name, sizes)
    want = gc.function(case.fn, backend="numpy")(*case.args).numpy()
    f = gc.function(case.fn, backend="cuda")
    args = gpu.on_device(case.args)
    _check(f(*args).numpy(), want, w.rtol, w.atol, f"{name} {sizes}")
    nbytes = w.bytes_moved(sizes)
    n = nbytes // 8          # the copy of the same bytes: n float32 read, n written
    from numba import cuda
    src = cuda.to_device(np.random.default_rng(1).random(n, dtype=np.float32))
    dst = cuda.device_array_like(src)
    kernel = _copy_kernel()
    from graphc.kernels.cuda import codegen
    launch = kernel[codegen.blocks_for(n), codegen.THREADS]      # graphc's launch shape
    t_fn, t_copy, t_kernel = timing.measure_interleaved(
        [(lambda: f(*args), lambda o: None), (lambda: dst.copy_to_device(src), lambda o: None),
         (lambda: launch(src, dst), lambda o: None)], min_time, finish=gpu.synchronize)
    gbps, copy = nbytes / t_fn.median_s / 1e9, nbytes / t_copy.median_s / 1e9
    return {"workload": name, "sizes": sizes, "bytes": nbytes, "median_s": t_fn.median_s,
            "first_s": t_fn.first_s, "gbps": gbps, "copy_gbps": copy,
            "copy_median_s": t_copy.median_s, "fraction": gbps / copy,
            "copy_kernel_gbps": nbytes / t_kernel.median_s / 1e9}


def _copy_kernel():
    """A plain grid-stride copy kernel, launched from Python as graphc's kernels are: the
    bandwidth a kernel launch of these bytes reaches at best."""
    @cuda.jit
    def copy(src, dst):
        for i in range(cuda.grid(1), src.size, cuda.gridsize(1)):
            dst[i] = src[i]
    return copy


def mlp(sizes, min_time):
    calls, firsts, out = {}, {}, {}
    for backend in ("numpy", "numba", "cuda"):
        case = _case("mlp_train_step", sizes)
        f = gc.function(case.fn, backend=backend)
        args = gpu.on_device(case.args) if backend == "cuda" else case.args
        out[backend] = float(f(*args).numpy())
        calls[backend] = (lambda f=f, a=args: f(*a))
    _check(out["cuda"], out["numpy"], 1e-4, 1e-5, f"mlp {sizes}")
    names = list(calls)
    res = timing.measure_interleaved([(calls[k], lambda o: None) for k in names], min_time,
                                     finish=gpu.synchronize)
    med = {k: r.median_s for k, r in zip(names, res)}
    firsts = {k: r.first_s for k, r in zip(names, res)}
    return {"sizes": sizes, "median_s": med, "first_s": firsts,
            "cuda_vs_numba": med["numba"] / med["cuda"]}


def dispatch(min_time):
    from numba import cuda

    @cuda.jit
    def empty(a):
        pass

    case = _case("dispatch", {})
    f = gc.function(case.fn, backend="cuda")
    args = gpu.on_device(case.args)
    assert float(f(*args).numpy()) == 3.75
    a = cuda.device_array(1, np.float32)
    empty[1, 32](a)
    cuda.synchronize()

    def launch_sync():
        empty[1, 32](a)
        cuda.synchronize()

    def call_sync():
        f(*args)
        cuda.synchronize()

    res = timing.measure_interleaved(
        [(lambda: f(*args), lambda o: None), (call_sync, lambda o: None),
         (lambda: empty[1, 32](a), lambda o: None), (launch_sync, lambda o: None),
         (lambda: cuda.device_array(1, np.float32), lambda o: None)],
        min_time, finish=gpu.synchronize)
    keys = ["cached_call", "cached_call_sync_each", "empty_launch", "empty_launch_sync_each",
            "device_array_1"]
    return {k: r.median_s for k, r in zip(keys, res)}


PROFILE_CALLS = [300]


def profile(fn, sort=("tottime",), lines=18):
    n = PROFILE_CALLS[0]
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        fn()
    gpu.synchronize()
    pr.disable()
    s = io.StringIO()
    for key in sort:
        pstats.Stats(pr, stream=s).sort_stats(key).print_stats(lines)
    return s.getvalue()


def profiles(small):
    """Where a call's host time goes (cProfile): a cached x + y, the elementwise chain,
    and the MLP step with the path each of its ops took."""
    case = _case("dispatch", {})
    f = gc.function(case.fn, backend="cuda")
    args = gpu.on_device(case.args)
    f(*args)
    print(f"--- profile: {PROFILE_CALLS[0]} cached calls of x + y (cuda)\n"
          + profile(lambda: f(*args), sort=("tottime", "cumulative")), flush=True)
    case = _case("elementwise", (SMALL if small else SIZES)[0][1])
    f = gc.function(case.fn, backend="cuda")
    args = gpu.on_device(case.args)
    f(*args)
    print(f"--- profile: {PROFILE_CALLS[0]} calls of the elementwise chain (cuda)\n"
          + profile(lambda: f(*args), sort=("tottime", "cumulative")), flush=True)
    case = _case("mlp_train_step", (SMALL_MLP if small else MLP_SIZES)[0])
    f = gc.function(case.fn, backend="cuda")
    args = gpu.on_device(case.args)
    f(*args)
    from graphc.kernels.cuda.backend import describe
    steps = [ln for ln in describe(f.get_concrete_function(*args).graph).splitlines()
             if ln.startswith("  ") and ": " in ln and not ln.startswith("    ")]
    print("--- where the MLP step's ops run\n" + "\n".join(s[:160] for s in steps))
    print(f"--- profile: {PROFILE_CALLS[0]} MLP train steps (cuda)\n"
          + profile(lambda: f(*args), sort=("tottime", "cumulative"), lines=30), flush=True)


def _section(report, name, fn, *args):
    """Run one part; a failure is printed and recorded, and the other parts still run."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - one broken part must not hide the others
        import traceback
        traceback.print_exc()
        report.setdefault("errors", []).append(f"{name}: {type(e).__name__}: {e}")
        print(f"{name} FAILED: {type(e).__name__}: {e}", flush=True)
        return None


def _memory_bound_rows(report, cases, min_time):
    rows = report.setdefault("memory_bound", [])
    for name, sizes in cases:
        r = _section(report, f"{name} {sizes}", memory_bound, name, sizes, min_time)
        if r is None:
            continue
        rows.append(r)
        print(f"{name:12s} {str(sizes):32s} {r['median_s'] * 1e6:9.1f} us  "
              f"{r['gbps']:7.1f} GB/s  copy {r['copy_gbps']:7.1f} GB/s  "
              f"{100 * r['fraction']:5.1f}%  copy kernel {r['copy_kernel_gbps']:7.1f} GB/s "
              f"(first call {r['first_s']:.2f} s)", flush=True)


def _mlp_rows(report, cases, min_time):
    rows = report.setdefault("mlp", [])
    for sizes in cases:
        r = _section(report, f"mlp {sizes}", mlp, sizes, min_time)
        if r is None:
            continue
        rows.append(r)
        m = r["median_s"]
        print(f"mlp {sizes}: numpy {m['numpy'] * 1e3:.3f} ms, numba {m['numba'] * 1e3:.3f} ms, "
              f"cuda {m['cuda'] * 1e3:.3f} ms: cuda {r['cuda_vs_numba']:.1f}x numba", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--small", action="store_true", help="tiny sizes (a smoke test: runs on "
                   "numba-cuda's simulator; its figures mean nothing)")
    p.add_argument("--profile", action="store_true", help="first print where a call's host "
                   "time goes (cProfile): cached x + y, the elementwise chain, the MLP step")
    a = p.parse_args(argv)
    if a.small:
        PROFILE_CALLS[0] = 3
    from graphc.bench.environment import describe_machine
    from graphc.bench.runner import _gpu_name
    from graphc.kernels.cuda.launch import mode
    report = {"machine": describe_machine(), "gpu": _gpu_name(), "launch": mode()}
    print("gpu:", report["gpu"], "| versions:", {k: report["machine"].get(k) for k in (
        "python", "numpy", "numba", "numba-cuda", "cupy")}, "| launches:", report["launch"],
        flush=True)
    if a.profile:
        _section(report, "profiles", profiles, a.small)
    _memory_bound_rows(report, SMALL if a.small else SIZES, a.min_time)
    _mlp_rows(report, SMALL_MLP if a.small else MLP_SIZES, a.min_time)
    d = _section(report, "dispatch", dispatch, a.min_time)
    if d is not None:
        report["dispatch"] = d
        print("dispatch: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in d.items()),
              flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(report, fh, indent=1, default=str)
    return 1 if report.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
