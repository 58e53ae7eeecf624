"""Dead-code elimination: drop ops whose results nobody uses.

Kept always: the graph's outputs and everything they need, every op with effects (print,
random, variable reads and writes, and cond/while containing them) and ops with no
outputs at all (they exist only for what they do). Inside cond/while bodies the same rule
applies; captures a body no longer uses are then removed from the op too, so the outer
ops that only fed them die as well.
"""
from ._rewrite import copy_graph, has_effects, has_subgraphs
from ..graph import Operation

_CONTROL = {"cond", "while"}


def run(graph):
    """The graph without its dead operations (order of the rest unchanged)."""
    live = {id(v) for v in graph.outputs}
    kept = []
    for op in reversed(graph.operations):
        if not (_must_keep(op) or any(id(v) in live for v in op.outputs)):
            continue
        if has_subgraphs(op):
            op = _clean_control(op)
        live.update(id(v) for v in op.inputs)
        kept.append(op)
    kept.reverse()
    return copy_graph(graph, kept, graph.outputs)


def _must_keep(op):
    return not op.outputs or has_effects(op)


def _clean_control(op):
    """DCE inside each subgraph, then drop captures that no subgraph reads any more."""
    subs = [(k, run(sub)) for k, sub in op.subgraphs()]
    attrs = dict(op.attrs)
    attrs.update(subs)
    inputs = list(op.inputs)
    n_caps = {len(sub.captures) for _, sub in subs}
    if op.type in _CONTROL and len(n_caps) == 1:
        n = n_caps.pop()
        offset = len(inputs) - n
        used = [any(_reads(sub, sub.captures[i][0]) for _, sub in subs) for i in range(n)]
        if offset >= 0 and not all(used):
            keep = [i for i in range(n) if used[i]]
            for k, sub in subs:
                attrs[k] = copy_graph(sub, sub.operations, sub.outputs,
                                      [sub.captures[i] for i in keep])
            inputs = inputs[:offset] + [inputs[offset + i] for i in keep]
    return Operation(op.type, op.name, inputs, attrs, op.outputs, op.loc)


def _reads(graph, value):
    return any(v is value for v in graph.outputs) or any(
        v is value for op in graph.operations for v in op.inputs)
