"""Primitives that exist for gradients: the scatter-add that undoes getitem/gather, and the
per-iteration stacks a differentiated while loop keeps for its backward loop."""
import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from .dispatch import bind
from .registry import register, OPAQUE, STATE
from .types import TensorType, ListType


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
