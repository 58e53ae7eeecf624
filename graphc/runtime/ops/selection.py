"""Data-dependent selection: `where(condition)` (the indices of the true elements) and
`boolean_mask`, whose result sizes are known only when the graph runs (a None first dim).

`where_indices` is a primitive (its numpy rule is np.argwhere); every backend runs it on
that rule, as other ops whose output shape is unknown while tracing. `boolean_mask` is a
composite of reshape, where_indices and gather, as TF builds it, so its gradient is
gather's: the upstream gradient scattered back to the kept positions, zeros elsewhere.
"""
import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..context import composite_errors, current_graph
from ..dispatch import bind, convert_to_tensor
from ..registry import register, OPAQUE
from ._rules import _dims, tensor
from .reduce import static_int


def _where_infer(types):
    c = types[0]
    if c.ndim == 0:
        # TF: eagerly "WhereOp : Unhandled input dimensions: 0" (InvalidArgumentError)
        error = ValueError if current_graph() is not None else InvalidArgumentError
        raise error(f"where: condition must have rank at least 1 to give indices, got a "
                    f"scalar {c}")
    return [tensor(_dt.int64, (None, c.ndim))]


def _where_impl(c):
    # np.argwhere tests != 0, as TF's Where on a numeric condition (NaN counts as true)
    return np.argwhere(c).astype(np.int64, copy=False)


register("where_indices", _where_infer, _where_impl, kind=OPAQUE, nondiff=True)


def where_indices(condition):
    """The int64 coordinates [num_true, rank] of the true (nonzero) elements, row-major."""
    return bind("where_indices", convert_to_tensor(condition))


@composite_errors("boolean_mask")
def boolean_mask(tensor, mask, axis=None, name=None):
    """The elements (or slices) of `tensor` where the K-D `mask` is true, as tf.boolean_mask:
    `mask`'s shape must match `tensor.shape[axis:axis + K]`, which collapse into one axis
    of the kept count. A numeric mask counts nonzero as true (as TF's, through tf.where)."""
    from .indexing import gather
    from .reduce import PUBLIC as R
    from .shape import check_shape, reshape, shape
    x = convert_to_tensor(tensor)
    m = convert_to_tensor(mask)
    k = m.ndim
    if k == 0:
        raise ValueError("mask cannot be scalar.")      # TF's words
    a = 0 if axis is None else static_int("boolean_mask", axis)
    if a < 0:
        a += x.ndim
    if not 0 <= a <= x.ndim - k:
        raise ValueError(f"axis {axis} and a mask of rank {k} do not fit a tensor of shape "
                         f"{_dims(x.shape)}")
    # as TF, the mask's shape must be the tensor's at axes a..a+k-1: checked at run time
    # where None dims leave it open (a smaller mask would otherwise pick a silent subset)
    axes = f"axis {a}" if k == 1 else f"axes {a}..{a + k - 1}"
    m = check_shape(m, x, "boolean_mask: a mask of shape {got} does not match the "
                    f"{axes} of a tensor of shape " "{full}",
                    drop=x.ndim - a - k, lead=a)
    if k > 1:       # the masked axes become one (their product, as TF: no -1 beside a 0)
        dims = shape(x) if None in x.shape else None

        def dim(i):
            return x.shape[i] if x.shape[i] is not None else dims[i]
        covered = x.shape[a:a + k]
        merged = int(np.prod(covered, dtype=np.int64)) if None not in covered else \
            R["reduce_prod"](dims[a:a + k])
        x = reshape(x, [dim(i) for i in range(a)] + [merged]
                    + [dim(i) for i in range(a + k, len(x.shape))])
        m = reshape(m, [-1])
    keep = reshape(where_indices(m), [-1])
    return gather(x, keep, axis=a)


PUBLIC = {"boolean_mask": boolean_mask}
