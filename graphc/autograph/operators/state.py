"""Helpers shared by the control-flow operators: the values a statement carries in and out."""
from ...errors import StructureError
from ...runtime import nest
from ...runtime.context import format_location, user_location
from ...runtime.dispatch import convert_to_tensor
from ...runtime.ops import creation
from ...runtime.tensor import Tensor
from ...runtime.types import TensorType
from ..pyct.activity import CONTAINER_MUTATORS
from .undefined import MaybeUndefined, Undefined


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
        if type(v) is MaybeUndefined:       # its type only, no run-time check
            v = v.value
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
        raise StructureError(
            f"'{name}' holds {type(leaf).__name__} {leaf!r}, which cannot flow through the "
            f"tensor `{statement}` at {loc}: variables a tensor `{statement}` assigns must be "
            "tensors, numbers or lists/tuples/dicts of them. Give it one value before the "
            f"`{statement}` and do not reassign it inside, or make it a tensor.")



# -- the state of a converted statement ------------------------------------------------

class StateAccess:
    """Reads and writes one statement's state through its generated get_state/set_state.

    `names` are the symbols' texts (`x`, `cfg['n']`), the first `nouts` of them outputs;
    `opts` holds what the converter found that only a graph statement cannot do:
    `mutated` symbols (changed by a method: key -> (method, line)) and `untracked` stores
    ((line, text, why)).
    """

    def __init__(self, get_state, set_state, names, nouts=None, opts=None):
        self._get, self._set = get_state, set_state
        self.names = tuple(names)
        self.nouts = len(self.names) if nouts is None else nouts
        opts = opts or {}
        self.mutated = opts.get("mutated", {})
        self.untracked = opts.get("untracked", ())

    def read(self, kind="", loc=None):
        if self._get is None:
            return ()
        try:
            return tuple(self._get())
        except TypeError as e:
            if "unhashable" not in str(e):
                raise
            keyed = [v for v in self.names if "[" in v]
            raise TypeError(
                f"a dict key used by {', '.join(keyed)} inside the tensor `{kind}` at "
                f"{format_location(loc)} is a tensor: an entry with a tensor key cannot be "
                "carried through graph control flow. Key the dict with Python values, or "
                "keep the values in a tensor and index it.") from None

    def write(self, values):
        if self._set is not None:
            self._set(tuple(values))

    def carried(self, values, kind, loc):
        """Indices of the outputs a graph statement carries; raises for what it cannot."""
        self.check_untracked(kind, loc)
        keep = []
        for k in range(self.nouts):
            name, v = self.names[k], values[k]
            if name in self.mutated:
                if hasattr(v, "_to_flow"):
                    keep.append(k)
                elif isinstance(v, (list, dict, set, bytearray)) and \
                        self.mutated[name][0] in CONTAINER_MUTATORS:
                    raise _container_error(name, v, self.mutated[name], kind, loc)
                continue       # another object's method: it runs while tracing, as in TF
            keep.append(k)
        return keep

    def check_untracked(self, kind, loc):
        if not self.untracked:
            return
        line, text, why = self.untracked[0]
        file = loc[0] if loc else "<unknown>"
        if why.startswith("it is declared"):
            fix = (f"keep the value in a gc.Variable ({text}.assign(...)) or return it from "
                   "the function")
        elif "changes inside" in why:
            fix = ("collect the values in a gc.TensorArray (ta = ta.write(i, value)) and "
                   "stack() it after the statement")
        elif why == "it is deleted":
            raise ValueError(
                f"`{text}` at {file}:{line} deletes an item or attribute inside the tensor "
                f"`{kind}` at {format_location(loc)}: the graph `{kind}` traces the block once, "
                "so the deletion would happen while tracing, not when the block runs. Fix: "
                f"delete it after the `{kind}`, or keep a flag tensor instead.")
        else:
            fix = "use a constant key, or a name the statement does not change"
        raise ValueError(
            f"{text} is assigned at {file}:{line} inside the tensor `{kind}` at "
            f"{format_location(loc)}, but {why}, so it cannot be carried through the graph "
            f"`{kind}` (the graph runs the block once while tracing). Fix: {fix}.")


def _container_error(name, value, mutation, kind, loc):
    method, line = mutation
    what = type(value).__name__
    file = loc[0] if loc else "<unknown>"
    how = ("traces its body once, so the " + what + " would change once, not once per "
           "iteration") if kind != "if" else ("traces both branches, so the " + what +
                                               " would change as if both had run")
    return ValueError(
        f"{name}.{method}() at {file}:{line} changes a Python {what} from outside the tensor "
        f"`{kind}` at {format_location(loc)}: a graph `{kind}` {how}. Fix: collect values "
        "in a gc.TensorArray (ta = ta.write(i, value); ta.stack() after the loop), or keep "
        f"the {what} out of the tensor `{kind}`.")


def fresh(values):
    """`values` with every TensorArray leaf replaced by a new object on the same flow, so
    tracing a branch or a body that writes to it leaves the original untouched."""
    def leaf(v):
        return v._from_flow(v._to_flow()) if hasattr(v, "_to_flow") else v
    out = []
    for v in values:
        if nest.is_nest(v):
            out.append(nest.pack_as(v, [leaf(x) for x in nest.flatten(v)]))
        else:
            out.append(leaf(v))
    return tuple(out)
