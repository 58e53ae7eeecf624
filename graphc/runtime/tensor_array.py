"""gc.TensorArray: a list of same-shaped tensors written by index, usable inside loops.

Eagerly it holds a `TensorList` of concrete arrays. While tracing it wraps a symbolic
"flow" tensor of `ListType`, and every method binds a `tensor_list_*` primitive. The
runtime value of a flow is a `TensorList` (a Python list) written in place: TF flows are
linear, so an older version of a list is never read after a newer one is made.
"""
import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from . import context
from .dispatch import bind, constant, convert_to_tensor
from .registry import REGISTRY, register, OPAQUE
from .tensor import Tensor
from .types import ListType, TensorType


class TensorList(list):
    """Runtime value of a TensorArray: numpy arrays by index, None where not yet written."""

    __slots__ = ("dtype", "element_shape", "dynamic_size")

    def _type(self):
        return ListType(self.dtype, self.element_shape)


def _dims(shape):
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
        raise ValueError(f"{op}: value of shape {_dims(new)} does not match the TensorArray's "
                         f"element shape {_dims(known)}; every element must have one shape")
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
            f"{op}: value of shape {_dims(shape)} does not match the TensorArray's element "
            f"shape {_dims(es)}; every element must have one shape")
    lst.element_shape = tuple(shape)


def _in_range(op, lst, i):
    i = int(i)
    if not 0 <= i < len(lst):
        raise InvalidArgumentError(f"{op}: index {i} is out of range for a TensorArray of "
                                   f"size {len(lst)}")
    return i


def _written(op, lst, i):
    i = _in_range(op, lst, i)
    if lst[i] is None:
        raise InvalidArgumentError(f"{op}: element {i} of the TensorArray (size {len(lst)}) "
                                   "has not been written yet")
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
    return _written("TensorArray.read", lst, index)


def _empty(op, lst, element_shape, drop_first):
    es = lst.element_shape if lst.element_shape is not None else element_shape
    if es is None or None in es:
        raise InvalidArgumentError(f"{op}: the TensorArray is empty and its element shape "
                                   f"{_dims(es)} is not fully known, so the result shape is "
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


for _name, _infer, _impl in [
        ("tensor_list_new", _new_infer, _new_impl),
        ("tensor_list_write", _write_infer, _write_impl),
        ("tensor_list_read", _read_infer, _read_impl),
        ("tensor_list_stack", _stack_infer, _stack_impl),
        ("tensor_list_gather", _gather_infer, _gather_impl),
        ("tensor_list_concat", _concat_infer, _concat_impl),
        ("tensor_list_size", _size_infer, _size_impl),
        ("tensor_list_unstack", _unstack_infer, _unstack_impl)]:
    # effectful: lists are written in place, so passes must keep these ops and their order
    register(_name, _infer, _impl, kind=OPAQUE, effectful=True)


def _apply_eager(type_, *inputs, **attrs):
    """Same rules as a traced op, run at once on a TensorList and concrete tensors."""
    opdef = REGISTRY[type_]
    types = [x._type() if isinstance(x, TensorList) else x.type for x in inputs]
    out_type = opdef.infer(types, **attrs)[0]
    result = opdef.numpy(*[x if isinstance(x, TensorList) else x._np for x in inputs], **attrs)
    if isinstance(out_type, ListType):
        return result
    return Tensor._concrete(np.asarray(result, dtype=out_type.dtype.np))


# -- the public class --------------------------------------------------------------------

def _normalize_shape(shape):
    if shape is None:
        return None
    if isinstance(shape, int):
        shape = (shape,)
    try:
        return tuple(None if d is None else int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"TensorArray: element_shape must be a list of ints and None, "
                        f"got {shape!r}") from None


def _int_tensor(op, value, what):
    if type(value) is Tensor or hasattr(value, "_as_tensor"):
        t = convert_to_tensor(value)
        if not t.dtype.is_integer:
            raise TypeError(f"{op}: {what} must be an integer, got a {t.dtype.name} tensor")
        return t
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, list, tuple,
                                                          np.ndarray)):
        raise TypeError(f"{op}: {what} must be an integer or int32 tensor, got {value!r}")
    return constant(value, _dt.int32)


class TensorArray:
    """A list of tensors of one dtype and one shape, written by index (TF's TensorArray).

    `write` returns the TensorArray to use from then on (`ta = ta.write(i, x)`); inside
    `gc.while_loop` bodies and converted loops it is carried as a loop variable.
    `dynamic_size=True` lets writes past the end grow it; the element shape comes from
    `element_shape` or the first write, and every element must have it.
    """

    def __init__(self, dtype, size=0, dynamic_size=False, element_shape=None, name=None,
                 _flow=None, _static_size=None):
        self._dtype = _dt.as_dtype(dtype)
        self._dynamic = bool(dynamic_size)
        self._name = name
        if _flow is not None:
            self._flow, self._static_size = _flow, _static_size
            return
        size = 0 if size is None else size
        self._static_size = None
        if not self._dynamic and isinstance(size, (int, np.integer)) and not isinstance(size, bool):
            self._static_size = int(size)
        attrs = dict(dtype=self._dtype, element_shape=_normalize_shape(element_shape),
                     dynamic_size=self._dynamic)
        size_t = _int_tensor("TensorArray", size, "size")
        self._flow = self._apply("tensor_list_new", size_t, **attrs)

    # -- plumbing ------------------------------------------------------------------------
    def _is_eager(self):
        return isinstance(self._flow, TensorList)

    def _apply(self, type_, *inputs, **attrs):
        if context.current_graph() is None:
            if not all(isinstance(x, TensorList) or not x.is_symbolic for x in inputs):
                raise ValueError("a TensorArray made while tracing was used outside the "
                                 "function that traced it; return its stack() instead")
            return _apply_eager(type_, *inputs, **attrs)
        if any(isinstance(x, TensorList) for x in inputs):
            raise ValueError("a TensorArray created eagerly cannot be used inside a compiled "
                             "function; create it inside the function")
        return bind(type_, *inputs, **attrs)

    def _derived(self, flow, static_size):
        return TensorArray(self._dtype, dynamic_size=self._dynamic, name=self._name,
                           _flow=flow, _static_size=static_size)

    def _with_flow(self, flow):
        if self._is_eager():   # TF's eager TensorArray is mutated in place and returns itself
            return self
        return self._derived(flow, self._static_size)

    def _to_flow(self):
        if self._is_eager():
            raise ValueError("a TensorArray created eagerly cannot be used inside a compiled "
                             "function; create it inside the function")
        return self._flow

    def _from_flow(self, flow):
        return self._derived(flow, self._static_size)

    def _stack_for_output(self):
        return self.stack()

    def _is_symbolic_like(self):
        return not self._is_eager()

    def _value(self, op, value):
        if type(value) is Tensor or hasattr(value, "_as_tensor"):
            return convert_to_tensor(value)
        try:
            return constant(value, self._dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{op}: cannot store {value!r} in a TensorArray of "
                            f"{self._dtype.name} ({e})") from None

    # -- metadata ------------------------------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        """The shape every element has (None dims: unknown); None when not known yet."""
        return self._flow.element_shape if self._is_eager() else self._flow.type.element_shape

    @property
    def dynamic_size(self):
        return self._dynamic

    @property
    def flow(self):
        return self._to_flow()

    # -- operations ----------------------------------------------------------------------
    def write(self, index, value, name=None):
        """Store `value` at `index`; returns the TensorArray to use from now on."""
        flow = self._apply("tensor_list_write", self._flow,
                           _int_tensor("TensorArray.write", index, "index"),
                           self._value("TensorArray.write", value))
        return self._with_flow(flow)

    def read(self, index, name=None):
        """The element at `index` (an error if it was never written)."""
        return self._apply("tensor_list_read", self._flow,
                           _int_tensor("TensorArray.read", index, "index"))

    def stack(self, name=None):
        """All elements stacked into one tensor of shape (size, *element_shape)."""
        return self._apply("tensor_list_stack", self._flow, element_shape=self.element_shape,
                           num_elements=self._static_size)

    def gather(self, indices, name=None):
        """The elements at `indices`, stacked."""
        return self._apply("tensor_list_gather", self._flow,
                           _int_tensor("TensorArray.gather", indices, "indices"),
                           element_shape=self.element_shape)

    def concat(self, name=None):
        """All elements concatenated along their first axis."""
        return self._apply("tensor_list_concat", self._flow, element_shape=self.element_shape,
                           num_elements=self._static_size)

    def unstack(self, value, name=None):
        """Fill the array with the rows of `value` (its first axis); returns the array."""
        value = self._value("TensorArray.unstack", value)
        flow = self._apply("tensor_list_unstack", self._flow, value)
        n = value.shape[0] if value.shape else None
        if self._is_eager():
            return self
        return self._derived(flow, None if self._dynamic else n)

    def size(self, name=None):
        """The number of elements, as an int32 scalar tensor."""
        return self._apply("tensor_list_size", self._flow)

    def __repr__(self):
        if self._is_eager():
            return (f"<gc.TensorArray dtype={self._dtype.name} size={len(self._flow)} "
                    f"element_shape={_dims(self.element_shape)}>")
        return (f"<gc.TensorArray '{self._flow.name}' dtype={self._dtype.name} "
                f"element_shape={_dims(self.element_shape)} (symbolic)>")
