"""sort, argsort and top_k, as TF 2.21's tf.sort / tf.argsort / tf.math.top_k (= tf.nn.top_k).

One primitive, `argsort_indices` (a stable numpy argsort along one axis, int32, no
gradient), run on its numpy rule on every backend; sort and top_k gather the values at its
indices (gather with batch_dims), so their gradient is gather's: the incoming gradient
scattered back to the positions the values came from, as TF's TopKV2 gradient.

Order, as TF's: stable in both directions (equal values keep their input order, also
descending: argsort([3, 1, 3], 'DESCENDING') is [0, 2, 1]); -0.0 and 0.0 are equal.
NaN: TF's order of NaN is whatever its comparisons leave (NaN compares false with all), so
graphc fixes one: NaN is the largest value (last ascending, first descending).
"""
import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..context import composite_errors, current_graph
from ..dispatch import bind, convert_to_tensor
from ..registry import register, OPAQUE
from ._rules import NUMERIC, check_kind, tensor
from .reduce import static_int


def _infer(types, axis, descending, k=None):
    """k: top_k's count (the first k of the order along the last axis), None for all."""
    x = types[0]
    check_kind("argsort", x, NUMERIC, "values")
    if not 0 <= axis < x.ndim:
        raise ValueError(f"argsort: axis {axis} is out of range for {x}")
    if k is None:
        return [tensor(_dt.int32, x.shape)]
    return [tensor(_dt.int32, x.shape[:axis] + (k,) + x.shape[axis + 1:])]


def _impl(x, axis, descending, k=None):
    n = x.shape[axis]
    if k is not None and n < k:     # TF's words
        raise InvalidArgumentError(f"top_k: input must have at least k columns. Had {n}, "
                                   f"needed {k}")
    if not descending:          # numpy's stable sort: NaN last
        order = np.argsort(x, axis=axis, kind="stable")
    else:
        # stable descending: the ascending stable order of the reversed axis, read
        # backwards, keeps equal values in input order (and puts NaN first)
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    if k is not None:
        order = order[(slice(None),) * axis + (slice(0, k),)]
    return order.astype(np.int32)


register("argsort_indices", _infer, _impl, kind=OPAQUE, nondiff=True)

_DIRECTIONS = ("ASCENDING", "DESCENDING")


def _args(op, values, axis, direction):
    if direction not in _DIRECTIONS:      # TF's words
        raise ValueError(f"Argument `direction` should be one of ASCENDING, DESCENDING. "
                         f"Received: direction={direction}")
    x = convert_to_tensor(values)
    check_kind(op, x.type, NUMERIC, "values")
    a = static_int(op, axis)
    if not -x.ndim <= a < x.ndim:
        raise ValueError(f"{op}: axis {a} is out of range for values of rank {x.ndim}"
                         + (" (a scalar has no axis to sort)" if x.ndim == 0 else ""))
    return x, a % x.ndim


def _take(x, idx, axis):
    """x's values at idx along `axis` (idx of x's shape but on that axis)."""
    if axis != x.ndim - 1:
        perm = list(range(x.ndim))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        t = bind("transpose", x, perm=tuple(perm))
        i = bind("transpose", idx, perm=tuple(perm))
        return bind("transpose", _take(t, i, t.ndim - 1), perm=tuple(perm))
    if x.ndim == 1:
        return bind("gather", x, idx, axis=0)
    from .gather_batched import batch_gather
    return batch_gather(x, idx, axis=x.ndim - 1, batch_dims=x.ndim - 1)


@composite_errors("argsort")
def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort `values` along `axis`, as tf.argsort. The order is always
    stable (TF's `stable=False` is no promise of instability)."""
    x, a = _args("argsort", values, axis, direction)
    return bind("argsort_indices", x, axis=a, descending=direction == "DESCENDING")


@composite_errors("sort")
def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis`, as tf.sort; differentiable (a gather of the inputs)."""
    x, a = _args("sort", values, axis, direction)
    idx = bind("argsort_indices", x, axis=a, descending=direction == "DESCENDING")
    return _take(x, idx, a)


@composite_errors("top_k")
def top_k(input, k=1, sorted=True, index_type=_dt.int32, name=None):
    """(values, indices) of the k largest entries along the last axis, largest first (equal
    values in input order), as tf.math.top_k; `sorted=False` gives the same order. The
    values' gradient goes back to the positions they came from."""
    x = convert_to_tensor(input)
    check_kind("top_k", x.type, NUMERIC, "input")
    kk = static_int("top_k", k, "k")
    error = ValueError if current_graph() is not None else InvalidArgumentError
    if x.ndim < 1:            # TF's words (InvalidArgumentError when it runs)
        raise error(f"top_k: input must be >= 1-D, got shape {list(x.shape)}")
    if kk < 0:
        raise error(f"top_k: Need k >= 0, got {kk}")
    n = x.shape[-1]
    if n is not None and n < kk:
        raise error(f"top_k: input must have at least k columns. Had {n}, needed {kk}")
    index_type = _dt.as_dtype(index_type)
    if index_type not in (_dt.int32, _dt.int64):
        raise TypeError(f"top_k: index_type must be int32 or int64, got {index_type.name}")
    idx = bind("argsort_indices", x, axis=x.ndim - 1, descending=True, k=kk)
    values = _take(x, idx, x.ndim - 1)
    if index_type is not _dt.int32:
        idx = bind("cast", idx, dtype=index_type)
    return TopKV2(values, idx)


from collections import namedtuple  # noqa: E402
TopKV2 = namedtuple("TopKV2", ["values", "indices"])

PUBLIC = {"sort": sort, "argsort": argsort}
MATH = {"top_k": top_k}
