"""gc.TensorArray: a list of same-shaped tensors written by index, usable inside loops.

Eagerly it holds a `TensorList` of concrete arrays. While tracing it wraps a symbolic
"flow" tensor of `ListType`, and every method binds a `tensor_list_*` primitive
(graphc/runtime/tensor_list.py); eager calls run the same rules at once.
"""
import numpy as np

from .. import dtypes as _dt
from ..errors import OperatorNotAllowedInGraphError
from . import context
from .dispatch import bind, constant, convert_to_tensor
from .tensor import Tensor
from .tensor_list import TensorList, apply_eager, dims_text

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
    if isinstance(value, (list, tuple)) and any(type(v) is Tensor or hasattr(v, "_as_tensor")
                                               for v in value):
        # [0, k] with a tensor inside: the elements stacked into one int32 vector
        from .ops.shape import stack
        return stack([_int_tensor(op, v, what) for v in value])
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, list, tuple,
                                                          np.ndarray)):
        raise TypeError(f"{op}: {what} must be an integer or int32 tensor, got {value!r}")
    return constant(value, _dt.int32)


class TensorArray:
    """A list of tensors of one dtype and one shape, written by index (TF's TensorArray).

    `write` changes the array and returns it, so `ta = ta.write(i, x)` and a bare
    `ta.write(i, x)` mean the same; inside `gc.while_loop` bodies and converted loops it is
    carried as a loop variable.
    `dynamic_size=True` lets writes past the end grow it; the element shape comes from
    `element_shape` or the first write, and every element must have it.
    """

    def __init__(self, dtype, size=0, dynamic_size=False, element_shape=None, name=None,
                 _flow=None, _static_size=None):
        self._dtype = _dt.as_dtype(dtype)
        self._dynamic = bool(dynamic_size)
        self._name = name
        self._graph = context.current_graph()     # the trace that owns this object
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
            if context.recording_tapes():   # a recording GradientTape sees eager list ops too
                from .autodiff.lists import taped_list_op
                return taped_list_op(apply_eager, type_, inputs, attrs)
            return apply_eager(type_, *inputs, **attrs)
        if any(isinstance(x, TensorList) for x in inputs):
            raise ValueError("a TensorArray created eagerly cannot be used inside a compiled "
                             "function; create it inside the function")
        return bind(type_, *inputs, **attrs)

    def _derived(self, flow, static_size):
        return TensorArray(self._dtype, dynamic_size=self._dynamic, name=self._name,
                           _flow=flow, _static_size=static_size)

    def _with_flow(self, flow, static_size=None):
        # Changed in place and returned, eagerly (as TF's eager TensorArray) and in the trace
        # that owns the object, so `ta.write(i, x)` without `ta = ` means the same in both
        # (the converters carry a written TensorArray as branch/loop state by its flow).
        # Written inside a nested branch or body (`gc.cond(p, lambda: ta.write(..), ..)`),
        # it stays as it was and the write returns a new array, as in TF's graph mode.
        # (Eagerly a new list while a tape records, so gradients see versions.)
        size = self._static_size if static_size is None else static_size
        if not self._is_eager() and self._graph is not context.current_graph():
            return self._derived(flow, size)
        self._flow, self._static_size = flow, size
        return self

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
        """The element at `index` (zeros of the element shape if it was never written, as
        in TF; an error when that shape is not fully known)."""
        return self._apply("tensor_list_read", self._flow,
                           _int_tensor("TensorArray.read", index, "index"))

    def stack(self, name=None):
        """All elements stacked into one tensor of shape (size, *element_shape). Eagerly, an
        empty TensorArray whose element shape nothing set stacks to an empty vector (shape
        [0]), as TF's eager TensorArray; a traced one raises then unless its elements are
        scalars (tensor_list.py's _empty), so that eager and compiled never differ."""
        if self._is_eager() and not self._flow and self.element_shape is None:
            return constant(np.zeros((0,), self._dtype.np), self._dtype)
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
            return self._with_flow(flow)
        return self._with_flow(flow, None if self._dynamic else n)

    def scatter(self, indices, value, name=None):
        """Write row k of `value` at `indices[k]` (TF's scatter); returns the array. The
        number of indices must be known while tracing: each row is one write."""
        value = self._value("TensorArray.scatter", value)
        idx = _int_tensor("TensorArray.scatter", indices, "indices")
        if len(idx.shape) != 1 or idx.shape[0] is None:
            raise ValueError(f"TensorArray.scatter: indices must be a vector of known length, "
                             f"got shape {dims_text(idx.shape)}")
        n = idx.shape[0]
        if not value.shape or value.shape[0] not in (None, n):
            raise ValueError(f"TensorArray.scatter: {n} indices for a value of shape "
                             f"{dims_text(value.shape)}; it needs one row per index")
        ta = self
        for k in range(n):
            ta = ta.write(idx[k], value[k])
        return ta

    def size(self, name=None):
        """The number of elements, as an int32 scalar tensor."""
        return self._apply("tensor_list_size", self._flow)

    def __iter__(self):
        """Eagerly, the elements in order (so `for x in ta` behaves alike with and without
        tracing; while tracing AutoGraph turns that loop into a `while` node instead)."""
        if not self._is_eager():
            raise OperatorNotAllowedInGraphError(
                "iterating over a traced TensorArray in Python is not allowed: its size is "
                "known only when the graph runs. Use `for x in ta` with autograph=True, or "
                "gc.while_loop with ta.read(i) for i < ta.size()")
        return (self.read(i) for i in range(len(self._flow)))

    def __repr__(self):
        if self._is_eager():
            return (f"<gc.TensorArray dtype={self._dtype.name} size={len(self._flow)} "
                    f"element_shape={dims_text(self.element_shape)}>")
        return (f"<gc.TensorArray '{self._flow.name}' dtype={self._dtype.name} "
                f"element_shape={dims_text(self.element_shape)} (symbolic)>")
