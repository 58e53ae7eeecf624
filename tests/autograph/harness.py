"""Differential harness: a function run in plain Python and through @gc.function must give
the same value, dtype and shape, bit for bit (NaN equals NaN, 0.0 and -0.0 differ).

Two ways to call a compiled program: with tensor arguments (numpy arrays and numpy scalars
become tensors) and with Python arguments (numpy scalars become Python numbers, so Python
control flow on them stays Python while tracing; arrays still become tensors).
"""
import contextlib
import signal
import threading

import numpy as np

import graphc as gc

# A compiled program whose loop state is lost (a counter kept in a dict that is not carried)
# can loop forever; `bounded` turns that hang into a failure. Not a timing check: far above
# any program's run time, and only there so that one wrong program cannot stall the suite.
HANG_SECONDS = 10

# Programs whose result may legitimately differ in the last bits between backends, with
# the reason and the tolerance in units in the last place. Everything else is exact.
# (None so far: the corpus sticks to small integers and halves, and to operations that
# IEEE arithmetic rounds the same way everywhere.)
INEXACT = {}


class Fresh:
    """An argument made anew for every run: a mutable object that the program changes, so
    the plain-Python run and each compiled run start from the same state."""

    def __init__(self, make):
        self.make = make

    def __repr__(self):
        return f"Fresh({getattr(self.make, '__name__', self.make)})"


def fresh(args):
    """`args` with every Fresh argument made anew."""
    return tuple(a.make() if isinstance(a, Fresh) else a for a in args)


def to_graph_args(args):
    """numpy arrays and numpy scalars become tensors; Python values stay Python."""
    return [gc.constant(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in args]


def python_args(args):
    """The Python-argument form of an argument set: numpy scalars become Python scalars
    (int, float, bool); arrays and other values are kept. None when nothing changes."""
    out = [a.item() if isinstance(a, np.generic) else a for a in args]
    if not any(isinstance(a, np.generic) for a in args):
        return None
    return tuple(out)


def as_expected(value):
    """A plain-Python result in TF's dtype rules (Python int -> int32, float -> float32)."""
    if isinstance(value, (tuple, list)):
        return type(value)(as_expected(v) for v in value)
    if isinstance(value, dict):
        return {k: as_expected(v) for k, v in value.items()}
    if isinstance(value, gc.Tensor):
        return value.numpy()
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    return gc.constant(value).numpy()


def _same_bits(got, expected):
    """Equal bit patterns, except that any NaN equals any NaN."""
    if got.dtype.kind == "f":
        nan_g, nan_e = np.isnan(got), np.isnan(expected)
        if not np.array_equal(nan_g, nan_e):
            return False
        ints = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
        return np.array_equal(got.view(ints)[~nan_g], expected.view(ints)[~nan_e])
    return np.array_equal(got, expected)


def _within_ulps(got, expected, ulps):
    if got.dtype.kind != "f":
        return np.array_equal(got, expected)
    same_nan = np.array_equal(np.isnan(got), np.isnan(expected))
    spacing = np.abs(np.spacing(expected.astype(got.dtype)))
    ok = np.isnan(expected) | (np.abs(got - expected) <= ulps * spacing)
    return same_nan and bool(np.all(ok))


def assert_same(got, expected, where="", ulps=0):
    """Exact comparison of a compiled result with the plain-Python one (same nest, dtype,
    shape and bits); `ulps` > 0 only for the documented entries of INEXACT."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), \
            f"{where}: structure {got!r} vs {expected!r}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{where}[{i}]", ulps)
        return
    if isinstance(expected, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(expected), \
            f"{where}: structure {got!r} vs {expected!r}"
        for k in expected:
            assert_same(got[k], expected[k], f"{where}[{k!r}]", ulps)
        return
    got = got.numpy() if isinstance(got, gc.Tensor) else np.asarray(got)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, f"{where}: dtype {got.dtype} vs {expected.dtype}"
    assert got.shape == expected.shape, f"{where}: shape {got.shape} vs {expected.shape}"
    ok = _within_ulps(got, expected, ulps) if ulps else _same_bits(got, expected)
    assert ok, f"{where}: values {got!r} vs {expected!r}" + (f" (within {ulps} ulp)" * bool(ulps))


class ProgramHang(AssertionError):
    pass


@contextlib.contextmanager
def bounded(what, seconds=HANG_SECONDS):
    """Fail (rather than hang) when the block runs for more than `seconds`. Works for code
    that returns to the interpreter (the numpy backend); natively compiled loops cannot be
    interrupted, so run a program on the numpy backend first."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum, frame):
        raise ProgramHang(f"{what}: still running after {seconds} s; a converted loop that "
                          "never ends (loop state not carried?)")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def live_ops(graph):
    """The top-level ops of `graph` that its outputs depend on (what actually runs)."""
    producer = {id(v): op for op in graph.operations for v in op.outputs}
    live, todo = {}, [producer.get(id(v)) for v in graph.outputs]
    while todo:
        op = todo.pop()
        if op is None or id(op) in live:
            continue
        live[id(op)] = op
        todo += [producer.get(id(v)) for v in op.inputs]
    return list(live.values())


def tolerance(fn):
    entry = INEXACT.get(fn.__name__)
    return entry[0] if entry else 0


def check(fn, *args, backend="numpy"):
    """Run `fn` both ways on `args` (tensor form) and compare."""
    expected = as_expected(fn(*fresh(args)))
    with bounded(fn.__name__):
        got = gc.function(fn, backend=backend)(*to_graph_args(fresh(args)))
    assert_same(got, expected, fn.__name__, tolerance(fn))
    return got


def marker_line(path, marker):
    """The line number in `path` of the line ending with `# <marker>`."""
    with open(path) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return i
    raise AssertionError(marker)
