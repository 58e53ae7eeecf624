"""Tensor indexing `x[...]` (ints, slices with steps, None, Ellipsis, int tensors), gather
and one_hot.

The index is stored as a static template attr; tensor parts of it (a symbolic loop counter
`x[i]`, slice bounds, gather indices) become extra op inputs referenced as "$k" (input k).
Template items: ("int", v), ("slice", start, stop, step), ("new",), ("take", "$k").
A 1-D+ int tensor (or list of ints) gathers along its axis, in place (like gc.gather).
"""
import numpy as np

from ...errors import InvalidArgumentError
from ..context import current_graph
from ..dispatch import bind, convert_to_tensor
from ... import dtypes as _dt
from ..registry import register, SHAPE, OPAQUE
from ..tensor import Tensor
from ._rules import _dims, check_kind, INTEGER, tensor
from .reduce import static_int, normalize_axis
from .shape import reshape, expand_dims


def _show(index):
    """The index template in Python syntax, for error messages."""
    def c(v):
        return "" if v is None else ("<tensor>" if isinstance(v, str) else str(v))
    parts = []
    for item in index:
        if item[0] == "int":
            parts.append(c(item[1]))
        elif item[0] == "slice":
            s = f"{c(item[1])}:{c(item[2])}"
            parts.append(s + (f":{c(item[3])}" if item[3] is not None else ""))
        elif item[0] == "new":
            parts.append("None")
        else:
            parts.append("<indices>")
    return "[" + ", ".join(parts) + "]"


def _getitem_infer(types, index):
    x = types[0]
    d, out = 0, []
    for item in index:
        kind = item[0]
        if kind == "new":
            out.append(1)
            continue
        if d >= x.ndim:
            raise ValueError(f"getitem: too many indices {_show(index)} for a tensor of shape "
                             f"{_dims(x.shape)}")
        dim = x.shape[d]
        for v in item[1:]:
            if isinstance(v, str):
                t = types[int(v[1:])]
                check_kind("getitem", t, INTEGER, "tensor index")
                if kind != "take" and t.ndim != 0:
                    raise ValueError(f"getitem: index parts must be scalars, got {t}")
        if kind == "int":
            v = item[1]
            if not isinstance(v, str) and dim is not None and not -dim <= v < dim:
                # eagerly a bad runtime input, as TF's InvalidArgumentError (a ValueError);
                # while tracing a plain ValueError at the user's line, as TF's shape check
                error = ValueError if current_graph() is not None else InvalidArgumentError
                raise error(f"getitem: index {v} is out of range for axis {d} with size "
                                 f"{dim} (tensor of shape {_dims(x.shape)}, index "
                                 f"{_show(index)})")
        elif kind == "slice":
            comps = item[1:]
            if comps[2] == 0:
                raise ValueError("getitem: slice step cannot be zero")
            static = not any(isinstance(v, str) for v in comps)
            out.append(len(range(*slice(*comps).indices(dim)))
                       if static and dim is not None else None)
        else:
            out.extend(types[int(item[1][1:])].shape)
        d += 1
    out.extend(x.shape[d:])
    return [tensor(x.dtype, tuple(out))]


def _getitem_impl(x, *tensors, index):
    def val(v):
        return int(tensors[int(v[1:]) - 1]) if isinstance(v, str) else v
    basic, take, pos = [], None, 0
    for item in index:
        kind = item[0]
        if kind == "int":
            basic.append(val(item[1]))
            continue
        if kind == "new":
            basic.append(None)
        elif kind == "slice":
            basic.append(slice(*(val(v) for v in item[1:])))
        else:
            basic.append(slice(None))
            take = (pos, tensors[int(item[1][1:]) - 1])
        pos += 1
    try:
        y = np.asarray(x[tuple(basic)])
    except IndexError as e:   # only dynamic (tensor) indices get here; static ones are checked
        raise InvalidArgumentError(f"getitem: {e} (tensor of shape {list(x.shape)})") from None
    if take is not None:
        y = _gather_impl(y, take[1], axis=take[0])
    return y


def _getitem_vjp(gs, outs, ins, index):
    from ..autodiff.ops import scatter_like
    return [scatter_like(gs[0], ins[0], index, list(ins[1:]))] + [None] * (len(ins) - 1)


register("getitem", _getitem_infer, _getitem_impl, kind=SHAPE, vjp=_getitem_vjp)


# -- gather / one_hot ------------------------------------------------------------------
def _gather_infer(types, axis):
    x, idx = types
    check_kind("gather", idx, INTEGER, "indices")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"gather: axis {axis} is out of range for shape {_dims(x.shape)}")
    return [tensor(x.dtype, x.shape[:axis] + idx.shape + x.shape[axis + 1:])]


def _gather_impl(x, idx, axis):
    n = x.shape[axis]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = idx[(idx < 0) | (idx >= n)].ravel()[0]
        raise InvalidArgumentError(f"gather: index {bad} is out of range [0, {n}) for axis "
                                   f"{axis} of shape {list(x.shape)}")
    return np.take(x, idx, axis=axis)


def _gather_vjp(gs, outs, ins, axis):
    from ..autodiff.ops import scatter_like
    index = (("slice", None, None, None),) * axis + (("take", "$1"),)
    return [scatter_like(gs[0], ins[0], index, [ins[1]]), None]


register("gather", _gather_infer, _gather_impl, kind=OPAQUE, vjp=_gather_vjp)


def gather(params, indices, axis=None, batch_dims=0, name=None):
    """Pick slices of `params` along `axis` at the int `indices`, as tf.gather. With
    `batch_dims` b > 0 (negative: counted from the rank of `indices`), the first b dims of
    params and indices are batch dims, each batch gathering with its own indices; `axis`
    defaults to b."""
    x = convert_to_tensor(params)
    idx = convert_to_tensor(indices)
    b = static_int("gather", batch_dims, "batch_dims")
    if not -idx.ndim <= b <= idx.ndim:      # TF's words
        raise ValueError(f"gather: Expected batch_dims in the range [{-idx.ndim}, {idx.ndim}], "
                         f"but got {b}")
    b = b + idx.ndim if b < 0 else b
    a = normalize_axis("gather", b if axis is None else axis, x.ndim)
    if b == 0:
        return bind("gather", x, idx, axis=a)
    if b > a:
        raise ValueError(f"gather: batch_dims ({b}) must be less than or equal to axis ({a}).")
    from .gather_batched import batch_gather
    return batch_gather(x, idx, axis=a, batch_dims=b)


def _check_ids(ids, depth, what):
    bad = (ids < 0) | (ids >= depth)
    if bad.any():
        raise InvalidArgumentError(
            f"{what}: received a label value of {ids[bad].flat[0]} which is outside the valid "
            f"range of [0, {depth}). Fix: labels are class ids 0..{int(depth) - 1}; check "
            "the data or the number of classes.")
    return ids


# Identity on int class ids that raises at run time for one outside [0, depth) (TF's
# sparse cross-entropy does; a one_hot alone gives an all-off row).
register("check_class_ids", lambda types, what: [types[0]], _check_ids, kind=OPAQUE,
         nondiff=True)


def check_class_ids(ids, depth, what):
    """`ids`, checked at run time to lie in [0, depth) (depth: an int or int tensor)."""
    d = convert_to_tensor(depth) if type(depth) is Tensor else convert_to_tensor(depth, ids.dtype)
    if d.dtype is not ids.dtype:
        d = bind("cast", d, dtype=ids.dtype)
    return bind("check_class_ids", ids, d, what=what)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A one-hot encoding of int `indices` with `depth` classes along `axis` (default last).

    Out-of-range indices give an all-off row, as in TF. A composite of range/equal/where.
    """
    from .creation import range as _range
    from .elementwise import where, PUBLIC as E
    idx = convert_to_tensor(indices)
    check_kind("one_hot", idx.type, INTEGER, "indices")
    if dtype is None:
        given = on_value if on_value is not None else off_value
        dtype = _dt.float32 if given is None else convert_to_tensor(given).dtype
    dtype = _dt.as_dtype(dtype)
    on = convert_to_tensor(1 if on_value is None else on_value, dtype)
    off = convert_to_tensor(0 if off_value is None else off_value, dtype)
    if type(depth) is not Tensor or not depth.is_symbolic:     # a known depth: check it now
        d = depth.numpy() if type(depth) is Tensor else depth
        if np.ndim(d) != 0 or isinstance(d, (bool, np.bool_)) or not float(d).is_integer():
            raise TypeError(f"one_hot: depth must be an int scalar, got {depth!r}")
        if d < 0:
            raise ValueError(f"one_hot: depth must be non-negative, got {int(d)}")
    a = normalize_axis("one_hot", -1 if axis is None else axis, idx.ndim + 1)
    classes = _range(depth, dtype=idx.dtype)
    classes = reshape(classes, [-1] + [1] * (idx.ndim - a))
    return where(E["equal"](expand_dims(idx, a), classes), on, off)


def _is_index_list(v):
    return isinstance(v, list) or (isinstance(v, np.ndarray) and v.dtype.kind in "iu")


def getitem(tensor, index):
    """`tensor[index]` with NumPy basic indexing plus int-tensor gathers along one axis."""
    x = convert_to_tensor(tensor)
    items = index if isinstance(index, tuple) else (index,)
    inputs = []

    def part(v, what):
        if v is None:
            return None
        if type(v) is Tensor and (v.is_symbolic or v.ndim):
            check_kind("getitem", v.type, INTEGER, what)
            inputs.append(v)
            return f"${len(inputs)}"
        if type(v) is Tensor and not v.dtype.is_integer:
            check_kind("getitem", v.type, INTEGER, what)
        try:
            return static_int("getitem", v, what)
        except TypeError:
            raise TypeError(f"getitem: {what} must be an int, a slice, None, ... or an int "
                            f"tensor, got {v!r}") from None

    if sum(1 for v in items if v is Ellipsis) > 1:
        raise ValueError("getitem: an index can only have a single ellipsis ('...')")
    consuming = sum(1 for v in items if v is not None and v is not Ellipsis)
    template = []
    for v in items:
        if v is Ellipsis:
            template.extend([("slice", None, None, None)] * max(x.ndim - consuming, 0))
        elif v is None:
            template.append(("new",))
        elif isinstance(v, slice):
            template.append(("slice", part(v.start, "slice start"), part(v.stop, "slice stop"),
                             part(v.step, "slice step")))
        elif _is_index_list(v) or (type(v) is Tensor and v.ndim):
            t = convert_to_tensor(v)
            if t.dtype.is_bool:
                raise TypeError("getitem: boolean mask indexing is not supported; use "
                                "gc.where(mask, x, y) or gather with integer indices")
            template.append(("take", part(t, "index")))
        else:
            template.append(("int", part(v, "index")))
    if sum(1 for item in template if item[0] == "take") > 1:
        raise ValueError("getitem: at most one tensor or list index is supported; use "
                         "gc.gather for several")
    return bind("getitem", x, *inputs, index=tuple(template))


PUBLIC = {"getitem": getitem, "gather": gather, "one_hot": one_hot}
