"""`if` statements and `a if c else b`: Python branching on Python values, `cond` on tensors."""
from ...runtime import control_flow, nest
from ...runtime.context import user_location
from ...runtime.tensor import is_symbolic
from . import lint
from .state import (as_result, as_tuple, check_carried, flat_names, where,
                    zeros_like_type)
from .undefined import Undefined


class _Retry(Exception):
    """The true branch left a value undefined: trace again once the false branch is known."""


def if_stmt(cond, true_fn, false_fn, names=(), args=()):
    """Run one branch of a converted `if`.

    `true_fn(*args)` and `false_fn(*args)` return the statement's outputs (the variables
    in `names`, live after the `if`). A Python or concrete condition runs one branch, as
    Python does; a symbolic tensor condition traces both into one `cond` node.
    """
    if not is_symbolic(cond):
        return true_fn(*args) if cond else false_fn(*args)
    lint.confirm_store("if", user_location())
    return _graph_if(cond, true_fn, false_fn, tuple(names), tuple(args), where())


def if_exp(cond, true_value, false_value, description="a if c else b"):
    """`a if c else b`, with `true_value`/`false_value` as thunks (only one runs in Python)."""
    if not is_symbolic(cond):
        return true_value() if cond else false_value()
    return control_flow.cond(cond, true_value, false_value, _names=[description])


def _graph_if(cond, true_fn, false_fn, names, args, loc):
    n = len(names)
    plan = {"fill": {}, "drop": set()}
    for _ in range(3):
        seen = {}
        try:
            out = _trace_cond(cond, true_fn, false_fn, names, args, plan, seen, loc)
        except _Retry:
            _plan_undefined(names, seen, plan, loc)
            continue
        values = list(out) if n else []
        return as_result(tuple(values))
    raise AssertionError("if_stmt: undefined outputs could not be resolved")  # not reachable


def _trace_cond(cond, true_fn, false_fn, names, args, plan, seen, loc):
    n = len(names)
    kept = [k for k in range(n) if k not in plan["drop"]]
    leaf_names = []

    def branch(fn, side):
        def run():
            out = as_tuple(fn(*args), n)
            seen[side] = out
            if side == "false" and _needs_retry(seen, plan, n):
                raise _Retry()
            if side == "false":
                _check_return_paths(names, kept, seen, loc)
            result = []
            for k in kept:
                v = out[k]
                if isinstance(v, Undefined):
                    like = plan["fill"].get(k)
                    if like is None and side == "false" and not isinstance(seen["true"][k],
                                                                           Undefined):
                        like = seen["true"][k]
                    v = zeros_like_type(like) if like is not None and v.fillable else None
                else:
                    check_carried(v, names[k], "if", loc, allow_none=True)
                result.append(v)
            if side == "true":
                leaf_names[:] = flat_names([names[k] for k in kept], result)
            return tuple(result)
        return run

    out = control_flow.cond(cond, branch(true_fn, "true"), branch(false_fn, "false"),
                            _names=leaf_names)
    full = [Undefined(nm) for nm in names]
    for k, v in zip(kept, out if nest.is_nest(out) else [out]):
        full[k] = v
    return full


def _check_return_paths(names, kept, seen, loc):
    """A lowered return value that is None on one side only: a missing `return`."""
    for k in kept:
        t, f = seen["true"][k], seen["false"][k]
        if names[k].startswith("retval_") and (t is None) != (f is None) and \
                not isinstance(t, Undefined) and not isinstance(f, Undefined):
            raise ValueError(
                f"the function returns None on one path and a value on another, split by the "
                f"tensor condition of the `if` at {loc}: both branches are traced into the "
                "graph, so every path must return a value of the same dtype (add the missing "
                "`return`, or return a default value at the end)")


def _needs_retry(seen, plan, n):
    t, f = seen["true"], seen["false"]
    for k in range(n):
        if k in plan["drop"]:
            continue
        tu, fu = isinstance(t[k], Undefined), isinstance(f[k], Undefined)
        if tu and fu:
            return True
        if tu and (k not in plan["fill"] or not t[k].fillable):
            return True
        if fu and not f[k].fillable:
            return True
    return False


def _plan_undefined(names, seen, plan, loc):
    """Decide, per output, to fill one side with zeros, drop it, or report the user's error."""
    t, f = seen["true"], seen["false"]
    for k, name in enumerate(names):
        tu, fu = isinstance(t[k], Undefined), isinstance(f[k], Undefined)
        if tu and fu:
            plan["drop"].add(k)
        elif tu or fu:
            undefined, other = (t[k], f[k]) if tu else (f[k], t[k])
            if not undefined.fillable:
                side, other_side = ("false", "true") if fu else ("true", "false")
                raise ValueError(
                    f"'{name}' is assigned in the {other_side} branch of the `if` at {loc} but "
                    f"not in the {side} branch, and it is used after the `if`. The condition is "
                    f"a tensor, so both branches are traced and must define '{name}': assign it "
                    f"before the `if` or in both branches.")
            plan["fill"][k] = other
