"""verify(graph): structural checks run after tracing and after every pass in tests."""
from .registry import REGISTRY


class GraphVerificationError(AssertionError):
    pass


def verify(graph, _outer=None):
    """Single assignment, definition before use, registered ops, and types that `infer`
    reproduces; recurses into cond/while bodies (which may only use their own inputs)."""
    defined = {}
    for v in graph.all_inputs:
        _define(graph, defined, v, "input")
    for op in graph.operations:
        opdef = REGISTRY.get(op.type)
        if opdef is None:
            raise GraphVerificationError(f"{graph.name}: op {op.name} has unknown type {op.type!r}")
        for v in op.inputs:
            if id(v) not in defined:
                raise GraphVerificationError(
                    f"{graph.name}: {op.name} uses %{v.name} before it is defined")
        for _, sub in op.subgraphs():
            verify(sub)
        types = opdef.infer([v.type for v in op.inputs], **op.attrs)
        if list(types) != [v.type for v in op.outputs]:
            raise GraphVerificationError(
                f"{graph.name}: {op.name} ({op.type}) outputs {[v.type for v in op.outputs]} "
                f"but its type rule gives {list(types)}")
        for v in op.outputs:
            _define(graph, defined, v, op.name)
    for v in graph.outputs:
        if id(v) not in defined:
            raise GraphVerificationError(f"{graph.name}: output %{v.name} is not defined")
    return graph


def _define(graph, defined, v, where):
    if id(v) in defined:
        raise GraphVerificationError(f"{graph.name}: %{v.name} assigned twice ({where})")
    names = {x.name for x in defined.values()}
    if v.name in names:
        raise GraphVerificationError(f"{graph.name}: name %{v.name} used twice")
    defined[id(v)] = v
