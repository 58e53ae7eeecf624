"""gc.Tensor: an immutable value, either concrete (numpy-backed) or symbolic (a graph Value).

A concrete tensor may instead be backed by device memory (a result of a backend="cuda"
function): `_dev` holds the device array and `_np` stays unset until something on the host
reads it; `__getattr__` then copies it once (DEVICE_TO_HOST) and keeps the copy. Metadata
(shape, dtype) never copies. Tensor has that `__getattr__` only in a process that imported
graphc.kernels.cuda.device (see enable_device_values)."""
import numpy as np

from .. import dtypes as _dt
from ..errors import OperatorNotAllowedInGraphError
from . import context
from .types import TensorType

# The public op functions, filled in by graphc.ops once loaded (operators dispatch to them).
OPS = {}
# device array -> host numpy value; set by graphc.kernels.cuda.device when it is imported
DEVICE_TO_HOST = [None]


class Tensor:
    """An immutable tensor. Concrete tensors hold a numpy value; symbolic ones, a graph Value."""

    __slots__ = ("_np", "_sym", "_graph", "_dev", "__weakref__")
    __hash__ = None          # `==` is elementwise, as in TF; key tensors by id() instead

    # -- construction ------------------------------------------------------------------
    @staticmethod
    def _concrete(value):
        t = Tensor.__new__(Tensor)
        t._np = value
        t._sym = None
        t._graph = None
        t._dev = None
        return t

    @staticmethod
    def _on_device(dev):
        """A concrete tensor backed by device array `dev` (host copy made on first read)."""
        t = Tensor.__new__(Tensor)
        t._dev = dev
        t._sym = None
        t._graph = None
        return t

    @staticmethod
    def _symbolic(value, graph):
        t = Tensor.__new__(Tensor)
        t._np = None
        t._sym = value
        t._graph = graph
        t._dev = None
        return t

    def __init__(self, *a, **k):
        raise TypeError("gc.Tensor is not built directly; use gc.constant(value) or "
                        "gc.convert_to_tensor(value)")

    # -- metadata ----------------------------------------------------------------------
    @property
    def is_symbolic(self):
        return self._sym is not None

    @property
    def type(self):
        if self._sym is not None:
            return self._sym.type
        v = self._dev
        if v is None:
            v = self._np
        return TensorType(_dt.from_numpy(v.dtype), v.shape)

    @property
    def shape(self):
        if self._sym is not None:
            return self._sym.type.shape
        v = self._dev
        return (self._np if v is None else v).shape

    @property
    def dtype(self):
        if self._sym is not None:
            return self._sym.type.dtype
        v = self._dev
        return _dt.from_numpy((self._np if v is None else v).dtype)

    @property
    def is_on_device(self):
        """True for a result of a backend="cuda" function (its value is in device memory)."""
        return self._dev is not None

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def name(self):
        return self._sym.name if self._sym is not None else None

    @property
    def graph(self):
        return self._graph

    # -- conversion --------------------------------------------------------------------
    def numpy(self):
        """The value as a numpy array (a copy: tensors are immutable)."""
        if self._np is None:
            raise _not_allowed(self, "`.numpy()`", "return the tensor from the function, or use "
                               "gc.print(t) to see its value on every call")
        v = self._np
        if isinstance(v, np.ndarray):    # a 0-d result is a numpy scalar, as in TF
            return v[()] if v.ndim == 0 else v.copy()
        return v

    def __array__(self, dtype=None, copy=None):
        if self._np is None:
            raise _not_allowed(self, "conversion to a numpy array",
                               "use graphc ops (gc.*) inside compiled functions")
        if copy:    # np.array(t): a copy, never the buffer a compiled read may share
            return np.array(self._np, dtype=dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != self._np.dtype:
            return np.asarray(self._np).astype(dtype)
        a = np.asarray(self._np).view()    # read-only: writing into it would change the tensor
        a.flags.writeable = False
        return a

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy's operators with a tensor (`ndarray + t`, `ndarray < t`) are the tensor's
        own (a Tensor, graphc's dtype rules, symbolic while tracing); numpy's functions on
        concrete tensors (`np.exp(t)`, `np.sum(t)`, `np.isnan(t)`) give numpy results, as
        with TF's eager tensors."""
        names = _BINOPS.get(ufunc.__name__)
        if names is not None and method == "__call__" and len(inputs) == 2 and not kwargs:
            a, b = inputs
            if type(a) is Tensor:
                return getattr(a, f"__{names[0]}__")(b)
            return getattr(b, f"__{names[1]}__")(a)
        if any(type(o) is Tensor for o in kwargs.get("out", ())):
            raise TypeError(f"np.{ufunc.__name__}(..., out=tensor): a gc.Tensor is immutable; "
                            "write into a numpy array (t.numpy()) instead")
        arrays = [np.asarray(x) if type(x) is Tensor else x for x in inputs]
        return getattr(ufunc, method)(*arrays, **kwargs)

    def __bool__(self):
        if self._np is None:
            raise _not_allowed(self, "a Python `bool`",
                               "use gc.cond(pred, true_fn, false_fn), or keep autograph=True "
                               "so `if`/`while` on tensors are converted")
        v = self._np    # as TF's EagerTensor: an empty tensor is False (numpy 2 raises)
        return bool(v.size > 0 and v) if isinstance(v, np.ndarray) else bool(v)

    def __bytes__(self):
        """The raw buffer, as bytes(eager_tensor) in TF (not one byte per element)."""
        if self._np is None:
            raise _not_allowed(self, "`bytes()`", "keep it a tensor inside the function")
        return np.ascontiguousarray(self._np).tobytes()

    # immutable: a copy is the tensor itself, as TF's EagerTensor.__copy__/__deepcopy__
    # (a deepcopy of a symbolic tensor also copied its whole graph)
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        """Pickled by value, as TF's EagerTensor (for multiprocessing and the like; graphc
        itself never unpickles what it reads from disk). A symbolic tensor has no value."""
        if self._np is None:
            raise TypeError(f"cannot pickle symbolic tensor '{self._sym.name}' "
                            f"({self._sym.type}): it has a value only when the graph runs")
        return _from_value, (self._np,)

    def __float__(self):
        if self._np is None:
            raise _not_allowed(self, "a Python `float`", "keep it a tensor inside the function")
        return float(self._np)

    def __int__(self):
        if self._np is None:
            raise _not_allowed(self, "a Python `int`", "keep it a tensor inside the function")
        return int(self._np)

    def __index__(self):
        if self._np is None or not self.dtype.is_integer or self._np.ndim:
            if self._np is None:
                raise _not_allowed(self, "a Python index", "use gc.gather or tensor slicing")
            raise TypeError(f"only scalar integer tensors can be used as an index, "
                            f"got {self.dtype.name}{list(self.shape)}")
        return int(self._np)

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of a scalar tensor")
        if shape[0] is None:
            raise _not_allowed(self, "len() (its first dimension is unknown)", "use gc.shape(t)[0]")
        return shape[0]

    def __iter__(self):
        if self._np is None:
            raise _not_allowed(self, "a Python iterable",
                               "use `for x in t` inside @gc.function with autograph=True, "
                               "or gc.unstack(t) when the first dimension is static")
        if not self.shape:
            raise TypeError("iteration over a scalar tensor")
        if context.recording_tapes():   # rows as getitem ops, so a tape sees them (as TF)
            return (self[i] for i in range(self.shape[0]))
        return (Tensor._concrete(row) for row in self._np)

    def __repr__(self):
        if self._np is None:
            return (f"<gc.Tensor '{self._sym.name}' shape={_shape_str(self.shape)} "
                    f"dtype={self.dtype.name} (symbolic)>")
        return (f"<gc.Tensor: shape={_shape_str(self.shape)}, dtype={self.dtype.name}, "
                f"numpy={np.array2string(np.asarray(self._np), separator=', ')}>")

    def __str__(self):
        return repr(self) if self._np is None else str(np.asarray(self._np))

    def __format__(self, spec):
        """f"{t:.2f}" formats the value, as TF's eager tensors (a 0-d one like a number)."""
        if not spec or self._np is None:
            return format(str(self), spec)
        return format(np.asarray(self._np), spec)

    def __getitem__(self, index):
        return OPS["getitem"](self, index)

    # -- operators ---------------------------------------------------------------------
    # `*` on bools is logical and, `+` / `-` on bools an error (as TF's operators)
    def __add__(self, o): return OPS[_bool_arith("add", "+", self, o)](self, o)
    def __radd__(self, o): return OPS[_bool_arith("add", "+", self, o)](o, self)
    def __sub__(self, o): return OPS[_bool_arith("subtract", "-", self, o)](self, o)
    def __rsub__(self, o): return OPS[_bool_arith("subtract", "-", self, o)](o, self)
    def __mul__(self, o): return OPS[_bool_arith("multiply", "*", self, o)](self, o)
    def __rmul__(self, o): return OPS[_bool_arith("multiply", "*", self, o)](o, self)
    def __truediv__(self, o): return OPS["divide"](self, o)
    def __rtruediv__(self, o): return OPS["divide"](o, self)
    def __floordiv__(self, o): return OPS["floordiv"](self, o)
    def __rfloordiv__(self, o): return OPS["floordiv"](o, self)
    def __mod__(self, o): return OPS["mod"](self, o)
    def __rmod__(self, o): return OPS["mod"](o, self)
    def __pow__(self, o): return OPS["pow"](self, o)
    def __rpow__(self, o): return OPS["pow"](o, self)
    def __matmul__(self, o): return OPS["matmul"](self, o)
    def __rmatmul__(self, o): return OPS["matmul"](o, self)
    def __neg__(self): return OPS["negative"](self)
    def __pos__(self): return self
    def __abs__(self): return OPS["abs"](self)
    # `~ & | ^` are logical on bool tensors and bitwise on integer ones, as in TF
    def __invert__(self): return OPS["logical_not" if _is_bool(self) else "invert"](self)
    def __and__(self, o): return OPS[_logic("and", self)](self, o)
    def __rand__(self, o): return OPS[_logic("and", self)](o, self)
    def __or__(self, o): return OPS[_logic("or", self)](self, o)
    def __ror__(self, o): return OPS[_logic("or", self)](o, self)
    def __xor__(self, o): return OPS[_logic("xor", self)](self, o)
    def __rxor__(self, o): return OPS[_logic("xor", self)](o, self)
    def __lt__(self, o): return OPS["less"](self, o)
    def __le__(self, o): return OPS["less_equal"](self, o)
    def __gt__(self, o): return OPS["greater"](self, o)
    def __ge__(self, o): return OPS["greater_equal"](self, o)
    # as TF: comparing with None is False / True (not an error), elementwise otherwise
    def __eq__(self, o): return False if o is None else _compare("equal", self, o)
    def __ne__(self, o): return True if o is None else _compare("not_equal", self, o)


def _compare(op, x, o):
    """`x == o` / `x != o`: elementwise, except that shapes which cannot broadcast give a
    scalar False / True, as TF's Tensor.__eq__ (tf.equal raises). Only where the static
    shapes decide it: with None dims left open, the op's run-time error stays."""
    try:
        return OPS[op](x, o)
    except ValueError:
        if not _never_broadcast(op, x, o):
            raise
    from .dispatch import constant
    return constant(op == "not_equal")


def _never_broadcast(op, x, o):
    """Whether `o` converts to x's dtype and the static shapes cannot broadcast."""
    from .dispatch import convert_like
    from .ops._rules import broadcast_shapes
    try:
        a, b = convert_like([x, o], op)
    except (TypeError, ValueError):
        return False
    if a.dtype is not b.dtype:
        return False
    try:
        broadcast_shapes(op, a.shape, b.shape)
    except ValueError:
        return True
    return False


# numpy ufunc -> (operator, reflected operator) of Tensor, for `ndarray <op> tensor`
_BINOPS = {
    "add": ("add", "radd"), "subtract": ("sub", "rsub"), "multiply": ("mul", "rmul"),
    "true_divide": ("truediv", "rtruediv"), "divide": ("truediv", "rtruediv"),
    "floor_divide": ("floordiv", "rfloordiv"), "remainder": ("mod", "rmod"),
    "power": ("pow", "rpow"), "matmul": ("matmul", "rmatmul"),
    "bitwise_and": ("and", "rand"), "bitwise_or": ("or", "ror"), "bitwise_xor": ("xor", "rxor"),
    "equal": ("eq", "eq"), "not_equal": ("ne", "ne"), "less": ("lt", "gt"),
    "less_equal": ("le", "ge"), "greater": ("gt", "lt"), "greater_equal": ("ge", "le"),
}


def _is_bool(v):
    if isinstance(v, Tensor):
        return v.dtype is _dt.bool_
    return isinstance(v, (bool, np.bool_)) or (isinstance(v, np.ndarray) and v.dtype == bool)


def _logic(op, t):
    """logical_<op> for a bool tensor (and for float ones, whose dtype error names the
    logical op), bitwise_<op> for an integer one."""
    return f"bitwise_{op}" if t.dtype.is_integer else f"logical_{op}"


def _bool_arith(op, symbol, t, other):
    """The op an arithmetic operator on tensor `t` means: `*` of two bools is logical_and;
    `+` / `-` with a bool tensor is a TypeError naming the operator and the user's line."""
    if not _is_bool(t) and not (isinstance(other, Tensor) and _is_bool(other)):
        return op
    if symbol == "*" and _is_bool(t) and _is_bool(other):
        return "logical_and"
    if symbol == "*":
        return op       # bool times a number: the op's own dtype error
    loc = context.user_location()
    where = f" at {context.format_location(loc)}" if loc else ""
    raise TypeError(
        f"`{symbol}` is not defined on bool tensors{where}. Fix: use `|` (gc.logical_or) "
        f"for 'or', `& ~` for 'and not', or gc.cast(x, gc.int32) to do arithmetic on counts.")


def _shape_str(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _not_allowed(t, what, fix):
    loc = context.user_site()
    where = f" at {context.format_location(loc)}" if loc else ""
    return OperatorNotAllowedInGraphError(
        f"Using symbolic tensor '{t._sym.name}' ({t._sym.type}) as {what} is not allowed while "
        f"tracing{where}: its value exists only when the graph runs. Fix: {fix}.")


def _from_value(value):
    """Unpickling target of a concrete tensor (Tensor.__reduce__): its numpy value."""
    if not isinstance(value, (np.ndarray, np.generic)) or _dt.from_numpy(value.dtype) is None:
        raise TypeError(f"not a graphc tensor value: {type(value).__name__}")
    return Tensor._concrete(value)


def is_tensor(x):
    return type(x) is Tensor


def is_symbolic(x):
    """True for a tensor that only exists inside a graph being traced (AutoGraph dispatches on it)."""
    if type(x) is Tensor:
        return x._sym is not None
    return getattr(x, "_is_symbolic_like", lambda: False)()


def _device_getattr(self, name):
    """Tensor.__getattr__ where device-backed tensors exist: only reached for an unset slot,
    `_np` of a device-backed tensor (copied to the host here, once)."""
    if name == "_np":
        dev = self._dev
        if dev is not None:
            host = DEVICE_TO_HOST[0](dev)
            self._np = host
            return host
    raise AttributeError(f"'Tensor' object has no attribute {name!r}")


def enable_device_values(to_host):
    """From now on tensors may be backed by device arrays, copied to the host by
    `to_host(dev)` on the first host read of `_np` (graphc.kernels.cuda.device calls this
    when it is imported). Only then does Tensor get its `__getattr__`: CPython does not
    specialize attribute loads on a class that has one, so with it every `t._np` costs
    ~45 ns instead of ~11, on every eager op and cached call, device or not."""
    DEVICE_TO_HOST[0] = to_host
    Tensor.__getattr__ = _device_getattr
