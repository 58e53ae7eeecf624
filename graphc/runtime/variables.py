"""gc.Variable: mutable state that compiled functions read and write by reference.

Threads: each variable has a reentrant lock. Every rule below takes it, so one eager read
or update is one step; a compiled call holds the locks of all the variables its graph
touches for its whole run (ConcreteFunction), so its reads and updates are one step
relative to other threads. Locks are always taken in creation order: no deadlock.

Device copies (backend="cuda"): while a cuda function owns a variable, its value lives in
`_dev` and `_value` is absent from the instance; the first host read of `_value` (eager
ops, .numpy(), checkpoints, a CPU function) copies it back (`__getattr__`, the one place)
and drops the device copy, and any host write sets `_value` again: the host copy is then
the live one and the next cuda call uploads it. So host and device never disagree.
"""
import itertools
import sys
import threading

import numpy as np

from .. import dtypes as _dt
from ..errors import AssignDtypeError, InvalidArgumentError
from . import context
from .dispatch import bind, constant, resolve
from .registry import register, STATE
from .tensor import Tensor
from .types import ResourceType, TensorType


def _read_infer(types):
    r = types[0]
    return [TensorType(r.dtype, r.shape)]


def _assign_infer(name):
    def infer(types):
        r, v = types
        if r.kind != "resource":
            raise TypeError(f"{name}: first input must be a variable")
        if v.dtype is not r.dtype:
            raise AssignDtypeError(f"{name}: variable has dtype {r.dtype.name} but the value "
                                   f"has {v.dtype.name}; use gc.cast(value, "
                                   f"gc.{r.dtype.name})")
        if len(v.shape) != len(r.shape) or any(
                a is not None and b is not None and a != b for a, b in zip(v.shape, r.shape)):
            raise ValueError(f"{name}: variable has shape {list(r.shape)} but the value has "
                             f"shape {list(v.shape)}")
        return []
    return infer


def _check_shape(op, var, value):
    """A Variable's shape never changes: a value of another shape (possible when the trace
    had a None dim) is an error, never reshaped or broadcast into it (as TF)."""
    if np.shape(value) != var.shape:
        raise InvalidArgumentError(
            f"{op}: variable '{var._name}' has shape {list(var.shape)} but the value "
            f"has shape {list(np.shape(value))}; a Variable's shape never changes. Fix: give "
            "a value of the variable's shape, or make a new gc.Variable for the new shape.")


def _assign(var, value):
    _check_shape("assign", var, value)
    new = np.array(value, dtype=var._value.dtype, copy=True)
    with var._lock:
        var._value = new


def _read(var):
    with var._lock:     # never a buffer that an in-place update is half way through
        return var._value


# The variable's array is updated in place only when nothing else refers to it: no tensor
# returned by an earlier read, no interpreter slot still holding one. Anything else gets a
# fresh array (copy on write), so values read before an assign never change.
_SOLE_OWNER_REFS = sys.getrefcount(np.zeros(1)) + 2   # argument + var._value + local name


def _update(var, value, ufunc, op):
    _check_shape(op, var, value)
    with var._lock:     # no other thread takes a reference between the check and the write
        a = var._value
        if (sys.getrefcount(a) <= _SOLE_OWNER_REFS and type(a) is np.ndarray
                and a.flags.writeable and a.flags.owndata):
            ufunc(a, value, out=a, casting="unsafe")
        else:
            var._value = ufunc(a, value).astype(a.dtype, copy=False)


def owned_value(var):
    """The variable's array, safe to write in place: its own when nothing else refers to it
    and it is a writable C-ordered array, else a private copy put in its place. The caller
    holds `var._lock` (a compiled call holds it for its run)."""
    a = var._value
    if not (sys.getrefcount(a) <= _SOLE_OWNER_REFS and type(a) is np.ndarray
            and a.flags.writeable and a.flags.owndata and a.flags.c_contiguous):
        a = var._value = np.array(a, order="C", copy=True)
    return a


def _assign_add(var, value):
    _update(var, value, np.add, "assign_add")


def _assign_sub(var, value):
    _update(var, value, np.subtract, "assign_sub")


register("read_variable", _read_infer, _read, kind=STATE, effectful=True)
register("assign_variable", _assign_infer("assign"), _assign, kind=STATE, effectful=True,
         nondiff=True)
register("assign_add_variable", _assign_infer("assign_add"), _assign_add, kind=STATE,
         effectful=True, nondiff=True)
register("assign_sub_variable", _assign_infer("assign_sub"), _assign_sub, kind=STATE,
         effectful=True, nondiff=True)

# variable -> None: copies its device value back into `_value` (kernels.cuda.device sets it)
DEVICE_SYNC = [None]


def _device_getattr(self, name):
    """Variable.__getattr__ where device copies exist: only reached when `_value` is absent,
    a cuda function holds the live value on the device; copied back under the lock."""
    if name == "_value" and "_lock" in self.__dict__:
        with self._lock:
            if "_value" not in self.__dict__:
                DEVICE_SYNC[0](self)
            return self.__dict__["_value"]
    if name == "_dev":
        return None
    raise AttributeError(f"'Variable' object has no attribute {name!r}")


def enable_device_values(sync):
    """From now on a variable's live value may be on a device; `sync(var)` copies it back
    (graphc.kernels.cuda.device calls this when it is imported). As for Tensor, only then
    does Variable get its `__getattr__`, which slows every attribute load of a variable."""
    DEVICE_SYNC[0] = sync
    Variable.__getattr__ = _device_getattr

_scope_tls = threading.local()       # .stack: Module.name_scope prefixes, innermost last


def _name_scopes():
    s = getattr(_scope_tls, "stack", None)
    if s is None:
        s = _scope_tls.stack = []
    return s


_numbers = itertools.count(1)     # next() is atomic: unique numbers across threads


class Variable:
    """A mutable tensor. Inside compiled functions, reads and assigns act on the live value."""

    def __init__(self, initial_value, dtype=None, trainable=True, name=None):
        if callable(initial_value):
            with context.eager_scope():
                initial_value = initial_value()
        value = _concrete_initial_value(initial_value, dtype)
        self._value = value
        self._lock = threading.RLock()
        self._number = next(_numbers)     # creation order: the order locks are taken in
        self.trainable = bool(trainable)
        scopes = getattr(_scope_tls, "stack", None)
        self._given_name = (scopes[-1] if scopes else "") + (name or "Variable")  # TF's .name
        self._name = name or f"Variable_{self._number}"   # unique, for messages
        for hook in context.creation_hooks():     # this thread's traces under way
            hook(self)

    def __copy__(self):
        return self         # TF: copy.copy of a variable is the variable itself

    def __deepcopy__(self, memo):
        """A new variable with a copy of the value, this one's name and trainability (TF's
        deepcopy; a gc.Module deep-copied gets new variables this way). Eager only, as TF."""
        if context.current_graph() is not None:     # TF 2.21 raises NotImplementedError too
            raise NotImplementedError(
                f"copy.deepcopy of Variable '{self._name}' while tracing: __deepcopy__() is "
                "only available eagerly (as in TF); copy it outside the compiled function")
        new = Variable(np.array(self.numpy()), dtype=self.dtype, trainable=self.trainable)
        new._given_name = self._given_name
        if self._name != f"Variable_{self._number}":
            new._name = self._name          # a name the user gave stays in messages
        memo[id(self)] = new
        return new

    def _meta(self):
        """The live array (host or device) for its dtype and shape, without copying."""
        v = self.__dict__.get("_value")
        if v is None:
            v = self._dev
            if v is None:           # a host read synced it back meanwhile
                v = self._value
        return v

    # -- metadata ----------------------------------------------------------------------
    @property
    def name(self):
        """TF's variable name: the given name (else "Variable") with TF's ":0" suffix."""
        return f"{self._given_name}:0"

    @property
    def dtype(self):
        return _dt.from_numpy(self._meta().dtype)

    @property
    def shape(self):
        return self._meta().shape

    @property
    def ndim(self):
        return len(self._meta().shape)

    def _graph_type(self):
        return ResourceType(self.dtype, self.shape)

    def _resolve_in(self, g):
        if g.parent is not None:
            outer = resolve(g.parent, self)
            return g.add_capture(outer, outer.type, base=outer.name.split(".")[0])
        arg = g.resource_args.get(id(self)) if hasattr(g, "resource_args") else None
        return arg if arg is not None else g.add_capture(self, self._graph_type(), base="var")

    # -- reading and writing ---------------------------------------------------------
    def read_value(self):
        """The current value as a tensor (a `read_variable` node while tracing)."""
        return bind("read_variable", self)

    _as_tensor = read_value
    value = read_value

    def numpy(self):
        if context.current_graph() is not None:
            raise TypeError(f"Variable '{self._name}'.numpy() while tracing would bake in the "
                            "value at trace time; use the variable itself (it is read on "
                            "every call)")
        with self._lock:     # a 0-d value is a numpy scalar, as Tensor.numpy() and TF give
            v = self._value
            return v[()] if v.ndim == 0 else v.copy()

    def _rhs(self, value):
        if type(value) is Tensor:
            return value
        return constant(value, self.dtype)

    # Each returns the variable (so calls chain and the result reads the new value), or
    # None with read_value=False, as TF's.
    def assign(self, value, read_value=True):
        bind("assign_variable", self, self._rhs(value))
        return self if read_value else None

    def assign_add(self, delta, read_value=True):
        bind("assign_add_variable", self, self._rhs(delta))
        return self if read_value else None

    def assign_sub(self, delta, read_value=True):
        bind("assign_sub_variable", self, self._rhs(delta))
        return self if read_value else None

    def __repr__(self):
        if context.current_graph() is not None:
            return f"<gc.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"
        return (f"<gc.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={np.array2string(self.numpy(), separator=', ')}>")

    def __array__(self, dtype=None, copy=None):
        with self._lock:
            a = self._value
            if copy:        # np.array(v): a copy, never the variable's own buffer
                return np.array(a, dtype=dtype, copy=True)
        return np.asarray(a if dtype is None else a.astype(dtype))

    def __bool__(self):
        return bool(self.read_value())

    def __float__(self):
        return float(self.read_value())

    def __int__(self):
        return int(self.read_value())

    def __index__(self):
        return self.read_value().__index__()

    def __len__(self):
        shape = self._meta().shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    def __getitem__(self, index):
        return self.read_value()[index]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """As a Tensor's, on the variable's current value: numpy's operators with it are
        graphc ops (`ndarray + v` is a Tensor), numpy's functions (`np.exp(v)`, `np.max(v)`,
        `np.isnan(v)`) give numpy results, as with TF variables."""
        if any(isinstance(o, Variable) for o in kwargs.get("out", ())):
            raise TypeError(f"np.{ufunc.__name__}(..., out=variable): numpy cannot write into "
                            "a gc.Variable; compute the value and use v.assign(value)")
        inputs = tuple(x.read_value() if isinstance(x, Variable) else x for x in inputs)
        value = next(x for x in inputs if type(x) is Tensor)
        return value.__array_ufunc__(ufunc, method, *inputs, **kwargs)

    __hash__ = object.__hash__


def _delegate(name):
    def method(self, *args):
        return getattr(self.read_value(), name)(*args)
    method.__name__ = name
    return method


for _op in ["add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
            "rfloordiv", "mod", "rmod", "pow", "rpow", "matmul", "rmatmul", "neg", "pos",
            "abs", "invert", "and", "rand", "or", "ror", "lt", "le", "gt", "ge", "eq", "ne"]:
    setattr(Variable, f"__{_op}__", _delegate(f"__{_op}__"))


def _no_inplace(op, fix):
    def method(self, other):
        # Python would fall back to `v = v + x`: a Tensor bound to the name, the variable
        # unchanged -- silently not the update the user meant. TF raises the same.
        raise RuntimeError(f"`variable {op} value` with gc.Variable is not supported. Use "
                           f"`{fix}` to modify the variable, or `out = variable "
                           f"{op[:-1]} value` for a new tensor.")
    method.__name__ = f"__i{_INPLACE[op]}__"
    return method


_INPLACE = {"+=": "add", "-=": "sub", "*=": "mul", "/=": "truediv", "**=": "pow"}
for _sym, _fix in (("+=", "variable.assign_add(value)"), ("-=", "variable.assign_sub(value)"),
                   ("*=", "variable.assign(variable * value)"),
                   ("/=", "variable.assign(variable / value)"),
                   ("**=", "variable.assign(variable ** value)")):
    setattr(Variable, f"__i{_INPLACE[_sym]}__", _no_inplace(_sym, _fix))


def _concrete_initial_value(initial_value, dtype):
    """The variable's starting value as a fresh numpy array, even when made while tracing."""
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    v = initial_value
    if isinstance(v, Variable):
        v = _read(v)
    if type(v) is Tensor and v.is_symbolic:
        v = _evaluate_symbolic(v)
    if type(v) is Tensor:
        v = v._np
    with context.eager_scope():
        t = constant(v, dtype)
    return np.array(t._np, copy=True)


def _evaluate_symbolic(t):
    """Run the part of the graph that computes `t`, feeding the function inputs it reads
    with the values of the call being traced (unknown for get_concrete_function's specs)."""
    from .executor import run_graph
    from .graph import Graph
    g = t._graph
    needed, stack = {id(t._sym)}, [t._sym]
    producers = {id(o): op for op in g.operations for o in op.outputs}
    captured = {id(v): src for v, src in g.captures if g.parent is None}
    given = getattr(g, "input_values", None) or {}    # the traced call's own arguments (TF
    order, feeds = [], []                                # initializes from the first call's)
    while stack:
        v = stack.pop()
        op = producers.get(id(v))
        if op is None and id(v) in captured:
            feeds.append((v, captured[id(v)]))
            continue
        if op is None and id(v) in given:
            feeds.append((v, given[id(v)]))
            continue
        if op is None:
            raise ValueError(
                f"a gc.Variable's initial value depends on '{v.name}', an input of the traced "
                "function whose value is not known here (a TensorSpec given to "
                "get_concrete_function, or a value inside a graph loop or branch). Create the "
                "variable on a call with real arguments, or from a constant or numpy array.")
        order.append(op)
        for i in op.inputs:
            if id(i) not in needed:
                needed.add(id(i))
                stack.append(i)
    sub = Graph("initializer")
    keep = {id(op) for op in order}
    sub.inputs = [v for v, _ in feeds]
    sub.operations = [op for op in g.operations if id(op) in keep]
    sub.outputs = [t._sym]
    args = [src._np if type(src) is Tensor else
            src if isinstance(src, Variable) else np.asarray(src) for _, src in feeds]
    return Tensor._concrete(run_graph(sub, args)[0])
