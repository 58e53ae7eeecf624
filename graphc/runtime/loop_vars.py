"""while_loop's loop-variable rules, shared by the traced and the eager loop.

Structure, dtype and shape (with shape_invariants) are checked the same way in both
modes, so a loop that runs eagerly also traces, with the same error messages.
"""
import numpy as np

from .. import dtypes as _dt
from ..errors import DtypeChangeError, PredicateError
from . import context, nest
from .context import current_graph, format_location
from .dispatch import bind, constant, convert_to_tensor, is_number
from .tensor import Tensor
from .types import TensorType, ListType


def where():
    """" (at file:line)" of the user's code running now, for error messages."""
    loc = context.user_location()
    return f" (at {format_location(loc)})" if loc else ""


def describe(x):
    """A nest's shape for error messages: `tuple(value, list(value))`."""
    if isinstance(x, (list, tuple)):
        return type(x).__name__ + "(" + ", ".join(describe(v) for v in x) + ")"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {describe(v)}" for k, v in x.items()) + "}"
    return "None" if x is None else "value"


def leaf_names(names, structure, default):
    """A name per leaf of `structure`: the caller's (AutoGraph passes the user's variable
    names, one per leaf or one per top-level entry) or a path like `loop_vars[0]['a']`."""
    n_leaves = len(nest.flatten(structure))
    if names is not None:
        names = list(names)
        if len(names) == n_leaves:
            return names
        if isinstance(structure, (list, tuple)) and len(names) == len(structure):
            return [n + p for n, v in zip(names, structure) for p in nest.paths(v)]
    return nest.paths(structure, default)


EXACT = object()   # no shape invariant given: the loop var keeps its initial shape


def flatten_invariants(inv, structure):
    """One shape per loop-var leaf; `inv` nests like the loop vars (None covers a subtree,
    EXACT keeps a subtree's shapes)."""
    out = []

    def walk(s, x):
        if x is EXACT:
            out.extend([EXACT] * len(nest.flatten(s)))
        elif x is None and nest.is_nest(s):
            out.extend([None] * len(nest.flatten(s)))
        elif isinstance(s, dict):
            if not isinstance(x, dict) or set(x) != set(s):
                raise ValueError(f"while_loop: shape_invariants {inv!r} does not nest like "
                                 "loop_vars")
            for k in sorted(s, key=repr):
                walk(s[k], x[k])
        elif isinstance(s, (list, tuple)):
            if not isinstance(x, (list, tuple)) or len(x) != len(s):
                raise ValueError(f"while_loop: shape_invariants {inv!r} does not nest like "
                                 "loop_vars")
            for a, b in zip(s, x):
                walk(a, b)
        else:
            out.append(as_shape(x))
    walk(structure, inv)
    return out


def as_shape(x):
    """One shape invariant as a tuple of ints/None (None: every dimension may vary)."""
    if x is None:
        return None
    shape = getattr(x, "shape", x)
    try:
        return tuple(None if d is None else int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"while_loop: a shape invariant must be a list of ints and None (or "
                        f"None), got {x!r}") from None


def allowed_type(t, shape, name):
    """The loop var's type inside the loop: its initial type relaxed by its shape invariant."""
    if shape is EXACT or not isinstance(t, TensorType):
        return t
    if shape is None:
        return TensorType(t.dtype, (None,) * len(t.shape))
    if len(shape) != len(t.shape) or any(a is not None and a != b
                                         for a, b in zip(shape, t.shape)):
        raise ValueError(f"while_loop: shape invariant {list(shape)} for '{name}' does not fit "
                         f"its initial shape {list(t.shape)}{where()}")
    return TensorType(t.dtype, shape)


def max_iterations_tensor(maximum_iterations):
    """maximum_iterations (int or integer tensor) as an int32 scalar tensor."""
    m = maximum_iterations
    if type(m) is Tensor or hasattr(m, "_as_tensor"):
        m = convert_to_tensor(m)
        if not m.dtype.is_integer or m.shape != ():
            raise TypeError(f"while_loop: maximum_iterations must be a scalar integer, got "
                            f"{m.dtype.name}{list(m.shape)}")
        return m if m.dtype is _dt.int32 else bind("cast", m, dtype=_dt.int32)
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"while_loop: maximum_iterations must be an int, got {m!r}")
    return convert_to_tensor(int(m), _dt.int32)


def check_cond_result(r):
    """What `cond` returned, as a bool (eager Python) or a scalar bool tensor; else TypeError."""
    if isinstance(r, (bool, np.bool_)) and current_graph() is None:
        return bool(r)
    r = convert_to_tensor(r)
    if r.dtype is not _dt.bool_ or r.shape != ():
        raise PredicateError(f"while_loop: cond must return a scalar bool, got {r.dtype.name}"
                             f"{list(r.shape)}{where()}")
    return r


def body_output(out, vars_, single):
    """The body's result as a list shaped like the loop vars (ValueError when it is not)."""
    flat = [out] if single or not isinstance(out, (list, tuple)) else list(out)
    if len(vars_) == 1 and not nest.same_structure(flat, vars_) and \
            nest.same_structure([out], vars_):
        flat = [out]        # one loop var that is itself a list/tuple
    if not nest.same_structure(flat, vars_):
        raise ValueError(f"while_loop: body returned {describe(out)} but the loop vars are "
                         f"{describe(vars_)}{where()}; it must return the loop vars' structure")
    return flat


def check_loop_var(name, a, b, have_invariants, when, converted=False):
    """`a`: the type a loop var may have inside the loop; `b`: what the body made of it;
    `converted`: a loop AutoGraph made (its hint names set_loop_options first)."""
    if type(a) is not type(b) or a.dtype is not b.dtype:
        raise DtypeChangeError(
            f"while_loop: loop variable '{name}' enters the loop as {a} but the body makes it "
            f"{b}{where()}. A loop variable must keep its dtype: cast inside the body, or "
            "initialize it with the final dtype.")
    if isinstance(a, TensorType) and (len(a.shape) != len(b.shape) or any(
            x is not None and x != y for x, y in zip(a.shape, b.shape))):
        hint = ""
        if len(a.shape) == len(b.shape):
            fit = [None if x != y else x for x, y in zip(a.shape, b.shape)]
            if converted:
                hint = (f" If it is meant to change, give it a shape invariant with None for "
                        f"that dimension: start the loop's body with gc.autograph.experimental."
                        f"set_loop_options(shape_invariants=[({name}, {fit})]) (for "
                        f"gc.while_loop: shape_invariants with None for that dimension).")
            else:
                hint = (f" If it is meant to change, pass shape_invariants with None for that "
                        f"dimension (e.g. {fit} for '{name}'; in a converted loop: "
                        f"gc.autograph.experimental.set_loop_options(shape_invariants=...) "
                        "first in its body).")
        elif not have_invariants:
            hint = " A loop variable must keep its rank."
        raise ValueError(f"while_loop: loop variable '{name}' has shape {list(a.shape)} on "
                         f"entry but {list(b.shape)} {when}{where()}.{hint}")


def eager_type(x):
    """The static type an eager loop value would have while tracing (None for Python data)."""
    if hasattr(x, "_to_flow"):
        return ListType(x.dtype, None)
    if type(x) is Tensor or hasattr(x, "_as_tensor"):
        return TensorType(x.dtype, tuple(x.shape))
    return None     # Python data: only checked once it becomes a tensor


def eager_while(cond, body, loop_vars, vars_, single, shapes, maximum_iterations, names):
    """Plain Python loop with the same checks (structure, dtype, shape) as the traced loop."""
    limit = None if maximum_iterations is None else int(max_iterations_tensor(maximum_iterations))
    allowed, tensor_in = [], []
    for x, s, n in zip(nest.flatten(vars_), shapes or [EXACT] * len(names), names):
        t = eager_type(x)
        tensor_in.append(isinstance(t, TensorType))
        if t is None and is_number(x):
            t = convert_to_tensor(x).type
        allowed.append(None if t is None else allowed_type(t, s, n))
    vs, i = vars_, 0
    while True:
        go = bool(check_cond_result(cond(*vs)))
        if not go or (limit is not None and i >= limit):
            break
        flat = nest.flatten(body_output(body(*vs), vars_, single))
        for k, (n, a, x) in enumerate(zip(names, allowed, flat)):
            if tensor_in[k] and is_number(x):   # as traced: a number takes the var's dtype
                x = flat[k] = constant(x, a.dtype)
            b = eager_type(x)
            if a is not None and b is not None:
                check_loop_var(n, a, b, shapes is not None, f"after iteration {i + 1}")
        vs = nest.pack_as(vars_, flat)
        i += 1
    return nest.pack_as(loop_vars, nest.flatten(vs))
