"""`bind`: the one place an op call either computes eagerly or appends a node to the graph."""
import numbers

import numpy as np

from .. import dtypes as _dt
from . import context
from .context import _busy, _tls
from .autodiff.tape import record
from .registry import REGISTRY
from .tensor import Tensor, OPS
from .types import TensorType, ResourceType


def bind(type_, *inputs, **attrs):
    """Apply primitive `type_` to tensors (or variables, for state ops) with static `attrs`.

    Returns a Tensor for one output, a tuple for several, None for none.
    """
    opdef = REGISTRY[type_]
    if _busy[0] and _tls.stack:       # this thread is tracing (see context._busy)
        return _bind_graph(_tls.stack[-1], opdef, inputs, attrs)
    arrays = [_eager_value(x) for x in inputs]
    out_types = opdef.infer([_eager_type(x) for x in inputs], **attrs)
    try:
        result = opdef.numpy(*arrays, **attrs)
    except MemoryError as e:
        from ..errors import ResourceExhaustedError
        from .run_errors import out_of_memory
        raise ResourceExhaustedError(out_of_memory(type_, [str(t) for t in out_types])) from e
    if not out_types:
        return None
    if len(out_types) == 1:
        out = Tensor._concrete(_fix(result, out_types[0]))
        if _busy[0] and _tls.tapes:
            record(opdef, inputs, (out,), attrs)
        return out
    outs = tuple(Tensor._concrete(_fix(r, t)) for r, t in zip(result, out_types))
    if _busy[0] and _tls.tapes:
        record(opdef, inputs, outs, attrs)
    return outs


def _fix(value, t):
    """Make the numpy result carry exactly the inferred dtype (numpy sometimes widens)."""
    dt = getattr(value, "dtype", None)
    if dt is None or dt != t.dtype.np:
        return np.asarray(value, dtype=t.dtype.np)
    return value


def _eager_value(x):
    if type(x) is Tensor:
        if x._np is None:
            raise ValueError(
                f"symbolic tensor {_leak_origin(x)} is used {_used_here()}, outside the function "
                "that traced it (a tensor leaked from a trace, e.g. stored on self or in a "
                "global). Fix: return it from the function instead.")
        return x._np
    return x  # variables and other runtime objects are passed by reference


def _eager_type(x):
    if type(x) is Tensor:
        return TensorType(_dt.from_numpy(x._np.dtype), x._np.shape)
    return x._graph_type()


def _bind_graph(g, opdef, inputs, attrs):
    values = [resolve(g, x) for x in inputs]
    loc = context.user_site()
    try:
        out_types = opdef.infer([v.type for v in values], **attrs)
    except (TypeError, ValueError) as e:
        if type(e) not in (TypeError, ValueError) or loc is None:
            raise
        raise type(e)(f"{e} (while tracing {context.format_location(loc)})") from None
    op = g.add_op(opdef.type, values, attrs, out_types, loc)
    outs = [Tensor._symbolic(v, g) for v in op.outputs]
    if outs and _tls.tapes:
        record(opdef, inputs, outs, attrs)
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


def resolve(g, x):
    """The Value of graph `g` that stands for `x`, capturing it from outside when needed."""
    if type(x) is Tensor:
        if x._graph is g:
            return x._sym
        if x._sym is not None:
            return _capture_symbolic(g, x)
        if g.parent is not None:
            return g.add_capture(resolve(g.parent, x), x.type)
        return g.add_capture(x, x.type)   # closed-over tensor, fed by reference per call
    return x._resolve_in(g)                 # Variable / TensorArray know how to capture themselves


def _capture_symbolic(g, x):
    if _tls.replayed and not _encloses(x._graph, g):
        replayed = context.replayed_value(x._sym)
        if replayed is not None:
            return resolve(g, replayed)
    if g.parent is None:
        raise ValueError(
            f"symbolic tensor {_leak_origin(x)} belongs to another graph ('{x._graph.name}') "
            f"but is used {_used_here()}: it leaked from a different trace or from inside a "
            "graph branch or loop body (kept on self, in a global, in a Python list, or set by "
            "a function called there). Fix: pass it in as an argument, or return it from the "
            "function / branch / loop body that made it.")
    outer = resolve(g.parent, x)
    return g.add_capture(outer, outer.type, base=outer.name.split(".")[0])


def _encloses(outer, g):
    while g is not None:
        if g is outer:
            return True
        g = g.parent
    return False


def _leak_origin(x):
    """`'add_0' (float32[2], created at f.py:3 in step)`: a symbolic tensor and where the
    user made it, for the errors about a tensor used outside its trace."""
    from .graph import walk
    g, v = x._graph, x._sym
    made = "made by graphc"
    if any(i is v for i in g.all_inputs):
        made = (f"an input of the traced function '{g.name}'" if g.parent is None
                else f"an input of graph '{g.name}' (a branch or loop body)")
    else:
        for op in walk(g):
            if any(o is v for o in op.outputs):
                if op.loc:
                    made = f"created at {context.format_location(op.loc)}"
                break
    return f"'{v.name}' ({v.type}, {made})"


def _used_here():
    loc = context.user_site()
    return f"at {context.format_location(loc)}" if loc else "here"


# -- conversion ------------------------------------------------------------------------

def _python_dtype(arr):
    """TF's rules for Python data: bool -> bool, int -> int32 (int64 if too big), float -> float32."""
    k = arr.dtype.kind
    if k == "b":
        return _dt.bool_
    if k in "iu":
        if arr.size and (arr.max() > 2**31 - 1 or arr.min() < -2**31):
            return _dt.int64
        return _dt.int32
    return _dt.float32


def _short(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _python_array(value, dtype):
    """np.asarray(value) for Python data graphc can hold: bool, int and float, rectangular."""
    try:
        arr = np.asarray(value)
    except ValueError:        # numpy refuses nested lists of different lengths
        raise ValueError(f"cannot convert {_short(value)} to a tensor: nested lists of "
                         "different lengths (ragged); a tensor is rectangular. Fix: pad the "
                         "rows to one length") from None
    if arr.dtype.kind == "O" and arr.size and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in arr.flat):
        raise ValueError(f"cannot convert {_short(value)} to a tensor: an integer is out of "
                         "the int64 range")
    if arr.dtype.kind not in "biuf":   # strings, bytes, complex, objects: never parsed or cut
        what = {"U": "string", "S": "bytes", "c": "complex", "O": "ragged or mixed"}.get(
            arr.dtype.kind, str(arr.dtype))
        to = f" of dtype {dtype.name}" if dtype is not None else ""
        raise TypeError(f"cannot convert {_short(value)} to a tensor{to}: {what} data (graphc "
                        "holds float32, float64, int32, int64 and bool data only)")
    return arr


def _to_array(value, dtype):
    """A numpy array of graphc dtype `dtype` (or inferred) from Python or numpy data."""
    if hasattr(value, "__cuda_array_interface__") or hasattr(value, "copy_to_host"):
        from ..kernels.cuda.device import foreign_tensor     # CuPy, numba-cuda: its dtype,
        value = foreign_tensor(value).numpy()                # one copy (not element-wise)
    if isinstance(value, (np.ndarray, np.generic)):
        src = _dt.from_numpy(value.dtype)
        if src is None:
            if dtype is None:
                raise TypeError(f"numpy dtype {value.dtype} is not supported by graphc; cast to "
                                "float32, float64, int32, int64 or bool first")
        if dtype is None:
            return np.array(value, copy=True), src
    arr = _python_array(value, dtype)
    if dtype is None:
        dtype = _python_dtype(arr)
    if dtype.is_integer and arr.dtype.kind == "f" and not np.all(np.mod(arr, 1) == 0):
        raise TypeError(f"cannot convert {value!r} to a tensor of dtype {dtype.name}: it has a "
                        "fractional part")
    if dtype.is_integer and arr.dtype.kind in "iuf":
        info = np.iinfo(dtype.np)
        if arr.size and (arr.max() > info.max or arr.min() < info.min):
            raise ValueError(f"cannot convert {value!r} to {dtype.name}: out of range")
    return np.array(arr, dtype=dtype.np, copy=True), dtype


def constant(value, dtype=None, shape=None, name=None):
    """A tensor holding `value` (Python data, numpy data or a tensor), cast to `dtype` if given.
    `shape` (as in TF): a scalar value is filled to that shape, other values are reshaped
    to it (same number of elements).

    Inside a traced function this is a `constant` node with the value baked in.
    """
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    if type(value) is Tensor or hasattr(value, "_graph_type"):
        t = convert_to_tensor(value)
        t = t if dtype is None or t.dtype is dtype else bind("cast", t, dtype=dtype)
        return t if shape is None else OPS["reshape"](t, shape)
    arr, _ = _to_array(value, dtype)
    if shape is not None:
        arr = _shaped(arr, shape)
    if context.current_graph() is not None:
        return bind("constant", value=arr)
    return Tensor._concrete(arr)


def _shaped(arr, shape):
    try:
        dims = tuple(int(d) for d in ([shape] if isinstance(shape, numbers.Integral) else shape))
    except TypeError:
        raise TypeError(f"constant: shape must be a list of ints, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"constant: shape {list(dims)} has a negative dimension")
    if arr.size == 1:
        return np.full(dims, arr.reshape(()), dtype=arr.dtype)
    if arr.size != int(np.prod(dims, dtype=np.int64)):
        raise TypeError(f"constant: a value of {arr.size} elements (shape {list(arr.shape)}) "
                        f"cannot take shape {list(dims)}: give a scalar or as many elements")
    return arr.reshape(dims)


def convert_to_tensor(value, dtype=None, name=None):
    """`value` as a Tensor. A tensor of another dtype than `dtype` is a TypeError (no casting)."""
    if type(value) is Tensor:
        if dtype is not None and value.dtype is not _dt.as_dtype(dtype):
            raise TypeError(f"tensor of dtype {value.dtype.name} cannot be converted to "
                            f"{_dt.as_dtype(dtype).name}; use gc.cast(x, {_dt.as_dtype(dtype)!r})")
        return value
    to_tensor = getattr(value, "_as_tensor", None)
    if to_tensor is not None:
        return convert_to_tensor(to_tensor(), dtype)
    if isinstance(value, (list, tuple)) and any(_is_tensorish(v) for v in _leaves(value)):
        return bind_stack(value, dtype)
    if hasattr(value, "__cuda_array_interface__") or hasattr(value, "copy_to_host"):  # CuPy, numba-cuda
        from ..kernels.cuda.device import foreign_tensor
        return convert_to_tensor(foreign_tensor(value), dtype)
    return constant(value, dtype)


def _is_tensorish(v):
    return type(v) is Tensor or hasattr(v, "_as_tensor")


def _leaves(value):
    for v in value:
        if isinstance(v, (list, tuple)):
            yield from _leaves(v)
        else:
            yield v


def bind_stack(values, dtype=None):
    """A nested list mixing tensors and numbers, packed into one tensor (as tf.stack would)."""
    parts = [bind_stack(v, dtype) if isinstance(v, (list, tuple)) else v for v in values]
    return OPS["stack"](convert_like(parts, "convert_to_tensor"), axis=0)


def convert_like(values, op_name):
    """Convert op arguments TF-style: data that is not a tensor takes the dtype of the first
    tensor argument (as TF converts Python and numpy data to the dtype the op already has).

    Tensors and variables keep their dtypes (a mismatch is reported by the op's type rule,
    naming both dtypes). With no tensor, the first numpy value's dtype leads, else the first
    Python value's (`add(7.0, 2)` is float32, as in TF). Conversion never changes a value:
    2.5 or np.float64(2.5) with an int tensor, or 2**40 with an int32 one, is a TypeError.
    """
    anchor = None
    for v in values:
        if type(v) is Tensor or hasattr(v, "_as_tensor"):
            anchor = v.dtype
            break
    if anchor is None:
        for v in values:
            if isinstance(v, (np.ndarray, np.generic)):
                anchor = _dt.from_numpy(v.dtype)
                break
    if anchor is None and values and _is_data(values[0]):
        anchor = convert_to_tensor(values[0]).dtype
    out = []
    for v in values:
        if type(v) is Tensor:
            out.append(v)
        elif anchor is not None and _is_data(v):
            try:
                out.append(constant(v, anchor))
            except (TypeError, ValueError) as e:
                what = "numpy value" if isinstance(v, (np.ndarray, np.generic)) else \
                    "Python value"
                raise TypeError(f"{op_name}: cannot use {what} {_short(v)} with a "
                                f"{anchor.name} tensor ({e})") from None
        else:
            out.append(convert_to_tensor(v))
    return out


def _is_data(v):
    """Python numbers and lists, and numpy arrays and scalars of a graphc dtype: data that
    adopts the dtype of the op's tensors (a list holding tensors is packed by stack)."""
    if isinstance(v, (np.ndarray, np.generic)):
        return _dt.from_numpy(v.dtype) is not None
    if isinstance(v, (list, tuple)):
        return not any(_is_tensorish(x) for x in _leaves(v))
    return isinstance(v, numbers.Number)


def is_number(v):
    return isinstance(v, numbers.Number) and not isinstance(v, np.generic)
