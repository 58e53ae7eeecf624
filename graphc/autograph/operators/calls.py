"""Function calls in converted code: user functions are converted (once), the rest run as is."""
import builtins
import random as _random

from ...runtime import context
from ...runtime.tensor import Tensor, OPS, is_symbolic
from . import lint
from .iteration import LazyRange, enumerate_, reversed_, zip_



def call(f, *args, **kwargs):
    """`f(*args, **kwargs)` from converted code."""
    special = _BUILTINS.get(id(f))
    if special is not None and special[0] is f:
        return special[1](*args, **kwargs)
    if lint.tracing():
        _lint_call(f, args, kwargs)
    from ..conversion import converted_callable
    return converted_callable(f)(*args, **kwargs)


def call_initial_value(f, *args, **kwargs):
    """call() for a call in a Variable constructor's arguments: it computes the variable's
    initial value, once by design, so running only while tracing is not flagged there
    (np.random, random, time); numpy on a tensor still is."""
    special = _BUILTINS.get(id(f))
    if special is not None and special[0] is f:
        return special[1](*args, **kwargs)
    if lint.tracing():
        _lint_call(f, args, kwargs, initial_value=True)
    from ..conversion import converted_callable
    return converted_callable(f)(*args, **kwargs)


def _any_symbolic(args, kwargs):
    return any(is_symbolic(a) for a in args) or any(is_symbolic(v) for v in kwargs.values())


# -- builtins with tensor-aware behaviour ------------------------------------------------

def print_(*args, **kwargs):
    """Python's print: it runs only while tracing (gc.print runs on every call)."""
    formatted = any(isinstance(a, str) and "(symbolic)>" in a for a in args)  # f"{tensor}"
    if lint.tracing() and (_any_symbolic(args, kwargs) or formatted):
        lint.warn_once("print", "print() of a tensor runs only while tracing and shows a "
                       "symbolic tensor, not its value; use gc.print(...) to print values on "
                       "every call")
    return builtins.print(*args, **kwargs)


def range_(*args):
    """`range(...)`: with a symbolic bound, a lazy range a `for` turns into a counter loop."""
    if any(is_symbolic(a) for a in args):
        start, limit, delta = (0, args[0], 1) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) > 2 else 1)
        if not is_symbolic(delta) and delta == 0:
            raise ValueError("range() arg 3 must not be zero")   # as Python, at once
        return LazyRange(start, limit, delta)
    return builtins.range(*args)


def len_(value):
    """`len(x)`: the static first dimension, or a scalar tensor when it is only known at run
    time (a symbolic tensor with unknown first dim, a traced TensorArray)."""
    if type(value) is Tensor and value.is_symbolic and value.shape and value.shape[0] is None:
        return OPS["shape"](value)[0]
    if hasattr(value, "_to_flow") and is_symbolic(value):
        return value.size()
    return builtins.len(value)


def int_(*args, **kwargs):
    """`int(x)`: of a symbolic scalar tensor, that value as an int32 tensor (TF's AutoGraph
    casts too). Python's int() truncates toward zero as the cast does; a value the int32
    result cannot hold (and NaN/inf, where Python raises) fails an `assert` op when the
    graph runs rather than wrapping silently."""
    if len(args) != 1 or kwargs or type(args[0]) is not Tensor or not args[0].is_symbolic \
            or args[0].shape != ():
        return builtins.int(*args, **kwargs)
    from ... import dtypes as _dt
    from ...runtime.dispatch import bind, convert_to_tensor
    x = args[0]
    if x.dtype is _dt.int32:
        return x
    if x.dtype is not _dt.bool_:
        # x > -2**31 - 1 for float64 (-2**31 - 0.5 truncates into range); float32 cannot
        # hold that bound, and ints need x >= -2**31 (-2**31 itself fits)
        above = ("greater", -2.0 ** 31 - 1.0) if x.dtype is _dt.float64 else \
            ("greater_equal", -2 ** 31)
        fits = bind("logical_and",
                    bind(above[0], x, convert_to_tensor(above[1], x.dtype)),
                    bind("less", x, convert_to_tensor(2 ** 31, x.dtype)))
        bind("assert", fits, message=(
            f"int() of a {x.dtype.name} tensor whose value is NaN, infinite or outside the "
            "int32 range: inside a compiled function int(tensor) is an int32 tensor (as in "
            "TF), which cannot hold it (Python gives an int or raises)"))
    return OPS["cast"](x, _dt.int32)


def float_(*args, **kwargs):
    """`float(x)`: of a symbolic scalar tensor, that value as a float tensor, as TF's AutoGraph
    (py_builtins.float_ casts to float32): ints and bools become float32 (as a Python float
    does where it meets a float32 tensor), a float32 tensor is itself. A float64 tensor stays
    float64 (TF rounds it to float32, where eager's Python float keeps every bit, and then
    cannot mix it with float64 tensors). Other values: Python's float()."""
    if len(args) != 1 or kwargs or type(args[0]) is not Tensor or not args[0].is_symbolic \
            or args[0].shape != ():
        return builtins.float(*args, **kwargs)
    from ... import dtypes as _dt
    x = args[0]
    return x if x.dtype.is_floating else OPS["cast"](x, _dt.float32)


def gc_range_(start, limit=None, delta=1, dtype=None, name="range"):
    """`gc.range(...)`: while tracing, a lazy range, so `for i in gc.range(n)` counts with
    a loop counter instead of materializing the whole range tensor first."""
    if not lint.tracing() or (type(delta) in (int, float) and delta == 0):
        # eager, or an error to raise now (at the user's line), not when the range is used
        return _gc_ranges()[0](start, limit, delta, dtype=dtype, name=name)
    if limit is None:
        start, limit = 0, start
    return LazyRange(start, limit, delta, dtype)


def _gc_ranges():
    """gc.range as published (wrapped by located_errors) and as defined."""
    from ...runtime.ops import PUBLIC
    return PUBLIC["range"], PUBLIC["range"].__wrapped__


_BUILTINS = {id(f): (f, impl) for f, impl in
             ((builtins.print, print_), (builtins.range, range_), (builtins.len, len_),
              (builtins.int, int_), (builtins.float, float_),
              (builtins.enumerate, enumerate_), (builtins.zip, zip_),
              (builtins.reversed, reversed_)) + tuple((r, gc_range_) for r in _gc_ranges())}


# -- lint of calls that run only at trace time -------------------------------------------

def _lint_call(f, args, kwargs, initial_value=False):
    module = getattr(f, "__module__", None) or ""
    owner = getattr(f, "__self__", None)
    name = getattr(f, "__name__", "function")
    if type(f).__name__ == "ufunc" or module == "numpy" or module.startswith("numpy."):
        if _any_symbolic(args, kwargs):
            lint.warn_once("numpy", f"np.{name}() on a tensor runs only while tracing and "
                           "cannot see the tensor's value; use the graphc op (gc.*) instead")
        elif initial_value:
            return
        elif module.startswith("numpy.random") or type(owner).__module__.startswith(
                "numpy.random"):
            lint.warn_once("numpy", f"np.random.{name}() runs only while tracing: its result "
                           "is baked into the graph as a constant; use gc.random.* to draw "
                           "fresh numbers on every call")
    elif initial_value:
        return
    elif module == "random" or isinstance(owner, _random.Random):
        lint.warn_once("random", f"random.{name}() runs only while tracing: its result is "
                       "baked into the graph as a constant; use gc.random.* to draw fresh "
                       "numbers on every call")
    elif module == "time":
        lint.warn_once("time", f"time.{name}() runs only while tracing: its value is baked "
                       "into the graph as a constant")
