"""trace_on / trace_export: the graphs traced or called in between, and their profiles.

Recording costs nothing while it is off: trace_on swaps `ConcreteFunction.__init__` (to
see each new trace) and, with profiler=True or graph=True, `Function.__call__` (to see
each call) at class level, and trace_export / trace_off put the originals back. Tracing is
process-wide, as in TF; the recorded calls may come from any thread.
"""
import os
import socket
import threading
import weakref

from ..runtime import concrete, context, function
from ..runtime.concrete import ConcreteFunction
from ..runtime.function import Function
from . import profiler as profiling
from .writer import default_writer

_lock = threading.Lock()
_state = {"on": False, "graph": False, "profiler": False, "graphs": [], "traced": [],
          "recorder": None}
_ORIG = {"init": ConcreteFunction.__init__, "call": Function.__call__}


def trace_on(graph=True, profiler=False):
    """Start recording the graphs traced or called from now on (graph=True) and the wall
    time of every op / fused kernel of the calls (profiler=True) until trace_export."""
    with _lock:
        if _state["on"]:
            raise ValueError("gc.summary.trace_on: a trace is already on; call "
                             "trace_export(name) or trace_off() first")
        _state.update(on=True, graph=bool(graph), profiler=bool(profiler), graphs=[], traced=[],
                      recorder=profiling.Recorder() if profiler else None)
        ConcreteFunction.__init__ = _recording_init
        Function.__call__ = _recording_call


def trace_off():
    """Stop recording and drop what was recorded."""
    with _lock:
        _stop()


def _stop():
    ConcreteFunction.__init__ = _ORIG["init"]
    Function.__call__ = _ORIG["call"]
    state = dict(_state)
    _state.update(on=False, graphs=[], traced=[], recorder=None)
    for ref in state["traced"]:     # traces still alive (not a discarded first trace)
        cf = ref()
        if cf is not None and all(g is not cf.graph for g, _ in state["graphs"]):
            state["graphs"].append((cf.graph, cf._backend.name))
    return state


def trace_export(name, step=0, profiler_outdir=None):
    """Write what was recorded since trace_on to the default writer and stop tracing: the
    graphs as one GraphDef (several: one top-level scope each), with profiler=True also the
    per-op times as run metadata tagged `name` (Graphs tab: "Compute time") and as Chrome
    trace-event JSON in `<logdir>/plugins/profile/<name>_<step>/<host>.trace.json`. Returns
    that JSON file's path (None without profiler)."""
    writer = default_writer()
    with _lock:
        if not _state["on"]:
            raise ValueError("gc.summary.trace_export: no trace is on; call "
                             "gc.summary.trace_on(graph=True) before the calls to record")
        if writer is None:
            raise ValueError("gc.summary.trace_export needs a default writer: call it inside "
                             "`with writer.as_default():` (the trace stays on)")
        state = _stop()
    from .graph_def import merged_graph_def
    step = int(step)
    if state["graph"] and state["graphs"]:
        writer.add_event(step=step, graph_def=merged_graph_def(state["graphs"])
                         .SerializeToString())
    path = None
    rec = state["recorder"]
    if rec is not None:
        from tensorboard.compat.proto import event_pb2
        graphs = state["graphs"]
        strip = graphs[0][0].name + "/" if len(graphs) == 1 else ""   # as merged_graph_def
        meta = profiling.run_metadata(rec, strip).SerializeToString()
        writer.add_event(step=step, tagged_run_metadata=event_pb2.TaggedRunMetadata(
            tag=str(name), run_metadata=meta))
        host = socket.gethostname() or "localhost"
        path = os.path.join(profiler_outdir or os.path.join(writer.logdir, "plugins", "profile",
                                                            f"{name}_{step}"),
                            f"{host}.trace.json")
        profiling.chrome_trace(rec, path)
    writer.flush()
    return path


def _note_graph(cf):
    with _lock:
        if _state["on"] and _state["graph"] and all(g is not cf.graph
                                                    for g, _ in _state["graphs"]):
            _state["graphs"].append((cf.graph, cf._backend.name))


def _recording_init(self, *args, **kwargs):
    _ORIG["init"](self, *args, **kwargs)
    with _lock:
        if _state["on"] and _state["graph"]:
            _state["traced"].append(weakref.ref(self))


def _recording_call(self, *args, **kwargs):
    """Function.__call__ while a trace is on: find the trace for these arguments (as the
    normal call does), note its graph, and with the profiler run it step by step, timed."""
    orig = _ORIG["call"]
    rec = _state["recorder"]
    if (function.config._state["run_eagerly"] or
            (context._busy[0] and function._tracing_or_taping())):
        return orig(self, *args, **kwargs)
    cf, leaves = self._resolve(args, kwargs)     # the trace a normal call would run
    _note_graph(cf)
    if rec is None or cf._backend.name not in profiling.PROFILED_BACKENDS:
        return cf._call_leaves(leaves)
    scope = cf.graph.name + "/"
    run = concrete._holding_variable_locks(
        lambda a: profiling.timed_run(cf.graph, cf._backend.name, a, rec, scope), cf.graph)
    outs = run(leaves + cf._captures)
    return concrete._unflatten(cf._structure, outs)
