"""Helpers shared by the control-flow operators: the values a statement carries in and out."""
from ...runtime import nest
from ...runtime.context import format_location, user_location
from ...runtime.dispatch import convert_to_tensor
from ...runtime.ops import creation
from ...runtime.tensor import Tensor
from ...runtime.types import TensorType
from .undefined import Undefined


def as_tuple(result, n):
    """What a generated function returned, as a tuple of its `n` values."""
    if n == 0:
        return ()
    if n == 1:
        return (result,)
    return tuple(result)


def as_result(values):
    """The tuple of a statement's outputs in the form the generated code unpacks."""
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def flat_names(names, values):
    """One readable name per flattened leaf: `x`, `pair[0]`, `d['k']`."""
    out = []
    for name, v in zip(names, values):
        out.extend(nest.paths(v, name) if nest.is_nest(v) else [name])
    return out


def where():
    """The user's file:line running now (converted code keeps the original lines)."""
    loc = user_location()
    return format_location(loc) if loc else "<unknown>"


def zeros_like_type(like):
    """A value with the structure, dtypes and (known) shapes of `like`; None dims become 0."""
    def leaf(v):
        if v is None:
            return None
        if hasattr(v, "_to_flow"):
            raise TypeError("a TensorArray cannot be returned from inside a tensor loop or "
                            "branch that does not always return; stack() it first")
        t = v if type(v) is Tensor else convert_to_tensor(v)
        typ = t.type
        if not isinstance(typ, TensorType):
            raise TypeError(f"cannot make a placeholder for a value of type {typ}")
        return creation.zeros([0 if d is None else d for d in typ.shape], typ.dtype)
    leaves = [leaf(v) for v in nest.flatten(like)]
    return nest.pack_as(like, leaves) if nest.is_nest(like) else leaves[0]


def check_carried(value, name, statement, loc, allow_none=False):
    """A value carried through a tensor `if`/loop must be tensor data; say which is not."""
    import numbers
    import numpy as np
    for leaf in nest.flatten(value):
        if leaf is None and allow_none:
            continue
        if type(leaf) is Tensor or hasattr(leaf, "_to_flow") or hasattr(leaf, "_as_tensor") \
                or isinstance(leaf, (numbers.Number, np.ndarray, np.generic)):
            continue
        raise TypeError(
            f"'{name}' holds {type(leaf).__name__} {leaf!r}, which cannot flow through the "
            f"tensor `{statement}` at {loc}: variables a tensor `{statement}` assigns must be "
            "tensors, numbers or lists/tuples/dicts of them. Give it one value before the "
            f"`{statement}` and do not reassign it inside, or make it a tensor.")

