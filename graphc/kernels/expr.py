"""Expression code shared by every target: a fused op's scalar statement built from the
registry's template (`statement`), cast to the op's dtype so int32 wraps and float32 stays
float32 as the numpy rules do; integer ops whose native lowering differs from numpy's rule
call named helpers (`wadd`, `ipow`, `to_int32`...) that each target's scalar library
defines; reduction identities and accumulator updates (`identity`, `accumulate`)."""
import os

import numpy as np

from ..runtime.registry import REGISTRY

TRIG = {"sin", "cos", "tan"}                # have a fast variant checked by fast_trig_miss


def np_name(dtype):
    return "bool_" if dtype.name == "bool" else dtype.name


def where(op):
    if not op.loc:
        return op.name
    return f"{op.name} @ {os.path.basename(op.loc[0])}:{op.loc[1]}"


def identity(kind, dtype):
    if kind in ("reduce_sum",):
        return "0"
    if kind == "reduce_prod":
        return "1"
    if kind == "reduce_all":
        return "True"
    if kind == "reduce_any":
        return "False"
    big = kind == "reduce_min"
    if dtype.is_floating:
        return "np.inf" if big else "-np.inf"
    info = np.iinfo(dtype.np)
    return str(info.max if big else info.min)


_WRAPPING = {"add": "wadd", "subtract": "wsub", "multiply": "wmul"}


def int_op(kind, a, b, cast):
    """`a op b` for integers of numpy type `cast`, wrapping on overflow as numpy does (kind:
    add, subtract or multiply; both operands are cast so the helper sees one type)."""
    return f"{_WRAPPING[kind]}({cast}({a}), {cast}({b}))"


def accumulate(kind, acc, v, cast, floating):
    """Loop-body lines updating accumulator `acc` with `v`.

    Float max/min track NaN in a separate flag: across columns (`codegen_columns`, an
    elementwise update of an output row) a compare-select vectorizes, a NaN-aware one does
    not. Row reductions use `row_maximum`/`row_minimum` instead (see `_Body._reduction`).
    """
    if kind in ("reduce_sum", "reduce_prod"):
        if not floating:
            return [f"{acc} = {int_op('add' if kind == 'reduce_sum' else 'multiply', acc, v, cast)}"]
        return [f"{acc} = {cast}({acc} {'+' if kind == 'reduce_sum' else '*'} {v})"]
    if kind in ("reduce_max", "reduce_min"):
        cmp = ">" if kind == "reduce_max" else "<"
        lines = [f"{acc} = {v} if {v} {cmp} {acc} else {acc}"]
        if floating:
            lines.append(f"{acc}_nan |= {v} != {v}")
        return lines
    if kind == "reduce_all":
        return [f"{acc} = {acc} & {v}"]
    return [f"{acc} = {acc} | {v}"]


_INT_CHECKED = {"pow": "ipow", "floordiv": "ifloordiv", "mod": "imod"}


def statement(op, args, fast=False):
    """`op`'s scalar template applied to argument expressions, cast to its output dtype
    (`fast`: trig ops call their reduced-range variant)."""
    opdef = REGISTRY[op.type]
    extra = {}
    if "dtype" in op.attrs:
        extra["dtype"] = np_name(op.attrs["dtype"])
    expr = opdef.scalar.format(*args, **extra)
    if fast and op.type in TRIG:
        expr = "fast_" + expr
    out = op.outputs[0].type.dtype
    if out.is_integer:
        expr = _int_statement(op, args, out) or expr
    if out.name == "bool":
        return expr          # comparisons, logic and cast-to-bool already give a bool
    return f"{np_name(out)}({expr})"


def _int_statement(op, args, out):
    """The expression for an integer-valued op whose numba lowering is not numpy's rule
    (overflow, INT_MIN // -1, negative powers, NaN to int), or None for the template."""
    t = np_name(out)
    if op.type in _INT_CHECKED:     # raise where numpy does (not 0); wrap like numpy
        return f"{_INT_CHECKED[op.type]}({args[0]}, {args[1]})"
    if op.type in _WRAPPING:
        return int_op(op.type, args[0], args[1], t)
    if op.type == "square":
        return int_op("multiply", args[0], args[0], t)
    if op.type in ("negative", "abs"):
        return f"{'wneg' if op.type == 'negative' else 'wabs'}({t}({args[0]}))"
    if op.type == "cast" and op.inputs[0].type.dtype.is_floating:
        return f"to_{t}({args[0]})"      # numpy's INT_MIN for NaN/inf/out of range
    return None
