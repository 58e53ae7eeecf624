"""Shape specialization: make static every shape the traced signature already determines.

- `shape(x)` and `size(x)` become constants when x's shape is fully known;
- small integer shape arithmetic on constants (the `concat`/`expand_dims` that pack a shape
  vector, `shape(x)[0] * 2`, ...) is folded so the next step can see its value;
- `reshape` / `broadcast_to` fed a constant shape vector take it as their static shape;
- every op is re-inferred on the sharpened input types, so None dims downstream fill in;
- cond branches and while bodies see the sharper types of the values they capture (a
  while's loop variables keep their declared types: they may change shape per iteration).
"""
import numpy as np

from ..graph import Value
from ..types import TensorType
from ._rewrite import Rewriter, has_subgraphs
from .constant_folding import fold_values

# Ops with a static `shape` template attr plus an optional 1-D shape-vector input.
_SHAPE_VECTOR_OPS = {"reshape", "broadcast_to"}
# Folded here only when small integer vectors (shape arithmetic); the rest is for
# constant folding.
_SHAPE_ARITH_LIMIT = 64


def run(graph):
    """The graph with every shape the signature determines made static."""
    return _specialize(graph, {})


def _specialize(graph, sharper):
    """`sharper`: id(capture Value) -> Value with a more specific type, for subgraphs."""
    rw = Rewriter(graph)
    captures = []
    for v, src in graph.captures:
        new = sharper.get(id(v), v)
        rw.replace(v, new)
        captures.append((new, src))
    for op in graph.operations:
        inputs = [rw.lookup(v) for v in op.inputs]
        attrs = _specialize_subgraphs(op, inputs)
        x = inputs[0] if inputs else None
        if op.type in ("shape", "size") and _static(x):
            dims = x.type.shape if op.type == "shape" else int(np.prod(x.type.shape))
            rw.emit_constant(op.outputs[0], np.array(dims, dtype=op.outputs[0].type.dtype.np),
                             op.loc)
            continue
        values = _shape_arith(op, [rw.constant(v) for v in inputs], attrs)
        if values is not None:
            for out, value in zip(op.outputs, values):
                rw.emit_constant(out, value, op.loc)
            continue
        if op.type in _SHAPE_VECTOR_OPS and len(inputs) == 2 and "shape" in attrs:
            vector = rw.constant(inputs[1])
            if vector is not None and vector.ndim == 1:
                static = dict(attrs, shape=tuple(int(d) for d in vector))
                if _infers(op, inputs[:1], static):
                    rw.keep(op, inputs[:1], static)
                    continue
        rw.keep(op, inputs, attrs)
    return rw.finish(captures)


def _static(v):
    return v is not None and isinstance(v.type, TensorType) and None not in v.type.shape


def _shape_arith(op, constants, attrs):
    outs = op.outputs
    if len(outs) != 1 or not isinstance(outs[0].type, TensorType):
        return None
    t = outs[0].type
    if not t.dtype.is_integer or t.ndim > 1:
        return None
    return fold_values(op, constants, attrs, _SHAPE_ARITH_LIMIT)


def _infers(op, inputs, attrs):
    from ..registry import REGISTRY
    try:
        REGISTRY[op.type].infer([v.type for v in inputs], **attrs)
    except (TypeError, ValueError):
        return False        # e.g. a bad runtime shape: leave it to fail at run time
    return True


def _specialize_subgraphs(op, inputs):
    """Specialize each subgraph, handing it the sharper types of the values it captures."""
    if not has_subgraphs(op):
        return op.attrs
    subs = op.subgraphs()
    attrs = dict(op.attrs)
    for k, sub in subs:
        feeds = inputs[len(inputs) - len(sub.captures):] if sub.captures else []
        sharper = {}
        for (v, _), outer in zip(sub.captures, feeds):
            if isinstance(v.type, TensorType) and outer.type != v.type and _sharper(outer.type,
                                                                                    v.type):
                sharper[id(v)] = Value(v.name, outer.type)
        attrs[k] = _specialize(sub, sharper)
    return attrs


def _sharper(a, b):
    """True when type `a` is `b` with some None dims filled in."""
    return (isinstance(a, TensorType) and a.dtype is b.dtype and a.ndim == b.ndim
            and all(y is None or x == y for x, y in zip(a.shape, b.shape)))

