"""graphc dtypes: five value types, each a thin wrapper around a numpy dtype."""
import numpy as np


class DType:
    """A tensor element type. Compare with `==` against another DType, a numpy dtype or a name."""

    __slots__ = ("name", "np", "is_floating", "is_integer", "is_bool")

    def __init__(self, name):
        self.name = name
        self.np = np.dtype(name)
        self.is_floating = self.np.kind == "f"
        self.is_integer = self.np.kind in "iu"
        self.is_bool = self.np.kind == "b"

    @property
    def as_numpy_dtype(self):
        return self.np.type

    # TF's DType attributes
    @property
    def size(self):
        """Bytes per element."""
        return self.np.itemsize

    @property
    def min(self):
        """The lowest value of the type (TF: -max of a float type, False for bool)."""
        if self.is_bool:
            return False
        info = np.finfo(self.np) if self.is_floating else np.iinfo(self.np)
        return self.np.type(info.min)

    @property
    def max(self):
        """The highest finite value of the type (True for bool)."""
        if self.is_bool:
            return True
        info = np.finfo(self.np) if self.is_floating else np.iinfo(self.np)
        return self.np.type(info.max)

    @property
    def limits(self):
        return (self.min, self.max)

    @property
    def base_dtype(self):
        return self

    is_unsigned = False
    is_complex = False

    def __repr__(self):
        return f"gc.{self.name}"

    def __str__(self):
        return self.name

    def __eq__(self, other):
        if isinstance(other, DType):
            return other is self
        try:
            return as_dtype(other) is self
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.name)

    def __reduce__(self):
        return (as_dtype, (self.name,))


float32 = DType("float32")
float64 = DType("float64")
int32 = DType("int32")
int64 = DType("int64")
bool_ = DType("bool")

_BY_NAME = {d.name: d for d in (float32, float64, int32, int64, bool_)}
_BY_NP = {d.np: d for d in _BY_NAME.values()}
# TF's as_dtype('float') is float32 (numpy's is float64); 'int' follows Python int -> int32
# (TF raises): the same dtype as as_dtype(float) / as_dtype(int)
_ALIASES = {"float": float32, "int": int32}


def as_dtype(x):
    """Return the graphc dtype for a gc dtype, numpy dtype/scalar type, or name."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x]
    if isinstance(x, str) and x in _ALIASES:     # before numpy, whose 'float' is float64
        return _ALIASES[x]
    if x is bool:
        return bool_
    if x is float:
        return float32
    if x is int:
        return int32
    try:
        d = _BY_NP.get(np.dtype(x))
    except TypeError:
        d = None
    if d is None:
        raise TypeError(
            f"graphc does not support dtype {x!r}; use one of float32, float64, int32, int64, bool")
    return d


def from_numpy(npdtype):
    """Fast lookup for a numpy dtype that is known to be supported (or None)."""
    return _BY_NP.get(npdtype)
