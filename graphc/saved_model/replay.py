"""A loaded function called under a GradientTape or inside another trace: its graph is
replayed op by op through `bind`, as a gc.function runs its Python body there. Eagerly each
op runs at once and a tape records it (cond picks its branch, while loops in Python, as
eager gc.cond / gc.while_loop do); while tracing, the ops (and cond/while nodes with fresh
copies of their bodies) join the graph being traced, so gradients and fusion see them."""
from ..runtime import context
from ..runtime.concrete import _Slot
from ..runtime.control_flow import bind_control
from ..runtime.dispatch import bind, resolve
from ..runtime.graph import Graph
from ..runtime.tensor import Tensor
from .serialize import Reader, Writer

_LIST_OPS = "tensor_list_"       # TensorArrays', list gradients' and loop stacks' ops


def replay(cf, leaves):
    """Run `cf`'s graph on `leaves` (tensors, maybe symbolic, and variables) through bind;
    returns its outputs in the function's structure."""
    return _pack(cf._structure, replay_flat(cf, leaves))


def replay_flat(cf, leaves):
    """The graph's flat list of outputs, replayed on `leaves`."""
    g = cf.graph
    env = {}
    for v, x in zip(g.inputs, leaves):
        env[id(v)] = x
    for v, src in g.captures:
        env[id(v)] = src
    return _run(g, env, cf.name)


def _pack(structure, outs):
    if type(structure) is _Slot:
        return outs[structure.index]
    if structure is None:
        return None
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*[_pack(s, outs) for s in structure])
    if isinstance(structure, (list, tuple)):
        return type(structure)(_pack(s, outs) for s in structure)
    return {k: _pack(s, outs) for k, s in structure.items()}


def _run(graph, env, name):
    tracing = context.current_graph() is not None
    for op in graph.operations:
        ins = [env[id(v)] for v in op.inputs]
        if op.type in ("cond", "while"):
            outs = _control_traced(op, ins) if tracing else _control_eager(op, ins, name)
        else:
            if not tracing and op.type.startswith(_LIST_OPS):
                raise NotImplementedError(
                    f"loaded function {name!r} uses a TensorArray ({op.type}), which cannot "
                    "run op by op under an eager GradientTape. Fix: call it inside a "
                    "gc.function (the tape can be inside it too)")
            r = bind(op.type, *ins, **op.attrs)
            outs = [] if r is None else [r] if type(r) is Tensor else list(r)
        for v, t in zip(op.outputs, outs):
            env[id(v)] = t
    return [env[id(v)] for v in graph.outputs]


def _sub(graph, args, name):
    env = {id(v): x for v, x in zip(graph.all_inputs, args)}
    return _run(graph, env, name)


def _control_eager(op, ins, name):
    if op.type == "cond":
        branch = op.attrs["true_branch"] if bool(ins[0].numpy()) else op.attrs["false_branch"]
        return _sub(branch, ins[1:], name)
    n = op.attrs["n_vars"]
    loop_vars, caps = list(ins[:n]), list(ins[n:])
    while bool(_sub(op.attrs["cond"], loop_vars + caps, name)[0].numpy()):
        loop_vars = _sub(op.attrs["body"], loop_vars + caps, name)
    return loop_vars


def _control_traced(op, ins):
    """A new cond/while node in the graph being traced, over fresh copies of the bodies
    whose captures now name this graph's values."""
    g = context.current_graph()
    values = [resolve(g, x) for x in ins]
    attrs = {}
    for k, a in op.attrs.items():
        if isinstance(a, Graph):
            caps = values[len(values) - len(a.captures):] if a.captures else []
            outer = {src.name: v for (_, src), v in zip(a.captures, caps)}
            w = Writer()
            reader = Reader("<replay>", array_ref=lambda key, dtype, shape: w.arrays[key])
            attrs[k] = reader.graph(w.graph(a), parent=g, outer=outer)
        else:
            attrs[k] = a
    return bind_control(op.type, g, values, attrs)
