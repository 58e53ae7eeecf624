"""Segment reductions, as TF 2.21's tf.math.segment_sum / segment_mean (sorted ids, the
segment count is the last id + 1) and unsorted_segment_sum / unsorted_segment_max (any
order, `num_segments` given; a negative id drops its row).

One primitive, `segment_reduce`, run on its numpy rule on every backend: data of shape
ids.shape + T gives [num_segments] + T. Empty segments hold 0 (sum, mean) or the dtype's
lowest value (max: -FLT_MAX for float32, INT_MIN for int32, as TF). max skips NaN in any
order (numpy's fmax), eagerly and compiled on every backend; a segment of NaNs alone holds
the lowest value. TF 2.21 is order-dependent there ([nan, 1.] -> 1., but [2., nan] -> nan,
[nan] -> nan): not copied. Integer means truncate toward zero, as TF's C++ division.
Gradients are TF's: sum gathers the gradient back to each row (none for a dropped row), mean
divides it by the segment's size, max gives it to the rows equal to their segment's max,
shared equally among ties.
"""
import numpy as np

from ...errors import InvalidArgumentError
from ..context import composite_errors
from ..dispatch import bind, convert_to_tensor
from ..registry import register, OPAQUE
from ..static_value import static_value
from ..tensor import OPS as P, Tensor
from ._rules import INTEGER, NUMERIC, _dims, check_kind, tensor


def _infer(types, reduce, sorted, n=None):
    data, ids = types[:2]
    op = ("" if sorted else "unsorted_") + f"segment_{reduce}"
    check_kind(op, data, NUMERIC, "data")
    check_kind(op, ids, INTEGER, "segment_ids")
    if sorted and ids.ndim != 1:             # TF's words
        raise ValueError(f"{op}: segment_ids should be a vector, got {ids}")
    k = ids.ndim
    if k > data.ndim or any(a is not None and b is not None and a != b
                            for a, b in zip(data.shape, ids.shape)):
        raise ValueError(f"{op}: data.shape = {_dims(data.shape)} does not start with "
                         f"segment_ids.shape = {_dims(ids.shape)}")
    if len(types) == 3:
        check_kind(op, types[2], INTEGER, "num_segments")
        if types[2].ndim != 0:
            raise ValueError(f"{op}: num_segments must be a scalar, got {types[2]}")
    return [tensor(data.dtype, (n,) + data.shape[k:])]


def _impl(data, ids, *num, reduce, sorted, n=None):
    op = ("" if sorted else "unsorted_") + f"segment_{reduce}"
    k = ids.ndim
    if data.shape[:k] != ids.shape:
        raise InvalidArgumentError(f"{op}: data.shape = {_dims(data.shape)} does not start "
                                   f"with segment_ids.shape = {_dims(ids.shape)}")
    flat = ids.reshape(-1).astype(np.int64)
    if sorted:                               # TF's words
        if flat.size and flat.min() < 0:
            raise InvalidArgumentError(f"{op}: segment ids must be >= 0")
        if flat.size > 1 and (np.diff(flat) < 0).any():
            raise InvalidArgumentError(f"{op}: segment ids are not increasing")
        count = int(flat[-1]) + 1 if flat.size else 0
    else:
        count = int(num[0])
        if count < 0:
            raise InvalidArgumentError(f"{op}: num_segments must be >= 0, got {count}")
        bad = flat >= count
        if bad.any():
            i = int(np.argmax(bad))
            at = ",".join(map(str, np.unravel_index(i, ids.shape)))
            raise InvalidArgumentError(f"{op}: segment_ids[{at}] = {flat[i]} is out of range "
                                       f"[0, {count})")
    rows = data.reshape((flat.size,) + data.shape[k:])
    keep = flat >= 0
    rows, flat = rows[keep], flat[keep]
    tail = data.shape[k:]
    if reduce == "max":
        info = np.finfo if data.dtype.kind == "f" else np.iinfo
        out = np.full((count,) + tail, info(data.dtype).min, data.dtype)
        np.fmax.at(out, flat, rows)          # NaN never replaces the running max
        return out
    out = np.zeros((count,) + tail, data.dtype)
    np.add.at(out, flat, rows)
    if reduce == "mean":
        size = np.bincount(flat, minlength=count).reshape((count,) + (1,) * len(tail))
        size = np.maximum(size, 1).astype(data.dtype)
        if data.dtype.kind == "f":
            out = out / size
        else:          # C++ integer division: toward zero (abs of INT_MIN would wrap)
            q = out // size
            out = np.where((out < 0) & (q * size != out), q + 1, q).astype(data.dtype)
    return out


def _lift(keep, data):
    """The bool `keep` of ids' shape, with 1-dims appended to data's rank."""
    k = keep.ndim
    if data.ndim == k:
        return keep
    dims = [keep.shape[i] if keep.shape[i] is not None else P["shape"](keep)[i]
            for i in range(k)]
    return P["reshape"](keep, dims + [1] * (data.ndim - k))


def _gather_rows(g, ids):
    """g's rows at ids (ids.shape + T), zero where an id is negative (a dropped row)."""
    picked = bind("gather", g, P["maximum"](ids, 0), axis=0)
    keep = _lift(P["greater_equal"](ids, 0), picked)
    return P["where"](keep, picked, P["zeros_like"](picked))


def _vjp(gs, outs, ins, reduce, sorted, n=None):
    g = gs[0]
    data, ids = ins[:2]
    rest = [None] * (len(ins) - 1)
    if reduce == "sum":
        return [_gather_rows(g, ids)] + rest
    ones, zeros = P["ones_like"](data), P["zeros_like"](data)
    if reduce == "mean":
        count = _again(ones, ins, "sum", sorted, n)
        return [_gather_rows(P["divide"](g, P["maximum"](count, 1.0)), ids)] + rest
    # TF's _UnsortedSegmentMinOrMaxGrad: the rows equal to their segment's max share it
    chosen = P["logical_and"](P["equal"](data, _gather_rows(outs[0], ids)),
                              _lift(P["greater_equal"](ids, 0), data))
    ties = _again(P["where"](chosen, ones, zeros), ins, "sum", sorted, n)
    share = _gather_rows(P["divide"](g, ties), ids)
    return [P["where"](chosen, share, zeros)] + rest


def _again(x, ins, reduce, sorted, n):
    return bind("segment_reduce", x, *ins[1:], reduce=reduce, sorted=sorted, n=n)


register("segment_reduce", _infer, _impl, kind=OPAQUE, vjp=_vjp)


def _num(op, num_segments):
    """(num_segments as a tensor, its value when known while tracing)."""
    t = convert_to_tensor(num_segments)
    check_kind(op, t.type, INTEGER, "num_segments")
    if t.ndim != 0:
        raise ValueError(f"{op}: num_segments must be a scalar, got {t}")
    known = static_value(t) if type(t) is Tensor else None
    return t, (int(known) if known is not None else None)


def _sorted(reduce):
    op = f"segment_{reduce}"

    def fn(data, segment_ids, name=None):
        d = convert_to_tensor(data)
        ids = convert_to_tensor(segment_ids)
        return bind("segment_reduce", d, ids, reduce=reduce, sorted=True, n=None)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = (f"The {reduce} of the rows of `data` in each segment of the sorted "
                  f"`segment_ids`, as tf.math.{op}: the last id + 1 rows, empty ones 0.")
    return composite_errors(op)(fn)


def _unsorted(reduce):
    op = f"unsorted_segment_{reduce}"

    def fn(data, segment_ids, num_segments, name=None):
        d = convert_to_tensor(data)
        ids = convert_to_tensor(segment_ids)
        t, n = _num(op, num_segments)
        if n is not None and n < 0:
            raise ValueError(f"{op}: num_segments must be >= 0, got {n}")
        return bind("segment_reduce", d, ids, t, reduce=reduce, sorted=False, n=n)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = (f"The {reduce} of the rows of `data` in each of `num_segments` segments "
                  f"given by `segment_ids` (any order; a negative id drops its row), as "
                  f"tf.math.{op}.")
    return composite_errors(op)(fn)


segment_sum = _sorted("sum")
segment_mean = _sorted("mean")
unsorted_segment_sum = _unsorted("sum")
unsorted_segment_max = _unsorted("max")

MATH = {"segment_sum": segment_sum, "segment_mean": segment_mean,
        "unsorted_segment_sum": unsorted_segment_sum,
        "unsorted_segment_max": unsorted_segment_max}
