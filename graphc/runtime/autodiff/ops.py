"""What gradient rules share: `getitem_grad` (the scatter-add that undoes getitem, the one
primitive that exists for gradients only) and the helpers that build list gradients from
the tensor_list_* primitives."""
import numpy as np

from ... import dtypes as _dt
from ..dispatch import bind, constant
from ..registry import register, OPAQUE
from ..types import TensorType


# -- getitem_grad: zeros shaped like x, with g added at x[index] ---------------------------

def _scatter_infer(types, index, shape):
    g, xshape = types[0], types[1]
    if not xshape.dtype.is_integer or xshape.shape != (len(shape),):
        raise TypeError(f"getitem_grad: shape input must be int[{len(shape)}], got {xshape}")
    return [TensorType(g.dtype, shape)]


def _scatter_impl(g, xshape, *tensors, index, shape):
    out = np.zeros(tuple(int(d) for d in xshape), dtype=g.dtype)
    full, take, dim = [], False, 0

    def val(v):
        return int(tensors[int(v[1:]) - 1]) if isinstance(v, str) else v
    for item in index:
        kind = item[0]
        if kind == "new":
            continue
        if kind == "int":   # a length-1 slice keeps `out[...]` a view and the axis order
            i = val(item[1]) % out.shape[dim]
            full.append(slice(i, i + 1))
        elif kind == "slice":
            full.append(slice(*(val(v) for v in item[1:])))
        else:
            full.append(np.asarray(tensors[int(item[1][1:]) - 1]))
            take = True
        dim += 1
    full = tuple(full)
    target = np.broadcast_to(np.zeros((), out.dtype), out.shape)[full].shape
    g = np.reshape(g, target)
    if take:
        np.add.at(out, full, g)      # repeated indices add up
    else:
        out[full] += g
    return out


register("getitem_grad", _scatter_infer, _scatter_impl, kind=OPAQUE,
         vjp=lambda gs, outs, ins, index, shape: [bind("getitem", gs[0], *ins[2:], index=index)]
         + [None] * (len(ins) - 1))


def scatter_like(g, x, index, index_tensors):
    """The gradient of `x[index]` for x: zeros like x with `g` added at the indexed places.

    `index` is a getitem template whose "$k" refer to `index_tensors[k-1]`.
    """
    xshape = bind("shape", x, out_type=_dt.int32)
    return bind("getitem_grad", g, xshape, *index_tensors, index=index, shape=tuple(x.shape))


# -- list gradients: lists of the tensor_list_* family (graphc/runtime/tensor_list.py) -------

def zeros_list(dtype):
    """The gradient of a list that nothing flowed into: an empty list (unwritten: zeros)."""
    return list_op("tensor_list_new", constant(np.int32(0)), dtype=dtype, element_shape=None,
                   dynamic_size=True)


def list_from_tensor(value):
    """A list gradient holding the rows of `value` (the gradient of a stack)."""
    return list_op("tensor_list_unstack", zeros_list(value.dtype), value)


def is_list_value(x):
    """True for TensorArray lists and list gradients, eager or symbolic."""
    t = getattr(x, "type", None)
    if t is not None and not callable(t):
        return getattr(t, "kind", None) == "list"
    return hasattr(x, "_type") and getattr(x, "dtype", None) is not None


def list_op(type_, *inputs, **attrs):
    """Apply a tensor_list op to list gradients: a graph node while tracing, else computed at
    once (and not recorded: gradients of these gradients are not taken)."""
    from .. import context
    from ..registry import REGISTRY
    from ..tensor import Tensor
    from ..tensor_list import TensorList
    if context.current_graph() is not None:
        return bind(type_, *inputs, **attrs)
    values = [x._np if type(x) is Tensor else x for x in inputs]
    result = REGISTRY[type_].numpy(*values, **attrs)
    return result if isinstance(result, TensorList) else Tensor._concrete(np.asarray(result))
