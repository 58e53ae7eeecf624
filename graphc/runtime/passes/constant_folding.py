"""Constant folding: an op whose inputs are all constants becomes a constant, and a cond
whose predicate is a constant becomes the branch it takes (its ops, effects included, take
the cond's place in program order; the other branch never ran anyway).

The value is computed with the op's own numpy rule from the registry, so a folded graph
gives exactly what the reference interpreter would have computed at run time.
"""
import numpy as np

from ..registry import REGISTRY
from ..types import TensorType
from ..graph import Operation, Value
from ._rewrite import Rewriter, has_effects, map_subgraphs

# Results with more elements than this stay ops: a big constant bloats the graph text and
# the kernel cache key, and computing it per call costs no more than loading it.
SIZE_LIMIT = 1024

# A while loop's trip count is unbounded: folding it would run the loop at compile time.
_NEVER_FOLD = {"constant", "while"}


def run(graph):
    """Fold every non-effectful op whose inputs are constants (and results are small)."""
    rw = Rewriter(graph)
    for op in graph.operations:
        attrs = map_subgraphs(op, run)
        inputs = [rw.lookup(v) for v in op.inputs]
        constants = [rw.constant(v) for v in inputs]
        if op.type == "cond" and constants[0] is not None:
            inline_branch(rw, op, attrs["true_branch" if constants[0] else "false_branch"],
                          inputs)
            continue
        values = fold_values(op, constants, attrs, SIZE_LIMIT)
        if values is None:
            rw.keep(op, inputs, attrs)
            continue
        for out, value in zip(op.outputs, values):
            rw.emit_constant(out, value, op.loc)
    return rw.finish()


def can_fold(op):
    """Ops that are pure functions of their inputs, with only tensor outputs."""
    return (op.type not in _NEVER_FOLD and bool(op.outputs) and not has_effects(op)
            and all(isinstance(v.type, TensorType) for v in op.outputs))


def fold_values(op, constants, attrs, size_limit):
    """The op's outputs as numpy arrays when every input is a constant, else None.

    None too when the op must not fold, a result exceeds `size_limit` elements, or the
    numpy rule fails (the error is then raised at run time, where the user expects it).
    """
    if not can_fold(op) or any(c is None for c in constants):
        return None
    try:
        with np.errstate(all="ignore"):
            result = REGISTRY[op.type].numpy(*constants, **attrs)
    except Exception:  # noqa: BLE001 - a failing op is left for run time to report
        return None
    results = [result] if len(op.outputs) == 1 else list(result)
    arrays = []
    for out, r in zip(op.outputs, results):
        arr = np.array(r, dtype=out.type.dtype.np, copy=True)
        if arr.size > size_limit or not _fits(arr.shape, out.type.shape):
            return None
        arrays.append(arr)
    return arrays


def _fits(shape, static):
    return len(shape) == len(static) and all(s is None or s == d for s, d in zip(static, shape))


def inline_branch(rw, op, branch, inputs):
    """Emit `branch`'s ops in place of cond `op`, renamed to be unique in the outer graph."""
    feeds = inputs[len(inputs) - len(branch.captures):] if branch.captures else []
    local = {id(v): f for (v, _), f in zip(branch.captures, feeds)}
    for inner in branch.operations:
        name = rw.fresh_name(inner.type)
        outs = [Value(name if len(inner.outputs) == 1 else f"{name}.{i}", o.type)
                for i, o in enumerate(inner.outputs)]
        moved = Operation(inner.type, name, inner.inputs, inner.attrs, outs, inner.loc)
        rw.keep(moved, [local.get(id(v), v) for v in inner.inputs])
        for old, new in zip(inner.outputs, outs):
            local[id(old)] = new
    for out, result in zip(op.outputs, branch.outputs):
        rw.replace(out, rw.lookup(local[id(result)]))
