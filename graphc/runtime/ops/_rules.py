"""Shared shape and dtype rules for op type inference, with error messages naming the op."""
from ...dtypes import bool_, float64
from ..types import TensorType

FLOAT = "float"
NUMERIC = "numeric"
INTEGER = "integer"
BOOL = "bool"
ANY = "any"

_KIND_OK = {
    FLOAT: lambda d: d.is_floating,
    NUMERIC: lambda d: d.is_floating or d.is_integer,
    INTEGER: lambda d: d.is_integer,
    BOOL: lambda d: d.is_bool,
    ANY: lambda d: True,
}
_KIND_TEXT = {FLOAT: "a floating dtype (float32, float64)",
              NUMERIC: "a numeric dtype (float32, float64, int32, int64)",
              INTEGER: "an integer dtype (int32, int64)", BOOL: "bool", ANY: "any dtype"}


def fmt(t):
    return str(t)


def check_kind(op, t, kind, what="input"):
    if t.kind != "tensor":
        raise TypeError(f"{op}: {what} must be a tensor, got {t}")
    if not _KIND_OK[kind](t.dtype):
        fix = " Use gc.cast(x, gc.float32) first." if kind == FLOAT and t.dtype.is_integer else ""
        raise TypeError(f"{op}: {what} has dtype {t.dtype.name} but needs {_KIND_TEXT[kind]}.{fix}")


def same_dtype(op, types):
    first = types[0].dtype
    for t in types[1:]:
        if t.dtype is not first:
            raise TypeError(
                f"{op}: operands have different dtypes {first.name} and {t.dtype.name} "
                f"({', '.join(map(fmt, types))}). graphc never mixes dtypes implicitly, as in "
                f"TensorFlow: use gc.cast(x, gc.{t.dtype.name}) or gc.cast(y, gc.{first.name}).")
    return first


def broadcast_shapes(op, *shapes):
    """numpy broadcasting, with None for dims known only at run time."""
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        dim = 1
        for s in shapes:
            j = i - (ndim - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif d is None:
                continue
            elif dim is None:
                dim = d
            elif d != dim:
                shown = " and ".join(_dims(s) for s in shapes)
                raise ValueError(f"{op}: incompatible shapes for broadcasting: {shown}")
        out.append(dim)
    return tuple(out)


def _dims(shape):
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def tensor(dtype, shape):
    return TensorType(dtype, shape)


__all__ = ["FLOAT", "NUMERIC", "INTEGER", "BOOL", "ANY", "check_kind", "same_dtype",
           "broadcast_shapes", "tensor", "bool_", "float64"]
