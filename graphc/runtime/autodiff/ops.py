"""Primitives that exist for gradients: the scatter-add that undoes getitem/gather, and the
per-iteration stacks a differentiated while loop keeps for its backward loop."""
import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..dispatch import bind
from ..registry import register, OPAQUE, STATE
from ..types import TensorType, ListType


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


# -- per-iteration stacks for while-loop gradients -----------------------------------------

class Stack(list):
    """Runtime value of a loop accumulator: one array per iteration, in order."""

    __slots__ = ()


def _stack_new_infer(types, dtype, element_shape):
    return [ListType(dtype, element_shape)]


def _stack_push_infer(types):
    return [types[0]]


def _stack_read_infer(types):
    acc = types[0]
    return [TensorType(acc.dtype, acc.element_shape)]


def _stack_push_impl(acc, value):
    acc.append(value)
    return acc


def _stack_read_impl(acc, index):
    i = int(index)
    if not 0 <= i < len(acc):
        raise InvalidArgumentError(f"loop gradient: iteration {i} was not saved "
                                   f"(the forward loop ran {len(acc)} iterations)")
    return acc[i]


# effectful: pushes mutate the stack in place, so passes must keep them and their order
register("loop_stack_new", _stack_new_infer, lambda dtype, element_shape: Stack(),
         kind=STATE, effectful=True, nondiff=True)
register("loop_stack_push", _stack_push_infer, _stack_push_impl, kind=STATE, effectful=True,
         nondiff=True)
register("loop_stack_read", _stack_read_infer, _stack_read_impl, kind=STATE, effectful=True,
         nondiff=True)
register("loop_stack_size", lambda types: [TensorType(_dt.int32, ())],
         lambda acc: np.array(len(acc), dtype=np.int32), kind=STATE, effectful=True,
         nondiff=True)


# -- gradients of TensorArray lists ---------------------------------------------------------
# A list's gradient maps element index -> gradient array; a missing index is a zero. Every
# op returns a new mapping (values are never changed in place), so gradients can be reused.

class ListGrad(dict):
    """Runtime value of a TensorArray's gradient."""

    __slots__ = ("dtype",)

    @property
    def type(self):
        return ListType(self.dtype, None)


def _list_grad(dtype, items=()):
    out = ListGrad(items)
    out.dtype = dtype
    return out


def _lg_type(types, dtype=None):
    return [ListType(dtype if dtype is not None else types[-1].dtype, None)]


def _add_into(d, i, g):
    d[i] = g if i not in d else d[i] + g


def _lg_add(a, b):
    out = _list_grad(a.dtype, a)
    for i, g in b.items():
        _add_into(out, i, g)
    return out


def _lg_write(lg, index, g):
    out = _list_grad(lg.dtype, lg)
    _add_into(out, int(index), g)
    return out


def _lg_read(lg, index, like):
    g = lg.get(int(index))
    return np.zeros_like(like) if g is None else g


def _lg_stack(lg, like):
    out = np.zeros_like(like)
    for i, g in lg.items():
        if i < len(out):
            out[i] += g
    return out


def _lg_scatter(indices, g):
    out = _list_grad(_dt.from_numpy(g.dtype))
    for k, i in enumerate(np.asarray(indices).tolist()):
        _add_into(out, i, g[k])
    return out


_LIST_GRAD_OPS = [
    ("list_grad_new", lambda types, dtype: [ListType(dtype, None)],
     lambda dtype: _list_grad(dtype)),
    ("list_grad_add", _lg_type, _lg_add),
    ("list_grad_write", _lg_type, _lg_write),
    ("list_grad_read", lambda types: [types[2]], _lg_read),
    ("list_grad_stack", lambda types: [types[1]], _lg_stack),
    ("list_grad_from_tensor", _lg_type,
     lambda g: _list_grad(_dt.from_numpy(g.dtype), enumerate(g))),
    ("list_grad_scatter", _lg_type, _lg_scatter),
]
for _name, _infer, _impl in _LIST_GRAD_OPS:
    # effectful: keeps passes from folding or merging ops on these non-tensor values
    register(_name, _infer, _impl, kind=OPAQUE, effectful=True, nondiff=True)


def is_list_value(x):
    """True for TensorArray lists and list gradients, eager or symbolic."""
    t = getattr(x, "type", None)
    if t is not None and not callable(t):
        return getattr(t, "kind", None) == "list"
    return hasattr(x, "_type") and getattr(x, "dtype", None) is not None


def list_op(type_, *inputs, **attrs):
    """Apply a list-gradient op: a graph node while tracing, else computed at once."""
    from .. import context
    from ..tensor import Tensor
    if context.current_graph() is not None:
        return bind(type_, *inputs, **attrs)
    from ..registry import REGISTRY
    values = [x._np if type(x) is Tensor else x for x in inputs]
    result = REGISTRY[type_].numpy(*values, **attrs)
    return result if isinstance(result, ListGrad) else Tensor._concrete(np.asarray(result))
