"""Linear algebra: batched matmul (a primitive) and tensordot (a composite over it)."""
import numpy as np

from ..dispatch import bind, convert_like
from ..registry import register, LINALG
from ..tensor import Tensor
from ._rules import NUMERIC, _dims, check_kind, same_dtype, broadcast_shapes, tensor
from .reduce import static_int, normalize_axis, run_checked


def _matmul_infer(types, transpose_a, transpose_b):
    a, b = types
    dtype = same_dtype("matmul", types)
    check_kind("matmul", a, NUMERIC)
    check_kind("matmul", b, NUMERIC)
    shown = f"{_dims(a.shape)} and {_dims(b.shape)}"
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"matmul: both operands need rank >= 2, got shapes {shown} "
                         "(use gc.expand_dims or gc.tensordot for vectors)")
    m, ka = (a.shape[-1], a.shape[-2]) if transpose_a else a.shape[-2:]
    kb, n = (b.shape[-1], b.shape[-2]) if transpose_b else b.shape[-2:]
    if ka is not None and kb is not None and ka != kb:
        flags = "".join([" with transpose_a" if transpose_a else "",
                         " with transpose_b" if transpose_b else ""])
        raise ValueError(f"matmul: inner dimensions differ ({ka} vs {kb}) for shapes "
                         f"{shown}{flags}")
    try:
        batch = broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of shapes {shown} do not broadcast") \
            from None
    return [tensor(dtype, batch + (m, n))]


def _matmul_impl(a, b, transpose_a, transpose_b):
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


def _matmul_vjp(gs, outs, ins, transpose_a, transpose_b, needs=(True, True)):
    """Standard matmul gradients per transpose flag, summed over broadcast batch dims;
    only for the operands that lead to watched values (`needs`)."""
    from ..autodiff.tape import unbroadcast
    g, (a, b) = gs[0], ins
    ta, tb = transpose_a, transpose_b
    da = db = None
    if needs[0]:
        da = matmul(b, g, transpose_a=tb, transpose_b=True) if ta else \
            matmul(g, b, transpose_b=not tb)
        da = unbroadcast(da, a, b, core=2)
    if needs[1]:
        db = matmul(g, a, transpose_a=True, transpose_b=ta) if tb else \
            matmul(a, g, transpose_a=not ta)
        db = unbroadcast(db, b, a, core=2)
    return [da, db]


_matmul_vjp.takes_needs = True


register("matmul", _matmul_infer, run_checked("matmul", _matmul_impl), kind=LINALG,
         vjp=_matmul_vjp)


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """Matrix product over the last two axes, batched (with broadcasting) on leading axes."""
    x, y = convert_like([a, b], "matmul")
    return bind("matmul", x, y, transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))


def _dim(x, axis):
    """Static size of `axis`, or a scalar int32 tensor when it is known only at run time."""
    d = x.shape[axis]
    if d is not None:
        return d
    from .shape import shape
    return shape(x)[axis]


def _product(dims):
    if all(not isinstance(d, Tensor) for d in dims):
        return int(np.prod(dims, dtype=np.int64))
    from .reduce import PUBLIC as R
    from .shape import stack
    return R["reduce_prod"](stack(list(dims)))


def _tensordot_axes(a, b, axes):
    if isinstance(axes, (int, np.integer)) or (type(axes) is Tensor and axes.ndim == 0):
        n = static_int("tensordot", axes, "axes")
        if not 0 <= n <= min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={n} is out of range for shapes "
                             f"{_dims(a.shape)} and {_dims(b.shape)}")
        return list(range(a.ndim - n, a.ndim)), list(range(n))
    try:
        ax_a, ax_b = axes
    except (TypeError, ValueError):
        raise ValueError(f"tensordot: axes must be an int or a pair of axis lists, got "
                         f"{axes!r}") from None
    ax_a = [ax_a] if not isinstance(ax_a, (list, tuple)) else list(ax_a)
    ax_b = [ax_b] if not isinstance(ax_b, (list, tuple)) else list(ax_b)
    if len(ax_a) != len(ax_b):
        raise ValueError(f"tensordot: axes {axes!r} pair {len(ax_a)} axes of a with "
                         f"{len(ax_b)} of b")
    return ([normalize_axis("tensordot", v, a.ndim) for v in ax_a],
            [normalize_axis("tensordot", v, b.ndim) for v in ax_b])


def _permute(x, perm):
    from .shape import transpose
    return x if perm == sorted(perm) else transpose(x, perm)


def tensordot(a, b, axes, name=None):
    """Sum of products over `axes` (int N: last N of a with first N of b; or two axis lists).

    A composite: transpose both operands, reshape them to matrices, matmul, reshape back.
    """
    from .shape import reshape
    x, y = convert_like([a, b], "tensordot")
    ax_a, ax_b = _tensordot_axes(x, y, axes)
    for i, j in zip(ax_a, ax_b):
        if x.shape[i] is not None and y.shape[j] is not None and x.shape[i] != y.shape[j]:
            raise ValueError(f"tensordot: axis {i} of a (size {x.shape[i]}) and axis {j} of b "
                             f"(size {y.shape[j]}) differ; shapes {_dims(x.shape)} and "
                             f"{_dims(y.shape)}")
    free_a = [i for i in range(x.ndim) if i not in ax_a]
    free_b = [j for j in range(y.ndim) if j not in ax_b]
    dims_fa = [_dim(x, i) for i in free_a]
    dims_fb = [_dim(y, j) for j in free_b]
    k = _product([_dim(x, i) for i in ax_a])
    xm = reshape(_permute(x, free_a + ax_a), [_product(dims_fa), k])
    ym = reshape(_permute(y, ax_b + free_b), [k, _product(dims_fb)])
    return reshape(matmul(xm, ym), dims_fa + dims_fb)


PUBLIC = dict(matmul=matmul, tensordot=tensordot)
