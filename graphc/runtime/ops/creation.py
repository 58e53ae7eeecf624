"""Tensor creation: constants, fills, ranges and identities."""
import operator

import numpy as np

from ... import dtypes as _dt
from ..context import composite_errors
from ..dispatch import _to_array, bind, constant, convert_to_tensor, is_number
from ..registry import register, ELEMENTWISE, OPAQUE
from ..static_value import static_value
from ..tensor import Tensor, OPS
from ._rules import NUMERIC, check_kind, tensor


register("constant", lambda types, value: [tensor(_dt.from_numpy(value.dtype), value.shape)],
         lambda value: value, kind=OPAQUE, nondiff=True)


def _static_shape(op, shape):
    """A shape argument as a tuple of non-negative ints (lists, tuples and concrete tensors)."""
    if type(shape) is Tensor:
        known = static_value(shape)
        if known is None:
            return None   # dims known only at run time: callers use broadcast_to
        shape = known.tolist()
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if isinstance(shape, (list, tuple)) and any(type(d) is Tensor for d in shape):
        dims = [static_value(d) if type(d) is Tensor else d for d in shape]
        if any(d is None for d in dims):
            return None
        shape = [d.tolist() if isinstance(d, np.ndarray) else d for d in dims]
    try:       # operator.index: a float dim (2.5) is an error, as TF's, never truncated
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{op}: shape must be a list of ints or an int tensor, got {shape!r}") \
            from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{op}: shape {list(dims)} has a negative dimension")
    return dims


def _fill_infer(types, shape):
    v = types[0]
    if v.shape != ():
        raise ValueError(f"fill: value must be a scalar, got {v}")
    return [tensor(v.dtype, shape)]


register("fill", _fill_infer, lambda v, shape: np.full(shape, v), kind=ELEMENTWISE,
         scalar="{0}", vjp=lambda gs, outs, ins, shape: [OPS["reduce_sum"](gs[0])])


def _alias(op, tf_name, tf_value, api_name, api_value):
    """TF's keyword (`tf_name`) or API.md's (`api_name`, keyword-only): exactly one."""
    if (tf_value is None) == (api_value is None):
        raise TypeError(f"{op}() needs `{tf_name}` (or `{api_name}=`), exactly once")
    return api_value if tf_value is None else tf_value


def fill(dims=None, value=None, name=None, *, shape=None):
    """A tensor of shape `dims` with every element equal to `value` (its dtype).
    `shape=` is accepted for `dims` (API.md writes `fill(shape, value)`)."""
    dims = _alias("fill", "dims", dims, "shape", shape)
    if value is None:
        raise TypeError("fill() missing required argument: 'value'")
    shape = _static_shape("fill", dims)
    value = convert_to_tensor(value)
    if shape is None:
        from .shape import broadcast_to
        return broadcast_to(value, dims)
    return bind("fill", value, shape=shape)


@composite_errors("zeros")
def zeros(shape, dtype=_dt.float32, name=None):
    """A tensor of zeros."""
    return fill(shape, constant(0, _dt.as_dtype(dtype)))


@composite_errors("ones")
def ones(shape, dtype=_dt.float32, name=None):
    """A tensor of ones."""
    return fill(shape, constant(1, _dt.as_dtype(dtype)))


def _like(op, x, value, dtype):
    x = convert_to_tensor(x)
    dtype = x.dtype if dtype is None else _dt.as_dtype(dtype)
    if None not in x.shape:
        return fill(x.shape, constant(value, dtype))
    # the template keeps x's static dims; the shape op supplies the unknown ones at run time
    return bind("broadcast_to", constant(value, dtype), bind("shape", x, out_type=_dt.int32),
                shape=tuple(x.shape))


def zeros_like(input, dtype=None, name=None):
    """Zeros with the shape (and by default the dtype) of `input`."""
    return _like("zeros_like", input, 0, dtype)


def ones_like(input, dtype=None, name=None):
    """Ones with the shape (and by default the dtype) of `input`."""
    return _like("ones_like", input, 1, dtype)


def _range_infer(types):
    for t in types:
        check_kind("range", t, NUMERIC)
        if t.shape != ():
            raise ValueError(f"range: start, limit and delta must be scalars, got {t}")
    return [tensor(types[0].dtype, (None,))]


def _range_problem(start, limit, delta):
    """What TF's Range refuses: a zero delta, or one pointing away from `limit`
    (tf.range(5, 0) raises 'Requires start <= limit when delta > 0'; Python gives [])."""
    if delta == 0:
        return "delta must not be zero"
    if delta > 0 and start > limit:
        return f"start {start} > limit {limit} needs a negative delta, got {delta}"
    if delta < 0 and start < limit:
        return f"start {start} < limit {limit} needs a positive delta, got {delta}"
    return None


def _range_impl(start, limit, delta):
    problem = _range_problem(start, limit, delta)
    if problem:
        from ...errors import InvalidArgumentError
        raise InvalidArgumentError(f"range: {problem}")
    return np.arange(start, limit, delta, dtype=np.asarray(start).dtype)


register("range", _range_infer, _range_impl, kind=OPAQUE, nondiff=True)


def range(start, limit=None, delta=1, dtype=None, name="range"):
    """Numbers from `start` (inclusive) to `limit` (exclusive) by `delta`, like tf.range.

    Without `dtype`, the widest of the arguments' dtypes (int32 < int64 < float32 < float64,
    Python ints int32 and floats float32), as tf.range infers it.
    """
    if limit is None:
        start, limit = 0, start
    args = (start, limit, delta)
    if dtype is None:       # as TF: the widest of the three arguments' dtypes
        order = [_dt.int32, _dt.int64, _dt.float32, _dt.float64]
        kinds = [_dt.as_dtype(_to_array(a, None)[0].dtype) if is_number(a)   # no graph op
                 else convert_to_tensor(a).dtype for a in args]
        bad = [k.name for k in kinds if k not in order]
        if bad:
            raise TypeError(f"range: start, limit and delta must be numbers, got {bad[0]}")
        dtype = max(kinds, key=order.index)
    dtype = _dt.as_dtype(dtype)
    if dtype is _dt.bool_:       # as TF: a range counts, so it needs a numeric dtype
        raise TypeError("range: dtype bool is not supported; use int32, int64, float32 or "
                        "float64")
    if all(is_number(a) for a in args):
        problem = _range_problem(start, limit, delta)
        if problem:
            raise ValueError(f"range: {problem}")
        return constant(np.arange(start, limit, delta).astype(dtype.np), dtype)
    from .elementwise import cast
    return bind("range", *(cast(convert_to_tensor(a), dtype) if not is_number(a)
                           else constant(a, dtype) for a in args))


def eye(num_rows=None, num_columns=None, dtype=_dt.float32, name=None, *, n=None):
    """The identity matrix (num_rows x num_columns); the sizes may be traced scalars.
    `n=` is accepted for `num_rows` (API.md writes `eye(n, dtype=gc.float32)`)."""
    num_rows = _alias("eye", "num_rows", num_rows, "n", n)
    dtype = _dt.as_dtype(dtype)
    if any(type(n) is Tensor and n.is_symbolic and static_value(n) is None
           for n in (num_rows, num_columns)):
        return _eye_dynamic(num_rows, num_columns, dtype)
    sizes = []
    for what, n in (("num_rows", num_rows), ("num_columns", num_columns)):
        if n is None and what == "num_columns":
            sizes.append(None)
            continue
        if type(n) is Tensor:
            n = n.numpy() if not n.is_symbolic else static_value(n)
            n = n[()] if isinstance(n, np.ndarray) and n.ndim == 0 else n
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) \
                or np.ndim(n) != 0:
            raise TypeError(f"eye: {what} must be an int, got {n!r}")
        if n < 0:
            raise ValueError(f"eye: {what} must be non-negative, got {int(n)}")
        sizes.append(int(n))
    num_rows, num_columns = sizes
    return constant(np.eye(num_rows, num_columns, dtype=dtype.np), dtype)


def _eye_dynamic(num_rows, num_columns, dtype):
    """eye with a size known only at run time: row index == column index, as a dtype."""
    for what, n in (("num_rows", num_rows), ("num_columns", num_columns)):
        if type(n) is Tensor and (n.shape != () or not n.dtype.is_integer):
            raise TypeError(f"eye: {what} must be an int scalar, got {n!r}")
    rows = range(num_rows, dtype=_dt.int64)
    cols = rows if num_columns is None else range(num_columns, dtype=_dt.int64)
    same = OPS["equal"](OPS["expand_dims"](rows, 1), OPS["expand_dims"](cols, 0))
    return OPS["cast"](same, dtype)


PUBLIC = dict(fill=fill, zeros=zeros, ones=ones, zeros_like=zeros_like, ones_like=ones_like,
              range=range, eye=eye)
