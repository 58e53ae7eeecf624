"""linspace, roll, repeat, sequence_mask and ensure_shape, as TF 2.21's; and
nn.embedding_lookup. All but ensure_shape are composites of graphc's primitives (range,
concat, slicing, gather, where_indices), written as TF writes them where that decides a
value or a gradient. ensure_shape is a primitive: it refines the static shape, and where
None dims leave the check open it raises InvalidArgumentError when the graph runs, as TF's
EnsureShape.
"""
import numbers

import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..context import composite_errors, current_graph
from ..dispatch import bind, constant, convert_to_tensor
from ..registry import register, OPAQUE
from ..static_value import static_value
from ..tensor import OPS as P, Tensor
from ._rules import INTEGER, NUMERIC, _dims, broadcast_shapes, check_kind, tensor
from .reduce import static_int, static_ints


def getitem(x, index):
    from .indexing import getitem as g
    return g(x, index)


def _dim(x, i):
    return x.shape[i] if x.shape[i] is not None else P["shape"](x)[i]


# -- linspace ---------------------------------------------------------------------------
@composite_errors("linspace")
def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced values from `start` to `stop` (both included), along a new
    `axis` of the broadcast shape of start and stop, as tf.linspace: start + delta * i with
    delta = (stop - start) / (num - 1), the last value `stop` itself. Integer start/stop
    give float64, as TF's."""
    s = convert_to_tensor(start)
    e = convert_to_tensor(stop, s.dtype) if type(stop) is not Tensor else stop
    check_kind("linspace", s.type, NUMERIC, "start")
    if e.dtype is not s.dtype:
        raise TypeError(f"linspace: stop {e} must have the dtype of start {s}")
    n = static_int("linspace", num, "num")
    if n < 0:
        raise ValueError(f"linspace: num must be >= 0, got {n}")
    if s.dtype.is_integer:
        s, e = P["cast"](s, _dt.float64), P["cast"](e, _dt.float64)
    shape = broadcast_shapes("linspace", s.shape, e.shape)
    if s.shape != shape or e.shape != shape:
        dims = [d if d is not None else P["shape"](P["add"](s, e))[i]
                for i, d in enumerate(shape)]
        s, e = P["broadcast_to"](s, dims), P["broadcast_to"](e, dims)
    a = static_int("linspace", axis)
    if not -len(shape) - 1 <= a <= len(shape):
        raise ValueError(f"linspace: axis {a} is out of range for a result of rank "
                         f"{len(shape) + 1}")
    a %= len(shape) + 1
    s, e = P["expand_dims"](s, a), P["expand_dims"](e, a)
    delta = P["divide"](P["subtract"](e, s), constant(max(n - 1, 1), s.dtype))
    steps = np.arange(1, max(n - 1, 1), dtype=s.dtype.as_numpy_dtype)
    steps = constant(steps.reshape([-1 if i == a else 1 for i in range(len(shape) + 1)]))
    out = P["concat"]([s, P["add"](s, P["multiply"](delta, steps)), e], a)
    if n < 2:
        out = bind_slice(out, a, n)
    return out


def bind_slice(x, axis, stop):
    return getitem(x, (slice(None),) * axis + (slice(0, stop),))


# -- roll -------------------------------------------------------------------------------
@composite_errors("roll")
def roll(input, shift, axis, name=None):
    """Elements shifted by `shift` along `axis` (ints or equal-length lists; shifts on one
    axis add up), those past the end coming back at the start, as tf.roll."""
    x = convert_to_tensor(input)
    if x.ndim == 0:                     # TF's words
        raise ValueError("roll: input must be 1-D or higher")
    many = isinstance(axis, (list, tuple, np.ndarray)) or \
        (type(axis) is Tensor and axis.ndim == 1)
    axes = static_ints("roll", axis) if many else [static_int("roll", axis)]
    shifts = shift if many or isinstance(shift, (list, tuple)) else [shift]
    if type(shift) is Tensor and shift.ndim == 1:
        shifts = [shift[i] for i in range(shift.shape[0])]
    if len(shifts) != len(axes):
        raise ValueError("roll: shift and axis must have the same size")
    total = {}
    for s, a in zip(shifts, axes):
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"roll: axis {a} is out of range for a tensor of rank {x.ndim}")
        a %= x.ndim
        # TF's Roll takes each shift as an int32 (2**32 + 2 shifts by 2), known or not
        if isinstance(s, numbers.Integral) and not isinstance(s, bool):
            s = _int32(s)
        else:
            s = convert_to_tensor(s)
            check_kind("roll", s.type, INTEGER, "shift")
            known = static_value(s) if s.ndim == 0 else None
            s = _int32(known) if known is not None else P["cast"](s, _dt.int32)
        if a not in total:
            total[a] = s
        elif isinstance(s, int) and isinstance(total[a], int):
            total[a] += s
        else:
            total[a] = P["add"](total[a], s)
    for a, s in total.items():
        d = x.shape[a]
        if isinstance(s, int) and d is not None:
            if d == 0 or s % d == 0:
                continue
            k = d - s % d                  # the new first element is x[k]
            head = (slice(None),) * a
            x = P["concat"]([getitem(x, head + (slice(k, None),)),
                             getitem(x, head + (slice(0, k),))], a)
        else:                              # shift or dim known only at run time: a gather
            n = _dim(x, a)
            idx = P["mod"](P["subtract"](P["range"](n), s), P["maximum"](n, 1))
            x = P["gather"](x, idx, axis=a)
    return x


def _int32(s):
    return (int(s) + 2**31) % 2**32 - 2**31


# -- sequence_mask ----------------------------------------------------------------------
@composite_errors("sequence_mask")
def sequence_mask(lengths, maxlen=None, dtype=_dt.bool_, name=None):
    """mask[..., j] = j < lengths[...], of shape lengths.shape + [maxlen], as
    tf.sequence_mask; maxlen defaults to max(lengths) (0 for none)."""
    n = convert_to_tensor(lengths)
    check_kind("sequence_mask", n.type, NUMERIC, "lengths")
    if maxlen is None:
        m = P["maximum"](P["reduce_max"](n), constant(0, n.dtype))
    else:
        m = convert_to_tensor(maxlen)
        check_kind("sequence_mask", m.type, NUMERIC, "maxlen")
        if m.ndim != 0:                       # TF's words
            raise ValueError(f"Argument `maxlen` must be scalar for sequence_mask, received "
                             f"`maxlen` = {maxlen} with shape '{tuple(m.shape)}' instead")
        known = static_value(m)
        if known is not None and known == int(known):
            m = constant(known, m.dtype)
    row = P["range"](constant(0, m.dtype), m, constant(1, m.dtype))
    out = P["less"](row, P["cast"](P["expand_dims"](n, -1), m.dtype))
    dtype = _dt.as_dtype(dtype)
    return out if dtype is _dt.bool_ else P["cast"](out, dtype)


# -- repeat -----------------------------------------------------------------------------
@composite_errors("repeat")
def repeat(input, repeats, axis=None, name=None):
    """Each slice of `input` along `axis` repeated `repeats` times (an int, or one count
    per slice; a negative count is 0), as tf.repeat; axis None repeats the flattened input."""
    x = convert_to_tensor(input)
    if axis is None:
        x, a = P["reshape"](x, [-1]), 0
    else:
        if x.ndim == 0:
            x = P["reshape"](x, [1])
        a = static_int("repeat", axis)
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"repeat: axis {a} is out of range for a tensor of rank {x.ndim}")
        a %= x.ndim
    r = convert_to_tensor(repeats)
    check_kind("repeat", r.type, INTEGER, "repeats")
    if r.ndim > 1:                                  # TF's words
        raise ValueError(f"repeat: Shape {tuple(r.shape)} must have rank at most 1")
    d = x.shape[a]
    if r.ndim == 1 and None not in (d, r.shape[0]) and r.shape[0] not in (1, d):
        raise ValueError(f"repeat: Dimensions {d} and {r.shape[0]} are not compatible "
                         f"(repeats must have one count per slice along axis {a})")
    known = static_value(r)
    if known is not None and d is not None:         # counts known now: constant indices
        counts = np.broadcast_to(np.maximum(np.asarray(known), 0), (d,))
        idx = constant(np.repeat(np.arange(d, dtype=np.int32), counts))
        return P["gather"](x, idx, axis=a)
    # as TF: a mask of count-many trues per slice, whose true positions name the slices
    if r.ndim == 0 or r.shape[0] != d or d is None:
        # a count per slice or one for all: broadcast_to checks it when the dims are known
        # only at run time (unchecked, 2 counts for 3 slices repeated the first 2)
        r = P["broadcast_to"](P["reshape"](r, [-1]), [_dim(x, a)])
    from .selection import where_indices
    mask = sequence_mask(r, P["maximum"](P["reduce_max"](r), constant(0, r.dtype)))
    idx = getitem(where_indices(mask), (slice(None), 0))
    return P["gather"](x, idx, axis=a)


# -- ensure_shape -----------------------------------------------------------------------
def _fits(got, want):
    return len(got) == len(want) and all(
        a is None or b is None or a == b for a, b in zip(got, want))


def _ensure_infer(types, shape):
    x = types[0]
    if not _fits(x.shape, shape):
        raise ValueError(f"ensure_shape: Shape of tensor {_dims(x.shape)} is not compatible "
                         f"with expected shape {_dims(shape)}.")
    return [tensor(x.dtype, tuple(w if w is not None else g for g, w in zip(x.shape, shape)))]


def _ensure_impl(x, shape):
    if not _fits(np.shape(x), shape):         # TF's words
        raise InvalidArgumentError(f"ensure_shape: Shape of tensor {_dims(np.shape(x))} is "
                                   f"not compatible with expected shape {_dims(shape)}.")
    return x


register("ensure_shape", _ensure_infer, _ensure_impl, kind=OPAQUE,
         vjp=lambda gs, outs, ins, shape: [gs[0]])


@composite_errors("ensure_shape")
def ensure_shape(x, shape, name=None):
    """`x`, checked to have `shape` (None dims match any size; shape None: any shape), as
    tf.ensure_shape. The result's static shape takes the given dims; a mismatch is a
    ValueError while tracing where the static shapes decide it, else InvalidArgumentError
    when the graph runs (eagerly always InvalidArgumentError, as TF)."""
    t = convert_to_tensor(x)
    if shape is None:
        return t
    dims = tuple(shape.shape) if hasattr(shape, "dtype") and hasattr(shape, "shape") and \
        not isinstance(shape, (Tensor, np.ndarray)) else shape
    dims = tuple(None if d is None else static_int("ensure_shape", d, "shape entry")
                 for d in dims)
    if current_graph() is None:
        return bind("ensure_shape", t, shape=dims) if _fits(t.shape, dims) else \
            _ensure_impl(t.numpy(), dims)
    if None not in t.shape and _fits(t.shape, dims):
        return t
    return bind("ensure_shape", t, shape=dims)


# -- embedding_lookup -------------------------------------------------------------------
@composite_errors("embedding_lookup")
def embedding_lookup(params, ids, max_norm=None, name=None):
    """The rows of `params` at `ids` (shape ids.shape + params.shape[1:]), as
    tf.nn.embedding_lookup: `params` one tensor or a list of shards split by TF 2's 'div'
    strategy (consecutive rows, the first shards one row longer), which is their
    concatenation; `max_norm` clips each looked-up row to that L2 norm."""
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("embedding_lookup: params must not be empty")
        shards = [convert_to_tensor(p) for p in params]
        rows = [p.shape[0] for p in shards]
        if len(shards) > 1 and None not in rows:
            total, n = sum(rows), len(rows)
            want = [total // n + (i < total % n) for i in range(n)]
            if rows != want:
                raise ValueError(f"embedding_lookup: shards of {rows} rows do not follow TF "
                                 f"2's 'div' partition of {total} ids ({want})")
        table = shards[0] if len(shards) == 1 else P["concat"](shards, 0)
    else:
        table = convert_to_tensor(params)
    out = P["gather"](table, ids)
    if max_norm is not None:
        from .math_extras import clip_by_norm
        i = convert_to_tensor(ids)
        out = clip_by_norm(out, max_norm, axes=list(range(i.ndim, out.ndim)))
    return out


PUBLIC = {"linspace": linspace, "roll": roll, "sequence_mask": sequence_mask,
          "repeat": repeat, "ensure_shape": ensure_shape}
NN = {"embedding_lookup": embedding_lookup}
