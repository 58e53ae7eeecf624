"""Gradient rules of the TensorArray primitives (eager and traced) and the eager hook.

A list's gradient is a list of the same tensor_list_* family in which an unwritten
element stands for zeros (see graphc/runtime/tensor_list.py).
"""
from . import tape as autodiff
from .ops import list_from_tensor, list_op, zeros_list
from ..registry import REGISTRY, defvjp


def _concat_list_vjp(gs, outs, ins, element_shape, num_elements):
    from ..tensor import OPS
    es = element_shape
    if es is None or None in es:
        raise NotImplementedError("gradient of TensorArray.concat needs a static element "
                                  "shape; pass element_shape=... to gc.TensorArray")
    rows = OPS["reshape"](gs[0], [-1] + list(es))
    return [list_from_tensor(rows)]


_LIST_VJPS = {
    # a write replaces element i: the value gets that element's gradient
    "tensor_list_write": lambda gs, outs, ins: [
        gs[0], None, list_op("tensor_list_read_or_zeros", gs[0], ins[1], ins[2])],
    "tensor_list_read": lambda gs, outs, ins: [
        list_op("tensor_list_write", zeros_list(outs[0].dtype), ins[1], gs[0]), None],
    "tensor_list_stack": lambda gs, outs, ins, element_shape, num_elements: [
        list_from_tensor(gs[0])],
    "tensor_list_gather": lambda gs, outs, ins, element_shape: [
        list_op("tensor_list_scatter_add", zeros_list(gs[0].dtype), ins[1], gs[0]), None],
    "tensor_list_concat": _concat_list_vjp,
    "tensor_list_unstack": lambda gs, outs, ins: [
        None, list_op("tensor_list_stack_or_zeros", gs[0], ins[1])],
}
for _type, _rule in _LIST_VJPS.items():
    defvjp(_type, _rule)


def taped_list_op(apply, type_, inputs, attrs):
    """An eager TensorArray op while a tape records: lists are copied before a write (so
    every version stays a distinct value) and the op is recorded like any other."""
    from ..tensor_list import TensorList
    copied = []
    for x in inputs:
        if isinstance(x, TensorList) and type_ in ("tensor_list_write", "tensor_list_unstack"):
            y = TensorList(x)
            y.dtype, y.element_shape, y.dynamic_size = x.dtype, x.element_shape, x.dynamic_size
            x = y
        copied.append(x)
    out = apply(type_, *copied, **attrs)
    autodiff.record(REGISTRY[type_], list(inputs), [out], attrs)
    return out
