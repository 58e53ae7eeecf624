"""Signature keys: how gc.function decides whether a call can reuse an existing trace.

Tensors and numpy arrays key by (dtype, shape); variables by (dtype, shape) too; Python
scalars, strings and None by (type, value), floats by their exact bits; lists, tuples,
dicts (key order ignored) and namedtuples by structure; anything else by identity, weakly.
"""
import struct
import weakref

import numpy as np

from .. import dtypes as _dt
from .tensor import Tensor

TENSOR, RESOURCE, LIST, TUPLE, DICT, NAMED, PY, OBJ = range(8)
_SCALARS = (bool, int, float, str, type(None), complex, bytes)


class TensorSpec:
    """Describes a tensor argument: shape (with None for any size) and dtype."""

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape, dtype=_dt.float32, name=None):
        if shape is None:
            raise ValueError("TensorSpec: shape must be a list (use None for unknown "
                             "dimensions, e.g. [None, 128]); unknown rank is not supported")
        if not isinstance(shape, (list, tuple)):
            raise TypeError(f"TensorSpec: shape must be a list or tuple of dimensions (e.g. "
                            f"[None, 128]), got {shape!r}")
        self.shape = tuple(_spec_dim(d, shape) for d in shape)
        self.dtype = _dt.as_dtype(dtype)
        self.name = name

    @classmethod
    def from_tensor(cls, t, name=None):
        return cls(t.shape, t.dtype, name)

    def is_compatible_with(self, x):
        shape = tuple(x.shape)
        return (_dt.as_dtype(x.dtype) is self.dtype and len(shape) == len(self.shape)
                and all(a is None or a == b for a, b in zip(self.shape, shape)))

    def __eq__(self, other):
        # a spec without a name matches one of that shape and dtype with any name: traces
        # name their specs after the arguments, as TF does, and TensorSpec([2]) still
        # compares equal to the spec of argument 'x'
        return (isinstance(other, TensorSpec) and other.shape == self.shape
                and other.dtype is self.dtype
                and (other.name == self.name or other.name is None or self.name is None))

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        dims = ", ".join("None" if d is None else str(d) for d in self.shape)
        return f"TensorSpec([{dims}], gc.{self.dtype.name}" + (
            f", name={self.name!r})" if self.name else ")")


def _spec_dim(d, shape):
    """One TensorSpec dimension: None (any size) or a non-negative int (as TF's TensorShape)."""
    if d is None:
        return None
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"TensorSpec: dimension {d!r} of shape {list(shape)} must be an int "
                        "or None")
    if d < 0:
        raise ValueError(f"TensorSpec: dimension {d} of shape {list(shape)} is negative; use "
                         "None for a dimension of any size")
    return int(d)


class _FloatBits:
    """A Python float keyed by its bits (`==` would merge 0.0 with -0.0 and never match a
    NaN, retracing it on every call); shown as the float."""

    __slots__ = ("bits", "value")

    def __init__(self, x):
        self.bits = struct.pack("<d", x)
        self.value = x

    def __eq__(self, other):
        return type(other) is _FloatBits and other.bits == self.bits

    def __hash__(self):
        return hash(self.bits)

    def __repr__(self):
        return repr(self.value)


class _IdRef:
    """Identity key for an arbitrary Python object, holding it weakly when possible."""

    __slots__ = ("id", "ref", "type_name", "__weakref__")

    def __init__(self, obj):
        self.id = id(obj)
        self.type_name = type(obj).__name__
        try:
            self.ref = weakref.ref(obj)
        except TypeError:
            self.ref = lambda obj=obj: obj   # not weak-referenceable: keep it alive

    def __hash__(self):
        return self.id

    def __eq__(self, other):
        return type(other) is _IdRef and other.id == self.id and \
            self.ref() is not None and self.ref() is other.ref()

    def __repr__(self):
        return f"<{self.type_name} object at {self.id:#x}>"


def encode(x, leaves, device=False):
    """The cache key of `x`; appends the runtime values it feeds (arrays, variables) to leaves.
    `device` (a backend="cuda" function): a device-backed tensor, or an object with
    `__cuda_array_interface__`, feeds its device array instead of a host copy."""
    tx = type(x)
    if tx is Tensor:
        if x._sym is not None:
            raise TypeError("symbolic tensor passed to a compiled function from outside its "
                            "trace (a leaked tensor); pass concrete values")
        v = x._dev if device and x._dev is not None else x._np
        leaves.append(v)
        return (TENSOR, _dt.from_numpy(v.dtype), v.shape)
    if tx is float:      # by exact bits: 0.0, -0.0 and each NaN get their own trace
        return (PY, float, _FloatBits(x))
    if tx in _SCALARS:
        return (PY, tx, x)
    if tx is np.ndarray or isinstance(x, np.generic):
        d = _dt.from_numpy(x.dtype)
        if d is None:
            raise TypeError(f"numpy dtype {x.dtype} is not supported by graphc")
        leaves.append(np.asarray(x))
        return (TENSOR, d, x.shape)
    if tx is list:
        return (LIST, tuple(encode(v, leaves, device) for v in x))
    if tx is tuple:
        return (TUPLE, tuple(encode(v, leaves, device) for v in x))
    if tx is dict:
        keys = sorted(x, key=_sort_key)
        return (DICT, tuple((k, encode(x[k], leaves, device)) for k in keys))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (NAMED, tx, tuple(encode(v, leaves, device) for v in x))
    if isinstance(x, TensorSpec):
        return (TENSOR, x.dtype, x.shape)
    if hasattr(x, "__cuda_array_interface__") or hasattr(x, "copy_to_host"):   # CuPy, numba-cuda
        from ..kernels.cuda.device import foreign_leaf
        v = foreign_leaf(x, device)
        d = _dt.from_numpy(v.dtype)
        if d is None:
            raise TypeError(f"device array dtype {v.dtype} is not supported by graphc")
        leaves.append(v)
        return (TENSOR, d, tuple(v.shape))
    if hasattr(x, "_graph_type") and hasattr(x, "_resolve_in"):   # gc.Variable
        leaves.append(x)
        return (RESOURCE, x.dtype, x.shape)
    return (OBJ, _IdRef(x))


def _sort_key(k):
    return (type(k).__name__, repr(k))


def matches(general, key):
    """True when `key` fits `general`, whose tensor shapes may hold None dims."""
    if general is key or general == key:
        return True
    tag = general[0]
    if tag != key[0]:
        return False
    if tag == TENSOR or tag == RESOURCE:
        gs, ks = general[2], key[2]
        return (general[1] is key[1] and len(gs) == len(ks)
                and all(g is None or g == k for g, k in zip(gs, ks)))
    if tag in (LIST, TUPLE):
        return len(general[1]) == len(key[1]) and all(map(matches, general[1], key[1]))
    if tag == NAMED:
        return general[1] is key[1] and len(general[2]) == len(key[2]) and \
            all(map(matches, general[2], key[2]))
    if tag == DICT:
        return [k for k, _ in general[1]] == [k for k, _ in key[1]] and \
            all(matches(g, k) for (_, g), (_, k) in zip(general[1], key[1]))
    return False


def generalize(a, b):
    """A key covering both `a` and `b` when they differ only in tensor dims, else None."""
    if a == b:
        return a
    tag = a[0]
    if tag != b[0]:
        return None
    if tag == TENSOR:
        if a[1] is not b[1] or len(a[2]) != len(b[2]):
            return None
        return (TENSOR, a[1], tuple(x if x == y else None for x, y in zip(a[2], b[2])))
    if tag in (LIST, TUPLE):
        if len(a[1]) != len(b[1]):
            return None
        parts = [generalize(x, y) for x, y in zip(a[1], b[1])]
        return None if None in parts else (tag, tuple(parts))
    if tag == NAMED and a[1] is b[1] and len(a[2]) == len(b[2]):
        parts = [generalize(x, y) for x, y in zip(a[2], b[2])]
        return None if None in parts else (NAMED, a[1], tuple(parts))
    if tag == DICT and [k for k, _ in a[1]] == [k for k, _ in b[1]]:
        parts = [generalize(x, y) for (_, x), (_, y) in zip(a[1], b[1])]
        return None if None in parts else (DICT, tuple((k, p) for (k, _), p in zip(a[1], parts)))
    return None


def describe(key):
    """Readable text of one key part: `float32[32,128]`, `int 3`, `<Foo object at 0x…>`."""
    tag = key[0]
    if tag in (TENSOR, RESOURCE):
        dims = ",".join("None" if d is None else str(d) for d in key[2])
        return ("Variable " if tag == RESOURCE else "") + f"{key[1].name}[{dims}]"
    if tag == PY:
        return f"{key[1].__name__} {key[2]!r}"
    if tag in (LIST, TUPLE):
        inner = ", ".join(describe(k) for k in key[1])
        return f"[{inner}]" if tag == LIST else f"({inner})"
    if tag == NAMED:
        return f"{key[1].__name__}(" + ", ".join(describe(k) for k in key[2]) + ")"
    if tag == DICT:
        return "{" + ", ".join(f"{k!r}: {describe(v)}" for k, v in key[1]) + "}"
    return repr(key[1])


def first_difference(old, new, path):
    """(path, old_part, new_part) of the first place two keys differ, or None."""
    if old == new:
        return None
    tag = old[0]
    if tag == new[0]:
        if tag in (LIST, TUPLE) and len(old[1]) == len(new[1]):
            for i, (a, b) in enumerate(zip(old[1], new[1])):
                d = first_difference(a, b, f"{path}[{i}]")
                if d:
                    return d
        if tag == DICT and [k for k, _ in old[1]] == [k for k, _ in new[1]]:
            for (k, a), (_, b) in zip(old[1], new[1]):
                d = first_difference(a, b, f"{path}[{k!r}]")
                if d:
                    return d
    return path, old, new
