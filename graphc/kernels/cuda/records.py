"""What the cuda plan tells about itself: `STATS` (process-wide counts of what ran where),
`Record` (one step's path and why, per plan) and `describe(graph)`, the text
`graphc graph --backend cuda` prints."""
import threading

from . import availability


class Stats:
    """What ran where, process-wide: `kernels` (group kernels and matmuls launched),
    `fallbacks` (ops run by their numpy rule on host copies), `host_ops` (run-time shape
    arithmetic: numpy rules on host shape vectors, host_shapes.py), `views`, `device_ops` (variable reads and
    updates, control flow on the device), `cpu_loops` (scalar-only cond/while run by the
    numba CPU loop kernel), `allocations` (new device arrays), `reuses` (buffers
    checked out of a plan's pool instead), `block_reuses` (new arrays on an idle
    block's memory instead of a cuMemAlloc, blocks.py) and `launches` (every kernel
    launch: a group kernel's passes, variable updates, checks, and each matrix product,
    cuBLAS or the tiled kernel). Host syncs are the copies to the host:
    `device.TRANSFERS.d2h`."""

    FIELDS = ("kernels", "fallbacks", "host_ops", "views", "device_ops", "cpu_loops", "allocations",
              "reuses", "block_reuses", "launches")

    def __init__(self):
        self._lock = threading.Lock()
        for f in self.FIELDS:
            setattr(self, f, 0)

    def add(self, field):
        counts = self.__dict__          # (getattr/setattr cost twice as much: every launch)
        with self._lock:
            counts[field] += 1

    def snapshot(self):
        return {f: getattr(self, f) for f in self.FIELDS}


STATS = Stats()


class Record:
    """Where one step runs, why, and how often it ran (shown by describe())."""

    def __init__(self, what, path, why=""):
        self.what, self.path, self.why, self.runs = what, path, why, 0

    def text(self):
        why = self.why() if callable(self.why) else self.why     # a kernel's: its last run
        why = f": {why}" if why else ""
        return f"{self.what}: {self.path}{why} [ran {self.runs}x]"


def cpu_loop_why(runner):
    if runner.fn is not None:
        state = "compiled"
    elif runner.error is not None:
        state = f"its numpy rule runs ({runner.error})"
    else:
        state = "interpreted until it has run long enough to be worth compiling"
    return ("its state is scalars: the numba CPU loop kernel runs it on host copies of its "
            f"inputs (one copy per input, no sync per iteration); {state}")


def kernel_text(kernel):
    d = getattr(kernel, "describe", None)
    return d() if callable(d) else type(kernel).__name__


def describe(graph):
    """Which path each op or group of `graph` takes on the device, and why."""
    from .backend import compile_plan
    why = availability.missing()
    if why is not None:
        raise ValueError(why)
    plan = compile_plan(graph)
    where = "numba-cuda simulator" if plan.dev.SIMULATED else "GPU"
    lines = [f"cuda backend plan for graph {graph.name} ({where})"]
    if plan.optimize_error:
        lines.append(f"  optimizer skipped: {plan.optimize_error}")
    lines.extend(_plan_lines(plan, "  "))
    lines.append(f"  constants: {len(plan.consts)} (uploaded once per plan, on first use)")
    t = plan.dev.TRANSFERS
    lines.append(f"  host<->device copies this process: {t.h2d} to device, {t.d2h} to host")
    lines.append(_pool_line(plan))
    return "\n".join(lines)


def _pool_line(plan):
    from . import memory
    n, size = plan.pool.idle()
    s = STATS.snapshot()
    return (f"  buffer pool: {n} idle buffer(s), {size} bytes kept for the next call's "
            f"intermediates (all pools: {memory.idle_bytes()} of at most {memory.limit()} "
            f"bytes, GRAPHC_CUDA_POOL_BYTES); this process: {s['allocations']} device "
            f"allocations ({s['block_reuses']} on reused memory blocks), {s['reuses']} reuses")


def _plan_lines(plan, pad):
    lines = []
    for fn, needs, ins, outs, op, rec, dead in plan.steps:
        lines.append(pad + rec.text())
        for sub_name, sub in getattr(fn, "nested_plans", lambda: [])():
            lines.append(f"{pad}  {sub_name}:")
            lines.extend(_plan_lines(sub, pad + "    "))
    return lines
