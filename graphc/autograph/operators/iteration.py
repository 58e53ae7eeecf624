"""What a converted `for` can iterate as a graph loop, and the builtins that compose them.

`graph_iteration(x)` describes how a graph loop walks `x` (a counter from `start` to
`limit` by `delta`, and `item(i)`), or gives None for a Python iterable (the loop is then
unrolled in Python). Graph-iterable are: `gc.range` / `range` with a tensor bound (a
LazyRange), a symbolic tensor's first axis, a traced TensorArray, and `enumerate`, `zip`
and `reversed` of those (ag__.call routes the builtins here while tracing).
"""
import builtins

from ... import dtypes as _dt
from ...runtime import context
from ...runtime.dispatch import bind, convert_to_tensor
from ...runtime.tensor import Tensor, OPS, is_symbolic
from .state import where
from .undefined import forward_to_tensor


class Iteration:
    """How a graph loop walks its iterable: counter start/limit/delta and item(i)."""

    def __init__(self, start, limit, delta, item, dtype):
        self.start, self.limit, self.delta, self.item = start, limit, delta, item
        self.dtype = dtype


def graph_iteration(iterable):
    """An Iteration for a graph-iterable value while tracing, else None."""
    if context.current_graph() is None:
        return None
    if isinstance(iterable, LazyRange):
        if iterable.is_float():
            # iterate the very elements gc.range gives (no accumulated rounding)
            return graph_iteration(iterable._as_tensor())
        _check_step(iterable.delta)
        return Iteration(iterable.start, iterable.limit, iterable.delta, lambda i: i,
                         iterable.counter_dtype())
    if isinstance(iterable, _Composed):
        n, item = iterable.indexed()
        return Iteration(0, n, 1, item, _dt.int32)
    if type(iterable) is Tensor and iterable.is_symbolic:
        return Iteration(0, _length(iterable), 1, lambda i: iterable[i], _dt.int32)
    if hasattr(iterable, "_to_flow") and is_symbolic(iterable):
        return Iteration(0, iterable.size(), 1, iterable.read, _dt.int32)
    return None


def _check_step(delta):
    """A range step known only when the graph runs: an `assert` op that it is not zero.
    Python's range raises ValueError for a zero step; the counter loop would instead run
    zero times and return the initial state."""
    if is_symbolic(delta):
        d = convert_to_tensor(delta)
        bind("assert", bind("not_equal", d, convert_to_tensor(0, d.dtype)),
             message="range() arg 3 must not be zero: the step of the range this `for` "
                     "iterates is 0 (Python raises ValueError)")


def _length(t):
    if not t.shape:
        raise TypeError(f"cannot iterate over a scalar tensor (at {where()})")
    n = t.shape[0]
    return OPS["shape"](t)[0] if n is None else n


def _indexed(x):
    """(length, item(j)) of a graph-iterable value, for j counting 0, 1, ... length-1."""
    if isinstance(x, _Composed):
        return x.indexed()
    if isinstance(x, LazyRange) and not x.is_float():
        start, delta, dtype = x.start, x.delta, x.counter_dtype()
        _check_step(delta)
        n = _range_length(start, x.limit, delta, dtype)
        if dtype is not _dt.int32:
            n = OPS["cast"](convert_to_tensor(n), _dt.int32)
        return n, lambda j: _add(start, _mul(j if dtype is _dt.int32 else OPS["cast"](j, dtype),
                                             delta))
    if isinstance(x, LazyRange):
        x = x._as_tensor()
    if type(x) is Tensor:
        return _length(x), lambda j: x[j]
    return x.size(), x.read                       # a TensorArray


def _range_length(start, limit, delta, dtype):
    """len(range(start, limit, delta)) for int bounds that may be tensors."""
    if all(isinstance(v, int) for v in (start, limit, delta)):
        return len(builtins.range(start, limit, delta))
    s, l_, d = (convert_to_tensor(v, dtype) if not isinstance(v, Tensor) else v
                for v in (start, limit, delta))
    span = bind("subtract", l_, s)
    q = bind("floordiv", span, d)
    r = bind("subtract", span, bind("multiply", q, d))
    n = bind("add", q, OPS["cast"](bind("not_equal", r, convert_to_tensor(0, dtype)), dtype))
    return bind("maximum", n, convert_to_tensor(0, dtype))


def _add(a, b):
    return b if isinstance(a, int) and a == 0 else a + b


def _mul(j, d):
    return j if isinstance(d, int) and d == 1 else j * d


def _min_length(lengths):
    out = lengths[0]
    for n in lengths[1:]:
        if isinstance(out, int) and isinstance(n, int):
            out = min(out, n)
        else:
            out = bind("minimum", convert_to_tensor(out, _dt.int32),
                       convert_to_tensor(n, _dt.int32))
    return out


def _is_graph_iterable(x):
    return context.current_graph() is not None and (
        isinstance(x, (LazyRange, _Composed)) or (type(x) is Tensor and x.is_symbolic) or
        (hasattr(x, "_to_flow") and is_symbolic(x)))


class _Composed:
    """enumerate / zip / reversed over graph-iterables, before a `for` turns it into a
    counter loop. Iterated in Python (outside a `for`), it behaves as the builtin would."""

    def __iter__(self):
        return iter(self.python())


class _Enumerate(_Composed):
    def __init__(self, iterable, start):
        self.iterable, self.start = iterable, start

    def indexed(self):
        n, item = _indexed(self.iterable)
        start = self.start
        return n, lambda j: (_add(start, j), item(j))

    def python(self):
        return builtins.enumerate(self.iterable, self.start)


class _Zip(_Composed):
    def __init__(self, iterables):
        self.iterables = iterables

    def indexed(self):
        parts = [_indexed(x) for x in self.iterables]
        return _min_length([n for n, _ in parts]), lambda j: tuple(it(j) for _, it in parts)

    def python(self):
        return builtins.zip(*self.iterables)


class _Reversed(_Composed):
    def __init__(self, iterable):
        self.iterable = iterable

    def indexed(self):
        n, item = _indexed(self.iterable)
        return n, lambda j: item(n - 1 - j)

    def python(self):
        x = self.iterable
        return builtins.reversed(x._as_tensor() if isinstance(x, LazyRange) else x)


def enumerate_(iterable, start=0):
    if _is_graph_iterable(iterable):
        return _Enumerate(iterable, start)
    return builtins.enumerate(iterable, start)


def zip_(*iterables, **kwargs):
    if iterables and not kwargs and any(_is_graph_iterable(x) for x in iterables):
        # a Python sequence beside a graph-iterable walks the same counter, as a constant
        return _Zip(tuple(x if _is_graph_iterable(x) else _as_sequence_tensor(x)
                          for x in iterables))
    return builtins.zip(*iterables, **kwargs)


def _as_sequence_tensor(x):
    import numpy as np
    if isinstance(x, builtins.range):
        return LazyRange(x.start, x.stop, x.step)
    if isinstance(x, (list, tuple, np.ndarray, Tensor)):
        try:
            t = convert_to_tensor(x)
        except (TypeError, ValueError):
            t = None
        if t is not None and t.shape:
            return t
    raise TypeError(
        f"zip() at {where()} pairs a tensor-driven iterable with a Python "
        f"{type(x).__name__}: the loop runs in the graph, so every other iterable must be a "
        "tensor, a TensorArray, a range, or a list/array of numbers (made into a constant). "
        "Convert it with gc.constant(...), or loop over a Python range instead.")


def reversed_(seq):
    if _is_graph_iterable(seq):
        return _Reversed(seq)
    return builtins.reversed(seq)


class LazyRange:
    """`range(...)` / `gc.range(...)` with tensor bounds while tracing, before a `for` turns
    it into a counter. Used as a value anywhere else, it becomes the `gc.range` tensor."""

    def __init__(self, start, limit, delta, dtype=None):
        self.start, self.limit, self.delta, self.dtype = start, limit, delta, dtype

    def counter_dtype(self):
        if self.dtype is not None:
            return _dt.as_dtype(self.dtype)
        for v in (self.start, self.limit, self.delta):
            if type(v) is Tensor:
                return v.dtype
        if any(isinstance(v, float) for v in (self.start, self.limit, self.delta)):
            return _dt.float32
        return _dt.int32

    def is_float(self):
        return self.counter_dtype().is_floating

    def _as_tensor(self):
        from ...runtime.ops.creation import range as gc_range
        return gc_range(self.start, self.limit, self.delta, dtype=self.dtype)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._as_tensor(), name)

    def __iter__(self):
        return iter(self._as_tensor())

    def __len__(self):
        return len(self._as_tensor())


forward_to_tensor(LazyRange, (
    "add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
    "rfloordiv", "mod", "rmod", "pow", "rpow", "neg", "abs", "lt", "le", "gt", "ge", "eq",
    "ne", "getitem", "bool", "array"))
