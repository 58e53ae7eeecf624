"""Small TF functions TF code leans on: identity, rank, add_n (composites of graphc's ops),
is_tensor and executing_eagerly."""
from ... import dtypes as _dt
from ..context import current_graph
from ..dispatch import constant, convert_like, convert_to_tensor
from ..tensor import OPS, Tensor


def is_tensor(x):
    """True for a gc.Tensor or a tensor-like object (a gc.Variable), as tf.is_tensor."""
    return type(x) is Tensor or hasattr(x, "_as_tensor")


def executing_eagerly():
    """False while this thread traces a gc.function, True otherwise (as in TF)."""
    return current_graph() is None


def identity(input, name=None):
    """`input` as a tensor (a variable's current value), as tf.identity."""
    return convert_to_tensor(input)


def rank(input, name=None):
    """The number of dimensions of `input`, an int32 scalar tensor (as tf.rank)."""
    return constant(convert_to_tensor(input).ndim, _dt.int32)


def add_n(inputs, name=None):
    """The elementwise sum of a list of tensors of one shape and dtype (as tf.add_n)."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError(f"add_n: inputs must be a non-empty list of tensors, got {inputs!r}")
    values = convert_like(list(inputs), "add_n")
    first = values[0]
    for v in values[1:]:
        if v.shape != first.shape:
            raise ValueError(f"add_n: all inputs must have one shape, got "
                             f"{[list(t.shape) for t in values]} (add_n does not broadcast)")
    total = first
    for v in values[1:]:
        total = OPS["add"](total, v)
    return total


PUBLIC = {"identity": identity, "rank": rank, "add_n": add_n}
