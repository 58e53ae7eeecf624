"""The tensor_list_* primitives: gc.TensorArray's, and those of gradients; their runtime value.

A TensorArray's flow value is a `TensorList` at run time: a Python list of numpy arrays,
written in place (TF flows are linear, so an older version of a list is never read
after a newer one is made). Static rules (`infer`) check dtypes and element shapes at
trace time; runtime rules check indices and unknown dims (an unwritten element reads as
zeros, as in TF, where its shape is known). Eager
TensorArrays apply the very same rules through `apply_eager`.

Gradients use lists too, as TF does: a differentiated while loop pushes each iteration's
values onto lists (`tensor_list_push_back`) that its backward loop reads, and a
TensorArray's gradient is a list in which an unwritten element stands for zeros (the
`_or_zeros` reads, `tensor_list_add`, `tensor_list_scatter_add`). Those ops never change
their input lists, so one gradient may be used twice.
"""
import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from .registry import REGISTRY, register, OPAQUE
from .tensor import Tensor
from .types import ListType, TensorType


class TensorList(list):
    """Runtime value of a TensorArray: numpy arrays by index, None where not yet written."""

    __slots__ = ("dtype", "element_shape", "dynamic_size")

    def _type(self):
        return ListType(self.dtype, self.element_shape)


def dims_text(shape):
    """`[2,?]` for a shape with unknown dims, `<unknown>` for no shape at all."""
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


# -- static rules (shared by eager calls and tracing) ---------------------------------------

def _check_list(op, t):
    if t.kind != "list":
        raise TypeError(f"{op}: expects a TensorArray, got {t}")


def _check_index(op, t, what="index", rank=0):
    if t.kind != "tensor" or not t.dtype.is_integer or len(t.shape) != rank:
        want = "a scalar" if rank == 0 else "a 1-D"
        raise TypeError(f"{op}: {what} must be {want} int32 tensor, got {t}")


def _check_value(op, lst, v):
    if v.kind != "tensor":
        raise TypeError(f"{op}: value must be a tensor, got {v}")
    if v.dtype is not lst.dtype:
        raise TypeError(f"{op}: the TensorArray holds {lst.dtype.name} but the value is {v}; "
                        f"use gc.cast(value, gc.{lst.dtype.name})")


def _merge_shapes(op, known, new):
    """The element shape after adding an element of shape `new` (None dims: unknown)."""
    if known is None:
        return tuple(new)
    if len(known) != len(new) or any(a is not None and b is not None and a != b
                                     for a, b in zip(known, new)):
        raise ValueError(f"{op}: value of shape {dims_text(new)} does not match the TensorArray's "
                         f"element shape {dims_text(known)}; every element must have one shape")
    return tuple(b if a is None else a for a, b in zip(known, new))


def _known_element_shape(op, lst):
    if lst.element_shape is None:
        raise ValueError(f"{op}: the TensorArray's element shape is not known at this point; "
                         "pass element_shape=... to gc.TensorArray, or write to it first")
    return lst.element_shape


def _new_infer(types, dtype, element_shape, dynamic_size):
    _check_index("TensorArray", types[0], "size")
    return [ListType(dtype, element_shape)]


def _write_infer(types):
    lst, index, value = types
    _check_list("TensorArray.write", lst)
    _check_index("TensorArray.write", index)
    _check_value("TensorArray.write", lst, value)
    return [ListType(lst.dtype, _merge_shapes("TensorArray.write", lst.element_shape,
                                              value.shape))]


def _read_infer(types):
    lst, index = types
    _check_list("TensorArray.read", lst)
    _check_index("TensorArray.read", index)
    return [TensorType(lst.dtype, _known_element_shape("TensorArray.read", lst))]


def _stack_infer(types, element_shape, num_elements):
    _check_list("TensorArray.stack", types[0])
    es = _known_element_shape("TensorArray.stack", types[0])
    return [TensorType(types[0].dtype, (num_elements,) + es)]


def _gather_infer(types, element_shape):
    lst, indices = types
    _check_list("TensorArray.gather", lst)
    _check_index("TensorArray.gather", indices, "indices", rank=1)
    es = _known_element_shape("TensorArray.gather", lst)
    return [TensorType(lst.dtype, (indices.shape[0],) + es)]


def _concat_infer(types, element_shape, num_elements):
    es = _known_element_shape("TensorArray.concat", types[0])
    if not es:
        raise ValueError("TensorArray.concat: elements are scalars; use stack() instead")
    n = None if num_elements is None or es[0] is None else num_elements * es[0]
    return [TensorType(types[0].dtype, (n,) + es[1:])]


def _size_infer(types):
    _check_list("TensorArray.size", types[0])
    return [TensorType(_dt.int32, ())]


def _unstack_infer(types):
    lst, value = types
    _check_list("TensorArray.unstack", lst)
    _check_value("TensorArray.unstack", lst, value)
    if not value.shape:
        raise ValueError(f"TensorArray.unstack: value must have rank >= 1, got {value}")
    return [ListType(lst.dtype, _merge_shapes("TensorArray.unstack", lst.element_shape,
                                              value.shape[1:]))]


# -- runtime rules (numpy interpreter and eager mode) ---------------------------------------

def _new_impl(size, *, dtype, element_shape, dynamic_size):
    n = int(size)
    if n < 0:
        raise InvalidArgumentError(f"TensorArray: size must be >= 0, got {n}")
    lst = TensorList([None] * n)
    lst.dtype, lst.element_shape, lst.dynamic_size = dtype, element_shape, dynamic_size
    return lst


def _check_runtime_shape(op, lst, shape):
    es = lst.element_shape
    if es is not None and (len(es) != len(shape) or any(
            a is not None and a != b for a, b in zip(es, shape))):
        raise InvalidArgumentError(
            f"{op}: value of shape {dims_text(shape)} does not match the TensorArray's element "
            f"shape {dims_text(es)}; every element must have one shape")
    lst.element_shape = tuple(shape)


def _in_range(op, lst, i):
    i = int(i)
    if not 0 <= i < len(lst):
        raise InvalidArgumentError(f"{op}: index {i} is out of range for a TensorArray of "
                                   f"size {len(lst)}")
    return i


def _written(op, lst, i):
    """Element i; one never written reads as zeros of the element shape, as in TF (eagerly and
    in graphs), which must then be fully known (declared, or set by a write)."""
    i = _in_range(op, lst, i)
    if lst[i] is None:
        es = lst.element_shape
        if es is None or None in es:
            raise InvalidArgumentError(
                f"{op}: element {i} of the TensorArray (size {len(lst)}) has not been written "
                f"yet and the element shape {dims_text(es)} is not fully known, so it cannot "
                "read as zeros")
        return np.zeros(es, dtype=lst.dtype.np)
    return lst[i]


def _write_impl(lst, index, value):
    i = int(index)
    if i >= len(lst) and lst.dynamic_size:
        lst.extend([None] * (i + 1 - len(lst)))
    if not 0 <= i < len(lst):
        fix = "" if i < 0 else "; create it with dynamic_size=True to let it grow"
        raise InvalidArgumentError(f"TensorArray.write: index {i} is out of range for a "
                                   f"TensorArray of size {len(lst)}{fix}")
    _check_runtime_shape("TensorArray.write", lst, np.shape(value))
    lst[i] = value
    return lst


def _read_impl(lst, index):
    i = int(index)
    if 0 <= i < len(lst) and lst[i] is not None:   # (a backward loop reads every iteration)
        return lst[i]
    return _written("TensorArray.read", lst, i)


def _empty(op, lst, element_shape, drop_first):
    es = lst.element_shape
    if es is None and element_shape is not None:
        # Nothing declared the element shape and nothing was written (a loop that ran zero
        # times): eagerly the stack is then TF's eager empty vector [0] (TensorArray.stack),
        # which a traced element shape other than [] cannot give. TF's tf.function gives
        # [0, *traced shape] here: eager and compiled would differ, so this raises instead.
        if element_shape != () or drop_first:
            raise InvalidArgumentError(
                f"{op}: the TensorArray is empty and no element_shape was given: eagerly "
                + ("its concat() fails (no element shape, as in TF)" if drop_first else
                   "its stack() is an empty vector (shape [0], as TF's eager TensorArray)")
                + f", but its elements here have shape {dims_text(element_shape)}; pass "
                f"element_shape={list(element_shape)} to gc.TensorArray")
        es = ()
    if es is None or None in es:
        raise InvalidArgumentError(f"{op}: the TensorArray is empty and its element shape "
                                   f"{dims_text(es)} is not fully known, so the result shape is "
                                   "unknown; pass element_shape=... to gc.TensorArray")
    return np.zeros((0,) + tuple(es[1:] if drop_first else es), dtype=lst.dtype.np)


def _stack_impl(lst, *, element_shape, num_elements):
    if not lst:
        return _empty("TensorArray.stack", lst, element_shape, False)
    return np.stack([_written("TensorArray.stack", lst, i) for i in range(len(lst))])


def _gather_impl(lst, indices, *, element_shape):
    if len(indices) == 0:
        return _empty("TensorArray.gather", lst, element_shape, False)
    return np.stack([_written("TensorArray.gather", lst, i) for i in indices])


def _concat_impl(lst, *, element_shape, num_elements):
    if not lst:
        return _empty("TensorArray.concat", lst, element_shape, True)
    return np.concatenate([_written("TensorArray.concat", lst, i) for i in range(len(lst))])


def _size_impl(lst):
    return np.array(len(lst), dtype=np.int32)


def _unstack_impl(lst, value):
    n = np.shape(value)[0]
    if n > len(lst) and not lst.dynamic_size:
        raise InvalidArgumentError(f"TensorArray.unstack: cannot unstack {n} elements into a "
                                   f"TensorArray of size {len(lst)}; create it with "
                                   "dynamic_size=True or a larger size")
    _check_runtime_shape("TensorArray.unstack", lst, np.shape(value)[1:])
    lst[:] = list(value)
    return lst


# -- lists of gradients and of saved loop values ----------------------------------------------

def _sum_shape(a, b):
    """The element shape of a sum of lists of element shapes a and b: unknown where either is
    (an empty gradient list has no element shape, and a loop carrying one must keep its type)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def _grad_list(like, n):
    out = TensorList([None] * n)
    out.dtype, out.element_shape, out.dynamic_size = like.dtype, like.element_shape, True
    return out


def _push_back_infer(types):
    lst, value = types
    _check_list("tensor_list_push_back", lst)
    _check_value("tensor_list_push_back", lst, value)
    if lst.element_shape is not None:
        _merge_shapes("tensor_list_push_back", lst.element_shape, value.shape)
    return [lst]


def _push_back_impl(lst, value):
    # no shape check at run time (1.2 us a push, 25x the append): the value is a loop
    # variable or an op's result, whose runtime shape the graph already guarantees to fit
    # the type rule's check; elements may differ in the element shape's unknown dims
    lst.append(value)
    return lst


def _add_infer(types):
    a, b = types
    _check_list("tensor_list_add", a)
    _check_list("tensor_list_add", b)
    if a.dtype is not b.dtype:
        raise TypeError(f"tensor_list_add: cannot add a list of {b.dtype.name} to a list of "
                        f"{a.dtype.name}")
    return [ListType(a.dtype, _sum_shape(a.element_shape, b.element_shape))]


def _add_impl(a, b):
    out = _grad_list(a, max(len(a), len(b)))
    out[:len(a)] = a
    for i, g in enumerate(b):
        if g is not None:
            out[i] = g if out[i] is None else out[i] + g
    if out.element_shape is None:
        out.element_shape = b.element_shape
    return out


def _scatter_add_infer(types):
    lst, indices, value = types
    _check_list("tensor_list_scatter_add", lst)
    _check_index("tensor_list_scatter_add", indices, "indices", rank=1)
    _check_value("tensor_list_scatter_add", lst, value)
    if not value.shape:
        raise ValueError(f"tensor_list_scatter_add: value must have rank >= 1, got {value}")
    return [ListType(lst.dtype, _sum_shape(lst.element_shape, value.shape[1:]))]


def _scatter_add_impl(lst, indices, value):
    """Rows of `value` added at `indices` (repeated indices add up), onto a copy of `lst`."""
    out = _grad_list(lst, len(lst))
    out[:] = lst
    for k, i in enumerate(np.asarray(indices).tolist()):
        if i < 0:
            raise InvalidArgumentError(f"tensor_list_scatter_add: index {i} is negative")
        if i >= len(out):
            out.extend([None] * (i + 1 - len(out)))
        out[i] = value[k] if out[i] is None else out[i] + value[k]
    return out


def _read_or_zeros_infer(types):
    lst, index, like = types
    _check_list("tensor_list_read_or_zeros", lst)
    _check_index("tensor_list_read_or_zeros", index)
    _check_value("tensor_list_read_or_zeros", lst, like)
    return [like]


def _read_or_zeros_impl(lst, index, like):
    """Element `index`, or zeros like `like` where it was never written."""
    i = int(index)
    g = lst[i] if 0 <= i < len(lst) else None
    return np.zeros_like(like) if g is None else g


def _stack_or_zeros_infer(types):
    lst, like = types
    _check_list("tensor_list_stack_or_zeros", lst)
    _check_value("tensor_list_stack_or_zeros", lst, like)
    if not like.shape:
        raise ValueError(f"tensor_list_stack_or_zeros: like must have rank >= 1, got {like}")
    return [like]


def _stack_or_zeros_impl(lst, like):
    """The elements stacked into zeros shaped like `like` (elements past its length dropped)."""
    out = np.zeros_like(like)
    for i, g in enumerate(lst):
        if g is not None and i < len(out):
            out[i] += g
    return out


for _name, _infer, _impl, _nondiff in [
        ("tensor_list_new", _new_infer, _new_impl, True),
        ("tensor_list_write", _write_infer, _write_impl, False),
        ("tensor_list_read", _read_infer, _read_impl, False),
        ("tensor_list_stack", _stack_infer, _stack_impl, False),
        ("tensor_list_gather", _gather_infer, _gather_impl, False),
        ("tensor_list_concat", _concat_infer, _concat_impl, False),
        ("tensor_list_size", _size_infer, _size_impl, True),
        ("tensor_list_unstack", _unstack_infer, _unstack_impl, False),
        ("tensor_list_push_back", _push_back_infer, _push_back_impl, True),
        ("tensor_list_add", _add_infer, _add_impl, True),
        ("tensor_list_scatter_add", _scatter_add_infer, _scatter_add_impl, True),
        ("tensor_list_read_or_zeros", _read_or_zeros_infer, _read_or_zeros_impl, True),
        ("tensor_list_stack_or_zeros", _stack_or_zeros_infer, _stack_or_zeros_impl, True)]:
    # effectful: lists are written in place, so passes must keep these ops and their order.
    # The gradient rules are attached by runtime/autodiff/lists.py (they need the tracer).
    register(_name, _infer, _impl, kind=OPAQUE, effectful=True, nondiff=_nondiff)


def apply_eager(type_, *inputs, **attrs):
    """Same rules as a traced op, run at once on a TensorList and concrete tensors."""
    opdef = REGISTRY[type_]
    types = [x._type() if isinstance(x, TensorList) else x.type for x in inputs]
    out_type = opdef.infer(types, **attrs)[0]
    result = opdef.numpy(*[x if isinstance(x, TensorList) else x._np for x in inputs], **attrs)
    if isinstance(out_type, ListType):
        return result
    return Tensor._concrete(np.asarray(result, dtype=out_type.dtype.np))
