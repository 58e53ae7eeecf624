"""trace_on / trace_export: graphs (nodes, scopes) and per-op profiles, read back with
TensorBoard's loader; `graphc graph --logdir`."""
import json

import numpy as np
import pytest

import graphc as gc
from graphc.runtime.concrete import ConcreteFunction
from graphc.runtime.function import Function
from .events import load, node_names


def _controlled(backend):
    @gc.function(backend=backend)
    def f(x, n):
        y = gc.exp(x) * 2.0 + 1.0
        if gc.reduce_sum(y) > 0.0:
            y = y - 1.0
        else:
            y = y + 1.0
        i = gc.constant(0)
        while i < n:
            y = y * 0.5
            i += 1
        return y
    return f


def _reference(x, n):
    y = np.exp(x) * np.float32(2.0) + np.float32(1.0)
    y = y - np.float32(1.0) if y.sum() > 0 else y + np.float32(1.0)
    for _ in range(n):
        y = y * np.float32(0.5)
    return y


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_graph_and_profile_export(tmp_path, backend, request):
    if backend == "numba":
        forced = request.getfixturevalue("numba_forced")
    f = _controlled(backend)
    x = np.linspace(-1, 1, 8).astype(np.float32)
    w = gc.summary.create_file_writer(tmp_path)
    with w.as_default():
        gc.summary.trace_on(graph=True, profiler=True)
        assert Function.__call__ is not _ORIG_CALL
        if backend == "numba":
            with forced.expect(kernels=True, loops=True):
                outs = [f(x, np.int32(3)) for _ in range(3)]
        else:
            outs = [f(x, np.int32(3)) for _ in range(3)]
        path = gc.summary.trace_export("f_trace", step=5)
    w.close()
    # the normal call path is back: nothing of the tracer stays on it
    assert Function.__call__ is _ORIG_CALL and ConcreteFunction.__init__ is _ORIG_INIT
    for out in outs:
        np.testing.assert_allclose(out, _reference(x, 3), rtol=1e-6)
    ea = load(tmp_path)
    names = node_names(ea)
    assert "x" in names and "n" in names and "output_0" in names      # one graph: top level
    assert any(n.startswith("cond_") and "/true_branch/" in n for n in names)
    assert any("while" in n and "/body/" in n for n in names)
    nodes = {n.name: n for n in ea.Graph().node}
    exp = next(n for name, n in nodes.items() if n.op == "exp")
    assert "test_trace.py" in exp.attr["loc"].s.decode()
    assert exp.attr["_output_shapes"].list.shape[0].dim[0].size == 8
    if backend == "numba":
        assert any(n.startswith("group_") for n in names)        # fusion groups as scopes
        assert any("_compiled/" in n for n in names)                # the lowered while
    assert "f_trace" in ea.Tags()["run_metadata"]
    stats = ea.RunMetadata("f_trace").step_stats.dev_stats[0].node_stats
    assert {s.node_name for s in stats} <= set(names)                 # every timed node is drawn
    assert len(stats) >= 3 * 3
    events = json.load(open(path))["traceEvents"]
    assert len(events) == len(stats)
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    if backend == "numba":
        cats = {e["cat"] for e in events}
        assert {"fused kernel", "compiled loop"} <= cats


def test_graph_only_records_traced_and_called_functions(tmp_path):
    @gc.function(backend="numpy")
    def old(x):
        return x + 1.0

    @gc.function(backend="numpy")
    def new(x):
        return gc.sqrt(x)

    old(gc.constant(1.0))                         # traced before trace_on: recorded when called
    w = gc.summary.create_file_writer(tmp_path)
    with w.as_default():
        gc.summary.trace_on(graph=True)
        assert float(old(gc.constant(3.0))) == 4.0
        new.get_concrete_function(gc.TensorSpec([2], gc.float32))   # a trace, not called
        assert gc.summary.trace_export("g") is None
    w.close()
    names = node_names(load(tmp_path))
    assert "old/add_0" in names and "new/sqrt_0" in names


def test_trace_errors(tmp_path):
    with pytest.raises(ValueError, match="no trace is on"):
        gc.summary.trace_export("x")
    gc.summary.trace_on()
    try:
        with pytest.raises(ValueError, match="already on"):
            gc.summary.trace_on()
        with pytest.raises(ValueError, match="needs a default writer"):
            gc.summary.trace_export("x")
    finally:
        gc.summary.trace_off()
    assert Function.__call__ is _ORIG_CALL


def test_profiled_call_errors_point_at_user_line(tmp_path):
    @gc.function(backend="numpy", input_signature=[gc.TensorSpec([None], gc.float32)])
    def f(x):
        return gc.reshape(x, [5])            # fails when run on 4 elements

    w = gc.summary.create_file_writer(tmp_path)
    gc.summary.trace_on(profiler=True)
    try:
        with pytest.raises(gc.errors.InvalidArgumentError, match=r"reshape.*test_trace.py:\d+"):
            f(np.zeros(4, np.float32))
    finally:
        gc.summary.trace_off()
    w.close()


def test_cli_graph_logdir(tmp_path, capsys):
    from graphc.cli import main
    src = tmp_path / "m.py"
    src.write_text("import graphc as gc\n\ndef f(x):\n    return gc.exp(x) * 2.0 + 1.0\n")
    code = main(["graph", f"{src}::f", "--arg", "float32[4]", "--logdir", str(tmp_path / "log")])
    assert code == 0
    assert "TensorBoard graph written" in capsys.readouterr().out
    names = node_names(load(tmp_path / "log"))
    assert "x" in names and any(n.endswith("exp_0") for n in names)


_ORIG_CALL = Function.__call__
_ORIG_INIT = ConcreteFunction.__init__
