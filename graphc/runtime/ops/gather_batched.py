"""gather with TF's batch_dims: `batch_gather` picks, for every index of the `batch_dims`
leading dims shared by params and indices, slices of that batch's params along `axis`.

Shapes: params B + M + [N] + T (B: the batch dims, M: the dims between them and `axis`),
indices B + I, result B + M + I + T, where result[b, m, i, t] = params[b, m, indices[b, i], t].
Its gradient is `batch_gather_grad`, the scatter-add that undoes it (repeated indices add
up), whose own gradient is batch_gather again. Both run their numpy rules on every backend.
"""
import numpy as np

from ... import dtypes as _dt
from ...errors import InvalidArgumentError
from ..dispatch import bind
from ..registry import register, OPAQUE
from ._rules import INTEGER, _dims, check_kind, tensor


def _parts(shape, axis, batch_dims):
    return shape[:batch_dims], shape[batch_dims:axis], shape[axis], shape[axis + 1:]


def _check_batch(p_shape, i_shape, batch_dims, error):
    for d in range(batch_dims):
        a, b = p_shape[d], i_shape[d]
        if a is not None and b is not None and a != b:
            # TF's words
            raise error(f"gather: params.shape[{d}]: {a} should be equal to "
                        f"indices.shape[{d}]: {b} (batch_dims={batch_dims}; params of shape "
                        f"{_dims(p_shape)}, indices of shape {_dims(i_shape)})")


def _infer(types, axis, batch_dims):
    p, idx = types
    check_kind("gather", idx, INTEGER, "indices")
    if not 0 <= batch_dims <= min(axis, idx.ndim) or axis >= p.ndim:
        raise ValueError(f"gather: axis {axis} and batch_dims {batch_dims} do not fit params "
                         f"{p} and indices {idx}")
    _check_batch(p.shape, idx.shape, batch_dims, ValueError)
    B, M, _, T = _parts(p.shape, axis, batch_dims)
    B = tuple(a if a is not None else b for a, b in zip(B, idx.shape))
    return [tensor(p.dtype, B + M + idx.shape[batch_dims:] + T)]


def _layout(p_shape, i_shape, axis, batch_dims):
    """(batch count, M, N, T, I) of concrete shapes."""
    B, M, N, T = _parts(tuple(p_shape), axis, batch_dims)
    return int(np.prod(B, dtype=np.int64)), M, N, T, tuple(i_shape[batch_dims:])


def _impl(params, indices, axis, batch_dims):
    _check_batch(params.shape, indices.shape, batch_dims, InvalidArgumentError)
    nb, M, N, T, I = _layout(params.shape, indices.shape, axis, batch_dims)
    bad = (indices < 0) | (indices >= N)
    if bad.any():
        at = np.unravel_index(int(np.argmax(bad)), indices.shape)
        raise InvalidArgumentError(
            f"gather: index {int(indices[at])} at indices[{','.join(map(str, at))}] is out of "
            f"range [0, {N}) for axis {axis} (batch_dims={batch_dims}) of params of shape "
            f"{list(params.shape)}")
    p = np.moveaxis(params.reshape((nb,) + M + (N,) + T), 1 + len(M), 1)   # nb, N, M, T
    rows = np.arange(nb).reshape((nb,) + (1,) * len(I))
    r = p[rows, indices.reshape((nb,) + I)]                                   # nb, I, M, T
    r = np.moveaxis(r, tuple(range(1 + len(I), 1 + len(I) + len(M))),
                    tuple(range(1, 1 + len(M))))                              # nb, M, I, T
    return r.reshape(params.shape[:batch_dims] + M + I + T)


def _vjp(gs, outs, ins, axis, batch_dims):
    p, idx = ins
    dims = bind("shape", p, out_type=_dt.int32)
    return [bind("batch_gather_grad", gs[0], dims, idx, axis=axis, batch_dims=batch_dims,
                 shape=tuple(p.shape)), None]


register("batch_gather", _infer, _impl, kind=OPAQUE, vjp=_vjp)


def _grad_infer(types, axis, batch_dims, shape):
    g, dims, idx = types
    if not dims.dtype.is_integer or dims.shape != (len(shape),):
        raise TypeError(f"batch_gather_grad: shape input must be int[{len(shape)}], got {dims}")
    return [tensor(g.dtype, shape)]


def _grad_impl(g, dims, indices, axis, batch_dims, shape):
    p_shape = tuple(int(d) for d in dims)
    nb, M, N, T, I = _layout(p_shape, indices.shape, axis, batch_dims)
    g = np.moveaxis(g.reshape((nb,) + M + I + T), tuple(range(1, 1 + len(M))),
                    tuple(range(1 + len(I), 1 + len(I) + len(M))))            # nb, I, M, T
    out = np.zeros((nb, N) + M + T, g.dtype)
    rows = np.arange(nb).reshape((nb,) + (1,) * len(I))
    np.add.at(out, (rows, indices.reshape((nb,) + I)), g)                     # repeats add
    return np.moveaxis(out, 1, 1 + len(M)).reshape(p_shape)


register("batch_gather_grad", _grad_infer, _grad_impl, kind=OPAQUE,
         vjp=lambda gs, outs, ins, axis, batch_dims, shape: [
             bind("batch_gather", gs[0], ins[2], axis=axis, batch_dims=batch_dims), None, None])


def batch_gather(params, indices, axis, batch_dims):
    """TF's gather with batch_dims > 0 (axis and batch_dims already normalized)."""
    return bind("batch_gather", params, indices, axis=axis, batch_dims=batch_dims)
