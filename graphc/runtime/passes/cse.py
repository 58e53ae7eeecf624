"""Common-subexpression elimination: a second op of the same type, on the same inputs (in
either order for commutative ops), with equal attributes, reuses the first one's outputs.

Stateful ops never merge: two random draws differ, two prints both print, and two reads of
a variable around an assign see different values.
"""
import numpy as np

from ..graph import Graph
from ._rewrite import Rewriter, has_subgraphs, is_stateful, map_subgraphs

# a+b and b+a are the same bits in IEEE arithmetic, so they merge. (Not maximum/minimum:
# numpy's maximum(0.0, -0.0) and maximum(-0.0, 0.0) differ in the sign of the zero.)
COMMUTATIVE = {"add", "multiply", "equal", "not_equal", "logical_and", "logical_or"}

# Hashing a constant costs a copy of its bytes; huge constants are left alone.
_MAX_KEYED_CONSTANT = 1 << 16


def run(graph):
    """Merge duplicate pure ops, keeping the first occurrence (program order is unchanged)."""
    rw = Rewriter(graph)
    seen = {}
    for op in graph.operations:
        attrs = map_subgraphs(op, run)
        inputs = [rw.lookup(v) for v in op.inputs]
        key = _key(op, inputs, attrs)
        first = seen.get(key) if key is not None else None
        if first is not None:
            for out, prev in zip(op.outputs, first.outputs):
                rw.replace(out, prev)
            continue
        emitted = rw.keep(op, inputs, attrs)
        if key is not None:
            seen[key] = emitted
    return rw.finish()


def _key(op, inputs, attrs):
    """A hashable identity of what the op computes, or None when it must not merge."""
    if not op.outputs or has_subgraphs(op) or is_stateful(op):
        return None
    try:
        items = tuple((k, attr_key(v)) for k, v in sorted(attrs.items()))
    except _Unkeyable:
        return None
    ids = tuple(id(v) for v in inputs)
    if op.type in COMMUTATIVE:
        ids = tuple(sorted(ids))
    return (op.type, ids, items)


class _Unkeyable(Exception):
    pass


def attr_key(v):
    """Equal keys exactly when attribute values are interchangeable (arrays bit for bit, so
    0.0 and -0.0 or two NaN payloads never merge by accident)."""
    if isinstance(v, np.ndarray):
        if v.size > _MAX_KEYED_CONSTANT:
            raise _Unkeyable
        return ("ndarray", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, np.generic):
        return ("scalar", v.dtype.str, v.tobytes())
    if isinstance(v, float):
        return ("float", v.hex())
    if isinstance(v, (bool, int, str, bytes, type(None))):
        return (type(v).__name__, v)
    if isinstance(v, (tuple, list)):
        return (type(v).__name__, tuple(attr_key(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple((k, attr_key(x)) for k, x in sorted(v.items())))
    if isinstance(v, Graph):
        raise _Unkeyable
    try:
        hash(v)
    except TypeError:
        raise _Unkeyable from None
    return ("object", type(v).__name__, v)
