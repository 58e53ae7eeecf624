"""Run workloads in every mode, check each against eager, and collect the timings."""
import contextlib
import sys
from dataclasses import asdict, dataclass, field

import numpy as np

import graphc as gc
from ..runtime import nest
from . import timing
from .blas_threads import BlasThreads
from .contention import Contention
from .environment import describe_machine
from .peers import PEERS, PeerUnsupported
from .workloads import WORKLOADS

GRAPHC_BACKENDS = ("numpy", "numba", "cuda")


class BenchError(Exception):
    """A mode failed or disagreed with eager execution: the benchmark stops."""


@dataclass
class ModeResult:
    mode: str              # "eager", a backend name, or a peer's name
    kind: str              # "eager", "graphc" or "peer"
    first_call_s: float
    median_s: float
    calls: int
    repeats: int
    speedup: float = 1.0   # eager median / this median
    gbps: float = None     # memory-bound workloads only


@dataclass
class WorkloadResult:
    name: str
    summary: str
    size: str
    sizes: dict
    bytes_moved: int = None
    results: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    skipped: str = None


@dataclass
class BenchReport:
    machine: dict
    quick: bool
    min_time_s: float
    backends: list
    triad_gbps: float
    triad_elements: int
    peers: dict            # peer name -> None when used, else why not
    workloads: list
    contention: dict = None   # --contended: the CPU hogs that ran (Contention.to_json)
    device_copy_gbps: float = None   # cuda: device-to-device copy on triad_elements float32

    def to_json(self):
        """A plain dict (the --json file's content)."""
        return asdict(self)


def backend_status():
    """{backend: None when usable here, else the reason it is not}."""
    from ..runtime.backends import get_backend
    status = {}
    for name in GRAPHC_BACKENDS:
        try:
            get_backend(name)
            status[name] = None
        except (ValueError, ImportError) as e:
            status[name] = str(e)
    if status["cuda"] is None:
        status["cuda"] = _gpu_missing()
    return status


def _gpu_missing():
    """None on a real GPU; cuda numbers never come from numba-cuda's simulator."""
    try:
        from ..kernels.cuda import availability
        if availability.simulator_on():
            return ("numba-cuda's simulator is on (NUMBA_ENABLE_CUDASIM=1): cuda numbers come "
                    "only from a real GPU")
        return availability.missing()
    except Exception as e:  # noqa: BLE001 - a broken CUDA install means: no GPU here
        return f"numba.cuda unusable: {e}"


def run(names, backends, quick=False, min_time=0.5, peers=True, seed=0, out=None,
        blas_threads=None, contended=False):
    """Run the named workloads in eager mode, on `backends` and the available peers.

    numpy's BLAS keeps its thread count unless `blas_threads` pins it (BlasThreadsError
    when it cannot be). With `contended`, CPU-hog processes take every core but one while each
    workload is timed. Writes one progress line per workload to `out`; returns a
    BenchReport. Raises BenchError when a mode fails or disagrees with eager.
    """
    out = out or sys.stdout
    contention = Contention() if contended else None
    with BlasThreads(blas_threads) as blas:
        report = _run(names, backends, quick, min_time, peers, seed, out, contention)
    report.machine["blas_threads"] = blas.note
    report.machine["blas_thread_count"] = blas.threads
    report.machine["cuda"] = (_gpu_name() if "cuda" in backends else
                              "left out: " + (backend_status()["cuda"] or "not asked for"))
    return report


def _gpu_name():
    from numba import cuda
    dev = cuda.get_current_device()
    name = getattr(dev, "name", "numba-cuda's simulator")
    name = name.decode() if isinstance(name, bytes) else str(name)
    return f"{name} (compute capability {'.'.join(map(str, dev.compute_capability))})"


def _run(names, backends, quick, min_time, peers, seed, out, contention):
    triad_n = WORKLOADS["elementwise"].sizes_for(quick)["n"]
    out.write(f"measuring numpy triad bandwidth ({triad_n:,} float32) ...")
    out.flush()
    triad = timing.numpy_triad_gbps(triad_n, min_time)
    out.write(f" {triad:.1f} GB/s\n")
    device_copy = None
    if "cuda" in backends:
        from . import gpu
        out.write(f"measuring cuda device-to-device copy bandwidth ({triad_n:,} float32) ...")
        out.flush()
        device_copy = gpu.copy_gbps(triad_n, min_time)
        out.write(f" {device_copy:.1f} GB/s\n")
    if contention is not None:
        out.write(f"--contended: {hogs_text(len(contention.cores))} while each workload "
                  f"is timed ({contention.note})\n")
    peer_status = {p.name: (p.unavailable() if peers else "--no-peers") for p in PEERS}
    peer_list = [p for p in PEERS if peer_status[p.name] is None]
    results = []
    for k, name in enumerate(names, 1):
        workload = WORKLOADS[name]
        sizes = workload.sizes_for(quick)
        out.write(f"[{k}/{len(names)}] {name} ({workload.size_text(sizes)}):")
        out.flush()
        try:
            result = run_workload(workload, sizes, backends, peer_list, min_time, seed, out,
                                  contention)
        finally:
            out.write("\n")
            out.flush()
        results.append(result)
    return BenchReport(describe_machine(), quick, min_time, ["eager"] + list(backends),
                       triad, triad_n, peer_status, results,
                       None if contention is None else contention.to_json(), device_copy)


def run_workload(workload, sizes, backends, peer_list, min_time, seed=0, out=None,
                 contention=None):
    """Time one workload in every mode (beside `contention`'s CPU hogs, if given, once
    every first call is checked); returns its WorkloadResult."""
    out = out or sys.stdout
    result = WorkloadResult(workload.name, workload.summary, workload.size_text(sizes), sizes)
    if workload.bytes_moved is not None:
        result.bytes_moved = workload.bytes_moved(sizes)
    reason = workload.requires()
    if reason:
        result.skipped = reason
        out.write(f" skipped: {reason}")
        return result
    reference, labels = None, None
    modes = [("eager", "eager", None)] + [(b, "graphc", b) for b in backends]
    series = []
    for mode, kind, backend in modes:
        case = workload.build(sizes, seed)
        call, finish = _graphc_call(case, backend)
        check = _checker(workload, mode, case, reference, labels)
        try:
            x = timing.Series(_failing_as(workload, mode, call), check, finish)  # checked first
        except BenchError:
            raise
        except Exception as e:  # noqa: BLE001 - reported with the workload and mode
            raise _failed(workload, mode, e) from e
        if reference is None:
            reference = x.output
            result.notes.extend(case.notes)
            labels = ["result"] * (len(reference) - len(case.init)) + [
                f"variable {k!r}" for k in case.init]
        series.append((mode, kind, x))
    for peer in peer_list:
        x = _prepare_peer(result, workload, peer, sizes, seed, (reference, labels))
        if x is not None:
            series.append((peer.name, "peer", x))
    timed = [x for _, _, x in series]
    hogs = contextlib.nullcontext()
    if contention is not None:
        hogs = contention.hogs(_hog_deadline_s(min_time, len(timed)))
    with hogs:
        # every mode is timed in the same rounds, so a busy moment hits them all
        timing.sample_interleaved(timed, min_time)
    if getattr(hogs, "ended_early", None):
        result.notes.append(f"--contended: {len(hogs.ended_early)} of {len(hogs.pids)} CPU "
                            "hogs ended before the timing did (past their deadline): these "
                            "figures are partly uncontended")
    for mode, kind, x in series:
        if getattr(x.call, "error", None) is not None:
            result.notes.append(f"{mode} left out: {x.call.error}"[:300])
            continue
        _add_result(result, workload, mode, kind, x.timing(), out)
    return result


def hogs_text(count):
    """'1 CPU-hog process' / '3 CPU-hog processes'."""
    return f"{count} CPU-hog process{'' if count == 1 else 'es'}"


def _hog_deadline_s(min_time, modes):
    """When the hogs stop by themselves: twice the longest the timed rounds may take
    (timing.sample_interleaved's cap), plus a margin for one slow round."""
    return 2 * timing.max_sampling_s(min_time, modes) + 30.0


def _failed(workload, mode, e):
    return BenchError(f"workload {workload.name!r} failed in mode {mode!r}: "
                      f"{type(e).__name__}: {e}")


def _failing_as(workload, mode, call):
    """`call` with its errors raised as BenchError naming the workload and mode."""
    def run():
        try:
            return call()
        except BenchError:
            raise
        except Exception as e:  # noqa: BLE001 - reported with the workload and mode
            raise _failed(workload, mode, e) from e
    return run


def _graphc_call(case, backend):
    """(the call to time, what closes a timed batch or None)."""
    if backend is None:
        return (lambda: case.fn(*case.args)), None
    compiled = gc.function(case.fn, backend=backend)
    if backend == "cuda":
        from . import gpu
        args = gpu.on_device(case.args)
        return (lambda: compiled(*args)), gpu.synchronize
    return (lambda: compiled(*case.args)), None


def _checker(workload, mode, case, reference, labels):
    """observe(first output): copy it and the updated variables; compare with eager's."""
    def observe(output):
        got = [np.array(np.asarray(x)) for x in nest.flatten(output)]
        got += [np.array(v.numpy()) for v in case.state]
        if reference is not None:
            problem = disagreement(workload, reference, labels, got, strict_dtype=True)
            if problem:
                raise BenchError(f"workload {workload.name!r}: mode {mode!r} disagrees with "
                                 f"eager: {problem}. This is a graphc bug; please report it "
                                 "with this message.")
        return got
    return observe


def _prepare_peer(result, workload, peer, sizes, seed, reference):
    """A timing Series for `peer` after its first call agreed with eager, or None (with a
    note). An error in a later call leaves the peer out too: a peer never stops the run."""
    case = workload.build(sizes, seed)
    try:
        call = peer.build(workload.name, case)
        x = timing.Series(call, lambda out: [np.array(np.asarray(v)) for v in out])
        x.call = _guarded(call)
    except PeerUnsupported:
        return None
    except Exception as e:  # noqa: BLE001 - an optional peer never stops the run
        result.notes.append(f"{peer.name} left out: {type(e).__name__}: {e}"[:300])
        return None
    problem = disagreement(workload, *reference, x.output, strict_dtype=False)
    if problem:
        result.notes.append(f"{peer.name} left out: disagrees with eager graphc: {problem}")
        return None
    return x


def _guarded(call):
    """`call` that records its first exception (in `.error`) instead of raising it."""
    def run():
        if run.error is None:
            try:
                return call()
            except Exception as e:  # noqa: BLE001 - recorded, reported as a note
                run.error = e
        return None
    run.error = None
    return run


def _add_result(result, workload, mode, kind, t, out):
    r = ModeResult(mode, kind, t.first_s, t.median_s, t.calls, t.repeats)
    if result.results:
        r.speedup = result.results[0].median_s / t.median_s
    if result.bytes_moved is not None:
        r.gbps = result.bytes_moved / t.median_s / 1e9
    result.results.append(r)
    out.write(f" {mode} {format_seconds(t.median_s)};")
    out.flush()


def disagreement(workload, expected, labels, got, strict_dtype):
    """None when `got` matches `expected` within the workload's tolerance, else what differs."""
    if len(got) != len(expected):
        return f"{len(got)} outputs instead of {len(expected)}"
    for label, e, g in zip(labels, expected, got):
        if g.shape != e.shape:
            return f"{label} has shape {g.shape}, eager gives {e.shape}"
        if strict_dtype and g.dtype != e.dtype:
            return f"{label} has dtype {g.dtype}, eager gives {e.dtype}"
        e64, g64 = e.astype(np.float64), g.astype(np.float64)
        bad = ~np.isclose(g64, e64, rtol=workload.rtol, atol=workload.atol, equal_nan=True)
        if bad.any():
            diff = np.where(bad, np.abs(g64 - e64), -1.0)
            where = np.unravel_index(int(np.argmax(diff)), e.shape) if e.ndim else ()
            at = f" at index {tuple(int(i) for i in where)}" if e.ndim else ""
            return (f"{label}{at}: eager {float(e64[where]):.8g}, got {float(g64[where]):.8g} "
                    f"({int(bad.sum())} of {e.size} elements beyond rtol={workload.rtol}, "
                    f"atol={workload.atol})")
    return None


def format_speedup(x):
    """12,345x / 123x / 12.3x / 1.23x: three significant figures, no fake precision."""
    if x >= 100:
        return f"{x:,.0f}x"
    return f"{x:.1f}x" if x >= 10 else f"{x:.2f}x"


def format_seconds(s):
    """Seconds in the unit that reads best: 12.3 us, 4.56 ms, 1.23 s."""
    if s < 1e-3:
        return f"{s * 1e6:.3g} us" if s < 1e-4 else f"{s * 1e6:.0f} us"
    if s < 1.0:
        return f"{s * 1e3:.3g} ms" if s < 0.1 else f"{s * 1e3:.0f} ms"
    return f"{s:.2f} s"
