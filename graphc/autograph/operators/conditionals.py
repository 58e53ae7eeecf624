"""`if` statements and `a if c else b`: Python branching on Python values, `cond` on tensors."""
from ...runtime import control_flow
from ...runtime.context import format_location, user_location
from ...runtime.tensor import is_symbolic
from .state import (StateAccess, as_result, check_carried, flat_names, fresh,
                    zeros_like_type)
from .undefined import Undefined


class _Retry(Exception):
    """The true branch left a value undefined: trace again once the false branch is known."""


def if_stmt(cond, true_fn, false_fn, get_state=None, set_state=None, names=(), nouts=0,
            opts=None):
    """Run one branch of a converted `if`.

    The branches work on the enclosing scope's variables; `get_state()` reads the
    statement's state (`names`, the first `nouts` of them live after the `if`) and
    `set_state(values)` writes it. A Python or concrete condition runs one branch, as Python
    does; a symbolic tensor condition traces both into one `cond` node.
    """
    if not is_symbolic(cond):
        if cond:
            true_fn()
        else:
            false_fn()
        return
    access = StateAccess(get_state, set_state, names, nouts, opts)
    loc = user_location()
    _graph_if(cond, true_fn, false_fn, access, loc)


def if_exp(cond, true_value, false_value, description="a if c else b"):
    """`a if c else b`, with `true_value`/`false_value` as thunks (only one runs in Python)."""
    if not is_symbolic(cond):
        return true_value() if cond else false_value()
    return control_flow.cond(cond, true_value, false_value, _names=[description])


def _graph_if(cond, true_fn, false_fn, access, loc):
    init = access.read("if", loc)
    keep = access.carried(init, "if", loc)
    plan = {"fill": {}, "drop": set()}
    try:
        for _ in range(3):
            seen = {}
            try:
                out = _trace_cond(cond, true_fn, false_fn, access, init, keep, plan, seen, loc)
            except _Retry:
                _plan_undefined(access.names, keep, seen, plan, loc)
                continue
            values = list(init)
            for k, v in out.items():
                values[k] = v
            init = tuple(values)
            return
        raise AssertionError("if_stmt: undefined outputs could not be resolved")  # unreachable
    finally:
        access.write(init)      # the outputs, or the state as it was if tracing failed


def _trace_cond(cond, true_fn, false_fn, access, init, keep, plan, seen, loc):
    kept = [k for k in keep if k not in plan["drop"]]
    leaf_names = []
    names = access.names

    def branch(fn, side):
        def run():
            access.write(fresh(init))
            fn()
            out = access.read("if", loc)
            seen[side] = out
            if side == "false" and _needs_retry(seen, plan, kept):
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
                    check_carried(v, names[k], "if", format_location(loc), allow_none=True)
                result.append(v)
            if side == "true":
                leaf_names[:] = flat_names([names[k] for k in kept], result)
            return tuple(result)
        return run

    res = control_flow.cond(cond, branch(true_fn, "true"), branch(false_fn, "false"),
                            _names=leaf_names)
    res = tuple(res) if isinstance(res, tuple) else (res,)
    return dict(zip(kept, res))


def _check_return_paths(names, kept, seen, loc):
    """A lowered return value that is None on one side only: a missing `return`."""
    for k in kept:
        t, f = seen["true"][k], seen["false"][k]
        if names[k].startswith("retval_") and (t is None) != (f is None) and \
                not isinstance(t, Undefined) and not isinstance(f, Undefined):
            raise ValueError(
                f"the function returns None on one path and a value on another, split by the "
                f"tensor condition of the `if` at {format_location(loc)}: both branches are "
                "traced into the graph, so every path must return a value of the same dtype "
                "(add the missing `return`, or return a default value at the end)")


def _needs_retry(seen, plan, kept):
    t, f = seen["true"], seen["false"]
    for k in kept:
        tu, fu = isinstance(t[k], Undefined), isinstance(f[k], Undefined)
        if tu and fu:
            return True
        if tu and (k not in plan["fill"] or not t[k].fillable):
            return True
        if fu and not f[k].fillable:
            return True
    return False


def _plan_undefined(names, keep, seen, plan, loc):
    """Decide, per output, to fill one side with zeros, drop it, or report the user's error."""
    t, f = seen["true"], seen["false"]
    for k in keep:
        name = names[k]
        tu, fu = isinstance(t[k], Undefined), isinstance(f[k], Undefined)
        if tu and fu:
            plan["drop"].add(k)
        elif tu or fu:
            undefined, other = (t[k], f[k]) if tu else (f[k], t[k])
            if not undefined.fillable:
                side, other_side = ("false", "true") if fu else ("true", "false")
                raise ValueError(
                    f"'{name}' is assigned in the {other_side} branch of the `if` at "
                    f"{format_location(loc)} but not in the {side} branch, and it is used "
                    f"after the `if`. The condition is a tensor, so both branches are traced "
                    f"and must define '{name}': assign it before the `if` or in both branches.")
            plan["fill"][k] = other
