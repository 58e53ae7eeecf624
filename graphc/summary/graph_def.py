"""graphc graphs as TensorBoard GraphDef protos (what the Graphs tab draws).

One node per op: its type, its inputs (`producer` or `producer:i` for a later output),
`dtype`/`_output_shapes` attributes, its attributes as text and the user's file:line
(`loc`). Signature inputs are `Placeholder` nodes, captured variables and constants
`Capture` nodes. Scopes (name prefixes `a/b/`) show structure: a cond/while op's bodies
are nested under it; on the numba backend each fusion group is a scope `group_N` holding
the ops fused into one kernel, and a loop lowered to one native function is the scope
`<loop>_compiled`, so the picture is what graphc runs.
"""
from ..runtime.context import format_location
from ..runtime.types import TensorType

_DTYPES = {"float32": 1, "float64": 2, "int32": 3, "int64": 9, "bool": 10}


def merged_graph_def(graphs):
    """One GraphDef of [(graph, backend name)]: a single graph at the top level (so the
    Graphs tab opens on its ops and groups), several each in a top-level scope (its name;
    `name_1`, ... when traces share one)."""
    from tensorboard.compat.proto import graph_pb2, versions_pb2
    gd = graph_pb2.GraphDef(versions=versions_pb2.VersionDef(producer=1))
    seen = {}
    for graph, backend in graphs:
        n = seen.get(graph.name, 0)
        seen[graph.name] = n + 1
        prefix = graph.name + (f"_{n}" if n else "") + "/" if len(graphs) > 1 else ""
        _add_graph(gd, *_shown(graph, backend), prefix, {})
    return gd


def to_graph_def(graph, backend="numpy"):
    """GraphDef of `graph` as `backend` runs it: numba shows the optimized graph with its
    fusion groups and compiled loops; numpy the traced graph op by op."""
    from tensorboard.compat.proto import graph_pb2, versions_pb2
    gd = graph_pb2.GraphDef(versions=versions_pb2.VersionDef(producer=1))
    shown, scopes = _shown(graph, backend)
    _add_graph(gd, shown, scopes, "", {})
    return gd


def _shown(graph, backend):
    scopes, shown = {}, graph
    if backend == "numba":
        from ..kernels.cpu.backend import compile_plan
        plan = compile_plan(graph)
        shown = plan.graph
        for runner in plan.groups:
            for op in runner.group.ops:
                scopes[id(op)] = runner.group.name + "/"
        for op, runner, _ in plan.loops:
            if runner is not None:
                scopes[id(op)] = op.name + "_compiled/"
    return shown, scopes


def _add_graph(gd, graph, scopes, prefix, names):
    """Append `graph`'s nodes under `prefix`; `names` maps id(Value) -> input string."""
    for v in graph.inputs:
        names[id(v)] = _node(gd, prefix + v.name, "Placeholder", [], [v.type]).name
    for v, src in graph.captures:
        outer = names.get(id(src))
        what = type(src).__name__
        node = _node(gd, prefix + v.name, "Capture", [outer] if outer else [], [v.type])
        node.attr["source"].s = what.encode()
        names[id(v)] = node.name
    for op in graph.operations:
        name = prefix + scopes.get(id(op), "") + op.name
        node = _node(gd, name, op.type, [names[id(v)] for v in op.inputs if id(v) in names],
                     [v.type for v in op.outputs])
        if op.loc:
            node.attr["loc"].s = format_location(op.loc).encode()
        for k, a in sorted(op.attrs.items()):
            if not hasattr(a, "operations") and k != "value":
                node.attr["attr_" + k].s = repr(a)[:200].encode()
        for i, v in enumerate(op.outputs):
            names[id(v)] = name if i == 0 else f"{name}:{i}"
        for key, sub in op.subgraphs():
            _add_graph(gd, sub, scopes, f"{name}/{key}/", names)
    for i, v in enumerate(graph.outputs):
        if id(v) in names:
            _node(gd, f"{prefix}output_{i}", "Identity", [names[id(v)]], [v.type])


def _node(gd, name, op, inputs, types):
    node = gd.node.add(name=name, op=op)
    node.input.extend(inputs)
    tensors = [t for t in types if isinstance(t, TensorType)]
    if tensors:
        node.attr["dtype"].type = _DTYPES.get(tensors[0].dtype.name, 0)
        shapes = node.attr["_output_shapes"].list.shape
        for t in tensors:
            s = shapes.add()
            for d in t.shape:
                s.dim.add(size=-1 if d is None else d)
    return node
