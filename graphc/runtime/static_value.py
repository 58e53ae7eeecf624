"""static_value(t): a tensor's value when it is known while tracing (as tf.get_static_value).

A symbolic tensor has one when it was made by `gc.constant`, is `gc.shape` of a tensor
whose shape is fully known, or is a pure op (elementwise, shape, reduce, range, gather,
argmax/argmin: no print, random or variable) of such tensors -- so
`gc.random.normal(gc.shape(x))`, `gc.tile(x, gc.constant([2, 1]))`, `axis=gc.constant(1)`
or `perm=gc.range(gc.rank(x))[::-1]` work inside a compiled function as they do eagerly.
Evaluated with the ops' numpy rules, at most a few ops deep and small values only.
"""
import numpy as np

from .registry import REGISTRY, ELEMENTWISE, REDUCE, SHAPE
from .tensor import Tensor

_DEPTH = 8                  # ops followed back from the tensor asked about
_MAX_ELEMENTS = 1024        # a static value is an axis, a shape or a count: small
# pure ops of other kinds that axis and shape arithmetic uses (`gc.range(gc.rank(x))[::-1]`)
_PURE_OTHERS = frozenset({"range", "gather", "argmax", "argmin"})
# ops whose result, where its shape is not static, may be far larger than their inputs
_GROWING = frozenset({"fill", "broadcast_to", "tile"})


def static_value(t):
    """The numpy value of tensor `t` if known now, else None."""
    if type(t) is not Tensor:
        return None
    if t._sym is None:
        return t._np
    return _value(t._graph, t._sym, _DEPTH)


def _producer(graph, value):
    for op in reversed(graph.operations):
        for out in op.outputs:
            if out is value:
                return op
    return None


def _value(graph, value, depth):
    shape = value.type.shape        # None dims: known once the inputs' values are (a range)
    if depth <= 0 or (None not in shape and int(np.prod(shape)) > _MAX_ELEMENTS):
        return None
    op = _producer(graph, value)
    if op is None:
        return None          # an input or capture: known only when the graph runs
    if op.type == "constant":
        return op.attrs["value"]
    if op.type == "shape":
        shape = op.inputs[0].type.shape
        if None in shape:
            return None
        return np.array(shape, dtype=op.attrs["out_type"].np)
    opdef = REGISTRY.get(op.type)
    if opdef is None or (opdef.kind not in (ELEMENTWISE, REDUCE, SHAPE)
                         and op.type not in _PURE_OTHERS) or opdef.effectful \
            or op.subgraphs() or len(op.outputs) != 1:
        return None
    if None in shape and op.type in _GROWING:
        return None
    args = []
    for v in op.inputs:
        a = _value(graph, v, depth - 1)
        if a is None:
            return None
        args.append(a)
    if op.type == "range" and not _small_range(*args):
        return None
    try:
        with np.errstate(all="ignore"):
            out = opdef.numpy(*args, **op.attrs)
    except Exception:       # noqa: BLE001 - an error here is the op's to raise when run
        return None
    out = np.asarray(out, dtype=value.type.dtype.np)
    if out.size > _MAX_ELEMENTS or any(d is not None and d != n for d, n in zip(shape, out.shape)):
        return None
    return out


def _small_range(start, limit, delta):
    """A range of at most _MAX_ELEMENTS numbers (checked before numpy makes it)."""
    try:
        return delta != 0 and np.ceil((limit - start) / delta) <= _MAX_ELEMENTS
    except Exception:       # noqa: BLE001
        return False
