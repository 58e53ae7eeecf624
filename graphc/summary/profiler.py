"""Per-op wall times of compiled calls, and how they are written out.

While `trace_on(profiler=True)` is active, calls of gc.functions run through `timed_run`:
the same steps the backend runs (the numba plan's fused kernels, lowered loops and numpy
rules; the interpreter's numpy rules), each timed with perf_counter_ns. Nothing is added
to the normal call path: trace.py swaps `Function.__call__` at class level only while
tracing, so the cost when off is zero.
"""
import json
import os
import threading
import time

from ..runtime.registry import REGISTRY
from ..runtime.run_errors import located

# backends whose steps timed_run knows how to run (others, e.g. a GPU backend, run untimed)
PROFILED_BACKENDS = ("numpy", "numba")


class Recorder:
    """Collected events: (name, category, start_ns, dur_ns, thread id, args)."""

    def __init__(self):
        self.events = []
        self.lock = threading.Lock()
        self.origin = time.perf_counter_ns()

    def add(self, *event):
        with self.lock:
            self.events.append(event)


def _steps(graph, backend):
    """[(fn, ins, outs, op, label, multi, n_inputs_pad)] and the initial environment pad."""
    if backend == "numba":
        from ..kernels.cpu.backend import compile_plan
        plan = compile_plan(graph)
        steps = []
        lowered = {id(op): r for op, r, _ in plan.loops if r is not None}
        for fn, ins, outs, op, is_group, _dead in plan.steps:
            if is_group:
                g = fn.group
                label, cat = g.name, "fused kernel"
                args = {"ops": [o.name for o in g.ops], "node": f"{g.name}/{op.name}"}
            elif id(op) in lowered:
                label, cat = op.name, "compiled loop"
                args = {"type": op.type, "node": f"{op.name}_compiled/{op.name}"}
            else:
                label, cat, args = op.name, op.type, {"node": op.name}
            steps.append((fn, ins, outs, op, is_group, label, cat, args))
        return steps, plan.pad, plan.out_idx, plan.graph
    index = {id(v): i for i, v in enumerate(graph.all_inputs)}
    n_in = len(index)
    steps = []
    for op in graph.operations:
        impl = REGISTRY[op.type].numpy
        fn = (lambda impl, attrs: lambda *a: impl(*a, **attrs))(impl, op.attrs)
        ins = tuple(index[id(v)] for v in op.inputs)
        outs = tuple(index.setdefault(id(v), len(index)) for v in op.outputs)
        steps.append((fn, ins, outs, op, False, op.name, op.type, {"node": op.name}))
    return steps, [None] * (len(index) - n_in), tuple(index[id(v)] for v in graph.outputs), graph


def timed_run(graph, backend, args, recorder, scope):
    """Run `graph` like its backend does, recording one event per step."""
    cache = graph.__dict__.setdefault("_profile_steps", {})
    if backend not in cache:
        cache[backend] = _steps(graph, backend)
    steps, pad, out_idx, _ = cache[backend]
    env = list(args) + pad
    tid = threading.get_ident()
    clock = time.perf_counter_ns
    for fn, ins, outs, op, is_group, label, cat, extra in steps:
        vals = [env[i] for i in ins]
        t0 = clock()
        try:
            r = fn(*vals)
        except Exception as e:  # noqa: BLE001 - located like the backends do
            err = None if is_group else located(op, e, vals)
            if err is None:
                raise
            raise err from e
        t1 = clock()
        where = op.loc and f"{op.loc[0]}:{op.loc[1]}"
        recorder.add(scope + label, cat, t0, t1 - t0, tid,
                     dict(extra, node=scope + extra["node"], loc=where or ""))
        if is_group or len(outs) > 1:
            for o, x in zip(outs, r):
                env[o] = x
        elif outs:
            env[outs[0]] = r
    return [env[i] for i in out_idx]


def chrome_trace(recorder, path):
    """Write the events as Chrome trace-event JSON (Perfetto, chrome://tracing)."""
    pid = os.getpid()
    events = [{"name": n, "cat": c, "ph": "X", "ts": (t0 - recorder.origin) / 1000.0,
               "dur": d / 1000.0, "pid": pid, "tid": tid, "args": a}
              for n, c, t0, d, tid, a in recorder.events]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ns"}, f)


def run_metadata(recorder, strip=""):
    """A RunMetadata whose step stats time each node: the Graphs tab colours and lists
    nodes by compute time from it (a fused kernel's time is on its group's last op)."""
    from tensorboard.compat.proto import config_pb2, step_stats_pb2
    stats = step_stats_pb2.StepStats()
    dev = stats.dev_stats.add(device="/job:localhost/replica:0/task:0/device:CPU:0")
    for name, cat, t0, d, tid, a in recorder.events:
        us = max(d // 1000, 1)
        node = a["node"][len(strip):] if strip and a["node"].startswith(strip) else a["node"]
        dev.node_stats.add(node_name=node, all_start_micros=t0 // 1000,
                           op_start_rel_micros=0, op_end_rel_micros=us,
                           all_end_rel_micros=us, thread_id=tid & 0x7FFFFFFF,
                           timeline_label=f"{name} = {cat}")
    return config_pb2.RunMetadata(step_stats=stats)
