"""Algebraic simplification: identities that make an op return one of its inputs.

x*1, 1*x, x+0, 0+x, x-0, x/1, negative(negative(x)), cast to the same dtype, reshape or
broadcast_to the same static shape, transpose by the identity permutation, transpose
of transpose (removed, or merged into one transpose), stop_gradient and
custom_gradient_output (identities once the graph is traced: gradients were built while
tracing, before any pass runs),
where(c, x, x) (sigmoid selects x or stop_gradient(x) only to steer its gradient), and
maximum(x, -inf) and minimum(x, inf) (relu steers its gradient at NaN with the first).
An elementwise op with several operands also reads a `broadcast_to(x)` operand as `x`
when its own broadcasting gives the same result type (a reduction's gradient `g * exp(z)`
needs no materialized [128, 10] copy of g: the multiply broadcasts the [128, 1] itself).

Every rewrite is exact, bit for bit, as the reference interpreter computes:
- the result's dtype and shape must be the operand's: x + 0 where the 0 broadcasts x to a
  bigger shape stays, and so does int x / 1 (it gives float64);
- the constants matched are `constant` ops and fills of one constant (static shapes);
- for floats, x + 0 is x only when the zero is -0.0, and x - 0 only when it is +0.0:
  IEEE gives -0.0 + 0.0 = +0.0, which 1/x tells apart from -0.0. (Integers: any zero.)
"""
import numpy as np

from ..registry import ELEMENTWISE, REGISTRY
from ._rewrite import Rewriter, map_subgraphs


def run(graph):
    """Replace each op that reduces to an identity by its operand."""
    rw = Rewriter(graph)
    for op in graph.operations:
        attrs = map_subgraphs(op, run)
        inputs = [rw.lookup(v) for v in op.inputs]
        rule = _RULES.get(op.type)
        target = rule(rw, inputs, attrs) if rule else None
        if isinstance(target, tuple):              # the same op on simpler operands
            rw.keep(op, *target)
            continue
        if target is not None and target.type == _out_type(op, inputs, attrs):
            rw.replace(op.outputs[0], target)
            continue
        if REGISTRY[op.type].kind == ELEMENTWISE and len(inputs) > 1:
            inputs = _absorb_broadcasts(rw, op, inputs, attrs)
        rw.keep(op, inputs, attrs)
    return rw.finish()


def _absorb_broadcasts(rw, op, inputs, attrs):
    """Operands `broadcast_to(x)` replaced by `x` wherever the result type stays the same."""
    want = _out_type(op, inputs, attrs)
    for k, v in enumerate(inputs):
        inner = rw.producer(v)
        if inner is None or inner.type != "broadcast_to" or len(inner.inputs) != 1:
            continue
        trial = inputs[:k] + [inner.inputs[0]] + inputs[k + 1:]
        try:
            if _out_type(op, trial, attrs) == want:
                inputs = trial
        except (TypeError, ValueError):
            continue
    return inputs


def _out_type(op, inputs, attrs):
    return REGISTRY[op.type].infer([v.type for v in inputs], **attrs)[0]


def _is(rw, v, scalar):
    u = rw.uniform(v)
    return u is not None and u == scalar


def _multiply(rw, ins, attrs):
    x, y = ins
    return y if _is(rw, x, 1) else x if _is(rw, y, 1) else None


def _add(rw, ins, attrs):
    x, y = ins
    return y if _is_zero(rw, x, -1) else x if _is_zero(rw, y, -1) else None


def _subtract(rw, ins, attrs):
    return ins[0] if _is_zero(rw, ins[1], +1) else None


def _is_zero(rw, v, float_sign):
    """v is all zeros; for floats, zeros of the sign that leaves every x (-0.0 included)
    bit-identical: x + (-0.0) and x - (+0.0). x + 0.0 would turn -0.0 into +0.0."""
    u = rw.uniform(v)
    if u is None or u != 0:
        return False
    return v.type.dtype.is_integer or bool(np.signbit(u)) == (float_sign < 0)


def _divide(rw, ins, attrs):
    return ins[0] if _is(rw, ins[1], 1) else None


def _bound(limit):
    """maximum(x, -inf) and minimum(x, inf) (either order) are x bit for bit, NaN and -0.0
    included (relu's maximum(x, -inf) only steers the gradient: none at NaN)."""
    def rule(rw, ins, attrs):
        x, y = ins
        return y if _is(rw, x, limit) else x if _is(rw, y, limit) else None
    return rule


def _negative(rw, ins, attrs):
    inner = rw.producer(ins[0])
    return inner.inputs[0] if inner is not None and inner.type == "negative" else None


def _cast(rw, ins, attrs):
    return ins[0] if ins[0].type.dtype is attrs["dtype"] else None


def _same_static_shape(rw, ins, attrs):
    """reshape / broadcast_to whose result has the operand's own static shape."""
    x = ins[0]
    return x if None not in x.type.shape else None


def _transpose(rw, ins, attrs):
    """Identity perms vanish; transpose(transpose(x, p), q) is x transposed by p[q]."""
    perm = tuple(attrs["perm"])
    source = ins[0]
    inner = rw.producer(source)
    if inner is not None and inner.type == "transpose":
        perm = tuple(inner.attrs["perm"][p] for p in perm)
        source = inner.inputs[0]
    if perm == tuple(range(len(perm))):
        return source
    if source is ins[0]:
        return None
    return [source], dict(attrs, perm=perm)


def _where(rw, ins, attrs):
    """where(c, x, x) is x only when c cannot broadcast x bigger at run time. Equal static
    types are not enough with unknown dims: c [?] of 3 and x [?] of 1 give 3 values."""
    c, x, y = ins
    if x is not y:
        return None
    if None not in c.type.shape or _shaped_by(rw, c, x):
        return x                                  # run() still checks the result type
    return None


def _shaped_by(rw, c, x):
    """c is an elementwise op of x and static size-1 operands (sigmoid's x < low): at run
    time c has x's shape exactly."""
    op = rw.producer(c)
    if op is None or REGISTRY[op.type].kind != ELEMENTWISE or x not in op.inputs:
        return False
    return all(v is x or (None not in v.type.shape and all(d == 1 for d in v.type.shape)
                          and len(v.type.shape) <= len(x.type.shape)) for v in op.inputs)


_RULES = {"multiply": _multiply, "add": _add, "subtract": _subtract, "divide": _divide,
          "negative": _negative, "cast": _cast, "reshape": _same_static_shape,
          "broadcast_to": _same_static_shape, "transpose": _transpose,
          "stop_gradient": lambda rw, ins, attrs: ins[0], "where": _where,
          "piecewise_linear": lambda rw, ins, attrs: ins[0],
          "piecewise_linear_grad": lambda rw, ins, attrs: ins[0],
          "custom_gradient_output": lambda rw, ins, attrs: ins[0],
          "maximum": _bound(-np.inf), "minimum": _bound(np.inf)}
