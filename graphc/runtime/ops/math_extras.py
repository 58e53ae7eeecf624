"""tf.math / tf.linalg / clip functions TF training code reaches for, each a composite of
graphc's primitives (so it differentiates, fuses and serializes as they do), written as
TF 2.21 writes it where that decides a value, a NaN or a gradient."""
import numbers

import numpy as np

from ... import dtypes as _dt
from ..context import composite_errors
from ..dispatch import constant, convert_like, convert_to_tensor
from ..tensor import OPS as P
from ._rules import FLOAT, NUMERIC, check_kind
from .reduce import cumprod, normalize_axes, normalize_axis


def _float(op, x):
    x = convert_to_tensor(x)
    check_kind(op, x.type, FLOAT)
    return x


# -- elementwise ------------------------------------------------------------------------
@composite_errors("is_nan")
def is_nan(x, name=None):
    """True where `x` is NaN (x != x), as tf.math.is_nan; float inputs only."""
    x = _float("is_nan", x)
    return P["not_equal"](x, x)


@composite_errors("is_inf")
def is_inf(x, name=None):
    """True where `x` is +inf or -inf, as tf.math.is_inf; float inputs only."""
    x = _float("is_inf", x)
    return P["equal"](P["abs"](x), np.inf)


@composite_errors("is_finite")
def is_finite(x, name=None):
    """True where `x` is neither NaN nor +-inf (|x| < inf is false for NaN)."""
    x = _float("is_finite", x)
    return P["less"](P["abs"](x), np.inf)


@composite_errors("divide_no_nan")
def divide_no_nan(x, y, name=None):
    """x / y, but 0 where y == 0 (even for x NaN or inf), as tf.math.divide_no_nan. The
    gradient is 0 there too (the divisor is replaced by 1 on the hidden side)."""
    a, b = convert_like([x, y], "divide_no_nan")
    zero = P["equal"](b, 0)
    safe = P["where"](zero, P["ones_like"](b), b)
    q = P["divide"](a, safe)
    return P["where"](zero, P["zeros_like"](q), q)


@composite_errors("squared_difference")
def squared_difference(x, y, name=None):
    """(x - y) ** 2 elementwise (numbers, not bool), as tf.math.squared_difference."""
    a, b = convert_like([x, y], "squared_difference")
    check_kind("squared_difference", a.type, NUMERIC, "x")
    return P["square"](P["subtract"](a, b))


@composite_errors("log_sigmoid")
def log_sigmoid(x, name=None):
    """log(1 / (1 + exp(-x))), stably: -softplus(-x), as tf.math.log_sigmoid."""
    from ... import nn
    x = _float("log_sigmoid", x)
    return P["negative"](nn.softplus(P["negative"](x)))


@composite_errors("reciprocal")
def reciprocal(x, name=None):
    """1 / x elementwise (floats), as tf.math.reciprocal."""
    x = _float("reciprocal", x)
    return P["divide"](1.0, x)


# -- reductions -------------------------------------------------------------------------
@composite_errors("reduce_variance")
def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Mean of squared deviations from the mean over `axis` (floats only), as
    tf.math.reduce_variance: mean(square(x - mean(x, keepdims=True)))."""
    x = _float("reduce_variance", input_tensor)
    axes = normalize_axes("reduce_variance", axis, x.ndim)
    mean = P["reduce_mean"](x, axes, keepdims=True)
    return P["reduce_mean"](P["square"](P["subtract"](x, mean)), axes, keepdims=keepdims)


@composite_errors("reduce_std")
def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(reduce_variance(...)), as tf.math.reduce_std (its gradient is NaN where the
    variance is 0, as TF's)."""
    return P["sqrt"](reduce_variance(input_tensor, axis, keepdims))


@composite_errors("reduce_euclidean_norm")
def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(x * x)) over `axis`, as tf.math.reduce_euclidean_norm (floats)."""
    x = _float("reduce_euclidean_norm", input_tensor)
    axes = normalize_axes("reduce_euclidean_norm", axis, x.ndim)
    return P["sqrt"](P["reduce_sum"](P["multiply"](x, x), axes, keepdims=keepdims))


# -- norms and clipping -----------------------------------------------------------------
_VECTOR_ORDS = ("euclidean", 1, 2, np.inf)
_MATRIX_ORDS = ("euclidean", "fro", 1, np.inf)   # TF's ord=2 (an SVD) is not here


def _is_ord(ord, allowed):
    return any(ord == o and type(ord) is not bool for o in allowed
               if isinstance(ord, str) == isinstance(o, str))


@composite_errors("norm")
def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):
    """The vector norm of `tensor` (all of it when axis is None, or along one axis), or the
    matrix norm over two axes (a pair), as tf.norm / tf.linalg.norm. Vector `ord`:
    'euclidean' (2), 1, np.inf or any p > 0; matrix `ord`: 'euclidean'/'fro', 1 (max column
    sum), np.inf (max row sum). The euclidean norm's gradient at 0 is NaN, as TF's."""
    matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if matrix:
        if not all(isinstance(a, numbers.Integral) for a in axis) or axis[0] == axis[1]:
            raise ValueError(f"norm: axis must be None, an int, or a pair of distinct ints, "
                             f"got {axis!r}")
        if not _is_ord(ord, _MATRIX_ORDS):
            extra = " (ord=2, the spectral norm, needs an SVD graphc does not have)" \
                if ord == 2 else ""
            raise ValueError(f"norm: ord must be a supported matrix norm in "
                             f"['euclidean', 'fro', 1, inf], got {ord!r}{extra}")
    else:
        if not (axis is None or isinstance(axis, numbers.Integral)):
            raise ValueError(f"norm: axis must be None, an int, or a pair of distinct ints, "
                             f"got {axis!r}")
        positive = isinstance(ord, numbers.Real) and not isinstance(ord, bool) and ord > 0
        if not positive and not _is_ord(ord, _VECTOR_ORDS):
            raise ValueError(f"norm: ord must be a supported vector norm ('euclidean', 1, 2, "
                             f"inf or a real p > 0), got {ord!r}")
    x = convert_to_tensor(tensor)
    if axis is None:
        axes = tuple(range(x.ndim))
    elif matrix:
        axes = tuple(normalize_axis("norm", a, x.ndim) for a in axis)
    else:
        axes = (normalize_axis("norm", axis, x.ndim),)
    if ord in ("euclidean", "fro") or (ord == 2 and not matrix):
        check_kind("norm", x.type, FLOAT)
        out = P["sqrt"](P["reduce_sum"](P["multiply"](x, x), axes, keepdims=True))
    else:
        check_kind("norm", x.type, NUMERIC)
        a = P["abs"](x)
        if ord == 1:
            out = P["reduce_sum"](a, None if axis is None else axes[0], keepdims=True)
            if matrix:
                out = P["reduce_max"](out, axes[1], keepdims=True)
        elif ord == np.inf:
            if matrix:
                a = P["reduce_sum"](a, axes[1], keepdims=True)
            out = P["reduce_max"](a, None if axis is None else axes[0], keepdims=True)
        else:
            check_kind("norm", x.type, FLOAT)
            p = float(ord)
            out = P["pow"](P["reduce_sum"](P["pow"](a, p), axes, keepdims=True), 1.0 / p)
    if keepdims:
        return out
    return P["squeeze"](out, list(axes)) if axes else out


@composite_errors("global_norm")
def global_norm(t_list, name=None):
    """sqrt(sum of squares of every element of every tensor in `t_list`), None entries
    skipped, as tf.linalg.global_norm (an empty list gives float32 0)."""
    if not isinstance(t_list, (list, tuple)):
        raise TypeError(f"global_norm: t_list must be a sequence of tensors, got "
                        f"{type(t_list).__name__}")
    halves = []
    for t in t_list:
        if t is None:
            continue
        v = _float("global_norm", t)
        halves.append(P["multiply"](P["reduce_sum"](P["square"](v)), 0.5))   # TF's l2_loss
    if not halves:
        return constant(0.0, _dt.float32)
    total = P["reduce_sum"](P["stack"](halves))
    return P["sqrt"](P["multiply"](total, 2.0))


@composite_errors("clip_by_norm")
def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`t` scaled so its L2 norm over `axes` (all when None) is at most `clip_norm`:
    t * clip_norm / max(l2norm, clip_norm), with TF 2.21's guard for a zero norm (its
    gradient is then clip_norm / clip_norm, not NaN) and a negative clip_norm taken as 0."""
    v = _float("clip_by_norm", t)
    if isinstance(clip_norm, numbers.Real) and not hasattr(clip_norm, "dtype"):
        clip = max(float(clip_norm), 0.0)
    else:
        clip = P["cast"](P["maximum"](convert_to_tensor(clip_norm), 0), v.dtype)
    ax = normalize_axes("clip_by_norm", axes, v.ndim)
    l2sum = P["reduce_sum"](P["multiply"](v, v), ax, keepdims=True)
    pred = P["greater"](l2sum, 0.0)
    safe = P["where"](pred, l2sum, P["ones_like"](l2sum))
    l2norm = P["where"](pred, P["sqrt"](safe), l2sum)
    return P["divide"](P["multiply"](v, clip), P["maximum"](l2norm, clip))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(list_clipped, global_norm): every tensor of `t_list` times clip_norm /
    max(global_norm, clip_norm), as tf.clip_by_global_norm (None entries stay None; an
    infinite or NaN norm makes every value NaN). `use_norm` replaces the computed norm."""
    if isinstance(t_list, (str, bytes)) or not isinstance(t_list, (list, tuple)):
        raise TypeError(f"clip_by_global_norm: t_list must be a sequence of tensors, got "
                        f"{type(t_list).__name__}")
    t_list = list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list)
    else:
        use_norm = convert_to_tensor(use_norm)
    one = constant(1.0, use_norm.dtype)
    clip = convert_to_tensor(clip_norm, use_norm.dtype) if not hasattr(clip_norm, "dtype") \
        else clip_norm
    scale = P["multiply"](clip, P["minimum"](P["divide"](one, use_norm),
                                             P["divide"](one, clip)))
    scale = P["add"](scale, P["subtract"](use_norm, use_norm))   # inf/NaN norm: NaN, as TF
    out = [None if v is None else P["multiply"](_float("clip_by_global_norm", v),
                                                P["cast"](scale, convert_to_tensor(v).dtype))
           for v in t_list]
    return out, use_norm


clip_by_global_norm = composite_errors("clip_by_global_norm")(clip_by_global_norm)

PUBLIC = {"norm": norm, "clip_by_norm": clip_by_norm, "clip_by_global_norm": clip_by_global_norm}
MATH = {"cumprod": cumprod, "is_nan": is_nan, "is_inf": is_inf, "is_finite": is_finite,
        "divide_no_nan": divide_no_nan, "squared_difference": squared_difference,
        "log_sigmoid": log_sigmoid, "reciprocal": reciprocal, "reduce_variance": reduce_variance,
        "reduce_std": reduce_std, "reduce_euclidean_norm": reduce_euclidean_norm}
LINALG = {"norm": norm, "global_norm": global_norm}
