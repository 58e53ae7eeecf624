"""gather_nd, scatter_nd and tensor_scatter_nd_update/add, as TF 2.21's.

`indices` has K = indices.shape[-1] index components: each row picks (gather_nd) or
addresses (scatter) the slice params[i0, ..., iK-1] of shape params.shape[K:]. gather_nd's
`batch_dims` b leading dims are shared by params and indices, each batch with its own
indices. Three primitives, each run on its numpy rule on every backend (as gather): their
gradients are each other (gather_nd's is a scatter-add, scatter's a gather_nd).
Out-of-range indices raise InvalidArgumentError (TF's words: "indices[1] = [7] does not
index into shape [5]") when the op runs. Duplicate indices add up in scatter_nd and
tensor_scatter_nd_add; in tensor_scatter_nd_update the last update wins, as TF's CPU kernel.
"""
import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..context import composite_errors
from ..dispatch import bind, convert_to_tensor
from ..registry import register, OPAQUE
from ..static_value import static_value
from ..tensor import Tensor
from ._rules import INTEGER, NUMERIC, _dims, check_kind, tensor
from .reduce import static_int


def _depth(op, idx):
    check_kind(op, idx, INTEGER, "indices")
    if idx.ndim < 1:
        raise ValueError(f"{op}: indices must have rank at least 1, got a scalar {idx}")
    k = idx.shape[-1]
    if k is None:
        raise ValueError(f"{op}: the last dim of indices {idx} (the index depth) must be "
                         "known while tracing")
    return k


def _same(op, got, want, what):
    """Static dims `got` against `want` (None matches anything)."""
    if len(got) != len(want) or any(a is not None and b is not None and a != b
                                    for a, b in zip(got, want)):
        raise ValueError(f"{op}: {what}")


def _flat(shape):
    return int(np.prod(shape, dtype=np.int64))


def _coords(op, indices, shape, b):
    """indices as (nb, m, K) after the bounds check against the dims of `shape` they index."""
    K = indices.shape[-1]
    nb, m = _flat(indices.shape[:b]), _flat(indices.shape[b:-1])
    idx = indices.reshape((nb, m, K))
    lim = np.asarray(shape[b:b + K], np.int64)
    bad = ((idx < 0) | (idx >= lim)).any(axis=-1)
    if bad.any():
        at = np.unravel_index(int(np.argmax(bad.ravel())), indices.shape[:-1])
        row = indices[at].tolist()
        where = ",".join(map(str, at))
        raise InvalidArgumentError(f"{op}: indices[{where}] = {row} does not index into "
                                   f"{'param shape' if op == 'gather_nd' else 'shape'} "
                                   f"{_dims(shape)}")
    rows = np.broadcast_to(np.arange(nb).reshape(nb, 1), (nb, m))
    return (rows,) + tuple(idx[..., j] for j in range(K))


# -- gather_nd --------------------------------------------------------------------------
def _gather_infer(types, batch_dims):
    p, idx = types
    k = _depth("gather_nd", idx)
    b = batch_dims
    if b >= idx.ndim or b > p.ndim:
        raise ValueError(f"gather_nd: batch_dims {b} must be less than the rank of indices "
                         f"{idx} and at most the rank of params {p}")
    if k > p.ndim - b:         # TF's words
        raise ValueError(f"gather_nd: index innermost dimension length must be <= params "
                         f"rank; saw: {k} vs. {p.ndim - b} (params {p}, indices {idx}, "
                         f"batch_dims={b})")
    _same("gather_nd", idx.shape[:b], p.shape[:b],
          f"the batch dims of params {p} and indices {idx} differ (batch_dims={b})")
    B = tuple(a if a is not None else c for a, c in zip(p.shape[:b], idx.shape[:b]))
    return [tensor(p.dtype, B + idx.shape[b:-1] + p.shape[b + k:])]


def _gather_impl(params, indices, batch_dims):
    b = batch_dims
    if params.shape[:b] != indices.shape[:b]:
        raise InvalidArgumentError(f"gather_nd: the batch dims of params {_dims(params.shape)} "
                                   f"and indices {_dims(indices.shape)} differ")
    K = indices.shape[-1]
    nb = _flat(params.shape[:b])
    p = params.reshape((nb,) + params.shape[b:])
    r = p[_coords("gather_nd", indices, params.shape, b)]
    return r.reshape(params.shape[:b] + indices.shape[b:-1] + params.shape[b + K:])


def _shape_of(x):
    if None not in x.shape:
        return constant_shape(x.shape)
    return bind("shape", x, out_type=_dt.int64)


def constant_shape(dims):
    from ..dispatch import constant
    return constant(np.asarray(dims, np.int64))


register("gather_nd", _gather_infer, _gather_impl, kind=OPAQUE,
         vjp=lambda gs, outs, ins, batch_dims: [
             bind("scatter_nd", ins[1], gs[0], _shape_of(ins[0]), batch_dims=batch_dims,
                  template=tuple(ins[0].shape)), None])


# -- scatter_nd: zeros of `shape` plus the updates (duplicates add) ----------------------
def _scatter_check(op, idx, upd, shape, b):
    k = _depth(op, idx)
    if k == 0:      # TF 2.21 supports index depths from 1 only: InvalidArgumentError (a
        # ValueError here too), even with no updates
        raise InvalidArgumentError(f"{op}: indices {idx} have index depth 0 (their last dim): "
                                   "each index must name at least the first dim's position")
    if k > len(shape) - b:
        raise ValueError(f"{op}: the index depth {k} (indices {idx}) is more than the rank "
                         f"{len(shape)} of the shape {_dims(shape)}")
    want = idx.shape[:-1] + tuple(shape[b + k:])
    _same(op, upd.shape, want, f"updates {upd} must have shape {_dims(want)}: indices.shape"
                               f"[:-1] + shape[{b + k}:] for indices {idx} and shape "
                               f"{_dims(shape)}")


def _scatter_infer(types, batch_dims, template):
    idx, upd, dims = types
    check_kind("scatter_nd", dims, INTEGER, "shape")
    if dims.shape != (len(template),):
        raise ValueError(f"scatter_nd: shape must be a 1-D int tensor of {len(template)} "
                         f"entries, got {dims}")
    _scatter_check("scatter_nd", idx, upd, template, batch_dims)
    return [tensor(upd.dtype, tuple(template))]


def _scatter(op, out, indices, updates, b, add):
    K = indices.shape[-1]
    want = indices.shape[:-1] + out.shape[b + K:]
    if updates.shape != want:
        raise InvalidArgumentError(f"{op}: updates of shape {_dims(updates.shape)} do not fit "
                                   f"indices of shape {_dims(indices.shape)} into shape "
                                   f"{_dims(out.shape)}: they must have shape {_dims(want)}")
    where = _coords(op, indices, out.shape, b)
    nb = _flat(out.shape[:b])
    o = out.reshape((nb,) + out.shape[b:])
    u = updates.reshape(where[0].shape + out.shape[b + K:])
    if add:
        np.add.at(o, where, u)          # duplicates add up (bool: or)
    else:
        # the last of duplicate indices wins, as TF's CPU kernel: keep each one's last update
        flat = np.ravel_multi_index(where, (nb,) + out.shape[b:b + K]).ravel()
        keep = len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]
        o[tuple(w.ravel()[keep] for w in where)] = u.reshape((-1,) + u.shape[2:])[keep]
    return o.reshape(out.shape)


def _scatter_impl(indices, updates, dims, batch_dims, template):
    shape = tuple(int(d) for d in dims)
    if any(d < 0 for d in shape):
        raise InvalidArgumentError(f"scatter_nd: shape {list(shape)} has a negative dim")
    return _scatter("scatter_nd", np.zeros(shape, updates.dtype), indices, updates,
                    batch_dims, True)


register("scatter_nd", _scatter_infer, _scatter_impl, kind=OPAQUE,
         vjp=lambda gs, outs, ins, batch_dims, template: [
             None, bind("gather_nd", gs[0], ins[0], batch_dims=batch_dims), None])


# -- tensor_scatter_nd: `tensor` with the updates written (update) or added (add) --------
def _tensor_infer(types, mode):
    t, idx, upd = types
    op = f"tensor_scatter_nd_{mode}"
    if upd.dtype is not t.dtype:
        raise TypeError(f"{op}: updates {upd} must have the dtype of tensor {t}")
    if mode == "add":
        check_kind(op, t, NUMERIC, "tensor")
    _scatter_check(op, idx, upd, t.shape, 0)
    return [t]


def _tensor_impl(t, indices, updates, mode):
    return _scatter(f"tensor_scatter_nd_{mode}", np.array(t, copy=True), indices, updates, 0,
                    mode == "add")


def _tensor_vjp(gs, outs, ins, mode):
    g = gs[0]
    d_upd = bind("gather_nd", g, ins[1], batch_dims=0)
    if mode == "add":
        return [g, None, d_upd]
    # TF's TensorScatterUpdate gradient: nothing to the overwritten entries of `tensor`
    # (every update of a duplicate index still gets its gradient)
    return [bind("tensor_scatter_nd", g, ins[1], _zeros_like(ins[2]), mode="update"), None,
            d_upd]


def _zeros_like(x):
    from .creation import zeros_like
    return zeros_like(x)


register("tensor_scatter_nd", _tensor_infer, _tensor_impl, kind=OPAQUE, vjp=_tensor_vjp)


# -- public functions -------------------------------------------------------------------
def _indices(op, indices):
    idx = convert_to_tensor(indices)
    check_kind(op, idx.type, INTEGER, "indices")
    return idx


@composite_errors("gather_nd")
def gather_nd(params, indices, batch_dims=0, name=None):
    """Slices of `params` at the K-component index rows of `indices`, as tf.gather_nd:
    result shape indices.shape[:-1] + params.shape[batch_dims + K:]."""
    p = convert_to_tensor(params)
    idx = _indices("gather_nd", indices)
    b = static_int("gather_nd", batch_dims, "batch_dims")
    if b < 0:
        raise ValueError(f"gather_nd: batch_dims must be non-negative, got {b}")
    return bind("gather_nd", p, idx, batch_dims=b)


def _static_shape(op, shape):
    """(shape as an int64 tensor, its static dims with None where known only at run time)."""
    if type(shape) is Tensor or hasattr(shape, "_as_tensor"):
        s = convert_to_tensor(shape)
        check_kind(op, s.type, INTEGER, "shape")
        if s.ndim != 1 or s.shape[0] is None:
            raise ValueError(f"{op}: shape must be a 1-D int tensor of known length, got {s}")
        known = static_value(s)
        dims = tuple(int(d) for d in known) if known is not None else (None,) * s.shape[0]
        return bind("cast", s, dtype=_dt.int64), dims
    if isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{op}: shape must be a list of ints or a 1-D int tensor, got "
                        f"{shape!r}")
    dims = tuple(static_int(op, d, "shape entry") for d in shape)
    if any(d < 0 for d in dims):
        raise ValueError(f"{op}: shape {list(dims)} has a negative dim")
    return constant_shape(dims), dims


@composite_errors("scatter_nd")
def scatter_nd(indices, updates, shape, name=None):
    """A tensor of `shape`, zeros but for `updates` added at `indices` (duplicates add up),
    as tf.scatter_nd; it has the dtype of `updates`."""
    idx = _indices("scatter_nd", indices)
    upd = convert_to_tensor(updates)
    s, dims = _static_shape("scatter_nd", shape)
    return bind("scatter_nd", idx, upd, s, batch_dims=0, template=dims)


def _tensor_scatter(mode):
    op = f"tensor_scatter_nd_{mode}"

    def fn(tensor, indices, updates, name=None):
        t = convert_to_tensor(tensor)
        idx = _indices(op, indices)
        upd = updates if type(updates) is Tensor else convert_to_tensor(updates, t.dtype)
        return bind("tensor_scatter_nd", t, idx, convert_to_tensor(upd), mode=mode)
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = (f"`tensor` with `updates` {'added at' if mode == 'add' else 'written to'} "
                  f"`indices`, as tf.{op}" + (" (duplicates add up)." if mode == "add" else
                                              " (of duplicate indices the last update wins)."))
    return composite_errors(op)(fn)


tensor_scatter_nd_update = _tensor_scatter("update")
tensor_scatter_nd_add = _tensor_scatter("add")

PUBLIC = {"gather_nd": gather_nd, "scatter_nd": scatter_nd,
          "tensor_scatter_nd_update": tensor_scatter_nd_update,
          "tensor_scatter_nd_add": tensor_scatter_nd_add}
