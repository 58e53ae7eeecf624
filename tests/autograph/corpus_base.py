"""The differential corpus registry: `case` records a function with its argument sets.

Every function runs in plain Python and through @gc.function; results must match exactly.
Argument sets hold numpy values: the tensor form turns numpy arrays and scalars into
tensors; the Python form (derived, or given with `py=`) passes numpy scalars as Python
numbers, so the same program also runs with Python control flow while tracing.
"""
import numpy as np

from .harness import python_args

CORPUS = []
PY_ARGS = {}   # function -> its explicit Python-argument sets (() for none)


def case(*arg_sets, py=None):
    """Register a corpus program. `py`: explicit Python-argument sets (plain Python values,
    lists included); None derives one from each argument set that has numpy scalars."""
    def deco(fn):
        CORPUS.append((fn, arg_sets))
        if py is not None:
            PY_ARGS[fn] = tuple(py)
        return fn
    return deco


def python_arg_sets(fn, arg_sets):
    """The Python-argument sets of a registered program (explicit, else derived)."""
    if fn in PY_ARGS:
        return PY_ARGS[fn]
    out = []
    for args in arg_sets:
        derived = python_args(args)
        if derived is not None and not any(_same_args(derived, o) for o in out):
            out.append(derived)
    return tuple(out)


def _same_args(a, b):
    return len(a) == len(b) and all(type(x) is type(y) and (
        x is y or (not isinstance(x, np.ndarray) and x == y)) for x, y in zip(a, b))


f32 = np.float32
i32 = np.int32
V3 = np.array([1.5, -2.0, 3.0], np.float32)
V5 = np.array([0.5, 2.0, -1.0, 4.0, -3.0], np.float32)
M23 = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], np.float32)
I4 = np.array([3, -1, 4, -5], np.int32)
