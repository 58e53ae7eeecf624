"""split, pad and reverse, as TF 2.21's: composites of slicing (getitem, steps of -1
included), concat and broadcast_to, so they differentiate, fuse and serialize as those do.

Sizes, paddings and axes are taken while tracing (Python ints, or tensors whose value is
known then), as graphc's other axis arguments; a dim that decides a piece's bounds must be
known too. TF reports the same bad arguments as InvalidArgumentError when the op runs;
graphc names them as ValueError/TypeError at the call, eagerly and while tracing.
"""
import numpy as np

from ..context import composite_errors
from ..dispatch import bind, convert_to_tensor
from ..static_value import static_value
from ..tensor import Tensor
from ._rules import _dims
from .reduce import normalize_axis, static_int, static_ints


def _slice_along(x, axis, start, stop, step=None):
    return bind_getitem(x, (slice(None),) * axis + (slice(start, stop, step),))


def bind_getitem(x, index):
    from .indexing import getitem
    return getitem(x, index)


def _known_dim(op, x, axis, why):
    d = x.shape[axis]
    if d is None:
        raise ValueError(f"{op}: the size of axis {axis} of shape {_dims(x.shape)} must be "
                         f"known while tracing {why}; give the function an input_signature "
                         "with that dimension fixed")
    return d


# -- split ------------------------------------------------------------------------------
@composite_errors("split")
def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Split `value` along `axis` into `num_or_size_splits` equal pieces (an int), or pieces
    of the given sizes (a list or 1-D int tensor; one entry may be -1, the rest), as tf.split.
    Returns a list of tensors."""
    x = convert_to_tensor(value)
    if x.ndim == 0:
        raise ValueError("split: cannot split a scalar (rank 0): split_dim must be in "
                         "[-rank, rank)")
    a = normalize_axis("split", axis, x.ndim)
    sizes = num_or_size_splits
    if type(sizes) is Tensor and sizes.ndim == 0 or isinstance(sizes, (int, np.integer)) \
            and not isinstance(sizes, (bool, np.bool_)):
        n = static_int("split", sizes, "num_or_size_splits")
        if n < 1:
            raise ValueError(f"split: the number of pieces must be at least 1, got {n}")
        d = _known_dim("split", x, a, "to split it into equal pieces")
        if d % n:
            raise ValueError(f"split: the number of pieces {n} must evenly divide the size "
                             f"{d} of axis {a} (shape {_dims(x.shape)})")
        sizes = [d // n] * n
    else:
        sizes = static_ints("split", sizes, "num_or_size_splits")
        if not sizes:
            raise ValueError("split: size_splits must not be empty")
        if sizes.count(-1) > 1:
            raise ValueError(f"split: size_splits {sizes} may hold only one -1")
        bad = [s for s in sizes if s < -1]
        if bad:
            raise ValueError(f"split: split sizes must be >= 0, got {sizes}")
        if num is not None and static_int("split", num, "num") != len(sizes):
            raise ValueError(f"split: num={num} does not match {len(sizes)} split sizes")
        d = x.shape[a]
        rest = sum(s for s in sizes if s != -1)
        if d is None:
            d = _known_dim("split", x, a, "to check the split sizes against it")
        if (-1 in sizes and rest > d) or (-1 not in sizes and rest != d):
            raise ValueError(f"split: split sizes {sizes} do not add up to the size {d} of "
                             f"axis {a} (shape {_dims(x.shape)})")
        sizes = [d - rest if s == -1 else s for s in sizes]
    out, start = [], 0
    for s in sizes:
        out.append(_slice_along(x, a, start, start + s))
        start += s
    return out


# -- reverse ----------------------------------------------------------------------------
@composite_errors("reverse")
def reverse(tensor, axis, name=None):
    """`tensor` with the order of its elements reversed along each axis in `axis` (a list or
    1-D int tensor; negative axes count from the end; an axis named twice is an error), as
    tf.reverse: a slice with step -1."""
    x = convert_to_tensor(tensor)
    if not (isinstance(axis, (list, tuple, np.ndarray)) or type(axis) is Tensor):
        raise ValueError(f"reverse: axis must be a 1-D list or tensor of axes, got {axis!r} "
                         "(write [axis], as tf.reverse)")
    if type(axis) is Tensor and axis.ndim != 1 or isinstance(axis, np.ndarray) and \
            axis.ndim != 1:
        raise ValueError(f"reverse: axis must be 1-D, got shape {list(np.shape(axis))}")
    axes = [normalize_axis("reverse", a, x.ndim) for a in static_ints("reverse", axis)]
    if len(set(axes)) != len(axes):
        twice = next(a for a in axes if axes.count(a) > 1)
        raise ValueError(f"reverse: axis {twice} is named more than once in {list(axis)}")
    if not axes:
        return x
    return bind_getitem(x, tuple(slice(None, None, -1) if i in axes else slice(None)
                                 for i in range(max(axes) + 1)))


# -- pad --------------------------------------------------------------------------------
_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


def _paddings(x, paddings):
    if type(paddings) is Tensor:
        known = static_value(paddings)
        if known is None:
            raise TypeError("pad: paddings must be known while tracing, but this tensor is "
                            "computed only when the graph runs; pass a list of [before, after] "
                            "pairs (Python ints)")
        paddings = known
    arr = np.asarray(paddings)
    if arr.size == 0 and x.ndim == 0:
        return []
    if arr.dtype.kind not in "iu":
        raise TypeError(f"pad: paddings must be integers, got {paddings!r}")
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"pad: paddings must be a matrix with 2 columns, got shape "
                         f"{list(arr.shape)}")
    if arr.shape[0] != x.ndim:
        raise ValueError(f"pad: paddings has {arr.shape[0]} rows but the input of shape "
                         f"{_dims(x.shape)} has rank {x.ndim} (one [before, after] row per "
                         "dimension)")
    if (arr < 0).any():
        raise ValueError(f"pad: paddings must be non-negative, got {arr.tolist()}")
    return [(int(b), int(e)) for b, e in arr]


def _fill_like(x, axis, size, value):
    """A block of `value` shaped as `x` with `size` along `axis` (None dims from shape(x))."""
    from .shape import broadcast_to, shape
    dims = [size if i == axis else (d if d is not None else shape(x)[i])
            for i, d in enumerate(x.shape)]
    return broadcast_to(value, dims)


@composite_errors("pad")
def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """`tensor` padded by paddings[i] = [before, after] elements along each axis i, as
    tf.pad: with `constant_values` (mode "CONSTANT"), or mirrored without ("REFLECT") or
    with ("SYMMETRIC") the edge element. Mode is case-insensitive."""
    from .shape import concat
    x = convert_to_tensor(tensor)
    m = mode.upper() if isinstance(mode, str) else mode
    if m not in _MODES:
        raise ValueError(f'pad: mode must be one of "CONSTANT", "REFLECT" or "SYMMETRIC", '
                         f"got {mode!r}")
    pads = _paddings(x, paddings)
    if m == "CONSTANT":
        value = convert_to_tensor(constant_values, x.dtype)   # 1.5 for an int tensor: TypeError
        if value.ndim != 0:
            raise ValueError(f"pad: constant_values must be a scalar, got shape "
                             f"{_dims(value.shape)}")
    for i, (before, after) in enumerate(pads):
        if not before and not after:
            continue
        parts = []
        if m == "CONSTANT":
            if before:
                parts.append(_fill_like(x, i, before, value))
            parts.append(x)
            if after:
                parts.append(_fill_like(x, i, after, value))
        else:
            d = _known_dim("pad", x, i, f"to pad it in {m} mode")
            edge = 1 if m == "REFLECT" else 0
            if before > d - edge or after > d - edge:
                rule = "less than" if edge else "no greater than"
                raise ValueError(f"pad: in {m} mode paddings must be {rule} the dimension "
                                 f"size: [{before}, {after}] for axis {i} of size {d}")
            if before:
                parts.append(reverse(_slice_along(x, i, edge, edge + before), [i]))
            parts.append(x)
            if after:
                parts.append(reverse(_slice_along(x, i, d - edge - after, d - edge), [i]))
        x = concat(parts, i)
    return x


PUBLIC = {"split": split, "reverse": reverse, "pad": pad}
